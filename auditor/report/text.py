"""Text report for people at a terminal: a table per rule with findings, then a summary.

Colour is applied only when the caller asks for it (the CLI does on a TTY,
never with NO_COLOR); the words carry the meaning, colour only helps.
"""

from __future__ import annotations

import re

from tabulate import tabulate

from auditor.baseline import UNCHANGED, Baseline
from auditor.engine import AuditResult, RuleResult
from auditor.exceptions_list import EntryStatus
from auditor.model import FindingStatus, RuleStatus

_COLOURS = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2"}
MESSAGE_WIDTH = 72


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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _rule_table(result: RuleResult, style: _Style, baseline: Baseline | None = None) -> list[str]:
    rows = []
    for finding in result.findings:
        if finding.status is FindingStatus.EXCEPTED and finding.exception is not None:
            status = style("excepted", "yellow")
            message = f"{finding.message} [excepted by {finding.exception.name}: {finding.exception.reason}]"
        elif baseline is not None and baseline.state(finding) == UNCHANGED:
            status = style("failed (baseline)", "yellow")
            message = finding.message
        elif baseline is not None:
            status = style("failed (new)", "red")
            message = finding.message
        else:
            status = style("failed", "red")
            message = finding.message
        where = str(finding.source) if finding.source else ""
        target = finding.object.display if not finding.cluster else f"{finding.cluster}: {finding.object.display}"
        rows.append([status, finding.severity.value if finding.severity else "", target, message, where])
    table = tabulate(
        rows,
        headers=["STATUS", "SEVERITY", "OBJECT", "MESSAGE", "WHERE"],
        tablefmt="simple",
        maxcolwidths=[None, None, 48, MESSAGE_WIDTH, None],
        disable_numparse=True,
    )
    return ["  " + line for line in table.splitlines()]


def _baseline_lines(baseline: Baseline, style: _Style) -> list[str]:
    counts = baseline.counts()
    when = f" of {baseline.as_of}" if baseline.as_of else ""
    lines = [
        "",
        style(f"Baseline {baseline.path}{when}: {counts.new} new, {counts.unchanged} unchanged, "
              f"{counts.fixed} fixed" + (f", {counts.unverified} not rechecked" if counts.unverified else ""), "bold"),
    ]
    for entry in baseline.comparison.fixed:
        lines.append(f"  {style('fixed', 'green')} {entry['rule']} {_entry_target(entry)}")
    for entry in baseline.comparison.unverified:
        lines.append(f"  {style('not rechecked', 'yellow')} {entry['rule']} {_entry_target(entry)} (the rule reached no verdict this time)")
    return lines


def _entry_target(entry: dict) -> str:
    obj = entry["object"]
    display = f"{obj['kind']}/{obj['namespace']}/{obj['name']}" if obj.get("namespace") else f"{obj['kind']}/{obj['name']}"
    return f"{entry['cluster']}: {display}" if entry.get("cluster") else display


def render(result: AuditResult, color: bool = False) -> str:
    style = _Style(color)
    baseline = result.baseline
    lines: list[str] = []
    snapshot = result.snapshot
    target = ", ".join(snapshot.inputs) or "(no input)"
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
    ignored = f", {_plural(len(snapshot.ignored), 'document')} ignored" if snapshot.ignored else ""
    lines.append(style(f"Audit of {target}: {_plural(len(snapshot), 'object')}{ignored}", "bold"))
    for note in result.notes:
        lines.append(style(f"note: {note}", "yellow"))
    lines.append("")

    for rule_result in result.rules:
        if not rule_result.findings:
            continue
        label = style("FAILED", "red") if rule_result.status is RuleStatus.FAILED else style("EXCEPTED", "yellow")
        lines.append(f"{label} {style(rule_result.id, 'bold')} ({rule_result.severity.value}): {rule_result.title}")
        lines.extend(_rule_table(rule_result, style, baseline))
        if rule_result.status is RuleStatus.FAILED and rule_result.rule is not None:
            lines.append(f"  fix: {rule_result.rule.remediation}")
        lines.append("")

    for rule_result in result.rules:
        if rule_result.status is RuleStatus.NOT_RUN:
            lines.append(f"{style('NOT RUN', 'yellow')} {rule_result.id}: {rule_result.reason}")
        elif rule_result.status is RuleStatus.ERROR:
            lines.append(f"{style('ERROR', 'red')} {rule_result.id}: {rule_result.reason}")
    passed = [r.id for r in result.rules if r.status is RuleStatus.PASSED]
    if passed:
        lines.append(f"{style('PASSED', 'green')} {', '.join(passed)}")

    remarks = []
    for usage in result.exceptions:
        if usage.status is EntryStatus.EXPIRED:
            covered = f"; it would cover {_plural(usage.matched, 'finding')}" if usage.matched else ""
            remarks.append(f"exception {usage.entry.name} expired on {usage.entry.expires} and no longer applies{covered}")
        elif usage.status is EntryStatus.UNUSED:
            remarks.append(f"exception {usage.entry.name} matched nothing (stale? remove it)")
    if remarks:
        lines.append("")
        lines.extend(style(f"note: {remark}", "yellow") for remark in remarks)
    if baseline is not None:
        lines.extend(_baseline_lines(baseline, style))

    summary = result.summary()
    parts = [
        _plural(summary.failed, "finding") + " failed",
        f"{summary.excepted} excepted",
        _plural(summary.rules_passed, "rule") + " passed",
        _plural(summary.rules_not_run, "rule") + " not run",
    ]
    if summary.rules_error:
        parts.append(_plural(summary.rules_error, "rule") + " in error")
    lines.append("")
    lines.append(style(", ".join(parts), "bold"))
    lines.append(_verdict(result, style))
    return neutralize("\n".join(lines), color) + "\n"


def _verdict(result: AuditResult, style: _Style) -> str:
    if result.incomplete_gate:
        return style("Verdict: INCOMPLETE (some rules could not reach a verdict; exit 3)", "red")
    new = "new " if result.baseline is not None else ""
    if result.failing:
        return style(
            f"Verdict: FAIL ({_plural(len(result.failing), new + 'finding')} at or above {result.fail_on.value}; exit 1)", "red"
        )
    if not result.complete:
        return style("Verdict: PASS on what could be checked (some rules did not run; --require-complete makes that fail)", "yellow")
    return style("Verdict: PASS", "green")
