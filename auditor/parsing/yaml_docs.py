"""Safe YAML reading that keeps line numbers, refuses hostile documents, and
sees every value the way kubectl sends it to the API server.

Parsing runs on libyaml (PyYAML's C loader, ~8x faster than the pure-Python
one) when it is installed. On top of plain `safe_load` this module:

- resolves plain scalars as kubectl does, not as PyYAML's YAML 1.1 tables do
  (see `go_yaml.py` for the rules and their sources): `matchType: =` is a
  string, `1:20` is a string, `0o17` is 15, `y` is true, `1e3` is 1000;
- converts mapping keys to strings as kubectl's YAML-to-JSON step does
  (`yes:` is the key "true", `80:` is "80");
- implements merge keys (`<<`) itself, as kubectl's go-yaml reads them: later
  pairs of a mapping override earlier ones, and within `<<: [a, b]` the
  earlier mapping wins. When kustomize/Flux (go-yaml v3, explicit keys always
  win) would read a mapping differently, that is a problem of the document;
- accepts an anchor defined again later in a document (the later definition
  serves later aliases, as in go-yaml), with a composer of its own that runs
  only for the files that need it;
- records the line of every document and of every item of a `kind: List`,
  read from the composed node tree before construction (no second parse);
- reports duplicate mapping keys, which kubectl's strict decoding rejects too
  (a silently dropped `type: LoadBalancer` is exactly the drift we look for);
- refuses alias bombs: a document whose aliases would expand it by more than
  `max_alias_expansion` nodes ("billion laughs"). The check walks the node
  graph only when the text contains an anchor, so ordinary files pay nothing;
- bounds the node graph before parsing (`max_nodes`, an upper bound counted
  at C speed), so a file cannot make libyaml build more nodes than allowed.
libyaml itself refuses nesting deeper than 1,000 levels.

Problems that only matter when the document is a Kubernetes manifest (a
local tag such as `!env_var`, a duplicate key, `.inf`, a merge key read
differently by kubectl and kustomize) are *collected* on the document when
`collect_problems=True`: the caller decides (a manifest is refused, a tool's
config file is skipped). Otherwise the first one raises `YAMLInputError`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from auditor.parsing import go_yaml

try:  # libyaml is an optional part of PyYAML; fall back to the pure-Python parser.
    from yaml import CSafeLoader as _BaseLoader

    LIBYAML = True
except ImportError:  # pragma: no cover - exercised only without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

    LIBYAML = False

DEFAULT_MAX_ALIAS_EXPANSION = 100_000
# libyaml's node graph and the objects built from it cost up to ~650 bytes a
# node (measured on the densest shapes, tests/test_memory_limits.py): with
# nodes counted as an upper bound (`estimated_nodes`), 2 million keep the
# worst case near 1.3 GB, and admit ~40 MB of ordinary block YAML in one file.
DEFAULT_MAX_NODES = 2_000_000

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
# An anchor is `&name` at the start of a node: after a space, a flow
# indicator, the `:` of a JSON-like key in flow style (`{"a":&x [..]}`), a
# byte-order mark, or at the start of a line. False positives (`a && b` in a
# shell command) only cost the expansion walk, never correctness.
_ANCHOR = re.compile(r"(?:^|[\s\[{,:\ufeff])&[^\s&]", re.MULTILINE)


class YAMLInputError(ValueError):
    """A document that cannot be read; `line` is 1-based when known."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


@dataclass(frozen=True, slots=True)
class YAMLProblem:
    """Something in a document that kubectl would refuse or read differently."""

    line: int
    problem: str
    # "tag" for a local or unknown tag (`!env_var`): the mark of a tool's own
    # config file rather than of a broken manifest.
    kind: str = "value"


class _Problems(Exception):
    """Raised inside construction in strict mode; carries the first problem."""

    def __init__(self, problem: YAMLProblem) -> None:
        super().__init__(problem.problem)
        self.found = problem


_MAYBE_NOT_STRING = go_yaml.FIRST_CHARACTERS | {"<"}


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 1


def _kind_name(node: Node) -> str:
    return {ScalarNode: "scalar", SequenceNode: "sequence", MappingNode: "mapping"}.get(type(node), "node")


def _shown(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else f"{text[:limit]}...")


