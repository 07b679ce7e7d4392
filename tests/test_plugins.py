"""Rule plugins through the `cilium_auditor.rules` entry-point group (docs/plugins.md).

The worked example in tests/fixtures/plugin-example/ is installed with pip
(`pip install --no-deps --target DIR`, from a copy so the build leaves nothing
in the repository) and the auditor runs in a subprocess with DIR on
PYTHONPATH. Why not into the project venv: several people and test workers
share it, and a plugin installed there would change every other test's rule
list. Why not a `python -m venv --system-site-packages` venv: made from the
project venv's interpreter it sees the *base* interpreter's site-packages,
not the project venv's, so the auditor itself would be missing. A `--target`
directory on PYTHONPATH is found by importlib.metadata exactly like a venv's
site-packages, which is all plugin discovery relies on.

pip builds the example with its declared backend (setuptools), fetched from
the configured index into an isolated build environment. Where that is not
possible (no index reachable), the install is reproduced from the example's
pyproject.toml by writing the package and its `.dist-info` (METADATA,
entry_points.txt) into DIR — what pip would have written for discovery — and
the packaging test alone is skipped with the reason.

Broken plugins (an import error, incomplete metadata, a crashing check, an id
already taken) are written the same way: each must become a rule in `error`
with the reason, exit 3, and never a traceback.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.testing import load_case_file
from tests.ci_support import CI, report_validator
from tests.conftest import FIXTURES, run_cli

EXAMPLE = FIXTURES / "plugin-example"
RULE_ID = "acme-lb-service-owner"


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))


def _write_dist_info(target: Path, name: str, version: str, entry_points: dict[str, str]) -> None:
    dist_info = target / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = ["[cilium_auditor.rules]"] + [f"{key} = {value}" for key, value in entry_points.items()]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, str]:
    """A directory holding the installed example plugin, and how it got there (`pip` or `dist-info`)."""
    work = tmp_path_factory.mktemp("plugin")
    source, target = work / "src", work / "site"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
         "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    if completed.returncode == 0:
        return target, "pip"
    shutil.rmtree(target, ignore_errors=True)
    project = _pyproject()["project"]
    shutil.copytree(source / "acme_audit_rules", target / "acme_audit_rules")
    _write_dist_info(target, project["name"], project["version"], project["entry-points"]["cilium_auditor.rules"])
    why = completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else completed.returncode
    return target, f"dist-info (pip failed: {why})"


def _env(*paths: Path) -> dict:
    existing = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([str(p) for p in paths] + ([existing] if existing else []))}


def test_example_builds_and_installs_with_pip(installed) -> None:
    target, how = installed
    if how != "pip":
        pytest.skip(f"the example could not be built here: {how}")
    (dist_info,) = target.glob("acme_cilium_audit_rules-*.dist-info")
    entry_points = (dist_info / "entry_points.txt").read_text()
    assert re.search(rf"^\[cilium_auditor\.rules\]\n{RULE_ID} = acme_audit_rules\.lb_service_owner:LbServiceOwner$",
                     entry_points, re.M)
    assert not list(EXAMPLE.glob("*.egg-info")) and not (EXAMPLE / "build").exists()


def test_audit_rules_lists_the_plugin(installed) -> None:
    target, _ = installed
    listed = run_cli("rules", "--format", "json", env=_env(target))
    assert listed.code == 0, listed.stderr
    (rule,) = [r for r in json.loads(listed.stdout) if r["id"] == RULE_ID]
    assert rule["severity"] == "warning" and rule["title"] == "LoadBalancer Service without an owner annotation"
    text = run_cli("rules", env=_env(target))
    assert any(line.split()[:2] == [RULE_ID, "warning"] for line in text.stdout.splitlines())
    explained = run_cli("explain", RULE_ID, env=_env(target))
    assert explained.code == 0 and "acme.example/owner" in explained.stdout
    # The examples come from the case file the package ships.
    cases = load_case_file(target / "acme_audit_rules" / "cases" / f"{RULE_ID}.yaml")
    for title, example in (("Fails", cases.example("fail")), ("Passes", cases.example("pass"))):
        assert example is not None
        shown = "\n".join(f"  {line}" for line in example.input.rstrip().splitlines())
        assert f"\n{title}\n{shown}" in explained.stdout


def test_without_the_plugin_it_is_unknown() -> None:
    assert RULE_ID not in run_cli("rules").stdout


def test_an_audit_runs_the_plugin_rule(installed, tmp_path) -> None:
    target, _ = installed
    out = tmp_path / "audit.json"
    result = run_cli("mr", "--exceptions", str(CI / "exceptions.yaml"), "--json", str(out), "--fail-on", "warning",
                     cwd=CI, env=_env(target))
    assert result.code == 1, result.stderr
    report = json.loads(out.read_text())
    assert not list(report_validator().iter_errors(report))
    (rule,) = [r for r in report["rules"] if r["id"] == RULE_ID]
    assert rule["status"] == "failed" and rule["checked"] == 3
    flagged = {(f["object"]["namespace"], f["object"]["name"], f["status"])
               for f in report["findings"] if f["rule"] == RULE_ID}
    # The exception list applies to plugin rules like to any rule: none of its entries names this one.
    assert flagged == {("gateway", "cilium-gateway-edge", "failed"),
                       ("kubernetes-dashboard", "kubernetes-dashboard", "failed"),
                       ("shop", "payment-callback", "failed")}
    assert all(f["remediation"].startswith("Add the annotation") for f in report["findings"] if f["rule"] == RULE_ID)


def test_the_examples_cases_run_through_the_public_runner() -> None:
    """The example's own tests (tests/test_cases.py there, collected by this suite) use `auditor.testing`."""
    own_tests = (EXAMPLE / "tests" / "test_cases.py").read_text(encoding="utf-8")
    assert "from auditor.testing import" in own_tests and "assert_case(case, rule=LbServiceOwner)" in own_tests
    cases = load_case_file(EXAMPLE / "acme_audit_rules" / "cases" / f"{RULE_ID}.yaml")
    assert {case.expect.status for case in cases.cases} >= {"passed", "failed", "not-run"}
    assert cases.example("fail") is not None and cases.example("pass") is not None


