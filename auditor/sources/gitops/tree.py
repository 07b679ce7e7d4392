"""Reading a GitOps tree: every YAML/JSON file parsed once, with the line of each document.

This module does the only I/O of the package (`read_tree_files`); everything
after it is a pure function of the `TreeFiles` it returns, which tests and
benchmarks also build from text (`TreeFiles.from_texts`). Files are parsed
with the project's own loader (`auditor.parsing`); a file it refuses is a
`Problem` of that file, with its line, and the walk goes on: one broken file
never hides the rest.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditor.model import K8sObject, group_kind, split_api_version
from auditor.parsing.json_docs import JSONInputError, load_json
from auditor.parsing.yaml_docs import DEFAULT_MAX_ALIAS_EXPANSION, DEFAULT_MAX_NODES, YAMLInputError, iter_documents
from auditor.sources.files import _with_generated_name as with_generated_name
from auditor.sources.gitops.model import Note, ObjectId, Origin, Problem

# kustomize's recognised kustomization file names, in the order it looks for them
# (sigs.k8s.io/kustomize/api/konfig: RecognizedKustomizationFileNames).
KUSTOMIZATION_FILE_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
DEFAULT_MAX_FILE_BYTES = 768 * 1024 * 1024
DEFAULT_MAX_FILES = 50_000


# Documents and object records are built for every document of a tree (thousands), never changed
# after, and never hashed (they hold the parsed data): plain slotted classes, which cost a sixth of
# frozen ones to build.
@dataclass(slots=True)
class Document:
    """One YAML document (or the JSON value) of a file, with the lines it spans."""

    data: Any
    line: int  # first line of its content
    end_line: int  # last line before the next document (inclusive)


@dataclass(slots=True)
class ObjectRecord:
    """A Kubernetes object as written in the tree (before kustomize, Flux or Argo CD touch it)."""

    id: ObjectId
    api_version: str
    kind: str
    group: str
    gk: str
    name: str
    namespace: str | None  # metadata.namespace as written
    data: dict[str, Any]
    document: Document


@dataclass(slots=True)  # one per file of the tree (thousands): slotted, its caches made when first asked for
class ParsedFile:
    """One file of the tree: its documents, the objects among them, or the problem that stopped it."""

    path: str
    text: str
    documents: tuple[Document, ...] = ()
    objects: tuple[ObjectRecord, ...] = ()
    problem: Problem | None = None
    _lines: list[str] | None = field(default=None, repr=False)
    _indexes: dict[int, KeyIndex] | None = field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines

    def index(self, document: Document) -> KeyIndex:
        """The key lines of one document, indexed in one pass the first time they are asked for."""
        if self._indexes is None:
            self._indexes = {}
        found = self._indexes.get(document.line)
        if found is None:
            found = index_key_lines(self.lines, document.line, document.end_line)
            self._indexes[document.line] = found
        return found

    def line_of(self, document: Document, *keys: str) -> int | None:
        """Line of the block-style key path `keys` in `document` (None when not found)."""
        if not keys:
            return document.line
        return self.index(document).keys.get(keys)

    def line_of_item(self, document: Document, key: str, value: str) -> int | None:
        """Line of the list item `value` under the top-level key `key` (e.g. a `resources:` entry)."""
        wanted = value.strip()
        for number, text in self.index(document).items.get((key,), ()):
            if wanted and wanted in text:
                return number
        return self.line_of(document, key)


@dataclass(frozen=True, slots=True)
class DirListing:
    """A folder as the walk saw it: its file names and the folders below it."""

    files: tuple[str, ...]  # names of every regular file in the folder
    subdirs: tuple[str, ...]  # names of the folders below it (hidden ones and chart templates excluded)


@dataclass(frozen=True)
class TreeFiles:
    """Every file of a tree, parsed; folders with their entries. Paths are tree-relative with `/`."""

    root: str
    files: Mapping[str, ParsedFile]
    dirs: Mapping[str, DirListing]
    notes: tuple[Note, ...] = ()

    @classmethod
    def from_texts(cls, texts: Mapping[str, str], root: str = ".") -> TreeFiles:
        """A tree from `{relative path: text}` (tests and benchmarks); other files may be given as ''."""
        files: dict[str, ParsedFile] = {}
        dirs: dict[str, tuple[set[str], set[str]]] = {"": (set(), set())}
        for path in sorted(texts):
            parts = path.split("/")
            for depth in range(len(parts) - 1):
                parent = "/".join(parts[:depth])
                child = parts[depth]
                dirs.setdefault(parent, (set(), set()))[1].add(child)
                dirs.setdefault("/".join(parts[: depth + 1]), (set(), set()))
            dirs.setdefault("/".join(parts[:-1]), (set(), set()))[0].add(parts[-1])
            if is_parsed_name(parts[-1]):
                files[path] = parse_text(path, texts[path])
        listings = {d: DirListing(tuple(sorted(f)), tuple(sorted(s))) for d, (f, s) in dirs.items()}
        return cls(root, files, listings)

    def exists(self, path: str) -> bool:
        return self.is_file(path) or path in self.dirs

    def is_file(self, path: str) -> bool:
        if path in self.files:
            return True
        parent, _, name = path.rpartition("/")
        listing = self.dirs.get(parent)
        return listing is not None and name in listing.files

    def kustomization_file(self, directory: str) -> tuple[str | None, list[str]]:
        """The kustomization file of a folder, and every recognised name present (kustomize refuses several)."""
        listing = self.dirs.get(directory)
        if listing is None:
            return None, []
        present = [name for name in KUSTOMIZATION_FILE_NAMES if name in listing.files]
        if not present:
            return None, []
        return join(directory, present[0]), present


def is_parsed_name(name: str) -> bool:
    return name.endswith(MANIFEST_SUFFIXES) or name == "Kustomization"


def join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def normalize(path: str) -> str | None:
    """`./a/../b/` -> `b`; None when the path leaves the tree (`../x`) or is absolute."""
    if path.startswith("/"):
        return None
    if not path.startswith(".") and "/." not in path and "//" not in path and not path.endswith("/"):
        return path  # no empty, `.` or `..` part: already normal (the usual case, asked thousands of times)
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(part)
    return "/".join(parts)


# --- key lines -----------------------------------------------------------------------

_KEY = re.compile(r"^(\s*(?:-\s+)*)(\"[^\"]*\"|'[^']*'|[^\s#'\"\[\]{},:-][^:#]*?)\s*:(?:\s+(.*))?$")
_BLOCK_SCALAR = re.compile(r"^[|>][-+0-9]*\s*(?:#.*)?$")


def top_level_key_line(lines: list[str], start: int, end: int, key: str) -> int | None:
    """The line of a top-level key (`namespace:` of a kustomization): a key at column 0 is never inside
    a block scalar, so a plain scan is exact for block style."""
    prefix = f"{key}:"
    for number in range(max(start, 1), min(end, len(lines)) + 1):
        if lines[number - 1].startswith(prefix):
            return number
    return None


def child_key_line(lines: list[str], start: int, end: int, parent: str, key: str) -> int | None:
    """The line of `parent.key` where `parent` is a top-level key (`spec.targetNamespace`).

    Only a key at the parent's first child column counts: text deeper in (a
    patch in a block scalar) is not mistaken for it.
    """
    inside = False
    column: int | None = None
    prefix = f"{key}:"
    for number in range(max(start, 1), min(end, len(lines)) + 1):
        line = lines[number - 1]
        body = line.lstrip()
        if not body or body.startswith("#"):
            continue
        lead = len(line) - len(body)
        if lead == 0:
            if inside:
                return None
            inside = line.startswith(f"{parent}:")
            continue
        if inside:
            if column is None:
                column = lead
            if lead == column and body.startswith(prefix):
                return number
    return None


def metadata_namespace_line(lines: list[str], start: int, end: int) -> int | None:
    """The line of `metadata.namespace` in a block-style manifest starting at `start`.

    A bounded scan of the `metadata:` block only (every namespaced object of
    a tree asks for it, so it must not cost a scan of the whole document).
    """
    in_metadata = False
    for number in range(max(start, 1), min(end, len(lines)) + 1):
        line = lines[number - 1]
        if not line or line[0] in " \t":
            if in_metadata and line.lstrip().startswith("namespace:"):
                return number
            continue
        if line.startswith("#"):
            continue
        if in_metadata:
            return None  # the next top-level key: metadata is over
        in_metadata = line.startswith("metadata:")
    return None


@dataclass(frozen=True, slots=True)
class KeyIndex:
    """Where the keys and list items of one document are: key path -> first line, path -> [(line, text)]."""

    keys: dict[tuple[str, ...], int]
    items: dict[tuple[str, ...], list[tuple[int, str]]]


def index_key_lines(lines: list[str], start: int, end: int) -> KeyIndex:
    """Index the block-style keys of lines `start`..`end` (1-based, inclusive) in one pass.

    A light scan of the text (the loader keeps lines of documents, not of
    keys), good for the block style kustomizations and GitOps manifests use:
    the content of block scalars (`patch: |`) is skipped, a list item belongs
    to the innermost key left of its dash. Flow style is not followed; callers
    then fall back to the document's line.
    """
    keys: dict[tuple[str, ...], int] = {}
    items: dict[tuple[str, ...], list[tuple[int, str]]] = {}
    stack: list[tuple[int, tuple[str, ...]]] = []  # (column, key path) of the open keys
    scalar_indent: int | None = None  # inside a block scalar opened by a key at this column
    for number in range(max(start, 1), min(end, len(lines)) + 1):
        line = lines[number - 1]
        body = line.lstrip()
        lead = len(line) - len(body)
        if scalar_indent is not None:
            if not body or lead > scalar_indent:
                continue
            scalar_indent = None
        if not body or body.startswith("#"):
            continue
        if body.startswith("-") and (len(body) == 1 or body[1] == " "):
            while stack and stack[-1][0] > lead:
                stack.pop()
            items.setdefault(stack[-1][1] if stack else (), []).append((number, body[1:].strip()))
        match = _KEY.match(line)
        if match is None:
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (*stack[-1][1], match.group(2).strip("'\"")) if stack else (match.group(2).strip("'\""),)
        stack.append((indent, path))
        keys.setdefault(path, number)
        value = match.group(3)
        if value is not None and _BLOCK_SCALAR.match(value):
            scalar_indent = indent  # its content is indented deeper than the key that opens it
    return KeyIndex(keys, items)


def find_key_line(lines: list[str], start: int, end: int, keys: tuple[str, ...]) -> int | None:
    """The line of a block-style key path between `start` and `end` (see `index_key_lines`)."""
    if not keys:
        return start
    return index_key_lines(lines, start, end).keys.get(keys)


# --- parsing one file ------------------------------------------------------------------


def parse_text(path: str, text: str, *, max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION,
               max_nodes: int | None = DEFAULT_MAX_NODES) -> ParsedFile:
    """Parse one file's text; a file the loader refuses keeps no document and records why."""
    if text.startswith("\ufeff"):
        text = text[1:]
    parsed = ParsedFile(path, text)
    if "\x00" in text:
        parsed.problem = Problem(Origin(path), "binary file (contains NUL bytes), not YAML or JSON")
        return parsed
    if not text.strip():
        return parsed
    try:
        if path.endswith(".json"):
            value = load_json(text)
            raw = [(value.data, value.line, value.item_lines)]
        else:
            raw = [(d.data, d.line, d.item_lines)
                   for d in iter_documents(text, max_alias_expansion=max_alias_expansion, max_nodes=max_nodes)]
    except (YAMLInputError, JSONInputError) as error:
        parsed.problem = Problem(Origin(path, error.line), error.problem)
        return parsed
    except (RecursionError, MemoryError):  # pragma: no cover - the loader bounds both
        parsed.problem = Problem(Origin(path), "document nested too deeply")
        return parsed
    return parsed_file(path, text, raw)