class _Loader(_BaseLoader):
    """libyaml parser and composer, go-yaml's scalar resolution, our constructors."""

    collect = False

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.problems: list[YAMLProblem] = []

    # --- resolution: what a plain scalar is (called by the C composer) --------------

    def resolve(self, kind: type, value: str | None, implicit: tuple[bool, bool] | bool) -> str:
        if kind is ScalarNode:
            if isinstance(implicit, tuple) and implicit[0]:
                # Most plain scalars start with a letter that cannot start anything but a string.
                if value and value[0] not in _MAYBE_NOT_STRING:
                    return _STR_TAG
                return go_yaml.resolve_plain(value or "")
            return _STR_TAG
        return _SEQ_TAG if kind is SequenceNode else _MAP_TAG

    # --- problems ---------------------------------------------------------------

    def problem(self, node: Node, text: str, kind: str = "value") -> None:
        found = YAMLProblem(_line(node), text, kind)
        if not self.collect:
            raise _Problems(found)
        self.problems.append(found)

    # --- mappings ------------------------------------------------------------------

    def key_of(self, key_node: Node) -> str | None:
        """The key as kubectl's YAML-to-JSON step writes it, or None (a problem was recorded)."""
        if type(key_node) is ScalarNode:
            if key_node.tag == _STR_TAG:
                return str(key_node.value)
            key = self.construct_object(key_node)
            text = go_yaml.json_key(key)
            if text is None:
                self.problem(key_node, f"a null key ({_shown(key_node.value)}): kubectl cannot convert it to JSON")
            return text
        self.problem(key_node, "found an unhashable key (a list or mapping used as a key)")
        return None

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[str, Any]:  # type: ignore[override]
        # One pass instead of PyYAML's two (flatten_mapping, then a generic
        # loop with an abc hashability check per key): plain string keys, the
        # bulk of every manifest, are taken straight from the node, and a key
        # written twice is caught as the mapping is built. This keeps the
        # loader within a few percent of bare `yaml.load_all`.
        if not isinstance(node, MappingNode):
            self.problem(node, f"expected a mapping, found a {_kind_name(node)}")
            return {}
        pairs = node.value
        for key_node, _ in pairs:
            if key_node.tag == _MERGE_TAG:
                return self._construct_merged_mapping(node, deep)
        mapping: dict[str, Any] = {}
        construct = self.construct_object
        for key_node, value_node in pairs:
            if key_node.tag == _STR_TAG and type(key_node) is ScalarNode:
                key = key_node.value
            else:
                key = self.key_of(key_node)
                if key is None:
                    continue
            if key in mapping:
                self._duplicate(pairs, key_node, key)
            mapping[key] = construct(value_node, deep=deep)
        return mapping

    def _duplicate(self, pairs: list[tuple[Node, Node]], second: Node, key: str) -> None:
        for key_node, _ in pairs:
            if key_node is second:
                break
            if key_node.tag != _MERGE_TAG and type(key_node) is ScalarNode and self._same_key(key_node, key):
                if second.value == key_node.value:
                    self.problem(second, f"duplicate key {key!r} (first at line {_line(key_node)})")
                else:  # `y:` and `on:` are both the key "true" for kubectl
                    self.problem(second, f"duplicate key {key!r}: written {_shown(second.value)} here and "
                                         f"{_shown(key_node.value)} at line {_line(key_node)}")
                return
        # Not found: only for config files, where `1` and `true` are equal Python keys
        # written differently (YAML 1.1 as PyYAML reads it: the later one is kept).

    def _same_key(self, key_node: ScalarNode, key: str) -> bool:
        if key_node.tag == _STR_TAG:
            return bool(key_node.value == key)
        return go_yaml.json_key(self.construct_object(key_node)) == key

    def _merge_sources(self, value_node: Node) -> list[MappingNode]:
        """The mappings a `<<` value merges, in the order go-yaml applies them (lowest priority first)."""
        if isinstance(value_node, MappingNode):
            return [value_node]
        if isinstance(value_node, SequenceNode):
            sources = []
            # go-yaml v2 applies a list's mappings last to first, so the first one wins.
            for item in reversed(value_node.value):
                if isinstance(item, MappingNode):
                    sources.append(item)
                else:
                    self.problem(item, f"merge key: expected a mapping to merge, found a {_kind_name(item)}")
            return sources
        found = _kind_name(value_node)
        self.problem(value_node, f"merge key: expected a mapping or a list of mappings, found a {found}")
        return []

    def _construct_merged_mapping(self, node: MappingNode, deep: bool) -> dict[str, Any]:
        """Merge keys as kubectl reads them, refusing what kustomize/Flux would read otherwise.

        kubectl decodes YAML with go-yaml v2 (through sigs.k8s.io/yaml), which
        applies a mapping's pairs in the order written: a `<<` after an
        explicit key overrides it, a later `<<` overrides an earlier one, and
        within `<<: [a, b]` the first mapping wins. kustomize and Flux decode
        with go-yaml v3, where explicit keys always win (the YAML merge-key
        spec, https://yaml.org/type/merge.html). Where the two disagree on a
        value the cluster would get different objects depending on the tool:
        that is reported, never resolved silently.
        """
        mapping: dict[str, Any] = {}
        # key -> (value node, line of the pair that set it, set by an explicit pair?)
        origin: dict[str, tuple[Node, int, bool]] = {}
        explicit_lines: dict[str, int] = {}
        construct = self.construct_object
        merge_line: int | None = None
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                if merge_line is not None:
                    # kubectl applies both; kustomize refuses the file ("duplicate merge key").
                    self.problem(key_node, f"duplicate merge key '<<' (first at line {merge_line}): kustomize and "
                                           "Flux refuse it; merge a list instead (`<<: [*a, *b]`)")
                merge_line = _line(key_node)
                merged: dict[str, tuple[Node, int]] = {}
                for source in self._merge_sources(value_node):
                    for key, (inner_value, line) in self._flatten(source, set()).items():
                        merged[key] = (inner_value, line)
                for key, (inner_value, _line_of_key) in merged.items():
                    previous = origin.get(key)
                    if previous is not None and not _same_node(previous[0], inner_value):
                        who = "the explicit key" if previous[2] else "an earlier merge key"
                        self.problem(
                            key_node,
                            f"merge key overrides {who} {key!r} (line {previous[1]}): kubectl takes the merged "
                            "value, kustomize and Flux the first one; put `<<` first in the mapping",
                        )
                    origin[key] = (inner_value, _line(key_node), False)
                    mapping[key] = construct(inner_value, deep=deep)
                continue
            explicit_key = self.key_of(key_node)
            if explicit_key is None:
                continue
            key = explicit_key
            if key in explicit_lines:
                self.problem(key_node, f"duplicate key {key!r} (first at line {explicit_lines[key]})")
            explicit_lines[key] = _line(key_node)
            origin[key] = (value_node, _line(key_node), True)
            mapping[key] = construct(value_node, deep=deep)
        return mapping

    def _flatten(self, node: MappingNode, open_nodes: set[int]) -> dict[str, tuple[Node, int]]:
        """A merged mapping's effective pairs (its own merges resolved), keys as kubectl writes them."""
        if id(node) in open_nodes:  # `&a {<<: *a}`: the alias walk refuses it first; never loop here
            self.problem(node, "recursive merge (a mapping merges itself)")
            return {}
        open_nodes.add(id(node))
        result: dict[str, tuple[Node, int]] = {}
        explicit: dict[str, int] = {}
        merge_line: int | None = None
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                if merge_line is not None:
                    self.problem(key_node, f"duplicate merge key '<<' (first at line {merge_line}): kustomize and "
                                           "Flux refuse it; merge a list instead (`<<: [*a, *b]`)")
                merge_line = _line(key_node)
                for source in self._merge_sources(value_node):
                    result.update(self._flatten(source, open_nodes))
                continue
            key = self.key_of(key_node)
            if key is None:
                continue
            if key in explicit:
                self.problem(key_node, f"duplicate key {key!r} (first at line {explicit[key]})")
            explicit[key] = _line(key_node)
            result[key] = (value_node, _line(key_node))
        open_nodes.discard(id(node))
        return result

    # --- sequences, scalars and tags ---------------------------------------------

    def construct_plain_sequence(self, node: Node) -> list[Any]:
        if not isinstance(node, SequenceNode):
            self.problem(node, f"expected a sequence, found a {_kind_name(node)}")
            return []
        return [self.construct_object(child) for child in node.value]


