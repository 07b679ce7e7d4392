"""The exposure map as inline SVG, laid out by the tool itself (for the HTML report).

A small layered layout, deterministic and without JavaScript:

- one column per layer of the map that holds a node (LAN, addresses, Gateway
  listeners, routes, Services, workloads), left to right;
- an edge that skips columns (an address straight to its Service) runs
  through a reserved lane in each column it crosses, so it never passes
  behind a node;
- rows are ordered by the barycentre of their neighbours (three sweeps, ties
  by the map's own order: address, then namespace and name), which keeps
  most chains straight;
- each node's edges leave and arrive at points spread along its side, with
  the port or announcement written where the edge arrives.

Everything from the input is escaped (`html.escape`, control characters
replaced); coordinates are rounded, so the same map gives the same bytes.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from auditor.exposure import VerdictKind
from auditor.report.exposure_map import ExposureMap, Layer, MapNode
from auditor.report.mermaid import COLOURS, NEUTRAL

# The HTML map draws up to this many nodes before folding namespaces.
CAP = 150

TITLE_PX, KIND_PX = 7.2, 6.3  # advance of one character of the 12px and 10.5px monospace labels
NODE_MIN_W, NODE_MAX_W = 120, 300
NODE_H, LABEL_STEP = 40, 14  # a node's height grows with its labelled incoming edges
GAP, LANE_H, LANE_GAP = 12, 4, 4
MAX_GAP = 36  # the most room left above an item to line it up with its neighbours
COLUMN_GAP_MIN, COLUMN_GAP_MAX = 70, 230
MARGIN, HEADER = 16, 28
EDGE_LABEL_PX = 6.0  # advance of one character of the 10px edge labels

_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def escape(value: object) -> str:
    """Text or attribute content from the input, safe inside SVG and HTML."""
    return html.escape(_UNPRINTABLE.sub("\ufffd", str(value)), quote=True)


def _fit(text: str, width: float, advance: float) -> str:
    room = max(int((width - 16) / advance), 4)
    return text if len(text) <= room else text[: room - 1] + "…"


@dataclass
class _Item:
    """A node, or the lane of an edge through a column it crosses."""

    key: str  # the node id, or `edge-index:column`
    column: int
    node: MapNode | None
    order: float  # position in its column while ordering
    height: float = LANE_H
    y: float = 0.0
    before: list[_Item] = field(default_factory=list)  # neighbours in the previous column
    after: list[_Item] = field(default_factory=list)

    @property
    def centre(self) -> float:
        return self.y + self.height / 2


@dataclass
class Layout:
    """Where the SVG map's boxes and routes go: columns, widths and the drawing's size."""

    columns: list[list[_Item]]
    x: list[float]  # each column's left edge
    widths: list[float]
    routes: list[list[_Item]]  # per edge of the map: its items from source to target
    width: float
    height: float
    layers: tuple[Layer, ...]


def _items(exposure_map: ExposureMap) -> tuple[list[list[_Item]], list[list[_Item]]]:
    layers = exposure_map.layers
    column_of = {layer: index for index, layer in enumerate(layers)}
    columns: list[list[_Item]] = [[] for _ in layers]
    by_id: dict[str, _Item] = {}
    for node in exposure_map.nodes:
        column = column_of[node.layer]
        item = _Item(node.id, column, node, len(columns[column]))
        columns[column].append(item)
        by_id[node.id] = item
    routes = []
    for index, edge in enumerate(exposure_map.edges):
        source, target = by_id[edge.source], by_id[edge.target]
        route = [source]
        for column in range(source.column + 1, target.column):
            lane = _Item(f"{index}:{column}", column, None, len(columns[column]))
            columns[column].append(lane)
            route.append(lane)
        route.append(target)
        for left, right in itertools.pairwise(route):
            left.after.append(right)
            right.before.append(left)
        routes.append(route)
    return columns, routes


def _sweep(columns: list[list[_Item]], forward: bool) -> None:
    """Order each column by the mean position of its neighbours in the column just swept."""
    indexes = range(1, len(columns)) if forward else range(len(columns) - 2, -1, -1)
    for column in indexes:
        items = columns[column]
        for item in items:
            neighbours = item.before if forward else item.after
            if neighbours:
                item.order = sum(n.order for n in neighbours) / len(neighbours)
        items.sort(key=lambda item: item.order)
        for position, item in enumerate(items):
            item.order = float(position)


def _heights(exposure_map: ExposureMap, columns: list[list[_Item]]) -> None:
    labelled: dict[str, int] = {}
    for edge in exposure_map.edges:
        if edge.label:
            labelled[edge.target] = labelled.get(edge.target, 0) + 1
    for item in (item for column in columns for item in column if item.node is not None):
        assert item.node is not None
        item.height = max(NODE_H, LABEL_STEP * labelled.get(item.node.id, 0) + 12)


def _gap(above: _Item, below: _Item) -> float:
    return LANE_GAP if above.node is None or below.node is None else GAP


def _place(columns: list[list[_Item]]) -> float:
    """Stack each column, then pull every item towards its neighbours' centre (order kept, no overlap)."""
    for items in columns:
        y = float(HEADER + MARGIN)
        for previous, item in zip([None, *items], items, strict=False):
            y += _gap(previous, item) if previous is not None else 0
            item.y = y
            y += item.height
    # Forward then backward, twice: the last pass centres each hub (the LAN, every node IP) on its fan.
    for forward in (True, False, True, False):
        indexes = range(1, len(columns)) if forward else range(len(columns) - 2, -1, -1)
        for column in indexes:
            _pull(columns[column], forward)
    # Pulling only ever moves items down: lift the whole drawing back under the column titles.
    lift = min((items[0].y for items in columns if items), default=HEADER + MARGIN) - (HEADER + MARGIN)
    for item in (item for items in columns for item in items):
        item.y = round(item.y - lift, 1)
    return max((items[-1].y + items[-1].height for items in columns if items), default=0.0) + MARGIN


