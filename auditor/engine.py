"""Runs rules over a snapshot and turns what they yield into one verdict.

The engine stamps each finding with its rule's id and severity, applies the
exception list, isolates rule crashes (a crash is an `error` result, never a
crashed run), and sorts everything so the same input gives the same bytes.
The result is typed (`AuditResult`, `Summary`, `FleetCluster`); what the
counts are called in a report is the report's business (auditor/report/).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from auditor.cilium import config as cilium_config
from auditor.duplicates import DuplicateObject, find_duplicates
from auditor.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK
from auditor.exceptions_list import ExceptionList, ExceptionMatcher, ExceptionUsage, applied, own_labels
from auditor.exposure import ExposureModel, JudgedEntrance
from auditor.exposure import build as build_exposure_model
from auditor.exposure import judge as judge_exposures
from auditor.model import (
    ClusterInfo,
    Finding,
    FindingStatus,
    InputProblem,
    ObjectRef,
    RuleStatus,
    Severity,
)
from auditor.posture import Posture
from auditor.registry import RuleSet
from auditor.repository import RepositoryView
from auditor.rule import NotRun, Rule, RuleContext, Unseen, kinds_read_by, unmet_requirement
from auditor.snapshot import Coverage, CoverageState, Snapshot

if TYPE_CHECKING:  # (a --baseline's module, imported only when one is given)
    from auditor.baseline import Baseline

# The reason of a rule that examined nothing and did not say what it found none of (fail closed).
CHECKED_NOTHING = ("checked nothing: the rule examined no object of the input and does not say what an empty "
                   "result means (a rule states it with nothing_to_check)")
NOTHING_TO_CHECK = "nothing to check: no {what} in the input"

_SORT_KEY = attrgetter("sort_key")  # ObjectRef.sort_key, with no lambda called per ref


@dataclass
class RuleResult:
    """One rule's verdict. `reason` says why for not-run and error, and what there was none of for a pass
    that examined nothing; `unseen` what a passed or failed rule could not see (a partial verdict)."""

    id: str
    title: str
    severity: Severity
    status: RuleStatus
    reason: str = ""
    findings: list[Finding] = field(default_factory=list)
    examined: list[ObjectRef] = field(default_factory=list)
    rule: Rule | None = None  # None for a plugin that failed to load
    unseen: tuple[Unseen, ...] = ()

    @property
    def partial(self) -> bool:
        """A verdict (passed or failed) on part of what the rule judges: it did not see the rest."""
        return bool(self.unseen) and self.status in (RuleStatus.PASSED, RuleStatus.FAILED)

    @property
    def open_gap(self) -> bool:
        """A partial verdict whose gap no configuration declares not applicable: it makes the audit incomplete."""
        return self.partial and any(not unseen.declared for unseen in self.unseen)

    @property
    def nothing_checked(self) -> bool:
        """A pass on input that holds nothing the rule judges (it says what: `reason`)."""
        return self.status is RuleStatus.PASSED and not self.examined and not self.findings

    @property
    def failed_count(self) -> int:
        return sum(1 for f in self.findings if f.status is FindingStatus.FAILED)

    @property
    def excepted_count(self) -> int:
        return sum(1 for f in self.findings if f.status is FindingStatus.EXCEPTED)


@dataclass(frozen=True)
class Summary:
    """The counts of one audit and its gate, as every report shows them first."""

    failed: int  # failed findings (not excepted), whatever their severity
    failing: int  # failed findings that fail the gate (at or above fail_on; new ones only with a baseline)
    excepted: int
    failed_by_severity: Mapping[Severity, int]  # every severity, the highest first
    rules_passed: int
    rules_failed: int
    rules_not_run: int
    rules_error: int
    rules_partial: int  # passed or failed rules that did not see part of what they judge (counted there too)
    input_problems: int  # files of the input that could not be read
    complete: bool
    fail_on: Severity
    exit_code: int
    rules_not_applicable: int = 0  # could not run, and declared not applicable to this input (docs/config.md)


@dataclass(frozen=True)
class FleetCluster:
    """One cluster of a fleet audit: what was read of it, and its own outcome (docs/live.md, "Fleet")."""

    name: str  # how the fleet's findings name the cluster: its label, else its context
    info: ClusterInfo
    exit_code: int
    complete: bool
    error: str | None = None  # why the cluster could not be read at all

    @property
    def names(self) -> set[str]:
        """Every name a baseline's findings may use for this cluster (name, label, context)."""
        return {value for value in (self.name, self.info.label, self.info.context) if value}


