#!/usr/bin/env python3
"""Benchmark of `audit live`: a synthetic cluster served by the test API server with latency.

    .venv/bin/python benchmarks/live.py                       # 10,000 Services in 1,000 namespaces, 50 ms/request
    .venv/bin/python benchmarks/live.py --services 2000 --reps 1 --latency 0.02
    .venv/bin/python benchmarks/live.py --audit-arg=--max-chunk-size=500   # kubectl's paging: 500 a page
    .venv/bin/python benchmarks/live.py --tree /tmp/live-base      # another checkout's auditor (A/B)

The cluster is `synth.py services --with-namespaces` (benchmarks/synth_cluster.py), served by
tests/kubeapi with a latency fault on every request (discovery included). Each run is a fresh
`python -m auditor live` (through benchmarks/measure.py's launcher: wall time, CPU time and peak
RSS from `os.wait4`). Printed per run: wall time, CPU seconds (user + system), requests made (the
server's log), peak memory, when the first request reached the server (start-up: interpreter,
imports, kubeconfig), the tail (from the last answer to the process's end: the last page's
decoding, the rules, the report), and the slowest single resource's listing time (from the
server receiving its first page's request to its last page's answer, from the server's log),
which is the floor a concurrent reader can reach; a sequential one would pay the sum.

Yardsticks, each measured in the same run as the audit it is compared with, alternating:

* the slowest list of the same run (the issue 15 target: wall <= 1.2x it). Bigger pages
  make that list faster, so this ratio rises when the audit gets faster: read it with the
  wall time;
* the same audit of an empty cluster (same server, same latency, every kind listed, nothing
  in it): the fixed cost (start-up, discovery, one round trip per list, rules and report on
  nothing). `(wall - empty) / slowest` is what the cluster's size costs per slowest list;
* merely listing the slowest collection with the official client (benchmarks/live_list.py, a
  fresh process: `import kubernetes`, the kubeconfig, the audit's own page sizes, each page
  decoded with `json.loads`): `bare / slowest` is the floor the first ratio has for any
  reader built on this client, and `wall / bare` what the audit adds to merely listing (the
  live counterpart of the offline targets' `json.load`);
* `kubectl get services -A -o json` (kubectl's own paging, 500 a page), when kubectl is
  installed: what a user would otherwise run merely to list the biggest collection.

Bytecode: an installed copy has its modules compiled (pip writes the `.pyc` files), but an
editable checkout run with PYTHONDONTWRITEBYTECODE set compiles every module of the auditor on
every start (about 0.1 s here: the first request at 0.39-0.41 s instead of 0.30-0.31 s). So the
tree's `auditor` and `rules` are compiled first (`compileall`, into their `__pycache__`), unless
--no-compile.

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


def _per_resource(log: list[RequestRecord]) -> dict[str, float]:
    """Listing time of each collection: from when the server received its first page's request to
    when its last page was answered. (Earlier rounds took the first page's answer time minus the
    injected latency, which left out the time the server took to answer it: ~0.2 s for a first
    page of 5,000 Services.)"""
    first: dict[str, float] = {}
    last: dict[str, float] = defaultdict(float)
    for record in log:
        if record.path.count("/") < 3 or record.path in ("/api/v1", "/apis"):
            continue
        first[record.path] = min(first.get(record.path, record.received), record.received)
        last[record.path] = max(last[record.path], record.at)
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
class Audit:
    """One `audit live` process against one server: its times on the monotonic clock, from the fork."""

    wall: float
    cpu: float
    rss_mib: float
    requests: int
    first_request: float  # when the server received the first request
    last_answer: float  # when the last answer was ready to send
    per_resource: dict[str, float]
    pages: dict[str, int]


def _audit(server: KubeApiServer, argv: list[str], cwd: Path) -> Audit | None:
    """One process (an audit, or the bare listing) against `server`, from its request log; None if it failed."""
    server.clear_requests()
    sample, tail = run_once(argv, cwd=cwd, timeout=600)
    if sample.returncode not in (0, 1, 3) or "Traceback" in tail:
        print(f"run failed (exit {sample.returncode}): {tail.strip()[-500:]}")
        return None
    made = server.requests
    assert made and {r.method for r in made} == {"GET"}
    pages: dict[str, int] = defaultdict(int)
    for record in made:
        pages[record.path] += 1
    return Audit(sample.wall_s, sample.cpu_s, sample.rss_kib / 1024, len(made),
                 min(r.received for r in made) - sample.started_at, max(r.at for r in made) - sample.started_at,
                 _per_resource(made), dict(pages))


@dataclass
class Run:
    full: Audit
    empty: Audit
    slowest: float
    bare: Audit
    kubectl: float | None

    @property
    def ratio(self) -> float:
        return self.full.wall / self.slowest

    @property
    def listing_ratio(self) -> float:
        """(wall - fixed) / slowest: the audit's time beyond what an empty cluster costs, per slowest list."""
        return (self.full.wall - self.empty.wall) / self.slowest

    @property
    def floor_ratio(self) -> float:
        """Merely listing the slowest collection with the official client, per slowest list: the least
        `ratio` any reader built on that client can show."""
        return self.bare.wall / self.slowest


