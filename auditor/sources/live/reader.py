"""Lists what the selected rules read from one cluster, into a `Snapshot` with coverage.

Steps (docs/live.md):

1. `GET /version`: the cluster answers at all (else `ClusterError`, exit 3).
2. Discovery (`discovery.py`): the resource, scope and preferred version of
   every group-kind the rules read.
3. Every kind is listed cluster-wide, concurrently (a thread pool of
   `concurrency` workers), in pages of `chunk_size` (`limit`/`continue`). A
   continue token that expired (410 Gone) restarts the list from scratch;
   after `max_relists - 1` expirations the last re-list is unpaginated, which
   cannot expire. Retries of single requests are `client.py`'s.
4. Each kind ends with a coverage state: `listed` (authoritative, possibly
   empty), `not-served` (discovery does not know the kind: its CRD is not
   installed, so there are none) or `failed` (forbidden, timed out, 5xx after
   retries, or its group's discovery failed: unknown, and the rules reading it
   report `error` naming the resource and the HTTP status).

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

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from auditor import kinds
from auditor.errors import ClusterError
from auditor.model import IgnoredDocument, K8sObject, Source
from auditor.snapshot import Coverage, CoverageState, Snapshot
from auditor.sources.live.client import ApiFailure, Client, RetryPolicy, TransportFailure
from auditor.sources.live.discovery import ApiResource, Discovery, discover
from auditor.sources.live.progress import Progress
from auditor.sources.live.target import Target

PARTIAL_METADATA_ACCEPT = ",".join((
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io",
))
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


@dataclass(frozen=True)
class ReadOptions:
    concurrency: int = 8
    chunk_size: int = 500
    max_relists: int = 3
    policy: RetryPolicy = RetryPolicy()


@dataclass
class ReadResult:
    snapshot: Snapshot
    requests: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # listing time per kind
    counts: dict[str, int] = field(default_factory=dict)


def cluster_source(target: Target) -> Source:
    return Source(f"cluster:{target.context}")


def redact_secret(metadata: dict) -> dict:
    """Secret metadata without what names or holds its keys."""
    out = {k: v for k, v in metadata.items() if k != "managedFields"}
    annotations = out.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        out["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return out


def _as_object(item: Any, resource: ApiResource, metadata_only: bool) -> dict | None:
    if not isinstance(item, dict):
        return None
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


def _failure_reason(gk: str, verb: str, what: str, failure: ApiFailure) -> str:
    return f"{gk}: {verb} {what} failed: {failure.describe()}"


class ClusterReader:
    """Reads one target. `read()` returns a `ReadResult` or raises `ClusterError`."""

    def __init__(self, target: Target, gks: list[str] | set[str], options: ReadOptions = ReadOptions(),
                 progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.target = target
        self.gks = sorted(set(gks))
        self.options = options
        self.progress = progress or Progress(enabled=False)
        self.client = Client(target.configuration, options.policy, sleep=sleep)

    # -- the cluster itself ---------------------------------------------------------
    def _server_version(self) -> str:
        where = f"cluster {self.target.context} ({self.target.server})"
        try:
            document, _ = self.client.get_json("/version")
        except TransportFailure as failure:
            raise ClusterError(f"{where}: unreachable: {failure.describe()}") from None
        except ApiFailure as failure:
            if failure.status == 401:
                raise ClusterError(f"{where}: credentials rejected ({failure.status_text})") from None
            raise ClusterError(f"{where}: /version failed: {failure.describe()}") from None
        version = document.get("gitVersion") if isinstance(document, dict) else None
        if not isinstance(version, str):
            raise ClusterError(f"{where}: /version did not answer a Kubernetes version")
        return version

    # -- listing ---------------------------------------------------------------------
    def _list(self, resource: ApiResource) -> list[dict]:
        metadata_only = resource.gk in METADATA_ONLY
        accept = PARTIAL_METADATA_ACCEPT if metadata_only else "application/json"
        expirations = 0
        while True:
            paginated = expirations < self.options.max_relists - 1 and self.options.chunk_size > 0
            items: list[dict] = []
            token: str | None = None
            try:
                while True:
                    query = [("limit", str(self.options.chunk_size))] if paginated else []
                    if token:
                        query.append(("continue", token))
                    document, _ = self.client.get_json(resource.collection_path, query, accept)
                    if not isinstance(document, dict) or not isinstance(document.get("items", []), list):
                        raise _ListFailed(f"{resource.gk}: list {resource.qualified}: unexpected answer (not a list)")
                    if metadata_only and document.get("kind") != "PartialObjectMetadataList":
                        # Never keep a full Secret list a proxy or an old server sent instead.
                        raise _ListFailed(f"{resource.gk}: list {resource.qualified}: the server did not answer "
                                          "metadata only (PartialObjectMetadataList); Secrets are never read in full")
                    page = [obj for obj in (_as_object(i, resource, metadata_only)
                                            for i in document.get("items") or ()) if obj is not None]
                    items.extend(page)
                    self.progress.objects(len(page))
                    metadata = document.get("metadata")
                    token = metadata.get("continue") if isinstance(metadata, dict) else None
                    if not token or not paginated:
                        return items
            except ApiFailure as failure:
                if failure.status == 410 and token and expirations < self.options.max_relists:
                    expirations += 1  # the continue token expired: list again from the start
                    self.progress.objects(-len(items))
                    continue
                raise _ListFailed(_failure_reason(resource.gk, "list", resource.qualified, failure)) from None

    def _get_crd(self, name: str) -> dict | None:
        try:
            document, _ = self.client.get_json(f"{CRD_PATH}/{name}")
        except ApiFailure as failure:
            if failure.status == 404:
                return None  # an aggregated API, or removed since discovery
            raise _ListFailed(_failure_reason(kinds.CRD, "get", f"customresourcedefinitions.apiextensions.k8s.io/{name}",
                                              failure)) from None
        if not isinstance(document, dict):
            raise _ListFailed(f"{kinds.CRD}: get {name}: unexpected answer")
        document.setdefault("apiVersion", "apiextensions.k8s.io/v1")
        document.setdefault("kind", "CustomResourceDefinition")
        return document

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

    # -- everything ------------------------------------------------------------------
    def read(self) -> ReadResult:
        try:
            return self._read()
        finally:
            self.client.close()

    def _read(self) -> ReadResult:
        started = time.monotonic()
        version = self._server_version()
        crd_needed = kinds.CRD in self.gks
        needed_groups = {kinds.split_gk(gk)[0] for gk in self.gks} | (set(CRD_BUNDLE_GROUPS) if crd_needed else set())
        coverage: dict[str, Coverage] = {}
        served: dict[str, list[str]] = {}
        plans: list[tuple[str, ApiResource]] = []
        objects_by_gk: dict[str, list[dict]] = {}
        seconds: dict[str, float] = {}
        pool = ThreadPoolExecutor(max_workers=max(1, self.options.concurrency),
                                  thread_name_prefix=f"audit-list-{self.target.context}")
        try:
            discovery = discover(self.client, needed_groups, pool)
            for gk in self.gks:
                resource = discovery.lookup(gk)
                group = kinds.split_gk(gk)[0]
                if group in discovery.failed_groups:
                    # Part of the group's discovery failed: whether the kind is served, and at
                    # which preferred version, is unknown (reading it at another version would
                    # show converted objects as if written in that version).
                    coverage[gk] = Coverage(CoverageState.FAILED, f"{gk}: {discovery.failed_groups[group]}")
                    continue
                if resource is None:
                    coverage[gk] = Coverage(CoverageState.NOT_SERVED,
                                            f"{gk} is not served by the API server (no such API or CRD installed)")
                    continue
                served[gk] = discovery.served_versions(gk)
                if gk == kinds.CRD:
                    continue  # read by name below
                if "list" not in resource.verbs:
                    coverage[gk] = Coverage(CoverageState.FAILED, f"{gk}: {resource.qualified} cannot be listed "
                                                                  f"(verbs: {', '.join(resource.verbs) or 'none'})")
                    continue
                plans.append((gk, resource))
            crd_read = crd_needed and kinds.CRD in served
            crd_names, crd_problem = self._crd_names(discovery) if crd_read else ([], None)
            if crd_problem is not None:
                coverage[kinds.CRD] = Coverage(CoverageState.FAILED, crd_problem)
                crd_read = False
            self.progress.plan(self.target.name, len(plans) + (1 if crd_read else 0))

            def list_kind(plan: tuple[str, ApiResource]):
                gk, resource = plan
                began = time.monotonic()
                try:
                    items = self._list(resource)
                    result = (gk, items, None)
                except _ListFailed as failed:
                    result = (gk, None, failed.reason)
                seconds[gk] = time.monotonic() - began
                self.progress.kind_done()
                return result

            def get_crd(name: str):
                try:
                    return name, self._get_crd(name), None
                except _ListFailed as failed:
                    return name, None, failed.reason

            list_futures = [pool.submit(list_kind, plan) for plan in plans]
            crd_began = time.monotonic()
            crd_futures = [pool.submit(get_crd, name) for name in crd_names]
            for future in list_futures:
                gk, items, problem = future.result()
                if problem is not None:
                    coverage[gk] = Coverage(CoverageState.FAILED, problem)
                else:
                    coverage[gk] = Coverage(CoverageState.LISTED)
                    objects_by_gk[gk] = items
            if crd_read:
                crds, problems = [], []
                for future in crd_futures:
                    name, crd, problem = future.result()
                    if problem is not None:
                        problems.append(problem)
                    elif crd is not None:
                        crds.append(crd)
                seconds[kinds.CRD] = time.monotonic() - crd_began
                self.progress.objects(len(crds))
                self.progress.kind_done()
                if problems:
                    coverage[kinds.CRD] = Coverage(CoverageState.FAILED, problems[0])
                else:
                    groups = ", ".join(CRD_BUNDLE_GROUPS)
                    coverage[kinds.CRD] = Coverage(
                        CoverageState.LISTED,
                        f"read by name: the CRDs of the custom kinds the rules read and every CRD of {groups}",
                    )
                    objects_by_gk[kinds.CRD] = sorted(crds, key=lambda c: str((c.get("metadata") or {}).get("name")))
        except BaseException:
            # Interrupted (Ctrl-C) or a bug: do not start what is still queued.
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        source = cluster_source(self.target)
        objects: list[K8sObject] = []
        ignored: list[IgnoredDocument] = []
        for gk in self.gks:
            for raw in objects_by_gk.get(gk, ()):
                problem = K8sObject.identity_problem(raw)
                if problem is None:
                    objects.append(K8sObject(raw, source))
                else:
                    ignored.append(IgnoredDocument(source, f"{gk} list item is not a Kubernetes object ({problem})"))
        counts = {gk: len(items) for gk, items in objects_by_gk.items()}
        snapshot = Snapshot.build(
            objects, mode="live", inputs=[source.path], ignored=ignored,
            cluster=self.target.cluster_info(version), listed=coverage, served_versions=served,
        )
        seconds["(total)"] = time.monotonic() - started
        return ReadResult(snapshot, self.client.requests_made, seconds, counts)


def read_cluster(target: Target, gks: list[str] | set[str], options: ReadOptions = ReadOptions(),
                 progress: Progress | None = None) -> ReadResult:
    return ClusterReader(target, gks, options, progress).read()


def failed_snapshot(target: Target, gks: list[str] | set[str], reason: str) -> Snapshot:
    """What a cluster that could not be read at all contributes to a fleet: every kind failed."""
    coverage = {gk: Coverage(CoverageState.FAILED, f"{gk}: {reason}") for gk in sorted(set(gks))}
    source = cluster_source(target)
    return Snapshot.build([], mode="live", inputs=[source.path], cluster=target.cluster_info(None), listed=coverage)
