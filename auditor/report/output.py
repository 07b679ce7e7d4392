"""Writing report files atomically: a reader sees the old file or the new one, never half."""

from __future__ import annotations

import os
import tempfile

from auditor.errors import AuditError


def write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".audit-", suffix=".tmp", dir=directory)
    except OSError as error:
        raise AuditError(f"{path}: cannot write report: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise AuditError(f"{path}: cannot write report: {error.strerror or error}") from None
