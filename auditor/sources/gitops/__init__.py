"""Namespaces and clusters as a GitOps tree defines them (kustomize, Flux, Argo CD).

Reading a tree is two steps: `read_tree_files(root)` parses every YAML/JSON
file once (the package's only I/O), and `resolve_layout(tree, clusters)` is a
pure function returning a `TreeLayout`: the clusters the tree deploys, every
object's placements (scope, effective namespace with where it came from,
the application that deploys it), what no entry point reaches, problems of
files (with lines) and notes on what is deliberately not resolved.
`read_layout(root)` does both. docs/gitops.md explains how a tree is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.sources.gitops.layout import ClusterSpec
    from auditor.sources.gitops.model import TreeLayout

# Every name is imported when first asked for: the offline reader needs only the collector
# (`collect`) before its workers start, and `audit TREE` imports the rest (the model, the
# tree, the resolution: layout, kustomize, Flux, Argo CD) while they parse (`tree_read.read_tree`).
_FROM_LAYOUT = frozenset({"ClusterSpec", "parse_cluster_arg", "resolve_layout"})
_FROM_TREE = frozenset({"TreeFiles", "read_tree_files"})


def __getattr__(name: str) -> Any:
    if name in _FROM_LAYOUT:
        from auditor.sources.gitops import layout

        return getattr(layout, name)
    if name in _FROM_TREE:
        from auditor.sources.gitops import tree

        return getattr(tree, name)
    if name in __all__:
        from auditor.sources.gitops import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "UNREACHED_SCOPE",
    "WHOLE_TREE_SCOPE",
    "Application",
    "Cluster",
    "ClusterSpec",
    "EffectiveNamespace",
    "EntryKind",
    "EntryPoint",
    "FieldEdit",
    "HelmValuesSource",
    "NamespaceCoverage",
    "NamespaceReason",
    "Note",
    "ObjectId",
    "Origin",
    "Placement",
    "Problem",
    "Tool",
    "TreeFiles",
    "TreeLayout",
    "parse_cluster_arg",
    "read_layout",
    "read_tree_files",
    "resolve_layout",
]


def read_layout(root: str, clusters: Sequence[ClusterSpec] = ()) -> TreeLayout:
    """Read and resolve the tree at `root` (a folder)."""
    from auditor.sources.gitops.layout import resolve_layout
    from auditor.sources.gitops.tree import read_tree_files

    return resolve_layout(read_tree_files(root), clusters)
