"""Offline input: `kubectl get -o json|yaml` Lists, manifest files, GitOps trees, stdin.

Everything is read and validated before any rule runs, so bad input ends the
run with one line naming the file (and line) and nothing half-written. Limits
keep hostile input bounded; each is documented in docs/input.md and can be
raised from the command line.
"""

from __future__ import annotations

import codecs
import functools
import json
import operator
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, NoReturn, Protocol

from auditor.errors import InputError
from auditor.gc_pause import collector_paused
from auditor.model import IgnoredDocument, InputProblem, K8sObject, ProblemCode, Source
from auditor.parsing.json_docs import (
    DEFAULT_MAX_JSON_NODES,
    JSONInputError,
    load_json,
    load_json_bytes,
)
from auditor.parsing.yaml_docs import (
    DEFAULT_MAX_ALIAS_EXPANSION,
    DEFAULT_MAX_NODES,
    YAMLInputError,
    YAMLProblem,
    iter_documents,
)
from auditor.snapshot import Snapshot
from auditor.sources import snapshot_header

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# Files up to this size are handed to a `ReadObserver` with their bytes (GitOps files are a few KB).
OBSERVED_BYTES = 8 * 1024 * 1024
STDIN = "-"
STDIN_NAME = "<stdin>"


@dataclass(frozen=True)
class ReadLimits:
    """The offline reader's bounds on hostile input (docs/input.md, "Limits"), and its worker count."""

    # A 100,000-object `kubectl get -o json` List is about 670 MB; a 1 GB file is refused.
    max_file_bytes: int = 768 * 1024 * 1024
    max_files: int = 50_000
    max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION
    max_yaml_nodes: int = DEFAULT_MAX_NODES
    max_json_nodes: int = DEFAULT_MAX_JSON_NODES
    # Processes parsing a folder's files (`--jobs`): 1 reads in this process, 0 picks the CPUs available.
    jobs: int = 1
    # Paths a folder's walk skips, as it skips hidden ones (the configuration file's `exclude:`, docs/config.md).
    exclude: Callable[[str], bool] | None = None

    def excluded(self, path: str) -> bool:
        return self.exclude is not None and self.exclude(path)


@dataclass
class _Collected:
    """What the read of some files gave: objects, ignored documents and a snapshot header."""

    objects: list[K8sObject] = field(default_factory=list)
    ignored: list[IgnoredDocument] = field(default_factory=list)
    header: snapshot_header.SnapshotHeader | None = None
    sources: dict[int, Source] = field(default_factory=dict)  # of ignored documents, by line (one file)

    def merge(self, other: _Collected) -> None:
        self.objects.extend(other.objects)
        self.ignored.extend(other.ignored)
        if other.header is not None:
            if self.header is not None:
                raise InputError(f"{other.header.path}: a second snapshot header (audit one snapshot at a time)")
            self.header = other.header


# --- finding the files ------------------------------------------------------


# What the walk yields beside each path: None for a manifest file to read, why a folder is skipped,
# or why a folder below the root cannot be read (a problem of that folder; the root itself stops the run).
_Walked = IgnoredDocument | InputError | None


class ReadObserver(Protocol):
    """Sees what the reader walks and parses, so a caller can reuse it (one walk, one parse).

    The GitOps layout (auditor.sources.gitops.collect) is built from it: the
    folders with their entries, and each file read whole with its documents.
    A file that fails is never passed to `file`.
    """

    def folder(self, path: str, files: list[str], subdirs: list[str]) -> None:
        """A folder entered: its regular (non-hidden) file names and the sub-folders walked."""

    def file(self, path: str, data: bytes, documents: list[_Document]) -> None:
        """A file read without error: its bytes and every document parsed from them."""


_entry_name = operator.attrgetter("name")


