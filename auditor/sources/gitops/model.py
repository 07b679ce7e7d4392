"""Result types of reading a GitOps tree: where each object lands, and why.

Everything here is a small frozen value. Paths are relative to the tree root
and always use `/`, so results are the same bytes on every machine; an
`Origin` is a file and line of that tree ("apps/media/kustomization.yaml:3").
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# Scope names that are not cluster names. Parentheses cannot appear in a
# Kubernetes or Argo CD cluster name, so these never clash with a real one.
UNREACHED_SCOPE = "(unreached)"
WHOLE_TREE_SCOPE = "(whole tree)"


@dataclass(frozen=True, slots=True)
class Origin:
    """A place in the tree: a file (tree-relative, `/`-separated) and a 1-based line."""

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


class ObjectId(NamedTuple):
    """One Kubernetes object of the tree: the file and the line its document (or List item) starts at.

    The offline reader gives each object a `Source(path, line)` with the same
    line, which is how a later stage finds the object's placements. A named
    tuple, not a dataclass: it keys every index of the layout (placements,
    records, seen sets), and a tuple hashes and compares in C, in the same
    (path, line) order a dataclass with `order=True` has.
    """

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class NamespaceReason(str, enum.Enum):
    """Why an object has the namespace it has."""

    MANIFEST = "manifest"  # metadata.namespace as written, nothing overrides it
    KUSTOMIZE = "kustomize"  # `namespace:` of a kustomization (the outermost one wins)
    KUSTOMIZE_COMPONENT = "kustomize-component"  # `namespace:` of a kustomize Component
    FLUX_TARGET_NAMESPACE = "flux-targetNamespace"  # spec.targetNamespace of a Flux Kustomization
    ARGOCD_DESTINATION = "argocd-destination"  # spec.destination.namespace, for objects without one
    ARGOCD_KUSTOMIZE = "argocd-kustomize-namespace"  # spec.source.kustomize.namespace of an Argo CD Application
    CLUSTER_SCOPED = "cluster-scoped"  # the kind has no namespace
    UNSET = "unset"  # namespaced, but nothing in the tree says which namespace


_REASON_TEXT = {
    NamespaceReason.MANIFEST: "set in the manifest at",
    NamespaceReason.KUSTOMIZE: "from",
    NamespaceReason.KUSTOMIZE_COMPONENT: "from the component",
    NamespaceReason.FLUX_TARGET_NAMESPACE: "from the Flux targetNamespace at",
    NamespaceReason.ARGOCD_DESTINATION: "from the Argo CD destination at",
    NamespaceReason.ARGOCD_KUSTOMIZE: "from the Argo CD kustomize namespace at",
}


@dataclass(frozen=True, slots=True)
class EffectiveNamespace:
    """The namespace an object gets in the cluster, and where that came from.

    `value` is None for cluster-scoped kinds and for namespaced objects that
    nothing in the tree places (reason `unset`). `replaced` is the namespace
    written in the manifest when kustomize, Flux or Argo CD overrode it.
    `written` is what kustomize writes into a kind the API server treats as
    cluster-scoped but kustomize's built-in schema does not know (CRDs such
    as CiliumLoadBalancerIPPool): the API server ignores it.
    """

    value: str | None
    source: Origin | None
    reason: NamespaceReason
    replaced: str | None = None
    written: str | None = None

    @property
    def known(self) -> bool:
        """A namespace is known: set, or not needed (a cluster-scoped kind)."""
        return self.reason is NamespaceReason.CLUSTER_SCOPED or (
            self.value is not None and not has_flux_variable(self.value)
        )

    def describe(self) -> str:
        """`namespace media from apps/media/kustomization.yaml:3`, as reports show it."""
        if self.reason is NamespaceReason.CLUSTER_SCOPED:
            return "cluster-scoped (no namespace)"
        if self.value is None:
            return "no namespace (nothing in the tree sets one)"
        text = f"namespace {self.value}"
        if self.source is not None:
            text += f" {_REASON_TEXT.get(self.reason, 'from')} {self.source}"
        if self.replaced is not None and self.replaced != self.value:
            text += f" (the manifest says {self.replaced})"
        if has_flux_variable(self.value):
            text += " (a Flux variable, left as written)"
        return text


def has_flux_variable(text: str) -> bool:
    """Flux postBuild substitution writes variables as `${NAME}`; they are never guessed."""
    return "${" in text


@dataclass(frozen=True, slots=True)
class FieldEdit:
    """A namespace field inside an object that kustomize rewrites (RoleBinding subjects, APIService service)."""

    path: str  # e.g. `subjects[0].namespace`
    value: str
    source: Origin


class Tool(str, enum.Enum):
    FLUX = "flux"
    ARGOCD = "argocd"
    KUSTOMIZE = "kustomize"  # a kustomization nothing else includes (`kubectl apply -k DIR`)
    EXPLICIT = "explicit"  # a `NAME=PATH` cluster given by hand


@dataclass(frozen=True, slots=True)
class Application:
    """What deploys a set of objects: a Flux Kustomization, an Argo CD Application, a kustomize root.

    `path` is the folder it builds. `substitute` is Flux `postBuild.substitute`
    as written (never applied); `depends_on` lists `namespace/name` of Flux
    `dependsOn` entries (the namespace defaults to the Kustomization's own).
    """

    tool: Tool
    kind: str
    name: str
    namespace: str | None
    origin: Origin
    path: str
    target_namespace: str | None = None
    source_ref: str | None = None
    depends_on: tuple[str, ...] = ()
    substitute: tuple[tuple[str, str], ...] = ()
    destination: str | None = None  # Argo CD destination cluster (name, or server URL)

    @property
    def display(self) -> str:
        if self.tool is Tool.FLUX:
            return f"Flux Kustomization {self.namespace or '-'}/{self.name} ({self.origin})"
        if self.tool is Tool.ARGOCD:
            return f"Argo CD {self.kind} {self.name} ({self.origin})"
        if self.tool is Tool.EXPLICIT:
            return f"cluster {self.name} given as {self.path}"
        return f"kustomization {self.path} ({self.origin})"


class Placement(NamedTuple):
    """One object as one build puts it into one scope (a cluster, or the unreached scope).

    A named tuple (made in C, as `ObjectId`): a tree's layout makes one per object and scope.
    """

    object: ObjectId
    kind: str
    api_version: str
    name: str  # kustomize renames a Namespace object to the namespace it sets
    scope: str
    application: Application | None
    namespace: EffectiveNamespace
    edits: tuple[FieldEdit, ...] = ()
    renamed_from: str | None = None


class EntryKind(str, enum.Enum):
    FLUX_BOOTSTRAP = "flux-bootstrap"  # a Flux Kustomization whose build includes itself (flux bootstrap)
    FLUX_INSTANCE = "flux-instance"  # FluxInstance spec.sync.path (Flux Operator), or its HelmRelease values
    FLUX_SOURCE = "flux-sync"  # a Flux Kustomization declared beside its GitRepository, or named flux-system
    FLUX_ROOT = "flux-root"  # a Flux Kustomization nothing includes (used only when no other entry exists)
    ARGOCD_APP_OF_APPS = "argocd-app-of-apps"
    ARGOCD_APPLICATIONSET = "argocd-applicationset"
    ARGOCD_ROOT = "argocd-root"
    ARGOCD_DESTINATION = "argocd-destination"  # an Application deploying to another cluster than Argo CD's own
    EXPLICIT = "explicit"


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """Where a cluster's deployment starts: the object or file that starts it, and the folder it builds."""

    kind: EntryKind
    origin: Origin
    path: str
    name: str


@dataclass(frozen=True, slots=True)
class Cluster:
    """A cluster the tree deploys: its name, the folder it lives in, its entry points and files.

    `files` holds every tree file whose objects this cluster's builds use
    (shared bases included by several clusters are in each).
    """

    name: str
    root: str
    entry_points: tuple[EntryPoint, ...]
    files: frozenset[str]
    applications: tuple[Application, ...] = ()


@dataclass(frozen=True, slots=True)
class Problem:
    """A defect of one file: what kustomize, Flux or Argo CD would refuse, with the line."""

    origin: Origin
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


@dataclass(frozen=True, slots=True)
class Note:
    """Something read but not resolved on purpose (patches, generators, remote bases), with where."""

    origin: Origin
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


@dataclass(frozen=True, slots=True)
class HelmValuesSource:
    """A file that becomes Helm values of a HelmRelease through a kustomize configMapGenerator.

    The HelmRelease's `spec.valuesFrom[index]` names ConfigMap `config_map`
    (key `key`); the same build generates that ConfigMap from `file`.
    """

    helm_release: ObjectId
    helm_release_name: str
    namespace: str | None
    scope: str
    index: int
    config_map: str
    key: str
    file: str
    generator: Origin
    target_path: str | None = None
    optional: bool = False
    name_suffix_hash: bool = False  # kustomize appends a hash the HelmRelease reference may not follow


@dataclass(frozen=True, slots=True)
class ChartValuesSource:
    """The Helm values of an Argo CD Application whose source path is a chart folder of the tree.

    Argo CD renders the chart with `helm template`: the chart's own
    values.yaml, then `helm.valueFiles` (relative to the chart, in order, a
    later one winning), then `helm.values`, `helm.valuesObject` and
    `helm.parameters` of the source (`source_key`) on top. `files` are the
    (label, tree path) of the files the tree holds, in that order. `declared_by`
    is the Application object, or the ApplicationSet that generates it (None:
    declared in argocd-apps chart values); `own_object` says whether the
    Application is an object of the tree (otherwise only its generator is).
    """

    application: str
    namespace: str | None  # the Application's own namespace, as its declaration says it
    namespace_origin: Origin | None
    kind: str  # "Application", or "ApplicationSet" for a generated one
    declared_by: ObjectId | None
    origin: Origin  # the object, or the values entry, that declares or generates it
    own_object: bool
    scope: str
    chart: str
    source_key: tuple[str | int, ...]
    files: tuple[tuple[str, str], ...]
    destination_namespace: str | None
    destination_origin: Origin
    spec: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)  # a generated one's


