"""The line of a key inside an object read from a file (`spec.values.service.main.type`).

Objects keep the line their document starts at, not the line of each key.
A finding about a Service declared inside Helm values points at the values
line, so this module finds it when asked: it reads the file once (only files
holding such a declaration are ever read), and scans the object's lines for
the key path, following indentation. Block-style YAML and pretty-printed JSON
(one key per line, as kubectl prints it) are followed; anything else (flow
style, standard input, a file that changed or is gone) falls back to the
object's own line, never to a wrong one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from auditor.model import Source

# A key at the start of a line: `key:`, `- key:`, `"key":` (JSON), quoted YAML keys.
_KEY = re.compile(r"^(\s*(?:-\s+)*)(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s#'\"\[\]{},:-][^:#]*?)\s*:(?:\s+(.*))?$")
_BLOCK_SCALAR = re.compile(r"^[|>][-+0-9]*\s*(?:#.*)?$")
# Files larger than this are not re-read for a line (the object's line is used).
MAX_BYTES = 64 * 1024 * 1024

Reader = Callable[[str], "list[str] | None"]


def read_lines(path: str) -> list[str] | None:
    """The lines of a regular file, or None (not a file, too large, unreadable, not UTF-8)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None


class KeyLines:
    """Finds key lines in the files objects were read from; each file is read at most once."""

    def __init__(self, reader: Reader = read_lines) -> None:
        self._reader = reader
        self._files: dict[str, list[str] | None] = {}

    def source_of(self, source: Source | None, path: Sequence[str | int]) -> Source | None:
        """`source` moved to the line of `path` inside the object starting there (unchanged when not found)."""
        if source is None or source.line is None:
            return source
        line = self.line_of(source, path)
        return Source(source.path, line) if line else source

    def line_of(self, source: Source, path: Sequence[str | int]) -> int | None:
        if source.line is None:
            return None
        if source.path not in self._files:
            self._files[source.path] = self._reader(source.path)
        lines = self._files[source.path]
        if not lines or source.line > len(lines):
            return None
        keys: list[str] = []
        for part in path:
            if isinstance(part, int):
                break  # list positions are not followed: the enclosing key's line
            keys.append(part)
        return find_key_line(lines, source.line, tuple(keys))


def _unquote(key: str) -> str:
    if len(key) >= 2 and key[0] == key[-1] and key[0] in "\"'":
        return key[1:-1]
    return key


def find_key_line(lines: list[str], start: int, keys: tuple[str, ...]) -> int | None:
    """The line of the key path `keys` in the object whose first line is `start` (1-based), or of the
    deepest prefix of it found; None when not even the first key is found."""
    if not keys:
        return start
    stack: list[tuple[int, tuple[str, ...]]] = []
    scalar_indent: int | None = None
    best: tuple[int, int] | None = None  # (depth matched, line)
    content_column: int | None = None
    for number in range(start, len(lines) + 1):
        line = lines[number - 1]
        body = line.lstrip()
        lead = len(line) - len(body)
        if scalar_indent is not None:
            if not body or lead > scalar_indent:
                continue
            scalar_indent = None
        if not body or body.startswith("#"):
            continue
        if number > start and (body.startswith("---") and lead == 0):
            break
        match = _KEY.match(line.rstrip(","))
        if match is None:
            if content_column is not None and lead < content_column and body[0] in "}]":
                break
            continue
        indent = len(match.group(1))
        if content_column is None:
            content_column = indent
        elif indent < content_column or (indent == content_column and match.group(1).rstrip().endswith("-")):
            break  # the next object of a list, or the end of this one
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (*stack[-1][1], _unquote(match.group(2))) if stack else (_unquote(match.group(2)),)
        stack.append((indent, path))
        depth = len(path)
        if path == keys[:depth] and (best is None or depth > best[0]):
            best = (depth, number)
            if depth == len(keys):
                return number
        value = match.group(3)
        if value is not None and _BLOCK_SCALAR.match(value):
            scalar_indent = indent
    return best[1] if best else None
