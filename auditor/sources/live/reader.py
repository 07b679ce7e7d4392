"""Lists what the selected rules read from one cluster, into a `Snapshot` with coverage.

Steps (docs/live.md), each a method of `ClusterReader`:

1. `_contact`: `GET /version` (the cluster answers at all, else
   `ClusterError`, exit 3), with the two discovery roots (`/api`, `/apis`)
   and the early lists asked at the same time: the first of the kinds that
   are usually the biggest, at the built-in resource every release serves
   them at (`KNOWN_RESOURCES`, `concurrency` minus `DISCOVERY_WORKERS` of them).
2. `_plan`: discovery (`discovery.py`) gives the resource, scope and
   preferred version of every group-kind the rules read; each kind is either
   planned for listing or ends here as `not-served` or `failed`.
3. `_start`: every planned kind is listed cluster-wide, concurrently (a
   thread pool of `concurrency` workers), the kinds that are usually the
   biggest first (an early list is kept when discovery named the very
   resource it lists, else left unused), each in pages (`limit`/`continue`):
   the first page holds `chunk_size` objects, later ones are sized to the
   collection (`_next_limit`), each asked for from the previous page's head,
   before that page is parsed (`list_head`, `_list_once`). Lists are bounded:
   at most `max_pages` pages, a continue token seen twice ends the list, and
   every answer is bounded in time and size (`client.py`). A continue token
   that expired (410 Gone) restarts the list from scratch; after
   `max_relists - 1` expirations the last re-list is unpaginated, which cannot
   expire. The CRDs the rules need are read by name.
4. `_collect`: each kind ends with a coverage state: `listed`
   (authoritative, possibly empty), `not-served` (discovery does not know the
   kind: its CRD is not installed, so there are none) or `failed`
   (forbidden, timed out, 5xx after retries, an answer that is not the list
   asked for, over a limit, or its group's discovery failed: unknown, and the
   rules reading it report `error` naming the resource and the reason).
5. `_snapshot`: the objects, the coverage and the served versions.

An answer is used only when it is what was asked for: a list of the kind's
list kind and apiVersion with an `items` array of objects that each have a
name. Anything else (a `Status` or `{}` with 200, another kind's list) fails
that kind, naming what came instead.

Secrets are listed as `PartialObjectMetadataList` only: the payload never
crosses the wire, and `metadata.managedFields` and the last-applied annotation
(which name or hold the keys) are dropped on arrival.

CustomResourceDefinitions are big (a Cilium or Prometheus bundle is megabytes),
so they are not listed: the reader GETs by name only the CRDs of the custom
kinds the rules read (`ciliumloadbalancerippools.cilium.io` for
lb-pool-v2alpha1's storedVersions...) and every CRD of the Gateway API group,
whose whole bundle gateway-api-crd-bundle judges. Names come from discovery,
so a CRD that serves no version is not read.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from auditor import kinds
from auditor.errors import ClusterError
from auditor.model import K8sObject, Source, as_mapping
from auditor.snapshot import Coverage, CoverageState, Snapshot
from auditor.sources.live.client import (
    Answer,
    ApiFailure,
    Client,
    RetryPolicy,
    TransportFailure,
    UnusableAnswer,
    check_answer,
)
from auditor.sources.live.discovery import ApiResource, Discovery, RootAnswer, describe_kind, discover, fetch_roots
from auditor.sources.live.progress import Progress
from auditor.sources.live.safe_text import clean
from auditor.sources.live.target import Target

PARTIAL_METADATA_ACCEPT = ",".join((
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io",
))
PARTIAL_METADATA_VERSIONS = ("meta.k8s.io/v1", "meta.k8s.io/v1beta1")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# Kinds read as metadata only (their payload is never requested).
METADATA_ONLY = frozenset({kinds.SECRET})
# Groups whose every CRD is read when CRDs are read (see the module docstring).
CRD_BUNDLE_GROUPS = ("gateway.networking.k8s.io",)
# Groups Kubernetes itself serves: their kinds have no CRD to read.
BUILTIN_GROUPS = frozenset({
    "", "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "apps",
    "authentication.k8s.io", "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
    "coordination.k8s.io", "discovery.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io", "networking.k8s.io", "node.k8s.io", "policy", "rbac.authorization.k8s.io",
    "resource.k8s.io", "scheduling.k8s.io", "storage.k8s.io", "storagemigration.k8s.io",
})
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# The kinds that are usually the biggest collections of a cluster, biggest
# first: they are started first, so the slowest list starts at once and the
# small ones fill the other workers around it. Unlisted kinds follow, by name.
LIKELY_LARGEST = (kinds.POD, kinds.REPLICASET, kinds.SECRET, kinds.CONFIGMAP, kinds.SERVICE, kinds.ROLE_BINDING,
                  kinds.SERVICE_ACCOUNT, kinds.NAMESPACE, kinds.JOB, kinds.DEPLOYMENT, kinds.NETWORK_POLICY,
                  kinds.CILIUM_NETWORK_POLICY, kinds.ROLE, kinds.NODE)
# A later page aims at this share of --max-response-size, from the bytes per
# object the pages so far took: well inside the limit when objects vary.
PAGE_BYTES_SHARE = 4


def _builtin(group: str, plural: str, kind: str, namespaced: bool = True) -> ApiResource:
    return ApiResource(group, "v1", plural, kind, namespaced, ("list",))


# The likely largest built-in kinds' resources: v1 under these names in every Kubernetes release
# this reads (their last other versions, extensions/v1beta1 and apps/v1beta1, v1beta2 Deployments,
# ReplicaSets and NetworkPolicies, and rbac.authorization.k8s.io/v1beta1, stopped being served in
# 1.16 and 1.22: https://kubernetes.io/docs/reference/using-api/deprecation-guide/). The first of
# them are listed before discovery has answered (`_start_early`), and kept only when discovery
# names the very same resource (kubectl, similarly, lists from its cached discovery).
KNOWN_RESOURCES = {resource.gk: resource for resource in (
    _builtin("", "pods", "Pod"), _builtin("apps", "replicasets", "ReplicaSet"), _builtin("", "secrets", "Secret"),
    _builtin("", "configmaps", "ConfigMap"), _builtin("", "services", "Service"),
    _builtin("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    _builtin("", "serviceaccounts", "ServiceAccount"), _builtin("", "namespaces", "Namespace", namespaced=False),
    _builtin("batch", "jobs", "Job"), _builtin("apps", "deployments", "Deployment"),
    _builtin("networking.k8s.io", "networkpolicies", "NetworkPolicy"),
    _builtin("rbac.authorization.k8s.io", "roles", "Role"), _builtin("", "nodes", "Node", namespaced=False),
)}
# Workers left to /version, the discovery roots and legacy discovery's group requests while the
# early lists run: discovery never waits behind a list.
DISCOVERY_WORKERS = 3


@dataclass(frozen=True)
class ReadOptions:
    """How a cluster is read: concurrency, page sizes, and the bounds on pages, re-lists and each request."""

    concurrency: int = 8
    chunk_size: int = 500  # objects in a list's first page (0: unpaginated)
    max_chunk_size: int = 5000  # objects in any later page
    max_pages: int = 1000  # pages of one list, re-lists included
    max_relists: int = 3
    policy: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass
class ReadResult:
    """A cluster read: its snapshot, the requests made, and each kind's listing time and object count."""

    snapshot: Snapshot
    requests: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # listing time per kind
    counts: dict[str, int] = field(default_factory=dict)


