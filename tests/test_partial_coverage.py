"""Coverage that matches the evidence (issue 9 section 4): partial verdicts, "nothing to check", the gate.

One notion in the engine: a rule's verdict is `passed` or `failed`, plus what it
did not see (`RuleContext.did_not_see`). These tests pin the gate semantics
(docs/pr-gate.md, "The gate, exactly"):

- a partial verdict is a verdict: its findings fail the run as any others, its
  pass is never shown as a full pass, and `complete` is false;
- with `--require-complete` it is incomplete, exit 3, exactly like a rule not run;
- a rule that examined nothing and found nothing is not-run ("checked nothing"),
  unless it says what the input then holds none of (`nothing_to_check`): a full pass.

The rules here are small plugins of the real API, run by the real engine and
rendered by the real reporters; the built-in rules' own partial verdicts are
pinned by their case files (rules/*/cases/*.yaml, `didNotSee`).
"""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from auditor import engine
from auditor.api import Finding, NotRun, Rule, RuleContext, Severity, Snapshot, kinds
from auditor.exceptions_list import ExceptionList
from auditor.fleet import merge_fleet
from auditor.model import K8sObject, RuleStatus, Source
from auditor.posture import Posture
from auditor.registry import RuleSet
from auditor.report import Presentation, Verbosity, render
from auditor.report.json_report import to_dict
from tests.ci_support import report_validator

AS_OF = dt.date(2026, 11, 29)
WIDE = Presentation(width=200)


def _service(name: str, kind: str = "ClusterIP") -> K8sObject:
    return K8sObject({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "shop"},
                      "spec": {"type": kind}}, Source("shop.yaml", 1))


class _Base(Rule):
    severity = Severity.ERROR
    rationale_fact = "A test rule."
    remediation = "Nothing."
    requires = (kinds.SERVICE,)


class PartialPass(_Base):
    id = "test-partial-pass"
    title = "Judges Services, does not see the Gateways"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        for service in snapshot.of_kind(kinds.SERVICE):
            ctx.examined(service)
        ctx.did_not_see_kind(kinds.GATEWAY, "Gateways")
        yield from ()


class PartialFail(_Base):
    id = "test-partial-fail"
    title = "Flags LoadBalancer Services, does not see the Helm values"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        ctx.did_not_see("Services declared in Helm values", "the input holds no HelmRelease objects")
        for service in snapshot.of_kind(kinds.SERVICE):
            ctx.examined(service)
            if service.spec.get("type") == "LoadBalancer":
                yield self.finding(service, "type LoadBalancer")


class ChecksNothingSilently(_Base):
    id = "test-checks-nothing"
    title = "Examines nothing and does not say why"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        yield from ()


class NothingToCheck(_Base):
    id = "test-nothing-to-check"
    title = "Judges NodePort Services"
    nothing_to_check = "Service of type NodePort"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        for service in snapshot.of_kind(kinds.SERVICE):
            if service.spec.get("type") == "NodePort":
                ctx.examined(service)
        yield from ()


class UnseenThenNotRun(_Base):
    id = "test-unseen-then-not-run"
    title = "Records what it did not see, then cannot judge at all"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        ctx.did_not_see("Gateways", "none in the input")
        raise NotRun("the configuration is unknown")


class UnseenAndNothingExamined(_Base):
    id = "test-unseen-nothing-examined"
    title = "Records what it did not see and examines nothing"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        ctx.did_not_see("Gateways", "none in the input")
        yield from ()


def _run(*rules: Rule, services: tuple[K8sObject, ...] = (), require_complete: bool = False) -> engine.AuditResult:
    snapshot = Snapshot.build(list(services or (_service("web"),)), inputs=["shop.yaml"])
    return engine.run(snapshot, RuleSet(list(rules), []), ExceptionList("(none)", []), Posture(), as_of=AS_OF,
                      require_complete=require_complete)


