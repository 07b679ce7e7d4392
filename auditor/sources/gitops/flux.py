"""Flux objects that decide what a tree deploys: Kustomizations, their sources, FluxInstance syncs.

Facts used (Flux v2, kustomize-controller and fluxcd/pkg):

- `spec.path` is relative to the root of the source artifact; for a
  GitRepository of this repository that is the tree root.
- `spec.targetNamespace` "sets or overrides the namespace of all objects"
  (https://fluxcd.io/flux/components/kustomize/kustomizations/#target-namespace):
  the controller writes it as the `namespace:` of the root kustomization
  (fluxcd/pkg kustomize/kustomize_generator.go, WriteFile), so it wins over
  every kustomize `namespace:` below it, for every kind kustomize namespaces.
- `spec.components` are paths relative to `spec.path`, appended to the root
  kustomization's components (fluxcd/kustomize-controller#861).
- `spec.sourceRef.namespace` and `dependsOn[].namespace` default to the
  Kustomization's own namespace.
- `postBuild.substitute` replaces `${VAR}` after the build; it is kept as
  written and never applied here. `patches`, `images`, `kubeConfig` (a remote
  cluster) are noted.
- The Flux Operator's FluxInstance syncs `spec.sync.path` of its source
  (https://fluxoperator.dev/docs/crd/fluxinstance/); the flux-instance Helm
  chart takes the same under `values.instance.sync`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from auditor.model import as_list
from auditor.sources.gitops.model import Note, Origin
from auditor.sources.gitops.tree import ObjectRecord, ParsedFile, TreeFiles, child_key_line, normalize

FLUX_KUSTOMIZATION_GK = "Kustomization.kustomize.toolkit.fluxcd.io"
GIT_REPOSITORY_GK = "GitRepository.source.toolkit.fluxcd.io"
OCI_REPOSITORY_GK = "OCIRepository.source.toolkit.fluxcd.io"
FLUX_INSTANCE_GK = "FluxInstance.fluxcd.controlplane.io"
HELM_RELEASE_GK = "HelmRelease.helm.toolkit.fluxcd.io"
SOURCE_GKS = (GIT_REPOSITORY_GK, OCI_REPOSITORY_GK, "Bucket.source.toolkit.fluxcd.io",
              "ExternalArtifact.source.toolkit.fluxcd.io")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class FluxKustomizationSpec:
    """What a Flux Kustomization builds, as written (its own namespace comes from where it is placed)."""

    record: ObjectRecord
    path: str | None  # tree-relative folder; None when it is not in this tree
    written_path: str
    target_namespace: str | None
    target_namespace_origin: Origin | None
    source_kind: str
    source_name: str | None
    source_namespace: str | None
    components: tuple[tuple[str, Origin], ...]
    depends_on: tuple[tuple[str, str | None], ...]
    substitute: tuple[tuple[str, str], ...]
    notes: tuple[Note, ...]


@dataclass(frozen=True, slots=True)
class FluxSyncSpec:
    """A FluxInstance (or its Helm values) syncing a path of a source: the cluster's Flux entry point."""

    record: ObjectRecord
    name: str
    path: str | None
    written_path: str
    source_kind: str
    origin: Origin


def resolve_source_path(tree: TreeFiles, written: str) -> str | None:
    """The tree folder a source-relative path names, or None when the tree does not hold it.

    The tree is taken as the source's root. When the tree given is a
    sub-folder of the repository (`audit repo/kubernetes`), leading path parts
    that repeat the tree's own trailing folders (`kubernetes/apps`) are
    dropped.
    """
    relative = normalize(written.strip())
    if relative is None:
        return None
    if relative == "" or relative in tree.dirs:
        return relative
    root_parts = [p for p in os.path.abspath(tree.root).split(os.sep) if p]
    parts = relative.split("/")
    for count in range(1, min(len(parts), len(root_parts)) + 1):
        if parts[:count] == root_parts[-count:]:
            candidate = "/".join(parts[count:])
            if candidate == "" or candidate in tree.dirs:
                return candidate
    return None


def _line(parsed: ParsedFile | None, record: ObjectRecord, *keys: str) -> int:
    if parsed is None or record.document.line != record.id.line:
        return record.id.line
    if len(keys) == 2:
        # `spec.KEY`, what nearly every note asks for: a scan that stops at the key finds the line
        # the document's key index would (its first `KEY:` at spec's child column) without indexing
        # every line of every Flux Kustomization; the index decides what the scan cannot find.
        found = child_key_line(parsed.lines, record.document.line, record.document.end_line, *keys)
        if found is not None:
            return found
    return parsed.line_of(record.document, *keys) or record.id.line