def _same_node(first: Node, second: Node, budget: int = 1_000) -> bool:
    """Whether two nodes are written alike (so kubectl and kustomize read the same value either way).

    Compared structurally up to `budget` nodes; beyond, they count as different (the
    mapping is then refused, never read one way silently).
    """
    stack = [(first, second)]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        one, other = stack.pop()
        if one is other:
            continue
        if type(one) is not type(other) or one.tag != other.tag:
            return False
        if isinstance(one, ScalarNode):
            if one.value != other.value:
                return False
        elif isinstance(one, SequenceNode):
            if len(one.value) != len(other.value):
                return False
            stack.extend(zip(one.value, other.value, strict=True))
        elif isinstance(one, MappingNode):
            if len(one.value) != len(other.value):
                return False
            for (key, value), (other_key, other_value) in zip(one.value, other.value, strict=True):
                stack.append((key, other_key))
                stack.append((value, other_value))
    return True


# --- constructors -------------------------------------------------------------------


def _construct_str(loader: _Loader, node: ScalarNode) -> str:
    return str(node.value)


def _construct_null(loader: _Loader, node: ScalarNode) -> None:
    if node.value not in go_yaml.NULLS:
        loader.problem(node, f"invalid YAML: invalid null {_shown(node.value)}")
    return None