def _walk_directory(root: str, limits: ReadLimits,
                    observer: ReadObserver | None = None) -> Iterator[tuple[str, _Walked]]:
    """Manifest files below `root`, sorted, skipping hidden folders and chart templates.

    Symbolic links are followed, but a folder is entered once: a link loop
    cannot make the walk endless.
    """
    visited: set[tuple[int, int]] = set()
    count = 0
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            info = os.stat(directory)
            key = (info.st_dev, info.st_ino)
            if key in visited:
                continue
            visited.add(key)
            with os.scandir(directory) as it:
                entries = sorted(it, key=_entry_name)
        except OSError as error:
            unreadable = InputError.at(directory, None, f"cannot read folder: {error.strerror or error}",
                                       ProblemCode.UNREADABLE)
            if directory == root:
                raise unreadable from None
            yield directory, unreadable
            continue
        names = {entry.name for entry in entries}
        subdirs: list[str] = []
        file_names: list[str] = []
        for entry in entries:
            path = entry.path  # (os.path.join(directory, entry.name), joined by scandir)
            if entry.name.startswith(".") or limits.excluded(path):
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name == "templates" and "Chart.yaml" in names:
                    # Helm chart templates are Go templates, not YAML yet.
                    yield path, IgnoredDocument(
                        Source(path), "Helm chart templates (render them: helm template … | audit -)"
                    )
                    continue
                if entry.name == "templates" and "tasks" in names:
                    # An Ansible role (roles/NAME/{tasks,templates,...}): Jinja templates, not YAML yet.
                    yield path, IgnoredDocument(Source(path), "Ansible role templates (Jinja: render them first)")
                    continue
                subdirs.append(path)
                continue
            file_names.append(entry.name)
            if entry.name.endswith(MANIFEST_SUFFIXES):
                count += 1
                if count > limits.max_files:
                    raise InputError(f"{root}: more than {limits.max_files:,} manifest files (see --max-files)")
                yield path, None
        if observer is not None:
            observer.folder(directory, file_names, [os.path.basename(d) for d in subdirs])
        stack.extend(reversed(subdirs))


# --- reading one file ---------------------------------------------------------


_CHUNK = 1024 * 1024


