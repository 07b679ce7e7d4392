"""The exposure map as a Mermaid `flowchart`, for the Markdown report (GitHub and GitLab render it).

Node identifiers are the map's own (`n1`, `n2`...), never a name from the
input, so no name can collide with a Mermaid keyword (`end`) or break the
syntax. Every label is a quoted string on one line, in which the characters a
quoted label cannot hold as themselves (the quote, `#`, `&`, `<`, `>`, the
backtick, `|`, `%`, `;`, `\\`) are Mermaid entity codes (`#35;` for `#`: the
decimal code point, https://mermaid.js.org/syntax/flowchart.html "Entity codes
to escape characters"), so a hostile name stays text and the fenced block can
never be closed early. Brackets, parentheses and the rest stay as they are:
inside quotes they are text, and a name reads as itself.

Checked by rendering with the real mermaid library (tests/test_report_pictures.py):
with HTML labels (Mermaid's default, as GitHub renders) every label reads back
exactly; with `htmlLabels: false` the encoded characters show as `&#NN;`,
still text.
"""

from __future__ import annotations

import re

from auditor.exposure import VerdictKind
from auditor.report.exposure_map import ExposureMap, Layer, MapNode

# Mermaid draws a crowded flowchart unreadably small in a pull-request comment: past this many
# nodes, namespaces are folded (the HTML report draws more).
CAP = 30

# What a quoted label cannot hold as itself: the quote, `#` (which starts an entity code), what HTML
# labels would read as markup or an entity, a backtick (a label opening with one is a Markdown
# string), and `|` `%` `;` `\\` (edge-label, comment and statement syntax around labels).
_UNSAFE = re.compile(r'["#&<>`|%;\\]')
# Node shapes by column: LAN a stadium, addresses boxes, listeners hexagons, routes
# parallelograms, Services rounded, workloads subroutine boxes, folded groups boxes.
_SHAPES = {Layer.LAN: ('(["', '"])'), Layer.ADDRESS: ('["', '"]'), Layer.LISTENER: ('{{"', '"}}'),
           Layer.ROUTE: ('[/"', '"/]'), Layer.SERVICE: ('("', '")'), Layer.WORKLOAD: ('[["', '"]]')}
_GROUP_SHAPE = ('["', '"]')
# Fill, stroke and text colour by verdict (the HTML map uses the same).
COLOURS = {
    VerdictKind.DRIFT: ("#fde2e1", "#c62828", "#5f1010"),
    VerdictKind.EXCEPTED: ("#fff1cc", "#d98e04", "#5c3d00"),
    VerdictKind.SANCTIONED: ("#e3f2e6", "#2e7d32", "#123d16"),
    VerdictKind.UNJUDGED: ("#eeeeee", "#757575", "#333333"),
}
NEUTRAL = ("#f4f6f8", "#5f6b7a", "#1f2933")


def text(value: str) -> str:
    """`value` as the inside of a quoted Mermaid label: one line, only safe characters, the rest as entities."""
    flat = " ".join(str(value).split())
    return _UNSAFE.sub(lambda match: f"#{ord(match.group(0))};", flat)


def label(*lines: str) -> str:
    """A quoted label of one or more lines (`<br>` is Mermaid's line break; the lines are escaped)."""
    return "<br>".join(text(line) for line in lines if line)


def _node(node: MapNode) -> str:
    opening, closing = _GROUP_SHAPE if node.folded else _SHAPES[node.layer]
    return f"  {node.id}{opening}{label(node.title, node.kind)}{closing}"


def _class_of(node: MapNode) -> str:
    return "lan" if node.layer is Layer.LAN else node.status.value


def flowchart(exposure_map: ExposureMap) -> list[str]:
    """The lines of a `flowchart LR` of the map (without the fence)."""
    lines = ["flowchart LR"]
    lines += [_node(node) for node in exposure_map.nodes]
    for edge in exposure_map.edges:
        arrow = "-.->" if edge.status is VerdictKind.UNJUDGED else "-->"
        shown = f'|"{text(edge.label)}"|' if edge.label else ""
        lines.append(f"  {edge.source} {arrow}{shown} {edge.target}")
    lines += _styles(exposure_map)
    return lines


def _styles(exposure_map: ExposureMap) -> list[str]:
    """classDef and class lines for the classes in use, then each verdict's edges coloured (by index)."""
    by_class: dict[str, list[str]] = {}
    for node in exposure_map.nodes:
        by_class.setdefault(_class_of(node), []).append(node.id)
        if node.folded:
            by_class.setdefault("folded", []).append(node.id)
    styles = {"lan": NEUTRAL, **{kind.value: colours for kind, colours in COLOURS.items()}}
    lines = []
    for name in (*styles, "folded"):
        if name not in by_class:
            continue
        if name == "folded":
            lines.append("  classDef folded stroke-dasharray:6 3")
            continue
        fill, stroke, colour = styles[name]
        dash = ",stroke-dasharray:4 3" if name == VerdictKind.UNJUDGED.value else ""
        lines.append(f"  classDef {name} fill:{fill},stroke:{stroke},color:{colour}{dash}")
    lines += [f"  class {','.join(ids)} {name}" for name, ids in by_class.items()]
    for kind, (_, stroke, _) in COLOURS.items():
        indexes = [str(i) for i, edge in enumerate(exposure_map.edges) if edge.status is kind]
        if indexes:
            width = "2px" if kind is VerdictKind.DRIFT else "1.5px"
            lines.append(f"  linkStyle {','.join(indexes)} stroke:{stroke},stroke-width:{width}")
    return lines
