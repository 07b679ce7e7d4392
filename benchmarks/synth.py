#!/usr/bin/env python3
"""Deterministic synthetic datasets for the auditor benchmarks.

    python benchmarks/synth.py cluster --objects 100000 -o FILE.json [--seed 42] [--no-drift]
    python benchmarks/synth.py services --services 10000 --namespaces 1000 -o FILE.json [--api-list]
    python benchmarks/synth.py tree --megabytes 6 -o DIR [--seed 42]

Every mode also writes `<output>.meta.json` (counts per kind, bytes, the drift that was
injected, generator fingerprint). It sits next to the output, never inside a tree, so
the auditor does not read it as a manifest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_cluster import Drift, build_cluster, build_services

HERE = Path(__file__).resolve().parent
# `kubectl get ns,sa,cm,secret,svc,deploy,sts,ds,pod,netpol,cnp,ccnp,... -A -o json` groups items
# by resource type in the order asked, each group sorted by namespace then name (etcd key order).
KIND_ORDER = ("Namespace", "ServiceAccount", "ConfigMap", "Secret", "Service", "Deployment", "StatefulSet",
              "DaemonSet", "Pod", "NetworkPolicy", "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy",
              "CiliumLoadBalancerIPPool", "CiliumL2AnnouncementPolicy", "GatewayClass", "Gateway", "HTTPRoute")
_ITEM_INDENT = "\n" + " " * 8


def fingerprint() -> str:
    """Hash of the generator sources: a cached dataset is stale as soon as any of them changes."""
    h = hashlib.sha256()
    for p in sorted(HERE.glob("synth*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def _kubectl_json(obj: Any) -> str:
    # kubectl prints unstructured objects: Go map keys sorted, 4-space indent, UTF-8 kept as is.
    return json.dumps(obj, indent=4, sort_keys=True, ensure_ascii=False)


def _sort_key(obj: dict[str, Any]) -> tuple[int, str, str]:
    m = obj["metadata"]
    return KIND_ORDER.index(obj["kind"]), m.get("namespace", ""), m["name"]


def write_kubectl_list(items: Iterable[dict[str, Any]], out: Path) -> tuple[int, Counter[str]]:
    """Writes `{"apiVersion":"v1","items":[...],"kind":"List",...}` laid out as kubectl prints it.

    Items are serialised as they arrive and only their text is kept for the final sort, so
    peak memory is about the output size rather than the (much larger) dict graph.
    """
    kinds: Counter[str] = Counter()
    texts: list[tuple[tuple[int, str, str], str]] = []
    for obj in items:
        kinds[obj["kind"]] += 1
        texts.append((_sort_key(obj), _kubectl_json(obj).replace("\n", _ITEM_INDENT)))
    texts.sort(key=lambda kt: kt[0])
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write('{\n    "apiVersion": "v1",\n    "items": [')
        for i, (_, text) in enumerate(texts):
            f.write(("," if i else "") + _ITEM_INDENT + text)
        f.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
    os.replace(tmp, out)
    return out.stat().st_size, kinds


def write_api_list(items: list[dict[str, Any]], kind: str, out: Path) -> int:
    """What GET /api/v1/services returns: typed List, items without kind/apiVersion, compact JSON."""
    items.sort(key=_sort_key)
    for obj in items:
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
    body = {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {"resourceVersion": "48213377"}, "items": items}
    out.write_text(json.dumps(body, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")
    return out.stat().st_size


def write_meta(out: Path, info: dict[str, Any]) -> Path:
    path = out.with_name(out.name + ".meta.json")
    path.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def cmd_cluster(a: argparse.Namespace) -> dict[str, Any]:
    drift = Drift()
    size, kinds = write_kubectl_list(build_cluster(a.objects, a.seed, drift, inject=not a.no_drift), a.output)
    return {"mode": "cluster", "objects": sum(kinds.values()), "requested": a.objects, "bytes": size,
            "kinds": dict(sorted(kinds.items())), "drift": vars(drift), "namespaces": kinds["Namespace"]}


def cmd_services(a: argparse.Namespace) -> dict[str, Any]:
    items = build_services(a.services, a.namespaces, a.seed, a.with_namespaces)
    kinds = dict(sorted(Counter(o["kind"] for o in items).items()))
    if a.api_list:
        if a.with_namespaces:
            sys.exit("--api-list serves one resource type; drop --with-namespaces")
        size = write_api_list(items, "Service", a.output)
    else:
        size = write_kubectl_list(items, a.output)[0]
    return {"mode": "services", "objects": len(items), "bytes": size, "kinds": kinds,
            "namespaces": a.namespaces, "format": "api-list" if a.api_list else "kubectl-list"}


def cmd_tree(a: argparse.Namespace) -> dict[str, Any]:
    from synth_tree import build_tree  # imported lazily: only this mode needs PyYAML

    return {"mode": "tree", **build_tree(a.output, int(a.megabytes * 1_000_000), a.seed, a.force)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("cluster", help="kubectl get -A -o json style List of N objects")
    c.add_argument("--objects", type=int, default=10_000)
    c.add_argument("--no-drift", action="store_true", help="do not inject drift (kube-proxy, LB, missing deny)")
    s = sub.add_parser("services", help="exactly N Services across M namespaces (live-reader benchmark)")
    s.add_argument("--services", type=int, default=10_000)
    s.add_argument("--namespaces", type=int, default=1_000)
    s.add_argument("--with-namespaces", action="store_true", help="also emit the Namespace objects")
    s.add_argument("--api-list", action="store_true", help="emit a compact ServiceList as the API server serves it")
    t = sub.add_parser("tree", help="GitOps-like directory of multi-document YAML")
    t.add_argument("--megabytes", type=float, default=6.0)
    t.add_argument("--force", action="store_true", help="replace DIR if it exists")
    for sp in (c, s, t):
        sp.add_argument("-o", "--output", type=Path, required=True)
        sp.add_argument("--seed", type=int, default=42)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    t0 = time.perf_counter()
    info = {"cluster": cmd_cluster, "services": cmd_services, "tree": cmd_tree}[a.mode](a)
    info |= {"seed": a.seed, "fingerprint": fingerprint(), "generator": "benchmarks/synth.py"}
    meta_path = write_meta(a.output, info)
    took = time.perf_counter() - t0
    print(f"{a.mode}: {info['objects']:,} objects, {info['bytes'] / 1e6:.1f} MB -> {a.output} "
          f"({took:.1f}s; meta {meta_path.name})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
