"""Every rule's YAML case file, run by the public runner `auditor.testing` (sqlfluff's std_rule_cases).

Each `rules/<layer>/cases/<rule-id>.yaml` holds pass and fail cases: input
manifests and the expected verdict (format in rules/CASES.md, schema in
auditor/data/case.schema.json). The case file is also the one home of a
rule's examples: its `explain: fail` and `explain: pass` cases are what
`audit explain` and docs/rules.md show. The runner's own behaviour (schema
errors with file and line, the diff of a mismatch) is tested below on case
files written here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from auditor.errors import ConfigError
from auditor.registry import builtin_rule_classes
from auditor.rule import Rule
from auditor.testing import (
    Case,
    CaseMismatch,
    assert_case,
    case_file_path,
    explain_examples,
    iter_cases,
    load_case_file,
)
from tests.conftest import ROOT, run_cli

CASE_FILES = sorted((ROOT / "rules").glob("*/cases/*.yaml"))
RULE_CLASSES = builtin_rule_classes()


@pytest.mark.parametrize("case", list(iter_cases(CASE_FILES)), ids=lambda case: case.id)
def test_rule_case(case: Case) -> None:
    assert_case(case)


@pytest.mark.parametrize("rule_class", RULE_CLASSES, ids=lambda cls: cls.id)
def test_every_rule_has_an_explain_example_of_each_verdict(rule_class: type[Rule]) -> None:
    path = case_file_path(rule_class)
    assert path is not None, f"{rule_class.id}: no cases/{rule_class.id}.yaml beside its module"
    cases = load_case_file(path)
    for kind in ("fail", "pass"):
        example = cases.example(kind)
        assert example is not None, f"{path}: tag one case `explain: {kind}` (shown by `audit explain`)"


def test_no_rule_class_carries_examples_any_more() -> None:
    """The case file is the one home of the examples: a class attribute would be a second copy, unchecked."""
    for rule_class in RULE_CLASSES:
        assert not hasattr(rule_class, "example_fail") and not hasattr(rule_class, "example_pass"), rule_class.id


def test_audit_explain_shows_the_examples_of_the_case_file() -> None:
    rule_class = next(cls for cls in RULE_CLASSES if cls.id == "etp-local-under-l2")
    failing, passing = explain_examples(rule_class)
    assert failing is not None and passing is not None
    shown = run_cli("explain", rule_class.id)
    assert shown.code == 0, shown.stderr
    fails_at, passes_at = shown.stdout.index("\nFails\n"), shown.stdout.index("\nPasses\n")
    indented = lambda text: "\n".join(f"  {line}" if line else "" for line in text.rstrip().splitlines())  # noqa: E731
    assert shown.stdout[fails_at:passes_at].strip("\n") == "Fails\n" + indented(failing)
    assert shown.stdout[passes_at:].strip("\n") == "Passes\n" + indented(passing)


# --- the runner and the case format --------------------------------------------------------

SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: smtp, namespace: mail}
spec: {type: LoadBalancer, ports: [{port: 25}]}
"""


def _case_file(tmp_path: Path, body: str, name: str = "lb-service-not-excepted") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def _one_case(expect: str, *, input_text: str = SERVICE, extra: str = "") -> str:
    indented = "".join(f"      {line}\n" for line in input_text.splitlines())
    head = f"rule: lb-service-not-excepted\ncases:\n  - name: the-case\n{extra}"
    return f"{head}    input: |\n{indented}    expect:\n{expect}"


CASE0 = r"cases\[0\] \(the-case\)"
NOT_ALLOWED = "Additional properties are not allowed"


