"""`audit TREE`: a GitOps tree read once, then one snapshot per cluster, as its builds leave its objects.

The offline reader walks and parses the tree once, with a `TreeCollector` as
its observer (`auditor.sources.gitops.tree_read`, which imports this module
while the reader's workers parse); the layout is resolved from that parse (docs/gitops.md) and
the reader's objects are split per scope (`seam.place_objects`): each object
as its build leaves it (effective namespace, Namespace renamed), in every
cluster that deploys it. Each cluster's snapshot also carries where each
object's namespace comes from and the Helm values files its HelmReleases
read through `valuesFrom` (configMapGenerator files), keyed by object.

Scopes and what becomes of them (docs/input.md, "GitOps repositories"):

- every cluster is audited as its own snapshot; a shared base is in each;
- what no cluster deploys, `(unreached)`, is listed and **not audited**
  (unless asked): nothing says it runs anywhere (folders the owner commented
  out, archives, manual one-offs), and auditing it would judge it against a
  cluster it is not in; `audit_unreached` audits it as a scope of its own;
- a tree whose clusters cannot be told apart is one scope, `(whole tree)`,
  audited as today, with one warning saying so; a folder without any GitOps
  structure (no kustomization, Flux or Argo CD object) is plain input: the
  caller audits it exactly as before (`TreeRead.plain`).

Audits and merges happen above this module (auditor.fleet.audit_tree).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from auditor import kinds
from auditor.model import K8sObject, NamespaceOrigin, Source
from auditor.repository import EntryView, LayoutRemark, RemarkKind, RepositoryView, ScopeKind, ScopeView
from auditor.snapshot import ObjectKey, Snapshot, ValuesFile, object_key
from auditor.sources.gitops.collect import TreeCollector
from auditor.sources.gitops.model import (
    UNREACHED_SCOPE,
    WHOLE_TREE_SCOPE,
    ChartValuesSource,
    Cluster,
    EffectiveNamespace,
    EntryKind,
    HelmValuesSource,
    NamespaceReason,
    ObjectId,
    Origin,
    TreeLayout,
)
from auditor.sources.gitops.seam import PlacedObject, place_objects
from auditor.sources.gitops.tree import KUSTOMIZATION_FILE_NAMES, Document, ParsedFile, TreeFiles, index_key_lines

if TYPE_CHECKING:
    from auditor.sources.gitops.layout import ClusterSpec

_ENTRY_TEXT = {
    EntryKind.FLUX_BOOTSTRAP: "Flux bootstrap",
    EntryKind.FLUX_INSTANCE: "FluxInstance sync",
    EntryKind.FLUX_SOURCE: "Flux sync",
    EntryKind.FLUX_ROOT: "Flux Kustomization",
    EntryKind.ARGOCD_APP_OF_APPS: "Argo CD app of apps",
    EntryKind.ARGOCD_APPLICATIONSET: "Argo CD ApplicationSet",
    EntryKind.ARGOCD_ROOT: "Argo CD Application",
    EntryKind.ARGOCD_DESTINATION: "Argo CD destination",
    EntryKind.EXPLICIT: "--cluster",
}
_DEPLOYER_GKS = frozenset({
    "Kustomization.kustomize.toolkit.fluxcd.io", "FluxInstance.fluxcd.controlplane.io",
    "Application.argoproj.io", "ApplicationSet.argoproj.io",
})


@dataclass(frozen=True)
class AuditScope:
    """One scope of the tree and the snapshot it is audited as (None when it is not audited)."""

    name: str
    kind: ScopeKind
    snapshot: Snapshot | None
    view: ScopeView


@dataclass(frozen=True)
class TreeRead:
    """A tree read for an audit: everything read, the layout, and the scopes to audit."""

    snapshot: Snapshot  # every object as read, as one offline snapshot (the plain audit's input)
    layout: TreeLayout | None  # None for plain input (no GitOps structure)
    scopes: tuple[AuditScope, ...] = ()
    repository: RepositoryView | None = None

    @property
    def plain(self) -> bool:
        """No GitOps structure: audit `snapshot` as any folder of manifests, as before."""
        return self.layout is None


@dataclass
class _Paths:
    """Tree-relative paths (the layout's) spelled as the reader spells them (findings' files)."""

    collector: TreeCollector
    cache: dict[str, str] = field(default_factory=dict)

    def full(self, relative: str) -> str:
        found = self.cache.get(relative)
        if found is None:
            found = self.cache[relative] = self.collector.full(relative)
        return found

    def source(self, origin: Origin | None) -> Source | None:
        return None if origin is None else Source(self.full(origin.path), origin.line)


def split_tree(path: str, snapshot: Snapshot, collector: TreeCollector, clusters: Sequence[ClusterSpec],
               audit_unreached: bool) -> TreeRead:
    """The tree `collector` saw, resolved (`resolve_layout`) and `snapshot`'s objects split per scope."""
    from auditor.sources.gitops.layout import resolve_layout

    tree = collector.tree()
    layout = resolve_layout(tree, clusters)
    if layout.single_scope and not _has_gitops_structure(tree, snapshot):
        return TreeRead(snapshot, None)
    paths = _Paths(collector)
    placed = place_objects(snapshot.objects, layout, collector.relative)
    extra: list[LayoutRemark] = []
    unknown: dict[str, list[K8sObject]] = {}
    if placed.unknown:  # not in the layout: kept as read, in what nothing deploys (or the one scope)
        target = WHOLE_TREE_SCOPE if layout.single_scope else UNREACHED_SCOPE
        unknown[target] = placed.unknown
        extra.append(LayoutRemark(RemarkKind.NOTE, None, f"{len(placed.unknown)} objects the layout does not "
                                                         f"place are kept as read, in {target}"))
    if placed.dropped:
        extra.append(LayoutRemark(RemarkKind.NOTE, None, f"{len(placed.dropped)} documents of kustomize patch "
                                                         "and generator files are not objects of any cluster"))
    names = [name for name in _scope_names(layout)
             if name != UNREACHED_SCOPE or placed.by_scope.get(name) or unknown.get(name)]
    scopes = tuple(_scope(name, placed.by_scope.get(name, []), unknown.get(name, []), layout, tree, paths,
                          audit_unreached, snapshot, extra) for name in names)
    return TreeRead(snapshot, layout, scopes, _repository(path, layout, scopes, paths, extra))