def _construct_bool(loader: _Loader, node: ScalarNode) -> Any:
    value = go_yaml.BOOLS.get(node.value)
    if value is None:
        loader.problem(node, f"invalid YAML: invalid boolean {_shown(node.value)}")
        return node.value
    return value


def _construct_int(loader: _Loader, node: ScalarNode) -> Any:
    value = go_yaml.parse_int(node.value)
    if value is None:
        if go_yaml.is_int_syntax(node.value):  # `!!int 0xffff...`: more than 64 bits
            loader.problem(node, f"invalid YAML: integer too large ({len(node.value):,} characters)")
        else:
            loader.problem(node, f"invalid YAML: invalid integer {_shown(node.value)}")
        return node.value
    return value


def _construct_float(loader: _Loader, node: ScalarNode) -> Any:
    text = node.value
    special = go_yaml.SPECIAL_FLOATS.get(text)
    if special is not None:
        # JSON has no infinity or NaN: kubectl refuses the file
        # ("json: unsupported value: +Inf").
        loader.problem(node, f"{text} is not a number JSON can carry (kubectl refuses it)")
        return special
    value = go_yaml.parse_number(text)
    if value is None:
        loader.problem(node, f"invalid YAML: invalid float {_shown(text)}")
        return text
    return value


def _construct_timestamp(loader: _Loader, node: ScalarNode) -> str:
    # sigs.k8s.io/yaml keeps timestamps as the text written (kubectl sends "2026-01-31").
    if not go_yaml.looks_like_timestamp(node.value):
        loader.problem(node, f"invalid YAML: invalid timestamp {_shown(node.value)}")
    return str(node.value)


def _construct_binary(loader: _Loader, node: ScalarNode) -> str:
    # go-yaml decodes !!binary; kubectl sends the decoded bytes as a JSON string.
    decoded = go_yaml.decode_binary(node.value)
    if decoded is None:
        loader.problem(node, "!!binary value is not valid base64")
        return str(node.value)
    return decoded


def _construct_merge_scalar(loader: _Loader, node: Node) -> Any:
    # `<<` where a value is expected is the string "<<" for go-yaml.
    return _construct_by_kind(loader, node)


# Collections are built by generators, as PyYAML's own constructors are: the
# container is yielded first and filled later, so construction stays
# iterative however deep the document nests (libyaml allows 1,000 levels).
def _construct_map(loader: _Loader, node: Node) -> Iterator[dict[str, Any]]:
    data: dict[str, Any] = {}
    yield data
    data.update(loader.construct_mapping(node))


def _construct_seq(loader: _Loader, node: Node) -> Iterator[list[Any]]:
    data: list[Any] = []
    yield data
    data.extend(loader.construct_plain_sequence(node))


def _construct_by_kind(loader: _Loader, node: Node) -> Any:
    """A string, or a generator construct_object completes (for collections)."""
    if isinstance(node, MappingNode):
        return _construct_map(loader, node)
    if isinstance(node, SequenceNode):
        return _construct_seq(loader, node)
    return str(node.value)


# Standard tags go-yaml reads as the node they are on (`!!omap` is a list of
# mappings for it, not PyYAML's list of tuples).
_KIND_TAGS = {"tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs"}


def _construct_unknown_tag(loader: _Loader, node: Node) -> Any:
    """A local or unknown tag (`!env_var X`, `!!python/name:...`, `!Ref`): go-yaml keeps the plain value.

    Tools that use such tags (recyclarr, mkdocs, CloudFormation) read files
    that are not Kubernetes manifests; in a manifest kubectl would send the
    bare value, which is rarely what was meant. Recorded as a problem of the
    document, so a caller can skip a tool's config file and refuse a manifest.
    """
    if node.tag not in _KIND_TAGS:
        tag = node.tag
        shown = "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else tag
        loader.problem(node, f"local tag {shown}", kind="tag")
    return _construct_by_kind(loader, node)


def _scalar_only(construct: Any) -> Any:
    """A scalar tag written on a collection (`!!str {a: 1}`) is a problem, not a crash."""

    def checked(loader: _Loader, node: Node) -> Any:
        if type(node) is ScalarNode:
            return construct(loader, node)
        shown = node.tag.replace("tag:yaml.org,2002:", "!!")
        loader.problem(node, f"invalid YAML: {shown} on a {_kind_name(node)}")
        return _construct_by_kind(loader, node)

    return checked


