"""What a run imports before it can answer (issue 15, start-up): nothing it does not use.

Measured in benchmarks/run.py (a one-object audit against the bare interpreter); here only which
modules are loaded, never how long anything takes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from auditor import registry
from tests.conftest import ROOT

PROBE = """
import sys
from auditor.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="audit", standalone_mode=False)
except SystemExit:
    pass
print("LOADED:" + ",".join(sorted(sys.modules)), file=sys.stderr)
"""


def _loaded(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> set[str]:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=cwd,
                            timeout=120, env={**os.environ, "NO_COLOR": "1", **(env or {})})
    line = next(line for line in result.stderr.splitlines() if line.startswith("LOADED:"))
    return set(line.removeprefix("LOADED:").split(","))


def _under(modules: set[str], *packages: str) -> set[str]:
    return {m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)}


def test_version_imports_neither_rules_nor_parsers() -> None:
    loaded = _loaded("--version")
    assert not {m for m in loaded if m.startswith("auditor_rules.")}  # the package's data files only, no rule
    assert not _under(loaded, "auditor.engine", "auditor.exposure", "auditor.sources", "yaml",
                      "jsonschema", "kubernetes", "importlib.metadata")


def test_an_audit_imports_no_plugin_machinery_without_plugins(tmp_path: Path) -> None:
    path = tmp_path / "one.yaml"
    path.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n", encoding="utf-8")
    loaded = _loaded(str(path), cwd=tmp_path)
    assert "auditor_rules" in loaded and "auditor.engine" in loaded  # it did audit
    # version_cmd hashes the rule set for --version only; importlib.metadata reads every installed
    # distribution's metadata, needed only when one declares a rule plugin; jsonschema and the client too.
    assert not _under(loaded, "auditor.cli.version_cmd", "importlib.metadata", "email", "jsonschema", "kubernetes")
    # Data files are opened as files, temporary files only made for a report written to a file.
    assert not _under(loaded, "importlib.resources", "tempfile", "difflib")
    # A baseline's comparison, a GitOps tree's resolution and Cilium values files, only when there are some.
    assert not _under(loaded, "auditor.baseline", "auditor.sources.gitops.layout", "auditor.sources.gitops.audit_scopes")


def _site(tmp_path: Path, entry_points: str | None) -> Path:
    site = tmp_path / "site"
    dist = site / "example_dist-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: example-dist\nVersion: 1.0\n", encoding="utf-8")
    if entry_points is not None:
        (dist / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    (site / "other.egg-info").write_text("Metadata-Version: 1.0\n", encoding="utf-8")  # the file form: no entry points
    return site


@pytest.mark.parametrize(("entry_points", "declared"), [
    (None, False),
    ("[console_scripts]\nexample = example:main\n", False),
    (f"[{registry.ENTRY_POINT_GROUP}]\nmy-rule = example:MyRule\n", True),
])
def test_the_plugin_group_is_looked_for_where_importlib_metadata_looks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry_points: str | None, declared: bool) -> None:
    site = _site(tmp_path, entry_points)
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "absent")])
    assert registry._group_may_be_declared() is declared
    from importlib.metadata import entry_points as real_entry_points

    assert bool(list(real_entry_points(group=registry.ENTRY_POINT_GROUP))) is declared  # importlib.metadata agrees


def test_what_it_cannot_read_plainly_goes_to_importlib_metadata(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("example-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: example\nVersion: 1.0\n")
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert registry._group_may_be_declared() is True

    class OtherFinder:
        @staticmethod
        def find_distributions(context: object = None) -> list[object]:
            return []

    monkeypatch.setattr(sys, "path", [])
    assert registry._group_may_be_declared() is False
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, OtherFinder()])
    assert registry._group_may_be_declared() is True


FORK_PROBE = """
import os, sys
from auditor.cli import cli
at_fork = []
fork = os.fork
def recording_fork():
    if not at_fork:
        at_fork.append(",".join(sorted(sys.modules)))
    return fork()
os.fork = recording_fork
try:
    cli.main(args=sys.argv[1:], prog_name="audit", standalone_mode=False)
except SystemExit:
    pass
if os.getpid() == PARENT:
    print("AT_FORK:" + (at_fork[0] if at_fork else ""), file=sys.stderr)
    print("LOADED:" + ",".join(sorted(sys.modules)), file=sys.stderr)
"""


def test_a_gitops_tree_forks_its_readers_before_loading_the_resolution(tmp_path: Path) -> None:
    """The workers of a parallel read start once the walk is done: what only the resolution and the split
    use (the layout, kustomize, the GitOps model, the scopes, the Helm values) loads while they parse."""
    for index in range(140):  # above PARALLEL_MIN_FILES: the read is parallel
        (tmp_path / f"cm-{index:03}.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{index}\n  namespace: demo\n", encoding="utf-8")
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n" + "".join(f"  - cm-{index:03}.yaml\n" for index in range(140)), encoding="utf-8")
    probe = "PARENT = __import__('os').getpid()\n" + FORK_PROBE
    result = subprocess.run([sys.executable, "-c", probe, str(tmp_path), "--jobs", "2", "--format", "json"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120,
                            env={**os.environ, "NO_COLOR": "1"})
    lines = {line.partition(":")[0]: line.partition(":")[2] for line in result.stderr.splitlines()
             if line.startswith(("AT_FORK:", "LOADED:"))}
    at_fork, loaded = set(lines["AT_FORK"].split(",")), set(lines["LOADED"].split(","))
    assert "auditor.sources.parallel" in at_fork  # it did fork its readers
    resolution = {"auditor.sources.gitops.audit_scopes", "auditor.sources.gitops.layout",
                  "auditor.sources.gitops.kustomize", "auditor.sources.gitops.model", "auditor.sources.gitops.tree",
                  "auditor.repository", "auditor.cilium.helm_values"}
    assert not resolution & at_fork
    assert resolution <= loaded  # and used them once the files were read


def test_every_name_the_gitops_package_exports_resolves_on_use() -> None:
    """The package imports its names when first asked for (above): each one it lists is there, from the
    module that defines it, and a name it does not have is an AttributeError, as for any module."""
    import auditor.sources.gitops as gitops
    from auditor.sources.gitops import layout, model, tree

    for name in gitops.__all__:
        value = getattr(gitops, name)
        owner = next((m for m in (model, tree, layout) if name in vars(m)), gitops)
        assert value is vars(owner)[name], name
    with pytest.raises(AttributeError):
        gitops.no_such_name  # noqa: B018
