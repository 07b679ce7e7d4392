"""Writing files atomically: a reader sees the old file or the new one, never half of one.

Used for every file the auditor writes (reports, snapshots): a run that fails
part-way leaves what was there before, and no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from typing import Iterable

from auditor.errors import AuditError


def write_atomically(path: str, content: str | Iterable[str], *, mode: int = 0o644, what: str = "report") -> None:
    """Write `content` (a string, or chunks streamed as they come) to `path`, then rename it into place."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".audit-", suffix=".tmp", dir=directory)
    except OSError as error:
        raise AuditError(f"{path}: cannot write {what}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as stream:
            for chunk in (content,) if isinstance(content, str) else content:
                stream.write(chunk)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException as error:  # also on KeyboardInterrupt: never leave the temporary file
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise AuditError(f"{path}: cannot write {what}: {error.strerror or error}") from None
        raise
