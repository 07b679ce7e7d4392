"""The exposure map: the judged ways in (`AuditResult.exposures`) as a layered graph, for the pictures.

    LAN -> address -> Gateway listener -> route -> Service -> workload

One node per distinct hop (an address, a listener, a route, a Service, a
workload), one edge per pair of consecutive hops of some way in. The LAN
reaches an address through its announcement (the address says how: `L2
default-l2`), an address leads on through a port (the edge's label:
`31025/TCP`, left out where the listener it leads to names it). A way in
without a listener goes from its address straight to its Service (or, for a
hostPort or hostNetwork port, to its workload). Every node and edge carries
the worst verdict of the ways in through it (drift, then unjudged, excepted,
sanctioned), so a workload reached both through the edge Gateway and through
a stray NodePort shows red.

Both pictures are drawn from this map and nothing else: the Mermaid flowchart
of the Markdown report (`auditor.report.mermaid`) and the inline SVG of the
HTML report (`auditor.report.svg_map`). The map only reads the model's
entrances; it never re-derives a chain.

Large clusters: past `cap` nodes, whole namespaces are folded, one group node
per namespace and column ("media: 12 Services"), namespaces without drift
first and the largest first, until the map fits; if the groups alone are too
many, the smallest merge into "other namespaces". The map says how many nodes
it folded. Same input, same map: every order is a sort on names.
"""

from __future__ import annotations

import enum
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from auditor.exposure import (
    AddressKind,
    AnnouncementState,
    Channel,
    Declared,
    Entrance,
    JudgedEntrance,
    VerdictKind,
)
from auditor.model import ObjectRef


class Layer(enum.IntEnum):
    """The map's columns, left to right."""

    LAN = 0
    ADDRESS = 1
    LISTENER = 2
    ROUTE = 3
    SERVICE = 4
    WORKLOAD = 5

    @property
    def title(self) -> str:
        return _LAYER_TITLES[self]

    @property
    def noun(self) -> tuple[str, str]:
        """(singular, plural) for group labels: `12 Services`."""
        return _LAYER_NOUNS[self]


_LAYER_TITLES = {Layer.LAN: "LAN", Layer.ADDRESS: "Addresses", Layer.LISTENER: "Gateway listeners",
                 Layer.ROUTE: "Routes", Layer.SERVICE: "Services", Layer.WORKLOAD: "Workloads"}
_LAYER_NOUNS = {Layer.LAN: ("LAN", "LANs"), Layer.ADDRESS: ("address", "addresses"),
                Layer.LISTENER: ("listener", "listeners"), Layer.ROUTE: ("route", "routes"),
                Layer.SERVICE: ("Service", "Services"), Layer.WORKLOAD: ("workload", "workloads")}

# Worst first: a node is as bad as the worst way in through it. Unjudged (its rule did not
# run) ranks above excepted: it may be drift nobody has looked at.
VERDICT_ORDER = (VerdictKind.DRIFT, VerdictKind.UNJUDGED, VerdictKind.EXCEPTED, VerdictKind.SANCTIONED)
_RANK = {kind: len(VERDICT_ORDER) - index for index, kind in enumerate(VERDICT_ORDER)}
OTHER_NAMESPACES = "other namespaces"


def worst(kinds: Iterable[VerdictKind]) -> VerdictKind:
    return max(kinds, key=lambda kind: _RANK[kind], default=VerdictKind.SANCTIONED)


def verdict_counts(kinds: Iterable[VerdictKind]) -> tuple[tuple[VerdictKind, int], ...]:
    """(verdict, count), worst first, only the verdicts present."""
    counted = Counter(kinds)
    return tuple((kind, counted[kind]) for kind in VERDICT_ORDER if counted[kind])


def describe_counts(counts: Sequence[tuple[VerdictKind, int]]) -> str:
    """`3 drift, 1 excepted, 6 sanctioned`."""
    return ", ".join(f"{count} {kind.value}" for kind, count in counts)