_CONSTRUCTORS: dict[str | None, Any] = {
    "tag:yaml.org,2002:str": _scalar_only(_construct_str),
    "tag:yaml.org,2002:null": _scalar_only(_construct_null),
    "tag:yaml.org,2002:bool": _scalar_only(_construct_bool),
    "tag:yaml.org,2002:int": _scalar_only(_construct_int),
    "tag:yaml.org,2002:float": _scalar_only(_construct_float),
    "tag:yaml.org,2002:timestamp": _scalar_only(_construct_timestamp),
    "tag:yaml.org,2002:binary": _scalar_only(_construct_binary),
    "tag:yaml.org,2002:merge": _construct_merge_scalar,
    "tag:yaml.org,2002:map": _construct_map,
    "tag:yaml.org,2002:seq": _construct_seq,
    # go-yaml knows no !!set: a mapping whose values are null (`? a`), as written.
    "tag:yaml.org,2002:set": _construct_map,
    None: _construct_unknown_tag,
}
# Our own table only: PyYAML's (Python objects, tuples, sets, dates) is never consulted.
_Loader.yaml_constructors = dict(_CONSTRUCTORS)
_Loader.yaml_multi_constructors = {}


class _Collecting(_Loader):
    collect = True


# --- the auditor's own config files: YAML 1.1 as PyYAML reads it --------------------


_SAFE = yaml.constructor.SafeConstructor.yaml_constructors
_VALUE_TAG = "tag:yaml.org,2002:value"  # PyYAML's resolution of a plain `=`, which it cannot construct
_MAX_INT_CHARS = 4_300  # beyond, `str()` of the integer fails (sys.get_int_max_str_digits)
_MAX_INT_BITS = 14_000  # fewer than 4,300 decimal digits


def _checked_scalar(what: str, construct: Any) -> Any:
    """PyYAML's scalar constructor, with a malformed value (`!!bool maybe`) or a huge integer as a problem."""

    def checked(loader: _Loader, node: ScalarNode) -> Any:
        value = node.value
        if what == "integer" and len(value) > _MAX_INT_CHARS:
            loader.problem(node, f"invalid YAML: integer too large ({len(value):,} characters)")
            return value
        try:
            result = construct(loader, node)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError):
            loader.problem(node, f"invalid YAML: invalid {what} {_shown(value)}")
            return value
        if isinstance(result, int) and not isinstance(result, bool) and result.bit_length() > _MAX_INT_BITS:
            loader.problem(node, "invalid YAML: integer too large")
            return value
        return result

    return checked


class _ConfigLoader(_Loader):
    """Exception lists, postures and --cilium-values files: YAML 1.1 scalars as before, Python keys kept.

    These are the auditor's own formats (and Helm values, where YAML 1.1 and
    go-yaml agree on everything such a file holds); their reading must not
    change under their users. They share the merge-key semantics, the anchor
    fallback and every limit with manifests.
    """

    def resolve(self, kind: type, value: str | None, implicit: tuple[bool, bool] | bool) -> str:
        tag: str = yaml.resolver.Resolver.resolve(self, kind, value, implicit)  # type: ignore[no-untyped-call]
        return _STR_TAG if tag == _VALUE_TAG else tag

    def key_of(self, key_node: Node) -> Any:
        key = self.construct_object(key_node)
        try:
            hash(key)
        except TypeError:
            self.problem(key_node, "found an unhashable key (a list or mapping used as a key)")
            return None
        return key

    def _same_key(self, key_node: ScalarNode, key: Any) -> bool:
        constructed = self.construct_object(key_node)
        return bool(constructed == key and type(constructed) is type(key))


_ConfigLoader.yaml_constructors = {
    **_CONSTRUCTORS,
    "tag:yaml.org,2002:null": _SAFE["tag:yaml.org,2002:null"],
    "tag:yaml.org,2002:bool": _checked_scalar("boolean", _SAFE["tag:yaml.org,2002:bool"]),
    "tag:yaml.org,2002:int": _checked_scalar("integer", _SAFE["tag:yaml.org,2002:int"]),
    "tag:yaml.org,2002:float": _checked_scalar("float", _SAFE["tag:yaml.org,2002:float"]),
    "tag:yaml.org,2002:timestamp": _construct_str,
    "tag:yaml.org,2002:binary": _construct_str,
}


# --- a composer for documents that define an anchor twice ---------------------


