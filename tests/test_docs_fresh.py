"""The generated rule reference and README table match the rules' metadata (kube-linter style)."""

from __future__ import annotations

from auditor.rule_docs import builtin_rules, render_reference, replace_readme_block
from tests.conftest import ROOT

HINT = "regenerate with: python -m auditor.rule_docs --write"


def test_docs_rules_md_is_fresh() -> None:
    current = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == render_reference(builtin_rules()), HINT


def test_readme_rule_table_is_fresh() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == replace_readme_block(readme, builtin_rules()), HINT


def test_every_rule_is_documented_with_its_rationale() -> None:
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in builtin_rules():
        assert f"## {rule.id}" in text
        assert rule.rationale in text
