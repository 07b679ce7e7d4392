"""`audit init` (docs/config.md), and issue 14's "Done when": a scratch GitOps repository goes from `audit init`
to a green pre-commit hook and a green CI example run with no hand-written flag."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_cli
from tests.test_reports_ci_workflows import GIT, GITHUB, GITLAB, Repository, _git, run_github_job, run_gitlab_job

ROOT = Path(__file__).resolve().parent.parent
HOMELAB = ROOT / "tests" / "fixtures" / "config" / "homelab"
TODAY = dt.datetime.now(dt.timezone.utc).date()
pytestmark = pytest.mark.skipif(GIT is None, reason="git not installed: the scratch repository needs one")


def _scratch(tmp_path: Path, tree: Path = HOMELAB) -> Path:
    repo = tmp_path / "homelab"
    shutil.copytree(tree, repo)
    _git(repo, "init", "-q", "-b", "main")
    return repo


def _init(repo: Path, *args: str) -> str:
    result = run_cli("init", *args, cwd=repo)
    assert result.code == 0 and "Traceback" not in result.stderr, (result.code, result.stderr)
    return result.stdout


def test_init_writes_what_the_repository_shows(tmp_path: Path) -> None:
    repo = _scratch(tmp_path)
    _init(repo, "--as-of", "2026-12-01")
    config = yaml.safe_load((repo / ".cilium-audit.yaml").read_text())
    assert config["paths"] == ["."] and config["clusters"] == {"home": "clusters/home"}
    posture = config["posture"]
    assert posture["exposure"] == {"mode": "gateway", "gatewayHostNetwork": False, "lbIpamL2": True,
                                   "approvedLbIpamRanges": ["192.168.1.200-192.168.1.220"]}
    assert posture["expected"] == {"ciliumVersionLine": "1.19"}
    declared = config["requireComplete"]["notApplicable"]
    # Offline manifests carry no status: those rules cannot run, each declared with its not-run reason.
    assert "gateway-not-programmed" in declared and "lb-pool-conflict" in declared
    assert "none with status.conditions" in declared["lb-pool-conflict"]
    assert list(declared) == sorted(declared)
    (entry,) = yaml.safe_load((repo / ".cilium-audit-exceptions.yaml").read_text())["exceptions"]
    assert entry["match"] == {"kind": "Service", "namespace": "media", "name": "jellyfin"}
    assert entry["rules"] == ["lb-service-not-excepted"] and entry["reason"].startswith("TODO: ")
    assert entry["expires"] == "2026-12-31"  # 30 days after --as-of


def test_init_passes_over_a_pool_whose_blocks_are_no_list(tmp_path: Path) -> None:
    """`blocks: true` in a pool (a hand-edit gone wrong) ended `audit init` with a TypeError: now that pool
    gives no approved range, and the starter configuration is still written."""
    repo = _scratch(tmp_path)
    pools = repo / "infrastructure" / "cilium" / "lb-ipam.yaml"
    pools.write_text(pools.read_text(encoding="utf-8").replace(
        "  blocks:\n    - start: 192.168.1.200\n      stop: 192.168.1.220\n", "  blocks: true\n", 1), encoding="utf-8")
    _init(repo, "--as-of", "2026-12-01")
    exposure = yaml.safe_load((repo / ".cilium-audit.yaml").read_text())["posture"]["exposure"]
    assert exposure == {"mode": "gateway", "gatewayHostNetwork": False, "lbIpamL2": True}


def test_init_never_overwrites_without_force_and_dry_run_prints_the_same_bytes(tmp_path: Path) -> None:
    repo = _scratch(tmp_path)
    printed = _init(repo, "--dry-run", "--as-of", "2026-12-01")
    assert not (repo / ".cilium-audit.yaml").exists()
    assert printed == _init(repo, "--dry-run", "--as-of", "2026-12-01")  # deterministic
    _init(repo, "--as-of", "2026-12-01")
    written = [(repo / name).read_text() for name in (".cilium-audit.yaml", ".cilium-audit-exceptions.yaml")]
    assert printed == f"# --- ./.cilium-audit.yaml\n{written[0]}---\n# --- ./.cilium-audit-exceptions.yaml\n{written[1]}"
    (repo / ".cilium-audit.yaml").write_text("failOn: warning\n")
    again = run_cli("init", cwd=repo)
    assert again.code == 2 and again.stderr == (
        "audit: error: ./.cilium-audit.yaml: already exists (--force replaces it; --dry-run prints what would be "
        "written)\n")
    assert (repo / ".cilium-audit.yaml").read_text() == "failOn: warning\n"
    _init(repo, "--force", "--as-of", "2026-12-01")
    assert (repo / ".cilium-audit.yaml").read_text() == written[0]


def _audit_json(repo: Path, *args: str) -> tuple[int, dict]:
    result = run_cli("-o", "json", *args, cwd=repo)
    assert "Traceback" not in result.stderr
    return result.code, json.loads(result.stdout)


def test_after_init_the_audit_is_complete_and_green(tmp_path: Path) -> None:
    repo = _scratch(tmp_path)
    _init(repo)
    code, report = _audit_json(repo)
    assert code == 0 and report["summary"]["complete"] is True, report["summary"]
    assert report["summary"]["rulesNotRun"] == 0 and report["summary"]["rulesNotApplicable"] >= 1
    assert [f["exception"]["name"] for f in report["findings"] if f["status"] == "excepted"] == \
        ["service-media-jellyfin"]
    assert report["sources"]["posture"] == {"builtin": False, "file": ".cilium-audit.yaml"}
    # The way in that init excepted is drift again once its 30 days are over.
    expired = (TODAY + dt.timedelta(days=31)).isoformat()
    code, later = _audit_json(repo, "--as-of", expired)
    assert code == 1 and {f["object"]["name"] for f in later["findings"] if f["status"] == "failed"} == {"jellyfin"}


def _hook(hook_id: str) -> dict:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return next(hook for hook in hooks if hook["id"] == hook_id)


def _run_hook(hook: dict, repo: Path) -> subprocess.CompletedProcess[str]:
    """The hook as pre-commit runs it on `--all-files`: its entry, plus the matching files when it passes them."""
    files = _git(repo, "ls-files").splitlines()
    included = [f for f in files if re.search(hook["files"], f) and not re.search(hook.get("exclude", "^$"), f)]
    entry = shlex.split(hook["entry"])
    assert entry[0] == "audit"
    command = [sys.executable, "-m", "auditor", *entry[1:], *(included if hook["pass_filenames"] else [])]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_COLOR": "1"})


def test_done_when_init_then_a_green_pre_commit_hook(tmp_path: Path) -> None:
    repo = _scratch(tmp_path)
    _init(repo)
    _git(repo, "add", "-A")
    hook = _hook("cilium-exposure-audit-config")
    assert hook["pass_filenames"] is False and "--" not in hook["entry"].replace("--quiet", "")
    done = _run_hook(hook, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("Verdict: PASS") and "NOT RUN" not in done.stdout
    # A new way in fails the hook, and says which.
    (repo / "apps" / "web" / "service.yaml").write_text(
        (repo / "apps" / "web" / "service.yaml").read_text().replace("spec:\n", "spec:\n  type: NodePort\n"))
    done = _run_hook(hook, repo)
    assert done.returncode == 1 and "nodeport-service-not-excepted" in done.stdout, done.stdout


def _repository(tmp_path: Path) -> Repository:
    """main: the scratch repository after `audit init`, committed; adds-nodeport: a new way in on top of it."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    repo = _scratch(tmp_path)
    _init(repo)
    for name, value in (("user.name", "ci"), ("user.email", "ci@example.org")):
        _git(repo, "config", name, value)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "homelab, audit init")
    _git(repo, "checkout", "-q", "-b", "adds-nodeport")
    service = repo / "apps" / "web" / "service.yaml"
    service.write_text(service.read_text().replace("spec:\n", "spec:\n  type: NodePort\n"))
    _git(repo, "commit", "-q", "-am", "web on a node port")
    bare = tmp_path / "origin.git"
    _git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    return Repository(f"file://{bare}")


