"""Meta-tests: every rule is registered explicitly, sorted, fully described and covered."""

from __future__ import annotations

import datetime as dt
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import auditor_rules
from auditor import engine
from auditor.api import CILIUM_CONFIGURATION, AnyOf, Finding, Rule, RuleContext, Severity, Snapshot, kinds
from auditor.cilium import keys
from auditor.exceptions_list import ExceptionList
from auditor.model import K8sObject
from auditor.posture import FIELDS as POSTURE_FIELDS
from auditor.posture import Posture
from auditor.registry import RuleSet, builtin_rule_classes, metadata_problems

# Layering (rules import only auditor.api and their layer's helpers; never the engine,
# reports, sources, CLI or kubernetes client) is the import-linter contracts of
# pyproject.toml, run by tests/test_code_quality.py.

# Posture fields parsed and documented but read by no rule yet, each with the issue that
# makes a rule read it. Temporary: remove the entry when that rule lands (the test below
# fails until then, and fails again if a field is added that nothing reads).
POSTURE_FIELDS_NOT_YET_READ: dict[str, str] = {}


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


# --- rules declare everything they read -----------------------------------------------------


@pytest.mark.parametrize("rule_class", RULE_CLASSES, ids=lambda cls: cls.id)
def test_declared_cilium_settings_are_known_keys_with_a_helm_mapping(rule_class: type[Rule]) -> None:
    """Helm-only input (a GitOps repo) must answer every key a rule reads, or say the key is ConfigMap-only."""
    for key in rule_class.cilium_settings:
        assert key in keys.KEYS, f"{key!r} is not in auditor/cilium/keys.py KEYS"
        known = keys.KEYS[key]
        assert known.helm or known.configmap_only, f"{key!r}: give its Helm value(s), or configmap_only with why"


def test_every_posture_field_is_read_by_a_rule() -> None:
    read = {field for cls in RULE_CLASSES for field in cls.posture_fields}
    unread = set(POSTURE_FIELDS) - read
    assert unread == set(POSTURE_FIELDS_NOT_YET_READ), (
        f"posture fields no rule reads: {sorted(unread)}; known gaps: {sorted(POSTURE_FIELDS_NOT_YET_READ)}"
    )
    for field, why in POSTURE_FIELDS_NOT_YET_READ.items():
        warnings.warn(f"posture field {field} is read by no rule yet: {why}", stacklevel=1)


@pytest.mark.parametrize("rule_class", RULE_CLASSES, ids=lambda cls: cls.id)
def test_requirement_alternatives_are_named(rule_class: type[Rule]) -> None:
    """Alternatives are an AnyOf with a name for the not-run reason, never a bare tuple."""
    for requirement in rule_class.requires:
        assert isinstance(requirement, str) or (isinstance(requirement, AnyOf) and requirement.name), requirement


def test_rules_reading_settings_read_the_kinds_that_carry_them() -> None:
    for cls in RULE_CLASSES:
        if cls.cilium_settings:
            assert set(keys.SOURCE_KINDS) <= set(cls.kinds_read()), cls.id
    etp = next(cls for cls in RULE_CLASSES if cls.id == "etp-local-under-l2")
    # It declares Services and L2 policies; the configuration kinds come from its settings.
    assert {kinds.DAEMONSET, kinds.HELM_RELEASE, kinds.ARGO_APPLICATION} <= set(etp.kinds_read())


class _ReadsWhatItDoesNotDeclare(Rule):
    id = "reads-undeclared"
    severity = Severity.ERROR
    title = "Reads a setting it does not declare"
    rationale_fact = "A test rule."
    remediation = "Declare it."
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (keys.ENABLE_WIREGUARD,)
    reads_setting = keys.KUBE_PROXY_REPLACEMENT
    reads_posture = False

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        ctx.setting(keys.ENABLE_WIREGUARD, unknown_because="test")
        ctx.examined_configuration()  # it judged the configuration (a rule that examines nothing is not-run)
        if self.reads_posture:
            ctx.posture.cilium_version_line  # noqa: B018 (the read is the test)
        else:
            ctx.concrete_setting(self.reads_setting)
        yield from ()


def _run_alone(rule: Rule) -> engine.RuleResult:
    config_map = K8sObject({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"},
        "data": {"enable-wireguard": "true", "kube-proxy-replacement": "true"},
    })
    result = engine.run(Snapshot.build([config_map]), RuleSet([rule], []), ExceptionList("(none)", []), Posture(),
                        as_of=dt.date(2026, 1, 1))
    return result.rules[0]


def test_reading_an_undeclared_setting_is_an_error() -> None:
    result = _run_alone(_ReadsWhatItDoesNotDeclare())
    assert result.status.value == "error"
    assert "UndeclaredRead" in result.reason and "'kube-proxy-replacement'" in result.reason


def test_reading_an_undeclared_posture_field_is_an_error() -> None:
    rule = _ReadsWhatItDoesNotDeclare()
    rule.reads_posture = True
    result = _run_alone(rule)
    assert result.status.value == "error"
    assert "'expected.ciliumVersionLine'" in result.reason and "posture_fields" in result.reason


def test_declared_reads_pass() -> None:
    rule = _ReadsWhatItDoesNotDeclare()
    rule.reads_setting = keys.ENABLE_WIREGUARD
    assert _run_alone(rule).status.value == "passed"


def test_unknown_posture_field_is_a_metadata_problem() -> None:
    class Misdeclared(_ReadsWhatItDoesNotDeclare):
        posture_fields = ("expected.kubernetesVersion",)

    assert any("expected.kubernetesVersion" in p for p in metadata_problems(Misdeclared))


# --- metadata sized for its reader -------------------------------------------------------------


@pytest.mark.parametrize("rule_class", RULE_CLASSES, ids=lambda cls: cls.id)
def test_rationale_is_the_fact_then_the_decision(rule_class: type[Rule]) -> None:
    """The fact reads right on any cluster; the platform's decision follows, not leading with ADR numbers."""
    assert rule_class.rationale_fact.strip() and rule_class.rationale_decision.strip()
    assert not rule_class.rationale_fact.lstrip().startswith(("The platform", "ADR", "In the platform"))
    assert "ADR" not in rule_class.rationale_fact
    assert rule_class.rationale == f"{rule_class.rationale_fact}\n\n{rule_class.rationale_decision}"


@pytest.mark.parametrize("rule_class", RULE_CLASSES, ids=lambda cls: cls.id)
def test_fact_sources_are_urls(rule_class: type[Rule]) -> None:
    for fact in rule_class.facts:
        assert fact.source.startswith("https://"), fact
    for reference in rule_class.references:
        assert reference.startswith("https://"), reference
