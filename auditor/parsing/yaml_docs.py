"""Safe YAML reading that keeps line numbers and refuses hostile documents.

Parsing runs on libyaml (PyYAML's C loader, ~8x faster than the pure-Python
one) when it is installed. On top of plain `safe_load` this module:

- records the line of every document and of every item of a `kind: List`,
  read from the composed node tree before construction (no second parse);
- rejects duplicate mapping keys, which kubectl's strict decoding rejects too
  (a silently dropped `type: LoadBalancer` is exactly the drift we look for);
- refuses alias bombs: a document whose aliases would expand it by more than
  `max_alias_expansion` nodes ("billion laughs"). The check walks the node
  graph only when the text contains an anchor, so ordinary files pay nothing;
- keeps timestamps and binary scalars as the strings they are in the text,
  as Kubernetes' own YAML-to-JSON conversion does.
libyaml itself refuses nesting deeper than 1,000 levels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

try:  # libyaml is an optional part of PyYAML; fall back to the pure-Python parser.
    from yaml import CSafeLoader as _BaseLoader

    LIBYAML = True
except ImportError:  # pragma: no cover - exercised only without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

    LIBYAML = False

DEFAULT_MAX_ALIAS_EXPANSION = 100_000
# libyaml's node graph costs up to ~750 bytes a node (positions included)
# before any object is built: 2 million estimated nodes keep the worst case
# near 1.5 GB, and admit ~60 MB of ordinary block YAML in one file.
DEFAULT_MAX_NODES = 2_000_000

_MERGE_TAG = "tag:yaml.org,2002:merge"
# An anchor is `&name` at the start of a node: after a space, a flow
# indicator, the `:` of a JSON-like key in flow style (`{"a":&x [..]}`), a
# byte-order mark, or at the start of a line. False positives (`a && b` in a
# shell command) only cost the expansion walk, never correctness.
_ANCHOR = re.compile(r"(?:^|[\s\[{,:\ufeff])&[^\s&]", re.MULTILINE)
# Integers beyond what `str()` converts (sys.get_int_max_str_digits, 4,300
# digits) would crash whatever prints them; Kubernetes fields are 64-bit.
_MAX_INT_CHARS = 4_300
_MAX_INT_BITS = 14_000  # fewer than 4,300 decimal digits


class YAMLInputError(ValueError):
    """A document that cannot be read; `line` is 1-based when known."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


_STR_TAG = "tag:yaml.org,2002:str"


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict:
        # One pass instead of PyYAML's two (flatten_mapping, then a generic
        # loop with an abc hashability check per key): plain string keys, the
        # bulk of every manifest, are taken straight from the node, and a key
        # written twice is caught as the mapping is built. This keeps the
        # loader within a few percent of bare `yaml.load_all`.
        if not isinstance(node, MappingNode):
            return super().construct_mapping(node, deep=deep)
        pairs = node.value
        for key_node, _ in pairs:
            if key_node.tag == _MERGE_TAG:
                return self._construct_merged_mapping(node, deep)
        mapping: dict = {}
        construct = self.construct_object
        for key_node, value_node in pairs:
            if key_node.tag == _STR_TAG and type(key_node) is ScalarNode:
                key = key_node.value
            else:
                key = construct(key_node, deep=deep)
                try:
                    hash(key)
                except TypeError:
                    raise YAMLInputError("found an unhashable key (a list or mapping used as a key)",
                                         key_node.start_mark.line + 1) from None
            if key in mapping:
                _raise_on_duplicate(pairs)
            mapping[key] = construct(value_node, deep=deep)
        return mapping

    def _construct_merged_mapping(self, node: MappingNode, deep: bool) -> dict:
        explicit_pairs = node.value
        mapping = super().construct_mapping(node, deep=deep)
        # Merged keys may be overridden (that is what `<<` is for); a key
        # written twice among the explicit ones is still an error.
        _raise_on_duplicate(explicit_pairs)
        return mapping


def _construct_plain_string(loader: _Loader, node: ScalarNode) -> str:
    return loader.construct_scalar(node)


def _checked_scalar(what: str, construct):
    """Wrap a scalar constructor so a malformed value (`!!bool maybe`, `!!int 0x`)
    or a huge integer is a `ConstructorError` with its line, not a crash."""

    def checked(loader: _Loader, node: Node):
        value = node.value
        if isinstance(value, str) and what == "integer" and len(value) > _MAX_INT_CHARS:
            raise ConstructorError(None, None, f"integer too large ({len(value):,} characters)", node.start_mark)
        try:
            result = construct(loader, node)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError):
            shown = value if isinstance(value, str) and len(value) <= 40 else f"{str(value)[:40]}..."
            raise ConstructorError(None, None, f"invalid {what} {shown!r}", node.start_mark) from None
        if isinstance(result, int) and not isinstance(result, bool) and result.bit_length() > _MAX_INT_BITS:
            raise ConstructorError(None, None, "integer too large", node.start_mark)
        return result

    return checked


def _construct_set_as_mapping(loader: _Loader, node: MappingNode) -> dict:
    return {key: None for key in loader.construct_mapping(node)}


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_plain_string)
_Loader.add_constructor("tag:yaml.org,2002:binary", _construct_plain_string)
_Loader.add_constructor("tag:yaml.org,2002:set", _construct_set_as_mapping)
for _tag, _what in (("int", "integer"), ("float", "float"), ("bool", "boolean")):
    _Loader.add_constructor(
        f"tag:yaml.org,2002:{_tag}", _checked_scalar(_what, _Loader.yaml_constructors[f"tag:yaml.org,2002:{_tag}"])
    )


