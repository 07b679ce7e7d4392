"""API discovery: which group-kinds the server serves, at which versions, as which resources.

Aggregated discovery (`apidiscovery.k8s.io/v2`, GA in Kubernetes 1.30, and
v2beta1 before it) answers in two requests, `/api` and `/apis`. A server that
does not offer it answers the same requests with the legacy documents
(`APIVersions`, `APIGroupList`); the reader then fetches `/api/v1` and
`/apis/GROUP/VERSION` for the groups it needs only.

A kind is read at its *preferred* version: the first version of its group, in
the server's preference order, that serves it (a CiliumL2AnnouncementPolicy
lives only in cilium.io/v2alpha1 while the group prefers v2). The API server
converts custom resources to the version asked for, so every object of a kind
comes back in one version.

A group whose discovery failed (an aggregated API down, a stale group, a 5xx)
is recorded in `failed_groups`: its kinds are *unknown*, never "not served".
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from auditor.model import group_kind
from auditor.sources.live.client import JSON, ApiFailure, Client

AGGREGATED_ACCEPT = ",".join((
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
    JSON,
))


@dataclass(frozen=True)
class ApiResource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]

    @property
    def gk(self) -> str:
        return group_kind(self.group, self.kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """`services`, `ciliumloadbalancerippools.cilium.io`: how kubectl and RBAC name a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def collection_path(self) -> str:
        """The cluster-wide collection (namespaced kinds too: every namespace at once)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.plural}"


@dataclass
class Discovery:
    # group -> versions in the server's preference order, each with its resources
    groups: dict[str, list[tuple[str, list[ApiResource]]]] = field(default_factory=dict)
    failed_groups: dict[str, str] = field(default_factory=dict)
    aggregated: bool = False

    def lookup(self, gk: str) -> ApiResource | None:
        """The resource of `gk` at its preferred version, or None when not served."""
        group = gk.partition(".")[2]
        for _, resources in self.groups.get(group, ()):
            for resource in resources:
                if resource.gk == gk:
                    return resource
        return None

    def served_versions(self, gk: str) -> list[str]:
        group = gk.partition(".")[2]
        return [version for version, resources in self.groups.get(group, ())
                if any(resource.gk == gk for resource in resources)]

    def resources_of_group(self, group: str) -> list[ApiResource]:
        """Every kind of `group`, each once, at its preferred version."""
        seen: dict[str, ApiResource] = {}
        for _, resources in self.groups.get(group, ()):
            for resource in resources:
                seen.setdefault(resource.kind, resource)
        return list(seen.values())


def _add(discovery: Discovery, group: str, version: str, resources: list[ApiResource]) -> None:
    discovery.groups.setdefault(group, []).append((version, resources))


# --- aggregated discovery ------------------------------------------------------------


def _aggregated_resources(group: str, version: str, entries: list) -> list[ApiResource]:
    out = []
    for entry in entries or ():
        if not isinstance(entry, dict) or not isinstance(entry.get("resource"), str):
            continue
        response_kind = entry.get("responseKind") or {}
        kind = response_kind.get("kind") if isinstance(response_kind, dict) else None
        if not isinstance(kind, str) or not kind:
            continue
        out.append(ApiResource(group, version, entry["resource"], kind, entry.get("scope") == "Namespaced",
                               tuple(v for v in entry.get("verbs") or () if isinstance(v, str))))
    return out


def _read_aggregated(discovery: Discovery, document: dict) -> None:
    for item in document.get("items") or ():
        if not isinstance(item, dict):
            continue
        group = (item.get("metadata") or {}).get("name") or ""
        for version_entry in item.get("versions") or ():
            if not isinstance(version_entry, dict) or not isinstance(version_entry.get("version"), str):
                continue
            version = version_entry["version"]
            if version_entry.get("freshness") == "Stale":
                discovery.failed_groups.setdefault(
                    group, f"discovery of {group or 'core'}/{version} is stale (its API service is unavailable)")
            _add(discovery, group, version, _aggregated_resources(group, version, version_entry.get("resources")))


def _is_aggregated(answer_headers, document) -> bool:
    content_type = (answer_headers.get("Content-Type") or "") if answer_headers is not None else ""
    return "as=APIGroupDiscoveryList" in content_type.replace(" ", "") or (
        isinstance(document, dict) and document.get("kind") == "APIGroupDiscoveryList")


# --- legacy discovery -------------------------------------------------------------------


def _legacy_resources(group: str, version: str, document: dict) -> list[ApiResource]:
    out = []
    for entry in document.get("resources") or ():
        if not isinstance(entry, dict):
            continue
        name, kind = entry.get("name"), entry.get("kind")
        if not isinstance(name, str) or "/" in name or not isinstance(kind, str):
            continue  # subresources (services/status) are not listed
        out.append(ApiResource(group, version, name, kind, bool(entry.get("namespaced")),
                               tuple(v for v in entry.get("verbs") or () if isinstance(v, str))))
    return out


def _fetch_group_versions(client: Client, discovery: Discovery, jobs: list[tuple[str, list[str]]],
                          pool: ThreadPoolExecutor) -> None:
    """GET /api/VERSION and /apis/GROUP/VERSION for every (group, versions) job, concurrently."""
    pairs = [(group, version) for group, versions in jobs for version in versions]

    def fetch(pair: tuple[str, str]):
        group, version = pair
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            document, _ = client.get_json(path)
        except ApiFailure as failure:
            return None, f"discovery of {group or 'core'}/{version} failed: {failure.describe()}"
        if not isinstance(document, dict):
            return None, f"discovery of {group or 'core'}/{version}: unexpected answer"
        return _legacy_resources(group, version, document), None

    for (group, version), (resources, problem) in zip(pairs, pool.map(fetch, pairs)):
        if problem is not None:
            discovery.failed_groups.setdefault(group, problem)
        else:
            _add(discovery, group, version, resources)


def discover(client: Client, needed_groups: set[str], pool: ThreadPoolExecutor) -> Discovery:
    """What the server serves, for the groups in `needed_groups` (all groups when aggregated)."""
    discovery = Discovery()

    def root(path: str):
        try:
            document, answer = client.get_json(path, accept=AGGREGATED_ACCEPT)
        except ApiFailure as failure:
            return path, None, None, failure
        return path, document, answer.headers, None

    legacy: dict[str, dict] = {}
    for path, document, headers, failure in pool.map(root, ["/api", "/apis"]):
        groups_here = {""} if path == "/api" else {g for g in needed_groups if g}
        if failure is not None or not isinstance(document, dict):
            reason = (f"discovery ({path}) failed: {failure.describe()}" if failure is not None
                      else f"discovery ({path}): unexpected answer")
            for group in groups_here:
                discovery.failed_groups.setdefault(group, reason)
            continue
        if _is_aggregated(headers, document):
            discovery.aggregated = True
            _read_aggregated(discovery, document)
        else:
            legacy[path] = document
    jobs: list[tuple[str, list[str]]] = []
    if "/api" in legacy and "" in needed_groups:
        jobs.append(("", [v for v in legacy["/api"].get("versions") or () if isinstance(v, str)]))
    if "/apis" in legacy:
        for entry in legacy["/apis"].get("groups") or ():
            if not isinstance(entry, dict) or entry.get("name") not in needed_groups:
                continue
            preferred = (entry.get("preferredVersion") or {}).get("version")
            versions = [v.get("version") for v in entry.get("versions") or () if isinstance(v, dict)]
            versions = [v for v in versions if isinstance(v, str)]
            if preferred in versions:  # the server lists the preferred version first; make sure
                versions.remove(preferred)
                versions.insert(0, preferred)
            jobs.append((entry["name"], versions))
    _fetch_group_versions(client, discovery, jobs, pool)
    return discovery