class VerdictKind(enum.Enum):
    """The run's verdict, in the order it is decided: the first that holds is the verdict."""

    INCOMPLETE = "incomplete"  # exit 3: what could not be read or judged fails the run
    FAIL = "fail"  # exit 1: findings at or above --fail-on
    PASS_ON_WHAT_WAS_CHECKED = "pass-on-what-was-checked"  # exit 0, but not every rule judged everything
    PASS = "pass"  # exit 0


@dataclass(frozen=True)
class Verdict:
    """What every report states first (`AuditResult.verdict`); each report words it in its own markup."""

    kind: VerdictKind
    exit_code: int
    # INCOMPLETE: why the run is incomplete; PASS_ON_WHAT_WAS_CHECKED: what falls short of a complete pass.
    reason: str = ""
    failing: int = 0  # FAIL: the findings at or above `fail_on` (with a baseline, the new ones only)
    new: bool = False  # FAIL: a baseline is in use, so the failing findings are new ones


@dataclass
class AuditResult:
    """One audit's outcome: every rule's result and finding, the coverage and exceptions behind them, what
    the reports show."""

    snapshot: Snapshot
    rules: list[RuleResult]
    findings: list[Finding]
    exceptions: list[ExceptionUsage]
    exceptions_path: str | None
    coverage: dict[str, Coverage]
    as_of: dt.date
    fail_on: Severity
    require_complete: bool
    notes: list[str] = field(default_factory=list)
    # The --baseline report applied (`with_baseline`): its failed findings no longer fail the gate.
    baseline: Baseline | None = None
    # A fleet audit (auditor.fleet): each cluster, in the order they were given. Empty otherwise.
    fleet: list[FleetCluster] = field(default_factory=list)
    # Identities defined more than once in the input (auditor/duplicates.py): every report lists them.
    duplicates: list[DuplicateObject] = field(default_factory=list)
    # The posture file the audit was judged against; None: the built-in platform defaults.
    posture_path: str | None = None
    # The exposure model of the snapshot (None in a fleet: each cluster has its own), and every way
    # in with its verdict, sorted by address then port (by cluster first in a fleet).
    exposure_model: ExposureModel | None = None
    exposures: tuple[JudgedEntrance, ...] = ()
    # Files of the input that could not be read (from the snapshot), and any other defect of a file a
    # later step turns into one (`DuplicateObject.input_problems()`): each makes the run incomplete.
    input_problems: list[InputProblem] = field(default_factory=list)
    # An audit of a GitOps tree (auditor.fleet.audit_tree): its clusters and how the tree was read.
    repository: RepositoryView | None = None

    @property
    def failing(self) -> list[Finding]:
        """Failed findings at or above the `--fail-on` severity, minus those a baseline holds: what fails the gate."""
        threshold = self.fail_on.rank
        return [
            f for f in self.findings
            if f.status is FindingStatus.FAILED and f.severity is not None and f.severity.rank >= threshold
            and not (self.baseline is not None and self.baseline.waives(f))
        ]

    def count(self, status: RuleStatus) -> int:
        return sum(1 for r in self.rules if r.status is status)

    @property
    def open_gap_count(self) -> int:
        """Partial verdicts whose gap the configuration does not declare not applicable."""
        return sum(1 for r in self.rules if r.open_gap)

    def shortfall(self) -> str:
        """What keeps a pass from being a complete one, as every verdict line says it ("" when complete)."""
        if self.complete:
            return ""
        not_run = "some rules did not run" if self.count(RuleStatus.NOT_RUN) else ""
        if not self.open_gap_count:
            return not_run or "not every rule reached a full verdict"
        return f"{not_run} and some saw only part of the input" if not_run else "some rules saw only part of the input"

    @property
    def partial_count(self) -> int:
        return sum(1 for r in self.rules if r.partial)

    @property
    def complete(self) -> bool:
        """Every file was read and every selected rule reached a verdict on all it judges."""
        return not self.input_problems and not any(
            r.status in (RuleStatus.ERROR, RuleStatus.NOT_RUN) or r.open_gap for r in self.rules)

    @property
    def incomplete_gate(self) -> bool:
        """Whether incompleteness fails the run (exit 3): input problems and rule errors always; rules not
        run and partial verdicts on request (`--require-complete`, always with `audit live`)."""
        if self.input_problems or self.count(RuleStatus.ERROR):
            return True
        return self.require_complete and any(r.status is RuleStatus.NOT_RUN or r.open_gap for r in self.rules)

    @property
    def exit_code(self) -> int:
        return self.verdict().exit_code

    def verdict(self) -> Verdict:
        """The verdict every report states first, decided in one place (see `VerdictKind`)."""
        if self.incomplete_gate:
            return Verdict(VerdictKind.INCOMPLETE, EXIT_INCOMPLETE, reason=self.incomplete_because())
        failing = len(self.failing)
        if failing:
            return Verdict(VerdictKind.FAIL, EXIT_FINDINGS, failing=failing, new=self.baseline is not None)
        if not self.complete:
            return Verdict(VerdictKind.PASS_ON_WHAT_WAS_CHECKED, EXIT_OK, reason=self.shortfall())
        return Verdict(VerdictKind.PASS, EXIT_OK)

    def incomplete_because(self) -> str:
        """Why the run is incomplete (exit 3), as the verdict says it."""
        why = []
        if self.input_problems:
            count = len(self.input_problems)
            why.append(f"{count} input problem{'' if count == 1 else 's'}: files not audited")
        statuses = (RuleStatus.ERROR, RuleStatus.NOT_RUN) if self.require_complete else (RuleStatus.ERROR,)
        if any(r.status in statuses for r in self.rules):
            why.append("some rules could not reach a verdict")
        if self.require_complete and self.open_gap_count:
            why.append("some rules saw only part of what they judge")
        return "; ".join(why)

    def summary(self) -> Summary:
        failed = [f for f in self.findings if f.status is FindingStatus.FAILED]
        by_severity = dict.fromkeys(sorted(Severity, key=lambda s: -s.rank), 0)
        for finding in failed:
            if finding.severity is not None:
                by_severity[finding.severity] += 1
        return Summary(
            failed=len(failed),
            failing=len(self.failing),
            excepted=sum(1 for f in self.findings if f.status is FindingStatus.EXCEPTED),
            failed_by_severity=by_severity,
            rules_passed=self.count(RuleStatus.PASSED),
            rules_failed=self.count(RuleStatus.FAILED),
            rules_not_run=self.count(RuleStatus.NOT_RUN),
            rules_error=self.count(RuleStatus.ERROR),
            rules_partial=self.partial_count,
            input_problems=len(self.input_problems),
            complete=self.complete,
            fail_on=self.fail_on,
            exit_code=self.exit_code,
            rules_not_applicable=self.count(RuleStatus.NOT_APPLICABLE),
        )

    @property
    def checked_rules(self) -> set[str]:
        """The rules that reached a full verdict (passed or failed, not partial): a baseline finding of a
        partial rule that is gone may be in what it did not see, so it is unverified, never fixed."""
        return {r.id for r in self.rules if r.status in (RuleStatus.PASSED, RuleStatus.FAILED) and not r.partial}

    @property
    def checked_clusters(self) -> set[str] | None:
        """Names of the clusters a fleet audit read (None when it is not a fleet audit)."""
        if not self.fleet:
            return None
        return {name for cluster in self.fleet if not cluster.error for name in cluster.names}

    def with_baseline(self, report: dict[str, Any], path: str) -> AuditResult:
        """This result with the baseline `report` (a JSON report read from `path`) applied."""
        from auditor import baseline as baseline_module

        comparison = baseline_module.compare(
            report.get("findings", []),
            list(self.findings),
            key=baseline_module.key_of_finding,
            failed=lambda finding: finding.status is FindingStatus.FAILED,
            checked_rules=self.checked_rules,
            checked_clusters=self.checked_clusters,
        )
        return replace(self, baseline=baseline_module.Baseline(path, report, comparison))


