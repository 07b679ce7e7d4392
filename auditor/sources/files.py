"""Offline input: `kubectl get -o json|yaml` Lists, manifest files, GitOps trees, stdin.

Everything is read and validated before any rule runs, so bad input ends the
run with one line naming the file (and line) and nothing half-written. Limits
keep hostile input bounded; each is documented in docs/input.md and can be
raised from the command line.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterable, Iterator, NoReturn

from auditor.errors import InputError
from auditor.model import IgnoredDocument, K8sObject, Source
from auditor.snapshot import Snapshot
from auditor.sources import snapshot_header
from auditor.parsing.json_docs import JSONInputError, load_json
from auditor.parsing.yaml_docs import DEFAULT_MAX_ALIAS_EXPANSION, DEFAULT_MAX_NODES, YAMLInputError, iter_documents

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"


@dataclass(frozen=True)
class ReadLimits:
    # A 100,000-object `kubectl get -o json` List is about 670 MB; a 1 GB file is refused.
    max_file_bytes: int = 768 * 1024 * 1024
    max_files: int = 50_000
    max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION
    max_yaml_nodes: int = DEFAULT_MAX_NODES


@dataclass
class _Collected:
    objects: list[K8sObject] = field(default_factory=list)
    ignored: list[IgnoredDocument] = field(default_factory=list)
    header: snapshot_header.SnapshotHeader | None = None


# --- finding the files ------------------------------------------------------


def _walk_directory(root: str, limits: ReadLimits) -> Iterator[tuple[str, IgnoredDocument | None]]:
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
                entries = sorted(it, key=lambda e: e.name)
        except OSError as error:
            raise InputError(f"{directory}: cannot read folder: {error.strerror or error}") from None
        names = {entry.name for entry in entries}
        subdirs: list[str] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = os.path.join(directory, entry.name)
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
                subdirs.append(path)
            elif entry.name.endswith(MANIFEST_SUFFIXES):
                count += 1
                if count > limits.max_files:
                    raise InputError(f"{root}: more than {limits.max_files:,} manifest files (see --max-files)")
                yield path, None
        stack.extend(reversed(subdirs))


# --- reading one file ---------------------------------------------------------


_CHUNK = 1024 * 1024


def _is_regular(stream: BinaryIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, AttributeError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return False


def _read_bytes(stream: BinaryIO, name: str, limit: int) -> bytes:
    if _is_regular(stream):
        data = stream.read(limit + 1)
    else:
        # A pipe or a device (/dev/zero, a FIFO, standard input) has no size to
        # check first: read it in chunks, and refuse binary data at its first
        # chunk rather than after `limit` bytes of it.
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = stream.read(min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            if b"\x00" in chunk:
                _refuse_binary(b"".join(chunks[:1]) + chunk, name)
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    if len(data) > limit:
        raise InputError(f"{name}: larger than the {limit:,}-byte limit (see --max-file-bytes)")
    return data


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _read_file(path: str, limits: ReadLimits, explicit: bool = True) -> bytes:
    # A file named on the command line may be a pipe (`audit <(kubectl ...)`);
    # one found in a folder must be a regular file: opened without blocking,
    # a FIFO in a checked-out repository cannot hang the walk.
    flags = os.O_RDONLY if explicit else os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        with open(os.open(path, flags), "rb") as stream:
            info = os.fstat(stream.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise InputError(f"{path}: is a folder")
            if not explicit and not stat.S_ISREG(info.st_mode):
                raise InputError(f"{path}: {_file_type(info.st_mode)}, not a regular file (only regular files are read in a folder)")
            if stat.S_ISREG(info.st_mode) and info.st_size > limits.max_file_bytes:
                raise InputError(
                    f"{path}: {info.st_size:,} bytes, over the {limits.max_file_bytes:,}-byte limit (see --max-file-bytes)"
                )
            return _read_bytes(stream, path, limits.max_file_bytes)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from None


def _refuse_binary(data: bytes, name: str) -> NoReturn:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # What Windows PowerShell's `>` writes: say so rather than "binary".
        raise InputError(f"{name}: UTF-16 text, not UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)")
    raise InputError(f"{name}: binary file (contains NUL bytes), not YAML or JSON")


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data:
        _refuse_binary(data, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError.at(name, line, f"not valid UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _looks_like_json(name: str, text: str) -> bool:
    if name.endswith(".json"):
        return True
    if name.endswith((".yaml", ".yml")):
        return False
    stripped = text.lstrip()
    return stripped.startswith(("{", "["))


def _documents(name: str, text: str, limits: ReadLimits) -> Iterator[tuple[Any, int, list[int]]]:
    if _looks_like_json(name, text):
        try:
            document = load_json(text)
        except JSONInputError as error:
            raise InputError.at(name, error.line, error.problem) from None
        yield document.data, document.line, document.item_lines
        return
    try:
        for document in iter_documents(text, max_alias_expansion=limits.max_alias_expansion,
                                       max_nodes=limits.max_yaml_nodes):
            yield document.data, document.line, document.item_lines
    except YAMLInputError as error:
        raise InputError.at(name, error.line, error.problem) from None


# --- turning documents into objects -------------------------------------------------


def _is_list(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and isinstance(document.get("kind"), str)
        and document["kind"].endswith("List")
        and isinstance(document.get("items"), list)
    )


def _add_document(out: _Collected, name: str, document: Any, line: int, item_lines: list[int]) -> None:
    if not _is_list(document):
        problem = K8sObject.identity_problem(document)
        if problem is None:
            out.objects.append(K8sObject(document, Source(name, line)))
        else:
            out.ignored.append(IgnoredDocument(Source(name, line), f"not a Kubernetes object ({problem})"))
        return
    header = snapshot_header.parse(document, name)
    if header is not None:
        if out.header is not None:
            raise InputError.at(name, line, "a second snapshot header (audit one snapshot at a time)")
        out.header = header
    # A typed list read straight from the API (`ServiceList`) leaves kind and
    # apiVersion out of its items; they are the list's.
    item_kind = document["kind"][: -len("List")]
    list_api_version = document.get("apiVersion")
    for index, item in enumerate(document["items"]):
        item_line = item_lines[index] if index < len(item_lines) else line
        if isinstance(item, dict) and item_kind and "kind" not in item:
            item = {"kind": item_kind, "apiVersion": list_api_version, **item}
        if _is_list(item):
            _add_document(out, name, item, item_line, [])
            continue
        problem = K8sObject.identity_problem(item)
        if problem is None:
            out.objects.append(K8sObject(item, Source(name, item_line)))
        else:
            out.ignored.append(IgnoredDocument(Source(name, item_line), f"list item is not a Kubernetes object ({problem})"))


def _read_one(out: _Collected, name: str, data: bytes, limits: ReadLimits, explicit: bool) -> None:
    text = _decode(data, name)
    found = False
    for document, line, item_lines in _documents(name, text, limits):
        found = True
        _add_document(out, name, document, line, item_lines)
    if not found:
        if explicit:
            raise InputError(f"{name}: empty (no YAML or JSON document)")
        out.ignored.append(IgnoredDocument(Source(name), "empty file"))


def _expand(paths: Iterable[str], limits: ReadLimits) -> Iterator[tuple[str, bool, IgnoredDocument | None]]:
    for path in paths:
        if path == STDIN:
            yield STDIN, True, None
        elif os.path.isdir(path):
            for file_path, skipped in _walk_directory(path, limits):
                yield file_path, False, skipped
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


def read_paths(paths: list[str], *, limits: ReadLimits = ReadLimits(), stdin: BinaryIO | None = None,
               allow_no_objects: bool = False) -> Snapshot:
    """Read every path into one snapshot, or raise `InputError` naming what is wrong.

    Input without any Kubernetes object is an error (a mistyped path, a Helm
    values file) unless `allow_no_objects`: a pre-commit run on a commit that
    touches only non-Kubernetes YAML has nothing to audit, and says so.
    """
    if not paths:
        raise InputError("no input given (a file, a folder, or - for standard input)")
    if paths.count(STDIN) > 1:
        raise InputError("standard input (-) can be read only once")
    out = _Collected()
    for path, explicit, skipped in _expand(paths, limits):
        if skipped is not None:
            out.ignored.append(skipped)
            continue
        if path == STDIN:
            stream = stdin if stdin is not None else sys.stdin.buffer
            _read_one(out, STDIN_NAME, _read_bytes(stream, STDIN_NAME, limits.max_file_bytes), limits, True)
        else:
            _read_one(out, path, _read_file(path, limits, explicit), limits, explicit)
    inputs = [STDIN_NAME if p == STDIN else p for p in paths]
    if not out.objects and out.header is None and not allow_no_objects:  # an empty snapshot is a valid one
        detail = f" ({len(out.ignored)} documents ignored: not Kubernetes objects)" if out.ignored else ""
        raise InputError(f"{', '.join(inputs)}: no Kubernetes objects found{detail}")
    if out.header is not None:
        if len(paths) > 1:
            raise InputError(f"{out.header.path}: a snapshot must be audited on its own, not with other input")
        return out.header.snapshot(out.objects, inputs=inputs, ignored=out.ignored)
    return Snapshot.build(out.objects, mode="offline", inputs=inputs, ignored=out.ignored)
