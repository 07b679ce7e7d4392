"""Text report for people at a terminal: findings by rule, what did not run, what passed, the verdict.

It fits the terminal it is printed on (docs/terminal.md): the caller gives
the width (the CLI takes it from `COLUMNS` or the terminal, 80 when unknown).
Findings are a table per rule when every table fits that width without
cutting an object name, a path or a word; otherwise (narrow terminals, long
names) each finding is a block: its object, where it was read, and the
message wrapped at word boundaries. Nothing is ever cut inside a word: a
word longer than a line stands alone on its line.

Verbosity: `QUIET` shows the findings that fail the gate, the rules in error
and the verdict (what a pre-commit hook needs); `NORMAL` adds excepted
findings, one line per rule that passed, the rules that did not run (their
ids), remarks on the exception list; `VERBOSE` adds why each rule did not
run, the notes, and the unused entries of the built-in exception list.

Colour is applied only when the caller asks for it (the CLI does on a TTY,
never with NO_COLOR); the words carry the meaning, colour only helps.

Every string that comes from the input (object names, messages, file names,
reasons, cluster names) is capped before it is laid out and its control
characters escaped, so a hostile name can neither drive the terminal nor
make the layout slow: wrapping costs time linear in the capped text (a 1.6 MB
name once took 67 s in a table layout that was quadratic in it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from auditor.duplicates import DuplicateObject
from auditor.engine import AuditResult, RuleResult, VerdictKind
from auditor.exceptions_list import EntryStatus, ExceptionUsage
from auditor.model import Finding, FindingStatus, RuleStatus
from auditor.report import DEFAULT_WIDTH, Verbosity
from auditor.report import repository as tree_words
from auditor.report.sources import ConfigSources
from auditor.report.verdict import Templates, verdict_line
from auditor.repository import RemarkKind

if TYPE_CHECKING:
    from auditor.baseline import Baseline

_COLOURS = {"red": "31", "yellow": "33", "green": "32", "cyan": "36", "bold": "1", "dim": "2"}
# The severity of a failed finding, coloured; an excepted one is dimmed, severity and all.
SEVERITY_COLOURS = {"error": "red", "warning": "yellow", "info": "cyan"}
MIN_WIDTH = 20  # below this, lines are laid out as if 20 wide (and overflow)
MIN_MESSAGE_WIDTH = 32  # a table whose message column would be narrower is laid out as blocks
COLUMN_GAP = "  "
TABLE_INDENT = "  "
HEADERS = ("STATUS", "SEVERITY", "OBJECT", "MESSAGE", "WHERE")

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
        if not self.enabled or not text:
            return text
        return f"\033[{_COLOURS[colour]}m{text}\033[0m"


# Object names, messages and file names come from the input: a control
# character in them (an escape sequence that moves the cursor, rewrites the
# title, clears the screen) must reach the terminal as text, not as a command.
# With colour on, only plain SGR colour sequences (what `_Style` writes) pass.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_BUT_COLOUR = re.compile(r"\x1b(?!\[\d{1,2}m)|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]")
# In one laid-out field, tabs and newlines would break the layout too; and the Unicode bidirectional
# embeddings, overrides and isolates would reorder what is shown (as auditor/sources/live/safe_text.py).
_CONTROL_IN_FIELD = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


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


def shown(text: str, limit: int) -> str:
    """An input-derived string as the report shows it: capped, then every control character escaped."""
    return _CONTROL_IN_FIELD.sub(_spelled, elide(text, limit))


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def wrap(text: str, width: int, indent: str = "", hang: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns, broken at spaces only.

    The first line starts with `indent`, the others with `hang` (default:
    `indent`). An `indent` that is more than spaces is a prefix (`FAILED id `):
    the first word goes after it when it fits, else on the next line. A word
    longer than a line is never cut: it stands alone on its line, which then
    overflows. Linear in the length of `text`; lines carry no trailing space.
    """
    hang = indent if hang is None else hang
    width = max(width, MIN_WIDTH)
    lines: list[str] = []
    line = indent
    bare = not indent.strip()  # only indentation so far: the next word goes here, whatever its length
    for word in text.split():
        separator = "" if bare or line.endswith(" ") else " "
        if not bare and len(line) + len(separator) + len(word) > width:
            lines.append(line.rstrip())
            line, separator = hang, ""
        line += separator + word
        bare = False
    lines.append(line.rstrip())
    return lines


