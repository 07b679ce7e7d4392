"""The verdict line of the text, Markdown and HTML reports: `AuditResult.verdict()`, worded by each
report's templates (the verdict itself is decided once, in the engine)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from auditor.engine import Verdict, VerdictKind
from auditor.model import Severity

# One template per verdict, `str.format` fields: {reason} (why incomplete, or what falls short of a
# complete pass), {failing} ("3 findings", "1 new finding"), {fail_on} (the --fail-on severity).
Templates = Mapping[VerdictKind, str]


def verdict_line(verdict: Verdict, fail_on: Severity, templates: Templates, plural: Callable[[int, str], str],
                 escape: Callable[[str], str] = str) -> str:
    """`verdict` (`AuditResult.verdict()`) in a report's words; `plural` and `escape` are the report's own."""
    failing = plural(verdict.failing, ("new " if verdict.new else "") + "finding")
    return templates[verdict.kind].format(reason=escape(verdict.reason), failing=failing, fail_on=escape(fail_on.value))
