"""Deterministic building blocks shared by the synthetic-cluster generators.

Everything random flows through one `Gen` (a seeded `random.Random`), and no value
depends on the wall clock, so the same seed always yields the same bytes.
"""

from __future__ import annotations

import base64
import json
import random
import time
import uuid
from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]

# Fixed "snapshot" instant: all timestamps are placed before it, never taken from now().
SNAPSHOT = 1_767_225_600  # 2026-01-01T00:00:00Z
DAY = 86_400

# Alphabet the Kubernetes name generators use (no vowels, no ambiguous characters).
_K8S_ALNUM = "bcdfghjklmnpqrstvwxz2456789"

WORDS = (  # noqa: SIM905 - a word list reads better as prose
    "payments checkout catalog search billing orders ledger invoices identity accounts "
    "notifications mailer reports analytics forecasting pricing inventory shipping "
    "warehouse recommendations reviews media thumbnails uploads webhooks scheduler "
    "gateway portal wiki chat tickets crm erp hr payroll timesheets lms research "
    "genomics imaging atlas mlflow dagster marquez redcap rstudio jupyter registry "
    "gitea sonar nexus vault keycloak minio loki tempo mimir grafana "
).split()


class Gen:
    """Seeded source of every random choice, plus id/version counters."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self._rv = 30_000_000 + self.rng.randrange(10_000_000)
        self._ip = 0

    # -- primitive choices -------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq: list[Any] | tuple[Any, ...]) -> Any:
        return seq[self.rng.randrange(len(seq))]

    def between(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    # -- identifiers ----------------------------------------------------------------
    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def rv(self) -> str:
        # List items carry unrelated, monotonically drawn resourceVersions.
        self._rv += self.rng.randint(1, 900)
        return str(self._rv)

    def hexstr(self, n: int) -> str:
        return format(self.rng.getrandbits(4 * n), f"0{n}x")

    def k8s_suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice(_K8S_ALNUM) for _ in range(n))

    def sha256(self) -> str:
        return "sha256:" + self.hexstr(64)

    # -- time ---------------------------------------------------------------------
    def past(self, min_days: float, max_days: float) -> int:
        return SNAPSHOT - int(self.rng.uniform(min_days, max_days) * DAY)

    def after(self, t: int, max_seconds: int) -> int:
        return min(SNAPSHOT - 1, t + self.rng.randint(1, max_seconds))

    # -- addresses ------------------------------------------------------------------
    def cluster_ip(self) -> str:
        # Sequential within 10.96.0.0/12 so ClusterIPs never collide.
        self._ip += self.rng.randint(1, 7)
        n = 11 + self._ip
        return f"10.{96 + (n >> 16) % 16}.{(n >> 8) & 255}.{n & 255}"

    # -- payloads -------------------------------------------------------------------
    def b64(self, nbytes: int) -> str:
        return base64.b64encode(self.rng.randbytes(nbytes)).decode()

    def pem(self, label: str, nbytes: int) -> str:
        body = self.b64(nbytes)
        lines = [body[i : i + 64] for i in range(0, len(body), 64)]
        return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"

    def words(self, n: int) -> str:
        return " ".join(self.pick(WORDS) for _ in range(n))


def ts(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def clone(obj: Any) -> Any:
    # JSON round-trip is several times faster than copy.deepcopy for plain data.
    return json.loads(json.dumps(obj))


def meta(
    g: Gen,
    name: str,
    ns: str | None,
    created: int,
    labels: Obj | None = None,
    annotations: Obj | None = None,
    generation: int | None = None,
    owner: Obj | None = None,
    generate_name: str | None = None,
    finalizers: list[str] | None = None,
) -> Obj:
    """Server-populated ObjectMeta, keys omitted exactly where the API omits them."""
    m: Obj = {"name": name, "uid": g.uid(), "resourceVersion": g.rv(), "creationTimestamp": ts(created)}
    if ns is not None:
        m["namespace"] = ns
    if labels:
        m["labels"] = labels
    if annotations:
        m["annotations"] = annotations
    if generation is not None:
        m["generation"] = generation
    if owner is not None:
        m["ownerReferences"] = [owner]
    if generate_name is not None:
        m["generateName"] = generate_name
    if finalizers:
        m["finalizers"] = finalizers
    return m


def owner_ref(api_version: str, kind: str, name: str, uid: str) -> Obj:
    return {
        "apiVersion": api_version,
        "blockOwnerDeletion": True,
        "controller": True,
        "kind": kind,
        "name": name,
        "uid": uid,
    }


def condition(ctype: str, status: str, t: int, reason: str, message: str = "", gen: int | None = None) -> Obj:
    c: Obj = {"lastTransitionTime": ts(t), "message": message, "reason": reason, "status": status, "type": ctype}
    if gen is not None:
        c["observedGeneration"] = gen
    return c


def last_applied(api_version: str, kind: str, m: Obj, body: Obj) -> str:
    """The `kubectl.kubernetes.io/last-applied-configuration` value: compact JSON + newline."""
    applied_meta: Obj = {"name": m["name"]}
    if "namespace" in m:
        applied_meta["namespace"] = m["namespace"]
    if m.get("labels"):
        applied_meta["labels"] = m["labels"]
    ann = {k: v for k, v in (m.get("annotations") or {}).items() if not k.startswith("kubectl.kubernetes.io/")}
    if ann:
        applied_meta["annotations"] = ann
    return compact({"apiVersion": api_version, "kind": kind, "metadata": applied_meta, **body}) + "\n"


def fields_v1(node: Any, depth: int = 0) -> Obj:
    """Approximate FieldsV1 encoding of a subtree (keys `f:`, list items `k:{...}`)."""
    if isinstance(node, dict):
        out: Obj = {".": {}} if depth > 1 else {}
        for k, v in node.items():
            out["f:" + k] = fields_v1(v, depth + 1)
        return out
    if isinstance(node, list) and node and isinstance(node[0], dict):
        out = {}
        for item in node:
            key = _list_key(item)
            if key is None:
                return {}  # atomic list: tracked as a whole
            out["k:" + compact(key)] = fields_v1(item, depth + 1)
        return out
    return {}


def _list_key(item: Obj) -> Obj | None:
    if "containerPort" in item:
        return {"containerPort": item["containerPort"], "protocol": item.get("protocol", "TCP")}
    if "port" in item and isinstance(item["port"], int):
        return {"port": item["port"], "protocol": item.get("protocol", "TCP")}
    if "name" in item:
        return {"name": item["name"]}
    if "type" in item:
        return {"type": item["type"]}
    return None


def managed_fields(g: Gen, t: int, entries: Iterable[tuple[str, str, str, Obj]]) -> list[Obj]:
    """entries: (manager, operation, subresource or "", subtree) -> managedFields list."""
    out = []
    for manager, op, sub, tree in entries:
        e: Obj = {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields_v1(tree), "manager": manager,
                  "operation": op, "time": ts(g.after(t, 3600))}
        if sub:
            e["subresource"] = sub
        out.append(e)
    return out


def decorate(g: Gen, obj: Obj, created: int, manager: str, body: Obj, p_mf: float,
             status_manager: str = "") -> None:
    """Adds last-applied (kubectl-managed objects) and, on a fraction, managedFields.

    `kubectl get -o json` hides managedFields by default since 1.21; dumps taken with
    --show-managed-fields or straight from the API keep them, hence only on some items.
    `body` is what the user applied (e.g. {"spec": spec-before-server-defaults}).
    """
    m = obj["metadata"]
    if manager == "kubectl-client-side-apply":
        m.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = last_applied(
            obj["apiVersion"], obj["kind"], m, body)
    if not g.chance(p_mf):
        return
    op = "Apply" if manager in ("kustomize-controller", "argocd-controller") else "Update"
    tree = {"metadata": {k: m[k] for k in ("labels", "annotations") if k in m}, **body}
    entries = [(manager, op, "", tree)]
    if status_manager and "status" in obj:
        entries.append((status_manager, "Update", "status", {"status": obj["status"]}))
    mf = managed_fields(g, created, entries)
    for e in mf:
        e["apiVersion"] = obj["apiVersion"]
    m["managedFields"] = mf
