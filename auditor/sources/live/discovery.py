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

A group whose discovery failed (an aggregated API down, a stale group, a 5xx,
or an answer that is not the document asked for: a `Status` or `{}` with
200, a list of the wrong kind, an entry without its name) is recorded in
`failed_groups`: its kinds are *unknown*, never "not served". When `/api`
or `/apis` itself is unusable, every group it would have named is failed.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from auditor.model import group_kind
from auditor.sources.live.client import JSON, ApiFailure, Client
from auditor.sources.live.safe_text import clean

AGGREGATED_ACCEPT = ",".join((
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
    JSON,
))


@dataclass(frozen=True)
class ApiResource:
    """A resource the API server serves, as discovery describes it."""

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
    """What the API server serves, by group and preferred version, and the groups it could not tell about."""

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


class Malformed(Exception):
    """A discovery document that is not the kind asked for, or not shaped like it."""


def describe_kind(document: Any) -> str:
    """What an answer is, for a message: `a Status`, `a JSON list`, `an object without kind`."""
    if isinstance(document, dict):
        kind = document.get("kind")
        return f"a {clean(kind[:80])}" if isinstance(kind, str) and kind else "an object without kind"
    return f"a JSON {type(document).__name__.replace('dict', 'object')}"


def expect_kind(document: Any, kinds: tuple[str, ...], what: str) -> dict[str, Any]:
    """`document` if it is an object of one of `kinds`, else `Malformed` naming what came instead."""
    if not isinstance(document, dict) or document.get("kind") not in kinds:
        raise Malformed(f"{what}: unexpected answer ({describe_kind(document)}, not {' or '.join(kinds)})")
    return document


def _list_field(document: dict[str, Any], key: str, what: str) -> list[Any]:
    value = document.get(key)
    if not isinstance(value, list):
        raise Malformed(f"{what}: unexpected answer ({key} is not a list)")
    return value


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Malformed(f"{what}: unexpected answer ({describe_kind(value)} where an object belongs)")
    return value


# --- aggregated discovery ------------------------------------------------------------


def _aggregated_resources(group: str, version: str, entries: list[Any], what: str) -> list[ApiResource]:
    out = []
    for index, raw in enumerate(entries):
        entry = _mapping(raw, f"{what} resources[{index}]")
        if not isinstance(entry.get("resource"), str) or not entry["resource"]:
            raise Malformed(f"{what}: unexpected answer (resources[{index}] has no resource name)")
        response_kind = entry.get("responseKind") or {}
        kind = response_kind.get("kind") if isinstance(response_kind, dict) else None
        if not isinstance(kind, str) or not kind:
            continue  # a resource with no object kind of its own: nothing to list
        verbs = entry.get("verbs") or ()
        out.append(ApiResource(group, version, entry["resource"], kind, entry.get("scope") == "Namespaced",
                               tuple(v for v in verbs if isinstance(v, str)) if isinstance(verbs, list) else ()))
    return out


def _read_aggregated(discovery: Discovery, document: dict[str, Any], path: str) -> None:
    what = f"discovery ({path})"
    expect_kind(document, ("APIGroupDiscoveryList",), what)
    items = _list_field(document, "items", what)
    if path == "/api" and not items:
        raise Malformed(f"{what}: unexpected answer (no API versions listed)")  # every server serves core/v1
    for index, raw in enumerate(items):
        item = _mapping(raw, f"{what} items[{index}]")
        metadata = item.get("metadata") or {}
        group = metadata.get("name") if isinstance(metadata, dict) else None
        group = group if isinstance(group, str) else ""
        if (path == "/apis") != bool(group):
            raise Malformed(f"{what}: unexpected answer (items[{index}] names group {group!r})")
        for position, raw_version in enumerate(_list_field(item, "versions", f"{what} items[{index}]")):
            version_entry = _mapping(raw_version, f"{what} items[{index}].versions[{position}]")
            version = version_entry.get("version")
            if not isinstance(version, str) or not version:
                raise Malformed(f"{what}: unexpected answer (items[{index}].versions[{position}] has no version)")
            if version_entry.get("freshness") == "Stale":
                discovery.failed_groups.setdefault(
                    group, f"discovery of {group or 'core'}/{version} is stale (its API service is unavailable)")
            resources = version_entry.get("resources") or []
            if not isinstance(resources, list):
                raise Malformed(f"{what}: unexpected answer (resources of {group or 'core'}/{version} is not a list)")
            _add(discovery, group, version, _aggregated_resources(group, version, resources,
                                                                  f"{what} {group or 'core'}/{version}"))


def _is_aggregated(answer_headers: Any, document: Any) -> bool:
    content_type = (answer_headers.get("Content-Type") or "") if answer_headers is not None else ""
    return "as=APIGroupDiscoveryList" in content_type.replace(" ", "") or (
        isinstance(document, dict) and document.get("kind") == "APIGroupDiscoveryList")


# --- legacy discovery -------------------------------------------------------------------


