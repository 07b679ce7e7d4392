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
`load_report`, which reads and validates a JSON report. The engine applies a
`Baseline` to its result (`AuditResult.with_baseline`); this module sits
below it and knows nothing of results.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from auditor.errors import AuditError
from auditor.model import Finding, FindingStatus, RuleStatus, Severity


class BaselineState(enum.Enum):
    """What a current finding is, compared with the baseline."""

    NEW = "new"
    UNCHANGED = "unchanged"


NEW = BaselineState.NEW
UNCHANGED = BaselineState.UNCHANGED
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
    fixed: list[dict[str, Any]] = field(default_factory=list)
    unverified: list[dict[str, Any]] = field(default_factory=list)
    # (key, failed?) -> NEW or UNCHANGED, for every current finding.
    states: dict[tuple[FindingKey, bool], BaselineState] = field(default_factory=dict)


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

    `checked_rules` are the rules that reached a full verdict (passed or failed, not partial) in
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
    """The rules of a JSON report that reached a full verdict (a partial one may not have seen a finding)."""
    return {rule["id"] for rule in report.get("rules", [])
            if rule.get("status") in _VERDICTS and not rule.get("partial")}


def clusters_of_report(report: Mapping[str, Any]) -> set[str] | None:
    """Clusters a fleet report read successfully (their `name`, label and context), or None when not a fleet report."""
    clusters = report.get("target", {}).get("clusters")
    if not isinstance(clusters, list):
        return None
    names: set[str] = set()
    for cluster in clusters:
        if cluster.get("error"):  # a cluster that could not be read verifies nothing
            continue
        for key in ("name", "label", "context"):
            value = cluster.get(key)
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


def diff_reports(old: Mapping[str, Any], new: Mapping[str, Any]) -> Comparison[dict[str, Any]]:
    """Compare two JSON reports: which findings of `new` are new, which of `old` are fixed."""
    return compare(
        old.get("findings", []),
        [dict(entry) for entry in new.get("findings", [])],
        key=key_of_entry,
        failed=lambda entry: entry.get("status") == FindingStatus.FAILED.value,
        checked_rules=checked_rules_of_report(new),
        checked_clusters=clusters_of_report(new),
    )


def load_report(path: str, what: str = "report") -> dict[str, Any]:
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
    except ValueError:  # an integer beyond Python's 4,300-digit conversion limit
        number = _LONG_NUMBER.search(text)
        line, digits = (text.count("\n", 0, number.start()) + 1, len(number.group())) if number else (None, 0)
        raise AuditError(f"{path}{f':{line}' if line else ''}: {what} holds an integer too large to read "
                         f"({digits:,} digits)") from None
    _refuse_lone_surrogates(path, what, text, report)
    import jsonschema

    from auditor.config_files import load_schema

    validator = jsonschema.Draft202012Validator(load_schema(REPORT_SCHEMA))
    invalid = jsonschema.exceptions.best_match(validator.iter_errors(report))
    if invalid is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in invalid.absolute_path).lstrip(".")
        message = invalid.message if len(invalid.message) <= 200 else invalid.message[:197] + "..."
        hint = ""
        if not isinstance(report, dict) or "reportVersion" not in report:
            hint = " (write it with --format json or --json FILE)"
        raise AuditError(f"{path}: {what} is not a valid audit JSON report: {where or '(top level)'}: {message}{hint}")
    valid: dict[str, Any] = report
    return valid


_LONG_NUMBER = re.compile(r"\d{4301,}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _strings(data: Any) -> Iterator[str]:
    """Every string in decoded JSON, keys included (iteratively: a report may be deep)."""
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _refuse_lone_surrogates(path: str, what: str, text: str, report: Any) -> None:
    """A `\\ud800` escape decodes to a lone surrogate, which no report can print: refuse it, with its line."""
    for string in _strings(report):
        found = _SURROGATE.search(string)
        if found:
            code = f"\\u{ord(found.group()):04x}"
            escape = re.search(re.escape(code), text, re.IGNORECASE)
            where = f"{path}:{text.count(chr(10), 0, escape.start()) + 1}" if escape else path
            raise AuditError(f"{where}: {what} is not valid: a string holds a lone UTF-16 surrogate {code}")


# --- an audit with a baseline applied ----------------------------------------------


@dataclass(frozen=True)
class BaselineCounts:
    """How the current findings compare with the baseline's, by state."""

    new: int
    unchanged: int
    fixed: int
    unverified: int  # in the baseline, gone now, but their rule (or cluster) reached no verdict


@dataclass(frozen=True)
class Baseline:
    """A baseline report applied to the current audit."""

    path: str
    report: dict[str, Any]
    comparison: Comparison[Finding]

    @property
    def as_of(self) -> str | None:
        """The baseline report's `asOf` date, as it holds it."""
        as_of = self.report.get("asOf")
        return as_of if isinstance(as_of, str) else None

    def state(self, finding: Finding) -> BaselineState:
        """NEW or UNCHANGED for a finding of the current audit."""
        failed = finding.status is FindingStatus.FAILED
        return self.comparison.states.get((key_of_finding(finding), failed), NEW)

    def waives(self, finding: Finding) -> bool:
        """Whether the baseline keeps this failed finding from failing the gate."""
        return finding.status is FindingStatus.FAILED and self.state(finding) is UNCHANGED

    def counts(self) -> BaselineCounts:
        return BaselineCounts(
            new=len(self.comparison.new),
            unchanged=len(self.comparison.unchanged),
            fixed=len(self.comparison.fixed),
            unverified=len(self.comparison.unverified),
        )