def _restyle(lines: list[str], plain: str, styled: str) -> list[str]:
    """`lines` with the `plain` prefix of the first one replaced by its `styled` (coloured) form."""
    if lines and lines[0].startswith(plain):
        lines[0] = styled + lines[0][len(plain):]
    return lines


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# --- findings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    """One finding, as every layout shows it (input-derived fields already capped and escaped)."""

    status: str
    colour: str
    severity: str
    severity_colour: str
    target: str
    message: str
    where: str
    exception: str  # "excepted by NAME (file:line): reason", or ""
    namespace: str = ""  # "namespace media from apps/media/kustomization.yaml:3" (a GitOps build decided it)


@dataclass(frozen=True)
class _Context:
    """What every part of the text report is laid out with: width, style, verbosity, baseline, exception entries."""

    width: int
    style: _Style
    verbosity: Verbosity
    baseline: Baseline | None
    sources: ConfigSources
    entries: dict[str, ExceptionUsage]  # exception entry name -> what became of it
    failing: frozenset[int]  # id() of each finding that fails the gate
    grouped: bool = False  # findings under a heading per cluster (a GitOps tree): rows leave the cluster out


def _status(finding: Finding, baseline: Baseline | None) -> tuple[str, str]:
    if finding.status is FindingStatus.EXCEPTED:
        return "excepted", "dim"
    if baseline is not None:
        from auditor.baseline import UNCHANGED  # (a --baseline's module, imported only when one is given)

        return ("failed (baseline)", "yellow") if baseline.state(finding) == UNCHANGED else ("failed (new)", "red")
    return "failed", "red"


def _row(finding: Finding, ctx: _Context) -> _Row:
    status, colour = _status(finding, ctx.baseline)
    exception = ""
    if finding.status is FindingStatus.EXCEPTED and finding.exception is not None:
        applied = finding.exception
        usage = ctx.entries.get(applied.name)
        where = f" ({ctx.sources.entry_location(usage.entry)})" if usage is not None else ""
        exception = f"excepted by {shown(applied.name, LINE_LIMIT)}{where}: {shown(applied.reason, REASON_LIMIT)}"
    target = (finding.object.display if not finding.cluster or ctx.grouped
              else f"{finding.cluster}: {finding.object.display}")
    severity = finding.severity.value if finding.severity else ""
    origin = finding.namespace_from
    return _Row(
        status=status,
        colour=colour,
        severity=severity,
        severity_colour="dim" if finding.status is FindingStatus.EXCEPTED else SEVERITY_COLOURS.get(severity, "bold"),
        target=shown(target, OBJECT_LIMIT),
        message=shown(finding.message, MESSAGE_LIMIT),
        where=shown(str(finding.source), WHERE_LIMIT) if finding.source else "",
        exception=exception,
        namespace=shown(origin.text, WHERE_LIMIT) if origin is not None and not origin.from_manifest else "",
    )


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


@dataclass(frozen=True)
class _Columns:
    """Widths of a rule's table: STATUS, SEVERITY, OBJECT, MESSAGE, WHERE."""

    widths: tuple[int, int, int, int, int]

    @classmethod
    def fitting(cls, rows: list[_Row], width: int) -> _Columns | None:
        """The table's columns, or None when it cannot fit `width` without cutting a name or a word."""
        status = max(len(HEADERS[0]), *(len(row.status) for row in rows))
        severity = max(len(HEADERS[1]), *(len(row.severity) for row in rows))
        target = max(len(HEADERS[2]), *(len(row.target) for row in rows))
        where = max(len(HEADERS[4]), *(len(row.where) for row in rows))
        fixed = len(TABLE_INDENT) + status + severity + target + where + 4 * len(COLUMN_GAP)
        room = width - fixed
        texts = [_table_text(row) for row in rows]
        needed = max(len(HEADERS[3]), *(len(text) for text in texts))
        longest = max(_longest_word(text) for text in texts)
        if room < min(MIN_MESSAGE_WIDTH, needed) or room < longest:
            return None
        return cls((status, severity, target, min(room, needed), where))


