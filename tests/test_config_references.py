"""Every reference in configuration is validated, and the vocabularies are one (yamllint-style).

- A posture `severity:` key or an exception's `rules:` entry naming no rule is
  an error with the file, the line and, for a typo, "did you mean".
- The JSON schemas' enums are the code's enums (`Severity`, the statuses, the
  coverage states, the exit codes): a test pins each pair, so neither drifts.
- The rule set is built once per run; jsonschema is imported only when a file
  of the user's is validated (the bundled exception list is validated here).
- Each built-in rule's layer is its sub-package, listed in `auditor_rules.LAYERS`.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import auditor_rules
from auditor import registry
from auditor.baseline import BaselineState
from auditor.config_files import load_schema
from auditor.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK
from auditor.exceptions_list import EntryStatus, bundled_path
from auditor.model import FindingStatus, RuleStatus, Severity
from auditor.snapshot import CoverageState
from tests.conftest import FIXTURES, ROOT, run_cli

DRIFTED = str(FIXTURES / "clusters" / "drifted.json")
SEVERITIES = [severity.value for severity in Severity.highest_first()]


def _one_error_line(result: Any) -> str:
    assert result.code == 2, (result.code, result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    return str(line)


# --- references -----------------------------------------------------------------------------


def test_an_unknown_rule_under_posture_severity_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    posture = tmp_path / "posture.yaml"
    posture.write_text("exposure: {mode: gateway}\nseverity:\n  kube-proxy-leftover: warning\n"
                       "  lb-service-not-exepted: info\n")
    line = _one_error_line(run_cli(DRIFTED, "--posture", str(posture)))
    assert line == (f"audit: error: {posture}:4: posture: severity.lb-service-not-exepted: unknown rule "
                    "'lb-service-not-exepted' (did you mean 'lb-service-not-excepted'?)")


def test_an_unknown_rule_far_from_any_is_an_error_without_a_guess(tmp_path: Path) -> None:
    posture = tmp_path / "posture.yaml"
    posture.write_text("severity: {zzz: info}\n")
    line = _one_error_line(run_cli(DRIFTED, "--posture", str(posture)))
    assert line == f"audit: error: {posture}:1: posture: severity.zzz: unknown rule 'zzz'"


def test_known_severity_overrides_apply(tmp_path: Path) -> None:
    posture = tmp_path / "posture.yaml"
    posture.write_text("severity:\n  kube-proxy-leftover: info\n")
    result = run_cli(DRIFTED, "--posture", str(posture), "--format", "json", "--rule", "kube-proxy-leftover")
    assert result.code in (0, 1), result.stderr
    (rule,) = json.loads(result.stdout)["rules"]
    assert rule["severity"] == "info"


def test_an_unknown_rule_in_the_exception_list_says_did_you_mean(tmp_path: Path) -> None:
    exceptions = tmp_path / "exceptions.yaml"
    exceptions.write_text("exceptions:\n  - name: typo\n    rules: [nodeport-service-not-exceptd]\n"
                          "    reason: a typo\n    match: {kind: Service}\n")
    line = _one_error_line(run_cli(DRIFTED, "--exceptions", str(exceptions)))
    assert line == (f"audit: error: {exceptions}:2: exception list: typo: unknown rule 'nodeport-service-not-exceptd' "
                    "(did you mean 'nodeport-service-not-excepted'?)")


# --- one vocabulary -----------------------------------------------------------------------


def _at(schema: dict[str, Any], *path: str) -> Any:
    node: Any = schema
    for key in path:
        node = node[key]
    return node


REPORT = load_schema("report.schema.json")
CASE = load_schema("case.schema.json")
POSTURE = load_schema("posture.schema.json")


@pytest.mark.parametrize("schema, path, values", [
    (POSTURE, ("properties", "severity", "additionalProperties", "enum"), SEVERITIES),
    (REPORT, ("$defs", "severity", "enum"), SEVERITIES),
    (REPORT, ("properties", "summary", "properties", "failedBySeverity", "required"), SEVERITIES),
    (REPORT, ("properties", "rules", "items", "properties", "status", "enum"), [s.value for s in RuleStatus]),
    (REPORT, ("properties", "findings", "items", "properties", "status", "enum"), [s.value for s in FindingStatus]),
    (REPORT, ("properties", "findings", "items", "properties", "baseline", "enum"), [s.value for s in BaselineState]),
    (REPORT, ("properties", "exceptions", "items", "properties", "status", "enum"), [s.value for s in EntryStatus]),
    (REPORT, ("properties", "coverage", "items", "properties", "state", "enum"), [s.value for s in CoverageState]),
    (REPORT, ("properties", "summary", "properties", "exitCode", "enum"), [EXIT_OK, EXIT_FINDINGS, EXIT_INCOMPLETE]),
    (REPORT, ("$defs", "cluster", "properties", "exitCode", "enum"), [EXIT_OK, EXIT_FINDINGS, EXIT_INCOMPLETE]),
    (CASE, ("$defs", "expect", "properties", "status", "enum"), [s.value for s in RuleStatus]),
    (CASE, ("$defs", "finding", "properties", "status", "enum"), [s.value for s in FindingStatus]),
    (CASE, ("$defs", "finding", "properties", "severity", "enum"), SEVERITIES),
    (CASE, ("$defs", "case", "properties", "coverage", "additionalProperties", "enum"),
     [s.value for s in CoverageState]),
], ids=lambda value: "/".join(value) if isinstance(value, tuple) else None)
def test_schema_enums_are_the_codes_enums(schema: dict[str, Any], path: tuple[str, ...], values: list[Any]) -> None:
    assert _at(schema, *path) == values


def test_the_summary_schema_lists_what_the_json_report_writes(tmp_path: Path) -> None:
    from auditor.report.json_report import summary_dict
    from tests.conftest import audit_text

    summary = summary_dict(audit_text(tmp_path, "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n").summary())
    # Every member the schema defines, in its order; the required ones are those every version wrote
    # (members added later stay optional, so earlier reports still read as baselines).
    # rulesNotApplicable is written only when a configuration file declares some (docs/config.md).
    members = list(_at(REPORT, "properties", "summary", "properties"))
    assert list(summary) == [member for member in members if member != "rulesNotApplicable"]
    assert members[-1] == "rulesNotApplicable"
    assert set(_at(REPORT, "properties", "summary", "required")) <= set(summary)
    assert list(summary["failedBySeverity"]) == SEVERITIES


def test_the_cli_offers_the_severities_of_the_enum() -> None:
    from auditor.cli.common import SEVERITIES as CLI_SEVERITIES

    assert list(CLI_SEVERITIES) == SEVERITIES
    assert "[error|warning|info]" in run_cli("diff", "--help").stdout.replace("\n", " ")


# --- once per run, and only what is needed --------------------------------------------------


def test_the_rule_set_is_built_once_per_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.test_live_fixtures import run

    calls = {"load_rules": 0, "plugins": 0}
    real_load, real_plugins = registry.load_rules, registry._plugin_rule_classes

    def counting_load(*args: Any, **kwargs: Any) -> registry.RuleSet:
        calls["load_rules"] += 1
        return real_load(*args, **kwargs)

    def counting_plugins() -> Any:
        calls["plugins"] += 1
        return real_plugins()

    monkeypatch.setattr(registry, "load_rules", counting_load)
    monkeypatch.setattr(registry, "_plugin_rule_classes", counting_plugins)
    result = run(DRIFTED, "--as-of", "2026-11-29", "--format", "json", "--json", str(tmp_path / "a.json"))
    assert result.code == 1, result.stderr
    assert calls == {"load_rules": 1, "plugins": 1}


_IMPORTS = """
import sys
from auditor.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("jsonschema" in sys.modules, file=sys.stderr)
"""


def _imports_jsonschema(tmp_path: Path, *args: str) -> bool:
    completed = subprocess.run([sys.executable, "-c", _IMPORTS, *args], capture_output=True, text=True, cwd=tmp_path,
                               env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=120)
    return completed.stderr.strip().splitlines()[-1] == "True"


def test_jsonschema_is_imported_only_when_a_file_of_the_users_is_validated(tmp_path: Path) -> None:
    # No ./exceptions.yaml or ./audit-posture.yaml here: the bundled list and the defaults.
    assert not _imports_jsonschema(tmp_path, DRIFTED, "--format", "json")
    posture = tmp_path / "p.yaml"
    posture.write_text("severity: {kube-proxy-leftover: info}\n")
    assert _imports_jsonschema(tmp_path, DRIFTED, "--posture", str(posture))


def test_the_bundled_exception_list_is_valid() -> None:
    """It is not validated at run time (config_files.load_validated): here instead."""
    validator = jsonschema.Draft202012Validator(load_schema("exceptions.schema.json"),
                                                format_checker=jsonschema.FormatChecker())
    data = yaml.safe_load(Path(bundled_path()).read_text(encoding="utf-8"))
    assert list(validator.iter_errors(data)) == []
    ids = registry.load_rules(plugins=False).ids
    assert {rule for entry in data["exceptions"] for rule in entry["rules"]} <= ids


# --- layers -------------------------------------------------------------------------------


def test_every_layer_is_a_sub_package_and_every_rule_in_one() -> None:
    packages = {info.name for info in pkgutil.iter_modules(auditor_rules.__path__) if info.ispkg}
    assert set(auditor_rules.LAYERS) == packages
    for rule_class in registry.builtin_rule_classes():
        assert registry.rule_layer(rule_class) in auditor_rules.LAYERS, rule_class.__module__
    index = json.loads((ROOT / "rules" / "index.json").read_text(encoding="utf-8"))
    assert all(entry["layer"] in auditor_rules.LAYERS for entry in index)


def test_audit_rules_by_layer_follows_the_chain() -> None:
    listed = run_cli("rules", "--by-layer", "--format", "json")
    assert listed.code == 0, listed.stderr
    groups = json.loads(listed.stdout)
    assert [group["layer"] for group in groups] == list(auditor_rules.LAYERS)
    everything = json.loads(run_cli("rules", "--format", "json").stdout)
    assert sorted(r["id"] for group in groups for r in group["rules"]) == sorted(r["id"] for r in everything)
    for group in groups:
        assert group["about"] and all(rule["layer"] == group["layer"] for rule in group["rules"])
    text = run_cli("rules", "--by-layer").stdout
    assert text.startswith("datapath: The eBPF datapath")
    assert text.index("\nlbipam: ") < text.index("\nl2: ") < text.index("\nleftovers: ")