@pytest.mark.parametrize("branch, event, code", [("main", "push", 0), ("adds-nodeport", "pull_request", 1)])
def test_done_when_init_then_a_green_github_job(tmp_path: Path, branch: str, event: str, code: int) -> None:
    workflow = yaml.safe_load(GITHUB.read_text(encoding="utf-8"))
    (tmp_path / "job").mkdir()
    run = run_github_job(workflow, _repository(tmp_path / "repo"), branch, event, tmp_path / "job")
    assert run.exit_code == code, run.outputs
    report = json.loads((run.workspace / "reports" / "audit.json").read_text())
    assert report["summary"]["complete"] is True and report["summary"]["exitCode"] == code
    assert run.summary.startswith("## Cilium exposure audit\n")


@pytest.mark.parametrize("branch, merge_request, code", [("main", False, 0), ("adds-nodeport", True, 1)])
def test_done_when_init_then_a_green_gitlab_job(tmp_path: Path, branch: str, merge_request: bool, code: int) -> None:
    pipeline = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))
    (tmp_path / "job").mkdir()
    run = run_gitlab_job(pipeline, _repository(tmp_path / "repo"), branch, merge_request, tmp_path / "job")
    assert run.exit_code == code, run.outputs
    report = json.loads((run.workspace / "reports" / "audit.json").read_text())
    assert report["summary"]["complete"] is True and ("baseline" in report) is merge_request