def normalize_url(url: str) -> str:
    """`https://github.com/a/b.git`, `ssh://git@github.com/a/b` and `git@github.com:a/b` -> `github.com/a/b`."""
    text = url.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
    if "@" in text.split("/", 1)[0]:
        text = text.split("@", 1)[1]
    host, sep, rest = text.partition("/")
    if ":" in host and not sep:
        host, _, rest = host.partition(":")
    elif ":" in host:
        host = host.split(":", 1)[0]  # a port
    text = f"{host}/{rest}" if rest else host
    return text.removesuffix("/").removesuffix(".git")


@dataclass(frozen=True, slots=True)
class SourceIndex:
    """The tree's Flux GitRepositories by name, and the URLs that are this repository."""

    urls_by_name: dict[str, frozenset[str]]
    self_urls: frozenset[str]

    def is_this_tree(self, kind: str, name: str | None) -> bool | None:
        """True / False when the source is known to be (not) this repository; None when unknown."""
        if kind != "GitRepository":
            return False
        urls = self.urls_by_name.get(name or "")
        if not urls:
            return None  # not declared in the tree (flux bootstrap or a FluxInstance creates it)
        if not self.self_urls:
            return None
        return bool(urls & self.self_urls)


_INDEXED_GKS = frozenset({GIT_REPOSITORY_GK, FLUX_INSTANCE_GK, HELM_RELEASE_GK})


def source_index(tree: TreeFiles, records: list[ObjectRecord]) -> SourceIndex:
    """Which GitRepository URLs are this repository.

    Known from a FluxInstance sync URL, or a GitRepository named `flux-system`
    (what `flux bootstrap` and the Flux Operator create); otherwise the URLs of
    GitRepositories that Kustomizations build sub-folders of this tree from.
    """
    urls_by_name: dict[str, set[str]] = {}
    self_urls: set[str] = set()
    for record in records:
        if record.gk not in _INDEXED_GKS:  # (most records: their data is never looked at here)
            continue
        spec = _mapping(record.data.get("spec"))
        if record.gk == GIT_REPOSITORY_GK and isinstance(spec.get("url"), str):
            url = normalize_url(spec["url"])
            urls_by_name.setdefault(record.name, set()).add(url)
            if record.name == "flux-system":
                self_urls.add(url)
        elif record.gk in (FLUX_INSTANCE_GK, HELM_RELEASE_GK):
            sync = (_mapping(spec.get("sync")) if record.gk == FLUX_INSTANCE_GK
                    else _mapping(_mapping(_mapping(spec.get("values")).get("instance")).get("sync")))
            if isinstance(sync.get("url"), str) and isinstance(sync.get("path"), str):
                self_urls.add(normalize_url(sync["url"]))
    if not self_urls:
        for record in records:
            if record.gk != FLUX_KUSTOMIZATION_GK:
                continue
            spec = _mapping(record.data.get("spec"))
            source = _mapping(spec.get("sourceRef"))
            written = spec.get("path")
            if (source.get("kind", "GitRepository") == "GitRepository" and isinstance(written, str)
                    and resolve_source_path(tree, written) not in (None, "")):
                self_urls |= urls_by_name.get(str(source.get("name")), set())
    return SourceIndex({k: frozenset(v) for k, v in urls_by_name.items()}, frozenset(self_urls))


def _source_path(tree: TreeFiles, record: ObjectRecord, parsed: ParsedFile | None, spec: dict[str, Any],
                 sources: SourceIndex | None, notes: list[Note]) -> str | None:
    """The folder of this tree the Kustomization builds (None when it builds another source), noting why."""
    written = spec.get("path", "")
    written_path = written if isinstance(written, str) else ""
    source = _mapping(spec.get("sourceRef"))
    source_kind = _text(source.get("kind")) or "GitRepository"
    this_tree = sources.is_this_tree(source_kind, _text(source.get("name"))) if sources is not None else None
    if this_tree is False and source_kind == "GitRepository":
        notes.append(Note(Origin(record.id.path, _line(parsed, record, "spec", "sourceRef")),
                          f"Flux Kustomization {record.name} builds GitRepository {source.get('name')} "
                          "(another repository), not this tree"))
        return None
    if source_kind == "GitRepository" or (source_kind == "OCIRepository" and source.get("name") == "flux-system"):
        # An OCIRepository named flux-system is how `flux bootstrap` syncs an artifact pushed from the
        # repository itself (`flux push artifact`): read as this tree, and said so.
        path = resolve_source_path(tree, written_path)
        if path is not None and source_kind == "OCIRepository":
            notes.append(Note(Origin(record.id.path, _line(parsed, record, "spec", "sourceRef")),
                              f"Flux Kustomization {record.name}: OCIRepository flux-system read as an artifact "
                              "of this tree"))
        if path is None:
            notes.append(Note(Origin(record.id.path, _line(parsed, record, "spec", "path")),
                              f"Flux Kustomization {record.name}: path {written_path or './'} is not in this tree "
                              "(another repository, or a stale path)"))
        return path
    notes.append(Note(Origin(record.id.path, _line(parsed, record, "spec", "sourceRef")),
                      f"Flux Kustomization {record.name} builds {source_kind} {source.get('name')}, "
                      "not this tree"))
    return None