def _rule(result: engine.AuditResult, rule_id: str) -> engine.RuleResult:
    return next(r for r in result.rules if r.id == rule_id)


# --- the gate ---------------------------------------------------------------------------------------------


def test_a_partial_pass_is_a_pass_on_what_was_seen_never_a_full_one() -> None:
    result = _run(PartialPass())
    rule = _rule(result, "test-partial-pass")
    assert rule.status is RuleStatus.PASSED and rule.partial
    gateways = "the input holds no Gateway.gateway.networking.k8s.io objects"
    assert [(u.what, u.reason) for u in rule.unseen] == [("Gateways", gateways)]
    summary = result.summary()
    assert (summary.rules_passed, summary.rules_partial, summary.complete, summary.exit_code) == (1, 1, False, 0)


def test_require_complete_makes_a_partial_verdict_exit_3_like_a_rule_not_run() -> None:
    assert _run(PartialPass(), require_complete=True).exit_code == 3
    failing = (_service("web"), _service("smtp", "LoadBalancer"))
    assert _run(PartialFail(), services=failing).exit_code == 1  # its findings fail the run as any others
    assert _run(PartialFail(), services=failing, require_complete=True).exit_code == 3  # incompleteness first


def test_a_partial_verdict_declared_not_applicable_keeps_its_findings_and_is_no_gap() -> None:
    """`requireComplete.notApplicable` (docs/config.md) accepts what a partial rule did not see, with the
    declaration's reason and line: the run is complete, the verdict and its findings still count."""
    failing = (_service("web"), _service("smtp", "LoadBalancer"))
    snapshot = Snapshot.build(list(failing), inputs=["shop.yaml"])
    declared = {"test-partial-fail": engine.NotApplicable("no Helm here", ".cilium-audit.yaml:4"),
                "test-partial-pass": engine.NotApplicable("no Gateways here", ".cilium-audit.yaml:5")}
    result = engine.run(snapshot, RuleSet([PartialFail(), PartialPass()], []), ExceptionList("(none)", []),
                        Posture(), as_of=AS_OF, require_complete=True, not_applicable=declared)
    fail, passed = _rule(result, "test-partial-fail"), _rule(result, "test-partial-pass")
    assert (fail.status, passed.status) == (RuleStatus.FAILED, RuleStatus.PASSED)
    assert fail.partial and not fail.open_gap and [f.object.name for f in fail.findings] == ["smtp"]
    assert [u.declared for u in fail.unseen] == ["declared not applicable here: no Helm here (.cilium-audit.yaml:4)"]
    summary = result.summary()
    assert (summary.complete, summary.rules_partial, summary.exit_code) == (True, 2, 1)  # the finding fails it
    report = to_dict(result)
    report_validator().validate(report)
    (unseen,) = next(r for r in report["rules"] if r["id"] == "test-partial-fail")["didNotSee"]
    assert unseen["declared"].endswith("(.cilium-audit.yaml:4)")
    junit = ET.fromstring(render("junit", result, WIDE))
    assert not [c for c in junit.iter("testcase") if c.find("error") is not None]
    # Without the declaration the same run is incomplete (exit 3): the gap is open.
    undeclared = engine.run(snapshot, RuleSet([PartialFail(), PartialPass()], []), ExceptionList("(none)", []),
                            Posture(), as_of=AS_OF, require_complete=True)
    assert undeclared.exit_code == 3 and _rule(undeclared, "test-partial-fail").open_gap


def test_a_full_verdict_is_complete() -> None:
    result = _run(NothingToCheck(), services=(_service("web", "NodePort"),), require_complete=True)
    assert result.complete and result.exit_code == 0 and not _rule(result, "test-nothing-to-check").partial


