"""Telling the clusters of a tree apart: deployers, the graph between them, entry points, names.

A *deployer* is anything that builds a folder of the tree into a cluster: a
Flux Kustomization, a FluxInstance sync, an Argo CD Application (declared or
generated), or a `NAME=PATH` cluster given by hand. Deployer A points at B
when A's build contains the object that declares B. Entry points are the
strongly connected groups of that graph that nothing else points at, and
that look like how a cluster's GitOps starts:

- `flux bootstrap`: a Kustomization whose build contains itself (or a cycle,
  as with the Flux Operator, whose HelmRelease syncs the folder that deploys
  it);
- a FluxInstance sync, a Kustomization named `flux-system`, or one declared
  in the same file as the GitRepository it builds (gotk-sync.yaml);
- an Argo CD app of apps, or an ApplicationSet.

Other unreferenced deployers (stale or archived Kustomizations, say) are
entry points only when the tree has no entry point of the kinds above.

Clusters are named after the `clusters/<name>/` folder of their entry point
when there is one; else, with several entry points, after the first folder
where their paths differ (`kubernetes/cluster-0/...` and `kubernetes/nas-1/...`
give `cluster-0` and `nas-1`); a tree with one cluster is named after the
tree's folder. Entry points that get the same name are one cluster.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence


def strongly_connected(nodes: Sequence[str], edges: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (deep graphs must not exhaust the stack); components in discovery order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, child_index = work.pop()
            if child_index == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges.get(node, ())
            advanced = False
            while child_index < len(children):
                child = children[child_index]
                child_index += 1
                if child not in index:
                    work.append((node, child_index))
                    work.append((child, 0))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return components


def root_components(nodes: Sequence[str], edges: Mapping[str, Sequence[str]]) -> list[tuple[list[str], bool]]:
    """Strongly connected components nothing outside points at, each with whether it holds a cycle."""
    components = strongly_connected(nodes, edges)
    member_of = {node: i for i, component in enumerate(components) for node in component}
    pointed_at: set[int] = set()
    for node in nodes:
        for child in edges.get(node, ()):
            if child in member_of and member_of[child] != member_of[node]:
                pointed_at.add(member_of[child])
    out: list[tuple[list[str], bool]] = []
    for i, component in enumerate(components):
        if i in pointed_at:
            continue
        cyclic = len(component) > 1 or component[0] in edges.get(component[0], ())
        out.append((component, cyclic))
    return out


def cluster_folder(path: str) -> tuple[str, str] | None:
    """(name, folder) when the path runs through a `clusters/<name>/` folder (Flux's documented layout)."""
    parts = path.split("/") if path else []
    for i, part in enumerate(parts[:-1]):
        if part == "clusters":
            return parts[i + 1], "/".join(parts[: i + 2])
    return None


def name_clusters(entry_paths: Sequence[str], tree_root: str) -> list[tuple[str, str]]:
    """A (name, folder) for each entry point's folder, by the rules in the module docstring."""
    named: list[tuple[str, str] | None] = [cluster_folder(p) for p in entry_paths]
    rest = [p for p, n in zip(entry_paths, named, strict=True) if n is None]
    distinct = sorted(set(rest))
    fallback: dict[str, tuple[str, str]] = {}
    if len(distinct) == 1 and all(n is None for n in named):
        fallback[distinct[0]] = (tree_name(tree_root), "")
    elif distinct:
        split = [p.split("/") if p else [] for p in distinct]
        depth = 0
        while all(len(s) > depth for s in split) and len({s[depth] for s in split}) == 1:
            depth += 1
        for path, parts in zip(distinct, split, strict=True):
            if len(parts) > depth:
                fallback[path] = (parts[depth], "/".join(parts[: depth + 1]))
            else:  # an entry at the common folder itself
                fallback[path] = (tree_name(tree_root) if not path else parts[-1], path)
    return [n if n is not None else fallback[p] for p, n in zip(entry_paths, named, strict=True)]


def tree_name(root: str) -> str:
    name = os.path.basename(os.path.abspath(root).rstrip(os.sep))
    return name or "tree"


def unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
