"""Discovery documents: /version, legacy (/api, /apis, /apis/G, /apis/G/V)
and aggregated (apidiscovery.k8s.io v2 and v2beta1).

kubectl >= 1.26 asks /api and /apis for `APIGroupDiscoveryList` first and
only falls back to walking every /apis/G/V when the response Content-Type
is not the aggregated one; the python client's DynamicClient walks the
legacy endpoints.  Both forms are built here from one registry so they can
never disagree.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

from .resources import STATUS_VERBS, ResourceRegistry, ResourceType

AGGREGATED_VERSIONS = ("v2", "v2beta1")


@dataclass(frozen=True)
class ServerVersion:
    git_version: str = "v1.32.3"
    git_commit: str = "32cc146f75aad04beaaa245a7157eb35063a9f99"
    build_date: str = "2025-03-11T19:52:21Z"
    go_version: str = "go1.23.6"
    platform: str = "linux/amd64"

    def body(self) -> dict[str, Any]:
        core = self.git_version.lstrip("v").split("-")[0].split("+")[0]
        major, minor = ([*core.split("."), "0", "0"])[:2]
        return {
            "major": major, "minor": minor, "gitVersion": self.git_version,
            "gitCommit": self.git_commit, "gitTreeState": "clean", "buildDate": self.build_date,
            "goVersion": self.go_version, "compiler": "gc", "platform": self.platform,
        }


def _storage_version_hash(rtype: ResourceType) -> str:
    # The real hash is of the storage group/version/kind; any stable 8-byte
    # digest of it has the same observable properties for clients.
    digest = hashlib.sha256(f"{rtype.group}/{rtype.versions[0]}/{rtype.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _legacy_resources(rtype: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rtype.plural, "singularName": rtype.singular, "namespaced": rtype.namespaced,
        "kind": rtype.kind, "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        main["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        main["categories"] = list(rtype.categories)
    main["storageVersionHash"] = _storage_version_hash(rtype)
    out = [main]
    for sub in rtype.subresources:
        out.append({"name": f"{rtype.plural}/{sub}", "singularName": "",
                    "namespaced": rtype.namespaced, "kind": rtype.kind,
                    "verbs": list(STATUS_VERBS)})
    return out


def resource_list(registry: ResourceRegistry, group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for rtype in registry.types_in(group, version):
        resources.extend(_legacy_resources(rtype))
    resources.sort(key=lambda r: r["name"])
    gv = version if not group else f"{group}/{version}"
    doc: dict[str, Any] = {"kind": "APIResourceList"}
    if group:
        # The legacy /api/v1 document has no apiVersion; group ones do.
        doc["apiVersion"] = "v1"
    doc.update({"groupVersion": gv, "resources": resources})
    return doc


def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": server_address}]}


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(registry: ResourceRegistry) -> dict[str, Any]:
    groups = [_group_entry(g, vs) for g, vs in registry.groups() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: ResourceRegistry, group: str) -> dict[str, Any] | None:
    for g, vs in registry.groups():
        if g == group and g:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(g, vs)}
    return None


def _aggregated_resource(rtype: ResourceType, version: str) -> dict[str, Any]:
    kind = {"group": rtype.group, "version": version, "kind": rtype.kind}
    res: dict[str, Any] = {
        "resource": rtype.plural, "responseKind": kind,
        "scope": "Namespaced" if rtype.namespaced else "Cluster",
        "singularResource": rtype.singular, "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        res["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        res["categories"] = list(rtype.categories)
    if rtype.subresources:
        res["subresources"] = [{"subresource": s, "responseKind": kind, "verbs": list(STATUS_VERBS)}
                               for s in rtype.subresources]
    return res


def aggregated(registry: ResourceRegistry, legacy: bool, disc_version: str) -> dict[str, Any]:
    """`APIGroupDiscoveryList` for /api (legacy=True) or /apis."""
    items = []
    for group, versions in registry.groups():
        if (group == "") != legacy:
            continue
        vdocs = []
        for v in versions:
            resources = sorted((_aggregated_resource(t, v) for t in registry.types_in(group, v)),
                               key=lambda r: r["resource"])
            vdocs.append({"version": v, "resources": resources, "freshness": "Current"})
        meta: dict[str, Any] = {"creationTimestamp": None}
        if group:
            meta = {"name": group, "creationTimestamp": None}
        items.append({"metadata": meta, "versions": vdocs})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{disc_version}",
            "metadata": {}, "items": items}


def aggregated_content_type(disc_version: str) -> str:
    return f"application/json;g=apidiscovery.k8s.io;v={disc_version};as=APIGroupDiscoveryList"