def _regular_size(stream: BinaryIO) -> int | None:
    """The size of a regular file, None for a pipe, a device or a stream without a descriptor."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, AttributeError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _chunks(stream: BinaryIO, most: int) -> Iterator[bytes]:
    """What `stream` holds up to its end, at most `most` bytes, a chunk at a time."""
    while most > 0:
        chunk = stream.read(min(_CHUNK, most))
        if not chunk:
            return
        most -= len(chunk)
        yield chunk


def _read_bytes(stream: BinaryIO, name: str, limit: int, size: int | None = None) -> bytes:
    """At most `limit` bytes of `stream` (`InputError` beyond); `size`: its size, if a regular file."""
    if size is None:
        size = _regular_size(stream)
    if size is not None:
        # Asked for what the file holds (and one byte more, to see it grew): a read of `limit`
        # bytes would allocate that much first (768 MiB, for each file of a tree).
        data = stream.read(min(size, limit) + 1)
        if len(data) != size:  # it grew or shrank since it was measured, or a short read: read to the end
            data += b"".join(_chunks(stream, limit + 1 - len(data)))
    else:
        # A pipe or a device (/dev/zero, a FIFO, standard input) has no size to
        # check first: read it in chunks, and refuse binary data at its first
        # chunk rather than after `limit` bytes of it.
        chunks: list[bytes] = []
        for chunk in _chunks(stream, limit + 1):
            if b"\x00" in chunk:
                _refuse_binary(b"".join(chunks[:1]) + chunk, name)
            chunks.append(chunk)
        data = b"".join(chunks)
    if len(data) > limit:
        raise InputError.at(name, None, f"larger than the {limit:,}-byte limit (see --max-file-bytes)",
                            ProblemCode.TOO_LARGE)
    return data


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _read_file(path: str, limits: ReadLimits, explicit: bool = True) -> bytes:
    # A file named on the command line may be a pipe (`audit <(kubectl ...)`);
    # one found in a folder must be a regular file: opened without blocking,
    # a FIFO in a checked-out repository cannot hang the walk.
    flags = os.O_RDONLY if explicit else os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        # Unbuffered: the file is read whole, in one call; a buffer would only copy it.
        with open(os.open(path, flags), "rb", buffering=0) as stream:
            info = os.fstat(stream.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise InputError.at(path, None, "is a folder", ProblemCode.UNREADABLE)
            if not explicit and not stat.S_ISREG(info.st_mode):
                raise InputError.at(path, None, f"{_file_type(info.st_mode)}, not a regular file "
                                    "(only regular files are read in a folder)", ProblemCode.UNREADABLE)
            if stat.S_ISREG(info.st_mode) and info.st_size > limits.max_file_bytes:
                raise InputError.at(
                    path, None, f"{info.st_size:,} bytes, over the {limits.max_file_bytes:,}-byte limit "
                    "(see --max-file-bytes)", ProblemCode.TOO_LARGE,
                )
            size = info.st_size if stat.S_ISREG(info.st_mode) else None
            return _read_bytes(stream, path, limits.max_file_bytes, size)
    except OSError as error:
        raise InputError.at(path, None, f"cannot read: {error.strerror or error}", ProblemCode.UNREADABLE) from None


def _refuse_binary(data: bytes, name: str) -> NoReturn:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # What Windows PowerShell's `>` writes: say so rather than "binary".
        raise InputError.at(name, None, "UTF-16 text, not UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)",
                            ProblemCode.NOT_TEXT)
    raise InputError.at(name, None, "binary file (contains NUL bytes), not YAML or JSON", ProblemCode.NOT_TEXT)


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data:
        _refuse_binary(data, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        problem = f"not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"
        raise InputError.at(name, line, problem, ProblemCode.NOT_TEXT) from None
    return text[1:] if text.startswith("\ufeff") else text


def _looks_like_json(name: str, data: bytes) -> bool:
    if name.endswith(".json"):
        return True
    if name.endswith((".yaml", ".yml")):
        return False
    stripped = data[:4096].lstrip(b" \t\r\n")
    return stripped.startswith((b"{", b"[", codecs.BOM_UTF8 + b"{", codecs.BOM_UTF8 + b"["))


@dataclass(slots=True)
class _Document:
    """One parsed document and where it and its List items are."""

    data: Any
    line: int
    item_lines: list[int]
    item_columns: list[int] = field(default_factory=list)
    problems: list[YAMLProblem] = field(default_factory=list)


# How the parsers' messages begin (docs/input.md, "Error messages") for the defects that have their own code.
_DUPLICATE_KEY_MESSAGES = ("duplicate key", "duplicate merge key", "merge key overrides")
# The limits of docs/input.md ("Limits"): alias expansion, the node and value budgets, nesting, integer size.
_LIMIT_MARKS = ("aliases expand", "-node limit", "-value limit", "nested too deeply", "maximum nesting depth",
                "integer too large")


def parse_error_code(problem: str, language: str) -> ProblemCode:
    """The code of a problem the YAML or JSON reader found (`language`: "yaml" or "json")."""
    if problem.startswith(_DUPLICATE_KEY_MESSAGES):
        return ProblemCode.DUPLICATE_KEY
    if any(mark in problem for mark in _LIMIT_MARKS):
        return ProblemCode.TOO_LARGE
    return ProblemCode.INVALID_JSON if language == "json" else ProblemCode.INVALID_YAML


def _json_documents(name: str, holder: list[bytes], limits: ReadLimits) -> Iterator[_Document]:
    raw = holder.pop()  # the only reference now: freed as soon as this is done with it
    if b"\x00" in raw:
        _refuse_binary(raw, name)
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        # Checks the value budget itself: for an indented List while reading it, saving three passes.
        document = load_json_bytes(raw, limits.max_json_nodes)
        if document is None:
            text = _decode(raw, name)
            del raw  # free the bytes before the objects are built
            document = load_json(text)
            del text
        else:
            del raw
    except JSONInputError as error:
        raise InputError.at(name, error.line, error.problem, parse_error_code(error.problem, "json")) from None
    yield _Document(document.data, document.line, document.item_lines, document.item_columns)


def _yaml_documents(name: str, holder: list[bytes], limits: ReadLimits) -> Iterator[_Document]:
    text = _decode(holder.pop(), name)  # the bytes are freed once decoded
    try:
        for document in iter_documents(text, max_alias_expansion=limits.max_alias_expansion,
                                       max_nodes=limits.max_yaml_nodes, collect_problems=True):
            columns = document.item_columns if len(set(document.item_lines)) != len(document.item_lines) else []
            yield _Document(document.data, document.line, document.item_lines, columns, document.problems)
    except YAMLInputError as error:
        raise InputError.at(name, error.line, error.problem, parse_error_code(error.problem, "yaml")) from None


def _documents(name: str, holder: list[bytes], limits: ReadLimits) -> Iterator[_Document]:
    """The documents of the bytes in `holder`, which the parser takes out (so it alone can free them)."""
    if _looks_like_json(name, holder[0][:4096]):
        return _json_documents(name, holder, limits)
    return _yaml_documents(name, holder, limits)


# --- turning documents into objects -------------------------------------------------


def _is_list(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and isinstance(document.get("kind"), str)
        and document["kind"].endswith("List")
        and isinstance(document.get("items"), list)
    )


def _is_manifest(document: Any) -> bool:
    """A document written for the Kubernetes API (string `apiVersion` and `kind`), named or not."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("apiVersion"), str)
        and isinstance(document.get("kind"), str)
    )