def _unapplied_notes(record: ObjectRecord, parsed: ParsedFile | None, spec: dict[str, Any]) -> list[Note]:
    """What the Kustomization does that the layout does not apply: noted, never guessed."""
    notes: list[Note] = []
    for key, what in (("patches", "patches"), ("images", "image overrides"),
                      ("commonMetadata", "common labels and annotations")):
        if spec.get(key):
            notes.append(Note(Origin(record.id.path, _line(parsed, record, "spec", key)),
                              f"Flux Kustomization {record.name}: {what} not applied (noted, not guessed)"))
    if _mapping(spec.get("postBuild")).get("substituteFrom"):
        notes.append(Note(Origin(record.id.path, _line(parsed, record, "spec", "postBuild")),
                          f"Flux Kustomization {record.name}: postBuild.substituteFrom variables come from the "
                          "cluster; ${VAR} stays as written"))
    if spec.get("kubeConfig"):
        notes.append(Note(Origin(record.id.path, _line(parsed, record, "spec", "kubeConfig")),
                          f"Flux Kustomization {record.name} applies to a remote cluster (kubeConfig); "
                          "not followed"))
    return notes


def read_flux_kustomization(tree: TreeFiles, record: ObjectRecord,
                            sources: SourceIndex | None = None) -> FluxKustomizationSpec:
    parsed = tree.files.get(record.id.path)
    spec = _mapping(record.data.get("spec"))
    notes: list[Note] = []
    written = spec.get("path", "")
    written_path = written if isinstance(written, str) else ""
    source = _mapping(spec.get("sourceRef"))
    source_kind = _text(source.get("kind")) or "GitRepository"
    path = _source_path(tree, record, parsed, spec, sources, notes)
    target = _text(spec.get("targetNamespace"))
    target_origin: Origin | None = None
    if target:
        line = record.id.line
        if parsed is not None and record.document.line == record.id.line:
            line = child_key_line(parsed.lines, line, record.document.end_line, "spec", "targetNamespace") or line
        target_origin = Origin(record.id.path, line)
    components = tuple((component, Origin(record.id.path, record.id.line))
                       for component in as_list(spec.get("components")) if isinstance(component, str) and component)
    depends_on = tuple((entry["name"], _text(entry.get("namespace")))
                       for entry in as_list(spec.get("dependsOn"))
                       if isinstance(entry, dict) and isinstance(entry.get("name"), str))
    post_build = _mapping(spec.get("postBuild"))
    substitute = tuple(sorted((str(k), str(v)) for k, v in _mapping(post_build.get("substitute")).items()))
    notes += _unapplied_notes(record, parsed, spec)
    if spec.get("kubeConfig"):
        path = None
    return FluxKustomizationSpec(record, path, written_path, target, target_origin, source_kind,
                                 _text(source.get("name")), _text(source.get("namespace")), components,
                                 depends_on, substitute, tuple(notes))


def read_flux_sync(tree: TreeFiles, record: ObjectRecord) -> FluxSyncSpec | None:
    """A FluxInstance's `spec.sync`, or the flux-instance chart's `values.instance.sync` of a HelmRelease."""
    parsed = tree.files.get(record.id.path)
    spec = _mapping(record.data.get("spec"))
    if record.gk == FLUX_INSTANCE_GK:
        sync = _mapping(spec.get("sync"))
        keys: tuple[str, ...] = ("spec", "sync")
        name = record.name
    elif record.gk == HELM_RELEASE_GK:
        sync = _mapping(_mapping(_mapping(spec.get("values")).get("instance")).get("sync"))
        keys = ("spec", "values", "instance", "sync")
        name = "flux-system"
    else:
        return None
    written = sync.get("path")
    if not isinstance(written, str):
        return None
    kind = _text(sync.get("kind")) or "GitRepository"
    # A FluxInstance syncs an OCI artifact when the repository is pushed as one: same folders.
    path = resolve_source_path(tree, written) if kind in ("GitRepository", "OCIRepository") else None
    return FluxSyncSpec(record, name, path, written, kind, Origin(record.id.path, _line(parsed, record, *keys)))


def declares_own_source(tree: TreeFiles, spec: FluxKustomizationSpec) -> bool:
    """`flux bootstrap` writes a Kustomization beside the GitRepository it syncs (gotk-sync.yaml)."""
    parsed = tree.files.get(spec.record.id.path)
    if parsed is None or spec.source_name is None:
        return False
    return any(record.gk in SOURCE_GKS and record.kind == spec.source_kind and record.name == spec.source_name
               for record in parsed.objects)
