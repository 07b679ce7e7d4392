"""The seam to the rest of the auditor: objects the offline reader read, split into one set per scope.

The offline reader (`auditor.sources.files`) turns files into `K8sObject`s
whose `source` is the file and the line of their document; a `TreeLayout` of
the same tree knows, for each such (file, line), where the object lands.
`place_objects` joins the two: for each scope (cluster, `(unreached)` or
`(whole tree)`), the objects as that scope's builds leave them — effective
namespace in `metadata.namespace`, a Namespace renamed as kustomize renames
it, RoleBinding subjects' namespaces set — each with its `Placement`, which
says where the namespace came from. A snapshot per scope can be built from
each list; findings then carry the scope's name as fleet findings carry
their cluster (auditor/fleet.py).

Objects of files that kustomize reads as patches or generator inputs are
dropped. Objects the layout does not know (a file today's loader refused
while the layout was read) are returned apart, so the caller decides where
they go, and nothing is silently lost.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from auditor.model import K8sObject
from auditor.sources.gitops.model import NamespaceReason, ObjectId, Placement, TreeLayout


class PlacedObject(NamedTuple):
    """An object of the reader with the placement the layout gives it (a named tuple: one per object and scope)."""

    object: K8sObject
    placement: Placement


@dataclass(frozen=True)
class PlacedObjects:
    """The reader's objects placed per scope, with those the layout does not place and those no cluster deploys."""

    by_scope: dict[str, list[PlacedObject]]
    unknown: list[K8sObject]  # not in the layout: the caller chooses their scope
    dropped: list[K8sObject]  # documents of patch and generator-input files: not objects of any cluster


def object_id(layout: TreeLayout, obj: K8sObject) -> ObjectId | None:
    """The layout's key for an object read from the same tree (None for standard input, or another tree)."""
    if obj.source is None or obj.source.line is None:
        return None
    relative = os.path.relpath(os.path.abspath(obj.source.path), os.path.abspath(layout.root))
    if relative.startswith(".."):
        return None
    return ObjectId(relative.replace(os.sep, "/"), obj.source.line)


def _with_placement(obj: K8sObject, placement: Placement) -> K8sObject:
    namespace = placement.namespace
    target = None if namespace.reason is NamespaceReason.CLUSTER_SCOPED else namespace.value
    if target == obj.namespace and placement.name == obj.name and not placement.edits:
        return obj
    raw: dict[str, Any] = dict(obj.raw)
    meta = dict(raw["metadata"])
    if target is None:
        meta.pop("namespace", None)
    else:
        meta["namespace"] = target
    meta["name"] = placement.name
    raw["metadata"] = meta
    for edit in placement.edits:
        _apply_edit(raw, edit.path, edit.value)
    return K8sObject(raw, obj.source)


def _apply_edit(raw: dict[str, Any], path: str, value: str) -> None:
    """Set one nested namespace field (`subjects[0].namespace`, `spec.service.namespace`) on a copy."""
    parts: list[str | int] = []
    for part in path.split("."):
        name, _, index = part.partition("[")
        parts.append(name)
        if index:
            parts.append(int(index.rstrip("]")))
    node: Any = raw
    for key in parts[:-1]:
        if isinstance(key, int):
            child = node[key] if isinstance(node, list) and 0 <= key < len(node) else None
        else:
            child = node.get(key) if isinstance(node, dict) else None
        if not isinstance(child, (dict, list)):
            return
        child = copy.copy(child)  # copy on the way down: the object read stays as it was
        node[key] = child
        node = child
    if isinstance(node, dict) and isinstance(parts[-1], str):
        node[parts[-1]] = value


def place_objects(objects: Iterable[K8sObject], layout: TreeLayout,
                  relative: Callable[[str], str] | None = None) -> PlacedObjects:
    """Each object once per distinct (scope, namespace, name) its placements give it.

    `relative(path)` turns a reader's path into the layout's (tree-relative,
    `/`); by default `os.path.relpath` against the layout's root (`object_id`).
    """
    by_scope: dict[str, list[PlacedObject]] = {scope: [] for scope in layout.scopes}
    unknown: list[K8sObject] = []
    dropped: list[K8sObject] = []
    non_resource, all_placements = layout.non_resource_files, layout.placements
    last_path, last_relative = "", ""  # a file's objects come one after another: its path is turned once
    for obj in objects:
        if relative is None:
            key = object_id(layout, obj)
        else:
            source = obj.source
            if source is not None and source.line:
                if source.path != last_path:
                    last_path, last_relative = source.path, relative(source.path)
                key = ObjectId(last_relative, source.line)
            else:
                key = None
        if key is not None and key.path in non_resource:
            dropped.append(obj)
            continue
        placements = all_placements.get(key) if key is not None else None
        if not placements:
            unknown.append(obj)
            continue
        if len(placements) == 1:  # the usual object, in one scope once: nothing to tell apart
            placement = placements[0]
            by_scope.setdefault(placement.scope, []).append(PlacedObject(_with_placement(obj, placement), placement))
            continue
        seen: set[tuple[str, str | None, str]] = set()
        for placement in placements:
            identity = (placement.scope, placement.namespace.value, placement.name)
            if identity in seen:
                continue
            seen.add(identity)
            by_scope.setdefault(placement.scope, []).append(PlacedObject(_with_placement(obj, placement), placement))
    return PlacedObjects(by_scope, unknown, dropped)
