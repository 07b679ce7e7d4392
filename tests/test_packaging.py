"""The wheel ships what the repository promises: the engine, the rules as `auditor_rules`
(never a top-level `rules` package), the rule index, the schemas and the bundled
exception list (a real file, identical to exceptions.yaml), and the `audit` command."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    if build.returncode != 0:
        if "Could not find a version" in build.stderr or "No matching distribution" in build.stderr:
            pytest.skip("pip cannot fetch the build backend (setuptools) here: " + build.stderr.strip().splitlines()[-1])
        pytest.fail(build.stderr)
    (path,) = out.glob("*.whl")
    return zipfile.ZipFile(path)


def test_rules_install_as_auditor_rules_not_as_a_top_level_rules_package(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    modules = {p.relative_to(ROOT / "rules").as_posix() for p in (ROOT / "rules").glob("**/*.py")}
    assert {f"auditor_rules/{m}" for m in modules} <= names
    cases = {p.relative_to(ROOT / "rules").as_posix() for p in (ROOT / "rules").glob("*/cases/*.yaml")}
    assert cases and {f"auditor_rules/{c}" for c in cases} <= names
    assert "auditor_rules/index.json" in names
    assert not [n for n in names if n.startswith("rules/")]


def test_data_files_and_subpackages_are_shipped(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for data in ("exceptions.schema.json", "posture.schema.json", "report.schema.json", "exceptions.yaml"):
        assert f"auditor/data/{data}" in names
    packages = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "auditor").rglob("__init__.py")}
    for package in packages:
        assert f"{package}/__init__.py" in names, package
    bundled = wheel.read("auditor/data/exceptions.yaml")
    assert bundled == (ROOT / "exceptions.yaml").read_bytes()


def test_console_script_is_audit(wheel: zipfile.ZipFile) -> None:
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "[console_scripts]" in text and "audit = auditor.cli:main" in text