def _pull(items: list[_Item], forward: bool) -> None:
    top = float(HEADER + MARGIN)
    wanted = []
    for item in items:
        neighbours = item.before if forward else item.after
        centre = sum(n.centre for n in neighbours) / len(neighbours) if neighbours else item.centre
        wanted.append(centre - item.height / 2)
    floor = top
    for previous, item, want in zip([None, *items], items, wanted, strict=False):
        if previous is not None:
            floor = previous.y + previous.height + _gap(previous, item)
            # Alignment is worth a little room, not a page: a gap never grows past MAX_GAP.
            want = min(want, floor + MAX_GAP)
        item.y = round(max(want, floor), 1)


def _need(node: MapNode) -> float:
    """The width a node's lines take, with its namespace moved to the second line if that is what fits."""
    def width(title: str, kind: str) -> float:
        return max(len(title) * TITLE_PX, len(kind) * KIND_PX) + 20

    whole = width(node.title, node.kind)
    if whole <= NODE_MAX_W:
        return whole
    return min(whole, width(*_lines(node, NODE_MAX_W)))


def _widths(columns: list[list[_Item]]) -> list[float]:
    widths = []
    for items in columns:
        longest = max((_need(i.node) for i in items if i.node is not None), default=NODE_MIN_W)
        widths.append(round(min(max(longest, NODE_MIN_W), NODE_MAX_W), 1))
    return widths


def _column_x(exposure_map: ExposureMap, columns: list[list[_Item]], widths: list[float]) -> list[float]:
    """Each column's left edge: the gap before it fits the longest edge label arriving there."""
    column_of = {item.node.id: item.column for items in columns for item in items if item.node is not None}
    longest = [0] * len(columns)
    for edge in exposure_map.edges:
        column = column_of[edge.target]
        longest[column] = max(longest[column], len(edge.label))
    x, out = float(MARGIN), []
    for column, width in enumerate(widths):
        if column:
            x += min(max(COLUMN_GAP_MIN, longest[column] * EDGE_LABEL_PX + 40), COLUMN_GAP_MAX)
        out.append(round(x, 1))
        x += width
    return out


