"""A snapshot: every object read from one input (files or a cluster), indexed,
plus what the reader knows about which kinds it could see.

Coverage is what makes the auditor fail closed. A kind is *known* when the
reader listed it (a live read or a snapshot header says so, even if it came
back empty), when the API does not serve it (an absent CRD: no such objects),
or, for plain offline input, when at least one object of it is in the input.
A kind with no objects in offline input is *missing*: a `kubectl get all`
dump has no NetworkPolicies, and that must not read as "no NetworkPolicies".
A kind whose listing failed (403, timeout) is *failed*: unknown, and an error.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from auditor.model import (
    ClusterInfo,
    IgnoredDocument,
    InputProblem,
    K8sObject,
    NamespaceOrigin,
    ObjectRef,
    Source,
    group_kind,
)

# What `get` looks an object up by: its kind, namespace and name.
_IDENTITY = attrgetter("gk", "namespace", "name")


class SnapshotMode(str, enum.Enum):
    """Where a snapshot's objects were read, which decides what their absence and their status mean.

    A str enum so that reports write it as its value (`"mode": "live"`).
    """

    OFFLINE = "offline"  # files: manifests, a kubectl dump, a GitOps tree
    LIVE = "live"  # read from a cluster's API server just now
    SNAPSHOT = "snapshot"  # an `audit snapshot` file: a live read, saved
    FLEET = "fleet"  # several clusters' results merged (reports only; rules see each cluster's own)

    def __str__(self) -> str:
        return self.value

    @property
    def from_cluster(self) -> bool:
        """Whether the objects were listed from an API server: every object of a listed kind is there,
        and their status is cluster state."""
        return self is not SnapshotMode.OFFLINE


class CoverageState(enum.Enum):
    LISTED = "listed"  # read from the API (or a snapshot of it): authoritative, may be empty
    NOT_SERVED = "not-served"  # the API does not serve the kind: there are none
    PRESENT = "present"  # offline input holds objects of this kind
    MISSING = "missing"  # offline input holds none: unknown whether any exist
    FAILED = "failed"  # the read failed (forbidden, timed out): unknown

    @property
    def known(self) -> bool:
        return self in (CoverageState.LISTED, CoverageState.NOT_SERVED, CoverageState.PRESENT)


@dataclass(frozen=True, slots=True)
class Coverage:
    """What the input shows of a kind (listed, not served, present, missing, failed), and why."""

    state: CoverageState
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ValuesFile:
    """Helm values a HelmRelease reads through `spec.valuesFrom[index]` (or an Argo CD Application from its
    in-repo chart), found in the input itself.

    The GitOps reader maps a kustomize `configMapGenerator` file to the
    HelmRelease of the same build that reads the generated ConfigMap
    (docs/gitops.md): `values` is that file's document as kubectl reads YAML,
    `source` its file (line of the document), `lines` the line of each key
    path, `origin` the generator (`configMapGenerator cilium-values (k.yaml:8)`).
    """

    index: int
    values: Any
    source: Source
    origin: str
    lines: Mapping[tuple[str, ...], int] = field(default_factory=dict)
    target_path: str | None = None
    text: str | None = None  # the file's text, when known (a cheap first look before walking the values)
    # An Argo CD Application's in-repo chart (docs/gitops.md): the source whose chart the file is values of
    # (`("spec", "source")`, `("spec", "sources", N)`), and its label (`values.yaml`,
    # `spec.source.helm.valueFiles[0]`); `index` is then the file's place in Argo CD's order.
    source_key: tuple[str | int, ...] = ()
    label: str = ""


# An object as the GitOps reader keys what it knows about it: identity, and the file and line it was read at.
ObjectKey = tuple[str, str | None, str, Source | None]


def object_key(obj: K8sObject) -> ObjectKey:
    return (obj.gk, obj.namespace, obj.name, obj.source)


@dataclass
class Snapshot:
    """Objects plus coverage. Build with `Snapshot.build`; treat as read-only."""

    objects: list[K8sObject]
    mode: SnapshotMode = SnapshotMode.OFFLINE
    inputs: list[str] = field(default_factory=list)
    ignored: list[IgnoredDocument] = field(default_factory=list)
    cluster: ClusterInfo | None = None
    # Explicit coverage from a live read or a snapshot header, by group-kind.
    listed: dict[str, Coverage] = field(default_factory=dict)
    # Served versions of CRDs as discovery saw them (live and snapshots).
    served_versions: dict[str, list[str]] = field(default_factory=dict)
    # Cilium Helm values files given beside the objects (`--cilium-values`):
    # auditor.cilium.helm_values.HelmValues, read by cilium_config.resolve.
    # (Typed Any: the object model sits below auditor.cilium and does not import it.)
    cilium_values: list[Any] = field(default_factory=list)
    # Files of the input that could not be read (auditor.model.InputProblem): none of their objects is here,
    # so every verdict on this snapshot is on part of the input.
    input_problems: list[InputProblem] = field(default_factory=list)
    # The folders of the input (offline): what was read in them is a tree of manifests, declared state.
    trees: list[str] = field(default_factory=list)
    # What the GitOps reader knows of a tree's objects (empty for any other input): the Helm values
    # each HelmRelease reads from a file of the tree (`valuesFrom`), and where each object's namespace
    # comes from, both keyed by `object_key`.
    values_from: dict[ObjectKey, tuple[ValuesFile, ...]] = field(default_factory=dict)
    namespace_origins: dict[ObjectKey, NamespaceOrigin] = field(default_factory=dict)
    _by_gk: dict[str, list[K8sObject]] = field(default_factory=dict, repr=False)
    _by_key: dict[tuple[str, str | None, str], K8sObject] = field(default_factory=dict, repr=False)
    _by_namespace: dict[str, list[K8sObject]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Readers may still pass the mode's name ("live"): one type from here on.
        self.mode = SnapshotMode(self.mode)

    @classmethod
    def build(cls, objects: Iterable[K8sObject], **kwargs: Any) -> Snapshot:
        snapshot = cls(objects=list(objects), **kwargs)
        by_gk: dict[str, list[K8sObject]] = defaultdict(list)
        for obj in snapshot.objects:
            by_gk[obj.gk].append(obj)
        # The first definition wins, as with `kubectl apply` of a directory where a later
        # duplicate would be rejected by the API server anyway: built from the last object
        # to the first, each earlier one overwrites a later namesake (at C speed).
        backwards = snapshot.objects[::-1]
        snapshot._by_key = dict(zip(map(_IDENTITY, backwards), backwards, strict=True))
        snapshot._by_gk = dict(by_gk)
        return snapshot

    @property
    def repeats_an_identity(self) -> bool:
        """Whether two objects share a kind, namespace and name (`auditor.duplicates` says which)."""
        return len(self._by_key) != len(self.objects)

    def of_kind(self, *gks: str) -> list[K8sObject]:
        """All objects of the given group-kinds, in input order per kind."""
        if len(gks) == 1:
            return self._by_gk.get(gks[0], [])
        out: list[K8sObject] = []
        for gk in gks:
            out.extend(self._by_gk.get(gk, ()))
        return out

    def get(self, gk: str, namespace: str | None, name: str) -> K8sObject | None:
        return self._by_key.get((gk, namespace, name))

    def values_files(self, obj: K8sObject) -> tuple[ValuesFile, ...]:
        """The Helm values files `obj` reads: a HelmRelease through `valuesFrom`, in `valuesFrom` order; an Argo
        CD Application from its in-repo chart, in Argo CD's order (values.yaml, then `helm.valueFiles`)."""
        return self.values_from.get(object_key(obj), ()) if self.values_from else ()

    def namespace_origin(self, ref: ObjectRef, source: Source | None) -> NamespaceOrigin | None:
        """Where the namespace of the object `ref` (read at `source`, else by identity) comes from."""
        if not self.namespace_origins:
            return None
        group, _, _ = ref.api_version.rpartition("/")
        obj = self.get(group_kind(group, ref.kind), ref.namespace, ref.name)
        if obj is None:
            return None
        for candidate in (source, obj.source):
            found = self.namespace_origins.get((obj.gk, obj.namespace, obj.name, candidate))
            if found is not None:
                return found
        return None

    def in_namespace(self, namespace: str) -> list[K8sObject]:
        if self._by_namespace is None:
            index: dict[str, list[K8sObject]] = defaultdict(list)
            for obj in self.objects:
                if obj.namespace:
                    index[obj.namespace].append(obj)
            self._by_namespace = dict(index)
        return self._by_namespace.get(namespace, [])

    def read_from_cluster(self, obj: K8sObject) -> bool:
        """Whether `obj` shows cluster state: a live read, a snapshot, or a kubectl dump of it.

        The one policy for "does this object's status count": rules judging
        status (conditions, addresses, start times) judge only such objects; a
        manifest has no status, and an empty one there is an absence, not a fact.
        Offline, an object counts when the API server wrote it (`server_written`:
        a `kubectl get -o yaml` dump) or when a controller wrote conditions into it.
        """
        return self.mode.from_cluster or obj.server_written or isinstance(obj.status.get("conditions"), list)

    def from_tree(self, obj: K8sObject) -> bool:
        """Whether `obj` is declared state: a manifest read from a folder of the input (a GitOps tree).

        A tree declares what the cluster runs, so the absence of a kind there
        is evidence for rules that decide to take it (a tree holding no
        network policy applies none). A file named on its own, standard input
        and anything read from a cluster (`read_from_cluster`) is not: a
        commit's changed files or a `kubectl get all` dump are fragments.
        """
        if self.read_from_cluster(obj) or obj.source is None or not self.trees:
            return False
        path = obj.source.path
        return any(path.startswith(root.rstrip("/\\") + sep) for root in self.trees for sep in ("/", "\\"))

    def kinds(self) -> list[str]:
        return sorted(self._by_gk)

    def coverage(self, gk: str) -> Coverage:
        explicit = self.listed.get(gk)
        if explicit is not None:
            return explicit
        if self._by_gk.get(gk):
            return Coverage(CoverageState.PRESENT)
        if not self.mode.from_cluster:
            return Coverage(CoverageState.MISSING, f"the input holds no {gk} objects")
        # Live reads and snapshots list every kind the rules need; a kind they
        # did not record was never asked for.
        return Coverage(CoverageState.MISSING, f"{gk} was not read")

    def __iter__(self) -> Iterator[K8sObject]:
        return iter(self.objects)

    def __len__(self) -> int:
        return len(self.objects)
