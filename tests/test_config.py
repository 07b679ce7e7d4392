"""The project configuration file `.cilium-audit.yaml` (docs/config.md): discovery, precedence, validation,
every rule reference checked, not-applicable rules in every report, `audit config`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_cli

ROOT = Path(__file__).resolve().parent.parent
TWO_SITES = ROOT / "tests" / "fixtures" / "gitops" / "two-sites"
DRIFTED = ROOT / "tests" / "fixtures" / "clusters" / "drifted.json"
AS_OF = ("--as-of", "2026-12-01")


def _repo(tmp_path: Path, config: str, tree: Path = TWO_SITES) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(tree, repo)
    (repo / ".git").mkdir()  # the repository root: discovery stops here
    (repo / ".cilium-audit.yaml").write_text(config)
    return repo




def test_discovered_by_walking_up_and_stopping_at_the_repository_root(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "failOn: warning\n")
    result = run_cli("config", "apps/web", cwd=repo)
    assert result.code == 0, result.stderr
    assert "config: .cilium-audit.yaml  (from discovered)" in result.stdout
    assert "failOn: warning  (from .cilium-audit.yaml:1)" in result.stdout
    # Above the repository root a file is never picked up.
    (tmp_path / ".cilium-audit.yaml").write_text("failOn: info\n")
    (repo / ".cilium-audit.yaml").unlink()
    result = run_cli("config", "-o", "json", str(repo / "apps"), cwd=tmp_path)
    assert json.loads(result.stdout)["config"] == {"value": None, "from": "default"}


def test_precedence_flag_over_env_over_discovered_and_options_over_the_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "failOn: warning\nrules:\n  skip: [lb-pool-conflict]\n")
    other = tmp_path / "other.yaml"
    other.write_text("failOn: info\n")
    chosen = tmp_path / "chosen.yaml"
    chosen.write_text("requireComplete: true\n")

    def settings(*args: str, env: dict[str, str] | None = None) -> dict:
        result = run_cli("config", "-o", "json", *args, cwd=repo, env=env)
        assert result.code == 0, result.stderr
        return dict(json.loads(result.stdout))

    fail_on = settings()["failOn"]
    assert (fail_on["value"], fail_on["from"]) == ("warning", ".cilium-audit.yaml:1")
    via_env = settings(env={"AUDIT_CONFIG": str(other)})
    assert via_env["config"]["from"] == "env AUDIT_CONFIG" and via_env["failOn"]["value"] == "info"
    via_flag = settings("--config", str(chosen), env={"AUDIT_CONFIG": str(other)})
    assert via_flag["config"]["from"] == "flag --config" and via_flag["failOn"]["from"] == "default"
    assert via_flag["requireComplete"]["value"] is True
    flags = settings("--fail-on", "error", "--skip-rule", "gateway-not-programmed")
    assert (flags["failOn"]["value"], flags["failOn"]["from"]) == ("error", "flag --fail-on")
    assert flags["rules.skip"] == {"value": ["lb-pool-conflict", "gateway-not-programmed"],
                                   "from": ".cilium-audit.yaml:3 + flag --skip-rule"}
    assert flags["posture"] == {"value": None, "from": "built-in"}
    assert flags["exceptions"] == {"value": None, "from": "built-in"}


@pytest.mark.parametrize("config, where, message", [
    ("rules:\n  skip: [lb-pool-conflct]\n", ".cilium-audit.yaml:2",
     "rules.skip[0]: unknown rule 'lb-pool-conflct' (did you mean 'lb-pool-conflict'?)"),
    ("rules:\n  only: [wireguard-disabled, kpr-not-enabeld]\n", ".cilium-audit.yaml:2",
     "rules.only[1]: unknown rule 'kpr-not-enabeld' (did you mean 'kpr-not-enabled'?)"),
    ("severity:\n  lb-ip-outside-pool: warning\n", ".cilium-audit.yaml:2",
     "severity.lb-ip-outside-pool: unknown rule 'lb-ip-outside-pool' (did you mean 'lb-ip-outside-pools'?)"),
    ("requireComplete:\n  notApplicable:\n    gateway-not-programed: no status offline\n", ".cilium-audit.yaml:3",
     "requireComplete.notApplicable.gateway-not-programed: unknown rule"),
])
def test_every_rule_reference_is_checked_with_did_you_mean(tmp_path: Path, config: str, where: str,
                                                           message: str) -> None:
    repo = _repo(tmp_path, config)
    for args in (("config",), ("--format", "json")):
        line = one_line_error(run_cli(*args, cwd=repo))
        assert line.startswith(f"audit: error: {where}: config: ") and message in line, line


@pytest.mark.parametrize("config, expected", [
    ("failOn: fatal\n", ".cilium-audit.yaml:1: config: failOn: 'fatal' is not one of"),
    ("paths: .\n", ".cilium-audit.yaml:1: config: paths: '.' is not of type 'array'"),
    ("clusters:\n  prod/x: clusters/prod\n", ".cilium-audit.yaml:2: config: clusters"),
    ("posture:\n  exposure:\n    mode: ingress\n", ".cilium-audit.yaml:3: config: posture.exposure.mode: 'ingress'"),
    ("exceptions: [missing.yaml]\n", "missing.yaml: cannot read exception list"),
    ("unknown: 1\n", ".cilium-audit.yaml:1: config: (top level): Additional properties are not allowed"),
    ("requireComplete:\n  notApplicable:\n    lb-pool-conflict: '  '\n",
     ".cilium-audit.yaml:3: config: requireComplete.notApplicable.lb-pool-conflict: the reason is empty"),
    ("a: [\n", ".cilium-audit.yaml:2: config: invalid YAML"),
])
def test_bad_files_are_one_line_errors_with_file_line_and_field(tmp_path: Path, config: str, expected: str) -> None:
    line = one_line_error(run_cli("--format", "json", cwd=_repo(tmp_path, config)))
    assert expected in line, line


def test_relative_paths_resolve_against_the_files_folder(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "paths: [apps]\nexceptions: [policy/exceptions.yaml]\nposture: policy/posture.yaml\n")
    (repo / "policy").mkdir()
    (repo / "policy" / "posture.yaml").write_text("exposure:\n  mode: gateway\n")
    (repo / "policy" / "exceptions.yaml").write_text("exceptions: []\n")
    result = run_cli("config", "-o", "json", cwd=tmp_path, env={"AUDIT_CONFIG": str(repo / ".cilium-audit.yaml")})
    settings = json.loads(result.stdout)
    assert settings["paths"]["value"] == ["repo/apps"]
    assert settings["posture"]["value"] == "repo/policy/posture.yaml"
    assert settings["exceptions"]["value"] == ["repo/policy/exceptions.yaml"]
    assert settings["exceptions"]["items"] == ["repo/.cilium-audit.yaml:2"]


def test_exception_files_are_merged_each_entry_keeping_its_file_and_line(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "exceptions: [a.yaml, b.yaml]\n", tree=DRIFTED.parent)
    entry = ("  - name: {name}\n    rules: [lb-service-not-excepted]\n    match: {{kind: Service, name: '{match}'}}\n"
             "    reason: r\n")
    (repo / "a.yaml").write_text("exceptions:\n" + entry.format(name="smtp", match="mailpit-smtp"))
    (repo / "b.yaml").write_text("# second\nexceptions:\n" + entry.format(name="stale", match="nothing-*"))
    report = json.loads(run_cli("drifted.json", "-o", "json", *AS_OF, cwd=repo).stdout)
    located = {e["name"]: (e["file"], e["line"], e["status"]) for e in report["exceptions"]}
    assert located == {"smtp": ("a.yaml", 2, "used"), "stale": ("b.yaml", 3, "unused")}
    (repo / "b.yaml").write_text("exceptions:\n" + entry.format(name="smtp", match="x"))
    line = one_line_error(run_cli("drifted.json", cwd=repo))
    assert "b.yaml:2: exception list: duplicate name 'smtp' (also at a.yaml:2)" in line


def test_not_applicable_is_reported_as_such_and_does_not_make_the_audit_incomplete(tmp_path: Path) -> None:
    declared = {"lb-pool-conflict": "offline manifests carry no pool status",
                "gateway-not-programmed": "the tree has no Gateway",
                "wireguard-disabled": "declared by mistake, the tree shows the setting"}
    repo = _repo(tmp_path, "requireComplete:\n  notApplicable:\n" +
                 "".join(f"    {rule}: {reason}\n" for rule, reason in declared.items()))
    result = run_cli("-o", "json", "--junit", "r.xml", "--sarif", "r.sarif", "--markdown", "r.md", *AS_OF, cwd=repo)
    report = json.loads(result.stdout)
    rules = {r["id"]: r for r in report["rules"]}
    assert rules["lb-pool-conflict"]["status"] == "not-applicable"
    # The declaration once, with its line, then why the rule could not run in each cluster of the tree.
    reason = rules["lb-pool-conflict"]["reason"]
    assert reason.startswith("not applicable here: offline manifests carry no pool status (.cilium-audit.yaml:3); "
                             "it could not run: edge: 1 pool(s) in offline manifests")
    assert reason.count("not applicable here") == 1 and "; lab: 1 pool(s)" in reason
    # A declared rule that does run keeps its verdict (fail closed), and the report says the declaration is stale.
    assert rules["wireguard-disabled"]["status"] == "passed"
    assert ".cilium-audit.yaml:5: wireguard-disabled is declared not applicable, but it ran on this input (passed): " \
           "its verdict counts (remove the declaration?)" in report["notes"]
    assert rules["gateway-not-programmed"]["status"] == "not-applicable"
    assert report["summary"]["rulesNotApplicable"] == 2
    not_run = [r["id"] for r in report["rules"] if r["status"] == "not-run"]
    assert report["summary"]["complete"] is (not not_run)
    assert result.code == (3 if not_run else report["summary"]["exitCode"])
    junit = ET.parse(repo / "r.xml").getroot()
    (case,) = [c for c in junit.iter("testcase") if c.get("classname") == "lb-pool-conflict"]
    skipped = case.find("skipped")
    assert skipped is not None and "not applicable here: offline manifests" in skipped.get("message", "")
    sarif = json.loads((repo / "r.sarif").read_text())
    notes = [n for n in sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
             if n["message"]["text"].startswith("lb-pool-conflict: not applicable here")]
    assert len(notes) == 1 and notes[0]["level"] == "note"
    markdown = (repo / "r.md").read_text()
    assert "| `lb-pool-conflict` | not-applicable |" in markdown and "| Rules not applicable | 2 |" in markdown
    text = run_cli("-v", *AS_OF, cwd=repo).stdout
    assert "NOT APPLICABLE lb-pool-conflict: not applicable here: offline" in " ".join(text.split())
    assert "2 not applicable" in " ".join(text.split())


def test_paths_exclude_clusters_and_the_gate_from_the_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "paths: [.]\nexclude: [infra/lab/**]\nclusters:\n  edge: clusters/edge\n"
                 "severity:\n  lb-ip-outside-pools: warning\nfailOn: warning\n")
    report = json.loads(run_cli("-o", "json", *AS_OF, cwd=repo).stdout)
    assert [c["name"] for c in report["target"]["clusters"] if c["kind"] == "cluster"] == ["edge"]
    assert report["summary"]["failOn"] == "warning"
    assert {f["severity"] for f in report["findings"] if f["rule"] == "lb-ip-outside-pools"} == {"warning"}
    assert not any("infra/lab" in f["file"] for f in report["findings"])
    # Files named on the command line (as pre-commit passes them) are excluded too.
    result = run_cli("infra/lab/lb-ipam.yaml", "--allow-no-objects", cwd=repo)
    assert result.code == 0 and "every PATH is excluded by .cilium-audit.yaml:2" in result.stderr


def test_without_a_file_nothing_extra_is_imported(tmp_path: Path) -> None:
    """Start-up stays cheap: with no configuration file, jsonschema is never imported."""
    (tmp_path / ".git").mkdir()
    shutil.copy(DRIFTED, tmp_path / "drifted.json")
    probe = ("import sys\nfrom auditor.cli import main\ntry:\n    main(['drifted.json', '-o', 'json'])\n"
             "except SystemExit:\n    pass\nassert 'jsonschema' not in sys.modules, 'jsonschema imported'\n"
             "assert 'auditor.project_config.effective' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_schema_is_validated_and_documented() -> None:
    from auditor.config_files import load_schema

    schema = load_schema("config.schema.json")
    doc = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    for key in schema["properties"]:
        assert f"`{key}`" in doc, f"docs/config.md does not describe {key}"


def test_a_bare_audit_runs_the_configured_audit_and_options_still_win(tmp_path: Path) -> None:
    repo = _repo(tmp_path, "requireComplete: true\n")
    bare = run_cli(cwd=repo)
    assert bare.code == 3 and "Verdict: INCOMPLETE" in bare.stdout, bare.stderr  # requireComplete from the file
    relaxed = run_cli("--no-require-complete", "-o", "json", cwd=repo)
    report = json.loads(relaxed.stdout)
    assert relaxed.code == report["summary"]["exitCode"] == 1 and report["summary"]["complete"] is False
    # Without a configuration file, a bare `audit` is the usage error it was, and `audit --json x` asks for a PATH.
    (tmp_path / "empty" / ".git").mkdir(parents=True)
    bare = run_cli(cwd=tmp_path / "empty")
    assert bare.code == 2 and bare.stderr.startswith("Usage: audit")
    missing = run_cli("--json", "x.json", cwd=tmp_path / "empty")
    assert missing.code == 2 and "Missing argument 'PATH...'" in missing.stderr