def _table(rows: list[_Row], columns: _Columns, style: _Style) -> list[str]:
    status_w, severity_w, target_w, message_w, _ = columns.widths

    def line(cells: tuple[str, str, str, str, str], row: _Row | None = None) -> str:
        padded = [cell.ljust(width) for cell, width in zip(cells, columns.widths, strict=True)]
        if row is not None:  # colour the words, pad outside the colour codes
            padded[0] = style(cells[0], row.colour) + " " * (status_w - len(cells[0]))
            padded[1] = style(cells[1], row.severity_colour) + " " * (severity_w - len(cells[1]))
        return (TABLE_INDENT + COLUMN_GAP.join(padded)).rstrip()

    lines = [line(HEADERS), line(("-" * status_w, "-" * severity_w, "-" * target_w, "-" * message_w,
                                  "-" * columns.widths[4]))]
    for row in rows:
        message_lines = wrap(_table_text(row), message_w)
        lines.append(line((row.status, row.severity, row.target, message_lines[0], row.where), row))
        lines.extend(line(("", "", "", more, "")) for more in message_lines[1:])
    return lines


def _table_text(row: _Row) -> str:
    """The MESSAGE cell: the message, then the namespace's origin and the exception, when there are."""
    text = f"{row.message} ({row.namespace})" if row.namespace else row.message
    return f"{text} [{row.exception}]" if row.exception else text


def _block(row: _Row, ctx: _Context) -> list[str]:
    """One finding on its own lines: status, severity and object; where; the message; the exception."""
    lines = wrap(row.target, ctx.width, f"  {row.status}  {row.severity}  ", "      ")
    status, severity = ctx.style(row.status, row.colour), ctx.style(row.severity, row.severity_colour)
    _restyle(lines, f"  {row.status}  {row.severity}", f"  {status}  {severity}")
    if row.where:
        lines += wrap(f"at {row.where}", ctx.width, "    ", "       ")
    if row.namespace:
        lines += wrap(row.namespace, ctx.width, "    ", "      ")
    lines += wrap(row.message, ctx.width, "    ")
    if row.exception:
        lines += wrap(row.exception, ctx.width, "    ")
    return lines


def _shown_findings(rule_result: RuleResult, ctx: _Context) -> list[Finding]:
    if ctx.verbosity is Verbosity.QUIET:
        return [finding for finding in rule_result.findings if id(finding) in ctx.failing]
    return list(rule_result.findings)


def _tables_fit(result: AuditResult, ctx: _Context) -> bool:
    """Whether every rule's findings fit a table at this width (else every rule's are blocks)."""
    for rule_result in result.rules:
        findings = _shown_findings(rule_result, ctx)
        if findings and _Columns.fitting([_row(f, ctx) for f in findings], ctx.width) is None:
            return False
    return True


def _heading(label: str, colour: str, rule_result: RuleResult, ctx: _Context) -> list[str]:
    """`LABEL rule-id (severity): title`, the label and id always on the first line."""
    lines = wrap(f"({rule_result.severity.value}): {rule_result.title}", ctx.width, f"{label} {rule_result.id} ",
                 "  ")
    return _restyle(lines, f"{label} {rule_result.id}",
                    f"{ctx.style(label, colour)} {ctx.style(rule_result.id, 'bold')}")


def _cluster_sections(result: AuditResult, ctx: _Context) -> list[str]:
    """A GitOps tree's findings by cluster: a heading per audited scope, then its rules' sections."""
    tables = _tables_fit(result, ctx)
    lines: list[str] = []
    assert result.repository is not None  # only called for a tree (tree_words.grouped)
    for scope in result.repository.audited:
        rules = [replace(r, findings=[f for f in r.findings if f.cluster == scope.name]) for r in result.rules]
        findings = [f for r in rules for f in _shown_findings(r, ctx)]
        if not findings and ctx.verbosity is Verbosity.QUIET:
            continue  # quiet: only what fails the gate
        heading = tree_words.scope_heading(scope, findings)
        lines += [ctx.style(line, "bold") for line in wrap(shown(heading, LINE_LIMIT), ctx.width, "", "  ")]
        lines += _rule_sections(rules, ctx, tables) if findings else ["  (no findings)", ""]
    return lines


