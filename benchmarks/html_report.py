#!/usr/bin/env python3
"""The HTML report of a 10,000-Service cluster: its size, and how long Chromium takes to open it (issue 13).

    python benchmarks/html_report.py                       # a synthetic cluster holding >= 10,000 Services, 3 loads
    python benchmarks/html_report.py --objects 70000 --reps 5
    python benchmarks/html_report.py --services-only       # exactly 10,000 Services over 1,000 namespaces, nothing else

Uses the synthetic `kubectl get -A -o json` dumps of benchmarks/synth.py (cached in
benchmarks/.cache/ like run.py's): the `cluster` mode (workloads, Gateways, routes, pools, L2
policies, drift: every section of the report is full) grown until it holds 10,000 Services, or the
`services` mode. The audit writes `--html`; then Debian's headless Chromium (tests/browser.py,
the DevTools protocol) opens the file `--reps` times, each in a fresh browser, and the load
time is Chromium's own Navigation Timing (`loadEventEnd`, from the navigation's start: parsing,
style, layout of the whole page and its SVG). Targets (issue 13): under 5 MB, opens in under
3 s. The machine's load average is printed before and after: other work on a 2-core machine
slows everything. Nothing here is asserted by the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

SIZE_LIMIT = 5 * 1024 * 1024
LOAD_LIMIT_MS = 3000.0


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def dataset(args: argparse.Namespace) -> tuple[Path, int]:
    from run import ensure_dataset

    if args.services_only:
        found = ensure_dataset("services-10k", "json", f"services-10000x1000-s{args.seed}",
                               ["services", "--services", "10000", "--namespaces", "1000", "--seed", str(args.seed)],
                               ".json", sys.executable, args.regen)
    else:
        found = ensure_dataset(f"cluster-{args.objects // 1000}k", "json", f"cluster-{args.objects}-s{args.seed}",
                               ["cluster", "--objects", str(args.objects), "--seed", str(args.seed)], ".json",
                               sys.executable, args.regen)
    meta = json.loads(found.path.with_name(found.path.name + ".meta.json").read_text(encoding="utf-8"))
    return found.path, int(meta["kinds"].get("Service", 0))


def audit(path: Path, out: Path) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "auditor", str(path), "--html", str(out), "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1, 3):
        raise SystemExit(f"audit failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return took, json.loads(done.stdout)


def open_in_chromium(page_path: Path) -> dict[str, float]:
    from tests.browser import Chromium

    with Chromium.start() as browser:
        page = browser.page()
        start = time.perf_counter()
        page.goto(page_path.as_uri())
        wall = (time.perf_counter() - start) * 1000
        timing = page.load_timing()
        nodes = page.evaluate("document.querySelectorAll('svg .node').length")
        rows = page.evaluate("document.querySelectorAll('tbody tr').length")
    return {"load_ms": timing["loadEventEnd"], "dom_ms": timing["domContentLoadedEventEnd"], "wall_ms": wall,
            "map_nodes": float(nodes), "rows": float(rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=70_000, help="cluster mode: objects (70k hold ~10,000 Services)")
    parser.add_argument("--services-only", action="store_true", help="the services mode: 10,000 Services only")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--regen", action="store_true")
    args = parser.parse_args()
    from tests.browser import executable

    if executable() is None:
        print("chromium is not installed: the load time cannot be measured", file=sys.stderr)
        return 2
    path, services = dataset(args)
    out = BENCH / ".cache" / f"{path.stem}.html"
    print(f"before: {_load()}")
    took, report = audit(path, out)
    size = out.stat().st_size
    print(f"{path.name}: {services:,} Services, {len(report['exposures']):,} ways in, "  # type: ignore[arg-type]
          f"{len(report['findings']):,} findings; audit with --html {took:.1f} s")  # type: ignore[arg-type]
    runs = [open_in_chromium(out) for _ in range(args.reps)]
    median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(f"HTML report: {size:,} bytes ({size / 1024 / 1024:.2f} MiB; limit 5 MiB: "
          f"{'ok' if size < SIZE_LIMIT else 'OVER'}), {int(median['map_nodes'])} map nodes, "
          f"{int(median['rows']):,} table rows")
    print(f"Chromium load (median of {args.reps}, fresh browser each): loadEventEnd {median['load_ms']:.0f} ms, "
          f"DOMContentLoaded {median['dom_ms']:.0f} ms, navigate-to-load wall {median['wall_ms']:.0f} ms "
          f"(limit {LOAD_LIMIT_MS:.0f} ms: {'ok' if median['load_ms'] < LOAD_LIMIT_MS else 'OVER'}); "
          f"each run: {', '.join(format(run['load_ms'], '.0f') for run in runs)} ms")
    print(f"after: {_load()}")
    return 0 if size < SIZE_LIMIT and median["load_ms"] < LOAD_LIMIT_MS else 1


if __name__ == "__main__":
    sys.exit(main())
