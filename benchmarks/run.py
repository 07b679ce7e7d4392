#!/usr/bin/env python3
"""Benchmark the auditor against parse-only baselines on synthetic datasets.

    python benchmarks/run.py                      # 1k/10k/100k clusters, 10k Services, 6 MB tree
    python benchmarks/run.py --sizes 1000,10000 --reps 5 --json-out results.json
    python benchmarks/run.py --checkov            # also time checkov on the tree (own venv)

Datasets are cached in benchmarks/.cache/ (git-ignored), keyed by seed and by a hash of
the generator sources, so they are rebuilt only when the generator changes (or --regen).
Every measurement is a fresh subprocess; see measure.py. Numbers are raw medians.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import (
    Measurement,
    json_load_argv,
    measure,
    measure_pair,
    paired_difference,
    paired_ratio,
    warm_page_cache,
    yaml_load_argv,
)
from synth import fingerprint

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CACHE = BENCH / ".cache"
AUDITOR_MAIN = ROOT / "auditor" / "__main__.py"
SERVICES = (10_000, 1_000)  # the live-reader dataset: 10,000 Services across 1,000 namespaces

SHARED_GITOPS = ROOT.parent / "shared" / "gitops"  # public GitOps repositories, when present

# Targets (issue 15): (key, description, limit). Ratios are measured in the same run.
TARGETS = {
    "wall_100k": ("audit 100k kubectl-layout JSON wall <= 1.0x json.load", 1.0),
    "rss_100k": ("audit 100k kubectl-layout JSON peak RSS <= 1.3x json.load", 1.3),
    "wall_small": ("audit 100k small-object JSON wall <= 1.0x json.load", 1.0),
    "rss_small": ("audit 100k small-object JSON peak RSS <= 1.5x json.load", 1.5),
    "growth": ("audit time growth 10k -> 100k (kubectl layout) <= 11x", 11.0),
    "tree": ("synthetic GitOps tree wall <= 1.1x CSafeLoader parse", 1.1),
    "gitops": ("../shared/gitops wall <= 1.1x CSafeLoader parse", 1.1),
    "startup": ("audit of one Namespace <= 0.10 s above bare `python -c pass`", 0.10),
    "version": ("`python -m auditor --version` < 0.3 s", 0.3),
    "rules": ("`python -m auditor rules` < 0.3 s", 0.3),
}


@dataclass
class Dataset:
    label: str
    kind: str  # "json" or "tree"
    path: Path
    objects: int
    bytes: int
    gen_s: float | None  # None when reused from the cache


@dataclass
class Row:
    ds: Dataset
    parse: Measurement
    audit: Measurement | None


def _prune_stale(prefix: str, keep: str) -> None:
    """Drop cached datasets from older generator versions (they can weigh hundreds of MB)."""
    for p in CACHE.glob(prefix + "-*"):
        if keep not in p.name:
            if p.is_dir():
                subprocess.run(["rm", "-rf", "--", str(p)], check=False)
            else:
                p.unlink(missing_ok=True)


def ensure_dataset(label: str, kind: str, prefix: str, synth_args: list[str], ext: str, python: str,
                   regen: bool) -> Dataset:
    fp = fingerprint()
    path = CACHE / f"{prefix}-{fp}{ext}"
    meta = path.with_name(path.name + ".meta.json")
    gen_s = None
    if regen or not (path.exists() and meta.exists()):
        _prune_stale(prefix, fp)
        CACHE.mkdir(parents=True, exist_ok=True)
        print(f"generating {label} -> {path.relative_to(ROOT)} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        extra = ["--force"] if kind == "tree" else []
        subprocess.run([python, str(BENCH / "synth.py"), *synth_args, "-o", str(path), *extra], check=True)
        gen_s = time.perf_counter() - t0
    info = json.loads(meta.read_text())
    return Dataset(label, kind, path, info["objects"], info["bytes"], gen_s)


def datasets(a: argparse.Namespace) -> list[Dataset]:
    out = []
    for n in a.sizes:
        out.append(ensure_dataset(f"cluster-{n // 1000}k", "json", f"cluster-{n}-s{a.seed}",
                                  ["cluster", "--objects", str(n), "--seed", str(a.seed)], ".json", a.python, a.regen))
    if a.services:
        s, ns = SERVICES
        out.append(ensure_dataset(f"services-{s // 1000}k/{ns}ns", "json", f"services-{s}x{ns}-s{a.seed}",
                                  ["services", "--services", str(s), "--namespaces", str(ns), "--seed", str(a.seed)],
                                  ".json", a.python, a.regen))
    for n in a.small_sizes:  # small objects: Services only, as `kubectl get services -A -o json` lists them
        out.append(ensure_dataset(f"small-{n // 1000}k", "json", f"small-{n}-s{a.seed}",
                                  ["services", "--services", str(n), "--namespaces", str(max(10, n // 100)),
                                   "--seed", str(a.seed)], ".json", a.python, a.regen))
    if a.tree_mb > 0:
        out.append(ensure_dataset(f"tree-{a.tree_mb:g}MB", "tree", f"tree-{a.tree_mb:g}mb-s{a.seed}",
                                  ["tree", "--megabytes", str(a.tree_mb), "--seed", str(a.seed)], "", a.python,
                                  a.regen))
    if a.gitops and SHARED_GITOPS.is_dir():
        files = [p for p in SHARED_GITOPS.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()]
        out.append(Dataset("shared-gitops", "tree", SHARED_GITOPS, len(files), sum(p.stat().st_size for p in files),
                           None))
    return out


def auditor_argv(a: argparse.Namespace, path: Path) -> list[str]:
    return [a.python, "-m", "auditor", str(path), "--format", "json", *a.audit_arg]


def bench(ds: Dataset, a: argparse.Namespace, have_auditor: bool) -> Row:
    warm_page_cache(ds.path)
    print(f"measuring {ds.label} ...", file=sys.stderr, flush=True)
    argv = json_load_argv(a.python, ds.path) if ds.kind == "json" else yaml_load_argv(a.python, ds.path)
    label = "json.load" if ds.kind == "json" else "CSafeLoader"
    if not have_auditor:
        return Row(ds, measure(label, argv, a.reps, timeout=a.timeout), None)
    # In turn, baseline then audit, so that the ratio is taken pair by pair (load drifts on this machine).
    parse, audit = measure_pair((label, argv), ("audit", auditor_argv(a, ds.path)), a.reps, cwd=ROOT,
                                timeout=a.timeout, ok_codes=(None, a.audit_ok_codes))
    return Row(ds, parse, audit)


def gc_info(rows: list[Row], a: argparse.Namespace) -> Measurement | None:
    """json.load of the largest List with the cyclic GC off: shows how much of the baseline is GC."""
    big = max((r for r in rows if r.ds.kind == "json" and r.ds.label.startswith("cluster")),
              key=lambda r: r.ds.objects, default=None)
    if big is None or not a.gc_info:
        return None
    return measure(f"json.load, gc off ({big.ds.label})", json_load_argv(a.python, big.ds.path, gc=False), a.reps,
                   timeout=a.timeout)


def load_warning(loads: list[float]) -> str:
    """Other work on the machine skews every number; say so next to the results."""
    cpus = os.cpu_count() or 1
    worst = max(loads)
    return f"WARNING: 1-min load average up to {worst:.1f} on {cpus} CPUs; timings are unreliable" \
        if worst > cpus * 0.5 else ""


def _fmt(m: Measurement | None, what: str) -> str:
    if m is None:
        return ("auditor not installed" if not AUDITOR_MAIN.exists() else "skipped") if what == "wall" else ""
    if not m.ok:
        return "ERROR (below)" if what == "wall" else ""
    return f"{m.wall_s:.3f}" if what == "wall" else f"{m.rss_mib:.0f}"


def _ratio(audit: Measurement | None, base: Measurement, attr: str) -> float | None:
    if audit is None or not audit.ok or not base.ok:
        return None
    return paired_ratio(audit, base, attr)


def print_table(rows: list[Row]) -> None:
    head = ("dataset", "objects", "MB", "gen s", "parse", "parse s", "parse MiB", "audit s", "audit MiB",
            "time x", "mem x")
    lines = [head]
    for r in rows:
        tr, mr = _ratio(r.audit, r.parse, "wall_s"), _ratio(r.audit, r.parse, "rss_mib")
        lines.append((r.ds.label, f"{r.ds.objects:,}", f"{r.ds.bytes / 1e6:.1f}",
                      "cached" if r.ds.gen_s is None else f"{r.ds.gen_s:.1f}", r.parse.label,
                      _fmt(r.parse, "wall"), _fmt(r.parse, "rss"), _fmt(r.audit, "wall"), _fmt(r.audit, "rss"),
                      "" if tr is None else f"{tr:.2f}", "" if mr is None else f"{mr:.2f}"))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    for i, line in enumerate(lines):
        cells = zip(line, widths, strict=True)
        print("  ".join(str(c).ljust(w) if j < 5 else str(c).rjust(w) for j, (c, w) in enumerate(cells)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for r in rows:
        for m in (r.parse, r.audit):
            if m is not None and not m.ok:
                print(f"  {r.ds.label} {m.label}: {m.error}")


def compile_bytecode(python: str) -> None:
    """Compile the auditor's modules as `pip install` does, so that no run pays for compiling them.

    Where PYTHONDONTWRITEBYTECODE is set (as on the machines these figures were taken on), an
    editable install never writes its bytecode, and every run compiled all ~140 modules again:
    ~0.08 s of a one-object audit's start-up that an installed auditor does not pay.
    """
    subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "auditor"), str(ROOT / "rules")], check=True,
                   stdout=subprocess.DEVNULL)


def startup(a: argparse.Namespace) -> tuple[Measurement, Measurement]:
    """A one-object audit and the bare interpreter, in turn (the fixed cost of every run)."""
    one = CACHE / "one-namespace.yaml"
    CACHE.mkdir(exist_ok=True)
    one.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n", encoding="utf-8")
    return measure_pair(("audit one.yaml", [a.python, "-m", "auditor", str(one), "--format", "json"]),
                        ("python -c pass", [a.python, "-c", "pass"]), max(a.reps, 10), cwd=ROOT, warmup=True,
                        timeout=60, ok_codes=({0, 1, 3}, {0}))


def evaluate(rows: list[Row], version: Measurement | None, rules: Measurement | None = None,
             fixed: tuple[Measurement, Measurement] | None = None) -> list[tuple[str, str, str]]:
    """(description, PASS|FAIL|N/A, detail) for every target."""
    by = {r.ds.label: r for r in rows}
    res: list[tuple[str, str, str]] = []

    def verdict(key: str, value: float | None, unit: str = "x") -> None:
        desc, limit = TARGETS[key]
        if value is None:
            res.append((desc, "N/A", "no auditor result"))
        else:
            res.append((desc, "PASS" if value <= limit else "FAIL", f"{value:.2f}{unit} (limit {limit}{unit})"))

    big, mid = by.get("cluster-100k"), by.get("cluster-10k")
    verdict("wall_100k", _ratio(big.audit, big.parse, "wall_s") if big else None)
    verdict("rss_100k", _ratio(big.audit, big.parse, "rss_mib") if big else None)
    small = by.get("small-100k")
    verdict("wall_small", _ratio(small.audit, small.parse, "wall_s") if small else None)
    verdict("rss_small", _ratio(small.audit, small.parse, "rss_mib") if small else None)
    growth = None
    if big and mid and big.audit and mid.audit and big.audit.ok and mid.audit.ok:
        growth = big.audit.wall_s / mid.audit.wall_s
    verdict("growth", growth)
    tree = next((r for r in rows if r.ds.kind == "tree" and r.ds.label != "shared-gitops"), None)
    verdict("tree", _ratio(tree.audit, tree.parse, "wall_s") if tree else None)
    shared = by.get("shared-gitops")
    verdict("gitops", _ratio(shared.audit, shared.parse, "wall_s") if shared else None)
    above = paired_difference(*fixed) if fixed and fixed[0].ok and fixed[1].ok else None
    verdict("startup", above, " s")
    for key, startup in (("version", version), ("rules", rules)):
        verdict(key, startup.wall_s if startup and startup.ok else None, " s")
        if startup and startup.ok and startup.wall_s >= TARGETS[key][1]:
            res[-1] = (res[-1][0], "FAIL", res[-1][2])
    return res


def run_checkov(a: argparse.Namespace, tree: Row | None) -> dict[str, object]:
    """Optional comparison; checkov lives in its own venv and is never a project dependency."""
    if tree is None:
        return {"skipped": "no tree dataset"}
    venv = CACHE / "checkov-venv"
    exe = venv / "bin" / "checkov"
    if not exe.exists():
        print("installing checkov into benchmarks/.cache/checkov-venv (one-off) ...", file=sys.stderr, flush=True)
        log = CACHE / "checkov-install.log"
        try:
            with open(log, "w") as fh:  # pip is chatty; keep its output for when it fails
                subprocess.run([a.python, "-m", "venv", str(venv)], check=True, timeout=300, stdout=fh, stderr=fh)
                subprocess.run([str(venv / "bin" / "pip"), "install", "checkov"], check=True, timeout=1800,
                               stdout=fh, stderr=fh)
        except (subprocess.SubprocessError, OSError) as exc:
            subprocess.run(["rm", "-rf", "--", str(venv)], check=False)  # no half-installed venv next time
            return {"skipped": f"checkov installation failed ({exc}); see {log.relative_to(ROOT)}"}
    # checkov silently skips any path with a dot-directory (".cache"), so it gets a symlink;
    # --skip-download stops it calling api0.prismacloud.io (no network here: traceback + retries).
    with tempfile.TemporaryDirectory() as tmp:
        link = Path(tmp) / "tree"
        link.symlink_to(tree.ds.path.resolve(), target_is_directory=True)
        report = Path(tmp) / "checkov.json"
        argv = [str(exe), "-d", str(link), "--framework", "kubernetes", "--quiet", "--compact", "-o", "json",
                "--skip-download"]
        m = measure("checkov", argv, 1, timeout=a.timeout, env=os.environ | {"BC_SKIP_MAPPING": "TRUE"},
                    stdout=report)
        out: dict[str, object] = {"measurement": m.as_dict(), "resources": _checkov_resources(report)}
    if m.ok and tree.audit and tree.audit.ok:
        out["ratio_vs_auditor"] = m.wall_s / tree.audit.wall_s
    return out


def _checkov_resources(report: Path) -> int | None:
    """resource_count from checkov's JSON, to catch a run that scanned nothing."""
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        return None
    reports = data if isinstance(data, list) else [data]
    return sum(int(r.get("summary", r).get("resource_count", 0)) for r in reports)