def parsed_file(path: str, text: str, raw: Sequence[tuple[Any, int, list[int]]]) -> ParsedFile:
    """A file from its text and its parsed documents (data, first line, List item lines).

    What `parse_text` builds after parsing, and what the offline reader's own
    parse is turned into (`collect.TreeCollector`): the tree is parsed once.
    """
    total = text.count("\n") + 1
    documents: list[Document] = []
    objects: list[ObjectRecord] = []
    last = len(raw) - 1
    for index, (data, line, item_lines) in enumerate(raw):
        end = raw[index + 1][1] - 1 if index < last else total
        document = Document(data, line, end if end > line else line)
        documents.append(document)
        record = _plain_record(path, document)
        if record is not None:
            objects.append(record)
        else:
            objects.extend(_objects_of(path, document, item_lines))
    return ParsedFile(path, text, tuple(documents), tuple(objects))


def _plain_record(path: str, document: Document) -> ObjectRecord | None:
    """The record of the usual document, a named object that is no List, without the general path's calls
    (every document of a tree comes here); None sends anything else to `_objects_of`, which decides."""
    data = document.data
    if type(data) is not dict:
        return None
    api_version, kind, meta = data.get("apiVersion"), data.get("kind"), data.get("metadata")
    if (type(api_version) is not str or not api_version or type(kind) is not str or kind not in _KIND_NAMES
            or type(meta) is not dict):
        return None
    name = meta.get("name")
    if type(name) is not str or not name:
        return None
    group = api_version.rpartition("/")[0]
    namespace = meta.get("namespace")
    return ObjectRecord(ObjectId(path, document.line), api_version, kind, group, group_kind(group, kind), name,
                        namespace if isinstance(namespace, str) and namespace else None, data, document)