@dataclass(frozen=True)
class MapNode:
    """A hop of one or more ways in, or a group of folded hops (`folded` > 0)."""

    id: str  # `n1`, `n2`...: safe as an identifier in Mermaid, SVG and HTML
    layer: Layer
    title: str  # first line: `192.168.67.240`, `mail/smtp`, `gateway/edge websecure`
    kind: str  # second line: `LoadBalancer IP`, `Service`, `HTTPS :443 *.bench.lan`
    namespace: str | None
    cluster: str | None
    status: VerdictKind  # the worst verdict of the ways in through it
    counts: tuple[tuple[VerdictKind, int], ...]  # ways in through it, by verdict
    folded: int = 0  # a group: how many hops it stands for

    @property
    def ways(self) -> int:
        return sum(count for _, count in self.counts)

    @property
    def description(self) -> str:
        """One line, for tooltips: `Service mail/smtp: 2 ways in (2 drift)`."""
        ways = self.ways
        what = f"{self.title} ({self.kind})" if self.kind else self.title
        cluster = f"{self.cluster}: " if self.cluster else ""
        plural = "way" if ways == 1 else "ways"
        return f"{cluster}{what}: {ways} {plural} in ({describe_counts(self.counts)})"


@dataclass(frozen=True)
class MapEdge:
    """An edge of the exposure map, with the verdict and the number of ways in along it."""

    source: str  # node ids
    target: str
    label: str  # the announcement (LAN -> address), the port (address -> next hop), or ""
    status: VerdictKind
    ways: int  # ways in along it


@dataclass(frozen=True)
class Folding:
    """What a capped map folded: `nodes` hops of `namespaces` namespaces into `groups` group nodes."""

    nodes: int = 0
    groups: int = 0
    namespaces: int = 0

    @property
    def sentence(self) -> str:
        if not self.nodes:
            return ""
        spaces = "namespace" if self.namespaces == 1 else "namespaces"
        groups = "group" if self.groups == 1 else "groups"
        return f"{self.nodes} nodes of {self.namespaces} {spaces} folded into {self.groups} {groups}"


@dataclass(frozen=True)
class ExposureMap:
    """The exposure map: its nodes and edges by layer, folded to at most `cap` nodes, and the ways in it draws."""

    nodes: tuple[MapNode, ...]  # by layer, then address or namespace and name
    edges: tuple[MapEdge, ...]  # by source, then target (in node order)
    counts: tuple[tuple[VerdictKind, int], ...]  # every way in drawn, by verdict
    cap: int
    folding: Folding = Folding()

    @property
    def ways(self) -> int:
        return sum(count for _, count in self.counts)

    @property
    def layers(self) -> tuple[Layer, ...]:
        """The columns that hold a node, left to right."""
        return tuple(sorted({node.layer for node in self.nodes}))


# --- the hops of one way in -------------------------------------------------------------------------

_Key = tuple[object, ...]


@dataclass
class _Draft:
    """A node being collected: its identity and labels, and the ways in through it."""

    layer: Layer
    title: str
    kind: str
    namespace: str | None
    cluster: str | None
    order: tuple[object, ...]  # sort key within its layer
    ways: dict[int, VerdictKind] = field(default_factory=dict)  # entrance index -> verdict
    foldable: bool = True  # False: shared by several namespaces (the LAN, every node address)
    announced: set[str] = field(default_factory=set)  # an address: how the LAN learns of it

    @property
    def label(self) -> str:
        """The second line: its kind, and for an address how it is announced."""
        return ", ".join([part for part in (self.kind, *sorted(self.announced)) if part])


