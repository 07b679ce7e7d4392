"""The CI examples work as pasted: each job's shell steps run against a fixture repository.

docs/ci-github-actions.md and docs/ci-gitlab.md show the workflow files kept in
tests/fixtures/ci/workflows/ (a test checks the documents show them byte for
byte). Here a GitOps repository is built with git — the platform tree of
tests/fixtures/ci/main on `main`, and branches for merge requests — with an
`origin` to fetch from, and each job runs as its CI service would run it:

- GitHub Actions: every `run:` step in order with `bash -e`, in the checkout,
  with the step's `env:` (`${{ github.* }}` expressions filled from the event),
  `$GITHUB_ENV` carried to the next steps, `$GITHUB_STEP_SUMMARY` and
  `$RUNNER_TEMP`; `if:` conditions evaluated (`always()`, `hashFiles()`,
  `github.event_name`), later steps skipped after a failure unless `always()`.
  `uses:` steps are not run: the files they publish must exist, and each
  action must be at its current major.
- GitLab CI: the `script:` lines in one `bash` with `set -eo pipefail` (as the
  runner does), then `after_script:` in a fresh shell whatever happened, with
  the predefined variables of a merge-request or branch pipeline; the files
  `artifacts:reports:` names must exist.

The install step is the one not run (it needs the network): its command is
checked instead — pip from this repository at a pinned commit, as there is no
release — and `audit` is the auditor under test, on PATH.

The jobs must exit 0 or 1 on such a tree, never 3 (not-run rules without
`--require-complete` do not fail a GitOps job), and publish JUnit, SARIF, the
Markdown summary and (GitLab) the Code Quality report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, ROOT

WORKFLOWS = FIXTURES / "ci" / "workflows"
GITHUB = WORKFLOWS / "github-exposure-audit.yml"
GITLAB = WORKFLOWS / "gitlab-ci.yml"
INSTALL = re.compile(r'pip install (--quiet )?"git\+https://github\.com/univ-lehavre/cilium-exposure-auditor@\$\{AUDITOR_COMMIT\}"')

# The current major of every action the example uses, checked with the actions' release notes and
# changelogs (December 2026): checkout v7.0.1 and setup-python v7.0.0 (github.com/actions/*/releases),
# upload-artifact v7 (v8 exists only for download-artifact), codeql-action v4 (v3 is deprecated in
# December 2026: github.blog/changelog/2025-10-28-upcoming-deprecation-of-codeql-action-v3),
# action-junit-report v6 (github.com/mikepenz/action-junit-report/releases).
CURRENT_MAJORS = {
    "actions/checkout": "v7",
    "actions/setup-python": "v7",
    "github/codeql-action/upload-sarif": "v4",
    "mikepenz/action-junit-report": "v6",
    "actions/upload-artifact": "v7",
}
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git not installed: the CI jobs need a repository")


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.org",
                               "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.org"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _tree(into: Path, tree: str) -> None:
    """The platform repository's files as of the fixture tree `tree` (main or mr)."""
    for name in ("apps", "platform"):
        shutil.rmtree(into / name, ignore_errors=True)
        shutil.copytree(FIXTURES / "ci" / tree / name, into / name)
    shutil.copy(FIXTURES / "ci" / "exceptions.yaml", into / "exceptions.yaml")
    shutil.copy(FIXTURES / "ci" / "cilium-audit.yaml", into / ".cilium-audit.yaml")  # what `audit` runs (docs/config.md)


