"""Server-side printing: `meta.k8s.io/v1` Table responses for kubectl.

kubectl's human output (`kubectl get svc`) asks for
`application/json;as=Table;v=v1;g=meta.k8s.io` and prints the cells it gets;
it needs each row's object (PartialObjectMetadata by default) to add the
NAMESPACE column under `-A`.  A few built-ins get their real printer columns
(services, namespaces, configmaps, secrets); other built-ins get Name/Age and
CRDs get Name plus their additionalPrinterColumns (or Age when none).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from .resources import PrinterColumn, ResourceType
from .store import partial_metadata

INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")


def human_duration(seconds: float) -> str:
    """Kubernetes' short age format (`5s`, `3m20s`, `2d4h`, `400d`, `3y`)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


def parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        return None


def _age(ts: str | None, now: datetime) -> str:
    t = parse_time(ts or "")
    return "<unknown>" if t is None else human_duration((now - t).total_seconds())


def _col(name: str, typ: str = "string", description: str = "", priority: int = 0,
         fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": typ, "format": fmt, "description": description,
            "priority": priority}


NAME_COL = _col("Name", fmt="name", description="Name must be unique within a namespace.")
AGE_COL = _col("Age", description="CreationTimestamp is a timestamp representing the server "
               "time when this object was created.")


def _service_external_ip(svc: Mapping[str, Any]) -> str:
    spec, status = svc.get("spec") or {}, svc.get("status") or {}
    typ = spec.get("type") or "ClusterIP"
    external = list(spec.get("externalIPs") or ())
    if typ in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if typ == "LoadBalancer":
        for ing in (status.get("loadBalancer") or {}).get("ingress") or ():
            if ing.get("ip"):
                external.append(ing["ip"])
            elif ing.get("hostname"):
                external.append(ing["hostname"])
        return ",".join(external) if external else "<pending>"
    if typ == "ExternalName":
        return spec.get("externalName") or ""
    return "<unknown>"


def _service_ports(svc: Mapping[str, Any]) -> str:
    parts = []
    for p in (svc.get("spec") or {}).get("ports") or ():
        proto = p.get("protocol") or "TCP"
        if p.get("nodePort"):
            parts.append(f"{p.get('port')}:{p['nodePort']}/{proto}")
        else:
            parts.append(f"{p.get('port')}/{proto}")
    return ",".join(parts) if parts else "<none>"


def _selector(svc: Mapping[str, Any]) -> str:
    sel = (svc.get("spec") or {}).get("selector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(sel.items())) or "<none>"


# (group, plural) -> (extra column definitions, cell function) for built-ins
# whose real printers show more than Name/Age.  Cells exclude Name.
_Printer = tuple[list[dict[str, Any]], Callable[[Mapping[str, Any], datetime], list[Any]]]
_BUILTIN_PRINTERS: dict[tuple[str, str], _Printer] = {
    ("", "services"): (
        [_col("Type"), _col("Cluster-IP"), _col("External-IP"), _col("Port(s)"), AGE_COL,
         _col("Selector", priority=1)],
        lambda o, now: [(o.get("spec") or {}).get("type") or "ClusterIP",
                        (o.get("spec") or {}).get("clusterIP") or "<none>",
                        _service_external_ip(o), _service_ports(o),
                        _age(o["metadata"].get("creationTimestamp"), now), _selector(o)],
    ),
    ("", "namespaces"): (
        [_col("Status"), AGE_COL],
        lambda o, now: [(o.get("status") or {}).get("phase") or "",
                        _age(o["metadata"].get("creationTimestamp"), now)],
    ),
    ("", "configmaps"): (
        [_col("Data", "integer"), AGE_COL],
        lambda o, now: [len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                        _age(o["metadata"].get("creationTimestamp"), now)],
    ),
    ("", "secrets"): (
        [_col("Type"), _col("Data", "integer"), AGE_COL],
        lambda o, now: [o.get("type") or "", len(o.get("data") or {}),
                        _age(o["metadata"].get("creationTimestamp"), now)],
    ),
}

_PATH_TOKEN = re.compile(
    r"\.([^.\[\]]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_]+)\s*==\s*[\"']([^\"']*)[\"']\)\]")


def simple_jsonpath(obj: object, path: str) -> object:
    """Evaluate the subset of JSONPath CRDs use in printer columns: fields,
    indexes and one-key equality filters (`.spec.blocks[0].cidr`,
    `.status.conditions[?(@.type=="Ready")].status`, first match only);
    anything else yields None (an empty cell, as for an unresolvable path)."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    pos, cur = 0, obj
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if not m:
            return None
        if m.group(1) is not None:
            cur = cur.get(m.group(1)) if isinstance(cur, Mapping) else None
        elif m.group(3) is not None:
            key, want = m.group(3), m.group(4)
            cur = next((e for e in cur if isinstance(e, Mapping) and str(e.get(key)) == want),
                       None) if isinstance(cur, list) else None
        else:
            idx = int(m.group(2))
            cur = cur[idx] if isinstance(cur, list) and idx < len(cur) else None
        if cur is None:
            return None
        pos = m.end()
    return cur


def _crd_cell(col: PrinterColumn, obj: Mapping[str, Any], now: datetime) -> object:
    value = simple_jsonpath(obj, col.json_path)
    if value is None:
        return None
    if col.type == "date":
        return _age(value if isinstance(value, str) else None, now)
    if col.type == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if col.type in ("number", "boolean"):
        return value
    return value if isinstance(value, str) else str(value)


def _columns(rtype: ResourceType, version: str) -> _Printer:
    printer = _BUILTIN_PRINTERS.get((rtype.group, rtype.plural))
    if printer is not None:
        return printer
    crd_cols: Sequence[PrinterColumn] = rtype.columns_for(version) if rtype.from_crd else ()
    if crd_cols:
        defs = [_col(c.name, c.type, c.description, c.priority, c.format) for c in crd_cols]
        return defs, lambda o, now: [_crd_cell(c, o, now) for c in crd_cols]
    return [AGE_COL], lambda o, now: [_age(o["metadata"].get("creationTimestamp"), now)]


def to_table(rtype: ResourceType, version: str, objects: Sequence[Mapping[str, Any]], include_object: str,
             now: datetime, table_version: str = "v1",
             list_meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`objects` are already rendered at `version` (kind/apiVersion set)."""
    extra_defs, cells_of = _columns(rtype, version)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [obj["metadata"].get("name", ""), *cells_of(obj, now)]}
        if include_object == "Metadata":
            row["object"] = partial_metadata(obj, f"meta.k8s.io/{table_version}")
        elif include_object == "Object":
            row["object"] = obj
        rows.append(row)
    table: dict[str, Any] = {"kind": "Table", "apiVersion": f"meta.k8s.io/{table_version}"}
    if list_meta is not None:
        table["metadata"] = dict(list_meta)
    else:
        table["metadata"] = {"resourceVersion": objects[0]["metadata"].get("resourceVersion", "")
                             if objects else ""}
    table["columnDefinitions"] = [NAME_COL, *extra_defs]
    table["rows"] = rows
    return table
