#!/usr/bin/env python3
"""Benchmark of `audit live`: a synthetic cluster served by the test API server with latency.

    .venv/bin/python benchmarks/live.py                       # 10,000 Services in 1,000 namespaces, 50 ms/request
    .venv/bin/python benchmarks/live.py --services 2000 --reps 1 --latency 0.02

The cluster is `synth.py services --with-namespaces` (benchmarks/synth_cluster.py), served by
tests/kubeapi with a latency fault on every request (discovery included). Each run is a fresh
`python -m auditor live` (through benchmarks/measure.py's launcher: wall time and peak RSS from
`os.wait4`). Printed per run: wall time, requests made (the server's log), peak memory, and the
slowest single resource's listing time (first to last page of one collection, from the server's
log), which is the floor a concurrent reader can reach; a sequential one would pay the sum.
Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from measure import run_once  # noqa: E402
from synth_cluster import build_services  # noqa: E402

from tests.kubeapi import Fault, KubeApiServer  # noqa: E402


def _timestamps(server: KubeApiServer) -> list[tuple[float, str, int]]:
    """(time answered, path, status) of every request: the request log has no times of its own."""
    log: list[tuple[float, str, int]] = []
    original = server.log.record

    def record(method, path, query, status, *rest):
        log.append((time.monotonic(), path, status))
        original(method, path, query, status, *rest)

    server.log.record = record
    return log


def _per_resource(log: list[tuple[float, str, int]], started: float, latency: float) -> dict[str, float]:
    """Listing time of each collection: from when its first page was asked (answer time minus the
    injected latency) to when its last page was answered."""
    first: dict[str, float] = {}
    last: dict[str, float] = defaultdict(float)
    for when, path, _ in log:
        if when < started or path.count("/") < 3 or path in ("/api/v1", "/apis"):
            continue
        first.setdefault(path, when - latency)
        last[path] = when
    return {path: last[path] - first[path] for path in first}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=1_000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added to every request")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--chunk-size", type=int, default=500)
    args = parser.parse_args(argv)

    items = build_services(args.services, args.namespaces, args.seed, with_namespaces=True)
    kinds = defaultdict(int)
    for item in items:
        kinds[item["kind"]] += 1
    print(f"cluster: {dict(kinds)}; latency {args.latency * 1000:.0f} ms per request; "
          f"--concurrency {args.concurrency} --chunk-size {args.chunk_size}")
    with KubeApiServer(items, faults=[Fault.slow(args.latency, times=None)]) as server, \
            tempfile.TemporaryDirectory(prefix="audit-live-bench-") as tmp:
        config = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        log = _timestamps(server)
        argv_ = [sys.executable, "-m", "auditor", "live", "--kubeconfig", str(config), "--format", "json",
                 "--concurrency", str(args.concurrency), "--chunk-size", str(args.chunk_size)]
        walls, rss, requests = [], [], []
        print(f"{'run':>4} {'exit':>4} {'wall s':>8} {'requests':>9} {'peak MiB':>9} {'slowest resource':>34}")
        for rep in range(args.reps):
            server.clear_requests()
            started = time.monotonic()
            sample, tail = run_once(argv_, cwd=ROOT, timeout=600)
            if sample.returncode not in (0, 1, 3) or "Traceback" in tail:
                print(f"run failed (exit {sample.returncode}): {tail.strip()[-500:]}")
                return 1
            made = [r for r in server.requests]
            per = _per_resource(log, started, args.latency)
            slowest_path, slowest = max(per.items(), key=lambda kv: kv[1])
            pages = sum(1 for r in made if r.path == slowest_path)
            walls.append(sample.wall_s)
            rss.append(sample.rss_kib / 1024)
            requests.append(len(made))
            print(f"{rep + 1:>4} {sample.returncode:>4} {sample.wall_s:>8.2f} {len(made):>9} {sample.rss_kib / 1024:>9.1f} "
                  f"{slowest:>7.2f} s {slowest_path} ({pages} pages)")
            assert {r.method for r in made} == {"GET"}
        print(f"median: wall {statistics.median(walls):.2f} s, {statistics.median(requests):.0f} requests, "
              f"peak {statistics.median(rss):.1f} MiB")
        total_lists = sum(per.values())
        print(f"sum of every collection's listing time in the last run: {total_lists:.2f} s "
              f"(what a sequential reader would wait for)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
