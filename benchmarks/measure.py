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
import statistics
import subprocess
import sys
import tempfile
import threading
import time
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
YAML_LOAD_TREE = (
    "import os, sys, yaml\n"
    "docs = []\n"
    "for root, dirs, files in os.walk(sys.argv[1]):\n"
    "    dirs.sort()\n"
    "    for name in sorted(files):\n"
    "        if name.endswith(('.yaml', '.yml')):\n"
    "            with open(os.path.join(root, name), 'rb') as f:\n"
    "                docs.extend(yaml.load_all(f, Loader=yaml.CSafeLoader))\n"
    "assert docs\n"
)


@dataclass
class Sample:
    wall_s: float
    rss_kib: int
    returncode: int


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


def run_once(argv: list[str], cwd: Path | None = None, timeout: float | None = None,
             env: dict[str, str] | None = None, stdout: Path | None = None) -> tuple[Sample, str]:
    """One fresh child; returns its sample and the tail of its stderr (stdout discarded unless a path is given)."""
    with tempfile.TemporaryFile() as err, open(stdout or os.devnull, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd, env=env)
        killer = threading.Timer(timeout, proc.kill) if timeout else None
        if killer:
            killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if killer:
                killer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, Popen must not wait again
        err.seek(0)
        tail = err.read()[-4000:].decode("utf-8", "replace")
    return Sample(wall, usage.ru_maxrss, proc.returncode), tail


def measure(label: str, argv: list[str], reps: int = 3, cwd: Path | None = None, timeout: float | None = None,
            warmup: bool = False, env: dict[str, str] | None = None, stdout: Path | None = None) -> Measurement:
    """Median of `reps` fresh runs, optionally after one unrecorded warm-up run."""
    m = Measurement(label, argv)
    for i in range(reps + int(warmup)):
        sample, tail = run_once(argv, cwd, timeout, env, stdout)
        if sample.returncode < 0 or "Traceback (most recent call last)" in tail:
            m.error = f"exit {sample.returncode}: {tail.strip().splitlines()[-1] if tail.strip() else 'killed'}"
            m.samples.append(sample)
            return m
        if i >= int(warmup):
            m.samples.append(sample)
    return m


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