def cluster_source(target: Target) -> Source:
    return Source(f"cluster:{target.context}")


def redact_secret(metadata: dict[str, Any]) -> dict[str, Any]:
    """Secret metadata without what names or holds its keys."""
    out = {k: v for k, v in metadata.items() if k != "managedFields"}
    annotations = out.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        out["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return out


def _as_object(item: dict[str, Any], resource: ApiResource, metadata_only: bool) -> dict[str, Any]:
    if metadata_only:
        metadata = item.get("metadata")
        return {"apiVersion": resource.api_version, "kind": resource.kind,
                "metadata": redact_secret(metadata) if isinstance(metadata, dict) else {}}
    # List items of built-in kinds carry no kind/apiVersion (the list has them);
    # custom resources carry the version asked for. Either way the list's win.
    obj = {"apiVersion": resource.api_version, "kind": resource.kind}
    for key, value in item.items():
        if key not in ("apiVersion", "kind"):
            obj[key] = value
    return obj


class _ListFailed(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _PageFailed(Exception):
    """A page's request failed; how far the list had got decides what happens next."""

    def __init__(self, failure: ApiFailure, had_token: bool, pages: int) -> None:
        super().__init__(failure.describe())
        self.failure = failure
        self.had_token = had_token
        self.pages = pages


def _failure_reason(gk: str, verb: str, what: str, failure: ApiFailure) -> str:
    return f"{gk}: {verb} {what} failed: {failure.describe()}"


def _coverage(state: CoverageState, reason: str = "") -> Coverage:
    return Coverage(state, clean(reason)) if reason else Coverage(state)


def _check_list(document: Any, resource: ApiResource, metadata_only: bool, path: str) -> dict[str, Any]:
    """`document` if it is the list asked for, else `UnusableAnswer` naming what came instead."""
    versions: tuple[str, ...]
    if metadata_only:
        expected, versions = "PartialObjectMetadataList", PARTIAL_METADATA_VERSIONS
    else:
        expected, versions = f"{resource.kind}List", (resource.api_version,)
    kind = document.get("kind") if isinstance(document, dict) else None
    custom_list = (resource.group not in BUILTIN_GROUPS and isinstance(kind, str) and kind.endswith("List")
                   and kind != "List")  # a CRD may name its list kind (spec.names.listKind)
    if not isinstance(document, dict) or (kind != expected and not (custom_list and not metadata_only)):
        if metadata_only and isinstance(kind, str) and kind.endswith("List"):
            raise UnusableAnswer(path, f"{describe_kind(document)}, not {expected}: the server did not answer "
                                       "metadata only; Secrets are never read in full")
        raise UnusableAnswer(path, f"{describe_kind(document)}, not {expected}")
    if document.get("apiVersion") not in versions:
        raise UnusableAnswer(path, f"a {expected} of apiVersion {clean(str(document.get('apiVersion'))[:80])!r}, "
                                   f"not {' or '.join(versions)}")
    items = document.get("items")
    if not isinstance(items, list):
        raise UnusableAnswer(path, f"a {expected} without an items list")
    for index, item in enumerate(items):
        problem = "not an object" if not isinstance(item, dict) else _item_problem(item)
        if problem is not None:
            raise UnusableAnswer(path, f"items[{index}] of the {expected} is {problem}")
    return document


def _item_problem(item: dict[str, Any]) -> str | None:
    metadata = item.get("metadata")
    if not isinstance(metadata, dict):
        return "without metadata"
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        return "without metadata.name"
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        return "with a metadata.namespace that is not a string"
    return None


@dataclass
class _Page:
    """What the next request needs from a page (read before the page is checked), and the
    page's checked objects to come (`_checked_objects`, run while the next page is fetched)."""

    token: str | None
    remaining: int | None
    count: int
    body_bytes: int
    objects: Future[list[K8sObject]]


@dataclass(frozen=True)
class _Head:
    """A List's `metadata.continue` and `remainingItemCount`, read from the bytes before its items."""

    token: str | None
    remaining: int | None


@dataclass
class _Early:
    """The next page's request, sent from a page's head before the page was parsed."""

    query: list[tuple[str, str]]
    answer: Future[Answer]


_ITEMS = b'"items"'
# The head of a List (kind, apiVersion, metadata) is a few hundred bytes; past this, no head is looked for.
HEAD_BYTES = 64 * 1024


def list_head(body: bytes) -> _Head | None:
    """The continue token and remaining count of a List, from the members before its `items`, or None.

    The API server writes a built-in kind's List `metadata` first and `items` last (Go's
    encoding/json writes a struct's fields in their order, and every list type declares
    `TypeMeta`, `ListMeta` then `Items`, e.g. `ServiceList` in
    https://github.com/kubernetes/api/blob/master/core/v1/types.go), so the next page can be
    asked for before the page itself is parsed. (A custom resource's List may come with its keys
    sorted, `items` before `metadata`: then there is no head, and nothing is asked early.)

    The bytes up to the first `"items"` are closed with `"items":null}` and parsed: that is a
    JSON object only when the cut fell between two members of the top-level object. Anything
    else (no `"items"` near the start, metadata after the items, a cut inside a string or a
    nested object, bytes that are not UTF-8) is None, and the page is parsed first as before.
    What this returns is a guess to be confirmed: the caller compares it with the parsed
    document (a duplicate key, for one, keeps its last value).
    """
    cut = body.find(_ITEMS, 0, HEAD_BYTES)
    if cut < 0:
        return None
    try:
        head = json.loads(body[:cut] + b'"items":null}')
    except (ValueError, RecursionError):
        return None
    metadata = head.get("metadata") if isinstance(head, dict) else None
    if not isinstance(metadata, dict):
        return None
    return _Head(*_continuation(metadata))


def _abandon(early: _Early | None) -> None:
    """Leave an early request to itself: cancelled if not started, its answer (or failure) never used."""
    if early is not None:
        early.answer.cancel()


def _continuation(metadata: Any) -> tuple[str | None, int | None]:
    """(continue token, remainingItemCount) of a List's metadata, each None when absent or unusable."""
    metadata = metadata if isinstance(metadata, dict) else {}
    token, remaining = metadata.get("continue"), metadata.get("remainingItemCount")
    return (token if isinstance(token, str) and token else None,
            remaining if isinstance(remaining, int) and remaining >= 0 else None)


@dataclass
class _Plan:
    """What discovery says about the kinds the rules read."""

    coverage: dict[str, Coverage] = field(default_factory=dict)
    served: dict[str, list[str]] = field(default_factory=dict)
    lists: list[tuple[str, ApiResource]] = field(default_factory=list)
    crd_names: list[str] = field(default_factory=list)
    crd_read: bool = False


@dataclass
class _Listed:
    """One kind listed: its objects, or the problem that left it unread."""

    gk: str
    objects: list[K8sObject] | None
    problem: str | None
    seconds: float = 0.0


@dataclass
class _EarlyList:
    """A list started before discovery answered, at the resource `KNOWN_RESOURCES` names."""

    resource: ApiResource
    listed: Future[_Listed]
    unused: threading.Event  # set when discovery did not confirm it: it stops before its next page

    def abandon(self) -> None:
        self.unused.set()
        self.listed.cancel()


def _same_resource(a: ApiResource, b: ApiResource) -> bool:
    """Whether listing `a` is listing `b`: the same request, and the same kind and apiVersion asked for."""
    return (a.group, a.version, a.plural, a.kind) == (b.group, b.version, b.plural, b.kind)


# What `ClusterReader.read` runs while the first answers are awaited: None, or the kinds to read.
Meanwhile = Callable[[], "Iterable[str] | None"]
# A CRD read by name: the CRD (None when it is gone), or why it could not be read.
_Got = tuple["dict[str, Any] | None", "str | None"]


def _priority(gk: str) -> tuple[int, str]:
    return (LIKELY_LARGEST.index(gk) if gk in LIKELY_LARGEST else len(LIKELY_LARGEST), gk)


class ClusterReader:
    """Reads one target. `read()` returns a `ReadResult` or raises `ClusterError`."""

    def __init__(self, target: Target, gks: list[str] | set[str], options: ReadOptions = ReadOptions(),
                 progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.target = target
        self.gks = sorted(set(gks))
        self.options = options
        self.progress = progress or Progress(enabled=False)
        self.client = Client(target.configuration, options.policy, sleep=sleep)
        self.source = cluster_source(target)
        self._abandoned = threading.Event()  # the read failed: every list stops before its next page
        self.seconds: dict[str, float] = {}
        # Checks pages while their lists fetch the next one (CPU work: one thread is enough).
        self._checker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"audit-check-{target.context}")
        # Sends a list's next request while its lister parses the page (`_ask_early`): at most one
        # for each list in flight, and as many again for requests abandoned while still running.
        self._fetcher = ThreadPoolExecutor(max_workers=2 * max(1, options.concurrency),
                                           thread_name_prefix=f"audit-next-{target.context}")

    # -- 1. the cluster itself --------------------------------------------------------
    def _contact(self, pool: ThreadPoolExecutor) -> tuple[Future[str], list[Future[RootAnswer]], dict[str, _EarlyList]]:
        """The server's version, the discovery roots and the early lists, all asked at once (every
        request from the pool: no more than `concurrency` are ever in flight)."""
        roots = fetch_roots(self.client, pool)
        version = pool.submit(self._server_version)
        return version, roots, self._start_early(pool)

    def _start_early(self, pool: ThreadPoolExecutor) -> dict[str, _EarlyList]:
        """The likely largest built-in kinds' lists, started before discovery has answered (as many
        as leave `DISCOVERY_WORKERS` to discovery); `_start` keeps those discovery confirms."""
        room = max(0, self.options.concurrency - DISCOVERY_WORKERS)
        early = [gk for gk in LIKELY_LARGEST if gk in KNOWN_RESOURCES and gk in self.gks][:room]
        started = {}
        for gk in early:
            unused = threading.Event()
            listed = pool.submit(self._list_kind, gk, KNOWN_RESOURCES[gk], unused)
            started[gk] = _EarlyList(KNOWN_RESOURCES[gk], listed, unused)
        return started

    def _server_version(self) -> str:
        where = f"cluster {self.target.context} ({self.target.server})"
        try:
            document, _ = self.client.get_json("/version")
        except TransportFailure as failure:
            raise ClusterError(clean(f"{where}: unreachable: {failure.describe()}")) from None
        except ApiFailure as failure:
            if failure.status == 401:
                raise ClusterError(clean(f"{where}: credentials rejected ({failure.status_text})")) from None
            raise ClusterError(clean(f"{where}: /version failed: {failure.describe()}")) from None
        version = document.get("gitVersion") if isinstance(document, dict) else None
        if not isinstance(version, str) or not version:
            raise ClusterError(clean(f"{where}: /version did not answer a Kubernetes version "
                                     f"({describe_kind(document)})"))
        return clean(version[:100])

    # -- 2. what to read -----------------------------------------------------------------
    def _plan(self, discovery: Discovery) -> _Plan:
        plan = _Plan()
        for gk in self.gks:
            resource = discovery.lookup(gk)
            group = kinds.split_gk(gk)[0]
            if group in discovery.failed_groups:
                # Part of the group's discovery failed: whether the kind is served, and at
                # which preferred version, is unknown (reading it at another version would
                # show converted objects as if written in that version).
                plan.coverage[gk] = _coverage(CoverageState.FAILED, f"{gk}: {discovery.failed_groups[group]}")
                continue
            if resource is None:
                plan.coverage[gk] = _coverage(CoverageState.NOT_SERVED,
                                              f"{gk} is not served by the API server (no such API or CRD installed)")
                continue
            plan.served[gk] = discovery.served_versions(gk)
            if gk == kinds.CRD:
                continue  # read by name below
            if "list" not in resource.verbs:
                plan.coverage[gk] = _coverage(CoverageState.FAILED, f"{gk}: {resource.qualified} cannot be listed "
                                                                    f"(verbs: {', '.join(resource.verbs) or 'none'})")
                continue
            plan.lists.append((gk, resource))
        plan.lists.sort(key=lambda item: _priority(item[0]))
        plan.crd_read = kinds.CRD in self.gks and kinds.CRD in plan.served
        if plan.crd_read:
            names, problem = self._crd_names(discovery)
            if problem is not None:
                plan.coverage[kinds.CRD] = _coverage(CoverageState.FAILED, problem)
                plan.crd_read = False
            plan.crd_names = names
        return plan

    def _crd_names(self, discovery: Discovery) -> tuple[list[str], str | None]:
        """The CRDs to GET, or why they cannot be known (a relevant group's discovery failed)."""
        names: set[str] = set()
        groups = {kinds.split_gk(gk)[0] for gk in self.gks} - BUILTIN_GROUPS | set(CRD_BUNDLE_GROUPS)
        for group in sorted(groups):
            if group in discovery.failed_groups:
                return [], f"{kinds.CRD}: which CRDs to read is unknown: {discovery.failed_groups[group]}"
        for gk in self.gks:
            resource = discovery.lookup(gk)
            if resource is not None and resource.group not in BUILTIN_GROUPS:
                names.add(resource.qualified)
        for group in CRD_BUNDLE_GROUPS:
            names.update(resource.qualified for resource in discovery.resources_of_group(group))
        return sorted(names), None

    # -- 3. listing ----------------------------------------------------------------------
    def _page(self, resource: ApiResource, query: list[tuple[str, str]], metadata_only: bool,
              early: _Early | None, ahead: Callable[[_Head, int], list[tuple[str, str]] | None]
              ) -> tuple[_Page, _Early | None]:
        """One page: its answer (the early request's, when that asked exactly `query`), the next
        page's request sent from its head when `ahead` says which (before this one is parsed),
        then the page parsed, its checks and objects left to the checker."""
        accept = PARTIAL_METADATA_ACCEPT if metadata_only else "application/json"
        path = resource.collection_path
        answer = early.answer.result() if early is not None and early.query == query else \
            self.client.get(path, query, accept)
        head = list_head(answer.body)
        next_query = ahead(head, len(answer.body)) if head is not None else None
        sent_early = self._ask_early(path, next_query, accept) if next_query is not None else None
        try:
            document, answer = self.client.get_json(path, query, accept, checked=False, first=answer)
        except BaseException:
            _abandon(sent_early)
            raise
        token, remaining = _continuation(document.get("metadata") if isinstance(document, dict) else None)
        items = document.get("items") if isinstance(document, dict) else None
        objects = self._checker.submit(self._checked_objects, answer.body, document, resource, metadata_only,
                                       self.source)
        return _Page(token, remaining, len(items) if isinstance(items, list) else 0, len(answer.body),
                     objects), sent_early

    def _ask_early(self, path: str, query: list[tuple[str, str]], accept: str) -> _Early:
        """Send `query`'s request from another thread, and return once it is written: parsing the
        page holds the interpreter's lock for tens of milliseconds, which would hold it back."""
        sent = threading.Event()
        answer = self._fetcher.submit(self.client.get, path, query, accept, sent)
        answer.add_done_callback(lambda _: sent.set())  # failed or cancelled before it was written
        sent.wait()
        return _Early(query, answer)

    @staticmethod
    def _checked_objects(body: bytes, document: Any, resource: ApiResource, metadata_only: bool,
                         source: Source) -> list[K8sObject]:
        """The page's objects, once the page is known to be the list asked for (else `UnusableAnswer`):
        built here, page by page while the next is fetched, rather than all after the last one."""
        path = resource.collection_path
        check_answer(body, document, path)
        checked = _check_list(document, resource, metadata_only, path)
        return [K8sObject(_as_object(item, resource, metadata_only), source) for item in checked["items"]]

    def _next_limit(self, limit: int, remaining: int | None, objects: int, body_bytes: int) -> int:
        """The size of the next page: the rest of the collection when the server said how much is
        left (`remaining`), else twice the last page; at most `max_chunk_size` objects and about a
        quarter of --max-response-size at the bytes per object seen so far; never below `chunk_size`."""
        wanted = remaining if remaining is not None else 2 * limit
        per_object = max(1, body_bytes // max(1, objects))
        by_bytes = self.options.policy.max_response_bytes // PAGE_BYTES_SHARE // per_object
        floor = self.options.chunk_size
        return max(floor, min(max(floor, self.options.max_chunk_size), wanted, by_bytes))

    @staticmethod
    def _objects_of(pages: list[_Page], done_only: bool = False) -> list[K8sObject]:
        """Every page's checked objects, in order (`UnusableAnswer` from the first page that is not
        a usable list); with `done_only`, only raises for pages already checked."""
        items: list[K8sObject] = []
        for page in pages:
            if done_only:
                if page.objects.done() and page.objects.exception() is not None:
                    page.objects.result()
                continue
            items.extend(page.objects.result())
        return items

    def _list_once(self, resource: ApiResource, paginated: bool, pages_left: int,
                   unused: threading.Event | None = None) -> list[K8sObject]:
        """One complete list, following `continue`, in at most `pages_left` pages.

        Pipelined twice over. The next request needs only a page's continue token: it is read from
        the page's head (`list_head`), the next page asked for at once (sized as if the page held
        `limit` objects) and used only if the parsed page calls for exactly it, else abandoned. And
        the page is checked and its objects built (`_checked_objects`) while the next one is fetched."""
        metadata_only = resource.gk in METADATA_ONLY
        pages: list[_Page] = []
        limit = self.options.chunk_size
        token: str | None = None
        seen: set[str] = set()
        objects = body_bytes = 0
        early: _Early | None = None

        def ahead(head: _Head, body_len: int) -> list[tuple[str, str]] | None:
            """The request that follows a page of `limit` objects with this head, or None if none would."""
            if not paginated or head.token is None or head.token in seen or len(pages) + 1 >= pages_left \
                    or self._stopped(unused):
                return None
            guess = self._next_limit(limit, head.remaining, objects + limit, body_bytes + body_len)
            return [("limit", str(guess)), ("continue", head.token)]

        try:
            while True:
                self._may_ask_another(resource, len(pages), pages_left, unused)
                query = [("limit", str(limit))] if paginated else []
                if token:
                    query.append(("continue", token))
                self._objects_of(pages, done_only=True)  # a page already found unusable ends the list
                if early is not None and early.query != query:
                    _abandon(early)  # asked from a head the parsed page contradicts
                    early = None
                try:
                    page, early = self._page(resource, query, metadata_only, early, ahead)
                except ApiFailure as failure:
                    raise _PageFailed(failure, token is not None, len(pages) + 1) from None
                pages.append(page)
                objects += page.count
                self.progress.objects(page.count)
                if not paginated or page.token is None:
                    return self._objects_of(pages)
                if page.token in seen:
                    self._objects_of(pages)  # an unusable page explains it better, if there is one
                    raise _ListFailed(f"{resource.gk}: list {resource.qualified} failed: the server repeated "
                                      f"a continue token after {len(pages)} pages (its pagination loops)")
                seen.add(page.token)
                token = page.token
                body_bytes += page.body_bytes
                limit = self._next_limit(limit, page.remaining, objects, body_bytes)
        except UnusableAnswer as unusable:  # a page checked off the critical path
            self.progress.objects(-objects)
            raise _PageFailed(unusable, False, len(pages)) from None
        except BaseException:
            self.progress.objects(-objects)
            raise
        finally:
            _abandon(early)

    def _may_ask_another(self, resource: ApiResource, pages: int, pages_left: int,
                         unused: threading.Event | None) -> None:
        """`_ListFailed` when the list may not ask another page: --max-pages reached, or the list
        abandoned (the read failed, or discovery did not confirm this early list)."""
        if pages >= pages_left:
            raise _ListFailed(f"{resource.gk}: list {resource.qualified} failed: more than "
                              f"{self.options.max_pages} pages (--max-pages)")
        if self._stopped(unused):
            raise _ListFailed(f"{resource.gk}: list {resource.qualified} not read: abandoned")

    def _stopped(self, unused: threading.Event | None) -> bool:
        return self._abandoned.is_set() or (unused is not None and unused.is_set())

    def _list(self, resource: ApiResource, unused: threading.Event | None = None) -> list[K8sObject]:
        expirations = 0
        pages_used = 0
        while True:
            paginated = expirations < self.options.max_relists - 1 and self.options.chunk_size > 0
            try:
                return self._list_once(resource, paginated, self.options.max_pages - pages_used, unused)
            except _PageFailed as failed:
                pages_used += failed.pages
                if failed.failure.status == 410 and failed.had_token and expirations < self.options.max_relists:
                    expirations += 1  # the continue token expired: list again from the start
                    continue
                raise _ListFailed(_failure_reason(resource.gk, "list", resource.qualified, failed.failure)) from None

    def _get_crd(self, name: str) -> dict[str, Any] | None:
        path = f"{CRD_PATH}/{name}"
        what = f"customresourcedefinitions.apiextensions.k8s.io/{name}"
        try:
            document, _ = self.client.get_json(path)
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition" \
                    or as_mapping(document.get("metadata")).get("name") != name:
                raise UnusableAnswer(path, f"{describe_kind(document)}, not the CustomResourceDefinition {name}")
        except ApiFailure as failure:
            if failure.status == 404:
                return None  # an aggregated API, or removed since discovery
            raise _ListFailed(_failure_reason(kinds.CRD, "get", what, failure)) from None
        document.setdefault("apiVersion", "apiextensions.k8s.io/v1")
        return document

    def _list_kind(self, gk: str, resource: ApiResource, unused: threading.Event | None = None) -> _Listed:
        # (An early list that discovery then contradicts has counted in the progress display too.)
        began = time.monotonic()
        try:
            listed = _Listed(gk, self._list(resource, unused), None)
        except _ListFailed as failed:
            listed = _Listed(gk, None, failed.reason)
        listed.seconds = time.monotonic() - began
        self.progress.kind_done()
        return listed

    def _get_crd_safely(self, name: str) -> _Got:
        try:
            return self._get_crd(name), None
        except _ListFailed as failed:
            return None, failed.reason

    def _start(self, plan: _Plan, pool: ThreadPoolExecutor,
               early: dict[str, _EarlyList]) -> tuple[list[Future[_Listed]], list[Future[_Got]]]:
        """Every planned list: the early one when discovery names its resource, else started now. An
        early list of another resource, or of a kind not to be listed (not served, its group's
        discovery failed), is left unused."""
        self.progress.plan(self.target.name, len(plan.lists) + (1 if plan.crd_read else 0))
        lists: list[Future[_Listed]] = []
        for gk, resource in plan.lists:
            started = early.pop(gk, None)
            if started is not None and _same_resource(started.resource, resource):
                lists.append(started.listed)
                continue
            if started is not None:
                started.abandon()
            lists.append(pool.submit(self._list_kind, gk, resource))
        for unconfirmed in early.values():
            unconfirmed.abandon()
        crds = [pool.submit(self._get_crd_safely, name) for name in plan.crd_names] if plan.crd_read else []
        return lists, crds

    # -- 4. coverage -----------------------------------------------------------------------
    def _collect(self, plan: _Plan, lists: list[Future[_Listed]], crds: list[Future[_Got]],
                 crd_began: float) -> dict[str, list[K8sObject]]:
        objects_by_gk: dict[str, list[K8sObject]] = {}
        for future in lists:
            listed = future.result()
            self.seconds[listed.gk] = listed.seconds
            if listed.problem is not None or listed.objects is None:
                plan.coverage[listed.gk] = _coverage(CoverageState.FAILED, listed.problem or "not read")
            else:
                plan.coverage[listed.gk] = _coverage(CoverageState.LISTED)
                objects_by_gk[listed.gk] = listed.objects
        if plan.crd_read:
            found: list[dict[str, Any]] = []
            problems: list[str] = []
            for got in crds:
                crd, problem = got.result()
                if problem is not None:
                    problems.append(problem)
                elif crd is not None:
                    found.append(crd)
            self.seconds[kinds.CRD] = time.monotonic() - crd_began
            self.progress.objects(len(found))
            self.progress.kind_done()
            if problems:
                plan.coverage[kinds.CRD] = _coverage(CoverageState.FAILED, problems[0])
            else:
                groups = ", ".join(CRD_BUNDLE_GROUPS)
                plan.coverage[kinds.CRD] = _coverage(
                    CoverageState.LISTED,
                    f"read by name: the CRDs of the custom kinds the rules read and every CRD of {groups}",
                )
                ordered = sorted(found, key=lambda c: str((c.get("metadata") or {}).get("name")))
                objects_by_gk[kinds.CRD] = [K8sObject(crd, self.source) for crd in ordered]
        return objects_by_gk

    # -- 5. the snapshot ---------------------------------------------------------------------
    def _snapshot(self, version: str, plan: _Plan, objects_by_gk: dict[str, list[K8sObject]]) -> Snapshot:
        objects = [obj for gk in self.gks for obj in objects_by_gk.get(gk, ())]
        return Snapshot.build(
            objects, mode="live", inputs=[self.source.path], cluster=self.target.cluster_info(version),
            listed=plan.coverage, served_versions=plan.served,
        )

    def _needed_groups(self) -> set[str]:
        """The groups whose discovery the plan needs (legacy discovery asks each one)."""
        groups = {kinds.split_gk(gk)[0] for gk in self.gks}
        return groups | set(CRD_BUNDLE_GROUPS) if kinds.CRD in self.gks else groups

    # -- everything ------------------------------------------------------------------------
    def read(self, meanwhile: Meanwhile | None = None) -> ReadResult:
        """The cluster read. `meanwhile` runs on this thread once every first request is out (the
        early lists' included), while their answers are awaited: work that needs none of them.
        When it returns kinds, those are what is read, whatever the reader was made with: its
        kinds were then only the guess the early lists were chosen by (`audit live` guesses from
        rules/index.json while `meanwhile` loads the rules themselves)."""
        try:
            return self._read(meanwhile)
        finally:
            self._checker.shutdown(wait=False, cancel_futures=True)
            self._fetcher.shutdown(wait=False, cancel_futures=True)
            self.client.close()

    def _read(self, meanwhile: Meanwhile | None) -> ReadResult:
        started = time.monotonic()
        pool = ThreadPoolExecutor(max_workers=max(1, self.options.concurrency),
                                  thread_name_prefix=f"audit-list-{self.target.context}")
        try:
            version_asked, roots, early = self._contact(pool)
            decided = meanwhile() if meanwhile is not None else None
            if decided is not None:
                self.gks = sorted(set(decided))
            version = version_asked.result()
            plan = self._plan(discover(self.client, self._needed_groups(), pool, roots))
            crd_began = time.monotonic()
            lists, crds = self._start(plan, pool, early)
            objects_by_gk = self._collect(plan, lists, crds, crd_began)
        except BaseException:
            # Interrupted (Ctrl-C), the cluster unusable, a configuration error (`meanwhile`), or a
            # bug: do not start what is still queued, and end the lists running at their next page.
            self._abandoned.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        snapshot = self._snapshot(version, plan, objects_by_gk)
        self.seconds["(total)"] = time.monotonic() - started
        counts = {gk: len(items) for gk, items in objects_by_gk.items()}
        return ReadResult(snapshot, self.client.requests_made, dict(self.seconds), counts)


def read_cluster(target: Target, gks: list[str] | set[str], options: ReadOptions = ReadOptions(),
                 progress: Progress | None = None, meanwhile: Meanwhile | None = None) -> ReadResult:
    return ClusterReader(target, gks, options, progress).read(meanwhile)


def failed_snapshot(target: Target, gks: list[str] | set[str], reason: str) -> Snapshot:
    """What a cluster that could not be read at all contributes to a fleet: every kind failed."""
    coverage = {gk: _coverage(CoverageState.FAILED, f"{gk}: {reason}") for gk in sorted(set(gks))}
    source = cluster_source(target)
    return Snapshot.build([], mode="live", inputs=[source.path], cluster=target.cluster_info(None), listed=coverage)