GENERATED_NAME = "{prefix}<generated-{digest}>"


def _with_generated_name(raw: Any) -> Any:
    """An object with `metadata.generateName` and no name, named for the audit.

    `kubectl create` lets the API server complete the name (`web-` becomes
    `web-x7k2p`), so the manifest is still an object that will exist: audited
    as `web-<generated-3f2a9c0d>`. The suffix is the start of a SHA-256 of the
    object as read (canonical JSON), so it is the same on every run and for
    every copy of the file, tells two such objects apart, and cannot clash
    with a real name (`<` is not allowed in Kubernetes names). Exception
    entries match it like any name (`name: web-*`).
    """
    if not isinstance(raw, dict):
        return raw
    meta = raw.get("metadata")
    if not isinstance(meta, dict) or meta.get("name"):
        return raw
    prefix = meta.get("generateName")
    if not isinstance(prefix, str) or not prefix:
        return raw
    import hashlib  # only for these rare objects: not at start-up

    canonical = json.dumps(raw, sort_keys=True, ensure_ascii=False, default=str, allow_nan=True)
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return {**raw, "metadata": {**meta, "name": GENERATED_NAME.format(prefix=prefix, digest=digest)}}


def _add_object(out: _Collected, raw: Any, name: str, line: int, column: int | None, what: str) -> None:
    meta = raw.get("metadata") if type(raw) is dict else None
    if type(meta) is not dict or not meta.get("name"):  # the rare unnamed object: maybe a generateName one
        raw = _with_generated_name(raw)
    problem = K8sObject.identity_problem(raw)
    if problem is None:
        out.objects.append(K8sObject(raw, Source(name, line, column)))
        return
    # A List of a million non-objects is a million entries: each shares its
    # reason's text and its line's Source (no column: only counted, never shown).
    source = out.sources.get(line)
    if source is None:
        source = out.sources[line] = Source(name, line)
    out.ignored.append(IgnoredDocument(source, sys.intern(f"{what} ({problem})")))


def _add_document(out: _Collected, name: str, document: _Document, header_allowed: bool) -> None:
    data, line = document.data, document.line
    if document.problems:
        first = min(document.problems, key=lambda p: p.line)
        if _is_manifest(data):
            # Broken manifests stay an error of the run for now; the seam for
            # listing them as input problems instead is `on_file_error`.
            if first.kind == "tag":
                detail, code = " in a Kubernetes manifest (kubectl would send the bare value)", ProblemCode.LOCAL_TAG
            else:
                detail, code = "", parse_error_code(first.problem, "yaml")
            raise InputError.at(name, first.line, first.problem + detail, code)
        # A tool's config file (recyclarr, mkdocs, Taskfile) with its own tags: never a Kubernetes object.
        reason = f"not a Kubernetes manifest: {first.problem} at line {first.line}"
        out.ignored.append(IgnoredDocument(Source(name, line), reason))
        return
    if not _is_list(data):
        _add_object(out, data, name, line, None, "not a Kubernetes object")
        return
    header = snapshot_header.parse(data, name) if header_allowed else None
    if header is not None:
        if out.header is not None:
            raise InputError.at(name, line, "a second snapshot header (audit one snapshot at a time)")
        out.header = header
    _add_items(out, name, data, line, document.item_lines, document.item_columns)


def _add_items(out: _Collected, name: str, document: dict[str, Any], line: int, item_lines: list[int],
               item_columns: list[int]) -> None:
    # A typed list read straight from the API (`ServiceList`) leaves kind and
    # apiVersion out of its items; they are the list's.
    item_kind = document["kind"][: -len("List")]
    list_api_version = document.get("apiVersion")
    items = document["items"]
    lines = item_lines if len(item_lines) >= len(items) else [*item_lines, *[line] * (len(items) - len(item_lines))]
    columns: list[int | None] = [*item_columns[: len(items)], *[None] * (len(items) - len(item_columns))]
    objects, identity_problem = out.objects, K8sObject.identity_problem
    for item, item_line, column in zip(items, lines, columns, strict=False):
        if isinstance(item, dict):
            if item_kind and "kind" not in item:
                item = {"kind": item_kind, "apiVersion": list_api_version, **item}
            kind = item.get("kind")
            if type(kind) is str and kind.endswith("List") and _is_list(item):
                _add_items(out, name, item, item_line, [], [])
                continue
            meta = item.get("metadata")
            # The usual item, a named object: what _add_object does for it, without the call.
            if type(item) is dict and type(meta) is dict and meta.get("name") and identity_problem(item) is None:
                objects.append(K8sObject(item, Source(name, item_line, column)))
                continue
        _add_object(out, item, name, item_line, column, "list item is not a Kubernetes object")


