"""Resolving a tree: which cluster each object lands in, in which namespace, deployed by what.

`resolve_layout(tree)` is a pure function of the parsed tree (see
`tree.read_tree_files`). Steps:

1. every deployer of the tree is read (`clusters` module docstring) and its
   folder built (`kustomize.Kustomizer`);
2. the graph between deployers gives the entry points, the entry points the
   clusters (or the `NAME=PATH` clusters given by hand, which replace
   detection);
3. from each entry point, every build it reaches places its objects in that
   cluster (an Argo CD destination other than the local cluster starts a
   cluster of that name);
4. objects no entry point reaches are placed in the `(unreached)` scope, with
   the namespace their own kustomization (if any) gives them; a tree without
   any entry point is one `(whole tree)` scope, said once in the notes;
5. same-named cluster-scoped objects in one scope are noted as a sign of two
   clusters; HelmRelease `valuesFrom` ConfigMaps that a configMapGenerator of
   the same build makes are mapped to their files, and each Argo CD
   Application whose path is a chart folder to that chart's values files.

Cost is linear in what the builds contain: each folder's plain build is
computed once and shared by every build that includes it.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from auditor.gc_pause import collector_paused
from auditor.model import as_list
from auditor.sources.gitops import argo, flux
from auditor.sources.gitops.clusters import name_clusters, root_components, unique
from auditor.sources.gitops.kustomize import Build, BuildItem, Entry, Kustomizer, set_namespace
from auditor.sources.gitops.model import (
    UNREACHED_SCOPE,
    WHOLE_TREE_SCOPE,
    Application,
    ChartValuesSource,
    Cluster,
    EntryKind,
    EntryPoint,
    HelmValuesSource,
    NamespaceReason,
    Note,
    ObjectId,
    Origin,
    Placement,
    Problem,
    Tool,
    TreeLayout,
)
from auditor.sources.gitops.scope import Scopes
from auditor.sources.gitops.tree import KUSTOMIZATION_FILE_NAMES, ObjectRecord, TreeFiles, iter_objects, join, normalize

# Notes a later stage recognises: they change what an audit of the tree means (docs/gitops.md).
TWO_CLUSTERS_SIGN = "a sign of two clusters in one scope"
ONE_SCOPE_NOTE = ("no cluster entry point found (no Flux bootstrap or sync, no Argo CD application): the tree is "
                  "read as one scope")


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A cluster given by hand (`--cluster NAME=PATH`): PATH is a folder or file of the tree."""

    name: str
    path: str


def parse_cluster_arg(text: str) -> ClusterSpec:
    """`prod=clusters/prod` -> ClusterSpec; ValueError with a one-line reason otherwise."""
    name, sep, path = text.partition("=")
    name, path = name.strip(), path.strip()
    if not sep or not name or not path:
        raise ValueError(f"--cluster {text!r}: expected NAME=PATH")
    if name.startswith("(") or "/" in name:
        raise ValueError(f"--cluster {text!r}: a cluster name cannot start with '(' or hold '/'")
    return ClusterSpec(name, path)


@dataclass(frozen=True, slots=True)
class _Deployer:
    """Something that deploys a folder (a Flux Kustomization, an Argo CD Application, an explicit cluster),
    and where it is declared."""

    key: str
    tool: Tool
    kind: str
    name: str
    declared_by: ObjectId | None
    declared_in: str
    path: str
    flux_spec: flux.FluxKustomizationSpec | None = None
    sync_spec: flux.FluxSyncSpec | None = None
    argo_spec: argo.ArgoAppSpec | None = None