def _has_gitops_structure(tree: TreeFiles, snapshot: Snapshot) -> bool:
    """Whether anything in the tree says how it is deployed: a kustomization, a Flux or Argo CD deployer."""
    names = set(KUSTOMIZATION_FILE_NAMES)
    if any(path.rpartition("/")[2] in names for path in tree.files):
        return True
    return any(obj.gk in _DEPLOYER_GKS for obj in snapshot.objects)


def _scope_names(layout: TreeLayout) -> list[str]:
    names = [c.name for c in layout.clusters]
    if not layout.single_scope:
        names.append(UNREACHED_SCOPE)
    return names


# --- one scope -------------------------------------------------------------------------------


def _scope(name: str, placed: list[PlacedObject], unknown: list[K8sObject], layout: TreeLayout, tree: TreeFiles,
           paths: _Paths, audit_unreached: bool, read: Snapshot, remarks: list[LayoutRemark]) -> AuditScope:
    kind = (ScopeKind.UNREACHED if name == UNREACHED_SCOPE
            else ScopeKind.WHOLE_TREE if layout.single_scope else ScopeKind.CLUSTER)
    cluster = next((c for c in layout.clusters if c.name == name), None)
    view = _scope_view(name, kind, cluster, placed, len(unknown), paths,
                       audited=kind is not ScopeKind.UNREACHED or audit_unreached)
    if not view.audited:
        return AuditScope(name, kind, None, view)
    objects = [p.object for p in placed] + unknown
    charts = _chart_applications(name, placed, objects, layout, tree, paths)
    remarks.extend(charts.remarks)
    view = replace(view, generated=len(charts.objects))
    # A tree of manifests (declared state, `trees`); the files not read may hold any cluster's objects.
    snapshot = Snapshot.build([*objects, *charts.objects], mode="offline", inputs=[paths.collector.root],
                              trees=list(read.trees), input_problems=list(read.input_problems))
    snapshot.namespace_origins = {**_namespace_origins(placed, paths), **charts.namespace_origins}
    snapshot.values_from = {**_values_files(name, placed, layout, tree, paths), **charts.values_from}
    return AuditScope(name, kind, snapshot, view)