HEADER = (f"{'run':>3} {'wall s':>6} {'cpu s':>5} {'req':>4} {'MiB':>6} {'1st req':>7} {'tail':>5} "
          f"{'slowest list':>36} {'empty: wall':>11} {'cpu':>5} {'bare list':>9} {'wall/slowest':>12} "
          f"{'(wall-empty)/slowest':>20} {'bare/slowest':>12} {'wall/bare':>9} {'kubectl s':>9}")


def _one_run(servers: tuple[KubeApiServer, KubeApiServer], audits: tuple[list[str], list[str], list[str]],
             cwd: Path, kubectl: Path | None, config: Path, home: str, number: int) -> Run | None:
    """One audit of the cluster, one of the empty cluster (the fixed cost), one bare listing of the
    slowest collection with the official client, one kubectl listing; a row."""
    full = _audit(servers[0], audits[0], cwd)
    empty = _audit(servers[1], audits[1], cwd) if full else None
    if full is None or empty is None:
        return None
    slowest_path, slowest = max(full.per_resource.items(), key=lambda kv: kv[1])
    bare = _audit(servers[0], [*audits[2], "--path", slowest_path], cwd)
    if bare is None:
        return None
    kubectl_s = _kubectl_seconds(kubectl, config, home) if kubectl else None
    run = Run(full, empty, slowest, bare, kubectl_s)
    where = f"{slowest:.2f} s {slowest_path} ({full.pages[slowest_path]} pages)"
    print(f"{number:>3} {full.wall:>6.2f} {full.cpu:>5.2f} {full.requests:>4} {full.rss_mib:>6.1f} "
          f"{full.first_request:>7.3f} {full.wall - full.last_answer:>5.2f} {where:>36} {empty.wall:>11.2f} "
          f"{empty.cpu:>5.2f} {bare.wall:>9.2f} {run.ratio:>11.2f}x {run.listing_ratio:>19.2f}x "
          f"{run.floor_ratio:>11.2f}x {full.wall / bare.wall:>8.2f}x "
          f"{f'{kubectl_s:.2f}' if kubectl_s else '':>9}")
    return run


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=1_000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added to every request")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--audit-arg", action="append", default=[], help="an extra `audit live` argument")
    parser.add_argument("--no-kubectl", action="store_true", help="skip the kubectl yardstick")
    parser.add_argument("--tree", type=Path, default=ROOT,
                        help="the checkout whose auditor is measured (its .venv's python if it has one), "
                             "e.g. a worktree of main, to compare in the same run (default: this one)")
    parser.add_argument("--no-compile", action="store_true",
                        help="measure without first writing the tree's bytecode (see the module docstring)")
    return parser.parse_args(argv)


