#!/usr/bin/env python3
"""How much of an audit the exposure model costs, and how it grows (issue 12).

    python benchmarks/exposure_model.py                  # the 10k and 100k synthetic clusters, 3 runs each
    python benchmarks/exposure_model.py --sizes 10000 --reps 1

Uses the synthetic `kubectl get -A -o json` dumps of benchmarks/synth.py (cached in
benchmarks/.cache/ like run.py's). Each measurement is a fresh interpreter that reads the
dump, then times, in the same process: `exposure.build` alone, and `engine.run` with every
built-in rule (which builds the model once more, as every audit does). It prints, per size,
the model's time, its share of the audit (read + rules + model), the number of ways in, and
the model's growth from the smallest to the largest size against the growth of the input.
Numbers are medians of the runs; nothing here is asserted by the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def inner(path: str) -> dict[str, float]:
    """One measurement, in this (fresh) interpreter."""
    import datetime as dt
    import gc

    sys.path.insert(0, str(ROOT))
    from auditor import engine, exposure
    from auditor import exceptions_list as exceptions_module
    from auditor.cilium import config as cilium_config
    from auditor.posture import Posture
    from auditor.registry import load_rules
    from auditor.sources.files import read_paths

    start = time.perf_counter()
    snapshot = read_paths([path])
    read_s = time.perf_counter() - start
    cilium = cilium_config.resolve(snapshot)
    gc.collect()
    start = time.perf_counter()
    model = exposure.build(snapshot, cilium, Posture())
    model_s = time.perf_counter() - start
    rules = load_rules(plugins=False)
    exceptions = exceptions_module.load(exceptions_module.bundled_path())
    gc.collect()
    start = time.perf_counter()
    result = engine.run(snapshot, rules, exceptions, Posture(), as_of=dt.date(2026, 1, 1))
    engine_s = time.perf_counter() - start
    return {"objects": len(snapshot), "entrances": len(model.entrances), "read_s": read_s, "model_s": model_s,
            "engine_s": engine_s, "judged": len(result.exposures)}


def measure(path: Path, reps: int) -> dict[str, float]:
    runs = []
    for _ in range(reps):
        out = subprocess.run([sys.executable, __file__, "--inner", str(path)], capture_output=True, text=True,
                             check=False, cwd=ROOT)
        if out.returncode != 0:
            raise SystemExit(f"measurement of {path} failed:\n{out.stderr[-2000:]}")
        runs.append(json.loads(out.stdout))
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--regen", action="store_true")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(inner(args.inner)))
        return 0
    from run import ensure_dataset

    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        dataset = ensure_dataset(f"cluster-{n // 1000}k", "json", f"cluster-{n}-s{args.seed}",
                                 ["cluster", "--objects", str(n), "--seed", str(args.seed)], ".json", sys.executable,
                                 args.regen)
        rows.append((n, measure(dataset.path, args.reps)))
    print(f"{'objects':>9} {'ways in':>8} {'read s':>8} {'rules+model s':>14} {'model s':>8} {'model share':>12}")
    for _n, row in rows:
        audit = row["read_s"] + row["engine_s"]
        print(f"{int(row['objects']):>9,} {int(row['entrances']):>8,} {row['read_s']:>8.2f} {row['engine_s']:>14.2f} "
              f"{row['model_s']:>8.3f} {row['model_s'] / audit:>11.1%}")
    if len(rows) > 1:
        (small, first), (large, last) = rows[0], rows[-1]
        print(f"model growth {small:,} -> {large:,} objects: {last['model_s'] / first['model_s']:.1f}x "
              f"(input {last['objects'] / first['objects']:.1f}x); audit growth "
              f"{(last['read_s'] + last['engine_s']) / (first['read_s'] + first['engine_s']):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
