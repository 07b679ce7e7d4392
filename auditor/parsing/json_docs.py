"""JSON reading that keeps the line of every item of a `kubectl get -o json` List.

Two paths give the same objects:

- the fast path (`load_json_bytes`), for a List laid out as kubectl, jq or
  any indenting printer writes it: the bytes are split at item boundaries
  (a raw newline cannot occur inside a JSON string, so a line holding only
  the closing brace at the items' indentation ends an item; every piece must
  then parse on its own, which proves the split) and each item is parsed by
  orjson, its line counted from the newlines before it. Duplicate keys,
  which orjson would drop silently, are found by counting key marks (`":`)
  in the input and in orjson's re-serialisation of what it built: equal
  counts prove no key was lost (see `_keys_lost`). Anything unusual (a
  number orjson would read differently, a lone surrogate, invalid UTF-8, a
  hand-indented file) falls back to the exact path;
- the exact path (`load_json`), which decodes item by item with the C
  `raw_decode` and a duplicate-key hook, counting newlines between items,
  and gives the precise error for bad input.

Duplicate keys are rejected, as kubectl's strict decoding does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

try:
    import orjson

    HAVE_ORJSON = True
except ImportError:  # pragma: no cover - orjson is a dependency; the exact path still works without it
    HAVE_ORJSON = False


class JSONInputError(ValueError):
    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


# Values a JSON text can hold are at most one per `[`, `{` and `,` (plus the
# root): counted at C speed before parsing. A 100,000-object
# `kubectl get -o json` List counts about 12 million, the largest List the
# default --max-file-bytes admits about 14 million. The densest shapes
# (`{"items":[null,null,...]}`, `[{"a":1},...]`) cost up to ~150 bytes a
# value once read (tests/test_memory_limits.py), so the worst case at the
# default stays near 2 GB, what that largest ordinary List takes anyway.
DEFAULT_MAX_JSON_NODES = 14_000_000


def estimated_json_nodes(data: bytes | str) -> int:
    """An upper bound on the values in a JSON text (strings holding `,[{` only raise it)."""
    if isinstance(data, str):
        return 1 + data.count("[") + data.count("{") + data.count(",")
    return 1 + data.count(b"[") + data.count(b"{") + data.count(b",")


def check_json_node_budget(data: bytes | str, max_nodes: int | None) -> None:
    """Refuse, before parsing, a JSON text that could hold more than `max_nodes` values."""
    if max_nodes is None:
        return
    estimate = estimated_json_nodes(data)
    if estimate > max_nodes:
        raise JSONInputError(
            f"about {estimate:,} JSON values (objects, arrays and list items), over the {max_nodes:,}-value "
            "limit (see --max-json-nodes)"
        )


class _DuplicateKey(ValueError):
    pass


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return mapping


_DECODER = json.JSONDecoder(object_pairs_hook=_object_without_duplicates)
_WHITESPACE = " \t\n\r"


@dataclass(slots=True)
class JsonDocument:
    """One decoded JSON document, with the lines (and, on one line, the columns) of its List items."""

    data: Any
    line: int = 1
    item_lines: list[int] = field(default_factory=list)
    # Columns (1-based) of the items, only when several items share a line (one-line JSON).
    item_columns: list[int] = field(default_factory=list)


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _skip_ws(text: str, index: int) -> int:
    length = len(text)
    while index < length and text[index] in _WHITESPACE:
        index += 1
    return index


def _decode_at(text: str, index: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, index)
    except _DuplicateKey as error:
        raise JSONInputError(f"duplicate key {error.args[0]!r}", _line_at(text, index)) from None
    except json.JSONDecodeError as error:
        raise JSONInputError(f"invalid JSON: {error.msg}", error.lineno) from None
    except ValueError:
        # int() refuses more than sys.get_int_max_str_digits() (4,300) digits.
        raise JSONInputError("invalid JSON: integer too large", _line_at(text, index)) from None
    except RecursionError:
        raise JSONInputError("document nested too deeply", _line_at(text, index)) from None


def _expect(text: str, index: int, char: str) -> int:
    index = _skip_ws(text, index)
    if index >= len(text) or text[index] != char:
        found = repr(text[index]) if index < len(text) else "end of input"
        raise JSONInputError(f"invalid JSON: expected {char!r}, found {found}", _line_at(text, index))
    return index + 1


def _decode_object_keeping_item_lines(text: str, start: int) -> tuple[dict[str, Any], list[int], list[int], int]:
    """Decode the top-level object at `start`, locating each entry of `items` (line and column)."""
    pairs: list[tuple[str, Any]] = []
    item_lines: list[int] = []
    item_columns: list[int] = []
    index = _skip_ws(text, start + 1)
    line, line_pos = 1, 0
    line_start = text.rfind("\n", 0, start) + 1  # where the line of the current item begins
    if index < len(text) and text[index] == "}":
        return {}, [], [], index + 1
    seen: set[str] = set()
    while True:
        index = _skip_ws(text, index)
        key_index = index
        key, index = _decode_at(text, index)
        if not isinstance(key, str):
            raise JSONInputError("invalid JSON: object key is not a string", _line_at(text, index))
        if key in seen:
            raise JSONInputError(f"duplicate key {key!r}", _line_at(text, key_index))
        seen.add(key)
        index = _expect(text, index, ":")
        index = _skip_ws(text, index)
        if key == "items" and text.startswith("[", index):
            items: list[Any] = []
            index = _skip_ws(text, index + 1)
            if text.startswith("]", index):
                index += 1
            else:
                while True:
                    index = _skip_ws(text, index)
                    line += text.count("\n", line_pos, index)
                    newline = text.rfind("\n", line_pos, index)
                    if newline != -1:
                        line_start = newline + 1
                    line_pos = index
                    item, index = _decode_at(text, index)
                    items.append(item)
                    item_lines.append(line)
                    item_columns.append(line_pos - line_start + 1)
                    index = _skip_ws(text, index)
                    if text.startswith(",", index):
                        index += 1
                        continue
                    index = _expect(text, index, "]")
                    break
            pairs.append((key, items))
        else:
            value, index = _decode_at(text, index)
            pairs.append((key, value))
        index = _skip_ws(text, index)
        if text.startswith(",", index):
            index += 1
            continue
        index = _expect(text, index, "}")
        break
    try:
        return _object_without_duplicates(pairs), item_lines, item_columns, index
    except _DuplicateKey as error:
        raise JSONInputError(f"duplicate key {error.args[0]!r}", 1) from None


def _columns(lines: list[int], columns: list[int]) -> list[int]:
    """Item columns, only when the lines alone do not tell the items apart."""
    return [] if len(set(lines)) == len(lines) else columns


# `\ud800`-`\udfff` escapes: JSON can spell a lone UTF-16 surrogate, which is
# not Unicode text (it cannot be written out as UTF-8); Go's decoder would
# replace it, here the input is refused.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(data: Any) -> str | None:
    """The first string in `data` holding a lone surrogate (pairs were decoded into one character)."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return value
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def _refuse_lone_surrogates(text: str, data: Any) -> None:
    if not _SURROGATE_ESCAPE.search(text):
        return
    found = _lone_surrogate(data)
    if found is None:
        return
    code = ord(_SURROGATE.search(found).group())  # type: ignore[union-attr]
    escape = re.search(rf"\\u{code:04x}", text, re.IGNORECASE)
    raise JSONInputError(
        f"invalid JSON: string holds a lone UTF-16 surrogate \\u{code:04x} (not Unicode text)",
        _line_at(text, escape.start()) if escape else None,
    )


