"""What an audit of a GitOps repository adds to its result: the clusters, and how the tree was read.

`audit TREE` reads a GitOps tree (auditor.sources.gitops.audit_scopes) and
audits each cluster it deploys as its own snapshot (auditor.fleet.audit_tree).
Every report then says which clusters were found and from where, how many
objects got the namespace kustomize, Flux or Argo CD give them, what no
cluster deploys (not audited), and the layout's problems and notes. These are
the small, neutral values reports read; nothing here knows how they are made.
Files are spelled as findings spell them (the tree as given, joined); folders
(a cluster's root, what is not deployed) are relative to the tree.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from auditor.model import Source


class ScopeKind(str, enum.Enum):
    CLUSTER = "cluster"  # a cluster the tree deploys (detected, or given with --cluster)
    UNREACHED = "unreached"  # objects no cluster entry point reaches
    WHOLE_TREE = "whole-tree"  # the tree's clusters cannot be told apart: one scope

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class EntryView:
    """Where a cluster's deployment starts: what starts it (`Flux bootstrap`) and the line that says so."""

    kind: str
    source: Source

    def __str__(self) -> str:
        return f"{self.kind} at {self.source}"


@dataclass(frozen=True, slots=True)
class ScopeView:
    """One scope of the tree: a cluster (or what no cluster deploys), and what it holds."""

    name: str
    kind: ScopeKind
    root: str  # the cluster's folder, relative to the tree ("" when it has none of its own)
    entry_points: tuple[EntryView, ...]
    objects: int
    namespaced: int  # namespaced objects of the scope
    with_namespace: int  # ... whose effective namespace is known
    audited: bool
    files: int = 0
    # Argo CD Applications an ApplicationSet (or argocd-apps values) generates, added to the scope's snapshot:
    # no file of the tree holds them, so `objects` does not count them.
    generated: int = 0


class RemarkKind(str, enum.Enum):
    PROBLEM = "problem"  # a defect kustomize, Flux or Argo CD would refuse
    WARNING = "warning"  # changes what the audit means: one scope for several clusters, two configurations...
    NOTE = "note"  # read but deliberately not resolved (patches, generators, remote bases)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class LayoutRemark:
    """A note or problem of a GitOps tree's layout, at the file and line it is about when there is one."""

    kind: RemarkKind
    source: Source | None
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}" if self.source is not None else self.message


@dataclass(frozen=True)
class RepositoryView:
    """How `audit TREE` read the tree (docs/input.md, "GitOps repositories")."""

    root: str
    scopes: tuple[ScopeView, ...]
    single_scope: bool
    namespaced: int  # namespaced objects of the tree (each counted once, whatever its placements)
    with_namespace: int
    unreached: int  # objects no cluster deploys
    unreached_folders: tuple[tuple[str, int], ...]  # (folder relative to the tree, objects), the largest first
    remarks: tuple[LayoutRemark, ...] = ()

    @property
    def clusters(self) -> tuple[ScopeView, ...]:
        return tuple(s for s in self.scopes if s.kind is not ScopeKind.UNREACHED)

    @property
    def audited(self) -> tuple[ScopeView, ...]:
        return tuple(s for s in self.scopes if s.audited)

    def remarks_of(self, kind: RemarkKind) -> tuple[LayoutRemark, ...]:
        return tuple(r for r in self.remarks if r.kind is kind)

    @property
    def namespace_ratio(self) -> float:
        return self.with_namespace / self.namespaced if self.namespaced else 1.0