def test_a_rule_that_checked_nothing_is_not_run_unless_it_says_what_there_is_none_of() -> None:
    result = _run(ChecksNothingSilently(), NothingToCheck())
    silent, declared = _rule(result, "test-checks-nothing"), _rule(result, "test-nothing-to-check")
    assert silent.status is RuleStatus.NOT_RUN and silent.reason.startswith("checked nothing: ")
    assert declared.status is RuleStatus.PASSED and declared.nothing_checked
    assert declared.reason == "nothing to check: no Service of type NodePort in the input"
    assert _run(NothingToCheck(), require_complete=True).exit_code == 0  # a full pass: the Services were seen


def test_what_was_not_seen_before_a_not_run_is_not_a_partial_verdict() -> None:
    result = _run(UnseenThenNotRun(), UnseenAndNothingExamined())
    raised, empty = _rule(result, "test-unseen-then-not-run"), _rule(result, "test-unseen-nothing-examined")
    assert (raised.status, raised.reason, raised.unseen) == (RuleStatus.NOT_RUN, "the configuration is unknown", ())
    assert empty.status is RuleStatus.NOT_RUN and not empty.partial
    assert empty.reason.endswith("; did not see Gateways (none in the input)")


def test_a_fleet_says_per_cluster_what_was_not_seen() -> None:
    parts = [(name, _run(PartialPass())) for name in ("lab", "prod")]
    fleet = merge_fleet(parts, Snapshot.build([], mode="fleet"))
    (rule,) = fleet.rules
    assert [u.reason.split(":")[0] for u in rule.unseen] == ["lab", "prod"] and rule.partial


# --- every report -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed() -> engine.AuditResult:
    return _run(PartialPass(), PartialFail(), NothingToCheck(),
                services=(_service("web"), _service("smtp", "LoadBalancer")))


def test_text_says_what_was_not_seen_after_the_verdict_line(mixed: engine.AuditResult) -> None:
    lines = render("text", mixed, WIDE).splitlines()
    passed = lines.index("PASSED test-partial-pass (partial, 2 checked): Judges Services, does not see the Gateways")
    assert lines[passed + 1] == "  did not see: Gateways (the input holds no Gateway.gateway.networking.k8s.io objects)"
    failed = next(i for i, line in enumerate(lines) if line.startswith("FAILED test-partial-fail "))
    assert lines[failed + 1].startswith("  did not see: Services declared in Helm values (the input holds no")
    assert "PASSED test-nothing-to-check (nothing to check): Judges NodePort Services" in lines
    assert lines[-2] == "1 finding failed, 0 excepted, 2 rules passed, 2 partial, 0 rules not run"
    assert lines[-1] == "Verdict: FAIL (1 finding at or above error; exit 1)"
    verbose = render("text", mixed, Presentation(width=200, verbosity=Verbosity.VERBOSE))
    assert "  nothing to check: no Service of type NodePort in the input" in verbose.splitlines()  # -v says what


def test_text_verdict_of_a_partial_pass() -> None:
    lines = render("text", _run(PartialPass()), WIDE).splitlines()
    assert lines[-1] == ("Verdict: PASS on what could be checked (some rules saw only part of the input; "
                         "--require-complete makes that fail)")
    strict = render("text", _run(PartialPass(), require_complete=True), WIDE).splitlines()
    assert strict[-1] == "Verdict: INCOMPLETE (some rules saw only part of what they judge; exit 3)"


def test_json_has_partial_and_did_not_see_and_validates(mixed: engine.AuditResult) -> None:
    report = to_dict(mixed)
    rules = {r["id"]: r for r in report["rules"]}
    assert rules["test-partial-pass"]["partial"] is True
    assert rules["test-partial-fail"]["didNotSee"] == [
        {"what": "Services declared in Helm values", "reason": "the input holds no HelmRelease objects"}]
    assert "partial" not in rules["test-nothing-to-check"] and rules["test-nothing-to-check"]["checked"] == 0
    assert rules["test-nothing-to-check"]["reason"].startswith("nothing to check: ")
    assert report["summary"]["rulesPartial"] == 2 and report["summary"]["complete"] is False
    errors = list(report_validator().iter_errors(json.loads(json.dumps(report))))
    assert not errors, [e.message for e in errors[:5]]


