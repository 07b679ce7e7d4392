"""Rule crash isolation: one broken rule never takes the run (or the other rules) down.

A rule whose `check` raises, yields something that is not a `Finding`, or
recurses without end ends `error` with a one-line reason; the other rules
still run and report; the run exits 3 (incomplete), with every report
rendered. A rule raising `NotRun` ends `not-run`. Checked on the engine's
`AuditResult`, through the CLI in-process (rules monkeypatched in), and
through the real command with a plugin installed from an entry point.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

import jsonschema
import pytest

from auditor import engine, exceptions_list, kinds, registry
from auditor.config_files import load_schema
from auditor.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK
from auditor.model import Finding, RuleStatus, Severity
from auditor.posture import Posture
from auditor.report import FORMATS, renderer
from auditor.rule import NotRun, Rule, RuleContext
from auditor.snapshot import Snapshot
from auditor.sources.files import read_paths
from tests.conftest import AS_OF, run_cli

NODEPORT_INPUT = """\
apiVersion: v1
kind: Service
metadata: {name: mlflow-nodeport, namespace: mlflow}
spec:
  type: NodePort
  ports: [{port: 5000}]
"""
CLUSTERIP_INPUT = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec: {ports: [{port: 80}]}
"""
REAL_RULE_ID = "nodeport-service-not-excepted"


class _TestRule(Rule):
    severity = Severity.ERROR
    title = "A rule for the isolation tests"
    rationale = "Exercises the engine."
    remediation = "None needed."
    requires = (kinds.SERVICE,)


class Crashes(_TestRule):
    id = "test-crashes"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        services = snapshot.of_kind(kinds.SERVICE)
        yield self.finding(services[0], "a finding before the crash")  # discarded with the crash
        raise RuntimeError("boom\nsecond line of the message")


class YieldsNonFinding(_TestRule):
    id = "test-yields-non-finding"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        yield {"object": "Service/x/y", "message": "a dict, not a Finding"}  # type: ignore[misc]


class NotRunRule(_TestRule):
    id = "test-not-run"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        raise NotRun("the input does not show what this rule needs")
        yield  # pragma: no cover - makes this a generator


class NotRunAfterFinding(_TestRule):
    id = "test-not-run-late"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        yield self.finding(snapshot.of_kind(kinds.SERVICE)[0], "yielded before NotRun")
        raise NotRun("changed its mind")


class RecursesForever(_TestRule):
    id = "test-recursion"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        def walk(depth: int) -> int:
            return walk(depth + 1) + 1

        walk(0)
        yield from ()


class ReturnsNone(_TestRule):
    id = "test-returns-none"

    def check(self, snapshot: Snapshot, ctx: RuleContext):  # type: ignore[override]
        return None  # not iterable


class LongMessage(_TestRule):
    id = "test-long-message"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        raise ValueError("x" * 5000)
        yield  # pragma: no cover


class EmptyMessage(_TestRule):
    id = "test-empty-message"

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        raise KeyError()
        yield  # pragma: no cover


REAL_RULES = registry.load_rules(plugins=False)
REPORT_VALIDATOR = jsonschema.Draft202012Validator(load_schema("report.schema.json"),
                                                   format_checker=jsonschema.FormatChecker())


def _snapshot(tmp_path: Path, text: str = NODEPORT_INPUT) -> Snapshot:
    path = tmp_path / "input.yaml"
    path.write_text(text, encoding="utf-8")
    return read_paths([str(path)])


def _run(tmp_path: Path, *rules: Rule, text: str = NODEPORT_INPUT, require_complete: bool = False) -> engine.AuditResult:
    real = REAL_RULES.by_id(REAL_RULE_ID)
    assert real is not None
    rule_set = registry.RuleSet(sorted([*rules, real], key=lambda r: r.id), [])
    return engine.run(_snapshot(tmp_path, text), rule_set, exceptions_list.ExceptionList("(none)", []), Posture(),
                      as_of=AS_OF, require_complete=require_complete)


def _by_id(result: engine.AuditResult) -> dict[str, engine.RuleResult]:
    return {r.id: r for r in result.rules}


