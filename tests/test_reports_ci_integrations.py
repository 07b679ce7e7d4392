"""Integrations: the pre-commit hook, shell completion, `--version`, and every --FORMAT FILE option.

The pre-commit hook is checked the way pre-commit uses it: its manifest entry
against the fields pre-commit requires, its `files`/`exclude` regexes against
realistic paths, and its `entry` run with a list of changed files as
pre-commit passes them (relative paths, from the repository root, several
batches when the list is long — hence require_serial). Shell completion
scripts are checked with the shells themselves (`bash -n`), and a completion
request is answered.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from auditor.report import FORMATS
from tests.ci_support import CI, CORE_RULES, rule_args
from tests.conftest import ROOT, run_cli
from tests.test_reports_markdown import parse as parse_markdown

HOOKS = ROOT / ".pre-commit-hooks.yaml"
# The fields pre-commit's manifest schema defines (pre_commit/clientlib.py, MANIFEST_HOOK_DICT).
HOOK_SCHEMA = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "name", "entry", "language"],
        "properties": {
            "id": {"type": "string"}, "name": {"type": "string"}, "entry": {"type": "string"},
            "language": {"enum": ["python", "system", "script", "docker", "docker_image"]},
            "alias": {"type": "string"}, "files": {"type": "string"}, "exclude": {"type": "string"},
            "types": {"type": "array", "items": {"type": "string"}},
            "types_or": {"type": "array", "items": {"type": "string"}},
            "exclude_types": {"type": "array", "items": {"type": "string"}},
            "additional_dependencies": {"type": "array"}, "args": {"type": "array", "items": {"type": "string"}},
            "always_run": {"type": "boolean"}, "fail_fast": {"type": "boolean"},
            "pass_filenames": {"type": "boolean"}, "description": {"type": "string"},
            "language_version": {"type": "string"}, "log_file": {"type": "string"},
            "minimum_pre_commit_version": {"type": "string"}, "require_serial": {"type": "boolean"},
            "stages": {"type": "array"}, "verbose": {"type": "boolean"},
        },
    },
}


@pytest.fixture(scope="module")
def hook() -> dict:
    hooks = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    jsonschema.validate(hooks, HOOK_SCHEMA)
    (entry,) = [h for h in hooks if h["id"] == "cilium-exposure-audit"]
    return entry


def _selected(hook: dict, path: str) -> bool:
    return bool(re.search(hook["files"], path)) and not re.search(hook.get("exclude", "^$"), path)


def test_hook_manifest(hook) -> None:
    assert hook["entry"] == "audit --allow-no-objects" and hook["language"] == "python"
    assert hook["pass_filenames"] is True
    assert hook["require_serial"] is True  # one audit over all changed files, not one per CPU


@pytest.mark.parametrize("path, selected", [
    ("apps/shop/shop.yaml", True),
    ("platform/cilium/lb-ipam.yml", True),
    ("dumps/cluster.json", True),
    ("README.md", False),
    ("charts/web/templates/service.yaml", False),  # Go templates, not YAML yet
    (".github/workflows/ci.yaml", False),
    (".pre-commit-config.yaml", False),
    ("exceptions.yaml", False),
])
def test_hook_selects_manifests(hook, path, selected) -> None:
    assert _selected(hook, path) is selected


def _changed_files() -> list[str]:
    """What pre-commit passes for a commit touching the mr tree: paths relative to the repository root."""
    return sorted(str(p.relative_to(CI)) for p in (CI / "mr").rglob("*") if p.is_file())


def test_entry_accepts_the_changed_files(hook, tmp_path) -> None:
    files = [f for f in _changed_files() if _selected(hook, f)]
    assert len(files) >= 5
    out = tmp_path / "audit.json"
    result = run_cli(*hook.get("args", []), *files, *rule_args(CORE_RULES), "--exceptions", "exceptions.yaml",
                     "--json", str(out), cwd=CI)
    assert result.code == 1, result.stderr  # the merge request adds drift
    report = json.loads(out.read_text())
    assert report["target"]["inputs"] == files
    assert {f["file"] for f in report["findings"]} <= set(files)


def test_entry_skips_non_kubernetes_yaml_among_the_changed_files(tmp_path) -> None:
    (tmp_path / "values.yaml").write_text("replicaCount: 2\nimage: {repository: nginx}\n")
    (tmp_path / "kustomization.yaml").write_text("resources: [svc.yaml]\n")
    (tmp_path / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
                                       "spec: {type: ClusterIP}\n")
    result = run_cli("values.yaml", "kustomization.yaml", "svc.yaml", "--rule", "lb-service-not-excepted",
                     "--format", "json", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["ignoredDocuments"] == 2


def test_entry_accepts_a_commit_without_manifests(tmp_path) -> None:
    """A commit touching only non-Kubernetes YAML: the hook's entry passes (nothing to audit),
    while a plain `audit` on the same file still says there is no object in it."""
    (tmp_path / "values.yaml").write_text("replicaCount: 2\n")
    entry = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())[0]["entry"].split()
    assert entry[0] == "audit"
    hooked = run_cli(*entry[1:], "values.yaml", cwd=tmp_path)
    assert hooked.code == 0, hooked.stderr
    assert "0 findings failed" in hooked.stdout
    plain = run_cli("values.yaml", cwd=tmp_path)
    assert plain.code == 2 and "no Kubernetes objects found" in plain.stderr


# --- shell completion, --version ---------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_is_produced(shell, tmp_path) -> None:
    result = run_cli(env={"_AUDIT_COMPLETE": f"{shell}_source"})
    assert result.code == 0 and result.stderr == ""
    assert "_AUDIT_COMPLETE" in result.stdout
    binary = shutil.which(shell)
    if binary is None:
        pytest.skip(f"{shell} not installed: script produced, syntax not checked")
    script = tmp_path / f"audit.{shell}"
    script.write_text(result.stdout)
    flag = ["--no-execute"] if shell == "fish" else ["-n"]
    checked = subprocess.run([binary, *flag, str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_completion_answers_commands_options_and_formats() -> None:
    def complete(words: str, cword: int) -> list[str]:
        result = run_cli(env={"_AUDIT_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)})
        assert result.code == 0, result.stderr
        return [line.split(",", 1)[1] for line in result.stdout.splitlines() if line.startswith("plain,")]

    assert "diff" in complete("audit di", 1)
    assert "--baseline" in complete("audit manifests/ --base", 2)
    assert set(complete("audit manifests/ --format ", 3)) == set(FORMATS)


def test_version() -> None:
    from auditor import __version__

    result = run_cli("--version")
    assert result.code == 0 and result.stdout.split() == ["audit", __version__]


# --- every format as a file, at once ----------------------------------------------------


def test_every_format_file_option_writes_a_parseable_report(tmp_path) -> None:
    """--FORMAT FILE exists for every non-text format; each file parses with its own consumer."""
    from prometheus_client.parser import text_string_to_metric_families

    args = [arg for name in FORMATS if name != "text" for arg in (f"--{name}", str(tmp_path / f"report.{name}"))]
    result = run_cli("mr", "--exceptions", "exceptions.yaml", *args, cwd=CI)
    assert result.code in (1, 3), result.stderr
    consumers = {
        "json": lambda text: json.loads(text)["reportVersion"] == "1",
        "sarif": lambda text: json.loads(text)["version"] == "2.1.0",
        "junit": lambda text: ET.fromstring(text).tag == "testsuites",
        "markdown": lambda text: parse_markdown(text).headings[0] == (2, "Cilium exposure audit"),
        "prometheus": lambda text: len(list(text_string_to_metric_families(text))) > 5,
    }
    for name in FORMATS:
        if name == "text":
            continue
        text = (tmp_path / f"report.{name}").read_text(encoding="utf-8")
        assert consumers.get(name, lambda _: True)(text), name


def test_nothing_is_written_when_the_input_is_broken(tmp_path) -> None:
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: [\n")
    result = run_cli("broken.yaml", "--sarif", "a.sarif", "--markdown", "a.md", "--prometheus", "a.prom", cwd=tmp_path)
    assert result.code == 2
    assert not any(Path(tmp_path, name).exists() for name in ("a.sarif", "a.md", "a.prom"))