@dataclass
class _State:
    """What resolving a tree has found so far: placements, clusters' files and applications, values sources."""

    placements: dict[ObjectId, list[Placement]] = field(default_factory=dict)
    seen: set[tuple[ObjectId, str, str, str | None, str]] = field(default_factory=set)
    cluster_files: dict[str, set[str]] = field(default_factory=dict)
    cluster_apps: dict[str, list[Application]] = field(default_factory=dict)
    values: list[HelmValuesSource] = field(default_factory=list)
    values_seen: set[tuple[ObjectId, str, int]] = field(default_factory=set)
    chart_values: list[ChartValuesSource] = field(default_factory=list)
    charts_seen: set[tuple[str, str]] = field(default_factory=set)
    destinations: dict[str, list[EntryPoint]] = field(default_factory=dict)


class _Resolver:
    def __init__(self, tree: TreeFiles, explicit: Sequence[ClusterSpec]) -> None:
        self.tree = tree
        self.explicit = tuple(explicit)
        self.records: dict[ObjectId, ObjectRecord] = {r.id: r for r in iter_objects(tree)}
        self.scopes = Scopes(self.records.values())
        self.kustomizer = Kustomizer(tree, self.scopes)
        self.problems: list[Problem] = []
        self.notes: list[Note] = list(tree.notes)
        self.deployers: dict[str, _Deployer] = {}
        self.by_record: dict[ObjectId, list[str]] = {}
        self.by_chart: dict[str, list[str]] = {}
        self.builds: dict[str, Build] = {}
        self.state = _State()
        for path in sorted(tree.files):
            problem = tree.files[path].problem
            if problem is not None:
                self.problems.append(problem)

    # --- deployers -------------------------------------------------------------------

    def _add(self, deployer: _Deployer) -> None:
        if deployer.key in self.deployers:
            return
        self.deployers[deployer.key] = deployer
        if deployer.declared_by is not None:
            self.by_record.setdefault(deployer.declared_by, []).append(deployer.key)

    def register_kustomizations(self) -> None:
        """Read every kustomization file once, so every file's role is known before objects are placed."""
        for directory in sorted(self.tree.dirs):
            self.kustomizer.kustomization_of(directory)
        names = set(KUSTOMIZATION_FILE_NAMES)
        for path in sorted(self.tree.files):
            if path.rpartition("/")[2] in names:
                continue
            for document in self.tree.files[path].documents:
                data = document.data
                if (isinstance(data, dict) and isinstance(data.get("apiVersion"), str)
                        and data["apiVersion"].startswith("kustomize.config.k8s.io/")):
                    self.notes.append(Note(Origin(path, document.line), "a kustomization in a file kustomize never "
                                           f"reads as one (only {', '.join(KUSTOMIZATION_FILE_NAMES)}): not used"))

    def collect_deployers(self) -> None:
        argo_notes: list[Note] = []
        sources = flux.source_index(self.tree, list(self.records.values()))
        for record in self.records.values():
            if record.gk == flux.FLUX_KUSTOMIZATION_GK:
                spec = flux.read_flux_kustomization(self.tree, record, sources)
                self.notes.extend(spec.notes)
                if spec.path is not None:
                    self._add(_Deployer(f"flux:{record.id}", Tool.FLUX, "Kustomization", record.name, record.id,
                                        record.id.path, spec.path, flux_spec=spec))
            elif record.gk in (flux.FLUX_INSTANCE_GK, flux.HELM_RELEASE_GK):
                sync = flux.read_flux_sync(self.tree, record)
                if sync is None:
                    continue
                if sync.path is None:
                    self.notes.append(Note(sync.origin, f"Flux sync of {sync.source_kind} path {sync.written_path} "
                                                        "is not in this tree"))
                    continue
                self._add(_Deployer(f"sync:{record.id}", Tool.FLUX, "FluxInstance", sync.name, record.id,
                                    record.id.path, sync.path, sync_spec=sync))
            elif record.gk == argo.APPLICATION_GK:
                app = argo.read_application(self.tree, record, argo_notes)
                if app is not None:
                    self._add_argo(app, record.id)
            elif record.gk == argo.APPLICATION_SET_GK:
                for app in argo.read_application_set(self.tree, record, argo_notes):
                    self._add_argo(app, record.id)
        for directory in sorted(self.tree.dirs):
            listing = self.tree.dirs[directory]
            if "Chart.yaml" in listing.files and "values.yaml" in listing.files:
                for app in argo.read_argocd_apps_values(self.tree, directory, argo_notes):
                    for key in self._add_argo(app, None):
                        self.by_chart.setdefault(directory, []).append(key)
        self.notes.extend(argo_notes)

    def _add_argo(self, app: argo.ArgoAppSpec, declared_by: ObjectId | None) -> list[str]:
        keys = []
        for path in app.paths:
            key = f"argo:{app.declared_by}:{app.name}:{path}"
            self._add(_Deployer(key, Tool.ARGOCD, app.kind, app.name, declared_by, app.origin.path, path,
                                argo_spec=app))
            keys.append(key)
        return keys

    # --- builds ----------------------------------------------------------------------

    def build_of(self, deployer: _Deployer) -> Build:
        found = self.builds.get(deployer.key)
        if found is not None:
            return found
        k = self.kustomizer
        if deployer.flux_spec is not None:
            spec = deployer.flux_spec
            components = tuple(Entry.at(value, origin) for value, origin in spec.components)
            namespace = None
            if spec.target_namespace is not None and spec.target_namespace_origin is not None:
                namespace = (spec.target_namespace, spec.target_namespace_origin,
                             NamespaceReason.FLUX_TARGET_NAMESPACE)
            build = k.build_root(deployer.path, extra_components=components, namespace=namespace, who="Flux")
        elif deployer.sync_spec is not None:
            build = k.build_root(deployer.path, who="Flux")
        elif deployer.argo_spec is not None:
            build = self._argo_build(deployer.argo_spec, deployer.path)
        else:
            build = self._explicit_build(deployer.path)
        self.builds[deployer.key] = build
        return build

    def _argo_build(self, app: argo.ArgoAppSpec, path: str) -> Build:
        k = self.kustomizer
        listing = self.tree.dirs.get(path)
        if k.has_kustomization(path):
            override = None
            if app.kustomize_namespace is not None:
                override = (app.kustomize_namespace, app.destination_origin, NamespaceReason.ARGOCD_KUSTOMIZE)
            build = k.build_root(path, namespace=override, who="Argo CD")
        elif listing is not None and "Chart.yaml" in listing.files:
            files, notes, problems = self._chart_value_files(app, path)
            chart_files = frozenset({join(path, "Chart.yaml"), *(file for _, file in files)})
            read = ", ".join(file.removeprefix(f"{path}/") for _, file in files) or "none in the tree"
            notes.append(Note(Origin(join(path, "Chart.yaml")), f"Argo CD {app.kind} {app.name}: Helm chart rendered "
                              f"by Argo CD; its values are read ({read}), its templates are not"))
            return Build(path, "helm-chart", (), (), chart_files, tuple(problems), tuple(notes))
        else:
            build = k.plain_directory(path, recurse=app.recurse, who="Argo CD")
        if app.destination_namespace is None:
            return build
        value, origin = app.destination_namespace, app.destination_origin
        items = tuple(set_namespace(i, value, origin, NamespaceReason.ARGOCD_DESTINATION, self.scopes,
                                    only_unset=True) for i in build.items)
        generated = tuple(k.set_generated_namespace(g, value, origin, NamespaceReason.ARGOCD_DESTINATION,
                                                    only_unset=True) for g in build.generated)
        return Build(build.directory, build.kind, items, generated, build.files, build.problems, build.notes)

    def _chart_value_files(self, app: argo.ArgoAppSpec, chart: str
                           ) -> tuple[list[tuple[str, str]], list[Note], list[Problem]]:
        """(label, path) of the values files Argo CD renders the chart with that the tree holds, in order:
        the chart's values.yaml, then `helm.valueFiles`, relative to the chart (Argo CD Helm user guide,
        https://argo-cd.readthedocs.io/en/release-2.9/user-guide/helm/#values-files)."""
        files: list[tuple[str, str]] = []
        notes: list[Note] = []
        problems: list[Problem] = []
        if "values.yaml" in self.tree.dirs[chart].files:
            files.append(("values.yaml", join(chart, "values.yaml")))
        key = app.source_keys[app.paths.index(chart)] if chart in app.paths else ("spec", "source")
        helm = argo.helm_of(app.spec, key)
        where = argo.dotted_key(key)
        for index, written in enumerate(as_list(helm.get("valueFiles"))):
            label = f"{where}.helm.valueFiles[{index}]"
            if not isinstance(written, str) or not written:
                continue
            path = normalize(join(chart, written)) if "://" not in written and not written.startswith("$") else None
            if path is not None and self.tree.is_file(path):
                files.append((label, path))
            elif path is None:
                notes.append(Note(app.origin, f"Argo CD {app.kind} {app.name}: {label} {written} is not a file of "
                                              "this tree (another source, a URL): not read"))
            elif helm.get("ignoreMissingValueFiles") is True or "{{" in written:
                why = "ignoreMissingValueFiles: Argo CD skips it" if "{{" not in written else "a template parameter"
                notes.append(Note(app.origin, f"Argo CD {app.kind} {app.name}: {label} {written} is not in the "
                                              f"tree ({why}): not read"))
            else:
                problems.append(Problem(app.origin, f"Argo CD {app.kind} {app.name}: {label} {path} is not in the "
                                                    "tree (Argo CD fails to render the chart without it)"))
        return files, notes, problems

    def record_chart_values(self, deployer: _Deployer, scope: str) -> None:
        """The values files of an Argo CD Application whose path is a chart folder, for the scope's snapshot."""
        app = deployer.argo_spec
        if app is None or (deployer.key, scope) in self.state.charts_seen:
            return
        self.state.charts_seen.add((deployer.key, scope))
        files, _, _ = self._chart_value_files(app, deployer.path)
        key = app.source_keys[app.paths.index(deployer.path)] if deployer.path in app.paths else ("spec", "source")
        own = deployer.declared_by is not None and app.kind == "Application"
        self.state.chart_values.append(ChartValuesSource(
            app.name, app.namespace, app.namespace_origin, app.kind, deployer.declared_by, app.origin, own, scope,
            deployer.path, key, tuple(files), app.destination_namespace, app.destination_origin, app.spec,
            app.labels))

    def _explicit_build(self, path: str) -> Build:
        if path in self.tree.dirs:
            return self.kustomizer.build_root(path, who="the cluster folder")
        return self.kustomizer.plain_files((path,))

    def children(self, deployer: _Deployer) -> list[str]:
        build = self.build_of(deployer)
        out: list[str] = []
        for item in build.items:
            out.extend(self.by_record.get(item.record.id, ()))
        if build.kind == "helm-chart":
            out.extend(self.by_chart.get(build.directory, ()))
        return unique(out)

    # --- entry points ------------------------------------------------------------------

    def entry_points(self) -> tuple[list[tuple[_Deployer, EntryKind]], list[_Deployer]]:
        """Chosen entry deployers with their kind, and the unreferenced deployers left out."""
        keys = sorted(self.deployers)
        edges = {key: self.children(self.deployers[key]) for key in keys}
        recognised: list[tuple[_Deployer, EntryKind]] = []
        fallback: list[tuple[_Deployer, EntryKind]] = []
        for component, cyclic in root_components(keys, edges):
            members = [self.deployers[key] for key in component]
            chosen = self._classify(members, cyclic, edges)
            if chosen[1] in (EntryKind.FLUX_ROOT, EntryKind.ARGOCD_ROOT):
                fallback.append(chosen)
            else:
                recognised.append(chosen)
        if recognised:
            return recognised, [d for d, _ in fallback]
        if fallback:
            self.notes.append(Note(Origin(fallback[0][0].declared_in),
                                   "no Flux bootstrap, FluxInstance or Argo CD app of apps found: every deployer "
                                   "nothing else deploys is taken as an entry point"))
        return fallback, []

    def _classify(self, members: list[_Deployer], cyclic: bool,
                  edges: dict[str, list[str]]) -> tuple[_Deployer, EntryKind]:
        syncs = [m for m in members if m.sync_spec is not None]
        if syncs:
            return syncs[0], EntryKind.FLUX_INSTANCE
        fluxes = [m for m in members if m.flux_spec is not None]
        argos = [m for m in members if m.argo_spec is not None]
        named = [m for m in fluxes if m.name == "flux-system"]
        if cyclic:
            if fluxes:
                return (named or fluxes)[0], EntryKind.FLUX_BOOTSTRAP
            return argos[0], EntryKind.ARGOCD_APP_OF_APPS
        only = members[0]
        if only.flux_spec is not None:
            if only.name == "flux-system" or flux.declares_own_source(self.tree, only.flux_spec):
                return only, EntryKind.FLUX_SOURCE
            return only, EntryKind.FLUX_ROOT
        if only.argo_spec is not None:
            if only.kind == "ApplicationSet":
                return only, EntryKind.ARGOCD_APPLICATIONSET
            if any(self.deployers[c].argo_spec is not None for c in edges.get(only.key, ())):
                return only, EntryKind.ARGOCD_APP_OF_APPS
            return only, EntryKind.ARGOCD_ROOT
        return only, EntryKind.EXPLICIT

    # --- placing -----------------------------------------------------------------------

    def application(self, deployer: _Deployer, namespace: str | None) -> Application:
        record = self.records.get(deployer.declared_by) if deployer.declared_by is not None else None
        own_namespace = namespace or (record.namespace if record is not None else None)
        origin = Origin(deployer.declared_in, deployer.declared_by.line if deployer.declared_by else None)
        if deployer.flux_spec is not None:
            spec = deployer.flux_spec
            depends = tuple(f"{ns or own_namespace or '-'}/{name}" for name, ns in spec.depends_on)
            source = f"{spec.source_kind}/{spec.source_namespace or own_namespace or '-'}/{spec.source_name or '-'}"
            return Application(Tool.FLUX, "Kustomization", deployer.name, own_namespace, origin, deployer.path,
                               spec.target_namespace, source, depends, spec.substitute)
        if deployer.sync_spec is not None:
            return Application(Tool.FLUX, "FluxInstance", deployer.name, own_namespace, deployer.sync_spec.origin,
                               deployer.path, source_ref=deployer.sync_spec.source_kind)
        if deployer.argo_spec is not None:
            app = deployer.argo_spec
            return Application(Tool.ARGOCD, app.kind, app.name, app.namespace or own_namespace, app.origin,
                               deployer.path, app.destination_namespace, destination=app.destination)
        return Application(Tool.EXPLICIT, "cluster", deployer.name, None, Origin(deployer.path), deployer.path)

    def place_build(self, build: Build, scope: str, application: Application | None) -> None:
        state = self.state
        self.problems.extend(build.problems)
        self.notes.extend(build.notes)
        files = state.cluster_files.setdefault(scope, set())
        files |= build.files
        if application is not None:
            state.cluster_apps.setdefault(scope, []).append(application)
        app_key = application.origin.__str__() + application.path if application is not None else ""
        for item in build.items:
            self._place(item, scope, application, app_key, files)
        self._map_values(build, scope)

    def _place(self, item: BuildItem, scope: str, application: Application | None, app_key: str,
               files: set[str] | None = None) -> None:
        record = item.record
        seen = self.state.seen
        before = len(seen)
        seen.add((record.id, scope, app_key, item.namespace.value, item.name))
        if len(seen) == before:  # placed so already (one hash of the key, not two)
            return
        placement = Placement(record.id, record.kind, record.api_version, item.name, scope, application,
                              item.namespace, item.edits, item.renamed_from)
        self.state.placements.setdefault(record.id, []).append(placement)
        if files is None:
            files = self.state.cluster_files.setdefault(scope, set())
        files.add(record.id.path)

    def _map_values(self, build: Build, scope: str) -> None:
        if not build.generated:
            return
        generated = {(g.name, g.namespace.value): g for g in build.generated}
        for item in build.items:
            record = item.record
            if record.gk != flux.HELM_RELEASE_GK:
                continue
            spec = record.data.get("spec")
            values_from = spec.get("valuesFrom") if isinstance(spec, dict) else None
            if not isinstance(values_from, list):
                continue
            for index, entry in enumerate(values_from):
                if not isinstance(entry, dict) or entry.get("kind") != "ConfigMap":
                    continue
                name = entry.get("name")
                found = generated.get((name, item.namespace.value)) if isinstance(name, str) else None
                if found is None:
                    continue
                value_key = entry.get("valuesKey") if isinstance(entry.get("valuesKey"), str) else "values.yaml"
                for key, path in found.files:
                    if key != value_key or (record.id, scope, index) in self.state.values_seen:
                        continue
                    self.state.values_seen.add((record.id, scope, index))
                    target = entry.get("targetPath")
                    self.state.values.append(HelmValuesSource(
                        record.id, record.name, item.namespace.value, scope, index, found.name, key, path,
                        found.origin, target if isinstance(target, str) else None, entry.get("optional") is True,
                        found.suffix_hash and not found.name_reference_config))

    def walk(self, starts: list[tuple[_Deployer, str]]) -> None:
        """Place everything the start deployers reach, breadth first; an Argo CD destination starts a cluster."""
        queue: deque[tuple[_Deployer, str, str | None]] = deque((d, scope, None) for d, scope in starts)
        visited: set[tuple[str, str]] = set()
        while queue:
            deployer, scope, namespace = queue.popleft()
            if (deployer.key, scope) in visited:
                continue
            visited.add((deployer.key, scope))
            application = self.application(deployer, namespace)
            build = self.build_of(deployer)
            self.place_build(build, scope, application)
            if build.kind == "helm-chart":
                self.record_chart_values(deployer, scope)
            for item in build.items:
                for child_key in self.by_record.get(item.record.id, ()):
                    child = self.deployers[child_key]
                    queue.append((child, self._child_scope(child, scope), item.namespace.value))
            if build.kind == "helm-chart":
                for child_key in self.by_chart.get(build.directory, ()):
                    child = self.deployers[child_key]
                    queue.append((child, self._child_scope(child, scope), None))
        for deployer, scope in starts:
            # An entry point's own object (applied by hand to bootstrap) is in its cluster too, as written,
            # unless a build of that cluster places it (`flux bootstrap` syncs its own folder).
            record = self.records.get(deployer.declared_by) if deployer.declared_by is not None else None
            if record is not None and not any(p.scope == scope for p in self.state.placements.get(record.id, ())):
                self._place(self.kustomizer.initial_item(record), scope, None, "")

    def _child_scope(self, child: _Deployer, scope: str) -> str:
        app = child.argo_spec
        if app is None or app.destination == argo.IN_CLUSTER or scope in (UNREACHED_SCOPE, WHOLE_TREE_SCOPE):
            return scope
        entry = EntryPoint(EntryKind.ARGOCD_DESTINATION, app.origin, child.path, app.name)
        found = self.state.destinations.setdefault(app.destination, [])
        if entry not in found:
            found.append(entry)
        return app.destination

    # --- what nothing reaches ------------------------------------------------------------

    def place_unreached(self, scope: str, orphans: list[_Deployer]) -> None:
        if orphans:
            self.walk([(d, scope) for d in orphans])
        placed = set(self.state.placements)
        if all(obj in placed for obj in self.records):
            return
        roots = self._kustomize_roots()
        for directory in roots:
            build = self.kustomizer.build(directory)
            if build is None:
                continue
            todo = [item for item in build.items if item.record.id not in placed]
            if not todo and not build.problems:
                continue
            path = self.tree.kustomization_file(directory)[0] or directory
            application = Application(Tool.KUSTOMIZE, "Kustomization", directory or ".", None, Origin(path),
                                      directory)
            self.place_build(Build(build.directory, build.kind, tuple(todo), build.generated, build.files,
                                   build.problems, build.notes), scope, application if todo else None)
        placed = set(self.state.placements)
        not_resources = self.non_resource_files()
        for obj in sorted(self.records, key=lambda o: (o.path, o.line)):
            if obj in placed or obj.path in not_resources:
                continue
            self._place(self.kustomizer.initial_item(self.records[obj]), scope, None, "")

    def _kustomize_roots(self) -> list[str]:
        included: set[str] = set()
        candidates: list[str] = []
        for directory in sorted(self.tree.dirs):
            kustomization = self.kustomizer.kustomization_of(directory)
            if kustomization is None:
                continue
            build = self.kustomizer.build(directory)
            if build is None:
                continue
            if kustomization.kind != "Component":
                candidates.append(directory)
            included |= build.files - {kustomization.path}
        return [d for d in candidates if (self.tree.kustomization_file(d)[0] or "") not in included]

    def non_resource_files(self) -> dict[str, str]:
        used = {p.object.path for found in self.state.placements.values() for p in found}
        return {path: role for path, role in sorted(self.kustomizer.file_roles.items()) if path not in used}

    # --- checks ----------------------------------------------------------------------

    def note_duplicates(self) -> None:
        by_scope: dict[tuple[str, str, str], list[ObjectId]] = {}
        for obj in sorted(self.state.placements):
            for placement in self.state.placements[obj]:
                if placement.namespace.reason is not NamespaceReason.CLUSTER_SCOPED:
                    continue
                record = self.records[obj]
                key = (placement.scope, record.gk, placement.name)
                found = by_scope.setdefault(key, [])
                if obj not in found:
                    found.append(obj)
        for (scope, gk, name), objects in sorted(by_scope.items()):
            if len({o.path for o in objects}) < 2:
                continue
            where = ", ".join(str(o) for o in objects)
            contents = {json.dumps(self.records[o].data, sort_keys=True, default=str) for o in objects}
            # Identical copies may be one object applied twice; different ones cannot both be right.
            how = "identical" if len(contents) == 1 else "different"
            self.notes.append(Note(Origin(objects[0].path, objects[0].line),
                                   f"{len(objects)} cluster-scoped {gk} named {name} in scope {scope} ({how}: "
                                   f"{where}): {TWO_CLUSTERS_SIGN}"))


