"""Text report for people at a terminal: a table per rule with findings, then a summary.

Colour is applied only when the caller asks for it (the CLI does on a TTY,
never with NO_COLOR); the words carry the meaning, colour only helps.

Every string that comes from the input (object names, messages, file names,
reasons, cluster names) is capped before it is laid out: the table layout
wraps cells at a fixed width, and wrapping one unbroken multi-megabyte name
costs time quadratic in its length (a 1.6 MB name took 67 s). Capped, the
report costs time linear in the number of findings, whatever their size.
"""

from __future__ import annotations

import re
from typing import Any

from tabulate import tabulate

from auditor.baseline import UNCHANGED, Baseline
from auditor.duplicates import DuplicateObject
from auditor.engine import AuditResult, RuleResult
from auditor.exceptions_list import EntryStatus
from auditor.model import Finding, FindingStatus, RuleStatus

_COLOURS = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2"}
MESSAGE_WIDTH = 72
OBJECT_WIDTH = 48

# How much of one input-derived string the report shows (longer ones keep their
# head and tail around a count of what was left out). Far above anything a
# real cluster holds (a name has at most 253 characters, a kind 63), so only
# hostile or broken input is ever elided.
OBJECT_LIMIT = 600
MESSAGE_LIMIT = 4_000
REASON_LIMIT = 2_000
WHERE_LIMIT = 1_000
LINE_LIMIT = 4_000
SOURCES_SHOWN = 10  # definitions listed per duplicated object


class _Style:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, colour: str) -> str:
        if not self.enabled:
            return text
        return f"\033[{_COLOURS[colour]}m{text}\033[0m"


# Object names, messages and file names come from the input: a control
# character in them (an escape sequence that moves the cursor, rewrites the
# title, clears the screen) must reach the terminal as text, not as a command.
# With colour on, only plain SGR colour sequences (what `_Style` writes) pass.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_BUT_COLOUR = re.compile(r"\x1b(?!\[\d{1,2}m)|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]")


def neutralize(text: str, colour: bool) -> str:
    pattern = _CONTROL_BUT_COLOUR if colour else _CONTROL
    return pattern.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def elide(text: str, limit: int) -> str:
    """`text`, or its head and tail around the count of characters left out when longer than `limit`.

    Costs O(limit) whatever the length of `text`.
    """
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 2)
    head, tail = keep - keep // 4, keep // 4
    return f"{text[:head]} [... {len(text) - head - tail:,} characters elided ...] {text[len(text) - tail:]}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# --- findings ------------------------------------------------------------------------


def _finding_row(finding: Finding, style: _Style, baseline: Baseline | None) -> list[str]:
    message = elide(finding.message, MESSAGE_LIMIT)
    if finding.status is FindingStatus.EXCEPTED and finding.exception is not None:
        status = style("excepted", "yellow")
        exception = finding.exception
        name, reason = elide(exception.name, LINE_LIMIT), elide(exception.reason, REASON_LIMIT)
        message = f"{message} [excepted by {name}: {reason}]"
    elif baseline is not None and baseline.state(finding) == UNCHANGED:
        status = style("failed (baseline)", "yellow")
    elif baseline is not None:
        status = style("failed (new)", "red")
    else:
        status = style("failed", "red")
    where = elide(str(finding.source), WHERE_LIMIT) if finding.source else ""
    target = finding.object.display if not finding.cluster else f"{finding.cluster}: {finding.object.display}"
    severity = finding.severity.value if finding.severity else ""
    return [status, severity, elide(target, OBJECT_LIMIT), message, where]


def _rule_table(result: RuleResult, style: _Style, baseline: Baseline | None = None) -> list[str]:
    table = tabulate(
        [_finding_row(finding, style, baseline) for finding in result.findings],
        headers=["STATUS", "SEVERITY", "OBJECT", "MESSAGE", "WHERE"],
        tablefmt="simple",
        maxcolwidths=[None, None, OBJECT_WIDTH, MESSAGE_WIDTH, None],
        disable_numparse=True,
    )
    return ["  " + line for line in table.splitlines()]


def _rule_sections(result: AuditResult, style: _Style, baseline: Baseline | None) -> list[str]:
    """One headed table per rule with findings, and the fix when some failed."""
    lines: list[str] = []
    for rule_result in result.rules:
        if not rule_result.findings:
            continue
        # Headed by its findings, not its status: in a fleet, a rule whose findings
        # failed on one cluster and that errored on another has status `error`.
        failed = rule_result.failed_count > 0
        label = style("FAILED", "red") if failed else style("EXCEPTED", "yellow")
        lines.append(f"{label} {style(rule_result.id, 'bold')} ({rule_result.severity.value}): {rule_result.title}")
        lines.extend(_rule_table(rule_result, style, baseline))
        if failed and rule_result.rule is not None:
            lines.append(f"  fix: {rule_result.rule.remediation}")
        lines.append("")
    return lines


# --- the rest of the report ---------------------------------------------------------------


def _target(result: AuditResult) -> str:
    snapshot = result.snapshot
    target = ", ".join(elide(name, LINE_LIMIT) for name in snapshot.inputs) or "(no input)"
    if snapshot.cluster is not None and snapshot.mode == "live":
        cluster = snapshot.cluster
        target = (
            f"cluster {cluster.label or cluster.context or '?'} ({cluster.server}, Kubernetes {cluster.version}, "
            f"fingerprint {cluster.fingerprint})"
        )
    elif snapshot.mode == "fleet" and result.fleet:
        target = f"{_plural(len(result.fleet), 'cluster')}: " + "; ".join(
            f"{m.info.label or m.info.context} ({m.error})" if m.error else
            f"{m.info.label or m.info.context} ({m.info.server}, Kubernetes {m.info.version}, "
            f"fingerprint {m.info.fingerprint})"
            for m in result.fleet
        )
    return elide(target, LINE_LIMIT)


