#!/usr/bin/env python3
"""Benchmark of `audit live`: a synthetic cluster served by the test API server with latency.

    .venv/bin/python benchmarks/live.py                       # 10,000 Services in 1,000 namespaces, 50 ms/request
    .venv/bin/python benchmarks/live.py --services 2000 --reps 1 --latency 0.02
    .venv/bin/python benchmarks/live.py --audit-arg=--max-chunk-size=500   # kubectl's paging: 500 a page

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
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from measure import run_once  # noqa: E402
from synth_cluster import build_services  # noqa: E402

from tests.kubeapi import Fault, KubeApiServer, RequestRecord  # noqa: E402
from tests.kubeapi.kubectl import find_kubectl  # noqa: E402


def _per_resource(log: list[RequestRecord], latency: float) -> dict[str, float]:
    """Listing time of each collection: from when its first page was asked (answer time minus the
    injected latency) to when its last page was answered."""
    first: dict[str, float] = {}
    last: dict[str, float] = defaultdict(float)
    for record in log:
        if record.path.count("/") < 3 or record.path in ("/api/v1", "/apis"):
            continue
        first.setdefault(record.path, record.at - latency)
        last[record.path] = record.at
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


@dataclass
class Run:
    wall: float
    slowest: float
    kubectl: float | None


def _one_run(server: KubeApiServer, audit: list[str], latency: float, kubectl: Path | None, config: Path,
             home: str, number: int) -> Run | None:
    """One audit (and one kubectl listing after it), printed as a row."""
    server.clear_requests()
    sample, tail = run_once(audit, cwd=ROOT, timeout=600)
    if sample.returncode not in (0, 1, 3) or "Traceback" in tail:
        print(f"run failed (exit {sample.returncode}): {tail.strip()[-500:]}")
        return None
    made = server.requests
    assert {r.method for r in made} == {"GET"}
    per = _per_resource(made, latency)
    slowest_path, slowest = max(per.items(), key=lambda kv: kv[1])
    pages = sum(1 for r in made if r.path == slowest_path)
    kubectl_s = _kubectl_seconds(kubectl, config, home) if kubectl else None
    versus = f"{kubectl_s:>9.2f} {sample.wall_s / kubectl_s:>11.2f}x" if kubectl_s else ""
    where = f"{slowest:.2f} s {slowest_path} ({pages} pages)"
    print(f"{number:>4} {sample.returncode:>4} {sample.wall_s:>7.2f} {len(made):>8} {sample.rss_kib / 1024:>8.1f} "
          f"{where:>36} {sample.wall_s / slowest:>11.2f}x {versus}")
    return Run(sample.wall_s, slowest, kubectl_s)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=1_000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added to every request")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--audit-arg", action="append", default=[], help="an extra `audit live` argument")
    parser.add_argument("--no-kubectl", action="store_true", help="skip the kubectl yardstick")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    items = build_services(args.services, args.namespaces, args.seed, with_namespaces=True)
    kinds: dict[str, int] = defaultdict(int)
    for item in items:
        kinds[item["kind"]] += 1
    kubectl = None if args.no_kubectl else (find_kubectl("1.32") or _on_path("kubectl"))
    print(f"cluster: {dict(kinds)}; latency {args.latency * 1000:.0f} ms per request; audit arguments: "
          f"{' '.join(args.audit_arg) or '(defaults)'}; load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs")
    runs: list[Run] = []
    with KubeApiServer(items, faults=[Fault.slow(args.latency, times=None)]) as server, \
            tempfile.TemporaryDirectory(prefix="audit-live-bench-") as tmp:
        config = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        audit = [sys.executable, "-m", "auditor", "live", "--kubeconfig", str(config), "--format", "json",
                 *args.audit_arg]
        print(f"{'run':>4} {'exit':>4} {'wall s':>7} {'requests':>8} {'peak MiB':>8} {'slowest list':>36} "
              f"{'wall/slowest':>12} {'kubectl s':>9} {'wall/kubectl':>12}")
        for rep in range(args.reps):
            run = _one_run(server, audit, args.latency, kubectl, config, tmp, rep + 1)
            if run is None:
                return 1
            runs.append(run)
    line = (f"median: wall {statistics.median(r.wall for r in runs):.2f} s, wall/slowest list "
            f"{statistics.median(r.wall / r.slowest for r in runs):.2f}x")
    if all(r.kubectl for r in runs):
        line += f", wall/kubectl get services {statistics.median(r.wall / (r.kubectl or 1) for r in runs):.2f}x"
    print(line)
    return 0


def _on_path(name: str) -> Path | None:
    found = shutil.which(name)
    return Path(found) if found else None


if __name__ == "__main__":
    sys.exit(main())