class _KindNames(dict[str, bool]):
    """Kinds seen, each checked once: a kind name `K8sObject.identity_problem` accepts, not a `...List`."""

    def __missing__(self, kind: str) -> bool:
        accepted = (not kind.endswith("List")
                    and K8sObject.identity_problem({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}})
                    is None)
        if len(self) < 4096:  # bounded: a hostile tree of a million kind names is checked, not kept
            self[kind] = accepted
        return accepted

    def __contains__(self, kind: object) -> bool:
        return isinstance(kind, str) and self[kind]


_KIND_NAMES = _KindNames()


def _is_list(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("kind"), str) and data["kind"].endswith("List")
            and isinstance(data.get("items"), list))


def _record(path: str, line: int, data: dict[str, Any], document: Document) -> ObjectRecord:
    api_version: str = data["apiVersion"]
    kind: str = data["kind"]
    group, _ = split_api_version(api_version)
    meta = data["metadata"]
    namespace = meta.get("namespace")
    return ObjectRecord(ObjectId(path, line), api_version, kind, group, group_kind(group, kind), meta["name"],
                        namespace if isinstance(namespace, str) and namespace else None, data, document)


def _named(data: Any) -> Any:
    """`data`, named as the offline reader names an object with only `metadata.generateName`."""
    meta = data.get("metadata") if type(data) is dict else None
    if type(meta) is dict and not meta.get("name") and meta.get("generateName"):
        return with_generated_name(data)
    return data


