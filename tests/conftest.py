"""Shared helpers for the test suite.

`audit_text` runs the real pipeline (loader -> engine) on YAML text written
to a temporary file; `run_cli` runs the installed command in a subprocess, so
exit codes, stderr and the absence of tracebacks are what a user sees.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus"
SCHEMAS = ROOT.parent / "shared" / "schemas"
AS_OF = dt.date(2026, 11, 29)


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None, env: dict | None = None,
            timeout: float = 120) -> CliResult:
    environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
    environment.pop("AUDIT_DEBUG", None)
    completed = subprocess.run(
        [sys.executable, "-m", "auditor", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd or ROOT,
        env=environment,
        timeout=timeout,
    )
    return CliResult(completed.returncode, completed.stdout.decode(), completed.stderr.decode())


def one_line_error(result: CliResult, code: int = 2) -> str:
    """The one line `audit: error: ...` a refused run writes (exit `code`, nothing on standard output,
    no traceback)."""
    assert result.code == code, (result.code, result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("audit: error: "), result.stderr
    return lines[0]


def audit_text(tmp_path: Path, text: str, *, exceptions: str | None = None, posture: str | None = None,
               coverage: dict[str, str] | None = None, as_of: dt.date = AS_OF, rules: tuple[str, ...] = (),
               name: str = "input.yaml"):
    """Audit YAML `text` with the real loader and engine; returns the AuditResult."""
    from auditor import engine, exceptions_list, registry
    from auditor import posture as posture_module
    from auditor.snapshot import Coverage, CoverageState, Snapshot
    from auditor.sources.files import read_paths

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    snapshot = read_paths([str(path)])
    if coverage is not None:
        listed = {gk: Coverage(CoverageState(state), f"{gk}: {state} (test)") for gk, state in coverage.items()}
        snapshot = Snapshot.build(snapshot.objects, mode="snapshot", inputs=snapshot.inputs, listed=listed)
    rule_set = registry.select(registry.load_rules(plugins=False), rules)
    if exceptions is None:
        exception_list = exceptions_list.ExceptionList("(none)", [])
    else:
        exceptions_path = tmp_path / "exceptions.yaml"
        exceptions_path.write_text(exceptions, encoding="utf-8")
        exception_list = exceptions_list.load(str(exceptions_path))
    posture_config = posture_module.Posture()
    if posture is not None:
        posture_path = tmp_path / "posture.yaml"
        posture_path.write_text(posture, encoding="utf-8")
        posture_config = posture_module.load(str(posture_path))
    return engine.run(snapshot, rule_set, exception_list, posture_config, as_of=as_of)


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present at {CORPUS}")
    return CORPUS


@pytest.fixture
def schemas() -> Path:
    if not SCHEMAS.is_dir():
        pytest.skip(f"shared schemas not present at {SCHEMAS}")
    return SCHEMAS


# --- Hypothesis profiles (tests/test_fuzz.py) ---------------------------------
# "ci" (the default): a few dozen examples per property, no deadline, and
# derandomized so every CI run tries the same inputs. "long": thousands of
# examples for a local hunt:  HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz.py -n 2
from hypothesis import HealthCheck  # noqa: E402
from hypothesis import settings as _hypothesis_settings

_HYPOTHESIS_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
_hypothesis_settings.register_profile(
    "ci", max_examples=50, deadline=None, derandomize=True, database=None, print_blob=True,
    suppress_health_check=_HYPOTHESIS_SLOW_OK,
)
_hypothesis_settings.register_profile(
    "long", max_examples=3000, deadline=None, print_blob=True, suppress_health_check=_HYPOTHESIS_SLOW_OK,
)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