def _read_one(name: str, read: Callable[[], bytes], limits: ReadLimits, explicit: bool,
              observer: ReadObserver | None = None) -> _Collected:
    """Everything one file holds, or `InputError`: a broken file never contributes half its objects."""
    # The bytes are handed over in a holder the parser empties: no other
    # reference keeps them (or the decoded text) alive while objects are built.
    holder = [read()]
    # An observer keeps them (and the documents) on purpose: it reuses this parse. Not the bytes of
    # a large file (a dump in a folder): those must be freed before its objects are built.
    data = holder[0] if observer is not None and len(holder[0]) <= OBSERVED_BYTES else b""
    return _collect(name, _documents(name, holder, limits), data, explicit, observer)


def _collect(name: str, documents: Iterable[_Document], data: bytes, explicit: bool,
             observer: ReadObserver | None) -> _Collected:
    """The objects of one file's `documents` (parsed here or by a worker: `auditor.sources.parallel`)."""
    out = _Collected()
    seen: list[_Document] | None = [] if observer is not None else None
    found = False
    for document in documents:
        found = True
        if seen is not None:
            seen.append(document)
        # Only a snapshot given as the input itself is a snapshot; one found in a folder is a List.
        _add_document(out, name, document, header_allowed=explicit)
    if observer is not None and seen is not None:
        observer.file(name, data, seen)
    if not found:
        if explicit:
            raise InputError(f"{name}: empty (no YAML or JSON document)")
        out.ignored.append(IgnoredDocument(Source(name), "empty file"))
    return out


def _expand(paths: Iterable[str], limits: ReadLimits,
            observer: ReadObserver | None = None) -> Iterator[tuple[str, bool, _Walked]]:
    for path in paths:
        if path == STDIN:
            yield STDIN, True, None
        elif os.path.isdir(path):
            for file_path, walked in _walk_directory(path, limits, observer):
                yield file_path, False, walked
        elif os.path.exists(path) or os.path.islink(path):
            yield path, True, None
        else:
            try:
                os.lstat(path)  # why it cannot be seen: absent, or a folder on the way is not searchable
            except (FileNotFoundError, NotADirectoryError):
                raise InputError(f"{path}: no such file or folder") from None
            except OSError as error:
                raise InputError(f"{path}: cannot read: {error.strerror or error}") from None
            raise InputError(f"{path}: no such file or folder")  # pragma: no cover - vanished meanwhile


def input_problem(path: str, error: InputError) -> InputProblem:
    """The input problem of the file at `path` that `error` says cannot be read."""
    problem = error.problem if error.problem is not None else error.message.removeprefix(f"{path}: ")
    code = ProblemCode(error.code) if error.code is not None else ProblemCode.INVALID_YAML
    return InputProblem(file=error.path or path, message=problem, code=code, line=error.line)


FileErrorHandler = Callable[[str, InputError], None]


def _read_path(path: str, explicit: bool, limits: ReadLimits, stdin: BinaryIO | None,
               observer: ReadObserver | None = None) -> _Collected:
    if path == STDIN:
        stream = stdin if stdin is not None else sys.stdin.buffer
        read = functools.partial(_read_bytes, stream, STDIN_NAME, limits.max_file_bytes)
        return _read_one(STDIN_NAME, read, limits, True)
    return _read_one(path, functools.partial(_read_file, path, limits, explicit), limits, explicit,
                     None if explicit else observer)