def _run_rule(rule: Rule, snapshot: Snapshot, posture: Posture, cilium: cilium_config.CiliumConfig,
              exposures: ExposureModel) -> RuleResult:
    severity = posture.severity_overrides.get(rule.id, rule.severity)
    result = RuleResult(rule.id, rule.title, severity, RuleStatus.PASSED, rule=rule)
    unmet = unmet_requirement(snapshot, rule)
    if unmet is not None:
        state, reason = unmet
        result.status = RuleStatus.ERROR if state is CoverageState.FAILED else RuleStatus.NOT_RUN
        result.reason = reason
        return result
    ctx = RuleContext(snapshot=snapshot, posture=posture, cilium=cilium, rule=rule, exposure_model=exposures)
    try:
        findings: list[Finding] = []
        for finding in rule.check(snapshot, ctx):
            if not isinstance(finding, Finding):
                raise TypeError(f"check() yielded {type(finding).__name__}, not a Finding")
            findings.append(replace(finding, rule=rule.id, severity=finding.severity or severity))
    except NotRun as not_run:
        result.status, result.reason = RuleStatus.NOT_RUN, not_run.reason
        return result
    except Exception as error:  # a rule bug must not take the other rules down
        result.status = RuleStatus.ERROR
        result.reason = f"rule crashed: {type(error).__name__}: {error}".splitlines()[0][:500]
        return result
    result.findings = findings
    # dict.fromkeys keeps the order examined (input order, usually sorted already, which the sort then
    # merely checks); a set's hash order made sorting 100k refs three times slower.
    result.examined = sorted(dict.fromkeys(ctx.examined_refs), key=_SORT_KEY)
    result.unseen = tuple(ctx.unseen)
    if not findings and not result.examined:
        # Nothing examined, nothing found: a pass only when the rule says what the input holds none of.
        if rule.nothing_to_check:
            result.reason = NOTHING_TO_CHECK.format(what=rule.nothing_to_check)
        else:
            unseen = "; ".join(str(u) for u in result.unseen)
            result.reason = f"{CHECKED_NOTHING}; did not see {unseen}" if unseen else CHECKED_NOTHING
            result.status, result.unseen = RuleStatus.NOT_RUN, ()
    return result