def load_json(text: str) -> JsonDocument:
    """Parse one JSON document exactly; for an object with `items`, keep their lines."""
    start = _skip_ws(text, 0)
    if start >= len(text):
        raise JSONInputError("empty input")
    columns: list[int] = []
    if text[start] == "{":
        data, item_lines, item_columns, end = _decode_object_keeping_item_lines(text, start)
        columns = _columns(item_lines, item_columns)
    else:
        data, end = _decode_at(text, start)
        item_lines = []
    end = _skip_ws(text, end)
    if end != len(text):
        raise JSONInputError("invalid JSON: extra data after the document", _line_at(text, end))
    _refuse_lone_surrogates(text, data)
    return JsonDocument(data, _line_at(text, start), item_lines, columns)


# --- the fast path -----------------------------------------------------------------


class _Unusual(Exception):
    """The fast path cannot vouch for this input: use the exact path."""


_ITEMS_KEY = re.compile(rb'"items"[ \t\r\n]*:[ \t\r\n]*\[')
# One pass classifies an item's bytes and keeps only what the checks count:
# digits become "9" and `[`, `{`, `,` become "x" (what the value budget
# counts); `:` (the keys) and `\\` (escapes) stay; the hex letters, `-` and
# `.` become "a", which keeps apart the digits of digests, uids, addresses and
# dates; everything else (spaces, the other letters: four fifths of
# kubectl's output) is deleted, so the counts that follow read a fifth of the
# bytes. A run of 19 digits (an integer that may not fit 64 bits, which
# orjson reads as a float where `json` keeps an int) is then one `find`:
# deleting bytes can only join runs, never split one, so a real one is always
# found (a joined one merely sends the group to the item-by-item path). A colon
# spelled `\u003a` leaves `\\999a` behind (the `u` is deleted): only then is
# the exact pattern searched in the bytes themselves.
_SEPARATORS = b"abcdefABCDEF-."
_CLASSES = bytes(0x39 if 0x30 <= byte <= 0x39 else 0x78 if byte in b"[{," else byte if byte in b":\\" else 0x61
                 for byte in range(256))
