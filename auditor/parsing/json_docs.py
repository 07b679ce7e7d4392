"""JSON reading that keeps the line of every item of a `kubectl get -o json` List.

`json.loads` forgets positions, so a List's `items` are decoded one at a time
with the C `raw_decode`, counting newlines between them (linear, and close to
the cost of one `json.loads`). Duplicate keys are rejected, as kubectl's strict
decoding does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


class JSONInputError(ValueError):
    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


class _DuplicateKey(ValueError):
    pass


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict:
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
    data: Any
    line: int = 1
    item_lines: list[int] = field(default_factory=list)


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


def _decode_object_keeping_item_lines(text: str, start: int) -> tuple[dict, list[int], int]:
    """Decode the top-level object at `start`, locating each entry of `items`."""
    pairs: list[tuple[str, Any]] = []
    item_lines: list[int] = []
    index = _skip_ws(text, start + 1)
    line, line_pos = 1, 0
    if index < len(text) and text[index] == "}":
        return {}, [], index + 1
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
                    line_pos = index
                    item, index = _decode_at(text, index)
                    items.append(item)
                    item_lines.append(line)
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
        return _object_without_duplicates(pairs), item_lines, index
    except _DuplicateKey as error:
        raise JSONInputError(f"duplicate key {error.args[0]!r}", 1) from None


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
    """Parse one JSON document; for an object with `items`, keep their lines."""
    start = _skip_ws(text, 0)
    if start >= len(text):
        raise JSONInputError("empty input")
    if text[start] == "{":
        data, item_lines, end = _decode_object_keeping_item_lines(text, start)
    else:
        data, end = _decode_at(text, start)
        item_lines = []
    end = _skip_ws(text, end)
    if end != len(text):
        raise JSONInputError("invalid JSON: extra data after the document", _line_at(text, end))
    _refuse_lone_surrogates(text, data)
    return JsonDocument(data, _line_at(text, start), item_lines)