def _legacy_resources(group: str, version: str, document: Any) -> list[ApiResource]:
    gv = f"{group}/{version}" if group else version
    what = f"discovery of {group or 'core'}/{version}"
    expect_kind(document, ("APIResourceList",), what)
    if document.get("groupVersion") != gv:
        raise Malformed(f"{what}: unexpected answer (groupVersion {str(document.get('groupVersion'))[:80]!r})")
    out = []
    for index, raw in enumerate(_list_field(document, "resources", what)):
        entry = _mapping(raw, f"{what} resources[{index}]")
        name, kind = entry.get("name"), entry.get("kind")
        if not isinstance(name, str) or not name or not isinstance(kind, str) or not kind:
            raise Malformed(f"{what}: unexpected answer (resources[{index}] has no name or kind)")
        if "/" in name:
            continue  # subresources (services/status) are not listed
        verbs = entry.get("verbs") or ()
        out.append(ApiResource(group, version, name, kind, bool(entry.get("namespaced")),
                               tuple(v for v in verbs if isinstance(v, str)) if isinstance(verbs, list) else ()))
    return out


def _fetch_group_versions(client: Client, discovery: Discovery, jobs: list[tuple[str, list[str]]],
                          pool: ThreadPoolExecutor) -> None:
    """GET /api/VERSION and /apis/GROUP/VERSION for every (group, versions) job, concurrently."""
    pairs = [(group, version) for group, versions in jobs for version in versions]

    def fetch(pair: tuple[str, str]) -> tuple[list[ApiResource] | None, str | None]:
        group, version = pair
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            document, _ = client.get_json(path)
            return _legacy_resources(group, version, document), None
        except ApiFailure as failure:
            return None, f"discovery of {group or 'core'}/{version} failed: {failure.describe()}"
        except Malformed as malformed:
            return None, str(malformed)

    for (group, version), (resources, problem) in zip(pairs, pool.map(fetch, pairs), strict=True):
        if problem is not None or resources is None:
            discovery.failed_groups.setdefault(group, problem or "discovery failed")
        else:
            _add(discovery, group, version, resources)


def _legacy_core_versions(document: dict[str, Any]) -> list[str]:
    what = "discovery (/api)"
    expect_kind(document, ("APIVersions",), what)
    versions = _list_field(document, "versions", what)
    if not versions or not all(isinstance(v, str) and v for v in versions):
        raise Malformed(f"{what}: unexpected answer (no API versions listed)")
    return versions


def _legacy_group_jobs(document: dict[str, Any], needed_groups: set[str]) -> list[tuple[str, list[str]]]:
    what = "discovery (/apis)"
    expect_kind(document, ("APIGroupList",), what)
    jobs = []
    for index, raw in enumerate(_list_field(document, "groups", what)):
        entry = _mapping(raw, f"{what} groups[{index}]")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise Malformed(f"{what}: unexpected answer (groups[{index}] has no name)")
        if name not in needed_groups:
            continue
        preferred = (entry.get("preferredVersion") or {}).get("version") \
            if isinstance(entry.get("preferredVersion"), dict) else None
        listed = [v.get("version") for v in _list_field(entry, "versions", f"{what} {name}") if isinstance(v, dict)]
        versions: list[str] = [v for v in listed if isinstance(v, str) and v]
        if not versions:
            raise Malformed(f"{what}: unexpected answer (group {name} lists no versions)")
        if preferred in versions:  # the server lists the preferred version first; make sure
            versions.remove(preferred)
            versions.insert(0, preferred)
        jobs.append((name, versions))
    return jobs


RootAnswer = tuple[str, Any, Any, "ApiFailure | None"]


def fetch_roots(client: Client, pool: ThreadPoolExecutor) -> list[Future[RootAnswer]]:
    """Start GET /api and /apis (aggregated if the server offers it): they need nothing else,
    so the reader starts them alongside /version."""

    def root(path: str) -> RootAnswer:
        try:
            document, answer = client.get_json(path, accept=AGGREGATED_ACCEPT)
        except ApiFailure as failure:
            return path, None, None, failure
        return path, document, answer.headers, None

    return [pool.submit(root, path) for path in ("/api", "/apis")]


def discover(client: Client, needed_groups: set[str], pool: ThreadPoolExecutor,
             roots: list[Future[RootAnswer]] | None = None) -> Discovery:
    """What the server serves, for the groups in `needed_groups` (all groups when aggregated)."""
    discovery = Discovery()
    jobs: list[tuple[str, list[str]]] = []
    for future in roots if roots is not None else fetch_roots(client, pool):
        path, document, headers, failure = future.result()
        groups_here = {""} if path == "/api" else {g for g in needed_groups if g}
        try:
            if failure is not None:
                raise Malformed(f"discovery ({path}) failed: {failure.describe()}")
            if _is_aggregated(headers, document):
                partial = Discovery()
                _read_aggregated(partial, document, path)
                discovery.aggregated = True
                discovery.groups.update(partial.groups)
                discovery.failed_groups.update(partial.failed_groups)
            elif path == "/api":
                if "" in needed_groups:
                    jobs.append(("", _legacy_core_versions(document)))
            else:
                jobs.extend(_legacy_group_jobs(document, needed_groups))
        except Malformed as problem:
            for group in groups_here:
                discovery.failed_groups.setdefault(group, str(problem))
    _fetch_group_versions(client, discovery, jobs, pool)
    return discovery