def _objects_of(path: str, document: Document, item_lines: list[int]) -> list[ObjectRecord]:
    data = _named(document.data)
    if not _is_list(data):
        if K8sObject.identity_problem(data) is None:
            return [_record(path, document.line, data, document)]
        return []
    # A List (kustomize reads its items as resources too); typed lists lend their kind to items.
    item_kind = data["kind"][: -len("List")]
    out: list[ObjectRecord] = []
    for index, item in enumerate(data["items"]):
        line = item_lines[index] if index < len(item_lines) else document.line
        if isinstance(item, dict) and item_kind and "kind" not in item:
            item = {"kind": item_kind, "apiVersion": data.get("apiVersion"), **item}
        item = _named(item)
        if K8sObject.identity_problem(item) is None:
            out.append(_record(path, line, item, document))
    return out


# --- walking a folder ------------------------------------------------------------------


def _list_once(directory: str, visited: set[tuple[int, int]]) -> list[os.DirEntry[str]] | None:
    """The entries of `directory` sorted by name, or None when a link led here before (entered once)."""
    info = os.stat(directory)
    key = (info.st_dev, info.st_ino)
    if key in visited:
        return None
    visited.add(key)
    with os.scandir(directory) as it:
        return sorted(it, key=lambda e: e.name)


def read_tree_files(root: str, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, max_files: int = DEFAULT_MAX_FILES,
                    max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION,
                    max_nodes: int | None = DEFAULT_MAX_NODES) -> TreeFiles:
    """Walk `root` and parse every YAML/JSON file (and every `Kustomization` file) below it.

    Hidden entries are skipped, and so is a Helm chart's `templates/` folder
    (Go templates, not YAML yet), as the offline reader does. A file that
    cannot be read or parsed is a problem of that file; so is a folder that
    cannot be listed. Symbolic links are followed, each folder entered once.
    """
    files: dict[str, ParsedFile] = {}
    dirs: dict[str, DirListing] = {}
    notes: list[Note] = []
    visited: set[tuple[int, int]] = set()
    stack: list[str] = [""]
    parsed_count = 0
    while stack:
        relative = stack.pop()
        directory = os.path.join(root, relative) if relative else root
        try:
            entries = _list_once(directory, visited)
        except OSError as error:
            files[relative or "."] = ParsedFile(relative or ".", "", problem=Problem(
                Origin(relative or "."), f"cannot read folder: {error.strerror or error}"))
            continue
        if entries is None:
            continue
        names = {entry.name for entry in entries}
        file_names: list[str] = []
        subdirs: list[str] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = join(relative, entry.name)
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name == "templates" and "Chart.yaml" in names:
                    notes.append(Note(Origin(path), "Helm chart templates: Go templates, not read"))
                    continue
                subdirs.append(entry.name)
                continue
            file_names.append(entry.name)
            if not is_parsed_name(entry.name):
                continue
            parsed_count += 1
            if parsed_count > max_files:
                files[path] = ParsedFile(path, "", problem=Problem(
                    Origin(path), f"more than {max_files:,} manifest files in the tree; the rest is not read"))
                stack.clear()
                break
            files[path] = _read_one(os.path.join(directory, entry.name), path, max_file_bytes,
                                    max_alias_expansion, max_nodes)
        dirs[relative] = DirListing(tuple(file_names), tuple(subdirs))
        stack.extend(join(relative, name) for name in reversed(subdirs))
    return TreeFiles(root, files, dirs, tuple(notes))


def _read_one(full_path: str, path: str, max_file_bytes: int, max_alias_expansion: int,
              max_nodes: int | None) -> ParsedFile:
    try:
        # Non-blocking: a FIFO in a checked-out repository must not hang the walk.
        with open(os.open(full_path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as stream:
            info = os.fstat(stream.fileno())
            if not stat.S_ISREG(info.st_mode):
                return ParsedFile(path, "", problem=Problem(Origin(path), "not a regular file"))
            if info.st_size > max_file_bytes:
                return ParsedFile(path, "", problem=Problem(
                    Origin(path), f"{info.st_size:,} bytes, over the {max_file_bytes:,}-byte limit"))
            data = stream.read(max_file_bytes + 1)
    except OSError as error:
        return ParsedFile(path, "", problem=Problem(Origin(path), f"cannot read: {error.strerror or error}"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        return ParsedFile(path, "", problem=Problem(
            Origin(path, line), f"not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"))
    return parse_text(path, text, max_alias_expansion=max_alias_expansion, max_nodes=max_nodes)


def iter_objects(tree: TreeFiles) -> Iterable[ObjectRecord]:
    for path in sorted(tree.files):
        yield from tree.files[path].objects