@dataclass(frozen=True)
class NotApplicable:
    """A rule declared not applicable to the audited input: why, and where that is written (`FILE:LINE`)."""

    reason: str
    origin: str

    @property
    def preamble(self) -> str:
        """How a not-applicable rule's reason starts; why it could not run follows."""
        return f"not applicable here: {self.reason} ({self.origin}); it could not run: "


def _declared_not_applicable(result: RuleResult, declared: NotApplicable, notes: list[str]) -> None:
    """A rule that could not run and is declared not applicable is `not-applicable` (no verdict, no gap). A
    partial one keeps its verdict and findings (the declaration never hides findings), and what it did not see
    is a declared gap, not an incomplete audit. One that ran on everything keeps its verdict; the report says so."""
    if result.status is RuleStatus.NOT_RUN:
        result.status = RuleStatus.NOT_APPLICABLE
        result.reason = f"{declared.preamble}{result.reason}"
    elif result.partial:
        accepted = f"declared not applicable here: {declared.reason} ({declared.origin})"
        result.unseen = tuple(replace(unseen, declared=accepted) for unseen in result.unseen)
    elif result.status is not RuleStatus.ERROR:
        notes.append(f"{declared.origin}: {result.id} is declared not applicable, but it ran on this input "
                     f"({result.status.value}): its verdict counts (remove the declaration?)")


def run(
    snapshot: Snapshot,
    rule_set: RuleSet,
    exceptions: ExceptionList,
    posture: Posture,
    *,
    as_of: dt.date,
    fail_on: Severity = Severity.ERROR,
    require_complete: bool = False,
    not_applicable: Mapping[str, NotApplicable] | None = None,
) -> AuditResult:
    cilium = cilium_config.resolve(snapshot)
    exposure_model = build_exposure_model(snapshot, cilium, posture)  # once, for every rule and the reports
    matcher = ExceptionMatcher(exceptions, as_of)
    labels_of = own_labels(snapshot)  # each finding's own object's labels, never a namesake's
    results: list[RuleResult] = []
    notes = list(posture.notes)
    for rule in rule_set.rules:
        result = _run_rule(rule, snapshot, posture, cilium, exposure_model)
        if not_applicable and rule.id in not_applicable:
            _declared_not_applicable(result, not_applicable[rule.id], notes)
        stamped: list[Finding] = []
        for finding in result.findings:
            entry = matcher.apply(finding, labels_of)
            if entry is not None:
                finding = replace(finding, status=FindingStatus.EXCEPTED, exception=applied(entry))
            stamped.append(finding)
        stamped.sort(key=lambda f: f.sort_key)
        result.findings = stamped
        if result.status is RuleStatus.PASSED and result.failed_count:
            result.status = RuleStatus.FAILED
        results.append(result)
    for plugin in rule_set.broken:
        results.append(
            RuleResult(plugin.id, "(plugin failed to load)", Severity.ERROR, RuleStatus.ERROR, plugin.reason))
    results.sort(key=lambda r: r.id)
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    coverage = {gk: snapshot.coverage(gk) for gk in kinds_read_by(rule_set.rules)}
    rules_run = {r.id for r in results if r.status in (RuleStatus.PASSED, RuleStatus.FAILED)}
    partial = frozenset(r.id for r in results if r.partial)
    statuses = {r.id: (r.status, r.reason) for r in results}
    return AuditResult(
        snapshot=snapshot,
        rules=results,
        findings=findings,
        exceptions=matcher.usage(rules_run, partial),
        exceptions_path=exceptions.path,
        coverage=coverage,
        as_of=as_of,
        fail_on=fail_on,
        require_complete=require_complete,
        notes=notes,
        duplicates=find_duplicates(snapshot.objects) if snapshot.repeats_an_identity else [],
        posture_path=posture.path,
        exposure_model=exposure_model,
        exposures=judge_exposures(exposure_model.entrances, posture, findings, statuses),
        input_problems=sorted(snapshot.input_problems, key=lambda problem: problem.sort_key),
    )