def _scope_view(name: str, kind: ScopeKind, cluster: Cluster | None, placed: list[PlacedObject], unknown: int,
                paths: _Paths, *, audited: bool) -> ScopeView:
    namespaced: set[ObjectId] = set()
    unknown_namespace: set[ObjectId] = set()
    for item in placed:
        namespace = item.placement.namespace
        if namespace.reason is NamespaceReason.CLUSTER_SCOPED:
            continue
        namespaced.add(item.placement.object)
        if not namespace.known:
            unknown_namespace.add(item.placement.object)
    entries = tuple(EntryView(_ENTRY_TEXT.get(e.kind, e.kind.value), Source(paths.full(e.origin.path), e.origin.line))
                    for e in (cluster.entry_points if cluster is not None else ()))
    root = cluster.root if cluster is not None else ""
    return ScopeView(name, kind, root, entries, len(placed) + unknown, len(namespaced),
                     len(namespaced - unknown_namespace), audited,
                     files=len({p.placement.object.path for p in placed}))


def _namespace_origins(placed: list[PlacedObject], paths: _Paths) -> dict[ObjectKey, NamespaceOrigin]:
    """Where each namespaced object's namespace comes from, as reports show it beside its line."""
    origins: dict[ObjectKey, NamespaceOrigin] = {}
    described: dict[EffectiveNamespace, NamespaceOrigin] = {}
    # A build's objects share one namespace value: found by identity first, without hashing its fields.
    last: EffectiveNamespace | None = None
    last_origin: NamespaceOrigin | None = None
    for item in placed:
        namespace = item.placement.namespace
        if namespace.reason is NamespaceReason.CLUSTER_SCOPED:
            continue
        origin = last_origin if namespace is last else described.get(namespace)
        if origin is None:
            shown = EffectiveNamespace(namespace.value, _origin_as_read(namespace.source, paths), namespace.reason,
                                       namespace.replaced, namespace.written)
            origin = described[namespace] = NamespaceOrigin(namespace.value, namespace.reason.value,
                                                            paths.source(namespace.source), shown.describe())
        last, last_origin = namespace, origin
        origins.setdefault(object_key(item.object), origin)
    return origins


def _origin_as_read(origin: Origin | None, paths: _Paths) -> Origin | None:
    return None if origin is None else Origin(paths.full(origin.path), origin.line)


def _values_files(scope: str, placed: list[PlacedObject], layout: TreeLayout, tree: TreeFiles,
                  paths: _Paths) -> dict[ObjectKey, tuple[ValuesFile, ...]]:
    """The configMapGenerator files each HelmRelease of the scope reads through `valuesFrom`, by object."""
    releases = {(p.placement.object, p.object.namespace): p.object for p in placed
                if p.object.gk == kinds.HELM_RELEASE}
    found: dict[ObjectKey, list[ValuesFile]] = {}
    for source in layout.values_sources:
        release = releases.get((source.helm_release, source.namespace)) if source.scope == scope else None
        values = _values_file(source, tree, paths) if release is not None else None
        if release is not None and values is not None:
            found.setdefault(object_key(release), []).append(values)
    return {key: tuple(sorted(files, key=lambda f: f.index)) for key, files in found.items()}