def _rule_sections(rules: list[RuleResult], ctx: _Context, tables: bool) -> list[str]:
    """One headed section per rule with findings to show, and the fix when some failed."""
    lines: list[str] = []
    for rule_result in rules:
        findings = _shown_findings(rule_result, ctx)
        if not findings:
            continue
        # Headed by its findings, not its status: in a fleet, a rule whose findings
        # failed on one cluster and that errored on another has status `error`.
        failed = rule_result.failed_count > 0
        lines += _heading("FAILED" if failed else "EXCEPTED", "red" if failed else "yellow", rule_result, ctx)
        if failed:
            lines += _unseen_lines(rule_result, ctx)
        rows = [_row(finding, ctx) for finding in findings]
        columns = _Columns.fitting(rows, ctx.width) if tables else None
        if columns is not None:
            lines += _table(rows, columns, ctx.style)
        else:
            for row in rows:
                lines += _block(row, ctx)
        if failed and rule_result.rule is not None:
            lines += wrap(f"fix: {rule_result.rule.remediation}", ctx.width, "  ", "       ")
        lines.append("")
    return lines


# --- the rest of the report ---------------------------------------------------------------


def target_line(result: AuditResult) -> str:
    """What was audited, for headings: the inputs, the cluster (server, version, fingerprint) or the fleet."""
    snapshot = result.snapshot
    target = ", ".join(shown(name, LINE_LIMIT) for name in snapshot.inputs) or "(no input)"
    if snapshot.cluster is not None and snapshot.mode == "live":
        cluster = snapshot.cluster
        target = (
            f"cluster {shown(cluster.label or cluster.context or '?', LINE_LIMIT)} ({cluster.server}, "
            f"Kubernetes {cluster.version}, fingerprint {cluster.fingerprint})"
        )
    elif snapshot.mode == "fleet" and result.fleet:
        target = f"{_plural(len(result.fleet), 'cluster')}: " + "; ".join(
            f"{m.info.label or m.info.context} ({m.error})" if m.error else
            f"{m.info.label or m.info.context} ({m.info.server}, Kubernetes {m.info.version}, "
            f"fingerprint {m.info.fingerprint})"
            for m in result.fleet
        )
    return shown(target, LINE_LIMIT)


def _header(result: AuditResult, ctx: _Context) -> list[str]:
    if ctx.verbosity is Verbosity.QUIET:
        return []
    snapshot = result.snapshot
    ignored = f", {_plural(len(snapshot.ignored), 'document')} ignored" if snapshot.ignored else ""
    lines = [ctx.style(line, "bold") for line in
             wrap(f"Audit of {target_line(result)}: {_plural(len(snapshot), 'object')}{ignored}", ctx.width, "", "  ")]
    lines += _tree_header(result, ctx)
    lines += wrap(ctx.sources.sentence(), ctx.width, "", "  ")
    if ctx.verbosity is Verbosity.VERBOSE:
        for note in result.notes:
            lines += [ctx.style(line, "yellow") for line in wrap(f"note: {shown(note, LINE_LIMIT)}", ctx.width,
                                                                 "", "  ")]
    elif result.notes:
        lines += wrap(f"{_plural(len(result.notes), 'note')} about the posture (-v shows them)", ctx.width, "", "  ")
    lines.append("")
    return lines


def _tree_header(result: AuditResult, ctx: _Context) -> list[str]:
    """A GitOps tree: its clusters, what no cluster deploys, the namespace coverage (docs/input.md)."""
    repository = result.repository
    if repository is None:
        return []
    lines = wrap(shown(tree_words.clusters_sentence(repository), LINE_LIMIT), ctx.width, "", "  ")
    unreached = tree_words.unreached_sentence(repository)
    for item in [*tree_words.cluster_lines(repository), *([unreached] if unreached else [])]:
        lines += wrap(shown(item, LINE_LIMIT), ctx.width, "  ", "      ")
    lines += wrap(shown(tree_words.namespaces_sentence(repository), LINE_LIMIT), ctx.width, "", "  ")
    notes = repository.remarks_of(RemarkKind.NOTE)
    if notes and ctx.verbosity is not Verbosity.VERBOSE:
        lines += wrap(f"{_plural(len(notes), 'note')} on how the tree was read (-v shows them)", ctx.width, "", "  ")
    return lines