@dataclass
class Repository:
    origin: str  # file:// URL of the bare repository the CI clones and fetches from
    branches: dict[str, str] = field(default_factory=dict)  # branch -> what it holds


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Repository:
    """main: the platform tree with its known drift; adds-drift: the mr tree; docs-only: main plus a README."""
    root = tmp_path_factory.mktemp("gitops")
    work, bare = root / "work", root / "origin.git"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    _tree(work, "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "platform")
    _git(work, "checkout", "-q", "-b", "adds-drift")
    _tree(work, "mr")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "shop payment callback")
    _git(work, "checkout", "-q", "-b", "docs-only", "main")
    (work / "README.md").write_text("# platform\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "readme")
    _git(root, "clone", "-q", "--bare", str(work), str(bare))
    return Repository(f"file://{bare}", {"main": "drift", "adds-drift": "new drift", "docs-only": "no new drift"})


def _checkout(repository: Repository, branch: str, into: Path, depth: int | None) -> Path:
    """What the CI checkout gives: a clone of `origin` at `branch` (shallow like actions/checkout, or full)."""
    shallow = ["--depth", str(depth)] if depth else []
    _git(into.parent, "clone", "-q", *shallow, "--branch", branch, repository.origin, str(into))
    return into


def _path_with_audit(tmp_path: Path) -> str:
    """PATH with `audit` as the auditor under test (what the skipped install step would provide)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "audit"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m auditor "$@"\n')
    script.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def _base_env(tmp_path: Path) -> dict[str, str]:
    keep = {key: value for key, value in os.environ.items() if key in ("HOME", "LANG", "LC_ALL")}
    scratch = tmp_path / "tmp"  # mktemp in the jobs: inside the test's folder, removed with it
    scratch.mkdir(exist_ok=True)
    return {**keep, "PATH": _path_with_audit(tmp_path), "NO_COLOR": "1", "TMPDIR": str(scratch)}


# --- GitHub Actions ------------------------------------------------------------------------------


def _github_condition(condition: str, context: dict[str, str], failed: bool, workspace: Path) -> bool:
    """The `if:` expressions the example uses; anything else fails the test (extend it with the workflow)."""
    if not condition:
        return not failed  # success()
    terms = [term.strip() for term in condition.split("&&")]
    always = "always()" in terms
    results = []
    for term in terms:
        if term == "always()":
            results.append(True)
        elif match := re.fullmatch(r"github\.event_name == '([a-z_]+)'", term):
            results.append(context["event_name"] == match.group(1))
        elif match := re.fullmatch(r"hashFiles\('([^']+)'\) != ''", term):
            results.append((workspace / match.group(1)).is_file())
        else:
            pytest.fail(f"the test does not know how GitHub evaluates {term!r}")
    return all(results) and (always or not failed)


def _github_env(values: dict[str, Any], context: dict[str, str]) -> dict[str, str]:
    def fill(value: Any) -> str:
        def expression(match: re.Match[str]) -> str:
            key = match.group(1).strip()
            assert key.startswith("github."), f"unknown expression {key!r}"
            return context[key.removeprefix("github.")]

        return re.sub(r"\$\{\{(.*?)\}\}", expression, str(value))

    return {key: fill(value) for key, value in values.items()}


@dataclass
class JobRun:
    exit_code: int  # the job's outcome: the first failing step's code, else 0
    workspace: Path
    outputs: dict[str, str]  # what each executed step printed, by name
    summary: str = ""


def run_github_job(workflow: dict, repository: Repository, branch: str, event: str, tmp_path: Path) -> JobRun:
    (job,) = workflow["jobs"].values()
    workspace = _checkout(repository, branch, tmp_path / "workspace", depth=1)
    runner_temp, github_env, summary = tmp_path / "runner-temp", tmp_path / "github-env", tmp_path / "summary.md"
    runner_temp.mkdir()
    github_env.touch()
    context = {"event_name": event, "base_ref": "main" if event == "pull_request" else "", "ref_name": branch}
    env = {**_base_env(tmp_path), **_github_env(workflow.get("env", {}), context),
           "RUNNER_TEMP": str(runner_temp), "GITHUB_ENV": str(github_env), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_WORKSPACE": str(workspace), "GITHUB_EVENT_NAME": event, "CI": "true"}
    failed, exit_code, outputs = False, 0, {}
    for index, step in enumerate(job["steps"]):
        name = step.get("name", step.get("uses", f"step {index}"))
        if not _github_condition(str(step.get("if", "")), context, failed, workspace):
            continue
        if "uses" in step:
            _check_action(step, workspace)
            continue
        if INSTALL.fullmatch(step["run"].strip()):
            continue  # the network install: `audit` is already on PATH
        carried = dict(line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line)
        script = tmp_path / f"step-{index}.sh"
        script.write_text(step["run"])
        done = subprocess.run(["bash", "-e", str(script)], cwd=workspace, capture_output=True, text=True, timeout=600,
                              env={**env, **carried, **_github_env(step.get("env", {}), context)})
        outputs[name] = done.stdout + done.stderr
        if done.returncode and not failed:
            failed, exit_code = True, done.returncode
    return JobRun(exit_code, workspace, outputs, summary.read_text() if summary.exists() else "")


def _check_action(step: dict, workspace: Path) -> None:
    action, _, major = step["uses"].rpartition("@")
    assert CURRENT_MAJORS.get(action) == major, f"{step['uses']}: not the current major ({CURRENT_MAJORS.get(action)})"
    inputs = step.get("with", {})
    for key in ("sarif_file", "report_paths", "path"):
        if key in inputs:
            assert (workspace / inputs[key]).exists(), f"{step['uses']} publishes {inputs[key]}, which is missing"


@pytest.fixture(scope="module")
def github() -> dict:
    return yaml.safe_load(GITHUB.read_text(encoding="utf-8"))


@pytest.mark.parametrize("branch, event, code", [
    ("main", "push", 1),                  # the default branch holds known drift: it fails, and says why
    ("adds-drift", "pull_request", 1),    # the merge request adds drift: new findings fail it
    ("docs-only", "pull_request", 0),     # nothing new: the baseline absorbs the known drift
])
def test_github_job_runs_as_pasted(github, repository, tmp_path, branch, event, code) -> None:
    run = run_github_job(github, repository, branch, event, tmp_path)
    assert run.exit_code == code, run.outputs
    report = json.loads((run.workspace / "reports" / "audit.json").read_text())
    assert report["summary"]["exitCode"] == code and report["summary"]["rulesNotRun"] > 0  # not-run: no exit 3
    assert ("baseline" in report) is (event == "pull_request")
    assert run.summary.startswith("## Cilium exposure audit\n")
    junit = ET.parse(run.workspace / "reports" / "audit.junit.xml").getroot()
    assert int(junit.get("failures")) == report["summary"]["failing"] and junit.get("errors") == "0"
    sarif = json.loads((run.workspace / "reports" / "audit.sarif").read_text())
    levels = [result["level"] for result in sarif["runs"][0]["results"]]
    assert levels.count("error") == report["summary"]["failing"]  # code scanning agrees with the gate
    if branch == "adds-drift":
        new = {(f["rule"], f["object"]["name"]) for f in report["findings"] if f.get("baseline") == "new"}
        assert ("etp-local-under-l2", "payment-callback") in new


def test_github_workflow_installs_by_commit_and_uses_current_majors(github) -> None:
    assert re.fullmatch(r"[0-9a-f]{40}", github["env"]["AUDITOR_COMMIT"])
    steps = github["jobs"]["audit"]["steps"]
    assert [s for s in steps if "run" in s and INSTALL.fullmatch(s["run"].strip())], "install from the repository"
    assert {step["uses"].rpartition("@")[0] for step in steps if "uses" in step} == set(CURRENT_MAJORS)
    text = GITHUB.read_text(encoding="utf-8")
    assert "--require-complete" not in text and "--skip-rule" not in text
    assert "${{" not in "".join(step.get("run", "") for step in steps), "expressions go through env:, not into scripts"


# --- GitLab CI ------------------------------------------------------------------------------------


def run_gitlab_job(pipeline: dict, repository: Repository, branch: str, merge_request: bool,
                   tmp_path: Path) -> JobRun:
    job = pipeline["exposure-audit"]
    workspace = _checkout(repository, branch, tmp_path / "workspace", depth=None)  # GIT_DEPTH "0": full clone
    predefined = {
        "CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": str(workspace), "CI_DEFAULT_BRANCH": "main",
        "CI_PIPELINE_SOURCE": "merge_request_event" if merge_request else "push",
        "CI_API_V4_URL": "https://gitlab.example.org/api/v4", "CI_PROJECT_ID": "42",
    }
    if merge_request:
        predefined.update({"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "CI_MERGE_REQUEST_IID": "7"})
    else:
        predefined["CI_COMMIT_BRANCH"] = branch
    env = {**_base_env(tmp_path), **predefined, **{k: str(v) for k, v in job.get("variables", {}).items()}}
    for line in job["before_script"]:
        assert line.startswith("apt-get ") or INSTALL.fullmatch(line.strip()), f"unexpected before_script: {line}"
    outputs = {}
    script = "set -eo pipefail\n" + "\n".join(job["script"]) + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=workspace, capture_output=True, text=True, timeout=600, env=env)
    outputs["script"] = done.stdout + done.stderr
    after = subprocess.run(["bash", "-c", "set -eo pipefail\n" + "\n".join(job["after_script"])], cwd=workspace,
                           capture_output=True, text=True, timeout=600, env=env)
    outputs["after_script"] = after.stdout + after.stderr
    assert after.returncode == 0, outputs
    return JobRun(done.returncode, workspace, outputs)


@pytest.fixture(scope="module")
def gitlab() -> dict:
    return yaml.safe_load(GITLAB.read_text(encoding="utf-8"))


@pytest.mark.parametrize("branch, merge_request, code", [
    ("main", False, 1),
    ("adds-drift", True, 1),
    ("docs-only", True, 0),
])
def test_gitlab_job_runs_as_pasted(gitlab, repository, tmp_path, branch, merge_request, code) -> None:
    run = run_gitlab_job(gitlab, repository, branch, merge_request, tmp_path)
    assert run.exit_code == code, run.outputs
    artifacts = gitlab["exposure-audit"]["artifacts"]
    assert artifacts["when"] == "always"
    for path in artifacts["reports"].values():
        assert (run.workspace / path).is_file(), f"{path} is not written"
    report = json.loads((run.workspace / "reports" / "audit.json").read_text())
    assert report["summary"]["exitCode"] == code and ("baseline" in report) is merge_request
    issues = json.loads((run.workspace / artifacts["reports"]["codequality"]).read_text())
    assert len(issues) == len(report["findings"])
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert (run.workspace / issue["location"]["path"]).is_file()  # relative to the repository, as GitLab needs
    assert (run.workspace / "reports" / "audit.md").read_text().startswith("## Cilium exposure audit\n")


def test_gitlab_job_installs_by_commit(gitlab) -> None:
    job = gitlab["exposure-audit"]
    assert re.fullmatch(r"[0-9a-f]{40}", job["variables"]["AUDITOR_COMMIT"])
    assert any(INSTALL.fullmatch(line.strip()) for line in job["before_script"])
    text = GITLAB.read_text(encoding="utf-8")
    assert "--require-complete" not in text and "--skip-rule" not in text


# --- the documents show the files the tests run ---------------------------------------------------


@pytest.mark.parametrize("doc, workflow", [("ci-github-actions.md", GITHUB), ("ci-gitlab.md", GITLAB)])
def test_the_documents_show_the_tested_workflows(doc: str, workflow: Path) -> None:
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    assert blocks[0] == workflow.read_text(encoding="utf-8"), f"docs/{doc}: the first YAML block is {workflow.name}"
