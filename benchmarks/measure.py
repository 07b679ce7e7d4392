#!/usr/bin/env python3
"""Wall time and peak RSS of a command, each run in a fresh subprocess.

Peak memory comes from the rusage `os.wait4` returns for the child (ru_maxrss, KiB on
Linux; it also covers grandchildren the child waited for), so nothing from this process
or earlier runs leaks into the number. Reports medians over N runs, raw, nothing subtracted.

    python benchmarks/measure.py -n 5 -- python -m auditor cluster.json --format json
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

# Baseline programs, run with the same interpreter as the auditor. They keep every parsed
# document alive until exit, as an auditor must, so peak RSS is comparable.
JSON_LOAD = (
    "import json, sys\n"
    "with open(sys.argv[1], encoding='utf-8') as f:\n"
    "    data = json.load(f)\n"
    "assert data['items'] is not None\n"
)
JSON_LOAD_NO_GC = "import gc; gc.disable()\n" + JSON_LOAD
# The YAML files the auditor reads (hidden folders and chart/role templates
# skipped); a file PyYAML refuses (a tool's own tags) costs its parse up to
# the refusal and is otherwise left out, as the auditor skips it.
YAML_LOAD_TREE = (
    "import os, sys, yaml\n"
    "docs = []\n"
    "for root, dirs, files in os.walk(sys.argv[1]):\n"
    "    names = set(dirs) | set(files)\n"
    "    dirs[:] = sorted(d for d in dirs if not d.startswith('.') and not (d == 'templates' and\n"
    "                     ('Chart.yaml' in names or 'tasks' in names)))\n"
    "    for name in sorted(files):\n"
    "        if name.endswith(('.yaml', '.yml')) and not name.startswith('.'):\n"
    "            with open(os.path.join(root, name), 'rb') as f:\n"
    "                try:\n"
    "                    docs.extend(yaml.load_all(f, Loader=yaml.CSafeLoader))\n"
    "                except yaml.YAMLError:\n"
    "                    pass\n"
    "assert docs\n"
)


@dataclass
class Sample:
    wall_s: float
    rss_kib: int
    returncode: int
    cpu_s: float = 0.0  # the child's user + system CPU seconds (rusage from os.wait4)
    started_at: float = 0.0  # time.monotonic() just before the fork (the clock is system-wide)


@dataclass
class Measurement:
    label: str
    argv: list[str]
    samples: list[Sample] = field(default_factory=list)
    error: str = ""  # non-empty when a run crashed, timed out or printed a traceback

    @property
    def ok(self) -> bool:
        return bool(self.samples) and not self.error

    @property
    def wall_s(self) -> float:
        return statistics.median(s.wall_s for s in self.samples)

    @property
    def rss_mib(self) -> float:
        return statistics.median(s.rss_kib for s in self.samples) / 1024

    @property
    def returncodes(self) -> list[int]:
        return sorted({s.returncode for s in self.samples})

    def as_dict(self) -> dict[str, object]:
        return {"label": self.label, "argv": self.argv, "error": self.error,
                "wall_s_median": self.wall_s if self.samples else None,
                "rss_mib_median": self.rss_mib if self.samples else None,
                "samples": [vars(s) for s in self.samples]}


# Linux records the high-water RSS of the mm a process leaves at exec() into its ru_maxrss.
# A child forked/vforked straight from this (possibly large) process would therefore report
# at least *our* RSS. A tiny freshly exec'd launcher does the fork+exec+wait4 instead, so the
# floor is a bare `python -I -S` (~10 MiB), below any measured interpreter.
_LAUNCHER = (
    "import os, sys, time\n"
    "fd = int(sys.argv[1])\n"
    "os.set_inheritable(fd, False)\n"
    "t0 = time.perf_counter()\n"
    "m0 = time.monotonic()\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    try:\n"
    "        os.execvp(sys.argv[2], sys.argv[2:])\n"
    "    except OSError as exc:\n"
    "        os.write(2, f'launcher: cannot run {sys.argv[2]}: {exc}\\n'.encode())\n"
    "    os._exit(127)\n"
    "_, status, ru = os.wait4(pid, 0)\n"
    "wall = time.perf_counter() - t0\n"
    "cpu = ru.ru_utime + ru.ru_stime\n"
    "os.write(fd, f'{wall!r} {ru.ru_maxrss} {os.waitstatus_to_exitcode(status)} {cpu!r} {m0!r}'.encode())\n"
)


def run_once(argv: list[str], cwd: Path | None = None, timeout: float | None = None,
             env: dict[str, str] | None = None, stdout: Path | None = None) -> tuple[Sample, str]:
    """One fresh child; returns its sample and the tail of its stderr (stdout discarded unless a path is given)."""
    r, w = os.pipe()
    with tempfile.TemporaryFile() as err, open(stdout or os.devnull, "wb") as out:
        launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(w), *argv]
        proc = subprocess.Popen(launcher, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd, env=env,
                                pass_fds=(w,), start_new_session=True)
        os.close(w)
        # On timeout kill the whole session: the measured command is the launcher's child.
        killer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL)) if timeout else None
        if killer:
            killer.start()
        try:
            with os.fdopen(r, "rb") as fh:
                report = fh.read().decode()
            proc.wait()
        finally:
            if killer:
                killer.cancel()
        err.seek(0)
        tail = err.read()[-4000:].decode("utf-8", "replace")
    if not report:  # launcher killed (timeout) before reporting
        return Sample(float(timeout or 0), 0, -signal.SIGKILL), tail or "killed (timeout)"
    wall, rss, rc, cpu, started = report.split()
    return Sample(float(wall), int(rss), int(rc), float(cpu), float(started)), tail


def measure(label: str, argv: list[str], reps: int = 3, cwd: Path | None = None, timeout: float | None = None,
            warmup: bool = False, env: dict[str, str] | None = None, stdout: Path | None = None,
            ok_codes: set[int] | None = None) -> Measurement:
    """Median of `reps` fresh runs, optionally after one unrecorded warm-up run.

    A run is an error (and stops the series) if it is killed, prints a traceback, or exits
    with a code outside `ok_codes` (when given): a fast refusal must not pass for a fast run.
    """
    m = Measurement(label, argv)
    for i in range(reps + int(warmup)):
        sample, tail = run_once(argv, cwd, timeout, env, stdout)
        m.error = _run_error(sample, tail, ok_codes)
        if m.error:
            m.samples.append(sample)
            return m
        if i >= int(warmup):
            m.samples.append(sample)
    return m


def _run_error(sample: Sample, tail: str, ok_codes: set[int] | None) -> str:
    """Why a run is an error (killed, a traceback, the launcher failing, an exit code outside `ok_codes`);
    "" when it is none."""
    bad_code = ok_codes is not None and sample.returncode not in ok_codes
    if bad_code or sample.returncode < 0 or "Traceback (most recent call last)" in tail or tail.startswith("launcher:"):
        return f"exit {sample.returncode}: {tail.strip().splitlines()[-1] if tail.strip() else 'killed'}"
    return ""


def measure_pair(first: tuple[str, list[str]], second: tuple[str, list[str]], reps: int = 3,
                 cwd: Path | None = None, timeout: float | None = None, warmup: bool = False,
                 ok_codes: tuple[set[int] | None, set[int] | None] = (None, None)) -> tuple[Measurement, Measurement]:
    """Two commands measured in turn (A B A B ...), so that load drifting during the run weighs on both
    alike: compare them pair by pair (`paired_ratio`). Same rules as `measure`."""
    pair = (Measurement(first[0], first[1]), Measurement(second[0], second[1]))
    for i in range(reps + int(warmup)):
        for m, codes in zip(pair, ok_codes, strict=True):
            sample, tail = run_once(m.argv, cwd, timeout)
            m.error = _run_error(sample, tail, codes)
            if m.error:
                m.samples.append(sample)
                return pair
            if i >= int(warmup):
                m.samples.append(sample)
    return pair


def paired_ratio(a: Measurement, b: Measurement, attr: str = "wall_s") -> float:
    """Median of A/B over the runs made in turn (`measure_pair`); of the medians when not paired."""
    if len(a.samples) != len(b.samples) or not a.samples:
        return float(getattr(a, attr) / getattr(b, attr))
    key = "wall_s" if attr == "wall_s" else "rss_kib"
    return statistics.median(getattr(x, key) / getattr(y, key) for x, y in zip(a.samples, b.samples, strict=True))


def paired_difference(a: Measurement, b: Measurement) -> float:
    """Median of A's wall time minus B's over runs made in turn (`measure_pair`)."""
    return statistics.median(x.wall_s - y.wall_s for x, y in zip(a.samples, b.samples, strict=True))


def warm_page_cache(path: Path) -> None:
    """Reads a file or tree once so no measured run pays for cold disk reads."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass


def json_load_argv(python: str, path: Path, gc: bool = True) -> list[str]:
    return [python, "-c", JSON_LOAD if gc else JSON_LOAD_NO_GC, str(path)]


def yaml_load_argv(python: str, tree: Path) -> list[str]:
    return [python, "-c", YAML_LOAD_TREE, str(tree)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--reps", type=int, default=3)
    p.add_argument("--timeout", type=float, default=None)
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="command after --")
    a = p.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        p.error("no command given")
    m = measure(" ".join(cmd), cmd, a.reps, timeout=a.timeout)
    for s in m.samples:
        print(f"  wall {s.wall_s:8.3f} s   peak RSS {s.rss_kib / 1024:9.1f} MiB   exit {s.returncode}")
    print(f"median: wall {m.wall_s:.3f} s, peak RSS {m.rss_mib:.1f} MiB" + (f"  ERROR {m.error}" if m.error else ""))
    return 1 if m.error else 0


if __name__ == "__main__":
    sys.exit(main())
