"""`make_crd`: a CustomResourceDefinition as a real cluster returns it
(metadata the server sets, status.acceptedNames/conditions/storedVersions),
for registering custom kinds in tests."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .resources import version_priority

_UID_NS = uuid.UUID("6f1c3f4e-3b7a-4d38-9a57-2f0f3c1d9b11")


def stable_uid(*parts: str) -> str:
    """Deterministic, realistic-looking metadata.uid for test objects."""
    return str(uuid.uuid5(_UID_NS, "/".join(parts)))


def make_crd(group: str, kind: str, plural: str, versions: Sequence[str], *,
             storage: str | None = None, served: Sequence[str] | None = None,
             scope: str = "Namespaced", singular: str | None = None,
             short_names: Sequence[str] = (), categories: Sequence[str] = (),
             printer_columns: Mapping[str, Sequence[Mapping[str, Any]]] | Sequence[Mapping[str, Any]] = (),
             status_subresource: bool = True, stored_versions: Sequence[str] | None = None,
             created: str = "2024-05-02T09:14:27Z", resource_version: str = "1042") -> dict[str, Any]:
    """Build an apiextensions.k8s.io/v1 CRD.  `storage` defaults to the
    highest-priority version; `served` to all; `printer_columns` is either one
    list for every version or a {version: [columns]} mapping."""
    storage = storage or sorted(versions, key=version_priority)[0]
    served_set = set(versions if served is None else served)
    singular = singular or kind.lower()
    names: dict[str, Any] = {"categories": list(categories)} if categories else {}
    names.update({"kind": kind, "listKind": f"{kind}List", "plural": plural})
    if short_names:
        names["shortNames"] = list(short_names)
    names["singular"] = singular
    vdocs = []
    for v in versions:
        cols = printer_columns.get(v, ()) if isinstance(printer_columns, Mapping) else printer_columns
        vdoc: dict[str, Any] = {}
        if cols:
            vdoc["additionalPrinterColumns"] = [dict(c) for c in cols]
        vdoc.update({
            "name": v,
            "schema": {"openAPIV3Schema": {"type": "object",
                                           "x-kubernetes-preserve-unknown-fields": True}},
            "served": v in served_set,
            "storage": v == storage,
        })
        if status_subresource:
            vdoc["subresources"] = {"status": {}}
        vdocs.append(vdoc)
    name = f"{plural}.{group}"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "creationTimestamp": created, "generation": 1, "name": name,
            "resourceVersion": resource_version, "uid": stable_uid("crd", name),
        },
        "spec": {
            "conversion": {"strategy": "None"},
            "group": group,
            "names": names,
            "scope": scope,
            "versions": vdocs,
        },
        "status": {
            "acceptedNames": names,
            "conditions": [
                {"lastTransitionTime": created, "message": "no conflicts found",
                 "reason": "NoConflicts", "status": "True", "type": "NamesAccepted"},
                {"lastTransitionTime": created, "message": "the initial names have been accepted",
                 "reason": "InitialNamesAccepted", "status": "True", "type": "Established"},
            ],
            "storedVersions": list(stored_versions or [storage]),
        },
    }