# --- broken plugins -----------------------------------------------------------------

BROKEN = {
    "acme-import-error": "acme_broken.missing:Rule",
    "acme-bad-metadata": "acme_broken.rules:BadMetadata",
    "acme-crashes": "acme_broken.rules:Crashes",
    "acme-not-a-rule": "acme_broken.rules:helper",
    "acme-clash": "acme_broken.rules:Clash",
    "acme-misnamed": "acme_broken.rules:Misnamed",
}
BROKEN_MODULE = '''
from auditor import kinds
from auditor.model import Severity
from auditor.rule import Rule


class BadMetadata(Rule):
    id = "acme-bad-metadata"
    severity = "high"
    title = "Has a final period."
    rationale = ""
    remediation = "no period"
    requires = ()


class Crashes(Rule):
    id = "acme-crashes"
    severity = Severity.ERROR
    title = "Crashes on every Service"
    rationale = "An example of a rule bug."
    remediation = "Fix the plugin."
    requires = (kinds.SERVICE,)

    def check(self, snapshot, ctx):
        for service in snapshot.of_kind(kinds.SERVICE):
            yield service.spec["no-such-field"]


class Clash(Crashes):
    id = "lb-service-not-excepted"

    def check(self, snapshot, ctx):
        return iter(())


class Misnamed(Crashes):
    id = "acme-named-otherwise"

    def check(self, snapshot, ctx):
        return iter(())


def helper():
    return None
'''


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("broken-plugins")
    (target / "acme_broken").mkdir()
    (target / "acme_broken" / "__init__.py").write_text("")
    (target / "acme_broken" / "missing.py").write_text("import acme_dependency_that_is_not_installed\n")
    (target / "acme_broken" / "rules.py").write_text(BROKEN_MODULE)
    _write_dist_info(target, "acme-broken", "0.1", BROKEN)
    return target


def test_broken_plugins_are_error_results_not_crashes(installed, broken, tmp_path) -> None:
    target, _ = installed
    out = tmp_path / "audit.json"
    result = run_cli("mr", "--exceptions", str(CI / "exceptions.yaml"), "--json", str(out), "--sarif",
                     str(tmp_path / "audit.sarif"), cwd=CI, env=_env(target, broken))
    assert result.code == 3, result.stderr
    assert "Traceback" not in result.stderr + result.stdout and result.stderr == ""
    report = json.loads(out.read_text())
    assert not list(report_validator().iter_errors(report))
    errors = {r["id"]: r["reason"] for r in report["rules"] if r["status"] == "error"}
    assert "ModuleNotFoundError" in errors["acme-import-error"]
    assert "severity is not an auditor.model.Severity" in errors["acme-bad-metadata"]
    assert "title must be one line without a final period" in errors["acme-bad-metadata"]
    assert "rule crashed: KeyError" in errors["acme-crashes"]
    assert "not a subclass of auditor.rule.Rule" in errors["acme-not-a-rule"]
    assert "rule id 'lb-service-not-excepted' is already taken" in errors["acme-clash"]
    assert ("entry point 'acme-misnamed' is not named after its rule id 'acme-named-otherwise'"
            in errors["acme-misnamed"])
    assert "acme-named-otherwise" not in {r["id"] for r in report["rules"]}
    assert len({r["id"] for r in report["rules"]}) == len(report["rules"]), "one entry per rule id"
    # The other rules still reached their verdicts, the plugin that works included.
    statuses = {r["id"]: r["status"] for r in report["rules"] if r["status"] != "error"}
    assert statuses[RULE_ID] == "failed" and statuses["lb-service-not-excepted"] == "failed"
    assert report["summary"]["complete"] is False and report["summary"]["exitCode"] == 3
    sarif = json.loads((tmp_path / "audit.sarif").read_text())
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False
    run = sarif["runs"][0]
    for res in run["results"]:
        assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert "fullDescription" in run["tool"]["driver"]["rules"][res["ruleIndex"]]  # the rule that ran, not the clash


def test_audit_rules_shows_broken_plugins(broken) -> None:
    listed = run_cli("rules", "--format", "json", env=_env(broken))
    assert listed.code == 0, listed.stderr
    errors = {r["id"]: r["error"] for r in json.loads(listed.stdout) if "error" in r}
    assert {"acme-import-error", "acme-bad-metadata", "acme-not-a-rule", "acme-misnamed"} <= set(errors)
