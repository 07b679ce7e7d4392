"""Writing the auditor's output files without damaging what is at their paths.

What a destination path leads to decides how it is written:

- a regular file, or a path where nothing is yet: **atomically** (a temporary
  file beside it, renamed over it), so a reader sees the old file or the new
  one, never half of one, and a run that fails leaves what was there;
- a FIFO or a character device (`/dev/null`, a terminal, `>(jq .)`): **as a
  stream**, written in place and never replaced (a report file once replaced
  the system's `/dev/null` when run as root);
- `-`, or any name of the run's own standard output (`/dev/stdout`, a file
  standard output is redirected to): standard output;
- a symbolic link is followed only to a FIFO or a character device (so
  `/dev/stdout`, `/dev/stderr` and `/dev/fd/N` work); a link to a regular
  file, or to nothing, is **refused**: writing through a link planted in a
  shared folder would replace whatever file it points at;
- a folder, a block device or a socket is refused.

`Outputs` checks every destination before anything is written, then opens
them all (temporary files, streams) before writing any: when one cannot be
written, nothing is (exit 2), and no temporary file stays behind.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO

from auditor.errors import AuditError

STDOUT_PATH = "-"
# The names the kernel gives the process's own standard output.
_STDOUT_NAMES = ("/dev/stdout", "/proc/self/fd/1", "/dev/fd/1")

Content = str | Iterable[str]


class DestinationKind(enum.Enum):
    STDOUT = "standard output"
    STREAM = "stream"  # a FIFO or a character device: written in place
    FILE = "file"  # a regular file or a new path: replaced atomically


@dataclass(frozen=True)
class Destination:
    """Where one output goes, as checked before anything is written."""

    path: str  # as given
    kind: DestinationKind
    what: str  # "json report", "snapshot": for messages
    identity: tuple[int, int] | str  # (device, inode) of what is there, else the absolute path
    shareable: bool = False  # a character device: two reports to /dev/null corrupt nothing
    option: str = ""  # how the user asked for it (`--json FILE`), for conflicts

    @property
    def asked_as(self) -> str:
        return self.option or self.what

    def error(self, reason: str) -> AuditError:
        where = "standard output" if self.kind is DestinationKind.STDOUT else self.path
        return AuditError(f"{where}: cannot write {self.what}: {reason}")


def _stdout_stat() -> os.stat_result | None:
    """What standard output writes to, or None when that cannot be told (closed, or not a file descriptor)."""
    if sys.stdout is None:
        return None
    try:
        return os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both an OSError and a ValueError
        return None


def stdout_is_closed() -> bool:
    """Whether standard output cannot be written at all (`audit ... >&-` starts Python without one)."""
    stream = sys.stdout
    if stream is None or getattr(stream, "closed", False):
        return True
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return False  # a stream without a descriptor (a test's StringIO): writable
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _is_stdout(path: str, target: os.stat_result) -> bool:
    """Whether writing `path` would write where standard output already goes (two outputs, one place)."""
    out = _stdout_stat()
    if out is None or not _same(out, target):
        return False
    # Sharing a character device (both to /dev/null, both to the terminal) corrupts nothing.
    return path in _STDOUT_NAMES or not stat.S_ISCHR(target.st_mode)


def _describe(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "it is a folder"
    if stat.S_ISBLK(mode):
        return "it is a block device, not a report file"
    if stat.S_ISSOCK(mode):
        return "it is a socket"
    return "it is not a regular file, a FIFO or a character device"


def _check_new_path(path: str, what: str) -> None:
    """A path where nothing is yet: its nearest existing folder must be a folder (it is created below it)."""
    parent = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            st = os.stat(parent)
        except FileNotFoundError:
            parent = os.path.dirname(parent)
            continue
        except OSError as error:
            raise AuditError(f"{path}: cannot write {what}: {error.strerror or error}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise AuditError(f"{path}: cannot write {what}: {parent} is not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise AuditError(f"{path}: cannot write {what}: Permission denied (in {parent})")
        return


def check_destination(path: str, what: str) -> Destination:
    """Where `path` leads (see the module docstring), or an `AuditError` (exit 2) saying why not there."""
    if path == STDOUT_PATH:
        return Destination(path, DestinationKind.STDOUT, what, "-")
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        _check_new_path(path, what)
        return Destination(path, DestinationKind.FILE, what, os.path.abspath(path))
    except OSError as error:
        raise AuditError(f"{path}: cannot write {what}: {error.strerror or error}") from None
    target = link
    if stat.S_ISLNK(link.st_mode):
        try:
            target = os.stat(path)
        except OSError as error:
            raise AuditError(f"{path}: cannot write {what}: a symbolic link to nothing usable "
                             f"({error.strerror or error}); give the file itself") from None
    identity = (target.st_dev, target.st_ino)
    if _is_stdout(path, target):
        return Destination(path, DestinationKind.STDOUT, what, "-")
    if stat.S_ISFIFO(target.st_mode) or stat.S_ISCHR(target.st_mode):
        return Destination(path, DestinationKind.STREAM, what, identity, shareable=stat.S_ISCHR(target.st_mode))
    if stat.S_ISLNK(link.st_mode):
        raise AuditError(f"{path}: cannot write {what}: it is a symbolic link (to {os.readlink(path)}); "
                         "give the file itself (links are followed only to FIFOs and devices)")
    if stat.S_ISREG(target.st_mode):
        if not os.access(path, os.W_OK):
            raise AuditError(f"{path}: cannot write {what}: Permission denied")
        return Destination(path, DestinationKind.FILE, what, identity)
    raise AuditError(f"{path}: cannot write {what}: {_describe(target.st_mode)}")


def check_destinations(requested: list[tuple[str, str]]) -> list[Destination]:
    """Check (path, what) pairs: each one, and that no two share a place (two outputs to stdout, or to one file)."""
    destinations = [check_destination(path, what) for path, what in requested]
    check_distinct(destinations)
    return destinations


def check_distinct(destinations: list[Destination]) -> None:
    """Refuse two outputs to standard output, or two to one file or FIFO (they would overwrite or interleave)."""
    seen: dict[tuple[int, int] | str, Destination] = {}
    for destination in destinations:
        if destination.shareable:
            continue
        shared = destination.identity
        other = seen.get(shared)
        if other is not None:
            if destination.kind is DestinationKind.STDOUT:
                raise AuditError(f"two reports to standard output ({other.asked_as} and {destination.asked_as}): "
                                 "send one of them to a file")
            raise AuditError(f"{destination.path}: {other.asked_as} and {destination.asked_as} would both be "
                             "written there: give each report its own file")
        seen[shared] = destination


@dataclass
class _Open:
    """A destination being written: its content, the stream open on it and, for a file, the temporary file
    renamed onto it."""

    destination: Destination
    content: Content
    stream: IO[str]
    temporary: str | None = None  # FILE: the temporary file beside the destination


def _chunks(content: Content) -> Iterable[str]:
    return (content,) if isinstance(content, str) else content


def _open_stream(destination: Destination) -> IO[str]:
    """Open a FIFO or device for writing without blocking on a FIFO nobody reads (that would hang the run)."""
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(destination.path, flags)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise destination.error("it is a FIFO that nothing reads") from None
        raise destination.error(error.strerror or str(error)) from None
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):  # it changed since it was checked
        os.close(fd)
        raise destination.error("it is no longer a FIFO or a character device")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)  # writes wait for the reader
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


@dataclass
class Outputs:
    """Several outputs written as one: checked, then all opened, then written; nothing if any fails."""

    items: list[tuple[Destination, Content]]
    mode: int = 0o644
    _opened: list[_Open] = field(default_factory=list)
    _created: list[str] = field(default_factory=list)  # folders made for new files, deepest last

    def write(self) -> None:
        try:
            self._open_all()
            for item in self._opened:
                if item.temporary is not None:
                    self._fill(item)
            for item in self._opened:
                if item.temporary is None:
                    self._fill(item)
            for item in self._opened:
                if item.temporary is not None:
                    try:
                        os.replace(item.temporary, item.destination.path)
                    except OSError as error:
                        raise item.destination.error(error.strerror or str(error)) from None
                    item.temporary = None
        except BaseException:  # also on KeyboardInterrupt: never leave a temporary file or a new folder
            self._discard()
            raise

    def _open_all(self) -> None:
        for destination, content in self.items:
            if destination.kind is DestinationKind.STDOUT:
                if sys.stdout is None or stdout_is_closed():
                    raise destination.error("it is closed")
                self._opened.append(_Open(destination, content, sys.stdout))
            elif destination.kind is DestinationKind.STREAM:
                self._opened.append(_Open(destination, content, _open_stream(destination)))
            else:
                self._opened.append(self._open_temporary(destination, content))

    def _open_temporary(self, destination: Destination, content: Content) -> _Open:
        directory = os.path.dirname(os.path.abspath(destination.path))
        missing = []
        parent = directory
        while not os.path.isdir(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        try:
            for folder in reversed(missing):
                os.mkdir(folder)
                self._created.append(folder)
            import tempfile  # only when a report goes to a file (~2.5 ms of start-up otherwise)

            fd, temporary = tempfile.mkstemp(prefix=".audit-", suffix=".tmp", dir=directory)
        except OSError as error:
            raise destination.error(error.strerror or str(error)) from None
        return _Open(destination, content, os.fdopen(fd, "w", encoding="utf-8", newline="\n"), temporary)

    def _fill(self, item: _Open) -> None:
        try:
            for chunk in _chunks(item.content):
                item.stream.write(chunk)
            item.stream.flush()
            if item.temporary is not None:
                os.fsync(item.stream.fileno())
                os.chmod(item.temporary, self.mode)
        except OSError as error:
            if item.destination.kind is DestinationKind.STDOUT and isinstance(error, BrokenPipeError):
                raise  # the reader of standard output went away: the CLI handles that
            raise item.destination.error(error.strerror or str(error)) from None
        finally:
            if item.destination.kind is not DestinationKind.STDOUT:
                with contextlib.suppress(OSError):
                    item.stream.close()

    def _discard(self) -> None:
        for item in self._opened:
            if item.destination.kind is not DestinationKind.STDOUT:
                with contextlib.suppress(OSError):
                    item.stream.close()
            if item.temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(item.temporary)
        for folder in reversed(self._created):
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def write_outputs(items: list[tuple[Destination, Content]], *, mode: int = 0o644) -> None:
    """Write each content to its checked destination; when one fails, none is written (AuditError, exit 2)."""
    Outputs(items, mode).write()


def write_atomically(path: str, content: Content, *, mode: int = 0o644, what: str = "report") -> None:
    """Write `content` (a string, or chunks streamed as they come) to `path`: one output, as described above."""
    write_outputs([(check_destination(path, what), content)], mode=mode)