def layout(exposure_map: ExposureMap) -> Layout:
    columns, routes = _items(exposure_map)
    for forward in (True, False, True):
        _sweep(columns, forward)
    _heights(exposure_map, columns)
    height = _place(columns)
    widths = _widths(columns)
    x = _column_x(exposure_map, columns, widths)
    width = (x[-1] + widths[-1] + MARGIN) if x else 2 * MARGIN
    return Layout(columns, x, widths, routes, round(width, 1), round(height, 1), exposure_map.layers)


# --- drawing -------------------------------------------------------------------------------------


def _number(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _colours(node: MapNode) -> tuple[str, str, str]:
    return NEUTRAL if node.layer is Layer.LAN else COLOURS[node.status]


def _anchors(items: Sequence[_Item], around: _Item) -> dict[str, float]:
    """Where edges meet `around`'s side: spread along it, in the order of the other ends."""
    ordered = sorted(items, key=lambda item: (item.centre, item.key))
    step = around.height / (len(ordered) + 1)
    return {item.key: round(around.y + step * (position + 1), 1) for position, item in enumerate(ordered)}


def _path(route: Sequence[_Item], plan: Layout, starts: dict[tuple[str, str], float],
          ends: dict[tuple[str, str], float]) -> tuple[str, float, float]:
    """The `d` of an edge through its lanes, and where it arrives (x, y)."""
    source, target = route[0], route[-1]
    x0 = plan.x[source.column] + plan.widths[source.column]
    y0 = starts[(source.key, route[1].key)]
    points = [(x0, y0)]
    for lane in route[1:-1]:
        points += [(plan.x[lane.column], lane.centre), (plan.x[lane.column] + plan.widths[lane.column], lane.centre)]
    end = (plan.x[target.column], ends[(route[-2].key, target.key)])
    points.append(end)
    d = [f"M{_number(x0)} {_number(y0)}"]
    for index, (x, y) in enumerate(points[1:], start=1):
        px, py = points[index - 1]
        if index % 2 == 0 and len(route) > 2 and index < len(points) - 1:
            d.append(f"L{_number(x)} {_number(y)}")  # straight through a lane
            continue
        bend = (x - px) / 2
        d.append(f"C{_number(px + bend)} {_number(py)} {_number(x - bend)} {_number(y)} {_number(x)} {_number(y)}")
    return " ".join(d), end[0], end[1]


def _edge_ends(plan: Layout) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]]:
    starts: dict[tuple[str, str], float] = {}
    ends: dict[tuple[str, str], float] = {}
    for items in plan.columns:
        for item in items:
            if item.node is None:
                continue
            starts.update({(item.key, k): y for k, y in _anchors(item.after, item).items()})
            ends.update({(k, item.key): y for k, y in _anchors(item.before, item).items()})
    return starts, ends


def _markers() -> list[str]:
    out = ["<defs>"]
    for kind, (_, stroke, _) in COLOURS.items():
        out.append(f'<marker id="arrow-{kind.value}" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="8" '
                   f'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto"><path d="M0 0L8 4L0 8z" '
                   f'fill="{stroke}"/></marker>')
    return [*out, "</defs>"]