def _header(result: AuditResult, style: _Style) -> list[str]:
    snapshot = result.snapshot
    ignored = f", {_plural(len(snapshot.ignored), 'document')} ignored" if snapshot.ignored else ""
    lines = [style(f"Audit of {_target(result)}: {_plural(len(snapshot), 'object')}{ignored}", "bold")]
    lines.extend(style(f"note: {elide(note, LINE_LIMIT)}", "yellow") for note in result.notes)
    lines.append("")
    return lines


def _verdicts(result: AuditResult, style: _Style) -> list[str]:
    """The rules that reached no verdict, with why, then those that passed."""
    lines = []
    for rule_result in result.rules:
        if rule_result.status is RuleStatus.NOT_RUN:
            lines.append(f"{style('NOT RUN', 'yellow')} {rule_result.id}: {elide(rule_result.reason, LINE_LIMIT)}")
        elif rule_result.status is RuleStatus.ERROR:
            lines.append(f"{style('ERROR', 'red')} {rule_result.id}: {elide(rule_result.reason, LINE_LIMIT)}")
    passed = [r.id for r in result.rules if r.status is RuleStatus.PASSED]
    if passed:
        lines.append(f"{style('PASSED', 'green')} {', '.join(passed)}")
    return lines


def _duplicate_remark(duplicate: DuplicateObject) -> str:
    shown = [elide(str(source), WHERE_LIMIT) if source else "(unknown place)"
             for source in duplicate.sources[:SOURCES_SHOWN]]
    more = duplicate.count - len(shown)
    where = ", ".join(shown) + (f" and {more:,} more" if more else "")
    return (f"{elide(duplicate.display, OBJECT_LIMIT)} is defined {duplicate.count:,} times in the input ({where}): "
            "each definition is audited; a rule looking it up by name sees only the first")


def _remarks(result: AuditResult, style: _Style) -> list[str]:
    """Input problems (objects defined twice) and what became of the exception list."""
    warnings = [_duplicate_remark(duplicate) for duplicate in result.duplicates]
    remarks = []
    for usage in result.exceptions:
        name = elide(usage.entry.name, LINE_LIMIT)
        if usage.status is EntryStatus.EXPIRED:
            covered = f"; it would cover {_plural(usage.matched, 'finding')}" if usage.matched else ""
            remarks.append(f"exception {name} expired on {usage.entry.expires} and no longer applies{covered}")
        elif usage.status is EntryStatus.UNUSED:
            remarks.append(f"exception {name} matched nothing (stale? remove it)")
    if not warnings and not remarks:
        return []
    return [
        "",
        *(style(f"warning: {warning}", "yellow") for warning in warnings),
        *(style(f"note: {remark}", "yellow") for remark in remarks),
    ]


def _entry_target(entry: dict[str, Any]) -> str:
    obj = entry["object"]
    display = (f"{obj['kind']}/{obj['namespace']}/{obj['name']}" if obj.get("namespace")
               else f"{obj['kind']}/{obj['name']}")
    return elide(f"{entry['cluster']}: {display}" if entry.get("cluster") else display, OBJECT_LIMIT)


def _baseline_lines(baseline: Baseline, style: _Style) -> list[str]:
    counts = baseline.counts()
    when = f" of {elide(str(baseline.report['asOf']), LINE_LIMIT)}" if baseline.report.get("asOf") else ""
    lines = [
        "",
        style(f"Baseline {elide(baseline.path, LINE_LIMIT)}{when}: {counts.new} new, "
              f"{counts.unchanged} unchanged, {counts.fixed} fixed"
              + (f", {counts.unverified} not rechecked" if counts.unverified else ""), "bold"),
    ]
    for entry in baseline.comparison.fixed:
        lines.append(f"  {style('fixed', 'green')} {elide(entry['rule'], LINE_LIMIT)} {_entry_target(entry)}")
    for entry in baseline.comparison.unverified:
        lines.append(f"  {style('not rechecked', 'yellow')} {elide(entry['rule'], LINE_LIMIT)} {_entry_target(entry)}"
                     " (the rule reached no verdict this time)")
    return lines


def _summary(result: AuditResult, style: _Style) -> list[str]:
    summary = result.summary()
    parts = [
        _plural(summary.failed, "finding") + " failed",
        f"{summary.excepted} excepted",
        _plural(summary.rules_passed, "rule") + " passed",
        _plural(summary.rules_not_run, "rule") + " not run",
    ]
    if summary.rules_error:
        parts.append(_plural(summary.rules_error, "rule") + " in error")
    return ["", style(", ".join(parts), "bold"), _verdict(result, style)]


def _verdict(result: AuditResult, style: _Style) -> str:
    if result.incomplete_gate:
        return style("Verdict: INCOMPLETE (some rules could not reach a verdict; exit 3)", "red")
    new = "new " if result.baseline is not None else ""
    if result.failing:
        failing = _plural(len(result.failing), new + "finding")
        return style(f"Verdict: FAIL ({failing} at or above {result.fail_on.value}; exit 1)", "red")
    if not result.complete:
        return style("Verdict: PASS on what could be checked "
                     "(some rules did not run; --require-complete makes that fail)", "yellow")
    return style("Verdict: PASS", "green")


def render(result: AuditResult, color: bool = False) -> str:
    style = _Style(color)
    baseline = result.baseline
    lines = [
        *_header(result, style),
        *_rule_sections(result, style, baseline),
        *_verdicts(result, style),
        *_remarks(result, style),
        *(_baseline_lines(baseline, style) if baseline is not None else []),
        *_summary(result, style),
    ]
    return neutralize("\n".join(lines), color) + "\n"
