"""Whose posture and exception list an audit was judged against, as every report names them.

The built-in posture and exception list are the platform's design (ADR 0020
amended by 0071): right for the platform, not necessarily for another site.
So each report says where the configuration in force came from — "built-in
platform defaults", or the file — and each exception entry it mentions
carries its file and line. An unused entry of the built-in list is not
"stale": the user cannot remove it, so reports list it only when asked
(`-v`), never with "remove it".
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from auditor.engine import AuditResult
from auditor.exceptions_list import EntryStatus, ExceptionEntry, ExceptionUsage, bundled_path

BUILTIN = "built-in platform defaults"


def _same_file(path: str, other: str) -> bool:
    return os.path.realpath(path) == os.path.realpath(other)


@dataclass(frozen=True)
class ConfigSources:
    """Where the posture and the exception list in force were read from (None: built in)."""

    posture_file: str | None
    exceptions_file: str | None
    exception_entries: int

    @classmethod
    def of(cls, result: AuditResult) -> ConfigSources:
        path = result.exceptions_path
        builtin = path is None or _same_file(path, bundled_path())
        return cls(result.posture_path, None if builtin else path, len(result.exceptions))

    @property
    def posture(self) -> str:
        return self.posture_file or BUILTIN

    @property
    def exceptions(self) -> str:
        return self.exceptions_file or BUILTIN

    @property
    def exceptions_builtin(self) -> bool:
        return self.exceptions_file is None

    def entry_location(self, entry: ExceptionEntry) -> str:
        """`exceptions.yaml:12` for an entry of a file, `built-in` for one of the built-in list."""
        if self.exceptions_file is None:
            return "built-in"
        path = entry.path or self.exceptions_file  # a merged list (several files): the entry's own
        return f"{path}:{entry.line}" if entry.line else path

    def sentence(self) -> str:
        """`Posture: FILE; exceptions: FILE (N entries)`, for the human-facing reports."""
        entries = f"{self.exception_entries} entr{'y' if self.exception_entries == 1 else 'ies'}"
        if self.posture_file is None and self.exceptions_file is None:
            return f"Posture and exceptions: {BUILTIN} ({entries})"
        return f"Posture: {self.posture}; exceptions: {self.exceptions} ({entries})"

    def reported(self, usage: ExceptionUsage, verbose: bool) -> bool:
        """Whether a remark about this entry belongs in a human-facing report.

        Expired entries always (their findings fail again); unused ones of a
        file always (stale: remove them); unused ones of the built-in list
        only when verbose (the user cannot remove them).
        """
        if usage.status is EntryStatus.EXPIRED:
            return True
        if usage.status is EntryStatus.UNUSED:
            return verbose or not self.exceptions_builtin
        return False

    def unused_remark(self, usage: ExceptionUsage) -> str:
        """`exception NAME matched nothing (...)`: stale in a file, merely unused when built in."""
        if self.exceptions_builtin:
            return f"built-in exception {usage.entry.name} matched nothing (part of the {BUILTIN}; nothing to remove)"
        return f"exception {usage.entry.name} matched nothing ({self.entry_location(usage.entry)}: stale? remove it)"

    def expired_remark(self, usage: ExceptionUsage) -> str:
        entry = usage.entry
        plural = "" if usage.matched == 1 else "s"
        covered = f"; it would cover {usage.matched} finding{plural}" if usage.matched else ""
        return (f"exception {entry.name} expired on {entry.expires} and no longer applies{covered} "
                f"({self.entry_location(entry)})")
