"""Several clusters in one result: each audited on its own, then merged.

Used by `audit live --context A --context B` (the fleet reader in
`auditor.sources.live.fleet`). It sits above both the engine and the sources:
reading stays a source's job, judging the engine's, and this module only puts
one cluster's verdicts beside another's (semantics in docs/live.md, "Fleet").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from auditor.engine import AuditResult, FleetCluster, RuleResult
from auditor.exceptions_list import EntryStatus, ExceptionUsage
from auditor.model import ClusterInfo, Finding, RuleStatus
from auditor.repository import LayoutRemark, RemarkKind
from auditor.rule import Unseen
from auditor.snapshot import Coverage, CoverageState, Snapshot

if TYPE_CHECKING:  # the sources', which this module sits above
    from auditor.cilium.helm_values import HelmValues
    from auditor.sources.gitops.audit_scopes import TreeRead
    from auditor.sources.live.fleet import ClusterRead

# A rule's status across clusters is the worst one: an error anywhere is an
# error, then no verdict somewhere (not-run), then drift somewhere (failed).
# Incompleteness ranks above drift so `complete` never claims a verdict that
# one cluster could not reach.
# Not applicable (declared so) ranks below a pass: a verdict reached in one cluster is the rule's verdict.
_STATUS_RANK = {RuleStatus.NOT_APPLICABLE: -1, RuleStatus.PASSED: 0, RuleStatus.FAILED: 1, RuleStatus.NOT_RUN: 2,
                RuleStatus.ERROR: 3}
_COVERAGE_RANK = {CoverageState.NOT_SERVED: 0, CoverageState.PRESENT: 1, CoverageState.LISTED: 2,
                  CoverageState.MISSING: 3, CoverageState.FAILED: 4}
_USAGE_RANK = {EntryStatus.INACTIVE: 0, EntryStatus.UNUSED: 1, EntryStatus.USED: 2, EntryStatus.EXPIRED: 3}


def _merge_coverage(parts: list[tuple[str, Coverage]]) -> Coverage:
    if len({(c.state, c.reason) for _, c in parts}) == 1:
        return parts[0][1]
    state = max((c.state for _, c in parts), key=lambda s: _COVERAGE_RANK[s])
    reason = "; ".join(f"{name}: {c.state.value}" + (f" ({c.reason})" if c.reason else "") for name, c in parts)
    return Coverage(state, reason)


def _merge_rules(parts: list[tuple[str, AuditResult]]) -> list[RuleResult]:
    """Each rule once: the worst status, the reasons and findings of every cluster (tagged), sorted by id."""
    rule_ids: list[str] = []
    per_rule: dict[str, list[tuple[str, RuleResult]]] = {}
    for name, result in parts:
        for rule_result in result.rules:
            if rule_result.id not in per_rule:
                rule_ids.append(rule_result.id)
            per_rule.setdefault(rule_result.id, []).append((name, rule_result))
    rules: list[RuleResult] = []
    for rule_id in rule_ids:
        entries = per_rule[rule_id]
        template = entries[0][1]
        status = max((r.status for _, r in entries), key=lambda s: _STATUS_RANK[s])
        reason = _merged_reason(entries)
        findings = sorted((replace(f, cluster=name) for name, r in entries for f in r.findings),
                          key=lambda f: f.sort_key)
        examined = [ref for _, r in entries for ref in r.examined]
        # What each cluster's verdict did not see, said per cluster (a rule not run there has its reason).
        unseen = tuple(dict.fromkeys(Unseen(u.what, f"{name}: {u.reason}", u.declared)
                                     for name, r in entries for u in r.unseen))
        rules.append(RuleResult(rule_id, template.title, template.severity, status, reason, findings, examined,
                                template.rule, unseen))
    rules.sort(key=lambda r: r.id)
    return rules


def _merged_reason(entries: list[tuple[str, RuleResult]]) -> str:
    """Each cluster's reason, named; a declaration every cluster shares (not applicable) is said once, first."""
    reasons = [(name, r.reason) for name, r in entries if r.reason]
    marker = "; it could not run: "
    preambles = {reason.partition(marker)[0] for _, r in entries for reason in [r.reason]
                 if r.status is RuleStatus.NOT_APPLICABLE and marker in reason}
    if len(preambles) == 1 and all(r.status is RuleStatus.NOT_APPLICABLE for _, r in entries):
        preamble = f"{preambles.pop()}{marker}"
        return preamble + "; ".join(f"{name}: {reason.removeprefix(preamble)}" for name, reason in reasons)
    return "; ".join(f"{name}: {reason}" for name, reason in reasons)


def _merge_exception_usage(parts: list[tuple[str, AuditResult]]) -> list[ExceptionUsage]:
    """Each entry once: matches added up, the most telling status (used anywhere is used)."""
    usage: dict[str, ExceptionUsage] = {}
    for _, result in parts:
        for entry_usage in result.exceptions:
            seen = usage.get(entry_usage.entry.name)
            if seen is None:
                usage[entry_usage.entry.name] = ExceptionUsage(entry_usage.entry, entry_usage.status,
                                                               entry_usage.matched)
                continue
            seen.matched += entry_usage.matched
            if _USAGE_RANK[entry_usage.status] > _USAGE_RANK[seen.status]:
                seen.status = entry_usage.status
    return list(usage.values())


