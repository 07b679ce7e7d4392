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

from auditor.sources.gitops.layout import ClusterSpec, parse_cluster_arg, resolve_layout
from auditor.sources.gitops.model import (
    UNREACHED_SCOPE,
    WHOLE_TREE_SCOPE,
    Application,
    Cluster,
    EffectiveNamespace,
    EntryKind,
    EntryPoint,
    FieldEdit,
    HelmValuesSource,
    NamespaceCoverage,
    NamespaceReason,
    Note,
    ObjectId,
    Origin,
    Placement,
    Problem,
    Tool,
    TreeLayout,
)
from auditor.sources.gitops.tree import TreeFiles, read_tree_files

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
    return resolve_layout(read_tree_files(root), clusters)
