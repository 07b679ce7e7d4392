"""Baselines: compare an audit with a previous JSON report, so a gate fails on new drift only.

A finding's identity is its rule plus the object it is about (kind, namespace,
name, and the cluster in a fleet report) — never its message (messages quote
values that change: addresses, ports, counts) and never the apiVersion (a pool
moved from cilium.io/v2alpha1 to cilium.io/v2 is the same pool). Two findings
of one rule about one object share that identity.

- A current finding is `unchanged` when the baseline holds a finding with its
  identity, and `new` otherwise. One exception: a *failed* finding whose
  identity the baseline only held as *excepted* is `new` — its exception
  expired or was removed since, and a baseline must not silently absorb that.
- A baseline finding whose identity is gone is `fixed` when its rule reached
  a verdict in the current audit, and `unverified` when it did not (the rule
  did not run, was in error or was not selected, or the finding's cluster was
  not audited): absence of evidence is not a fix.
- With a baseline, only `new` failed findings fail the gate.

Everything here is a pure function of already-loaded data, except
`load_report`, which reads and validates a JSON report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Collection, Generic, Iterable, Mapping, Sequence, TypeVar

from auditor.engine import AuditResult
from auditor.errors import AuditError
from auditor.model import Finding, FindingStatus, RuleStatus, Severity

NEW = "new"
UNCHANGED = "unchanged"
REPORT_SCHEMA = "report.schema.json"
MAX_REPORT_BYTES = 256 * 1024 * 1024
_VERDICTS = (RuleStatus.PASSED.value, RuleStatus.FAILED.value)

T = TypeVar("T")


@dataclass(frozen=True, order=True)
class FindingKey:
    """The identity a baseline matches findings by."""

    cluster: str
    rule: str
    kind: str
    namespace: str
    name: str

    @property
    def display(self) -> str:
        obj = f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"
        return f"{self.rule} {self.cluster}: {obj}" if self.cluster else f"{self.rule} {obj}"


def key_of_finding(finding: Finding) -> FindingKey:
    ref = finding.object
    return FindingKey(finding.cluster or "", finding.rule, ref.kind, ref.namespace or "", ref.name)


def key_of_entry(entry: Mapping[str, Any]) -> FindingKey:
    """The key of a finding as a JSON report holds it (`findings[]`)."""
    obj = entry["object"]
    return FindingKey(entry.get("cluster") or "", entry["rule"], obj["kind"], obj.get("namespace") or "", obj["name"])


@dataclass
class Comparison(Generic[T]):
    """The outcome of comparing current findings (of type T) with a baseline's (JSON entries)."""

    new: list[T] = field(default_factory=list)
    unchanged: list[T] = field(default_factory=list)
    fixed: list[dict] = field(default_factory=list)
    unverified: list[dict] = field(default_factory=list)
    # (key, failed?) -> NEW or UNCHANGED, for every current finding.
    states: dict[tuple[FindingKey, bool], str] = field(default_factory=dict)


def compare(
    baseline: Sequence[Mapping[str, Any]],
    current: Sequence[T],
    *,
    key: Callable[[T], FindingKey],
    failed: Callable[[T], bool],
    checked_rules: Collection[str],
    checked_clusters: Collection[str] | None = None,
) -> Comparison[T]:
    """Classify `current` findings against `baseline` report entries (see the module docstring).

    `checked_rules` are the rules that reached a verdict (passed or failed) in
    the current audit; `checked_clusters` the clusters a fleet audit read (None
    when it is not a fleet audit): a baseline finding about a cluster the
    current audit did not read is unverified, not fixed.
    """
    baseline_statuses: dict[FindingKey, set[str]] = {}
    for entry in baseline:
        baseline_statuses.setdefault(key_of_entry(entry), set()).add(entry.get("status", FindingStatus.FAILED.value))
    out: Comparison[T] = Comparison()
    current_keys: set[FindingKey] = set()
    for item in current:
        item_key, item_failed = key(item), failed(item)
        current_keys.add(item_key)
        statuses = baseline_statuses.get(item_key)
        regressed = statuses is not None and item_failed and FindingStatus.FAILED.value not in statuses
        if statuses is None or regressed:
            out.new.append(item)
            out.states[(item_key, item_failed)] = NEW
        else:
            out.unchanged.append(item)
            out.states[(item_key, item_failed)] = UNCHANGED
    for entry in baseline:
        entry_key = key_of_entry(entry)
        if entry_key in current_keys:
            continue
        # A finding about a cluster is verified only by an audit that read that cluster.
        cluster_seen = not entry_key.cluster or (checked_clusters is not None and entry_key.cluster in checked_clusters)
        if entry_key.rule in checked_rules and cluster_seen:
            out.fixed.append(dict(entry))
        else:
            out.unverified.append(dict(entry))
    return out


# --- reports as the JSON contract holds them ---------------------------------------


def checked_rules_of_report(report: Mapping[str, Any]) -> set[str]:
    return {rule["id"] for rule in report.get("rules", []) if rule.get("status") in _VERDICTS}


def clusters_of_report(report: Mapping[str, Any]) -> set[str] | None:
    """Clusters a fleet report read successfully (their `name`, label and context), or None when not a fleet report."""
    clusters = report.get("target", {}).get("clusters")
    if not isinstance(clusters, list):
        return None
    return _cluster_names(clusters, lambda cluster, key: cluster.get(key), lambda cluster: cluster.get("error"))