class _RedefiningComposer(Composer):
    """PyYAML's Python composer, over libyaml's events, letting a later anchor replace an earlier one.

    go-yaml (kubectl, kustomize, Flux) accepts `&a` defined twice: an alias
    refers to the latest definition before it. PyYAML's composers (C and
    Python) refuse it, so files that do it are composed again by this one.
    """

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        events: Any = self  # the parser's event methods come from the class this is mixed into
        if events.check_event(AliasEvent):
            event = events.get_event()
            if event.anchor not in self.anchors:
                raise ComposerError(None, None, f"found undefined alias {event.anchor!r}", event.start_mark)
            return self.anchors[event.anchor]
        event = events.peek_event()
        anchor = event.anchor
        # The compose_* methods record `anchor` as the latest definition (PyYAML's
        # compose_node refuses a second one before they run).
        node: Node
        if events.check_event(ScalarEvent):
            node = self.compose_scalar_node(anchor)
        elif events.check_event(SequenceStartEvent):
            node = self.compose_sequence_node(anchor)
        elif events.check_event(MappingStartEvent):
            node = self.compose_mapping_node(anchor)
        else:  # pragma: no cover - the parser emits nothing else here
            raise ComposerError(None, None, "unexpected event", event.start_mark)
        return node


def _fallback_class(base: type) -> type:
    # Composer comes first in the MRO, so its Python composing methods replace
    # the C ones of libyaml's parser, whose event methods it uses.
    class Fallback(_RedefiningComposer, base):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            base.__init__(self, stream)  # type: ignore[misc]
            Composer.__init__(self)

    return Fallback


_FALLBACK: dict[type, type] = {cls: _fallback_class(cls) for cls in (_Loader, _Collecting, _ConfigLoader)}


def _get_node(loader: Any) -> Node | None:
    """The next document's root; the fallback composer is recursive Python, given room for libyaml's 1,000 levels."""
    if not isinstance(loader, _RedefiningComposer):
        return loader.get_node()  # type: ignore[no-any-return]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5_000))
    try:
        return loader.get_node()
    finally:
        sys.setrecursionlimit(limit)


def _is_duplicate_anchor(error: yaml.YAMLError) -> bool:
    text = f"{getattr(error, 'context', '')} {getattr(error, 'problem', '')}"
    return isinstance(error, ComposerError) and "duplicate anchor" in text


# --- limits -------------------------------------------------------------------------


def _check_alias_expansion(root: Node, limit: int) -> None:
    """Refuse a document whose aliases expand it by more than `limit` nodes.

    Sizes are memoised per node, so the walk is linear in the distinct nodes
    however large the expansion would be. Scalars, most of the nodes, are
    counted where their parent is, never pushed on the walk's stack.
    """
    if type(root) is ScalarNode:
        return
    sizes: dict[int, int] = {}  # expanded size of each collection done
    scalars: set[int] = set()  # distinct scalars seen
    open_nodes: set[int] = set()  # on the current path: meeting one again is a cycle
    collections = 0
    # Iterative post-order walk: hostile input must not exhaust the C stack.
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if not children_done:
            if key in sizes:
                continue
            if key in open_nodes:
                raise YAMLInputError("recursive alias (a node contains itself)", _line(node))
            open_nodes.add(key)
            stack.append((node, True))
            for child in children:
                if type(child) is not ScalarNode and id(child) not in sizes:
                    stack.append((child, False))
            continue
        open_nodes.discard(key)
        size = 1
        for child in children:
            if type(child) is ScalarNode:
                size += 1
                scalars.add(id(child))
            else:
                size += sizes[id(child)]
        sizes[key] = size
        collections += 1
        if size - collections - len(scalars) > limit:
            raise YAMLInputError(
                f"aliases expand the document by more than {limit:,} nodes (alias bomb?)",
                _line(root),
            )


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


# Every node starts at a flow indicator (`[`, `{`, `,`), after a block
# indicator followed by a space (`- `, `? `, `: `), at a line start, or is
# the implicit key/value of a `:`. Counting those is an upper bound on the
# nodes libyaml builds, whatever the layout: `- - - - x` on one line, flow
# mappings (`{a: b}` is three nodes), `[:, :, :]`.
_NODE_MARKS = ("\n", ",", "[", "{", "- ", "? ")
_TAB_MARKS = ("-\t", "?\t")


_NODE_BYTES = tuple(mark.encode() for mark in _NODE_MARKS)
_TAB_BYTES = tuple(mark.encode() for mark in _TAB_MARKS)


