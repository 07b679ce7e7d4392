"""The layout's view of a tree, built from the offline reader's own walk and parse.

`audit TREE` reads every file once with the offline reader
(`auditor.sources.files`); a `TreeCollector` passed to it as its observer
keeps each folder's entries and each file's documents (with their lines), and
`tree()` turns them into the `TreeFiles` that `resolve_layout` reads. So the
tree is walked once and parsed once, and resolving costs only what resolving
costs (docs/gitops.md, "Cost").

What the reader does not parse is completed here, cheaply: files named
`Kustomization` (no suffix, which kustomize reads and the reader does not)
are parsed on their own, and a manifest file the reader listed but could not
read is recorded as a problem of that file, so a kustomization listing it
says "not read", never "not found".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from auditor.sources.gitops.tree import ParsedFile, TreeFiles

# The layout's own modules (`tree`, `model`) are imported by `tree()`, once the read is done: the
# collector is what the reader needs before its workers start, and the rest can load while they parse.


class ReadDocument(Protocol):
    """What the layout reads of one document the offline reader parsed."""

    data: Any
    line: int
    item_lines: list[int]
    problems: list[Any]


class TreeCollector:
    """A `ReadObserver` of the offline reader that keeps what the layout needs of one tree.

    Paths are turned relative to `root` (the folder as given on the command
    line) with `/` separators, as the layout's results use them.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        # The reader joins every path onto the root as given: stripping it is exact (and far cheaper
        # than os.path.relpath, which makes both paths absolute every time).
        self._prefix = root if root.endswith(os.sep) else root + os.sep
        self._dirs: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}  # (files, sub-folders)
        self._files: dict[str, ParsedFile] = {}
        self._read: list[tuple[str, str, Sequence[ReadDocument]]] = []

    def relative(self, path: str) -> str:
        if path == self.root:
            return ""
        # (os.path.relpath only for a path the reader did not build from this root.)
        relative = path[len(self._prefix):] if path.startswith(self._prefix) else os.path.relpath(path, self.root)
        if relative == ".":
            return ""
        return relative if os.sep == "/" else relative.replace(os.sep, "/")

    def full(self, relative: str) -> str:
        """A tree-relative path as the offline reader spells it (the root as given, joined)."""
        return self._prefix + relative.replace("/", os.sep) if relative else self.root

    # --- the ReadObserver protocol of auditor.sources.files --------------------------------

    def folder(self, path: str, files: list[str], subdirs: list[str]) -> None:
        self._dirs[self.relative(path)] = (tuple(files), tuple(subdirs))

    def file(self, path: str, data: bytes, documents: Sequence[ReadDocument]) -> None:
        text = data.decode("utf-8", errors="replace")  # the reader refused anything else already
        if text.startswith("\ufeff"):
            text = text[1:]
        # Turned into the layout's file by `tree()`, all files in one loop: done here, between the
        # parses of two files, the same work costs about twice as much (measured on benchmarks/gitops_layout.py).
        self._read.append((path, text, documents))

    # --- the result ----------------------------------------------------------------------

    def tree(self) -> TreeFiles:
        """The tree as the layout reads it (call once the reader is done)."""
        from auditor.sources.gitops.model import Origin, Problem
        from auditor.sources.gitops.tree import (
            MANIFEST_SUFFIXES,
            DirListing,
            ParsedFile,
            TreeFiles,
            is_parsed_name,
            join,
            parsed_file,
        )

        for path, text, documents in self._read:
            relative = self.relative(path)
            # A document holding what kubectl would refuse is no manifest the reader kept (a tool's
            # config file with its own tags): the layout sees nothing in it either.
            raw = [(None if d.problems else d.data, d.line, d.item_lines) for d in documents]
            self._files[relative] = parsed_file(relative, text, raw)
        self._read.clear()
        files = dict(self._files)
        listings = {directory: DirListing(*entries) for directory, entries in self._dirs.items()}
        for directory, listing in listings.items():
            for name in listing.files:
                path = join(directory, name)
                if path in files or not is_parsed_name(name):
                    continue
                if name.endswith(MANIFEST_SUFFIXES):
                    # Listed by the walk, never handed over: the reader could not read it.
                    files[path] = ParsedFile(path, "", problem=Problem(
                        Origin(path), "not read (see the input problems of this file)"))
                else:  # `Kustomization`: kustomize reads it, the offline reader does not
                    files[path] = _parse_alone(self.full(path), path)
        return TreeFiles(self.root, {path: files[path] for path in sorted(files)}, listings)


def _parse_alone(full_path: str, path: str) -> ParsedFile:
    from auditor.sources.gitops.model import Origin, Problem
    from auditor.sources.gitops.tree import ParsedFile, parse_text

    try:
        with open(full_path, "rb") as stream:
            data = stream.read(1024 * 1024 + 1)
    except OSError as error:
        return ParsedFile(path, "", problem=Problem(Origin(path), f"cannot read: {error.strerror or error}"))
    if len(data) > 1024 * 1024:
        return ParsedFile(path, "", problem=Problem(Origin(path), "a kustomization file larger than 1 MiB"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return ParsedFile(path, "", problem=Problem(Origin(path), "not valid UTF-8"))
    return parse_text(path, text)