def _interpreter(tree: Path) -> str:
    own = tree / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def _compile(python: str, tree: Path) -> None:
    """Write the bytecode of the tree's packages, as `pip install` does for an installed copy."""
    subprocess.run([python, "-m", "compileall", "-q", "auditor", "rules"], cwd=tree, check=True,
                   stdout=subprocess.DEVNULL)


def _summary(runs: list[Run]) -> str:
    def median(values: list[float]) -> float:
        return statistics.median(values)

    line = (f"median: wall {median([r.full.wall for r in runs]):.2f} s "
            f"(cpu {median([r.full.cpu for r in runs]):.2f} s, "
            f"first request at {median([r.full.first_request for r in runs]):.3f} s, tail "
            f"{median([r.full.wall - r.full.last_answer for r in runs]):.2f} s), slowest list "
            f"{median([r.slowest for r in runs]):.2f} s, empty cluster {median([r.empty.wall for r in runs]):.2f} s "
            f"(cpu {median([r.empty.cpu for r in runs]):.2f} s); wall/slowest {median([r.ratio for r in runs]):.2f}x, "
            f"(wall-empty)/slowest {median([r.listing_ratio for r in runs]):.2f}x; bare list "
            f"{median([r.bare.wall for r in runs]):.2f} s (first request at "
            f"{median([r.bare.first_request for r in runs]):.3f} s, its list "
            f"{median([max(r.bare.per_resource.values()) for r in runs]):.2f} s, tail "
            f"{median([r.bare.wall - r.bare.last_answer for r in runs]):.2f} s), "
            f"bare/slowest {median([r.floor_ratio for r in runs]):.2f}x, "
            f"wall/bare {median([r.full.wall / r.bare.wall for r in runs]):.2f}x")
    if all(r.kubectl for r in runs):
        line += f", wall/kubectl get services {median([r.full.wall / (r.kubectl or 1) for r in runs]):.2f}x"
    return line


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    tree = args.tree.resolve()
    python = _interpreter(tree)
    if not args.no_compile:
        _compile(python, tree)
    items = build_services(args.services, args.namespaces, args.seed, with_namespaces=True)
    kinds: dict[str, int] = defaultdict(int)
    for item in items:
        kinds[item["kind"]] += 1
    kubectl = None if args.no_kubectl else (find_kubectl("1.32") or _on_path("kubectl"))
    print(f"cluster: {dict(kinds)}; latency {args.latency * 1000:.0f} ms per request; audit arguments: "
          f"{' '.join(args.audit_arg) or '(defaults)'}; tree {tree}; bytecode "
          f"{'as found' if args.no_compile else 'written first'}"
          f"{' (PYTHONDONTWRITEBYTECODE set)' if os.environ.get('PYTHONDONTWRITEBYTECODE') else ''}; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    runs: list[Run] = []
    faults = [Fault.slow(args.latency, times=None)]
    with KubeApiServer(items, faults=faults) as server, KubeApiServer([], faults=list(faults)) as empty, \
            tempfile.TemporaryDirectory(prefix="audit-live-bench-") as tmp:
        config = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        empty_config = empty.write_kubeconfig(Path(tmp) / "kubeconfig-empty")
        audits = tuple([python, "-m", "auditor", "live", "--kubeconfig", str(path), "--format", "json",
                        *args.audit_arg] for path in (config, empty_config))
        bare = [python, str(HERE / "live_list.py"), str(config), *_paging(args.audit_arg)]
        print(HEADER)
        for rep in range(args.reps):
            run = _one_run((server, empty), (audits[0], audits[1], bare), tree, kubectl, config, tmp, rep + 1)
            if run is None:
                return 1
            runs.append(run)
    print(_summary(runs))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


def _paging(audit_args: list[str]) -> list[str]:
    """The page sizes the audit is given (`--chunk-size`, `--max-chunk-size`), for the bare listing."""
    return [arg for arg in audit_args if arg.startswith(("--chunk-size=", "--max-chunk-size="))]


def _on_path(name: str) -> Path | None:
    found = shutil.which(name)
    return Path(found) if found else None


if __name__ == "__main__":
    sys.exit(main())