_DELETED = bytes(byte for byte in range(256) if byte not in b"0123456789[{,:\\" + _SEPARATORS)
_NINETEEN_DIGITS = b"9" * 19
_MAYBE_ESCAPED_COLON = b"\\999a"
_ESCAPED_COLON = re.compile(rb"\\u003[aA]")


def _classify(source: bytes) -> bytes:
    return source.translate(_CLASSES, _DELETED)


def _orjson_may_differ(source: bytes, classes: bytes) -> bool:
    """Whether `source` holds what orjson reads otherwise than `json` (a 19-digit number) or a
    colon spelled `\\u003a`, which would hide a dropped key from the colon count."""
    return classes.find(_NINETEEN_DIGITS) != -1 or (
        _MAYBE_ESCAPED_COLON in classes and _ESCAPED_COLON.search(source) is not None)


def _keys_lost(source: bytes, value: Any, classes: bytes | None = None) -> bool:
    """Whether orjson's `value` may differ from what `json` reads in `source` (a dropped duplicate key).

    orjson keeps the last of duplicate keys. It writes back exactly one `:`
    per key it kept, and the same strings as it read, so its output holds as
    many colons as the input unless a key was dropped (with it, its colon).
    Only an input colon spelled `\\u003a` inside a string would add one to
    the output and could hide a drop: such input, and 19-digit numbers, are
    left to `json`, which is exact.
    """
    if classes is None:
        classes = _classify(source)
    if _orjson_may_differ(source, classes):
        return True
    return orjson.dumps(value).count(b":") != classes.count(b":")


def _loads(source: bytes, classes: bytes | None = None) -> Any:
    try:
        value = orjson.loads(source)
    except (orjson.JSONDecodeError, RecursionError):
        raise _Unusual from None
    if _keys_lost(source, value, classes):
        raise _Unusual
    return value


