"""GitLab Code Quality report (`--format codequality`, `--codequality FILE`) for the merge-request widget.

GitLab reads a JSON array of issues, each with `description`, `check_name`,
`fingerprint`, `severity` (`info`, `minor`, `major`, `critical` or
`blocker`), `location.path` (relative to the repository) and
`location.lines.begin`; it ignores the other fields of the Code Climate
spec and refuses a byte-order mark
(https://docs.gitlab.com/ci/testing/code_quality/#implement-a-custom-tool).
A job publishes it with `artifacts: reports: codequality:` (docs/ci-gitlab.md);
the widget then lists the issues a merge request adds or fixes, compared by
fingerprint with the target branch's report.

- One issue per finding. Failed findings keep their severity: error →
  `critical`, warning → `major`, info → `minor`. Excepted findings are
  `info`, their description naming the exception and its reason: accepted
  drift stays visible, as in every report.
- `fingerprint` hashes the rule and the object (kind, namespace, name,
  cluster) — never the message or the line, which change while the drift
  stays the same — plus a count for a rule's second finding on one object,
  so each issue stays itself across commits and no two issues collide.
- `location.path` is relative to the working directory (run `audit` from the
  repository root, as CI does); a finding read from standard input or a
  cluster names where it was read instead, and line 1.
- An input problem (a file that could not be read) is an issue too, of
  `check_name` `input-problem`, severity `blocker`, at the file and line.
  It is a defect of a file of the repository at a line, which is what the
  widget shows (as a linter's own parse errors are): kubectl would refuse the
  file, and none of its objects was audited, so the merge request must not
  look clean. Its fingerprint hashes the code and the file (not the line or
  the message), so it stays one issue while the file stays broken and is
  "fixed" when it reads again.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from auditor.engine import AuditResult
from auditor.model import Finding, FindingStatus, InputProblem, Severity, Source
from auditor.report.json_text import dumps_indented

SEVERITIES = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "minor"}
EXCEPTED_SEVERITY = "info"


STDIN_NAME = "<stdin>"


INPUT_PROBLEM_CHECK = "input-problem"
INPUT_PROBLEM_SEVERITY = "blocker"


def _path(finding: Finding, base: str, files: bool) -> str:
    """The finding's file relative to `base` (forward slashes) when below it, else where it was read."""
    if finding.source is None or not finding.source.path:
        return finding.object.display
    return _source_path(finding.source, base, files)


def _source_path(source: Source, base: str, files: bool) -> str:
    """The file relative to `base` (forward slashes) when below it, else as read."""
    if not files or source.path == STDIN_NAME:  # a cluster, standard input
        return source.path
    absolute, base = os.path.abspath(source.path), os.path.abspath(base)
    try:
        inside = os.path.commonpath([absolute, base]) == base
    except ValueError:  # another drive
        inside = False
    return str(PurePosixPath(*Path(os.path.relpath(absolute, base)).parts)) if inside else absolute


def _identity(finding: Finding) -> str:
    ref = finding.object
    return "\0".join([finding.rule, finding.cluster or "", ref.kind, ref.namespace or "", ref.name])


def _issue(finding: Finding, base: str, files: bool, occurrence: int) -> dict[str, Any]:
    display = f"{finding.cluster}: {finding.object.display}" if finding.cluster else finding.object.display
    description = f"{display}: {finding.message}"
    severity = SEVERITIES[finding.severity or Severity.ERROR]
    if finding.status is FindingStatus.EXCEPTED and finding.exception is not None:
        description += f" (excepted by {finding.exception.name}: {finding.exception.reason})"
        severity = EXCEPTED_SEVERITY
    identity = _identity(finding) + (f"\0{occurrence}" if occurrence else "")
    return {
        "description": description,
        "check_name": finding.rule,
        "fingerprint": hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest(),
        "severity": severity,
        "location": {
            "path": _path(finding, base, files),
            "lines": {"begin": finding.source.line if finding.source is not None and finding.source.line else 1},
        },
    }


def _problem_issue(problem: InputProblem, base: str, files: bool, occurrence: int) -> dict[str, Any]:
    path = _source_path(problem.source, base, files)
    identity = "\0".join([INPUT_PROBLEM_CHECK, problem.cluster or "", problem.code.value, path])
    identity += f"\0{occurrence}" if occurrence else ""
    where = f"{problem.cluster}: " if problem.cluster else ""
    return {
        "description": f"{where}input problem ({problem.code.value}): {problem.message}; the file could not be "
                       "read, none of its objects was audited",
        "check_name": INPUT_PROBLEM_CHECK,
        "fingerprint": hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest(),
        "severity": INPUT_PROBLEM_SEVERITY,
        "location": {"path": path, "lines": {"begin": problem.line or 1}},
    }


def to_list(result: AuditResult, base: str | None = None) -> list[dict[str, Any]]:
    base = base or os.getcwd()
    files = result.snapshot.mode in ("offline", "snapshot")  # findings point at files, not only at a cluster
    seen: Counter[str] = Counter()
    issues = []
    for problem in result.input_problems:  # sorted by file and line
        key = "\0".join([problem.cluster or "", problem.code.value, problem.file])
        issues.append(_problem_issue(problem, base, files, seen[key]))
        seen[key] += 1
    for finding in result.findings:  # sorted by the engine: occurrences count in a stable order
        identity = _identity(finding)
        issues.append(_issue(finding, base, files, seen[identity]))
        seen[identity] += 1
    return issues


# Lone surrogates (a JSON input can hold "\\ud800") cannot be written as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def render(result: AuditResult) -> str:
    return _SURROGATE.sub("\ufffd", dumps_indented(to_list(result))) + "\n"