def _reports_render(result: engine.AuditResult) -> None:
    for name in FORMATS:
        text = renderer(name)(result, color=False) if name == "text" else renderer(name)(result)
        text.encode("utf-8")
        if name == "json":
            REPORT_VALIDATOR.validate(json.loads(text))
        elif name == "junit":
            ET.fromstring(text.encode("utf-8"))


def _assert_real_rule_ran(result: engine.AuditResult) -> None:
    real = _by_id(result)[REAL_RULE_ID]
    assert real.status is RuleStatus.FAILED, real
    assert [f.object.display for f in real.findings] == ["Service/mlflow/mlflow-nodeport"]


@pytest.mark.parametrize("rule, reason", [
    (Crashes(), "rule crashed: RuntimeError: boom"),
    (YieldsNonFinding(), "rule crashed: TypeError: check() yielded dict, not a Finding"),
    (RecursesForever(), "rule crashed: RecursionError: maximum recursion depth exceeded"),
    (ReturnsNone(), "rule crashed: TypeError: 'NoneType' object is not iterable"),
    (EmptyMessage(), "rule crashed: KeyError: "),
], ids=lambda value: value.id if isinstance(value, Rule) else "")
def test_a_crashing_rule_is_an_error_and_the_others_still_run(tmp_path: Path, rule: Rule, reason: str) -> None:
    result = _run(tmp_path, rule)
    crashed = _by_id(result)[rule.id]
    assert crashed.status is RuleStatus.ERROR
    assert crashed.reason.startswith(reason), crashed.reason
    assert "\n" not in crashed.reason and "Traceback" not in crashed.reason
    assert crashed.findings == [], "findings yielded before a crash are not reported as a verdict"
    _assert_real_rule_ran(result)
    assert result.exit_code == EXIT_INCOMPLETE
    assert not result.complete and result.summary().rules_error == 1
    _reports_render(result)


def test_error_reason_is_one_bounded_line(tmp_path: Path) -> None:
    result = _run(tmp_path, LongMessage(), Crashes())
    long_reason = _by_id(result)["test-long-message"].reason
    assert len(long_reason) <= 500 and "\n" not in long_reason
    assert _by_id(result)["test-crashes"].reason == "rule crashed: RuntimeError: boom"
    assert result.summary().rules_error == 2


def test_crash_wins_over_findings_for_the_exit_code(tmp_path: Path) -> None:
    """A failing finding (exit 1) and a crashed rule: the run is incomplete, exit 3."""
    result = _run(tmp_path, Crashes())
    assert result.failing and result.exit_code == EXIT_INCOMPLETE


def test_a_rule_raising_not_run_is_not_run(tmp_path: Path) -> None:
    result = _run(tmp_path, NotRunRule(), text=CLUSTERIP_INPUT)
    not_run = _by_id(result)["test-not-run"]
    assert not_run.status is RuleStatus.NOT_RUN
    assert not_run.reason == "the input does not show what this rule needs"
    assert _by_id(result)[REAL_RULE_ID].status is RuleStatus.PASSED
    assert result.exit_code == EXIT_OK, "not-run alone does not fail the run"
    strict = _run(tmp_path, NotRunRule(), text=CLUSTERIP_INPUT, require_complete=True)
    assert strict.exit_code == EXIT_INCOMPLETE
    _reports_render(strict)


def test_not_run_after_yielding_discards_the_findings(tmp_path: Path) -> None:
    result = _run(tmp_path, NotRunAfterFinding())
    late = _by_id(result)["test-not-run-late"]
    assert late.status is RuleStatus.NOT_RUN and late.findings == []
    _assert_real_rule_ran(result)
    assert result.exit_code == EXIT_FINDINGS


def test_rules_are_isolated_from_each_other_in_any_order(tmp_path: Path) -> None:
    """Crashes before and after the real rule (ids sort around it) change nothing for it."""
    result = _run(tmp_path, Crashes(), YieldsNonFinding(), NotRunRule(), RecursesForever())
    statuses = {r.id: r.status for r in result.rules}
    assert statuses == {
        "test-crashes": RuleStatus.ERROR,
        "test-yields-non-finding": RuleStatus.ERROR,
        "test-not-run": RuleStatus.NOT_RUN,
        "test-recursion": RuleStatus.ERROR,
        REAL_RULE_ID: RuleStatus.FAILED,
    }
    _assert_real_rule_ran(result)
    assert result.exit_code == EXIT_INCOMPLETE


