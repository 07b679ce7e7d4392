"""The JSON report: the documented contract integrations rely on (docs/json-report.md).

Its shape is checked against `auditor/data/report.schema.json` by the tests;
a change to it is a change of `reportVersion`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from auditor import TOOL_NAME, __version__
from auditor.duplicates import DuplicateObject
from auditor.engine import AuditResult, FleetCluster, RuleResult, Summary
from auditor.exceptions_list import ExceptionUsage
from auditor.exposure import Address, Announcing, Entrance, Evidence, JudgedEntrance
from auditor.model import ClusterInfo, Finding, InputProblem, NamespaceOrigin, ObjectRef, Source
from auditor.report.json_text import dumps_indented
from auditor.report.repository import remark_dicts
from auditor.report.sources import ConfigSources
from auditor.repository import RemarkKind, RepositoryView, ScopeView

if TYPE_CHECKING:  # (a --baseline's module, imported only when one is given)
    from auditor.baseline import Baseline

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
    if finding.namespace_from is not None:
        out["namespaceFrom"] = namespace_origin_dict(finding.namespace_from)
    if finding.exception is not None:
        out["exception"] = {"name": finding.exception.name, "reason": finding.exception.reason}
    if remediation:
        out["remediation"] = remediation
    return out


def namespace_origin_dict(origin: NamespaceOrigin) -> dict[str, Any]:
    """Where a finding's object gets its namespace in a GitOps tree (docs/json-report.md, "namespaceFrom")."""
    return {"namespace": origin.namespace, "reason": origin.reason, **source_dict(origin.source),
            "description": origin.text}


def scope_dict(scope: ScopeView, member: FleetCluster | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": scope.name, "kind": scope.kind.value, "root": scope.root,
                           "entryPoints": [{"kind": e.kind, **source_dict(e.source)} for e in scope.entry_points],
                           "objects": scope.objects, "files": scope.files,
                           "namespaceCoverage": {"namespaced": scope.namespaced, "withNamespace": scope.with_namespace},
                           "audited": scope.audited}
    if scope.generated:
        out["generatedApplications"] = scope.generated
    if member is not None:
        out.update(exitCode=member.exit_code, complete=member.complete)
    return out


def repository_dict(repository: RepositoryView) -> dict[str, Any]:
    """The report's `target.repository` member: how a GitOps tree was read (docs/json-report.md)."""
    return {
        "singleScope": repository.single_scope,
        "namespaceCoverage": {"namespaced": repository.namespaced, "withNamespace": repository.with_namespace},
        "unreached": {"objects": repository.unreached,
                      "folders": [{"folder": f, "objects": n} for f, n in repository.unreached_folders]},
        "problems": remark_dicts(repository, RemarkKind.PROBLEM),
        "warnings": remark_dicts(repository, RemarkKind.WARNING),
        "notes": remark_dicts(repository, RemarkKind.NOTE),
    }


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
    if result.partial:  # a verdict on part of what the rule judges: what it did not see, and why
        out["partial"] = True
        out["didNotSee"] = [{"what": unseen.what, "reason": unseen.reason,
                             **({"declared": unseen.declared} if unseen.declared else {})} for unseen in result.unseen]
    return out


def input_problem_dict(problem: InputProblem) -> dict[str, Any]:
    """One entry of the report's `inputProblems` (docs/json-report.md)."""
    out: dict[str, Any] = {"file": problem.file}
    if problem.line:
        out["line"] = problem.line
        if problem.column:
            out["column"] = problem.column
    out["code"] = problem.code.value
    out["message"] = problem.message
    if problem.cluster:
        out["cluster"] = problem.cluster
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
        "rulesPartial": summary.rules_partial,
        "inputProblems": summary.input_problems,
        "complete": summary.complete,
        "failOn": summary.fail_on.value,
        "exitCode": summary.exit_code,
        # Only when some are (docs/config.md): reports of runs without a declaration keep their bytes.
        **({"rulesNotApplicable": summary.rules_not_applicable} if summary.rules_not_applicable else {}),
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
        out["file"] = entry.path or exceptions_file  # a merged list: the entry's own file
        if entry.line:
            out["line"] = entry.line
    return out


# Node addresses listed per way in (a 1,000-node cluster's list would fill the report); `nodeCount` says how many.
MAX_NODES_LISTED = 16


def _evidence_dict(evidence: Evidence) -> dict[str, Any]:
    out: dict[str, Any] = {"object": object_dict(evidence.ref), **source_dict(evidence.source)}
    if evidence.field:
        out["field"] = evidence.field
    if evidence.note:
        out["note"] = evidence.note
    return out


def _address_dict(address: Address) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": address.kind.value, "value": address.value, "display": address.display,
                           "detail": address.detail}
    if address.pools:
        out["pools"] = [pool.name for pool in address.pools]
    if address.nodes:
        out["nodes"] = list(address.nodes[:MAX_NODES_LISTED])
        out["nodeCount"] = len(address.nodes)
    return out