def _exact_item(data: bytes, start: int, end: int, line: int) -> Any:
    """One item through the exact decoder (duplicate keys, odd numbers), its errors at file lines."""
    try:
        text = data[start:end].decode("utf-8")
    except UnicodeDecodeError:
        raise _Unusual from None  # the exact path names the byte and its line
    try:
        value, stop = _DECODER.raw_decode(text)
    except _DuplicateKey as error:
        raise JSONInputError(f"duplicate key {error.args[0]!r}", line) from None
    except (ValueError, RecursionError):
        raise _Unusual from None
    if stop != len(text):
        raise _Unusual
    if _SURROGATE_ESCAPE.search(text) and _lone_surrogate(value) is not None:
        raise _Unusual  # the exact path names it
    return value


@dataclass(frozen=True)
class _ListLayout:
    """Where an indented List's items lie: the `[` of `"items"`, the first item, its indent, the `]`."""

    bracket: int
    first: int
    indent: int
    close: int  # the newline before the closing `]`
    close_bracket: int


def _list_layout(data: bytes) -> _ListLayout:
    """The layout of an indented List, or `_Unusual` when it is not the expected one.

    In an indented List each item starts on a line of its own at one
    indentation (`,` newline, spaces, `{`), and the array closes on a line
    indented like the `"items"` key. A raw newline cannot occur inside a JSON
    string, and deeper lines are indented further, so these marks are only
    found at item boundaries; each piece must still parse as one object.
    """
    found = _ITEMS_KEY.search(data)
    if found is None:
        raise _Unusual
    key_line = data.rfind(b"\n", 0, found.start()) + 1
    key_indent = found.start() - key_line
    if data[key_line : found.start()] != b" " * key_indent:
        raise _Unusual
    bracket = found.end() - 1
    if data[bracket + 1 : bracket + 2] != b"\n":
        raise _Unusual
    first = bracket + 2
    indent = 0
    while data[first + indent : first + indent + 1] == b" ":
        indent += 1
    if indent <= key_indent or data[first + indent : first + indent + 1] != b"{":
        raise _Unusual
    # Searched from the end: the items' `]` is on the List's last lines, and a forward
    # search for a newline and spaces crawls through every indented line (0.3 s on
    # 224 MB). Should a later key's array close at this indentation instead, the last
    # item's piece runs into it and fails to parse as one object: the exact path.
    close = data.rfind(b"\n" + b" " * key_indent + b"]", first)
    if close == -1:
        raise _Unusual
    return _ListLayout(bracket, first, indent, close, close + 1 + key_indent)


def _list_wrapper(data: bytes, layout: _ListLayout) -> tuple[dict[str, Any], dict[str, Any]]:
    """The List's own keys before and after `items` (proving `items` is a top-level key)."""
    head = orjson_object(data[: layout.bracket] + b"null}")
    if not head or list(head)[-1] != "items" or head["items"] is not None:
        raise _Unusual
    tail = orjson_object(b'{"items":null' + data[layout.close_bracket + 1 :])
    del head["items"], tail["items"]
    if head.keys() & tail.keys():
        raise _Unusual
    return head, tail


def _item_bounds(data: bytes, layout: _ListLayout) -> tuple[list[int], list[int], list[int]]:
    """(start, end, line) of every item: from its `{` to its `}`, and the line it starts on."""
    boundary = b",\n" + b" " * layout.indent + b"{"
    # re finds a literal through memchr on its first byte: several times faster than bytes.find on indentation.
    marks = [found.start() for found in re.compile(re.escape(boundary)).finditer(data, layout.first, layout.close)]
    starts = [layout.first + layout.indent, *(mark + len(boundary) - 1 for mark in marks)]
    ends = [*marks, layout.close]
    lines: list[int] = []
    line = data.count(b"\n", 0, layout.first) + 1
    previous = layout.first
    for start in starts:
        line += data.count(b"\n", previous, start)
        lines.append(line)
        previous = start
    return starts, ends, lines