def _cluster_names(clusters: Iterable[Any], get: Callable[[Any, str], Any], error: Callable[[Any], Any]) -> set[str]:
    names: set[str] = set()
    for cluster in clusters:
        if error(cluster):  # a cluster that could not be read verifies nothing
            continue
        for key in ("name", "label", "context"):
            value = get(cluster, key)
            if isinstance(value, str) and value:
                names.add(value)
    return names


def is_failing(entry: Mapping[str, Any], fail_on: Severity) -> bool:
    severity = entry.get("severity")
    return (
        entry.get("status") == FindingStatus.FAILED.value
        and isinstance(severity, str)
        and Severity(severity).rank >= fail_on.rank
    )


def diff_reports(old: Mapping[str, Any], new: Mapping[str, Any]) -> Comparison[dict]:
    """Compare two JSON reports: which findings of `new` are new, which of `old` are fixed."""
    return compare(
        old.get("findings", []),
        [dict(entry) for entry in new.get("findings", [])],
        key=key_of_entry,
        failed=lambda entry: entry.get("status") == FindingStatus.FAILED.value,
        checked_rules=checked_rules_of_report(new),
        checked_clusters=clusters_of_report(new),
    )


def load_report(path: str, what: str = "report") -> dict:
    """Read a JSON report and validate it against the report schema, or raise a one-line AuditError."""
    from auditor.config_files import read_small_file

    text = read_small_file(path, what, MAX_REPORT_BYTES, AuditError)
    from auditor.parsing.json_docs import DEFAULT_MAX_JSON_NODES, JSONInputError, check_json_node_budget

    try:
        check_json_node_budget(text, DEFAULT_MAX_JSON_NODES)  # the same value budget as any JSON input
    except JSONInputError as error:
        raise AuditError(f"{path}: {what}: {error.problem}") from None
    try:
        report = json.loads(text)
    except json.JSONDecodeError as error:
        raise AuditError(f"{path}:{error.lineno}: {what} is not JSON: {error.msg}") from None
    except RecursionError:
        raise AuditError(f"{path}: {what} is nested too deeply") from None
    import jsonschema

    from auditor.config_files import load_schema

    validator = jsonschema.Draft202012Validator(load_schema(REPORT_SCHEMA))
    error = jsonschema.exceptions.best_match(validator.iter_errors(report))
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
        hint = " (write it with --format json or --json FILE)" if not isinstance(report, dict) or "reportVersion" not in report else ""
        raise AuditError(f"{path}: {what} is not a valid audit JSON report: {where or '(top level)'}: {message}{hint}")
    return report


# --- an audit with a baseline applied ----------------------------------------------


@dataclass(frozen=True)
class Baseline:
    """A baseline report applied to the current audit."""

    path: str
    report: dict
    comparison: Comparison[Finding]

    def state(self, finding: Finding) -> str:
        """`new` or `unchanged` for a finding of the current audit."""
        failed = finding.status is FindingStatus.FAILED
        return self.comparison.states.get((key_of_finding(finding), failed), NEW)

    def waives(self, finding: Finding) -> bool:
        """Whether the baseline keeps this failed finding from failing the gate."""
        return finding.status is FindingStatus.FAILED and self.state(finding) == UNCHANGED

    def counts(self) -> dict[str, int]:
        return {
            NEW: len(self.comparison.new),
            UNCHANGED: len(self.comparison.unchanged),
            "fixed": len(self.comparison.fixed),
            "unverified": len(self.comparison.unverified),
        }

    def to_json(self) -> dict[str, Any]:
        """The report's `baseline` member (docs/json-report.md)."""
        counts = self.counts()
        return {
            "file": self.path,
            "asOf": self.report.get("asOf"),
            "new": counts[NEW],
            "unchanged": counts[UNCHANGED],
            "fixed": list(self.comparison.fixed),
            "unverified": list(self.comparison.unverified),
        }


@dataclass
class BaselinedResult(AuditResult):
    """An `AuditResult` whose gate counts only findings that are not in the baseline.

    `failing` (hence `summary()["failing"]` and `exit_code`) excludes failed
    findings the baseline already held; everything else is the engine's result.
    """

    baseline: Baseline | None = None

    @property
    def failing(self) -> list[Finding]:
        failing = AuditResult.failing.fget(self)  # type: ignore[attr-defined]
        if self.baseline is None:
            return failing
        return [finding for finding in failing if not self.baseline.waives(finding)]


def _checked_clusters(result: AuditResult) -> set[str] | None:
    """Clusters a fleet result read (None for a single-cluster or offline audit)."""
    snapshot = result.snapshot
    if getattr(snapshot, "mode", None) != "fleet":
        return None
    return _cluster_names(
        getattr(snapshot, "clusters", []) or [],
        lambda info, key: info.extra.get("name") if key == "name" else getattr(info, key, None),
        lambda info: info.extra.get("error"),
    )


def apply(result: AuditResult, report: dict, path: str) -> BaselinedResult:
    """`result` with the baseline `report` (read from `path`) applied."""
    checked = {rule.id for rule in result.rules if rule.status in (RuleStatus.PASSED, RuleStatus.FAILED)}
    comparison = compare(
        report.get("findings", []),
        list(result.findings),
        key=key_of_finding,
        failed=lambda finding: finding.status is FindingStatus.FAILED,
        checked_rules=checked,
        checked_clusters=_checked_clusters(result),
    )
    values = {f.name: getattr(result, f.name) for f in fields(AuditResult)}
    return BaselinedResult(**values, baseline=Baseline(path, report, comparison))


def baseline_of(result: Any) -> Baseline | None:
    """The baseline applied to `result`, if any (reporters call this)."""
    baseline = getattr(result, "baseline", None)
    return baseline if isinstance(baseline, Baseline) else None
