"""Errors that end a run with a one-line message and a documented exit code."""

from __future__ import annotations

# Exit codes (documented in README.md and docs/exit-codes.md).
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3


class AuditError(Exception):
    """An error the CLI reports as one line, then exits with `exit_code`."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        # One line, whatever the input put into it (a file name or a key holding a newline).
        message = message.replace("\r", "\\r").replace("\n", "\\n")
        super().__init__(message)
        self.message = message


class InputError(AuditError):
    """Input that cannot be read: unreadable path, malformed file, hostile document.

    Besides the one-line message, an error about one file keeps its parts
    (`path`, `line`, `problem`, and `code`, the kind of defect: a
    `auditor.model.ProblemCode` value), so a folder's broken file can become
    an input problem of the report instead of ending the run.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 problem: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.problem = problem
        self.code = code

    @classmethod
    def at(cls, path: str, line: int | None, problem: str, code: str | None = None) -> InputError:
        where = f"{path}:{line}" if line else path
        return cls(f"{where}: {problem}", path=path, line=line or None, problem=problem, code=code)


class ConfigError(AuditError):
    """A malformed exception list or posture file."""


class ClusterError(AuditError):
    """The cluster could not be read at all (bad kubeconfig, unreachable API, wrong target)."""

    exit_code = EXIT_INCOMPLETE