def _values_document(parsed: ParsedFile) -> tuple[Any, int, Mapping[tuple[str, ...], int]]:
    """A values file's values, first line and key lines: its one document, {} for an empty file,
    None (not a mapping of values) for several documents."""
    documents = [d for d in parsed.documents if d.data is not None]
    data = documents[0].data if len(documents) == 1 else ({} if not documents else None)
    line = documents[0].line if documents else 1
    return data, line, _KeyLines(parsed, documents[0]) if documents else {}


def _values_file(source: HelmValuesSource, tree: TreeFiles, paths: _Paths) -> ValuesFile | None:
    parsed = tree.files.get(source.file)
    if parsed is None or parsed.problem is not None:
        return None
    data, line, lines = _values_document(parsed)
    generator = f"configMapGenerator {source.config_map} ({paths.source(source.generator)})"
    return ValuesFile(source.index, data, Source(paths.full(source.file), line), generator, lines,
                      source.target_path, parsed.text or None)


# --- Argo CD Applications whose path is a chart folder of the tree ----------------------------------------


@dataclass
class _ChartApplications:
    """What a scope's snapshot gets from its in-repo Argo CD charts: the Applications that are no object of
    the tree (generated), the values files of each Application, and where a generated one's namespace is from."""

    objects: list[K8sObject] = field(default_factory=list)
    values_from: dict[ObjectKey, tuple[ValuesFile, ...]] = field(default_factory=dict)
    namespace_origins: dict[ObjectKey, NamespaceOrigin] = field(default_factory=dict)
    remarks: list[LayoutRemark] = field(default_factory=list)


def _chart_applications(scope: str, placed: list[PlacedObject], objects: list[K8sObject], layout: TreeLayout,
                        tree: TreeFiles, paths: _Paths) -> _ChartApplications:
    """Each Argo CD Application of the scope that renders a chart folder of the tree, with that chart's values.

    A declared Application (an object of the tree) gets the files; one an ApplicationSet or argocd-apps values
    generate is added as an object of its own, at the line that generates it, unless the scope already holds
    an object of its identity (which Argo CD would not let it replace: noted)."""
    out = _ChartApplications()
    sources = [source for source in layout.chart_values if source.scope == scope]
    if not sources:
        return out
    by_id: dict[ObjectId, list[PlacedObject]] = {}
    for item in placed:
        by_id.setdefault(item.placement.object, []).append(item)
    identities = {(obj.gk, obj.namespace, obj.name) for obj in objects}
    for source in sources:
        files = tuple(found for found in (_chart_file(source, index, tree, paths) for index in range(len(source.files)))
                      if found is not None)
        if source.own_object:
            for item in by_id.get(source.declared_by, []) if source.declared_by is not None else []:
                if item.object.gk == kinds.ARGO_APPLICATION and files:
                    key = object_key(item.object)
                    out.values_from[key] = out.values_from.get(key, ()) + files
            continue
        app, origin = _generated_application(source, by_id, paths)
        if (app.gk, app.namespace, app.name) in identities:
            out.remarks.append(LayoutRemark(RemarkKind.NOTE, paths.source(source.origin), (
                f"Argo CD {source.kind} {source.application}: Application {app.namespace or '-'}/{app.name} is "
                f"already an object of {scope}; the values of chart {source.chart} are not read for it")))
            continue
        identities.add((app.gk, app.namespace, app.name))
        out.objects.append(app)
        key = object_key(app)
        out.namespace_origins[key] = origin
        if files:
            out.values_from[key] = files
    return out


