"""Meta-tests: every rule is registered explicitly, sorted, fully described and covered."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest
import yaml

import auditor_rules
from auditor.registry import builtin_rule_classes, metadata_problems
from auditor.rule import Rule

def case_file(rule_class: type[Rule]) -> Path:
    """A rule's case file: `cases/<rule-id>.yaml` beside its module."""
    module_file = sys.modules[rule_class.__module__].__file__
    assert module_file is not None
    return Path(module_file).parent / "cases" / f"{rule_class.id}.yaml"


RULE_CLASSES = builtin_rule_classes()


def test_builtin_list_is_sorted_by_rule_id_and_unique() -> None:
    ids = [cls.id for cls in RULE_CLASSES]
    assert ids == sorted(ids)
    assert len(ids) == len(set(ids))


def test_every_rule_module_is_registered() -> None:
    """A module in rules/ that is not in BUILTIN_RULES would silently never run."""
    registered = {spec.partition(":")[0] for spec in auditor_rules.BUILTIN_RULES}
    modules = {
        info.name
        for info in pkgutil.walk_packages(auditor_rules.__path__, "auditor_rules.")
        if not info.ispkg and not info.name.rpartition(".")[2].startswith("_")
    }
    assert modules == registered


def test_one_rule_per_module() -> None:
    for spec in auditor_rules.BUILTIN_RULES:
        module = importlib.import_module(spec.partition(":")[0])
        rules = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Rule) and v is not Rule
                 and v.__module__ == module.__name__]
        assert len(rules) == 1, (spec, rules)


@pytest.mark.parametrize("rule_class", RULE_CLASSES, ids=lambda cls: cls.id)
def test_metadata_is_complete(rule_class: type[Rule]) -> None:
    assert metadata_problems(rule_class) == []


@pytest.mark.parametrize("rule_class", RULE_CLASSES, ids=lambda cls: cls.id)
def test_rule_states_the_facts_it_relies_on(rule_class: type[Rule]) -> None:
    """The rule reference shows, per rule, the Cilium/Kubernetes facts it encodes and the versions they hold for."""
    assert rule_class.facts, "add Fact(statement, holds_for, source) entries"
    for fact in rule_class.facts:
        assert fact.statement and fact.holds_for and fact.source, fact


@pytest.mark.parametrize("rule_class", RULE_CLASSES, ids=lambda cls: cls.id)
def test_rule_has_pass_and_fail_cases(rule_class: type[Rule]) -> None:
    path = case_file(rule_class)
    assert path.is_file(), f"missing case file {path}"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["rule"] == rule_class.id
    statuses = [case["expect"]["status"] for case in data["cases"]]
    assert "passed" in statuses and "failed" in statuses, statuses
    names = [case["name"] for case in data["cases"]]
    assert len(names) == len(set(names))


def test_every_case_file_names_a_rule() -> None:
    ids = {cls.id for cls in RULE_CLASSES}
    rules_dir = Path(auditor_rules.__file__).parent
    for path in rules_dir.glob("**/cases/*.yaml"):
        assert path.stem in ids, f"{path.name} names no registered rule"


def test_rules_import_no_reporter_cli_or_kubernetes_client() -> None:
    """Layers only look down: rules see the object model, never reporters, the CLI or the client."""
    forbidden = ("auditor.report", "auditor.cli", "auditor.sources", "kubernetes", "auditor.engine")
    rules_dir = Path(auditor_rules.__file__).parent
    for path in rules_dir.glob("**/*.py"):
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")):
                module = stripped.split()[1]
                assert not module.startswith(forbidden), f"{path.name}: {stripped}"