def _announcement_dict(announcing: Announcing) -> dict[str, Any]:
    out: dict[str, Any] = {"state": announcing.state.value}
    if announcing.why:
        out["reason"] = announcing.why
    out["by"] = [
        {"kind": a.kind.value, "object": object_dict(a.by), **source_dict(a.evidence.source),
         **({"interfaces": list(a.interfaces)} if a.interfaces else {}), **({"nodes": a.nodes} if a.nodes else {})}
        for a in announcing.by
    ]
    return out


def _forwarding_dict(entrance: Entrance) -> dict[str, Any]:
    listener, route = entrance.listener, entrance.route
    return {
        "listener": None if listener is None else {
            "gateway": object_dict(listener.gateway), "name": listener.name, "protocol": listener.protocol,
            "port": listener.port, "hostname": listener.hostname, "controller": listener.controller,
            **source_dict(listener.evidence.source),
        },
        "route": None if route is None else {
            "object": object_dict(route.ref), "hostnames": list(route.hostnames), "forwards": route.forwards,
            **({"reason": route.why} if route.why else {}), **source_dict(route.evidence.source),
        },
    }


def exposure_dict(judged: JudgedEntrance) -> dict[str, Any]:
    """One way in of the report's `exposures` (docs/json-report.md)."""
    entrance, verdict = judged.entrance, judged.verdict
    out: dict[str, Any] = {
        "channel": entrance.channel.value,
        "address": _address_dict(entrance.address),
        "port": entrance.port,
        "protocol": entrance.protocol,
        "announcement": _announcement_dict(entrance.announcing),
        **_forwarding_dict(entrance),
        "backends": [{"object": object_dict(b.service), "port": b.port, "exists": b.exists,
                      **({"reason": b.evidence.note} if b.evidence.note else {})} for b in entrance.backends],
        "workloads": [{"object": object_dict(w.ref), **source_dict(w.evidence.source)} for w in entrance.workloads],
        "subject": {"object": object_dict(entrance.subject.ref), "declared": entrance.subject.declared.value,
                    **source_dict(entrance.subject.source)},
        "evidence": _evidence_dict(entrance.evidence),
        "rule": entrance.rule,
        "verdict": {"status": verdict.kind.value, "rule": verdict.rule, **({"by": verdict.by} if verdict.by else {}),
                    **({"reason": verdict.reason} if verdict.reason else {})},
    }
    if entrance.service_port is not None:
        out["servicePort"] = entrance.service_port
    if entrance.external_traffic_policy is not None:
        out["externalTrafficPolicy"] = entrance.external_traffic_policy
    if entrance.notes:
        out["notes"] = list(entrance.notes)
    if judged.cluster:
        out["cluster"] = judged.cluster
    return out


def target_dict(result: AuditResult) -> dict[str, Any]:
    """The report's `target` member: what was read (the mode, the inputs, the cluster or the fleet)."""
    snapshot = result.snapshot
    target: dict[str, Any] = {"mode": snapshot.mode, "inputs": list(snapshot.inputs)}
    if snapshot.cluster is not None:
        target["cluster"] = _cluster_dict(snapshot.cluster)
    if result.repository is not None:  # a GitOps tree: each scope, with its own outcome when audited on its own
        members = {member.name: member for member in result.fleet}
        target["clusters"] = [scope_dict(scope, members.get(scope.name)) for scope in result.repository.scopes]
        target["repository"] = repository_dict(result.repository)
    elif result.fleet:  # each cluster of a fleet, with its own outcome
        target["clusters"] = [_fleet_cluster_dict(member) for member in result.fleet]
    return target


def to_dict(result: AuditResult) -> dict[str, Any]:
    snapshot = result.snapshot
    sources = sources_dict(result)
    remediation = {r.id: r.rule.remediation for r in result.rules if r.rule is not None}
    target = target_dict(result)
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
        # Files that could not be read: none of their objects was audited (the run is incomplete).
        "inputProblems": [input_problem_dict(problem) for problem in result.input_problems],
        "notes": list(result.notes),
        "duplicateObjects": [duplicate_dict(duplicate) for duplicate in result.duplicates],
        # Every way in from outside the cluster, by address then port (by cluster first in a fleet).
        "exposures": [exposure_dict(judged) for judged in result.exposures],
    }
    baseline = result.baseline
    if baseline is not None:  # --baseline: each finding new or unchanged, and what the baseline had that is gone
        for entry, finding in zip(out["findings"], result.findings, strict=True):
            entry["baseline"] = baseline.state(finding).value
        out["baseline"] = baseline_dict(baseline)
    return out


def render(result: AuditResult) -> str:
    return dumps_indented(to_dict(result)) + "\n"
