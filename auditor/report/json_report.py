"""The JSON report: the documented contract integrations rely on (docs/json-report.md).

Its shape is checked against `auditor/data/report.schema.json` by the tests;
a change to it is a change of `reportVersion`.
"""

from __future__ import annotations

import json
from typing import Any

from auditor import TOOL_NAME, __version__
from auditor.baseline import baseline_of
from auditor.engine import AuditResult, RuleResult
from auditor.model import Finding, ObjectRef

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
            if finding.source.column:
                out["column"] = finding.source.column
    if finding.cluster:
        out["cluster"] = finding.cluster
    if finding.exception is not None:
        out["exception"] = {"name": finding.exception.name, "reason": finding.exception.reason}
    if remediation:
        out["remediation"] = remediation
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


def to_dict(result: AuditResult) -> dict[str, Any]:
    snapshot = result.snapshot
    remediation = {r.id: r.rule.remediation for r in result.rules if r.rule is not None}
    target: dict[str, Any] = {"mode": snapshot.mode, "inputs": list(snapshot.inputs)}
    if snapshot.cluster is not None:
        cluster = snapshot.cluster
        target["cluster"] = {
            "context": cluster.context,
            "server": cluster.server,
            "version": cluster.version,
            "fingerprint": cluster.fingerprint,
        }
        if cluster.label:
            target["cluster"]["label"] = cluster.label
    if snapshot.clusters:  # fleet: each cluster, with its own outcome (ClusterInfo.extra)
        target["clusters"] = [
            {"context": c.context, "server": c.server, "version": c.version, "fingerprint": c.fingerprint,
             **({"label": c.label} if c.label else {}), **c.extra}
            for c in snapshot.clusters
        ]
    out = {
        "reportVersion": REPORT_VERSION,
        "tool": {"name": TOOL_NAME, "version": __version__},
        "asOf": result.as_of.isoformat(),
        "target": target,
        "summary": result.summary(),
        "rules": [rule_dict(r) for r in result.rules],
        "findings": [finding_dict(f, remediation.get(f.rule)) for f in result.findings],
        "exceptions": [
            {
                "name": usage.entry.name,
                "rules": list(usage.entry.rules),
                "reason": usage.entry.reason,
                "expires": usage.entry.expires.isoformat() if usage.entry.expires else None,
                "status": usage.status.value,
                "matched": usage.matched,
            }
            for usage in result.exceptions
        ],
        "exceptionsFile": result.exceptions_path,
        "coverage": [
            {"kind": gk, "state": coverage.state.value, **({"reason": coverage.reason} if coverage.reason else {})}
            for gk, coverage in sorted(result.coverage.items())
        ],
        "ignoredDocuments": len(snapshot.ignored),
        "notes": list(result.notes),
    }
    baseline = baseline_of(result)
    if baseline is not None:  # --baseline: each finding new or unchanged, and what the baseline had that is gone
        for entry, finding in zip(out["findings"], result.findings):
            entry["baseline"] = baseline.state(finding)
        out["baseline"] = baseline.to_json()
    return out


def render(result: AuditResult) -> str:
    return json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"