def _tree_remarks(result: AuditResult, ctx: _Context) -> list[tuple[str, str]]:
    """(label, text) of what the layout says: problems and warnings always, notes with -v."""
    repository = result.repository
    if repository is None:
        return []
    shown_kinds = [RemarkKind.PROBLEM, RemarkKind.WARNING]
    if ctx.verbosity is Verbosity.VERBOSE:
        shown_kinds.append(RemarkKind.NOTE)
    return [(kind.value, shown(str(remark), LINE_LIMIT)) for kind in shown_kinds
            for remark in repository.remarks_of(kind)
            if not (repository.single_scope and kind is RemarkKind.WARNING and remark.source is None
                    and remark.message.startswith("no cluster entry point found"))]


def _labelled(label: str, colour: str, rest: str, ctx: _Context, indent: str = "", hang: str = "  ") -> list[str]:
    """`LABEL rest`, wrapped with a hanging indent, the label coloured (and always on the first line)."""
    lines = wrap(rest, ctx.width, f"{indent}{label} ", hang)
    return _restyle(lines, f"{indent}{label}", f"{indent}{ctx.style(label, colour)}")


def _verdicts(result: AuditResult, ctx: _Context) -> list[str]:
    """Rules in error, rules that did not run (with why when verbose or when it fails the run), rules passed."""
    lines: list[str] = []
    not_run = [r for r in result.rules if r.status is RuleStatus.NOT_RUN]
    for rule_result in result.rules:
        if rule_result.status is RuleStatus.ERROR:
            lines += _labelled("ERROR", "red", f"{rule_result.id}: {shown(rule_result.reason, LINE_LIMIT)}", ctx)
    if not_run and (ctx.verbosity is Verbosity.VERBOSE or result.require_complete):
        colour = "red" if result.require_complete else "yellow"
        for rule_result in not_run:
            lines += _labelled("NOT RUN", colour, f"{rule_result.id}: {shown(rule_result.reason, LINE_LIMIT)}", ctx)
    elif not_run and ctx.verbosity is Verbosity.NORMAL:
        ids = ", ".join(r.id for r in not_run)
        lines += _labelled("NOT RUN", "yellow", f"{ids} (the input does not show what they need; -v says why)", ctx)
    lines += _not_applicable_lines(result, ctx)
    if ctx.verbosity is Verbosity.QUIET:
        return lines
    for rule_result in result.rules:
        if rule_result.status is RuleStatus.PASSED:
            lines += _passed_lines(rule_result, ctx)
    return lines


def _not_applicable_lines(result: AuditResult, ctx: _Context) -> list[str]:
    """Rules declared not applicable to this input (docs/config.md): each with why when verbose, else one line."""
    declared = [r for r in result.rules if r.status is RuleStatus.NOT_APPLICABLE]
    if not declared or ctx.verbosity is Verbosity.QUIET:
        return []
    if ctx.verbosity is Verbosity.VERBOSE:
        return [line for r in declared
                for line in _labelled("NOT APPLICABLE", "cyan", f"{r.id}: {shown(r.reason, LINE_LIMIT)}", ctx)]
    ids = ", ".join(r.id for r in declared)
    return _labelled("NOT APPLICABLE", "cyan", f"{ids} (declared for this input; -v says why)", ctx)


def _passed_lines(rule_result: RuleResult, ctx: _Context) -> list[str]:
    """`PASSED id (N checked): title`, or `(nothing to check)`, `(partial, N checked)` and what it did not see."""
    detail = "nothing to check" if rule_result.nothing_checked else f"{len(rule_result.examined)} checked"
    if rule_result.partial:
        detail = f"partial, {detail}"
    prefix = f"{rule_result.id} ({detail}): "
    title = first_line(rule_result.title, ctx.width - len("PASSED ") - len(prefix))
    lines = [f"{ctx.style('PASSED', 'yellow' if rule_result.partial else 'green')} {prefix}{title}"]
    if rule_result.nothing_checked and ctx.verbosity is Verbosity.VERBOSE:
        lines += wrap(shown(rule_result.reason, LINE_LIMIT), ctx.width, "  ", "    ")
    return lines + _unseen_lines(rule_result, ctx)