def test_junit_sarif_and_markdown_carry_it(mixed: engine.AuditResult) -> None:
    root = ET.fromstring(render("junit", mixed))
    suite = next(s for s in root.findall("testsuite") if s.get("name") == "test-partial-pass")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties").findall("property")}
    assert properties["partial"] == "true" and properties["didNotSee"].startswith("Gateways (")
    case = next(c for c in suite.findall("testcase") if c.get("name") == "did not see: Gateways")
    assert case.find("skipped") is not None  # an error only under --require-complete
    (invocation,) = json.loads(render("sarif", mixed))["runs"][0]["invocations"]
    notes = [n for n in invocation["toolExecutionNotifications"] if n["descriptor"]["id"] == "rule-partial"]
    assert [n["associatedRule"]["id"] for n in notes] == ["test-partial-fail", "test-partial-pass"]
    assert {n["level"] for n in notes} == {"note"} and invocation["executionSuccessful"] is False
    markdown = render("markdown", mixed)
    assert "| `test-partial-pass` | passed | Gateways | the input holds no Gateway.gateway.networking.k8s.io " \
           "objects |" in markdown
    assert "`test-partial-pass` (partial)" in markdown and "`test-nothing-to-check` (nothing to check)" in markdown
    prometheus = render("prometheus", mixed)
    assert 'cilium_exposure_audit_rule_partial{rule="test-partial-pass"} 1' in prometheus
    assert 'cilium_exposure_audit_rule_partial{rule="test-nothing-to-check"} 0' in prometheus


def test_under_require_complete_junit_and_sarif_make_it_an_error() -> None:
    result = _run(PartialPass(), require_complete=True)
    case = next(c for c in ET.fromstring(render("junit", result)).iter("testcase")
                if c.get("name") == "did not see: Gateways")
    assert case.find("error") is not None and case.find("error").get("type") == "partial"
    (invocation,) = json.loads(render("sarif", result))["runs"][0]["invocations"]
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and invocation["exitCode"] == 3


# --- what a partial verdict cannot prove ------------------------------------------------------------------


class FullFail(PartialFail):
    id = "test-partial-fail"  # the same rule, seeing everything it judges

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        for service in snapshot.of_kind(kinds.SERVICE):
            ctx.examined(service)
            if service.spec.get("type") == "LoadBalancer":
                yield self.finding(service, "type LoadBalancer")


def test_a_finding_gone_under_a_partial_verdict_is_unverified_never_fixed() -> None:
    before = to_dict(_run(FullFail(), services=(_service("web"), _service("smtp", "LoadBalancer"))))
    partial = _run(PartialFail()).with_baseline(before, "before.json")
    full = _run(FullFail()).with_baseline(before, "before.json")
    assert [e["object"]["name"] for e in partial.baseline.comparison.unverified] == ["smtp"]
    assert not partial.baseline.comparison.fixed
    assert [e["object"]["name"] for e in full.baseline.comparison.fixed] == ["smtp"]


def test_an_exception_only_partial_rules_read_is_inactive_when_unmatched_never_stale(tmp_path) -> None:
    from auditor import exceptions_list

    path = tmp_path / "exceptions.yaml"
    path.write_text("exceptions:\n  - name: smtp-relay\n    rules: [test-partial-fail]\n"
                    "    reason: The relay (MAIL-12).\n    match: {kind: Service, namespace: shop, name: smtp}\n",
                    encoding="utf-8")
    entries = exceptions_list.load(str(path))
    snapshot = Snapshot.build([_service("web")], inputs=["shop.yaml"])
    for rule, status in ((PartialFail(), "inactive"), (FullFail(), "unused")):
        result = engine.run(snapshot, RuleSet([rule], []), entries, Posture(), as_of=AS_OF)
        assert [usage.status.value for usage in result.exceptions] == [status]