@pytest.mark.parametrize("expect, line, problem", [
    ("      status: failed\n      findings:\n        - object: Service/mail/smtp\n          mesage: x\n", 12,
     rf"{CASE0}\.expect\.findings\[0\]: {NOT_ALLOWED} \('mesage' was unexpected\)"),
    ("      status: passed\n      cheked: 99\n", 10, rf"{CASE0}\.expect: {NOT_ALLOWED} \('cheked' was unexpected\)"),
    ("      status: passd\n", 10, rf"{CASE0}\.expect\.status: 'passd' is not one of"),
    ("      status: failed\n      checked: many\n", 11, rf"{CASE0}\.expect\.checked: 'many' is not of type 'integer'"),
    ("      status: not-run\n      reason: '(unclosed'\n", 11,
     rf"{CASE0}\.expect\.reason: '\(unclosed' is not a 'regex'"),
])
def test_a_malformed_case_file_fails_loudly_with_file_and_line(tmp_path: Path, expect: str, line: int,
                                                               problem: str) -> None:
    path = _case_file(tmp_path, _one_case(expect))
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:{line}: rule case file: {problem}"):
        load_case_file(path)


@pytest.mark.parametrize("body, line, problem", [
    (_one_case("      status: failed\n").replace("rule: lb-service", "rule: nodeport-service"), 1,
     "the file of rule 'nodeport-service-not-excepted' must be named nodeport-service-not-excepted.yaml"),
    (_one_case("      status: passed\n", extra="    explain: fail\n"), 4,
     "the-case: an explain: fail example must expect status failed"),
    (_one_case("      status: failed\n", extra="    explain: fail\n    posture: 'exposure: {lbIpamL2: true}'\n"), 5,
     "the-case: an explain example is shown as its input alone: it cannot have posture"),
    (_one_case("      status: failed\n") + _one_case("      status: failed\n").split("cases:\n", 1)[1], 11,
     r"cases\[1\]: duplicate case name 'the-case'"),
])
def test_what_the_schema_cannot_say_is_checked_too(tmp_path: Path, body: str, line: int, problem: str) -> None:
    path = _case_file(tmp_path, body)
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:{line}: rule case file: {problem}"):
        load_case_file(path)


def test_a_mismatch_is_a_readable_diff(tmp_path: Path) -> None:
    expect = ("      status: failed\n      checked: 2\n      findings:\n        - object: Service/mail/smtp\n"
              "          message: 'no such words'\n          line: 1\n")
    (case,) = load_case_file(_case_file(tmp_path, _one_case(expect))).cases
    with pytest.raises(CaseMismatch) as raised:
        assert_case(case)
    message = str(raised.value)
    assert message.startswith(f"case lb-service-not-excepted::the-case ({case.path}:3) does not match:\n")
    diff = message.splitlines()
    assert "-checked: 2" in diff and "+checked: 1" in diff
    assert "-  message: no such words" in diff
    assert any(line.startswith("+  message: type LoadBalancer exposes 25/TCP") for line in diff), message
    # What matched is context, not a difference.
    assert " status: failed" in diff and " - object: Service/mail/smtp" in diff and "   line: 1" in diff


def test_an_unexpected_finding_is_shown_whole(tmp_path: Path) -> None:
    (case,) = load_case_file(_case_file(tmp_path, _one_case("      status: passed\n"))).cases
    with pytest.raises(CaseMismatch) as raised:
        assert_case(case)
    diff = str(raised.value).splitlines()
    assert "-status: passed" in diff and "+status: failed" in diff
    assert "+- object: Service/mail/smtp" in diff and "+  severity: error" in diff and "+  line: 1" in diff


def test_a_matching_case_returns_the_rule_result(tmp_path: Path) -> None:
    expect = "      status: failed\n      checked: 1\n      findings:\n        - object: Service/mail/smtp\n"
    (case,) = load_case_file(_case_file(tmp_path, _one_case(expect))).cases
    result = assert_case(case)
    assert result.id == "lb-service-not-excepted" and [f.object.name for f in result.findings] == ["smtp"]


def test_a_case_posture_naming_another_rule_is_refused(tmp_path: Path) -> None:
    posture = "    posture: |\n      severity: {lb-service-not-exceptd: warning}\n"
    (case,) = load_case_file(_case_file(tmp_path, _one_case("      status: failed\n", extra=posture))).cases
    with pytest.raises(ConfigError, match=r"posture: severity\.lb-service-not-exceptd: unknown rule "
                                          r"'lb-service-not-exceptd' \(did you mean 'lb-service-not-excepted'\?\)"):
        assert_case(case)