def estimated_nodes(text: str | bytes) -> int:
    """An upper bound on the nodes parsing `text` would build, counted at C speed.

    Each mark counts for the node(s) it can start (`:` for a key and its
    value), so a file whose node graph would not fit in memory is refused
    before anything is parsed. Ordinary block YAML (`key: value` lines)
    counts about three a line. UTF-8 bytes count as their text (the marks
    are ASCII, which no other character's encoding contains); the count is
    also an upper bound on a JSON text's values (`estimated_json_nodes`).
    """
    if isinstance(text, bytes):
        count = 1 + text.count(b":") * 2 + sum(text.count(mark) for mark in _NODE_BYTES)
        if b"\t" in text:
            count += sum(text.count(mark) for mark in _TAB_BYTES)
        return count
    count = 1 + text.count(":") * 2 + sum(text.count(mark) for mark in _NODE_MARKS)
    if "\t" in text:  # rare: only then look for an indicator followed by a tab
        count += sum(text.count(mark) for mark in _TAB_MARKS)
    return count


def may_exceed(text: str | bytes, max_nodes: int) -> bool:
    """Whether `estimated_nodes(text)` may be over `max_nodes`: no mark counts more than 2 (`:`),
    so a text of n characters (or bytes) estimates at most 2n + 1, and a small file is not counted."""
    return 2 * len(text) + 1 > max_nodes and estimated_nodes(text) > max_nodes


def check_node_budget(text: str, max_nodes: int | None) -> None:
    if max_nodes is None or not may_exceed(text, max_nodes):
        return
    estimate = estimated_nodes(text)  # (counted again: only on the way to refusing the file)
    raise YAMLInputError(
        f"about {estimate:,} YAML nodes (lines and flow items), over the {max_nodes:,}-node "
        "limit (see --max-yaml-nodes)"
    )


# --- reading ----------------------------------------------------------------------------------


@dataclass(slots=True)
class YamlDocument:
    """One parsed YAML document: its data, where it and its List items start, and what kubectl would read
    differently."""

    data: Any
    line: int  # 1-based line where the document's content starts
    # For a `kind: List` document: the line of each entry of `items`.
    item_lines: list[int] = field(default_factory=list)
    # Only with `collect_problems=True`: what kubectl would refuse or read differently.
    problems: list[YAMLProblem] = field(default_factory=list)
    # The column (1-based) of the document's content, and of each List item.
    column: int = 1
    item_columns: list[int] = field(default_factory=list)


def _items_positions(root: Node) -> tuple[list[int], list[int]]:
    if not isinstance(root, MappingNode):
        return [], []
    for key_node, value_node in root.value:
        if isinstance(key_node, ScalarNode) and key_node.value == "items" and isinstance(value_node, SequenceNode):
            items = value_node.value
            return [_line(item) for item in items], [int(item.start_mark.column) + 1 for item in items]
    return [], []


def _mark_line(error: yaml.YAMLError) -> int | None:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    return int(mark.line) + 1 if mark is not None else None


def _describe(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None)
    context = getattr(error, "context", None)
    text = " ".join(part for part in (context, problem) if part) or str(error).splitlines()[0]
    return f"invalid YAML: {text}"


def iter_documents(
    text: str,
    *,
    max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION,
    max_nodes: int | None = None,
    collect_problems: bool = False,
) -> Iterator[YamlDocument]:
    """Yield each non-empty document of a YAML stream, with its line numbers, values as kubectl reads them.

    With `collect_problems`, what kubectl would refuse or read differently is
    listed on each document instead of raised (see `YAMLProblem`).
    """
    return _iter_documents(text, _Collecting if collect_problems else _Loader, max_alias_expansion, max_nodes)


def _iter_documents(
    text: str, loader_class: type, max_alias_expansion: int, max_nodes: int | None
) -> Iterator[YamlDocument]:
    check_node_budget(text, max_nodes)
    # Only aliases expand a document: without a `*` in the text there is none,
    # and most files hold no "&" at all (substring tests, far cheaper than the regex).
    check_aliases = "&" in text and "*" in text and _ANCHOR.search(text) is not None
    loader: Any = loader_class(text)
    composed = 0  # documents composed so far, to resume after a fallback
    try:
        while True:
            try:
                if not loader.check_node():
                    break
                root = _get_node(loader)
            except yaml.YAMLError as error:
                if not _is_duplicate_anchor(error):
                    raise
                # Compose this file again with the composer that lets an anchor be redefined.
                loader.dispose()
                loader = _FALLBACK[loader_class](text)
                for _ in range(composed):
                    loader.check_node()  # also drops the stream's start event
                    _get_node(loader)
                continue
            composed += 1
            if root is None:  # pragma: no cover - check_node said there is one
                break
            # A document of the file without a `*` of its own has no alias to expand.
            if check_aliases and text.find("*", root.start_mark.index, root.end_mark.index + 1) != -1:
                _check_alias_expansion(root, max_alias_expansion)
            line = _line(root)
            item_lines, item_columns = _items_positions(root)
            loader.problems = []
            try:
                data = loader.construct_document(root)
            except _Problems as raised:
                raise YAMLInputError(raised.found.problem, raised.found.line) from None
            except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError) as error:
                # A constructor that was not guarded; the scalar ones check their input.
                raise YAMLInputError(f"invalid YAML: cannot construct a value ({type(error).__name__})", line) from None
            if data is None and not loader.problems:  # an empty document (`---` followed by nothing)
                continue
            yield YamlDocument(data, line, item_lines, list(loader.problems), int(root.start_mark.column) + 1,
                               item_columns)
    except YAMLInputError:
        raise
    except yaml.YAMLError as error:
        raise YAMLInputError(_describe(error), _mark_line(error)) from None
    except RecursionError:
        raise YAMLInputError("document nested too deeply") from None
    finally:
        loader.dispose()


