"""The generated rule reference and README table match the rules' metadata (kube-linter style)."""

from __future__ import annotations

from auditor.rule_docs import builtin_rules, render_index, render_reference, replace_readme_block
from tests.conftest import ROOT

HINT = "regenerate with: python -m auditor.rule_docs --write"


def test_docs_rules_md_is_fresh() -> None:
    current = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == render_reference(builtin_rules()), HINT


def test_rule_index_is_fresh() -> None:
    """`audit rules` lists rules from rules/index.json without importing them: it must match."""
    current = (ROOT / "rules" / "index.json").read_text(encoding="utf-8")
    assert current == render_index(builtin_rules()), HINT


def test_readme_rule_table_is_fresh() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == replace_readme_block(readme, builtin_rules()), HINT


def test_every_rule_is_documented_with_its_rationale() -> None:
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in builtin_rules():
        assert f"## {rule.id}" in text
        assert rule.rationale_fact in text and rule.rationale_decision in text


def _two_commands() -> list[str]:
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    install_and_audit, install_and_test = _two_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert install_and_test in ci
    assert "pytest" in install_and_test and "pip install" in install_and_test


def test_the_readme_example_exists_and_is_a_kubectl_list() -> None:
    import json
    import shlex

    install_and_audit, _ = _two_commands()
    audit_part = install_and_audit.split("&&")[-1]
    example = shlex.split(audit_part)[-1]
    assert json.loads((ROOT / example).read_text(encoding="utf-8"))["kind"] == "List"
