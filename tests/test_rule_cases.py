"""One parametrized runner for every rule's YAML case file (sqlfluff's std_rule_cases).

Each `rules/<layer>/cases/<rule-id>.yaml` holds pass and fail cases: input
manifests and the expected verdict. The format is documented in
rules/CASES.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, audit_text

RULES_DIR = ROOT / "rules"


def _load_cases() -> list:
    params = []
    for path in sorted(RULES_DIR.glob("*/cases/*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in data["cases"]:
            params.append(pytest.param(data["rule"], case, id=f"{data['rule']}::{case['name']}"))
    return params


def _expected_object(text: str) -> str:
    return text.strip()


@pytest.mark.parametrize("rule_id, case", _load_cases())
def test_rule_case(tmp_path: Path, rule_id: str, case: dict) -> None:
    result = audit_text(
        tmp_path,
        case["input"],
        exceptions=case.get("exceptions"),
        posture=case.get("posture"),
        coverage=case.get("coverage"),
        rules=(rule_id,),
    )
    (rule_result,) = result.rules
    expect = case["expect"]
    assert rule_result.status.value == expect["status"], (
        f"status {rule_result.status.value} ({rule_result.reason}), findings: "
        f"{[(f.object.display, f.message) for f in rule_result.findings]}"
    )
    if "reason" in expect:
        assert re.search(expect["reason"], rule_result.reason), rule_result.reason
    expected = expect.get("findings", [])
    actual = rule_result.findings
    assert [f.object.display for f in actual] == [_expected_object(e["object"]) for e in expected], [
        (f.object.display, f.message) for f in actual
    ]
    for finding, wanted in zip(actual, expected):
        assert finding.status.value == wanted.get("status", "failed"), finding
        if "severity" in wanted:
            assert finding.severity is not None and finding.severity.value == wanted["severity"], finding
        if "message" in wanted:
            assert re.search(wanted["message"], finding.message), finding.message
        if "line" in wanted:
            assert finding.source is not None and finding.source.line == wanted["line"], finding.source
    if "checked" in expect:
        assert len(rule_result.examined) == expect["checked"], rule_result.examined
