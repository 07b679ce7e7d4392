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
import os
import re
import shutil
import subprocess
import sys
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
    assert hook["entry"] == "audit --allow-no-objects --quiet" and hook["language"] == "python"
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


def test_entry_prints_the_failure_and_the_verdict_only(hook, tmp_path) -> None:
    """One finding in a commit: the hook shows it, its fix and the verdict — not a line per rule that did not run."""
    (tmp_path / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
                                       "spec: {type: NodePort, ports: [{port: 80}]}\n")
    entry = hook["entry"].split()
    result = run_cli(*entry[1:], "svc.yaml", cwd=tmp_path, env={"COLUMNS": "100"})
    assert result.code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("FAILED nodeport-service-not-excepted (error)")
    assert any("Service/shop/web" in line for line in lines) and any(line.startswith("  fix: ") for line in lines)
    assert "NOT RUN" not in result.stdout and "PASSED" not in result.stdout
    assert lines[-1] == "Verdict: FAIL (1 finding at or above error; exit 1)"
    assert len(lines) <= 12, result.stdout


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
# Completion is exercised through click's protocol, as the shells' scripts run it: `audit` is
# started with _AUDIT_COMPLETE=<shell>_complete and the words typed so far in COMP_WORDS and
# COMP_CWORD (for fish, COMP_CWORD holds the word being completed), and answers with typed items.


def _complete(shell: str, words: str, cword: int | str, cwd: Path | None = None,
              env: dict | None = None) -> list[tuple[str, str, str]]:
    """(type, value, help) of every item `audit` answers for `shell`."""
    result = run_cli(env={"_AUDIT_COMPLETE": f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword),
                          **(env or {})}, cwd=cwd)
    assert result.code == 0 and result.stderr == "", result.stderr
    if shell == "zsh":  # type, value, help ("_": none), one per line
        lines = result.stdout.splitlines()
        return [(lines[i], lines[i + 1], "" if lines[i + 2] == "_" else lines[i + 2]) for i in range(0, len(lines), 3)]
    items = []
    for line in result.stdout.splitlines():
        kind, _, rest = line.partition(",")
        value, _, help_text = rest.partition("\t")  # fish: value TAB help
        items.append((kind, value, help_text))
    return items


def _values(items: list[tuple[str, str, str]]) -> list[str]:
    return [value for kind, value, _ in items if kind == "plain"]


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


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_first_word_offers_commands_and_paths(shell) -> None:
    items = _complete(shell, "audit ", 1)
    assert items[0][:2] == ("file", "")  # the shell completes paths: `audit manifests/` stays one TAB away
    assert {"scan", "live", "rules", "explain", "diff", "version"} <= set(_values(items))
    assert "diff" in _values(_complete(shell, "audit di", 1))
    options = _complete(shell, "audit manifests/ --base", 2)
    assert _values(options) == ["--baseline"] and all(kind != "file" for kind, _, _ in options)  # an option: no paths


def test_first_word_offers_commands_and_paths_fish() -> None:
    items = _complete("fish", "audit ", "")
    assert ("file", "", "") in items and "version" in _values(items)


@pytest.mark.parametrize("shell, words, cword", [
    ("bash", "audit tests/fixtures/ci/main ", 2),
    ("zsh", "audit scan tests/", 2),
    ("fish", "audit tests/fixtures/ci/main tes", "tes"),
])
def test_path_arguments_complete_as_files(shell, words, cword) -> None:
    assert [kind for kind, _, _ in _complete(shell, words, cword)] == ["file"]


@pytest.mark.parametrize("shell, words, cword", [
    ("bash", "audit manifests/ --rule etp", 3),
    ("zsh", "audit manifests/ --skip-rule etp", 3),
    ("fish", "audit manifests/ --rule etp", "etp"),
    ("bash", "audit explain etp", 2),
    ("fish", "audit live --rule etp", "etp"),
])
def test_rule_ids_complete_with_their_titles(shell, words, cword) -> None:
    items = _complete(shell, words, cword)
    assert _values(items) == ["etp-local-under-l2"]
    if shell != "bash":  # bash shows no descriptions
        assert items[0][2] == "LoadBalancer Service with externalTrafficPolicy Local under L2 announcements"


@pytest.mark.parametrize("shell, words, cword", [
    ("bash", "audit manifests/ --format ", 3),
    ("zsh", "audit manifests/ -o ", 3),
    ("fish", "audit live -o ", ""),
])
def test_format_names_complete(shell, words, cword) -> None:
    assert set(_values(_complete(shell, words, cword))) == set(FORMATS)


KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: lab
clusters:
  - {name: lab, cluster: {server: "https://lab.example:6443"}}