def _generated_application(source: ChartValuesSource, by_id: Mapping[ObjectId, list[PlacedObject]],
                           paths: _Paths) -> tuple[K8sObject, NamespaceOrigin]:
    """The Application an ApplicationSet (or argocd-apps values) makes, as Argo CD would create it: in the
    ApplicationSet's namespace (as this scope's build leaves it), with the spec it fills in."""
    generator = by_id.get(source.declared_by, []) if source.declared_by is not None else []
    if generator:
        namespace = generator[0].placement.namespace
    elif source.namespace is not None:
        namespace = EffectiveNamespace(source.namespace, source.namespace_origin, NamespaceReason.MANIFEST)
    else:
        namespace = EffectiveNamespace(None, None, NamespaceReason.UNSET)
    metadata: dict[str, Any] = {"name": source.application}
    if namespace.value is not None:
        metadata["namespace"] = namespace.value
    if source.labels:
        metadata["labels"] = dict(source.labels)
    raw = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": metadata,
           "spec": dict(source.spec)}
    shown = EffectiveNamespace(namespace.value, _origin_as_read(namespace.source, paths), namespace.reason)
    what = "its ApplicationSet's" if source.kind == "ApplicationSet" else "as the argocd-apps values say"
    origin = NamespaceOrigin(namespace.value, namespace.reason.value, paths.source(namespace.source),
                             f"{shown.describe()} ({what})")
    return K8sObject(raw, Source(paths.full(source.origin.path), source.origin.line)), origin


def _chart_file(source: ChartValuesSource, index: int, tree: TreeFiles, paths: _Paths) -> ValuesFile | None:
    label, path = source.files[index]
    parsed = tree.files.get(path)
    if parsed is None or parsed.problem is not None:
        return None
    data, line, lines = _values_document(parsed)
    origin = "the chart's values.yaml" if label == "values.yaml" else f"{label} of the Application"
    if source.destination_namespace is not None:  # where the chart's Services render (ApplicationDestination)
        origin += "; " + EffectiveNamespace(source.destination_namespace, _origin_as_read(
            source.destination_origin, paths), NamespaceReason.ARGOCD_DESTINATION).describe()
    return ValuesFile(index, data, Source(paths.full(path), line), origin, lines, None, parsed.text or None,
                      source.source_key, label)


class _KeyLines(Mapping[tuple[str, ...], int]):
    """The line of each key of a values file, indexed the first time a report asks for one (most never do)."""

    def __init__(self, parsed: ParsedFile, document: Document) -> None:
        self._parsed, self._document = parsed, document
        self._keys: dict[tuple[str, ...], int] | None = None

    def _index(self) -> dict[tuple[str, ...], int]:
        if self._keys is None:
            self._keys = index_key_lines(self._parsed.lines, self._document.line, self._document.end_line).keys
        return self._keys

    def __getitem__(self, key: tuple[str, ...]) -> int:
        return self._index()[key]

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self._index())

    def __len__(self) -> int:
        return len(self._index())


# --- the repository, as reports show it --------------------------------------------------------


def _repository(root: str, layout: TreeLayout, scopes: tuple[AuditScope, ...], paths: _Paths,
                extra: list[LayoutRemark]) -> RepositoryView:
    coverage = layout.coverage()
    folders: Counter[str] = Counter()
    for obj in layout.unreached:
        parts = obj.path.split("/")
        folders["/".join(parts[: min(len(parts) - 1, 3)]) or "."] += 1
    from auditor.sources.gitops.layout import ONE_SCOPE_NOTE, TWO_CLUSTERS_SIGN

    remarks = [LayoutRemark(RemarkKind.PROBLEM, paths.source(p.origin), p.message) for p in layout.problems]
    for note in layout.notes:
        # What nothing deploys is no cluster: same-named objects there are no sign of anything.
        warning = note.message == ONE_SCOPE_NOTE or (note.message.endswith(TWO_CLUSTERS_SIGN)
                                                     and f" in scope {UNREACHED_SCOPE} " not in note.message)
        source = None if note.origin.path == "." else paths.source(note.origin)
        remarks.append(LayoutRemark(RemarkKind.WARNING if warning else RemarkKind.NOTE, source, note.message))
    remarks.extend(extra)
    return RepositoryView(
        root=root, scopes=tuple(s.view for s in scopes), single_scope=layout.single_scope,
        namespaced=coverage.namespaced, with_namespace=coverage.with_namespace, unreached=len(layout.unreached),
        unreached_folders=tuple(sorted(folders.items(), key=lambda item: (-item[1], item[0]))),
        remarks=tuple(remarks),
    )
