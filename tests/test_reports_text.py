"""The text report fits the terminal: width, layout, wrapping, colour, verbosity — and the real TTY path.

The byte-exact layout at 80, 100 and 200 columns is pinned by the golden files
(tests/test_report_golden.py); these tests check the properties at every width:
no line wider than the terminal unless a single word is, no object name, path
or word ever cut, a table only where it fits, colour only where asked, and
what -q and -v show. The last test runs `audit` in a real terminal (tmux) so
the width and colour are the ones the command itself detects.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from auditor.report import Verbosity, text
from tests.conftest import FIXTURES, ROOT, run_cli
from tests.test_live_fixtures import run

DRIFTED = "tests/fixtures/clusters/drifted.json"
CI_MR = "tests/fixtures/ci/mr"
CI_EXCEPTIONS = ("--exceptions", "tests/fixtures/ci/exceptions.yaml")
AS_OF = ("--as-of", "2026-11-29")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
GOLDEN = FIXTURES / "golden"


def _report(*args: str, columns: int | None = None, env: dict[str, str | None] | None = None) -> tuple[int, str]:
    """The text report of the real CLI (in this process, from the repository root)."""
    result = run(*args, *AS_OF, env={"COLUMNS": None if columns is None else str(columns), **(env or {})}, cwd=ROOT)
    assert result.code in (0, 1, 3), result.stderr
    return result.code, result.stdout


def _json(*args: str) -> dict:
    result = run(*args, *AS_OF, "--format", "json", cwd=ROOT)
    return json.loads(result.stdout)


def _displays(report: dict) -> set[str]:
    """Every object name and file:line the findings show."""
    shown = set()
    for finding in report["findings"]:
        obj = finding["object"]
        shown.add("/".join(part for part in (obj["kind"], obj["namespace"], obj["name"]) if part))
        if "file" in finding:
            shown.add(f"{finding['file']}:{finding['line']}" if "line" in finding else finding["file"])
    return shown


# --- width and wrapping ----------------------------------------------------------------------


LABELS = ("FAILED", "EXCEPTED", "ERROR", "NOT RUN", "PASSED")


def _may_overflow(line: str, columns: int) -> bool:
    """A line wider than the terminal is allowed only where no break is: one word too long for any line,
    a label and a rule id (`FAILED rule-id`), or a passing rule's one line when even `PASSED id (n checked): …`
    is too wide."""
    words = line.split()
    if len(words) == 1:
        return True
    if line.startswith(LABELS) and len(words) <= 3 and not line.endswith((":", ",")):
        return True
    if line.startswith("PASSED "):
        mandatory = line.split(": ", 1)[0] + ": …"
        return len(mandatory) > columns
    return False


@pytest.mark.parametrize("columns", [20, 40, 60, 80, 100, 120, 160, 200, 300])
@pytest.mark.parametrize("args", [(DRIFTED,), (CI_MR, *CI_EXCEPTIONS), (CI_MR, *CI_EXCEPTIONS, "-v")],
                         ids=["drifted", "ci-mr", "ci-mr-verbose"])
def test_lines_fit_and_no_name_is_cut(args: tuple[str, ...], columns: int) -> None:
    _, report = _report(*args, columns=columns)
    for line in report.splitlines():
        assert len(line) <= columns or _may_overflow(line, columns), (columns, line)
    for name in _displays(_json(*args)):
        assert any(name in line for line in report.splitlines()), f"{name} cut at {columns} columns"


def test_every_line_fits_once_no_word_is_longer_than_the_line() -> None:
    """The plain rule, where it must hold without exception: 100 columns and ordinary names."""
    _, report = _report(CI_MR, *CI_EXCEPTIONS, "-v", columns=100)
    assert max(len(line) for line in report.splitlines()) <= 100


@pytest.mark.parametrize("columns, table", [(80, False), (100, False), (200, True)])
def test_a_table_only_when_every_row_fits(columns: int, table: bool) -> None:
    """drifted holds a 60-character CRD name and 41-character paths: at 100 columns a row cannot fit."""
    _, report = _report(DRIFTED, columns=columns)
    assert ("  STATUS  SEVERITY  OBJECT" in report) is table
    lines = report.splitlines()
    # One block per finding: status, severity and object, then where ("at ...") on the next line.
    blocks = [line for line, after in itertools.pairwise(lines)
              if line.startswith("  failed  ") and after.startswith("    at ")]
    assert len(blocks) == (0 if table else _json(DRIFTED)["summary"]["failed"])


def test_blocks_put_object_where_and_message_on_their_own_lines() -> None:
    _, report = _report(CI_MR, *CI_EXCEPTIONS, "--rule", "nodeport-service-not-excepted", columns=80)
    lines = report.splitlines()
    start = lines.index("  failed  error  Service/mail/mailpit-ui")
    assert lines[start + 1:start + 3] == ["    at tests/fixtures/ci/mr/apps/mail/mail.yaml:33",
                                          "    type NodePort exposes 8025/TCP (nodePort 30825) on every node"]


def test_wrap_breaks_at_spaces_only_and_never_inside_a_word() -> None:
    words = ["kube-system/cilium-config", "(tests/fixtures/clusters/drifted.json:334);", "x" * 50, "a"]
    lines = text.wrap(" ".join(words), 30, "  ", "    ")
    assert [word for line in lines for word in line.split()] == words
    assert lines == ["  kube-system/cilium-config", "    (tests/fixtures/clusters/drifted.json:334);",
                     "    " + "x" * 50, "    a"]  # too long for any line: alone on its line, whole
    assert text.wrap("(error): t", 20, "FAILED a-very-long-rule-id ", "  ") == [
        "FAILED a-very-long-rule-id", "  (error): t"]  # a prefix keeps its line; the text moves on


def test_passed_rules_are_one_line_each_and_the_title_is_cut_at_a_word() -> None:
    _, report = _report(DRIFTED, columns=80)
    passed = [line for line in report.splitlines() if line.startswith("PASSED ")]
    assert len(passed) == _json(DRIFTED)["summary"]["rulesPassed"] and all(len(line) <= 80 for line in passed)
    assert "PASSED service-external-ips (10 checked): Service with spec.externalIPs" in passed
    assert "PASSED kpr-not-enabled (1 checked): Cilium does not replace kube-proxy …" in passed


def test_width_comes_from_columns_then_the_terminal_then_80(monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl
    import struct
    import termios

    from auditor.cli.common import report_width

    controller, terminal = os.openpty()
    try:
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 132, 0, 0))
        with os.fdopen(os.dup(terminal), "w") as tty:
            monkeypatch.delenv("COLUMNS", raising=False)
            assert report_width(tty) == 132
            monkeypatch.setenv("COLUMNS", "97")
            assert report_width(tty) == 97
            monkeypatch.setenv("COLUMNS", "wide")  # not a number: the terminal's
            assert report_width(tty) == 132
        monkeypatch.delenv("COLUMNS")
        with open(os.devnull, "w") as not_a_tty:
            assert report_width(not_a_tty) == 80
    finally:
        os.close(controller), os.close(terminal)


# --- colour ------------------------------------------------------------------------------------


def test_colour_only_when_forced_or_on_a_terminal_and_only_sgr_codes() -> None:
    _, plain = _report(DRIFTED, columns=100)
    assert "\x1b" not in plain
    _, forced = _report(DRIFTED, "--color", columns=100, env={"NO_COLOR": "1"})  # --color beats NO_COLOR
    assert "\x1b[31mFAILED\x1b[0m" in forced and "\x1b[31merror\x1b[0m" in forced  # severity coloured
    assert "\x1b[33mwarning\x1b[0m" in forced and "\x1b[2mexcepted\x1b[0m" in forced
    assert set(re.findall(r"\x1b\[([0-9;]*)m", forced)) <= {"0", "1", "2", "31", "32", "33", "36"}
    assert ANSI.sub("", forced) == plain  # the words are the same: colour only helps


# --- verbosity ---------------------------------------------------------------------------------


def test_quiet_shows_what_fails_and_the_verdict() -> None:
    code, quiet = _report(CI_MR, *CI_EXCEPTIONS, "-q", columns=100)
    assert code == 1
    assert "  excepted  " not in quiet and "NOT RUN" not in quiet and "PASSED" not in quiet
    assert "note:" not in quiet and not quiet.startswith("Audit of")
    assert "Service/shop/payment-callback" in quiet and "  fix: " in quiet
    failing = _json(CI_MR, *CI_EXCEPTIONS)["summary"]["failing"]
    assert quiet.splitlines()[-1] == f"Verdict: FAIL ({failing} findings at or above error; exit 1)"


def test_quiet_hides_findings_below_the_gate_but_shows_not_run_rules_that_fail_the_run() -> None:
    _, below = _report("tests/fixtures/ci/main", *CI_EXCEPTIONS, "-q", "--rule", "lb-pool-v2alpha1", columns=100)
    assert "FAILED" not in below and below.splitlines()[-1] == "Verdict: PASS"
    code, strict = _report(CI_MR, *CI_EXCEPTIONS, "-q", "--require-complete", "--rule", "aws-vpc-cni-leftover",
                           columns=100)
    assert code == 3 and "NOT RUN aws-vpc-cni-leftover: the input holds no DaemonSet.apps objects" in strict


def test_verbose_says_why_rules_did_not_run_and_lists_notes() -> None:
    _, normal = _report(DRIFTED, "--posture", "tests/fixtures/clusters/bench-posture.yaml",
                        "--rule", "aws-vpc-cni-leftover", "--rule", "lb-service-not-excepted", columns=100)
    args = (CI_MR, *CI_EXCEPTIONS, "--rule", "aws-vpc-cni-leftover", "--rule", "nodeport-service-not-excepted")
    _, normal = _report(*args, columns=100)
    _, verbose = _report(*args, "-v", columns=100)
    assert "NOT RUN aws-vpc-cni-leftover (the input does not show what they need; -v says why)" in normal
    assert "NOT RUN aws-vpc-cni-leftover: the input holds no DaemonSet.apps objects" in verbose


def test_posture_notes_only_with_verbose(tmp_path: Path) -> None:
    posture = tmp_path / "posture.yaml"
    posture.write_text("exposure:\n  mode: lb-ipam\n", encoding="utf-8")
    _, normal = _report(CI_MR, "--posture", str(posture), "--rule", "nodeport-service-not-excepted", columns=200)
    _, verbose = _report(CI_MR, "--posture", str(posture), "--rule", "nodeport-service-not-excepted", "-v",
                         columns=200)
    assert "1 note about the posture (-v shows them)" in normal and "deprecated alias" not in normal
    assert f"note: {posture}: exposure.mode 'lb-ipam' is a deprecated alias of 'gateway'" in verbose


def test_quiet_and_verbose_together_are_a_usage_error() -> None:
    result = run_cli(DRIFTED, "-q", "-v")
    assert result.code == 2 and result.stderr.endswith("\nError: give -q/--quiet or -v/--verbose, not both\n")


# --- whose defaults ------------------------------------------------------------------------------


BUILTIN = ROOT / "exceptions.yaml"


def _plural_entries(path: Path) -> str:
    """`1 entry` / `3 entries`: how many entries the exception file holds."""
    count = len(yaml.safe_load(path.read_text(encoding="utf-8"))["exceptions"])
    return f"{count} entr{'y' if count == 1 else 'ies'}"


def test_the_report_names_the_posture_and_exception_sources(tmp_path: Path) -> None:
    _, builtin = _report(CI_MR, "--rule", "nodeport-service-not-excepted", columns=100)
    assert builtin.splitlines()[1] == f"Posture and exceptions: built-in platform defaults ({_plural_entries(BUILTIN)})"
    assert "stale" not in builtin and "matched nothing" not in builtin  # built-in entries: the user cannot remove them
    _, verbose = _report(CI_MR, "--rule", "nodeport-service-not-excepted", "-v", columns=200)
    assert ("note: built-in exception kubernetes-dashboard matched nothing (part of the built-in platform defaults; "
            "nothing to remove)") in " ".join(verbose.split())
    posture = tmp_path / "audit-posture.yaml"
    posture.write_text("exposure:\n  lbIpamL2: true\n", encoding="utf-8")
    _, files = _report(CI_MR, *CI_EXCEPTIONS, "--posture", str(posture), columns=200)
    assert files.splitlines()[1] == (f"Posture: {posture}; exceptions: tests/fixtures/ci/exceptions.yaml "
                                     f"({_plural_entries(FIXTURES / 'ci' / 'exceptions.yaml')})")
    assert ("note: exception legacy-ftp matched nothing (tests/fixtures/ci/exceptions.yaml:9: stale? remove it)"
            in files)
    _, blocks = _report(CI_MR, *CI_EXCEPTIONS, columns=80)
    assert "excepted by kubernetes-dashboard (tests/fixtures/ci/exceptions.yaml:2): " in " ".join(blocks.split())


def test_render_defaults_are_80_columns_normal_verbosity_no_colour(tmp_path: Path) -> None:
    from tests.conftest import audit_text

    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
                                  "spec: {type: NodePort}\n", rules=("nodeport-service-not-excepted",))
    assert text.render(result) == text.render(result, color=False, width=80, verbosity=Verbosity.NORMAL)
    assert "\x1b" not in text.render(result)


# --- the real terminal (tmux) ------------------------------------------------------------------

TMUX = shutil.which("tmux")


def _tmux(socket: Path, *args: str) -> str:
    done = subprocess.run([TMUX or "tmux", "-S", str(socket), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(TMUX is None, reason="tmux not installed (Debian: apt-get install tmux): the TTY path is not run")
@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_in_a_real_terminal_width_and_colour_are_detected(tmp_path: Path, no_color: bool) -> None:
    """`audit` in a 100-column tmux pane, COLUMNS unset: the golden 100-column report, coloured unless NO_COLOR."""
    socket = tmp_path / f"tmux-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "done"
    environment = "env -u COLUMNS -u LINES " + ("NO_COLOR=1 " if no_color else "-u NO_COLOR ")
    command = (f"cd {ROOT} && {environment}{sys.executable} -m auditor {DRIFTED} {' '.join(AS_OF)}; "
               f"echo $? > {done}; sleep 600")
    _tmux(socket, "-f", os.devnull, "new-session", "-d", "-x", "100", "-y", "50", "-s", "audit",
          "bash", "--norc", "--noprofile", "-c", command)
    try:
        _tmux(socket, "set-option", "-t", "audit", "history-limit", "10000")
        # Hang guard, not a timing assertion: the command normally finishes in about a second.
        subprocess.run(["bash", "-c", f"for _ in $(seq 600); do [ -s {done} ] && exit 0; sleep 0.1; done; exit 1"],
                       check=True, timeout=120)
        coloured = _tmux(socket, "capture-pane", "-p", "-e", "-J", "-S", "-", "-E", "-", "-t", "audit")
        plain = _tmux(socket, "capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", "audit")
    finally:
        subprocess.run([TMUX or "tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=60)
    assert done.read_text().strip() == "1"
    shown = "\n".join(line.rstrip() for line in plain.splitlines()).strip("\n") + "\n"
    assert shown == (GOLDEN / "drifted" / "audit.100.text").read_text(encoding="utf-8")
    assert ("\x1b[31m" in coloured) is not no_color