def _named(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


_ADDRESS_KINDS = {AddressKind.LOAD_BALANCER_IP: "LB IP", AddressKind.NODE_IPS: "node addresses",
                  AddressKind.EXTERNAL_IP: "external IP", AddressKind.HOST_IP: "host IP"}


def _address(entrance: Entrance, cluster: str | None) -> tuple[_Key, _Draft]:
    address = entrance.address
    kind = _ADDRESS_KINDS[address.kind]
    if address.kind is AddressKind.NODE_IPS:  # the title says it already ("every node IP")
        kind = f"{len(address.nodes)} nodes" if address.nodes else ""
    if address.value is None and address.kind is not AddressKind.NODE_IPS:
        # Not allocated yet: each Service will get its own address, so it is a door of its own.
        key: _Key = ("address", cluster, address.display, entrance.subject.ref.sort_key)
        kind = f"{kind}, allocated when applied"
    else:
        key = ("address", cluster, address.display)
    namespace = entrance.subject.ref.namespace
    draft = _Draft(Layer.ADDRESS, address.display, kind, namespace, cluster, (address.sort_key, address.display),
                   foldable=address.kind is not AddressKind.NODE_IPS)
    announced = announcement_label(entrance)
    if announced:
        draft.announced.add(announced)
    return key, draft


def _listener(entrance: Entrance, cluster: str | None) -> tuple[_Key, _Draft] | None:
    listener = entrance.listener
    if listener is None:
        return None
    kind = f"{listener.protocol} :{listener.port}" + (f" {listener.hostname}" if listener.hostname else "")
    gateway = listener.gateway
    return (("listener", cluster, gateway.sort_key, listener.name),
            _Draft(Layer.LISTENER, f"{_named(gateway)} {listener.name}", kind, gateway.namespace, cluster,
                   (gateway.namespace or "", gateway.name, listener.name)))


def _route(entrance: Entrance, cluster: str | None) -> tuple[_Key, _Draft] | None:
    route = entrance.route
    if route is None:
        return None
    kind = route.kind + (f" {', '.join(route.hostnames)}" if route.hostnames else "")
    if not route.forwards:
        kind += " (forwards nothing)"
    ref = route.ref
    return (("route", cluster, ref.sort_key),
            _Draft(Layer.ROUTE, _named(ref), kind, ref.namespace, cluster, (ref.namespace or "", ref.name, ref.kind)))


def _services(entrance: Entrance, cluster: str | None) -> list[tuple[_Key, _Draft]]:
    out: list[tuple[_Key, _Draft]] = []
    for backend in entrance.backends:
        ref = backend.service
        kind = ref.kind
        name = ref.name
        if entrance.subject.declared is Declared.HELM_VALUES and ref == _values_service(entrance, ref):
            # The model names a values-declared Service `release:key.path`: show the release, say where.
            name = ref.name.split(":", 1)[0]
            kind = f"{ref.kind} in {entrance.subject.ref.kind} values"
        elif not backend.exists:
            kind = f"{ref.kind}, not in the input"
        title = f"{ref.namespace}/{name}" if ref.namespace else name
        out.append((("service", cluster, ref.sort_key),
                    _Draft(Layer.SERVICE, title, kind, ref.namespace, cluster, (ref.namespace or "", ref.name))))
    return out


def _values_service(entrance: Entrance, ref: ObjectRef) -> ObjectRef | None:
    """`ref` when it is the Service the subject's values declare (the model names it `subject:key.path`)."""
    return ref if ref.name.startswith(f"{entrance.subject.ref.name}:") else None


def _workloads(entrance: Entrance, cluster: str | None) -> list[tuple[_Key, _Draft]]:
    return [(("workload", cluster, w.ref.sort_key),
             _Draft(Layer.WORKLOAD, _named(w.ref), w.ref.kind, w.ref.namespace, cluster,
                    (w.ref.namespace or "", w.ref.name, w.ref.kind)))
            for w in entrance.workloads]


def announcement_label(entrance: Entrance) -> str:
    """How the LAN reaches the address: `L2 default-l2`, `not announced`, `announcement unknown`."""
    announcing = entrance.announcing
    if announcing.state is AnnouncementState.NOT_NEEDED:
        return ""
    if announcing.state is AnnouncementState.ANNOUNCED:
        return ", ".join(f"{str(a.kind).upper()} {a.by.name}" for a in announcing.by)
    if announcing.state is AnnouncementState.UNKNOWN:
        return "announcement unknown"
    return "not announced"


def port_label(entrance: Entrance) -> str:
    """`443/TCP`; `nodePort/TCP` for a node port allocated when applied; nothing when the listener it leads
    to says the port already (`HTTPS :443`)."""
    listener = entrance.listener
    if listener is not None and entrance.port == listener.port:
        return ""
    if entrance.port is not None:
        return entrance.port_display
    allocated = "nodePort" if entrance.channel is Channel.NODE_PORT else "?"
    return f"{allocated}/{entrance.protocol}"


_Stage = list[tuple[_Key, _Draft]]


def _stages(entrance: Entrance, cluster: str | None) -> list[_Stage]:
    """The hops of one way in, column by column (empty columns left out)."""
    lan: _Key = ("lan", cluster)
    stages: list[_Stage] = [
        [(lan, _Draft(Layer.LAN, "LAN", f"cluster {cluster}" if cluster else "", None, cluster, (), foldable=False))],
        [_address(entrance, cluster)],
        [hop for hop in (_listener(entrance, cluster),) if hop is not None],
        [hop for hop in (_route(entrance, cluster),) if hop is not None],
        _services(entrance, cluster),
        _workloads(entrance, cluster),
    ]
    return [stage for stage in stages if stage]


def _linked(source: _Draft, target: _Draft, single_backend: bool) -> bool:
    """Whether two hops of consecutive stages are joined. A route with several backends lists the
    workloads of all: a workload belongs to the Services of its own namespace (selectors select there)."""
    if source.layer is Layer.SERVICE and target.layer is Layer.WORKLOAD and not single_backend:
        return source.namespace == target.namespace
    return True


# --- collecting, folding, numbering -----------------------------------------------------------------


@dataclass
class _Graph:
    """The map's nodes and edges as they are collected, before they are ordered and folded."""

    drafts: dict[_Key, _Draft] = field(default_factory=dict)
    edges: dict[tuple[_Key, _Key], tuple[set[str], dict[int, VerdictKind]]] = field(default_factory=dict)

    def add_node(self, key: _Key, draft: _Draft, index: int, verdict: VerdictKind) -> None:
        kept = self.drafts.setdefault(key, draft)
        kept.ways[index] = verdict
        kept.announced |= draft.announced
        if kept.foldable and kept.namespace != draft.namespace:
            kept.foldable = False  # an address several namespaces' Services share stays in view

    def add_edge(self, source: _Key, target: _Key, label: str, index: int, verdict: VerdictKind) -> None:
        labels, ways = self.edges.setdefault((source, target), (set(), {}))
        if label:
            labels.add(label)
        ways[index] = verdict

    def add(self, index: int, judged: JudgedEntrance) -> None:
        stages = _stages(judged.entrance, judged.cluster)
        verdict = judged.verdict.kind
        for stage in stages:
            for key, draft in stage:
                self.add_node(key, draft, index, verdict)
        single_backend = len(judged.entrance.backends) <= 1
        for position, (sources, targets) in enumerate(itertools.pairwise(stages)):
            label = port_label(judged.entrance) if position == 1 else ""
            for source_key, source in sources:
                for target_key, target in targets:
                    if _linked(source, target, single_backend):
                        self.add_edge(source_key, target_key, label, index, verdict)


_Unit = tuple[str | None, str, Layer]  # (cluster, namespace, column): what one group node stands for


def _fold_units(graph: _Graph) -> dict[_Unit, list[_Key]]:
    """The foldable nodes by cluster, namespace and column."""
    units: dict[_Unit, list[_Key]] = {}
    for key, draft in graph.drafts.items():
        if draft.foldable and draft.namespace is not None:
            units.setdefault((draft.cluster, draft.namespace, draft.layer), []).append(key)
    return units


def _fold_plan(graph: _Graph, cap: int) -> dict[_Key, _Unit]:
    """Which node goes into which group, so that at most `cap` nodes remain (when folding can do it).

    First, whole namespaces of a column become one node each ("media: 12 Services"), those
    without drift first and the largest first. If that is not enough (hundreds of namespaces),
    the namespaces with the most drift, then the most ways in, keep their groups in every
    column, as many as fit, and the others merge into each column's "other namespaces".
    """
    size = len(graph.drafts)
    if size <= cap:
        return {}
    units = _fold_units(graph)

    def drift(keys: Iterable[_Key]) -> int:
        return sum(v is VerdictKind.DRIFT for key in keys for v in graph.drafts[key].ways.values())

    plan: dict[_Key, _Unit] = {}
    for unit in sorted((u for u in units if len(units[u]) > 1),
                       key=lambda u: (drift(units[u]) > 0, -len(units[u]), u[0] or "", u[1], u[2])):
        if size <= cap:
            return plan
        size -= len(units[unit]) - 1
        plan.update(dict.fromkeys(units[unit], unit))
    if size <= cap:
        return plan
    return _merge_namespaces(graph, units, plan, cap)


def _merge_namespaces(graph: _Graph, units: dict[_Unit, list[_Key]], plan: dict[_Key, _Unit],
                      cap: int) -> dict[_Key, _Unit]:
    """Keep the groups of the first namespaces (most drift, most ways in) that fit; merge the rest per column."""
    spaces: dict[tuple[str | None, str], list[_Unit]] = {}
    for unit in units:
        spaces.setdefault((unit[0], unit[1]), []).append(unit)

    def rank(space: tuple[str | None, str]) -> tuple[int, int, str, str]:
        ways = {i: v for unit in spaces[space] for key in units[unit] for i, v in graph.drafts[key].ways.items()}
        return (-sum(v is VerdictKind.DRIFT for v in ways.values()), -len(ways), space[0] or "", space[1])

    ranked = sorted(spaces, key=rank)
    base = len(graph.drafts) - sum(len(keys) for keys in units.values())  # the nodes that never fold
    # others[k]: the "other namespaces" groups needed when only the first k namespaces keep theirs.
    others, columns = [0] * (len(ranked) + 1), set()
    for position in range(len(ranked) - 1, -1, -1):
        columns |= {(u[0], u[2]) for u in spaces[ranked[position]]}
        others[position] = len(columns)
    kept, used = 0, base + others[0]
    while kept < len(ranked) and used + len(spaces[ranked[kept]]) - others[kept] + others[kept + 1] <= cap:
        used += len(spaces[ranked[kept]]) - others[kept] + others[kept + 1]
        kept += 1
    for space in ranked[kept:]:
        for unit in spaces[space]:
            plan.update(dict.fromkeys(units[unit], (unit[0], OTHER_NAMESPACES, unit[2])))
    return plan


def _group_draft(group: _Unit, members: Sequence[_Draft]) -> _Draft:
    cluster, namespace, layer = group
    singular, plural = layer.noun
    other = namespace == OTHER_NAMESPACES
    spaces = len({m.namespace for m in members})
    kind = f"{len(members)} {singular if len(members) == 1 else plural}" + (f" of {spaces} namespaces" if other else "")
    draft = _Draft(layer, namespace, f"{kind} folded", None if other else namespace, cluster,
                   ((1, "") if other else (0, namespace),))
    for member in members:
        draft.ways.update(member.ways)
    return draft


def build(exposures: Sequence[JudgedEntrance], cap: int) -> ExposureMap:
    """The map of `exposures` (an `AuditResult.exposures`), folded to at most about `cap` nodes."""
    graph = _Graph()
    for index, judged in enumerate(exposures):
        graph.add(index, judged)
    plan = _fold_plan(graph, cap)
    drafts: dict[_Key, _Draft] = {key: d for key, d in graph.drafts.items() if key not in plan}
    members: dict[_Unit, list[_Draft]] = {}
    for key, group in plan.items():
        members.setdefault(group, []).append(graph.drafts[key])
    groups = {group: _group_draft(group, found) for group, found in members.items()}
    drafts.update({("group", *group): draft for group, draft in groups.items()})

    def final(key: _Key) -> _Key:
        return ("group", *plan[key]) if key in plan else key

    # Groups after the layer's own nodes (their sort keys have another shape), each set by its own key.
    ordered = sorted(drafts, key=lambda k: (drafts[k].layer, drafts[k].cluster or "", k[0] == "group", drafts[k].order,
                                            repr(k)))
    ids = {key: f"n{number}" for number, key in enumerate(ordered, start=1)}
    sizes: dict[_Key, int] = {("group", *group): len(found) for group, found in members.items()}
    nodes = tuple(_node(ids[key], drafts[key], folded=sizes.get(key, 0)) for key in ordered)
    edges = _edges(graph, final, ids)
    namespaces = {(graph.drafts[key].cluster, graph.drafts[key].namespace) for key in plan}
    folding = Folding(len(plan), len(groups), len(namespaces))
    return ExposureMap(nodes, edges, verdict_counts(j.verdict.kind for j in exposures), cap, folding)


def _node(node_id: str, draft: _Draft, folded: int) -> MapNode:
    kinds = list(draft.ways.values())
    return MapNode(node_id, draft.layer, draft.title, draft.label, draft.namespace, draft.cluster, worst(kinds),
                   verdict_counts(kinds), folded)


def _edges(graph: _Graph, final: Callable[[_Key], _Key], ids: dict[_Key, str]) -> tuple[MapEdge, ...]:
    merged: dict[tuple[str, str], tuple[set[str], dict[int, VerdictKind]]] = {}
    for (source, target), (labels, ways) in graph.edges.items():
        ends = (final(source), final(target))
        kept_labels, kept_ways = merged.setdefault((ids[ends[0]], ids[ends[1]]), (set(), {}))
        if ends == (source, target):  # a folded end stands for many doors: its ports are in the table
            kept_labels.update(labels)
        kept_ways.update(ways)
    number = {node_id: int(node_id[1:]) for node_id in ids.values()}
    return tuple(
        MapEdge(source, target, edge_label(sorted(labels)), worst(ways.values()), len(ways))
        for (source, target), (labels, ways) in sorted(merged.items(), key=lambda item: (number[item[0][0]],
                                                                                          number[item[0][1]]))
    )


def edge_label(labels: Sequence[str]) -> str:
    """The labels of merged edges: up to three, then a count."""
    if len(labels) <= 3:
        return ", ".join(labels)
    return f"{', '.join(labels[:2])} and {len(labels) - 2} more"