def _read_all(paths: list[str], limits: ReadLimits, stdin: BinaryIO | None,
              on_file_error: FileErrorHandler | None, observer: ReadObserver | None = None,
              meanwhile: Callable[[], object] | None = None) -> _Collected:
    out = _Collected()
    entries: Iterator[tuple[str, bool, _Walked]] = _expand(paths, limits, observer)
    workers = None
    if limits.jobs != 1 and any(path != STDIN and os.path.isdir(path) for path in paths):
        # (the module, and multiprocessing, imported only for a folder: not for one file's start-up)
        from auditor.sources import parallel

        entries, workers = parallel.prefetch(entries, limits, keep_bytes=observer is not None)
    try:
        if meanwhile is not None:  # before any file is read: while the workers parse, if there are some
            meanwhile()
        for path, explicit, walked in entries:
            if isinstance(walked, IgnoredDocument):
                out.ignored.append(walked)
                continue
            try:
                if walked is not None:  # a folder below a folder argument that cannot be read
                    raise walked
                parsed = workers.next() if workers is not None and not explicit else None
                if parsed is not None:  # read and parsed by a worker (auditor.sources.parallel)
                    found = _collect(path, parsed.replay(), parsed.data, False, observer)
                else:
                    found = _read_path(path, explicit, limits, stdin, observer)
            except InputError as error:
                # The one seam for per-file problems: a caller that lists them
                # instead of stopping passes `on_file_error`. A path named on
                # the command line that is itself broken always stops the run.
                if on_file_error is None or explicit:
                    raise
                on_file_error(path, error)
                continue
            out.merge(found)
    finally:
        if workers is not None:
            workers.close()
    return out


def read_paths(paths: list[str], *, limits: ReadLimits = ReadLimits(), stdin: BinaryIO | None = None,
               allow_no_objects: bool = False, on_file_error: FileErrorHandler | None = None,
               input_problems: bool = False, freeze: bool = False, observer: ReadObserver | None = None,
               meanwhile: Callable[[], object] | None = None) -> Snapshot:
    """Read every path into one snapshot, or raise `InputError` naming what is wrong.

    A file found in a folder that cannot be read stops the read, unless
    `on_file_error` takes it, or `input_problems`: then it is an input problem
    of the snapshot (`Snapshot.input_problems`), none of its objects is used,
    and every other file is read. A path named in `paths` that is itself
    broken always stops the read.

    Input without any Kubernetes object is an error (a mistyped path, a Helm
    values file) unless `allow_no_objects`, or input problems explain it: a
    pre-commit run on a commit that touches only non-Kubernetes YAML has
    nothing to audit, and says so. `observer` sees the folders' files read.
    `meanwhile` is called once before any file is read, once the workers of a parallel read
    have started: the command line prepares the rules then (what it raises ends the read).
    """
    if not paths:
        raise InputError("no input given (a file, a folder, or - for standard input)")
    if paths.count(STDIN) > 1:
        raise InputError("standard input (-) can be read only once")
    problems: list[InputProblem] = []

    def handle(path: str, error: InputError) -> None:
        if input_problems:
            problems.append(input_problem(path, error))
        if on_file_error is not None:
            on_file_error(path, error)

    # Parsing builds millions of dicts and lists and creates no reference
    # cycles: the cyclic collector would spend more than half the read
    # traversing them (issue 15), so it is off while reading. With `freeze`
    # (the command line, a process that ends with the run) what was read is
    # then moved out of its view (gc.freeze) for the rest of the run; a
    # long-lived caller keeps the collector's full view (frozen cyclic
    # garbage would never be freed).
    with collector_paused(freeze):
        out = _read_all(paths, limits, stdin, handle if input_problems or on_file_error else None, observer,
                        meanwhile)
    return _snapshot(paths, out, problems, allow_no_objects)


def _snapshot(paths: list[str], out: _Collected, problems: list[InputProblem], allow_no_objects: bool) -> Snapshot:
    inputs = [STDIN_NAME if p == STDIN else p for p in paths]
    if not out.objects and out.header is None and not allow_no_objects and not problems:
        # (an empty snapshot is a valid one; so is input whose objects were all in broken files: the report lists them)
        detail = f" ({len(out.ignored)} documents ignored: not Kubernetes objects)" if out.ignored else ""
        raise InputError(f"{', '.join(inputs)}: no Kubernetes objects found{detail}")
    if out.header is not None:
        if len(paths) > 1:
            raise InputError(f"{out.header.path}: a snapshot must be audited on its own, not with other input")
        return out.header.snapshot(out.objects, inputs=inputs, ignored=out.ignored)
    problems.sort(key=lambda problem: problem.sort_key)
    trees = [path for path in paths if path != STDIN and os.path.isdir(path)]
    return Snapshot.build(out.objects, mode="offline", inputs=inputs, ignored=out.ignored, input_problems=problems,
                          trees=trees)