def test_the_ci_examples_run_the_config_files_audit() -> None:
    for workflow in (GITHUB, GITLAB):
        commands = [line.strip() for line in workflow.read_text().splitlines() if re.match(r"\s*-?\s*\(?.*\baudit ", line)
                    and not line.strip().startswith("#")]
        audits = [re.search(r"\baudit( [^)|]*)?", command).group(0) for command in commands]  # type: ignore[union-attr]
        assert audits, workflow
        for audit in audits:
            words = audit.split()[1:]
            assert all(word.startswith(("--json", "--junit", "--sarif", "--markdown", "--codequality", "--quiet",
                                        "$BASELINE", '"$')) or word == "\\" for word in words), audit


def test_init_live_reads_the_cluster_with_the_options_of_audit_live(tmp_path: Path) -> None:
    from tests.test_live_fixtures import kubeconfig, serve

    (tmp_path / ".git").mkdir()
    with serve("drifted") as server:
        config_file = kubeconfig(server, tmp_path)
        printed = run_cli("init", "--live", "--kubeconfig", config_file, "--dry-run", "--as-of", "2026-12-01",
                          cwd=tmp_path)
        assert printed.code == 0, printed.stderr
        assert "from the cluster of context kubeapi-test as of 2026-12-01" in printed.stdout
        _init(tmp_path, "--live", "--kubeconfig", config_file, "--as-of", "2026-12-01")
        config = yaml.safe_load((tmp_path / ".cilium-audit.yaml").read_text())
        assert "paths" not in config and "clusters" not in config  # a cluster: nothing offline to name
        entries = yaml.safe_load((tmp_path / ".cilium-audit-exceptions.yaml").read_text())["exceptions"]
        assert entries and all(e["reason"].startswith("TODO: ") and e["expires"] == "2026-12-31" for e in entries)
        result = run_cli("live", "--kubeconfig", config_file, "-o", "json", "--as-of", "2026-12-01", cwd=tmp_path)
        report = json.loads(result.stdout)
        way_in_rules = {e["rule"] for e in report["exposures"]}
        failing_ways_in = [f for f in report["findings"] if f["status"] == "failed" and f["rule"] in way_in_rules]
        assert not failing_ways_in, failing_ways_in
        assert report["sources"]["exceptions"]["file"] == ".cilium-audit-exceptions.yaml"
    # The connection options are refused without --live, as `audit exposure` refuses them.
    refused = run_cli("init", "--kubeconfig", config_file, cwd=tmp_path)
    assert refused.code == 2 and "--kubeconfig: not without --live" in refused.stderr


# --- the platform preset: a configuration file that says what the built-in defaults say -------------------

FIXTURES = ROOT / "tests" / "fixtures"
PRESET = FIXTURES / "config" / "platform-preset.yaml"
CONFIG_SOURCE_FIELDS = ("sources", "exceptionsFile")