class NodeLines(Mapping[tuple[Any, ...], int]):
    """The line of each node of a document, by path (keys and indexes), in memory linear in the nodes.

    A plain `{path: line}` dict holds one tuple per node, as long as the
    node is deep: 16 MB of values nested 900 levels deep would need
    gigabytes. This keeps the composed tree's shape instead (an alias shares
    its anchor's entry) and walks it on lookup.
    """

    __slots__ = ("_root",)

    def __init__(self, root: Node | None) -> None:
        self._root: _LineEntry | None = _line_tree(root) if root is not None else None

    def __getitem__(self, path: tuple[Any, ...]) -> int:
        entry = self._root
        for part in path:
            if entry is None or entry[1] is None:
                raise KeyError(path)
            children = entry[1]
            if isinstance(children, list) and (type(part) is not int or part < 0):
                raise KeyError(path)
            try:
                entry = children[part]
            except (KeyError, IndexError, TypeError):
                raise KeyError(path) from None
        if entry is None:
            raise KeyError(path)
        return entry[0]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        if self._root is None:
            return
        stack: list[tuple[tuple[Any, ...], _LineEntry]] = [((), self._root)]
        while stack:
            path, (_line_number, children) = stack.pop()
            yield path
            if isinstance(children, dict):
                stack.extend(((*path, key), child) for key, child in children.items())
            elif isinstance(children, list):
                stack.extend(((*path, index), child) for index, child in enumerate(children))

    def __len__(self) -> int:
        return sum(1 for _ in self)


# (line, children): children by key for a mapping, by index for a sequence, None for a scalar.
_LineEntry = tuple[int, "dict[Any, Any] | list[Any] | None"]


def _line_tree(root: Node) -> _LineEntry:
    built: dict[int, _LineEntry] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:  # post-order, iterative: documents nest up to libyaml's 1,000 levels
        node, ready = stack.pop()
        if id(node) in built:
            continue
        if isinstance(node, MappingNode):
            if not ready:
                stack.append((node, True))
                stack.extend((value, False) for key, value in node.value if isinstance(key, ScalarNode))
                continue
            children: dict[Any, Any] | list[Any] | None = {
                key.value: built[id(value)] for key, value in node.value if isinstance(key, ScalarNode)
            }
        elif isinstance(node, SequenceNode):
            if not ready:
                stack.append((node, True))
                stack.extend((item, False) for item in node.value)
                continue
            children = [built[id(item)] for item in node.value]
        else:
            children = None
        built[id(node)] = (_line(node), children)
    return built[id(root)]


@dataclass(slots=True)
class LocatedConfig:
    """A single-document config file plus the line of each of its nodes."""

    data: Any
    lines: Mapping[tuple[Any, ...], int]

    def line_of(self, path: tuple[Any, ...]) -> int | None:
        """Line of the node at `path` (keys and indexes), or of its nearest parent."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path[:-1]


def load_config_document(
    text: str,
    *,
    max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION,
    max_nodes: int | None = DEFAULT_MAX_NODES,
) -> LocatedConfig:
    """Parse a small config file (exception list, posture, Helm values) keeping every node's line.

    Error messages about such files point at the entry and field at fault, so
    the line of each node is kept (config files are small; this is not the
    manifest path). The same node and alias limits as manifests apply.
    """
    documents = list(_iter_documents(text, _ConfigLoader, max_alias_expansion, max_nodes))
    if len(documents) > 1:
        raise YAMLInputError("expected one YAML document, found several", documents[1].line)
    if not documents:
        return LocatedConfig(None, {})
    loader: Any = _ConfigLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as error:
            if not _is_duplicate_anchor(error):
                raise
            loader.dispose()
            loader = _FALLBACK[_ConfigLoader](text)
            root = loader.get_single_node()
    finally:
        loader.dispose()
    lines = NodeLines(root)
    return LocatedConfig(documents[0].data, lines)