def _checkov_line(extra: dict[str, object]) -> str:
    if "skipped" in extra:
        return f"skipped: {extra['skipped']}"
    m = extra["measurement"]
    assert isinstance(m, dict)
    line = f"{m['wall_s_median']:.1f} s, {m['rss_mib_median']:.0f} MiB, {extra['resources']} resources scanned"
    if m["error"]:
        return line + f" - ERROR ({m['error']})"
    if "ratio_vs_auditor" in extra:
        return line + f"; {extra['ratio_vs_auditor']:.1f}x the auditor's wall time"
    return line + " (no auditor result to compare)"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=[1_000, 10_000, 100_000],
                   help="object counts of the kubectl-layout Lists; empty to skip")
    p.add_argument("--small-sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=[10_000, 100_000],
                   help="object counts of the small-object (Services) Lists; empty to skip")
    p.add_argument("--tree-mb", type=float, default=6.0, help="0 to skip the YAML tree")
    p.add_argument("--no-gitops", dest="gitops", action="store_false", help="skip ../shared/gitops")
    p.add_argument("--no-services", dest="services", action="store_false", help="skip the 10k Services dataset")
    p.add_argument("--reps", type=int, default=3, help="runs per measurement (median reported)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--regen", action="store_true", help="regenerate datasets even if cached")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per run before it is killed")
    p.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    p.add_argument("--checkov", action="store_true", help="also time checkov on the tree (installs it in .cache)")
    p.add_argument("--json-out", type=Path, help="write all raw samples here")
    p.add_argument("--audit-arg", action="append", default=[],
                   help="extra argument for every audit run (repeat), e.g. --audit-arg=--max-file-bytes=2000000000")
    p.add_argument("--audit-ok-codes", type=lambda s: {int(x) for x in s.split(",")}, default={0, 1, 3},
                   help="exit codes meaning the audit ran (default 0,1,3: clean, findings, incomplete)")
    p.add_argument("--no-audit", dest="audit", action="store_false", help="baselines only (skip the auditor)")
    p.add_argument("--no-gc-info", dest="gc_info", action="store_false",
                   help="skip the informational json.load-with-gc-off run on the largest List")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    have_auditor = AUDITOR_MAIN.exists() and a.audit
    if have_auditor:
        compile_bytecode(a.python)
    loads = [os.getloadavg()[0]]
    rows = [bench(ds, a, have_auditor) for ds in datasets(a)]
    nogc = gc_info(rows, a)
    version = measure("--version", [a.python, "-m", "auditor", "--version"], max(a.reps, 5), cwd=ROOT,
                      warmup=True, timeout=60, ok_codes={0}) if have_auditor else None
    rules = measure("rules", [a.python, "-m", "auditor", "rules"], max(a.reps, 5), cwd=ROOT,
                    warmup=True, timeout=60, ok_codes={0}) if have_auditor else None
    fixed = startup(a) if have_auditor else None
    bare = fixed[1] if fixed else measure("python -c pass", [a.python, "-c", "pass"], max(a.reps, 5), warmup=True)
    print()
    print_table(rows)
    print(f"\ninterpreter start-up: {bare.wall_s:.3f} s; `-m auditor --version`: "
          + (f"{version.wall_s:.3f} s, {version.rss_mib:.0f} MiB" if version and version.ok
             else ("skipped" if not a.audit else "auditor not installed") if version is None
             else f"ERROR ({version.error})"))
    if rules is not None:
        print("`-m auditor rules`: " + (f"{rules.wall_s:.3f} s, {rules.rss_mib:.0f} MiB" if rules.ok
                                          else f"ERROR ({rules.error})"))
    if fixed is not None:
        print("audit of one Namespace: " + (f"{fixed[0].wall_s:.3f} s, {paired_difference(*fixed):.3f} s above the "
                                            "bare interpreter (in turn with it)" if fixed[0].ok
                                            else f"ERROR ({fixed[0].error})"))
    by = {r.ds.label: r for r in rows}
    for prefix in ("cluster", "small"):
        ten, hundred = by.get(f"{prefix}-10k"), by.get(f"{prefix}-100k")
        if ten and hundred and ten.parse.ok and hundred.parse.ok:
            print(f"{prefix}: json.load growth 10k -> 100k: {hundred.parse.wall_s / ten.parse.wall_s:.1f}x")
            if hundred.audit and hundred.audit.ok and ten.audit and ten.audit.ok:
                print(f"{prefix}: audit growth 10k -> 100k: {hundred.audit.wall_s / ten.audit.wall_s:.1f}x")
    if nogc is not None and nogc.ok:
        print(f"{nogc.label}: {nogc.wall_s:.3f} s, {nogc.rss_mib:.0f} MiB (info, not a target baseline)")
    loads.append(os.getloadavg()[0])
    if load_warning(loads):
        print(load_warning(loads))
    print("\ntargets:")
    results = evaluate(rows, version, rules, fixed)
    for desc, status, detail in results:
        print(f"  [{status:4}] {desc}: {detail}")
    extra = run_checkov(a, next((r for r in rows if r.ds.kind == "tree"), None)) if a.checkov else None
    if extra is not None:
        print("\ncheckov: " + _checkov_line(extra))
    if a.json_out:
        a.json_out.write_text(json.dumps({
            "rows": [{"dataset": r.ds.label, "path": str(r.ds.path), "objects": r.ds.objects, "bytes": r.ds.bytes,
                      "generation_s": r.ds.gen_s, "parse": r.parse.as_dict(),
                      "audit": r.audit.as_dict() if r.audit else None} for r in rows],
            "version": version.as_dict() if version else None, "rules": rules.as_dict() if rules else None,
            "interpreter_startup": bare.as_dict(), "one_object_audit": fixed[0].as_dict() if fixed else None,
            "json_load_gc_off": nogc.as_dict() if nogc else None, "load_average_1min": loads,
            "targets": [{"target": d, "status": s, "detail": x} for d, s, x in results], "checkov": extra},
            indent=2) + "\n")
    return 1 if any(s == "FAIL" for _, s, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