# --- through the command line ------------------------------------------------------


def test_cli_in_process_with_a_crashing_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from auditor.cli import main

    def load_rules(plugins: bool = True) -> registry.RuleSet:
        rules = [*REAL_RULES.rules, Crashes()]
        return registry.RuleSet(sorted(rules, key=lambda r: r.id), [])

    monkeypatch.setattr(registry, "load_rules", load_rules)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "input.yaml"
    path.write_text(NODEPORT_INPUT, encoding="utf-8")
    report = tmp_path / "out" / "audit.json"
    with pytest.raises(SystemExit) as exited:
        main([str(path), "--format", "text", "--json", str(report), "--as-of", AS_OF.isoformat()])
    assert exited.value.code == EXIT_INCOMPLETE
    out, err = capsys.readouterr()
    assert err == ""
    assert "ERROR test-crashes: rule crashed: RuntimeError: boom" in out
    assert "Verdict: INCOMPLETE" in out
    data = json.loads(report.read_text(encoding="utf-8"))
    REPORT_VALIDATOR.validate(data)
    rules = {r["id"]: r for r in data["rules"]}
    assert rules["test-crashes"]["status"] == "error"
    assert rules[REAL_RULE_ID]["status"] == "failed"
    assert data["summary"]["exitCode"] == EXIT_INCOMPLETE


PLUGIN_MODULE = '''\
from auditor import kinds
from auditor.model import Severity
from auditor.rule import Rule


class CrashingPlugin(Rule):
    id = "crashing-plugin"
    severity = Severity.WARNING
    title = "A third-party rule that crashes"
    rationale = "Exercises crash isolation through the entry-point group."
    remediation = "Fix the plugin."
    requires = (kinds.SERVICE,)

    def check(self, snapshot, ctx):
        for service in snapshot.of_kind(kinds.SERVICE):
            ctx.examined(service)
            raise ZeroDivisionError("plugin bug on " + service.name)
        yield
'''


def _install_plugin(site: Path, entry_points: str) -> dict[str, str]:
    """A distribution on PYTHONPATH exposing `entry_points` (no pip, no network)."""
    import os

    site.mkdir(parents=True, exist_ok=True)
    (site / "crashing_plugin.py").write_text(PLUGIN_MODULE, encoding="utf-8")
    dist_info = site / "crashing_plugin-0.1.dist-info"
    dist_info.mkdir(exist_ok=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: crashing-plugin\nVersion: 0.1\n", encoding="utf-8")
    (dist_info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))}


def test_cli_with_a_crashing_plugin_exits_3_with_a_report(tmp_path: Path) -> None:
    env = _install_plugin(tmp_path / "site", """\
        [cilium_auditor.rules]
        crashing-plugin = crashing_plugin:CrashingPlugin
        broken-plugin = crashing_plugin_missing:Nothing
        """)
    path = tmp_path / "input.yaml"
    path.write_text(NODEPORT_INPUT, encoding="utf-8")
    junit = tmp_path / "audit.xml"
    result = run_cli(str(path), "--format", "json", "--junit", str(junit), "--as-of", AS_OF.isoformat(),
                     cwd=tmp_path, env=env)
    assert result.code == EXIT_INCOMPLETE, result
    assert result.stderr == "" and "Traceback" not in result.stdout
    data = json.loads(result.stdout)
    REPORT_VALIDATOR.validate(data)
    rules = {r["id"]: r for r in data["rules"]}
    assert rules["crashing-plugin"]["status"] == "error"
    assert rules["crashing-plugin"]["reason"] == "rule crashed: ZeroDivisionError: plugin bug on mlflow-nodeport"
    assert rules["broken-plugin"]["status"] == "error"
    assert "failed to load" in rules["broken-plugin"]["reason"]
    assert rules[REAL_RULE_ID]["status"] == "failed"
    suites = {s.get("name"): s for s in ET.parse(junit).getroot()}
    assert suites["crashing-plugin"].find("testcase/error") is not None