def merge_fleet(parts: list[tuple[str, AuditResult]], snapshot: Snapshot,
                clusters: list[FleetCluster] | None = None) -> AuditResult:
    """One result for several clusters: `parts` are (cluster name, that cluster's result).

    Findings are tagged with their cluster; a rule's status is the worst of
    its statuses, its reason names each cluster that reached no verdict; the
    finding counts of the summary are therefore the sums over the clusters.
    Exception usage adds up the matches (an entry is used if used anywhere);
    coverage is the worst state per kind, naming each cluster when they differ.
    `snapshot` is the fleet's (mode "fleet"); `clusters` what each cluster was
    and what became of it, in the order given.
    """
    if not parts:
        raise ValueError("a fleet needs at least one cluster")
    first = parts[0][1]
    rules = _merge_rules(parts)
    usage = _merge_exception_usage(parts)
    kinds = sorted({gk for _, result in parts for gk in result.coverage})
    coverage = {
        gk: _merge_coverage([(name, result.coverage[gk]) for name, result in parts if gk in result.coverage])
        for gk in kinds
    }
    notes = list(dict.fromkeys(note for _, result in parts for note in result.notes))
    return AuditResult(
        snapshot=snapshot,
        rules=rules,
        findings=sorted((f for r in rules for f in r.findings), key=lambda f: f.sort_key),
        exceptions=usage,
        exceptions_path=first.exceptions_path,
        coverage=coverage,
        as_of=first.as_of,
        fail_on=first.fail_on,
        require_complete=any(result.require_complete for _, result in parts),
        notes=notes,
        fleet=list(clusters or []),
        duplicates=[replace(duplicate, cluster=name) for name, result in parts for duplicate in result.duplicates],
        input_problems=[replace(problem, cluster=name) for name, result in parts for problem in result.input_problems],
        posture_path=first.posture_path,
        exposures=tuple(replace(judged, cluster=name) for name, result in parts for judged in result.exposures),
    )


def audit_fleet(reads: list[ClusterRead], evaluate: Callable[[Snapshot], AuditResult]) -> AuditResult:
    """Audit each cluster's snapshot with `evaluate` and merge the results."""
    parts: list[tuple[str, AuditResult]] = []
    clusters: list[FleetCluster] = []
    objects = []
    for read in reads:
        result = evaluate(read.snapshot)
        info = read.snapshot.cluster
        if info is None:  # a live read always names its cluster
            raise ValueError(f"the snapshot of cluster {read.name} names no cluster")
        clusters.append(FleetCluster(read.name, info, result.exit_code, result.complete, read.error))
        objects.extend(read.snapshot.objects)
        parts.append((read.name, result))
    snapshot = Snapshot.build(objects, mode="fleet", inputs=[r.snapshot.inputs[0] for r in reads])
    return merge_fleet(parts, snapshot, clusters)


def audit_tree(read: TreeRead, evaluate: Callable[[Snapshot], AuditResult],
               cilium_values: list[HelmValues] | None = None) -> AuditResult:
    """Audit each cluster of a GitOps tree on its own and merge them as a fleet (docs/input.md).

    Findings carry their cluster as fleet findings do, and the namespace each
    build gives their object with where it comes from (`Finding.namespace_from`).
    A tree read as one scope is one audit, as any folder is, its findings
    untagged. `cilium_values` (`--cilium-values`) are given to every cluster,
    and the report says so when there are several.
    """
    repository = read.repository
    scopes = [scope for scope in read.scopes if scope.snapshot is not None]
    if repository is None or not scopes:
        raise ValueError("audit_tree needs a GitOps tree with at least one audited scope")
    parts: list[tuple[str, AuditResult]] = []
    for scope in scopes:
        snapshot = scope.snapshot
        assert snapshot is not None  # filtered above; for mypy
        snapshot.cilium_values = list(cilium_values or [])
        parts.append((scope.name, _with_namespace_origins(evaluate(snapshot), snapshot)))
    if cilium_values and len(parts) > 1:
        repository = replace(repository, remarks=(*repository.remarks, LayoutRemark(
            RemarkKind.WARNING, None, f"--cilium-values is applied to each of the {len(parts)} clusters audited "
                                      "(give --cluster NAME=PATH to audit one)")))
    if repository.single_scope:
        result = parts[0][1]
        return replace(result, snapshot=_with_ignored(result.snapshot, read.snapshot), repository=repository)
    clusters = [FleetCluster(name, ClusterInfo(), result.exit_code, result.complete) for name, result in parts]
    merged = merge_fleet(parts, read.snapshot, clusters)
    # Files not read are problems of the tree (each cluster's verdict is partial for them): listed once.
    read_problems = set(read.snapshot.input_problems)
    problems = [p for p in merged.input_problems if replace(p, cluster=None) not in read_problems]
    return replace(merged, repository=repository,
                   input_problems=sorted([*read.snapshot.input_problems, *problems], key=lambda p: p.sort_key))


def _with_ignored(scope: Snapshot, read: Snapshot) -> Snapshot:
    scope.ignored = read.ignored  # what the reader skipped, for the report's counts
    return scope


def _with_namespace_origins(result: AuditResult, snapshot: Snapshot) -> AuditResult:
    """`result` with each finding's namespace origin, from the scope's snapshot."""
    if not snapshot.namespace_origins:
        return result

    def stamped(finding: Finding) -> Finding:
        origin = snapshot.namespace_origin(finding.object, finding.source)
        return finding if origin is None else replace(finding, namespace_from=origin)

    rules = [replace(rule, findings=[stamped(f) for f in rule.findings]) for rule in result.rules]
    findings = sorted((f for rule in rules for f in rule.findings), key=lambda f: f.sort_key)
    return replace(result, rules=rules, findings=findings)
