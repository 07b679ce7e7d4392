"""The JSON report: the documented contract integrations rely on (docs/json-report.md).

Its shape is checked against `auditor/data/report.schema.json` by the tests;
a change to it is a change of `reportVersion`.
"""

from __future__ import annotations

import json
from typing import Any

from auditor import TOOL_NAME, __version__
from auditor.baseline import Baseline
from auditor.duplicates import DuplicateObject
from auditor.engine import AuditResult, FleetCluster, RuleResult, Summary
from auditor.exceptions_list import ExceptionUsage
from auditor.model import ClusterInfo, Finding, ObjectRef, Source
from auditor.report.sources import ConfigSources

REPORT_VERSION = "1"


def object_dict(ref: ObjectRef) -> dict[str, Any]:
    return {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name}


def finding_dict(finding: Finding, remediation: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "rule": finding.rule,
        "severity": finding.severity.value if finding.severity else None,
        "status": finding.status.value,
        "object": object_dict(finding.object),
        "message": finding.message,
    }
    if finding.source is not None:
        out["file"] = finding.source.path
        if finding.source.line:
            out["line"] = finding.source.line
    if finding.cluster:
        out["cluster"] = finding.cluster
    if finding.exception is not None:
        out["exception"] = {"name": finding.exception.name, "reason": finding.exception.reason}
    if remediation:
        out["remediation"] = remediation
    return out


def source_dict(source: Source | None) -> dict[str, Any]:
    if source is None:
        return {}
    return {"file": source.path, **({"line": source.line} if source.line else {})}


def duplicate_dict(duplicate: DuplicateObject) -> dict[str, Any]:
    out: dict[str, Any] = {"object": object_dict(duplicate.object)}
    if duplicate.cluster:
        out["cluster"] = duplicate.cluster
    out["definitions"] = [source_dict(source) for source in duplicate.sources]
    return out


def rule_dict(result: RuleResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": result.id,
        "title": result.title,
        "severity": result.severity.value,
        "status": result.status.value,
        "failed": result.failed_count,
        "excepted": result.excepted_count,
        "checked": len(result.examined),
    }
    if result.reason:
        out["reason"] = result.reason
    return out


def summary_dict(summary: Summary) -> dict[str, Any]:
    """The report's `summary` member (also SARIF's run properties)."""
    return {
        "failed": summary.failed,
        "failing": summary.failing,
        "excepted": summary.excepted,
        "failedBySeverity": {severity.value: count for severity, count in summary.failed_by_severity.items()},
        "rulesPassed": summary.rules_passed,
        "rulesFailed": summary.rules_failed,
        "rulesNotRun": summary.rules_not_run,
        "rulesError": summary.rules_error,
        "complete": summary.complete,
        "failOn": summary.fail_on.value,
        "exitCode": summary.exit_code,
    }


def _cluster_dict(cluster: ClusterInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "context": cluster.context,
        "server": cluster.server,
        "version": cluster.version,
        "fingerprint": cluster.fingerprint,
    }
    if cluster.label:
        out["label"] = cluster.label
    return out


def _fleet_cluster_dict(member: FleetCluster) -> dict[str, Any]:
    out = {**_cluster_dict(member.info), "name": member.name, "exitCode": member.exit_code, "complete": member.complete}
    if member.error:
        out["error"] = member.error
    return out


def baseline_dict(baseline: Baseline) -> dict[str, Any]:
    """The report's `baseline` member (docs/json-report.md)."""
    counts = baseline.counts()
    return {
        "file": baseline.path,
        "asOf": baseline.report.get("asOf"),
        "new": counts.new,
        "unchanged": counts.unchanged,
        "fixed": list(baseline.comparison.fixed),
        "unverified": list(baseline.comparison.unverified),
    }


def sources_dict(result: AuditResult) -> dict[str, Any]:
    """The report's `sources` member: the posture and exception list in force (`builtin`: the platform defaults)."""
    sources = ConfigSources.of(result)

    def source(path: str | None) -> dict[str, Any]:
        return {"builtin": True} if path is None else {"builtin": False, "file": path}

    return {"posture": source(sources.posture_file), "exceptions": source(sources.exceptions_file)}


def _exception_dict(usage: ExceptionUsage, exceptions_file: str | None) -> dict[str, Any]:
    entry = usage.entry
    out: dict[str, Any] = {
        "name": entry.name,
        "rules": list(entry.rules),
        "reason": entry.reason,
        "expires": entry.expires.isoformat() if entry.expires else None,
        "status": usage.status.value,
        "matched": usage.matched,
        "builtin": exceptions_file is None,
    }
    if exceptions_file is not None:
        out["file"] = exceptions_file
        if entry.line:
            out["line"] = entry.line
    return out


def to_dict(result: AuditResult) -> dict[str, Any]:
    snapshot = result.snapshot
    sources = sources_dict(result)
    remediation = {r.id: r.rule.remediation for r in result.rules if r.rule is not None}
    target: dict[str, Any] = {"mode": snapshot.mode, "inputs": list(snapshot.inputs)}
    if snapshot.cluster is not None:
        target["cluster"] = _cluster_dict(snapshot.cluster)
    if result.fleet:  # each cluster of a fleet, with its own outcome
        target["clusters"] = [_fleet_cluster_dict(member) for member in result.fleet]
    out: dict[str, Any] = {
        "reportVersion": REPORT_VERSION,
        "tool": {"name": TOOL_NAME, "version": __version__},
        "asOf": result.as_of.isoformat(),
        "target": target,
        "summary": summary_dict(result.summary()),
        "rules": [rule_dict(r) for r in result.rules],
        "findings": [finding_dict(f, remediation.get(f.rule)) for f in result.findings],
        "exceptions": [_exception_dict(usage, sources["exceptions"].get("file")) for usage in result.exceptions],
        "exceptionsFile": result.exceptions_path,
        "sources": sources,
        "coverage": [
            {"kind": gk, "state": coverage.state.value, **({"reason": coverage.reason} if coverage.reason else {})}
            for gk, coverage in sorted(result.coverage.items())
        ],
        "ignoredDocuments": len(snapshot.ignored),
        "notes": list(result.notes),
        "duplicateObjects": [duplicate_dict(duplicate) for duplicate in result.duplicates],
    }
    baseline = result.baseline
    if baseline is not None:  # --baseline: each finding new or unchanged, and what the baseline had that is gone
        for entry, finding in zip(out["findings"], result.findings, strict=True):
            entry["baseline"] = baseline.state(finding).value
        out["baseline"] = baseline_dict(baseline)
    return out


def render(result: AuditResult) -> str:
    return json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"