def _edges(exposure_map: ExposureMap, plan: Layout) -> list[str]:
    starts, ends = _edge_ends(plan)
    out = []
    labels = []
    names = {node.id: node.title for node in exposure_map.nodes}
    for number, (edge, route) in enumerate(zip(exposure_map.edges, plan.routes, strict=True)):
        d, x, y = _path(route, plan, starts, ends)
        stroke = COLOURS[edge.status][1]
        dash = ' stroke-dasharray="5 4"' if edge.status is VerdictKind.UNJUDGED else ""
        width = "2" if edge.status is VerdictKind.DRIFT else "1.4"
        what = f"{names[edge.source]} → {names[edge.target]}" + (f" ({edge.label})" if edge.label else "")
        out.append(f'<path id="map-e{number + 1}" class="edge {edge.status.value}" data-from="{edge.source}" '
                   f'data-to="{edge.target}" d="{d}" fill="none" stroke="{stroke}" stroke-width="{width}"{dash} '
                   f'marker-end="url(#arrow-{edge.status.value})"><title>{escape(what)}: '
                   f'{edge.ways} way{"" if edge.ways == 1 else "s"} in</title></path>')
        if edge.label:
            # On the line, just before its arrowhead, over a halo of the background: it reads as the line's.
            labels.append(f'<text class="edge-label" x="{_number(x - 14)}" y="{_number(y + 3.5)}" '
                          f'text-anchor="end">{escape(edge.label)}</text>')
    return out + labels  # labels last: drawn over every edge


def _lines(node: MapNode, width: float) -> tuple[str, str]:
    """The node's two lines; a `namespace/name` too long for the box moves its namespace to the second line
    (`kubernetes-dashboard-kong` / `Deployment in kubernetes-dashboard`), where the name's end stays readable."""
    title, kind = node.title, node.kind
    if len(title) * TITLE_PX + 20 > width and node.namespace and title.startswith(f"{node.namespace}/"):
        title = title[len(node.namespace) + 1:]
        kind = f"{kind} in {node.namespace}" if kind else f"in {node.namespace}"
    return title, kind


def _node(item: _Item, plan: Layout) -> str:
    node = item.node
    assert node is not None
    x, width = plan.x[item.column], plan.widths[item.column]
    fill, stroke, colour = _colours(node)
    classes = " ".join(["node", "lan" if node.layer is Layer.LAN else node.status.value,
                        *(["folded"] if node.folded else [])])
    dash = ' stroke-dasharray="6 3"' if node.folded or node.status is VerdictKind.UNJUDGED else ""
    middle = item.y + item.height / 2
    title, kind = _lines(node, width)
    lines = [f'<text class="title" x="{_number(x + 10)}" y="{_number(middle - 3 if kind else middle + 4)}" '
             f'fill="{colour}">{escape(_fit(title, width, TITLE_PX))}</text>']
    if kind:
        lines.append(f'<text class="kind" x="{_number(x + 10)}" y="{_number(middle + 11)}" fill="{colour}">'
                     f'{escape(_fit(kind, width, KIND_PX))}</text>')
    return (f'<g id="map-{node.id}" class="{classes}" data-layer="{node.layer.name.lower()}">'
            f"<title>{escape(node.description)}</title>"
            f'<rect x="{_number(x)}" y="{_number(item.y)}" width="{_number(width)}" height="{_number(item.height)}" '
            f'rx="6" fill="{fill}" stroke="{stroke}" stroke-width="1.4"{dash}/>{"".join(lines)}</g>')


def render(exposure_map: ExposureMap, title: str = "Exposure map") -> str:
    """The map as one `<svg>` element (its styles are the HTML report's)."""
    plan = layout(exposure_map)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="exposure-map" role="img" aria-label="{escape(title)}" '
           f'width="{_number(plan.width)}" height="{_number(plan.height)}" '
           f'viewBox="0 0 {_number(plan.width)} {_number(plan.height)}">', f"<title>{escape(title)}</title>"]
    out += _markers()
    for column, layer in enumerate(plan.layers):
        out.append(f'<text class="column" x="{_number(plan.x[column])}" y="{MARGIN + 8}">{layer.title}</text>')
    out += _edges(exposure_map, plan)
    out += [_node(item, plan) for items in plan.columns for item in items if item.node is not None]
    out.append("</svg>")
    return "\n".join(out)


def node_ids(items: Iterable[MapNode]) -> list[str]:
    """The SVG element ids of map nodes (what the tests look for)."""
    return [f"map-{node.id}" for node in items]

