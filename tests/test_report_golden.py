"""Every report format, byte for byte, on the bundled example inputs (golden files).

The files under tests/fixtures/golden/ were written by the auditor before the
report layer was refactored (typed `Summary`, baseline field, fleet records,
`audit diff` rendering in `auditor/report/`); this test holds every later
version to the same bytes. A deliberate change of a report regenerates them:

    python -m tests.test_report_golden --write

and the diff of the golden files is then part of the review.

Each scenario is one run of the real CLI, from the repository root with
relative paths (SARIF and the JSON report name files relative to it), with a
fixed `--as-of` and `SOURCE_DATE_EPOCH` (the Prometheus timestamp), so the
output depends on nothing but the input. The text report is pinned at 80,
100 and 200 columns (`COLUMNS`; `audit.80.text` is the run that also writes
the other formats): narrow terminals get one block per finding, wide ones a
table when every row fits. The fleet scenario reads two
clusters from the project's test API server and one unreachable address; the
servers' random ports and CAs (hence fingerprints) are replaced by fixed names
before comparing.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import hashlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, CliResult

GOLDEN = ROOT / "tests" / "fixtures" / "golden"
GOLDEN_REL = GOLDEN.relative_to(ROOT).as_posix()
AS_OF = ("--as-of", "2026-11-29")
EPOCH = "1764000000"
FILE_FORMATS = ("json", "junit", "sarif", "markdown", "prometheus", "codequality")
WIDTHS = (80, 100, 200)
CI_EXCEPTIONS = ("--exceptions", "tests/fixtures/ci/exceptions.yaml")
TRACE_WHOLE = tuple(f"tests/fixtures/trace/{folder}" for folder in ("common", "gateway", "app"))


@dataclass(frozen=True)
class Scenario:
    name: str
    args: tuple[str, ...]
    # Report files written with --FORMAT FILE besides the text report on stdout.
    formats: tuple[str, ...] = FILE_FORMATS
    live: bool = False


SCENARIOS = (
    # The HTML report is pinned on this one scenario (its tables are the other reports' content).
    Scenario("drifted", ("tests/fixtures/clusters/drifted.json", *AS_OF), formats=(*FILE_FORMATS, "html")),
    Scenario("drifted-bench-warning", ("tests/fixtures/clusters/drifted.json", "--posture",
                                       "tests/fixtures/clusters/bench-posture.yaml", "--fail-on", "warning", *AS_OF)),
    Scenario("clean", ("tests/fixtures/clusters/clean.json", *AS_OF)),
    Scenario("ci-main", ("tests/fixtures/ci/main", *CI_EXCEPTIONS, *AS_OF)),
    Scenario("ci-mr", ("tests/fixtures/ci/mr", *CI_EXCEPTIONS, *AS_OF)),
    Scenario("ci-mr-require-complete",
             ("tests/fixtures/ci/mr", *CI_EXCEPTIONS, "--require-complete", "--fail-on", "info", *AS_OF)),
    Scenario("ci-mr-baseline",
             ("tests/fixtures/ci/mr", *CI_EXCEPTIONS, "--baseline", f"{GOLDEN_REL}/ci-main/audit.json", *AS_OF)),
    Scenario("fleet", ("live", *AS_OF, "--max-retries", "0"), live=True),
    # A tree with one broken manifest among good ones: an input problem in every format, exit 3 (issue 9).
    Scenario("broken-tree", ("tests/fixtures/broken-tree", *AS_OF), formats=(*FILE_FORMATS, "html")),
    # -q: the failing findings and the verdict (the pre-commit hook); -v: not-run reasons, notes, unused built-ins.
    Scenario("ci-mr-quiet", ("tests/fixtures/ci/mr", *CI_EXCEPTIONS, "-q", *AS_OF), formats=()),
    Scenario("ci-mr-verbose", ("tests/fixtures/ci/mr", *CI_EXCEPTIONS, "-v", *AS_OF), formats=()),
    # The built-in exception list, both entries unused: not "stale", listed only with -v.
    Scenario("ci-mr-nodeport-builtin", ("tests/fixtures/ci/mr", "--rule", "nodeport-service-not-excepted", *AS_OF),
             formats=("json", "sarif", "markdown", "prometheus")),
    Scenario("ci-mr-nodeport-builtin-verbose",
             ("tests/fixtures/ci/mr", "--rule", "nodeport-service-not-excepted", "-v", *AS_OF),
             formats=("sarif", "markdown")),
    # `audit exposure` (its own text and JSON) and `audit trace` (a whole chain, and one broken at the route).
    Scenario("exposure", ("exposure", "tests/fixtures/clusters/exposure.yaml", *AS_OF), formats=("json",)),
    Scenario("trace-whole", ("trace", "argocd.cluster.lan", *TRACE_WHOLE, *AS_OF), formats=()),
    Scenario("trace-route-not-attached", ("trace", "argocd.cluster.lan", "tests/fixtures/trace/common",
                                          "tests/fixtures/trace/gateway", "tests/fixtures/trace/route-section-name",
                                          *AS_OF), formats=()),
)
DIFFS = (
    ("diff-main-mr", (f"{GOLDEN_REL}/ci-main/audit.json", f"{GOLDEN_REL}/ci-mr/audit.json")),
    ("diff-mr-main-warning", (f"{GOLDEN_REL}/ci-mr/audit.json", f"{GOLDEN_REL}/ci-main/audit.json",
                              "--fail-on", "warning")),
)


def _run(*args: str, columns: int = WIDTHS[0]) -> CliResult:
    from tests.test_live_fixtures import run

    return run(*args, env={"SOURCE_DATE_EPOCH": EPOCH, "COLUMNS": str(columns)}, cwd=ROOT)


@contextlib.contextmanager
def _fleet(work: Path) -> Iterator[tuple[tuple[str, ...], dict[str, str]]]:
    """The `--kubeconfig` arguments of a fleet of three, and what to replace in the output."""
    from tests.kubeapi import KubeconfigContext, write_kubeconfig
    from tests.test_live_fixtures import TOKEN, serve

    with serve("drifted") as drifted, serve("clean") as clean:
        contexts = [drifted.context("lab-a"), clean.context("lab-b"),
                    KubeconfigContext("gone", "https://127.0.0.1:1", drifted.ca_pem, TOKEN)]
        config = write_kubeconfig(work / "fleet", contexts)
        # The servers' ports and CAs are new each run, hence their URLs and fingerprints (the CA's hash).
        yield ("--kubeconfig", str(config), "--all-contexts"), {
            drifted.url: "https://lab-a.test", clean.url: "https://lab-b.test",
            _fingerprint(drifted.ca_pem): "aaaaaaaaaaaa", _fingerprint(clean.ca_pem): "bbbbbbbbbbbb",
        }


def _fingerprint(ca_pem: bytes) -> str:
    return hashlib.sha256(ca_pem).hexdigest()[:12]  # auditor.sources.live.target.fingerprint


def render_scenario(scenario: Scenario, work: Path) -> dict[str, str]:
    """`{file name: text}` of every output of `scenario`: the reports and the exit code."""
    work.mkdir(parents=True, exist_ok=True)
    files = {name: work / f"audit.{name}" for name in scenario.formats}
    file_args = [arg for name, path in files.items() for arg in (f"--{name}", str(path))]
    with contextlib.ExitStack() as stack:
        replace: dict[str, str] = {}
        args = scenario.args
        if scenario.live:
            fleet_args, replace = stack.enter_context(_fleet(work))
            args = (*args, *fleet_args)
        result = _run(*args, *file_args)
        texts = {WIDTHS[0]: result}
        texts.update({width: _run(*args, columns=width) for width in WIDTHS[1:]})
    assert result.code in (0, 1, 3), result.stderr
    assert {text.code for text in texts.values()} == {result.code}, [text.stderr for text in texts.values()]
    outputs = {f"audit.{width}.text": text.stdout for width, text in texts.items()}
    outputs["exit-code"] = f"{result.code}\n"
    outputs.update({path.name: path.read_text(encoding="utf-8") for path in files.values()})
    for text_from, text_to in replace.items():
        outputs = {name: text.replace(text_from, text_to) for name, text in outputs.items()}
    return outputs


def render_diff(args: tuple[str, ...]) -> dict[str, str]:
    text = _run("diff", *args)
    as_json = _run("diff", *args, "--format", "json")
    assert text.code in (0, 1) and as_json.code == text.code, text.stderr + as_json.stderr
    return {"diff.text": text.stdout, "diff.json": as_json.stdout, "exit-code": f"{text.code}\n"}


def _compare(folder: Path, outputs: dict[str, str]) -> None:
    assert folder.is_dir(), f"no golden files in {folder}: python -m tests.test_report_golden --write"
    assert sorted(p.name for p in folder.iterdir()) == sorted(outputs)
    for name, text in outputs.items():
        golden = (folder / name).read_text(encoding="utf-8")
        if golden != text:
            delta = "".join(list(difflib.unified_diff(golden.splitlines(True), text.splitlines(True),
                                                      f"golden/{folder.name}/{name}", "now", n=2))[:60])
            pytest.fail(f"{folder.name}/{name} differs from the golden file:\n{delta}")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_reports_are_byte_identical_to_the_golden_files(scenario: Scenario, tmp_path: Path) -> None:
    _compare(GOLDEN / scenario.name, render_scenario(scenario, tmp_path))


@pytest.mark.parametrize("name, args", DIFFS, ids=[name for name, _ in DIFFS])
def test_audit_diff_is_byte_identical_to_the_golden_files(name: str, args: tuple[str, ...]) -> None:
    _compare(GOLDEN / name, render_diff(args))


def _write_all() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as temporary:
        for scenario in SCENARIOS:  # in order: ci-mr-baseline reads ci-main's golden JSON report
            _write(GOLDEN / scenario.name, render_scenario(scenario, Path(temporary) / scenario.name))
    for name, args in DIFFS:
        _write(GOLDEN / name, render_diff(args))


def _write(folder: Path, outputs: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.iterdir():
        stale.unlink()
    for name, text in outputs.items():
        (folder / name).write_text(text, encoding="utf-8")
    print(f"wrote {folder.relative_to(ROOT)}: {', '.join(sorted(outputs))}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Regenerate the golden report files.")
    parser.add_argument("--write", action="store_true", required=True)
    parser.parse_args()
    _write_all()
    sys.exit(0)