def _fast_list(data: bytes, max_nodes: int | None) -> JsonDocument:
    """A List split at its item boundaries (`_list_layout`), each item parsed by orjson."""
    layout = _list_layout(data)
    head, tail = _list_wrapper(data, layout)
    starts, ends, lines = _item_bounds(data, layout)
    # The value budget, counted as the items are read (an upper bound, as
    # `estimated_json_nodes`): what is built before the budget is passed is
    # bounded by the budget, as if it had been counted first.
    values = 1 + estimated_json_nodes(data[: layout.bracket]) + estimated_json_nodes(data[layout.close_bracket :])
    items: list[Any] = []
    view = memoryview(data)
    try:
        for group in range(0, len(starts), _GROUP):
            stop = min(group + _GROUP, len(starts))
            region = data[starts[group] : ends[stop - 1]]
            classes = _classify(region)
            values += classes.count(b"x") + stop - group
            if max_nodes is not None and values > max_nodes:
                check_json_node_budget(data, max_nodes)  # the whole file's estimate, for the message
            items.extend(_read_group(data, view, starts[group:stop], ends[group:stop], lines[group:stop],
                                     region, classes))
    finally:
        view.release()
    document = {**head, "items": items, **tail}
    return JsonDocument(document, data.count(b"\n", 0, _first_non_space(data)) + 1, lines, [])


# Items checked together: the checks are one pass each over a group's bytes
# instead of one call per item (a call costs about a microsecond).
_GROUP = 64


def _read_group(data: bytes, view: memoryview, starts: list[int], ends: list[int], lines: list[int],
                region: bytes, classes: bytes) -> list[Any]:
    """The items of one group, each parsed on its own (which proves the split), checked together."""
    if not _orjson_may_differ(region, classes):
        try:
            values = [orjson.loads(view[start:end]) for start, end in zip(starts, ends, strict=True)]
        except (orjson.JSONDecodeError, RecursionError):
            pass
        else:
            # The items' colons are the region's (the separators between them hold none).
            if orjson.dumps(values).count(b":") == classes.count(b":"):
                return values
    # Something to look at more closely: item by item, the doubtful ones by the exact decoder.
    out = []
    for start, end, line in zip(starts, ends, lines, strict=True):
        try:
            out.append(_loads(data[start:end]))
        except _Unusual:  # a duplicate key, or a number orjson reads otherwise: the exact decoder decides
            out.append(_exact_item(data, start, end, line))
    return out


def orjson_object(source: bytes) -> dict[str, Any]:
    value = _loads(source)
    if not isinstance(value, dict):
        raise _Unusual
    return value


_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")


def _first_non_space(data: bytes) -> int:
    found = _LEADING_SPACE.match(data)
    return found.end() if found else 0  # (`lstrip` would copy the whole file)


def load_json_bytes(data: bytes, max_nodes: int | None = None) -> JsonDocument | None:
    """The document in UTF-8 `data` (no byte-order mark) by the fast path, or None: use `load_json`.

    Raises `JSONInputError` for a duplicate key the fast path proved and for
    a text over the `max_nodes` value budget (checked before anything is
    parsed, or for a List as its items are read); every other problem sends
    the caller to the exact path, whose messages say precisely what is wrong.
    """
    if not HAVE_ORJSON:  # pragma: no cover
        check_json_node_budget(data, max_nodes)
        return None
    start = _first_non_space(data)
    try:
        if data[start : start + 1] == b"{" and b'"items"' in data[start : start + 65_536]:
            try:
                return _fast_list(data, max_nodes)
            except _Unusual:
                pass
        check_json_node_budget(data, max_nodes)
        value = _loads(data)
    except _Unusual:
        return None
    if isinstance(value, dict) and isinstance(value.get("items"), list) and value["items"]:
        return None  # a List in another layout: the exact path locates its items
    return JsonDocument(value, data.count(b"\n", 0, start) + 1, [], [])