@dataclass(frozen=True, slots=True)
class NamespaceCoverage:
    """Namespaced objects of the tree, and how many of them have a known effective namespace."""

    namespaced: int
    with_namespace: int
    without: tuple[ObjectId, ...] = ()

    @property
    def ratio(self) -> float:
        return self.with_namespace / self.namespaced if self.namespaced else 1.0


@dataclass(frozen=True)
class TreeLayout:
    """How a GitOps tree deploys its objects: clusters, placements, and what could not be resolved.

    Every Kubernetes object of the tree has at least one placement: in each
    cluster whose builds include it (an object included twice in one cluster
    has a placement per build), or in the `(unreached)` scope when no entry
    point reaches it. When the tree's clusters cannot be told apart, there is
    one scope, `(whole tree)`, and `notes` says so once.
    """

    root: str
    clusters: tuple[Cluster, ...]
    placements: Mapping[ObjectId, tuple[Placement, ...]]
    unreached: tuple[ObjectId, ...]
    single_scope: bool
    problems: tuple[Problem, ...]
    notes: tuple[Note, ...]
    values_sources: tuple[HelmValuesSource, ...] = ()
    chart_values: tuple[ChartValuesSource, ...] = ()
    # Files kustomize reads as something other than resources: patches,
    # generator inputs, CRD schemas, replacements. Their documents are not
    # objects of any cluster even when they look like manifests.
    non_resource_files: Mapping[str, str] = field(default_factory=dict)
    cluster_scoped_kinds: frozenset[str] = frozenset()

    @property
    def scopes(self) -> tuple[str, ...]:
        names = [c.name for c in self.clusters]
        if self.unreached and not self.single_scope:
            names.append(UNREACHED_SCOPE)
        return tuple(names)

    def placements_of(self, obj: ObjectId, scope: str | None = None) -> tuple[Placement, ...]:
        found = self.placements.get(obj, ())
        return found if scope is None else tuple(p for p in found if p.scope == scope)

    def namespace_of(self, obj: ObjectId, scope: str | None = None) -> EffectiveNamespace | None:
        """The object's effective namespace (in `scope`, when given); None for an unknown object.

        When builds place the object in different namespaces, the first
        placement in scope order is returned; `placements_of` has them all.
        """
        found = self.placements_of(obj, scope)
        return found[0].namespace if found else None

    def application_of(self, obj: ObjectId, scope: str | None = None) -> Application | None:
        found = self.placements_of(obj, scope)
        return found[0].application if found else None

    def in_scope(self, scope: str) -> tuple[Placement, ...]:
        """Every placement of one scope, in object order."""
        return tuple(p for obj in sorted(self.placements) for p in self.placements[obj] if p.scope == scope)

    def coverage(self) -> NamespaceCoverage:
        """Namespaced objects with a known effective namespace (every placement has one)."""
        namespaced = 0
        covered = 0
        without: list[ObjectId] = []
        cluster_scoped = NamespaceReason.CLUSTER_SCOPED
        for obj, found in self.placements.items():  # (`without` is sorted below: no sort of every object)
            if len(found) == 1:  # the usual object: one placement, no generator to run
                namespace = found[0].namespace
                if namespace.reason is cluster_scoped:
                    continue
                namespaced += 1
                if namespace.known:
                    covered += 1
                else:
                    without.append(obj)
                continue
            if all(p.namespace.reason is cluster_scoped for p in found):
                continue
            namespaced += 1
            if all(p.namespace.known for p in found):
                covered += 1
            else:
                without.append(obj)
        return NamespaceCoverage(namespaced, covered, tuple(sorted(without)))