def _unseen_lines(rule_result: RuleResult, ctx: _Context) -> list[str]:
    """`did not see: what (why)`, after the verdict line of a partial rule: its verdict is on the rest."""
    lines: list[str] = []
    for unseen in rule_result.unseen:
        declared = f"; {unseen.declared}" if unseen.declared else ""
        text = f"{shown(unseen.what, OBJECT_LIMIT)} ({shown(unseen.reason, REASON_LIMIT)}{declared})"
        lines += _labelled("did not see:", "yellow", text, ctx, "  ", "    ")
    return lines


def _input_problem_lines(result: AuditResult, ctx: _Context) -> list[str]:
    """Every file that could not be read, first: the verdicts below are on the rest of the input."""
    problems = result.input_problems
    if not problems:
        return []
    files = len({(problem.cluster, problem.file) for problem in problems})
    their = "its" if files == 1 else "their"
    heading = (f"INPUT PROBLEMS: {_plural(files, 'file')} could not be read; none of {their} objects is audited "
               "(the run is incomplete: exit 3)")
    lines = _restyle(wrap(heading, ctx.width, "", "  "), "INPUT PROBLEMS", ctx.style("INPUT PROBLEMS", "red"))
    for problem in problems:
        text = f"{shown(problem.where, WHERE_LIMIT)}: {shown(problem.message, MESSAGE_LIMIT)} [{problem.code}]"
        lines += wrap(text, ctx.width, "  ", "    ")
    return [*lines, ""]


def first_line(text: str, width: int) -> str:
    """`text` if it fits `width` columns, else as many of its words as fit, then `…` (one line, never mid-word)."""
    if len(text) <= width:
        return text
    kept: list[str] = []
    length = 0
    for word in text.split():
        if length + len(word) + 2 > width:  # room for the word, a space and the ellipsis
            break
        kept.append(word)
        length += len(word) + 1
    return " ".join([*kept, "…"])


def _duplicate_remark(duplicate: DuplicateObject) -> str:
    places = [shown(str(source), WHERE_LIMIT) if source else "(unknown place)"
              for source in duplicate.sources[:SOURCES_SHOWN]]
    more = duplicate.count - len(places)
    where = ", ".join(places) + (f" and {more:,} more" if more else "")
    return (f"{shown(duplicate.display, OBJECT_LIMIT)} is defined {duplicate.count:,} times in the input ({where}): "
            "each definition is audited; a rule looking it up by name sees only the first")


def _remarks(result: AuditResult, ctx: _Context) -> list[str]:
    """Input problems (objects defined twice) and what became of the exception list."""
    if ctx.verbosity is Verbosity.QUIET:
        return []
    warnings = [_duplicate_remark(duplicate) for duplicate in result.duplicates]
    tree_remarks = _tree_remarks(result, ctx)
    remarks = []
    for usage in result.exceptions:
        if not ctx.sources.reported(usage, ctx.verbosity is Verbosity.VERBOSE):
            continue
        remark = (ctx.sources.unused_remark(usage) if usage.status is EntryStatus.UNUSED
                  else ctx.sources.expired_remark(usage))
        remarks.append(shown(remark, LINE_LIMIT))
    if not warnings and not remarks and not tree_remarks:
        return []
    lines = [""]
    for text, label in [*((t, k) for k, t in tree_remarks), *((w, "warning") for w in warnings),
                        *((r, "note") for r in remarks)]:
        lines += [ctx.style(line, "yellow") for line in wrap(f"{label}: {text}", ctx.width, "", "  ")]
    return lines


def _entry_target(entry: dict[str, Any]) -> str:
    obj = entry["object"]
    display = (f"{obj['kind']}/{obj['namespace']}/{obj['name']}" if obj.get("namespace")
               else f"{obj['kind']}/{obj['name']}")
    return shown(f"{entry['cluster']}: {display}" if entry.get("cluster") else display, OBJECT_LIMIT)