users:
  - {name: reader, user: {token: not-a-real-token}}
contexts:
  - {name: lab, context: {cluster: lab, user: reader}}
  - {name: prod-west, context: {cluster: lab, user: reader}}
"""


@pytest.mark.parametrize("shell, cword", [("bash", 3), ("zsh", 3), ("fish", "")])
def test_contexts_complete_from_the_kubeconfig(shell, cword, tmp_path) -> None:
    config = tmp_path / "config"
    config.write_text(KUBECONFIG)
    items = _complete(shell, "audit live --context ", cword, env={"KUBECONFIG": str(config)})
    assert _values(items) == ["lab", "prod-west"]
    explicit = _complete(shell, f"audit snapshot --kubeconfig {config} --context p", 5 if shell != "fish" else "p",
                         env={"KUBECONFIG": str(tmp_path / "missing")})
    assert _values(explicit) == ["prod-west"]


def test_kubeconfig_contexts_are_read_with_the_bounded_loader_and_bad_files_give_none(tmp_path) -> None:
    from auditor.cli.completion import kubeconfig_contexts
    from tests.test_hostile_input import billion_laughs

    good, other = tmp_path / "good", tmp_path / "other"
    good.write_text(KUBECONFIG)
    other.write_text("contexts:\n  - {name: staging}\n  - {name: lab}\n  - {name: [not, a, name]}\n")
    bomb, broken, binary = tmp_path / "bomb", tmp_path / "broken", tmp_path / "binary"
    bomb.write_text(billion_laughs(9))
    broken.write_text("contexts: [\n")
    binary.write_bytes(b"\x00\x01")
    listed = os.pathsep.join(str(p) for p in (bomb, good, broken, tmp_path / "missing", binary, other))
    os.environ["KUBECONFIG"], saved = listed, os.environ.get("KUBECONFIG")
    try:
        assert kubeconfig_contexts() == ["lab", "prod-west", "staging"]
    finally:
        if saved is None:
            del os.environ["KUBECONFIG"]
        else:
            os.environ["KUBECONFIG"] = saved


def test_completing_contexts_never_imports_the_kubernetes_client(tmp_path) -> None:
    config = tmp_path / "config"
    config.write_text(KUBECONFIG)
    program = ("import sys\nfrom auditor.cli.completion import kubeconfig_contexts\n"
               f"assert kubeconfig_contexts({str(config)!r}) == ['lab', 'prod-west']\n"
               "print(sorted(m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_bash_script_offers_paths_beside_commands(tmp_path) -> None:
    """The shipped bash function, run by bash: `audit <TAB>` in a folder gives its files and the commands."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    script = run_cli(env={"_AUDIT_COMPLETE": "bash_source"}).stdout
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir(), work.mkdir()
    (bin_dir / "audit").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m auditor "$@"\n')  # the script runs `audit`
    (bin_dir / "audit").chmod(0o755)
    (work / "manifests").mkdir()
    (work / "dump.json").write_text("{}")
    program = (f"{script}\nCOMP_WORDS=(audit '')\nCOMP_CWORD=1\n"
               "_audit_completion audit 2>/dev/null\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run([bash, "-c", program], capture_output=True, text=True, cwd=work, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    offered = set(done.stdout.split())
    assert {"dump.json", "manifests", "scan", "live", "version"} <= offered, done.stdout + done.stderr


def test_version_names_the_tool_and_the_rule_set() -> None:
    from auditor import __version__
    from auditor.cli.version_cmd import ruleset_version

    digest, count = ruleset_version()
    result = run_cli("--version")
    assert result.code == 0 and result.stdout == f"audit {__version__}\nrule set {digest} ({count} built-in rules)\n"
    assert run_cli("version").stdout.startswith(result.stdout)
    details = json.loads(run_cli("version", "-o", "json").stdout)
    assert details["tool"]["version"] == __version__
    assert details["ruleSet"] == {"version": digest, "builtinRules": count}


def test_rule_set_version_is_the_digest_of_the_index_and_the_case_files() -> None:
    """Recomputed from the source tree: rules/index.json and rules/<layer>/cases/*.yaml, by relative path."""
    import hashlib

    from auditor.cli.version_cmd import ruleset_version

    rules = ROOT / "rules"
    files = sorted([rules / "index.json", *rules.glob("*/cases/*.yaml")], key=lambda p: p.relative_to(rules).as_posix())
    digest = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        digest.update(path.relative_to(rules).as_posix().encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    assert ruleset_version() == (digest.hexdigest()[:12], len(json.loads((rules / "index.json").read_text())))


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