def _explicit_deployers(resolver: _Resolver, specs: Sequence[ClusterSpec]) -> list[tuple[_Deployer, str]]:
    starts: list[tuple[_Deployer, str]] = []
    for spec in specs:
        path = normalize(spec.path)
        if path is not None and not resolver.tree.exists(path):
            path = flux.resolve_source_path(resolver.tree, spec.path)
        if path is None or not resolver.tree.exists(path):
            resolver.problems.append(Problem(Origin(spec.path), f"cluster {spec.name}: {spec.path} is not in the tree"))
            continue
        deployer = _Deployer(f"explicit:{spec.name}:{path}", Tool.EXPLICIT, "cluster", spec.name, None, path, path)
        resolver.deployers[deployer.key] = deployer
        starts.append((deployer, spec.name))
    return starts


def resolve_layout(tree: TreeFiles, clusters: Sequence[ClusterSpec] = ()) -> TreeLayout:
    """How `tree` deploys its objects (module docstring); never raises on the tree's content.

    The cyclic garbage collector is paused meanwhile: resolving allocates many
    small values (none in cycles), and each collection it would trigger walks
    every parsed document of the tree, which costs more than the resolution.
    """
    with collector_paused():
        return _resolve(tree, clusters)


def _resolve(tree: TreeFiles, clusters: Sequence[ClusterSpec]) -> TreeLayout:
    resolver = _Resolver(tree, clusters)
    resolver.register_kustomizations()
    resolver.collect_deployers()
    entries: list[tuple[str, str, EntryPoint, _Deployer]] = []  # (cluster name, folder, entry, deployer)
    orphans: list[_Deployer] = []
    if clusters:
        for deployer, name in _explicit_deployers(resolver, clusters):
            entry = EntryPoint(EntryKind.EXPLICIT, Origin(deployer.path), deployer.path, name)
            entries.append((name, deployer.path, entry, deployer))
    else:
        chosen, orphans = resolver.entry_points()
        names = name_clusters([d.path for d, _ in chosen], tree.root)
        for (deployer, kind), (name, folder) in zip(chosen, names, strict=True):
            origin = (deployer.sync_spec.origin if deployer.sync_spec is not None
                      else Origin(deployer.declared_in, deployer.declared_by.line if deployer.declared_by else None))
            entries.append((name, folder, EntryPoint(kind, origin, deployer.path, deployer.name), deployer))
    cluster_names = unique(name for name, _, _, _ in entries)
    resolver.walk([(deployer, name) for name, _, _, deployer in entries])
    single_scope = not entries
    if single_scope:
        resolver.notes.append(Note(Origin("."), ONE_SCOPE_NOTE))
        resolver.place_unreached(WHOLE_TREE_SCOPE, [])
    else:
        resolver.place_unreached(UNREACHED_SCOPE, orphans)
    resolver.note_duplicates()
    # A kustomization nothing builds still has its defects.
    resolver.problems.extend(resolver.kustomizer.kustomization_problems())
    resolver.notes.extend(resolver.kustomizer.kustomization_notes())
    state = resolver.state
    # Argo CD destinations other than the local cluster are clusters of their own.
    for scope in sorted(state.cluster_files):
        if scope not in cluster_names and scope not in (UNREACHED_SCOPE, WHOLE_TREE_SCOPE):
            cluster_names.append(scope)
    built: list[Cluster] = []
    for name in cluster_names:
        points = tuple(entry for n, _, entry, _ in entries if n == name) + tuple(state.destinations.get(name, ()))
        folders = [folder for n, folder, _, _ in entries if n == name]
        apps = tuple(dict.fromkeys(state.cluster_apps.get(name, ())))
        built.append(Cluster(name, folders[0] if folders else "", points,
                             frozenset(state.cluster_files.get(name, set())), apps))
    if single_scope:
        built = [Cluster(WHOLE_TREE_SCOPE, "", (), frozenset(state.cluster_files.get(WHOLE_TREE_SCOPE, set())),
                         tuple(dict.fromkeys(state.cluster_apps.get(WHOLE_TREE_SCOPE, ()))))]
    placements = {obj: tuple(state.placements[obj]) for obj in sorted(state.placements)}  # (path, line) order
    unreached = tuple(obj for obj, found in placements.items() if _only_unreached(found))
    return TreeLayout(
        root=tree.root,
        clusters=tuple(built),
        placements=placements,
        unreached=() if single_scope else unreached,
        single_scope=single_scope,
        problems=tuple(sorted(set(resolver.problems), key=_by_place)),
        notes=tuple(sorted(set(resolver.notes), key=_by_place)),
        values_sources=tuple(state.values),
        chart_values=tuple(state.chart_values),
        non_resource_files=resolver.non_resource_files(),
        cluster_scoped_kinds=resolver.scopes.cluster_scoped,
    )


def _only_unreached(found: tuple[Placement, ...]) -> bool:
    if len(found) == 1:  # the usual object (no generator to run)
        return found[0].scope == UNREACHED_SCOPE
    return all(p.scope == UNREACHED_SCOPE for p in found)


def _by_place(item: Problem | Note) -> tuple[str, int, str]:
    # A line-less origin (a whole file) sorts first in its file; None and int never compare.
    return (item.origin.path, item.origin.line or 0, item.message)

