#!/usr/bin/env python3
"""Benchmark of `audit live`: a synthetic cluster served by the test API server with latency.

    .venv/bin/python benchmarks/live.py                       # 10,000 Services in 1,000 namespaces, 50 ms/request
    .venv/bin/python benchmarks/live.py --services 2000 --reps 1 --latency 0.02
    .venv/bin/python benchmarks/live.py --audit-arg=--chunk-size=500 --audit-arg=--max-chunk-size=500  # kubectl's paging

The cluster is `synth.py services --with-namespaces` (benchmarks/synth_cluster.py), served by
tests/kubeapi with a latency fault on every request (discovery included). Each run is a fresh
`python -m auditor live` (through benchmarks/measure.py's launcher: wall time and peak RSS from
`os.wait4`). Printed per run: wall time, requests made (the server's log), peak memory, and the
slowest single resource's listing time (first to last page of one collection, from the server's
log), which is the floor a concurrent reader can reach; a sequential one would pay the sum.

Two yardsticks, each measured in the same run as the audit it is compared with, alternating:

* the slowest list of the same run (the issue 15 target: wall <= 1.2x it). Bigger pages
  make that list faster, so this ratio rises when the audit gets faster: read it with the
  wall time;
* `kubectl get services -A -o json` (kubectl's own paging, 500 a page), when kubectl is
  installed: what a user would otherwise run merely to list the biggest collection.

Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from measure import run_once  # noqa: E402
from synth_cluster import build_services  # noqa: E402

from tests.kubeapi import Fault, KubeApiServer  # noqa: E402
from tests.kubeapi.kubectl import find_kubectl  # noqa: E402

LogEntry = tuple[float, str, int]


def _timestamps(server: KubeApiServer) -> list[LogEntry]:
    """(time answered, path, status) of every request: the request log has no times of its own."""
    log: list[LogEntry] = []
    original = server.log.record

    def record(method: str, path: str, query: Any, status: int, *rest: Any) -> None:
        log.append((time.monotonic(), path, status))
        original(method, path, query, status, *rest)

    server.log.record = record  # type: ignore[method-assign]
    return log


def _per_resource(log: list[LogEntry], started: float, latency: float) -> dict[str, float]:
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


def _kubectl_seconds(kubectl: Path, config: Path, home: str) -> float:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "KUBECONFIG": str(config),
           "KUBECACHEDIR": os.path.join(home, "cache"), "NO_PROXY": "*"}
    began = time.monotonic()
    done = subprocess.run([str(kubectl), "get", "services", "-A", "-o", "json"], env=env, capture_output=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - began
    if done.returncode != 0:
        raise RuntimeError(f"kubectl failed: {done.stderr.decode()[-300:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=1_000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added to every request")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--audit-arg", action="append", default=[], help="an extra `audit live` argument")
    parser.add_argument("--no-kubectl", action="store_true", help="skip the kubectl yardstick")
    args = parser.parse_args(argv)

    items = build_services(args.services, args.namespaces, args.seed, with_namespaces=True)
    kinds: dict[str, int] = defaultdict(int)
    for item in items:
        kinds[item["kind"]] += 1
    kubectl = None if args.no_kubectl else (find_kubectl("1.32") or _on_path("kubectl"))
    load = os.getloadavg()[0]
    print(f"cluster: {dict(kinds)}; latency {args.latency * 1000:.0f} ms per request; audit arguments: "
          f"{' '.join(args.audit_arg) or '(defaults)'}; load average {load:.2f} on {os.cpu_count()} CPUs")
    with KubeApiServer(items, faults=[Fault.slow(args.latency, times=None)]) as server, \
            tempfile.TemporaryDirectory(prefix="audit-live-bench-") as tmp:
        config = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        log = _timestamps(server)
        audit = [sys.executable, "-m", "auditor", "live", "--kubeconfig", str(config), "--format", "json",
                 *args.audit_arg]
        walls: list[float] = []
        ratios: list[float] = []
        kubectl_ratios: list[float] = []
        print(f"{'run':>4} {'exit':>4} {'wall s':>7} {'requests':>8} {'peak MiB':>8} {'slowest list':>36} "
              f"{'wall/slowest':>12} {'kubectl s':>9} {'wall/kubectl':>12}")
        for rep in range(args.reps):
            server.clear_requests()
            started = time.monotonic()
            sample, tail = run_once(audit, cwd=ROOT, timeout=600)
            if sample.returncode not in (0, 1, 3) or "Traceback" in tail:
                print(f"run failed (exit {sample.returncode}): {tail.strip()[-500:]}")
                return 1
            made = server.requests
            assert {r.method for r in made} == {"GET"}
            per = _per_resource(log, started, args.latency)
            slowest_path, slowest = max(per.items(), key=lambda kv: kv[1])
            pages = sum(1 for r in made if r.path == slowest_path)
            kubectl_s = _kubectl_seconds(kubectl, config, tmp) if kubectl else None
            walls.append(sample.wall_s)
            ratios.append(sample.wall_s / slowest)
            kubectl_text, kubectl_ratio = "", ""
            if kubectl_s is not None:
                kubectl_ratios.append(sample.wall_s / kubectl_s)
                kubectl_text, kubectl_ratio = f"{kubectl_s:.2f}", f"{sample.wall_s / kubectl_s:.2f}x"
            where = f"{slowest:.2f} s {slowest_path} ({pages} pages)"
            print(f"{rep + 1:>4} {sample.returncode:>4} {sample.wall_s:>7.2f} {len(made):>8} "
                  f"{sample.rss_kib / 1024:>8.1f} {where:>36} {sample.wall_s / slowest:>11.2f}x "
                  f"{kubectl_text:>9} {kubectl_ratio:>12}")
        line = (f"median: wall {statistics.median(walls):.2f} s, wall/slowest list "
                f"{statistics.median(ratios):.2f}x")
        if kubectl_ratios:
            line += f", wall/kubectl get services {statistics.median(kubectl_ratios):.2f}x"
        print(line)
        print(f"sum of every collection's listing time in the last run: {sum(per.values()):.2f} s "
              f"(what a sequential reader would wait for)")
    return 0


def _on_path(name: str) -> Path | None:
    found = shutil.which(name)
    return Path(found) if found else None


if __name__ == "__main__":
    sys.exit(main())