def _raise_on_duplicate(pairs: list[tuple[Node, Node]]) -> None:
    seen: dict[tuple[str, str], Node] = {}
    for key_node, _ in pairs:
        if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        key = (key_node.tag, key_node.value)
        if key in seen:
            first = seen[key].start_mark.line + 1
            raise YAMLInputError(
                f"duplicate key {key_node.value!r} (first at line {first})",
                key_node.start_mark.line + 1,
            )
        seen[key] = key_node


def _check_alias_expansion(root: Node, limit: int) -> None:
    """Refuse a document whose aliases expand it by more than `limit` nodes.

    Sizes are memoised per node, so the walk is linear in the distinct nodes
    however large the expansion would be.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: meeting one again is a cycle
    distinct = 0
    # Iterative post-order walk: hostile input must not exhaust the C stack.
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if not children_done:
            if key in sizes:
                continue
            if key in open_nodes:
                raise YAMLInputError("recursive alias (a node contains itself)", node.start_mark.line + 1)
        if isinstance(node, ScalarNode):
            sizes[key] = 1
            distinct += 1
            continue
        children = _children(node)
        if not children_done:
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        open_nodes.discard(key)
        sizes[key] = 1 + sum(sizes[id(child)] for child in children)
        distinct += 1
        if sizes[key] - distinct > limit:
            raise YAMLInputError(
                f"aliases expand the document by more than {limit:,} nodes (alias bomb?)",
                root.start_mark.line + 1,
            )


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


@dataclass(slots=True)
class YamlDocument:
    data: Any
    line: int  # 1-based line where the document's content starts
    # For a `kind: List` document: the line of each entry of `items`.
    item_lines: list[int] = field(default_factory=list)


def _items_lines(root: Node) -> list[int]:
    if not isinstance(root, MappingNode):
        return []
    for key_node, value_node in root.value:
        if isinstance(key_node, ScalarNode) and key_node.value == "items":
            if isinstance(value_node, SequenceNode):
                return [item.start_mark.line + 1 for item in value_node.value]
    return []


def _mark_line(error: yaml.YAMLError) -> int | None:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def _describe(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None)
    context = getattr(error, "context", None)
    text = " ".join(part for part in (context, problem) if part) or str(error).splitlines()[0]
    return f"invalid YAML: {text}"


def estimated_nodes(text: str) -> int:
    """A cheap upper-bound-ish count of the nodes parsing `text` would build.

    Block YAML holds about one or two nodes a line; flow collections pack
    many on one line (`[[],[],...]`), each after a `[`, `{` or `,`. Counted
    with C-speed `str.count` before anything is parsed, so a file whose node
    graph would not fit in memory is refused up front.
    """
    return text.count("\n") + text.count(",") + text.count("[") + text.count("{")


def iter_documents(
    text: str, *, max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION, max_nodes: int | None = None
) -> Iterator[YamlDocument]:
    """Yield each non-empty document of a YAML stream, with its line numbers."""
    if max_nodes is not None:
        estimate = estimated_nodes(text)
        if estimate > max_nodes:
            raise YAMLInputError(
                f"about {estimate:,} YAML nodes (lines and flow items), over the {max_nodes:,}-node "
                "limit (see --max-yaml-nodes)"
            )
    # Most files hold no "&" at all: the substring test is far cheaper than the regex.
    check_aliases = "&" in text and _ANCHOR.search(text) is not None
    loader = _Loader(text)
    try:
        while loader.check_node():
            root = loader.get_node()
            if root is None:  # pragma: no cover - check_node said there is one
                break
            if check_aliases:
                _check_alias_expansion(root, max_alias_expansion)
            line = root.start_mark.line + 1
            item_lines = _items_lines(root)
            try:
                data = loader.construct_document(root)
            except YAMLInputError:  # a duplicate key
                raise
            except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError) as error:
                # A constructor PyYAML did not guard; the scalar ones are wrapped above.
                raise YAMLInputError(f"invalid YAML: cannot construct a value ({type(error).__name__})", line) from None
            if data is None:  # an empty document (`---` followed by nothing)
                continue
            yield YamlDocument(data, line, item_lines)
    except YAMLInputError:
        raise
    except yaml.YAMLError as error:
        raise YAMLInputError(_describe(error), _mark_line(error)) from None
    except RecursionError:
        raise YAMLInputError("document nested too deeply") from None
    finally:
        loader.dispose()


@dataclass(slots=True)
class LocatedConfig:
    """A single-document config file plus the line of each of its nodes."""

    data: Any
    lines: dict[tuple, int]

    def line_of(self, path: tuple) -> int | None:
        """Line of the node at `path` (keys and indexes), or of its nearest parent."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path[:-1]


def load_config_document(text: str) -> LocatedConfig:
    """Parse a small config file (exception list, posture) keeping every node's line.

    Error messages about such files point at the entry and field at fault, so
    the line of each node is kept (config files are small; this is not the
    manifest path).
    """
    documents = list(iter_documents(text))
    if len(documents) > 1:
        raise YAMLInputError("expected one YAML document, found several", documents[1].line)
    if not documents:
        return LocatedConfig(None, {})
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    lines: dict[tuple, int] = {}
    stack: list[tuple[tuple, Node]] = [((), root)] if root is not None else []
    while stack:
        path, node = stack.pop()
        lines[path] = node.start_mark.line + 1
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, ScalarNode):
                    stack.append(((*path, key_node.value), value_node))
        elif isinstance(node, SequenceNode):
            stack.extend(((*path, index), item) for index, item in enumerate(node.value))
    return LocatedConfig(documents[0].data, lines)