def _baseline_lines(baseline: Baseline, ctx: _Context) -> list[str]:
    if ctx.verbosity is Verbosity.QUIET:
        return []
    counts = baseline.counts()
    when = f" of {shown(str(baseline.report['asOf']), LINE_LIMIT)}" if baseline.report.get("asOf") else ""
    heading = (f"Baseline {shown(baseline.path, LINE_LIMIT)}{when}: {counts.new} new, {counts.unchanged} unchanged, "
               f"{counts.fixed} fixed" + (f", {counts.unverified} not rechecked" if counts.unverified else ""))
    lines = ["", *(ctx.style(line, "bold") for line in wrap(heading, ctx.width, "", "  "))]
    for entry in baseline.comparison.fixed:
        text = f"{shown(entry['rule'], LINE_LIMIT)} {_entry_target(entry)}"
        lines += _labelled("fixed", "green", text, ctx, "  ", "    ")
    for entry in baseline.comparison.unverified:
        text = f"{shown(entry['rule'], LINE_LIMIT)} {_entry_target(entry)} (the rule reached no verdict this time)"
        lines += _labelled("not rechecked", "yellow", text, ctx, "  ", "    ")
    return lines


def _summary(result: AuditResult, ctx: _Context) -> list[str]:
    summary = result.summary()
    parts = [
        _plural(summary.failed, "finding") + " failed",
        f"{summary.excepted} excepted",
        _plural(summary.rules_passed, "rule") + " passed",
        _plural(summary.rules_not_run, "rule") + " not run",
    ]
    if summary.rules_partial:
        parts.insert(3, f"{summary.rules_partial} partial")
    if summary.rules_not_applicable:
        parts.append(f"{summary.rules_not_applicable} not applicable")
    if summary.rules_error:
        parts.append(_plural(summary.rules_error, "rule") + " in error")
    if summary.input_problems:
        parts.append(_plural(summary.input_problems, "input problem"))
    lines = [""]
    if ctx.verbosity is Verbosity.QUIET:
        lines += wrap(ctx.sources.sentence(), ctx.width, "", "  ")
    lines += [ctx.style(line, "bold") for line in wrap(", ".join(parts), ctx.width, "", "  ")]
    text, colour = _verdict(result)
    return [*lines, *(ctx.style(line, colour) for line in wrap(text, ctx.width, "", "  "))]


_VERDICTS: Templates = {
    VerdictKind.INCOMPLETE: "Verdict: INCOMPLETE ({reason}; exit 3)",
    VerdictKind.FAIL: "Verdict: FAIL ({failing} at or above {fail_on}; exit 1)",
    VerdictKind.PASS_ON_WHAT_WAS_CHECKED: ("Verdict: PASS on what could be checked ({reason}; "
                                           "--require-complete makes that fail)"),
    VerdictKind.PASS: "Verdict: PASS",
}
_VERDICT_COLOURS = {VerdictKind.INCOMPLETE: "red", VerdictKind.FAIL: "red",
                    VerdictKind.PASS_ON_WHAT_WAS_CHECKED: "yellow", VerdictKind.PASS: "green"}


def _verdict(result: AuditResult) -> tuple[str, str]:
    verdict = result.verdict()
    return verdict_line(verdict, result.fail_on, _VERDICTS, _plural), _VERDICT_COLOURS[verdict.kind]


def render(result: AuditResult, color: bool = False, width: int = DEFAULT_WIDTH,
           verbosity: Verbosity = Verbosity.NORMAL) -> str:
    ctx = _Context(
        width=max(width, MIN_WIDTH),
        style=_Style(color),
        verbosity=verbosity,
        baseline=result.baseline,
        sources=ConfigSources.of(result),
        entries={usage.entry.name: usage for usage in result.exceptions},
        failing=frozenset(id(finding) for finding in result.failing),
        grouped=tree_words.grouped(result),
    )
    sections = (_cluster_sections(result, ctx) if ctx.grouped
                else _rule_sections(result.rules, ctx, _tables_fit(result, ctx)))
    lines = [
        *_header(result, ctx),
        *_input_problem_lines(result, ctx),
        *sections,
        *_verdicts(result, ctx),
        *_remarks(result, ctx),
        *(_baseline_lines(result.baseline, ctx) if result.baseline is not None else []),
        *_summary(result, ctx),
    ]
    # Sections end or start with a blank line; one separates them, none opens the report.
    tidy = [line for index, line in enumerate(lines) if line or (index and lines[index - 1])]
    return neutralize("\n".join(tidy[1:] if tidy and not tidy[0] else tidy), color) + "\n"