def _fixture_inputs() -> list[Path]:
    inputs = sorted(p for p in (FIXTURES / "clusters").iterdir() if p.suffix in (".json", ".yaml"))
    for folder in ("gitops", "trace"):
        inputs += sorted(p for p in (FIXTURES / folder).iterdir() if p.is_dir())
    inputs += [FIXTURES / "ci" / "main", FIXTURES / "ci" / "mr", FIXTURES / "broken-tree", HOMELAB,
               FIXTURES / "trace" / "live.yaml"]
    return inputs


@pytest.mark.parametrize("path", _fixture_inputs(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_the_platform_preset_reproduces_todays_verdicts_on_every_fixture(path: Path, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # no configuration file above: the built-in defaults
    args = (str(path), "-o", "json", "--as-of", "2026-12-01")
    builtin = run_cli(*args, cwd=tmp_path)
    preset = run_cli(*args, "--config", str(PRESET), cwd=tmp_path)
    assert (preset.code, preset.stderr) == (builtin.code, builtin.stderr)
    if builtin.code == 2:  # not an input the audit reads (a posture or exception file): the same error
        return
    reports = [json.loads(result.stdout) for result in (builtin, preset)]
    # Only where the configuration came from differs: the preset's file, and the bundled list named by path.
    assert reports[1]["sources"]["posture"]["file"].endswith("platform-preset.yaml")
    assert reports[1]["sources"]["exceptions"] == reports[0]["sources"]["exceptions"] == {"builtin": True}
    for report in reports:
        for key in CONFIG_SOURCE_FIELDS:
            report.pop(key)
    assert reports[1] == reports[0]


# --- real repositories (../shared/gitops, skipped when absent) ------------------------------------------

SHARED_GITOPS = ROOT.parent / "shared" / "gitops"
SHARED_REPOS = sorted(p.name for p in SHARED_GITOPS.iterdir() if p.is_dir()) if SHARED_GITOPS.is_dir() else []


@pytest.mark.skipif(not SHARED_REPOS, reason=f"{SHARED_GITOPS} is absent: no real repositories to init")
@pytest.mark.parametrize("name", SHARED_REPOS)
def test_init_on_real_repositories_excepts_every_way_in_and_says_why_not_complete(name: str, tmp_path: Path) -> None:
    repo = tmp_path / name
    shutil.copytree(SHARED_GITOPS / name, repo)  # init writes into the repository: never into ../shared
    (repo / ".git").mkdir()
    _init(repo, "--as-of", "2026-12-01")
    code, report = _audit_json(repo, "--as-of", "2026-12-01")
    summary = report["summary"]
    # The clusters the file names (if any) read the tree as the layout's own entry points do.
    (tmp_path / "plain.yaml").write_text("failOn: error\n")
    _, detected = _audit_json(repo, ".", "--config", str(tmp_path / "plain.yaml"), "--as-of", "2026-12-01")

    def scopes(result: dict) -> list[tuple[str, int, dict]]:
        return [(c["name"], c["objects"], c["namespaceCoverage"]) for c in result["target"].get("clusters", [])]

    assert scopes(report) == scopes(detected)
    way_in_rules = {entrance["rule"] for entrance in report["exposures"]}
    assert not [f for f in report["findings"] if f["status"] == "failed" and f["rule"] in way_in_rules]
    if not any(rule["status"] in ("passed", "failed") for rule in report["rules"]):
        # Nothing here is what the rules read (Helm charts rendered elsewhere): init declares nothing away.
        written = yaml.safe_load((repo / ".cilium-audit.yaml").read_text())
        assert written["requireComplete"] == {"enabled": False} and code == 0 and not summary["complete"]
        return
    assert summary["rulesNotRun"] == 0 and summary["rulesError"] == 0  # every rule that cannot run is declared
    # A partial verdict keeps its verdict and findings; what it did not see is declared, with the file's line.
    written = yaml.safe_load((repo / ".cilium-audit.yaml").read_text())["requireComplete"]["notApplicable"]
    for rule in report["rules"]:
        if rule.get("partial"):
            assert written[rule["id"]].startswith("judges only part of this input")
            assert all(u["declared"].startswith("declared not applicable here: ") for u in rule["didNotSee"])
    assert summary["complete"] and code in (0, 1)
