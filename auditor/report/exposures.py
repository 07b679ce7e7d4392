"""`audit exposure`: every way in, one line each, with its verdict (text and JSON).

Reads the judged ways in of an `AuditResult` (`result.exposures`, sorted by
address then port): the address and port, how the address is announced, what
forwards it (a Gateway listener and route, or the Service, hostPort or
hostNetwork pod itself), the backend Services and workloads, and the verdict
(sanctioned by which part of the posture, excepted by which entry and why,
drift with the rule id, or unjudged and why).

The text fits the terminal as the text report does (its width, wrapping and
escaping helpers, auditor/report/text.py): a table, one row per way in, when
every column fits the width without cutting a word; otherwise one block per
way in. The JSON is the report's `exposures` section (the same objects,
`report.schema.json#/$defs/exposure`) with the target, the sources, the
judging rules and a summary (schema: auditor/data/exposures.schema.json).

Exit codes, as for audits: 3 when a way in could not be judged (its rule was
not selected, did not run, or is in error), when a rule judging ways in is in
error, or with --require-complete (always live) when one did not run; else 1
when a way in is drift with a finding at or above `--fail-on`, else 0.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from auditor import TOOL_NAME, __version__
from auditor.engine import AuditResult
from auditor.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK
from auditor.exposure import EXPOSURE_RULES, JudgedEntrance, VerdictKind, describe_announcing
from auditor.model import ObjectRef, RuleStatus
from auditor.report import DEFAULT_WIDTH, Presentation, Verbosity
from auditor.report.json_report import exposure_dict, rule_dict, sources_dict, target_dict
from auditor.report.sources import ConfigSources
from auditor.report.text import (
    LINE_LIMIT,
    MESSAGE_LIMIT,
    MIN_WIDTH,
    OBJECT_LIMIT,
    _plural,
    _Style,
    neutralize,
    shown,
    target_line,
    wrap,
)

EXPOSURES_VERSION = "1"
# The formats `audit exposure` writes: its own text and JSON, and the reports (with the map) by name.
FORMATS = ("text", "json", "markdown", "html")
HEADERS = ("ADDRESS", "PORT", "ANNOUNCED", "FORWARDED BY", "BACKEND", "VERDICT")
GAP = "  "
INDENT = "  "
MIN_CELL = 12  # a wrapped column narrower than this is unreadable: blocks instead
_PLAIN = Presentation()
VERDICT_COLOURS = {VerdictKind.SANCTIONED: "green", VerdictKind.EXCEPTED: "yellow", VerdictKind.DRIFT: "red",
                   VerdictKind.UNJUDGED: "yellow"}


def _name(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


# --- what each column says -------------------------------------------------------------


# How each kind of door is opened, for a way in that no Gateway listener forwards.
_OPENED_BY = {"load-balancer": "LoadBalancer", "node-port": "node port of", "external-ip": "externalIPs of",
              "host-port": "hostPort of", "host-network": "hostNetwork"}
_DECLARED = {"helm-values": " (declared in its Helm values)", "controller": " (made by its Gateway controller)"}


def forwarded_by(judged: JudgedEntrance) -> str:
    """The Gateway listener and route, or what opens the door itself."""
    entrance = judged.entrance
    listener, route = entrance.listener, entrance.route
    if listener is None:
        subject = entrance.subject
        detail = next((f" ({note})" for note in entrance.notes if note.startswith("container ")), "")
        return (f"{_OPENED_BY[entrance.channel.value]} {subject.ref.kind} {_name(subject.ref)}"
                f"{_DECLARED.get(subject.declared.value, '')}{detail}")
    where = f"{listener.protocol}:{listener.port}" + (f" {listener.hostname}" if listener.hostname else "")
    text = f"Gateway {_name(listener.gateway)} listener {listener.name} ({where})"
    if route is None:
        return f"{text} → no route attaches"
    hostnames = f" ({', '.join(route.hostnames)})" if route.hostnames else ""
    forwards = "" if route.forwards else f" [forwards nothing: {route.why}]"
    return f"{text} → {route.kind} {_name(route.ref)}{hostnames}{forwards}"


def backend_of(judged: JudgedEntrance) -> str:
    entrance = judged.entrance
    services = []
    for backend in entrance.backends:
        port = f" port {backend.port}" if backend.port is not None else ""
        problem = f" ({backend.problem.value})" if backend.problem is not None else ""
        services.append(f"Service {_name(backend.service)}{port}{problem}")
    workloads = [f"{w.ref.kind} {_name(w.ref)}" for w in entrance.workloads]
    if services and workloads:
        return f"{', '.join(services)} → {', '.join(workloads)}"
    return ", ".join(services or workloads) or "-"


def entry_locations(result: AuditResult) -> dict[str, str]:
    """Where each exception entry of the run was written (`FILE:LINE`, each entry of a merged list its own
    file; `built-in`), by name: names are unique across the merged files."""
    sources = ConfigSources.of(result)
    return {usage.entry.name: sources.entry_location(usage.entry) for usage in result.exceptions}


def verdict_of(judged: JudgedEntrance, locations: Mapping[str, str] | None = None) -> str:
    verdict = judged.verdict
    if verdict.kind is VerdictKind.SANCTIONED:
        return f"sanctioned by {verdict.by}"
    if verdict.kind is VerdictKind.EXCEPTED:
        at = (locations or {}).get(verdict.by)
        return f"excepted by {verdict.by}{f' ({at})' if at else ''}: {verdict.reason}"
    if verdict.kind is VerdictKind.DRIFT:
        return f"drift ({verdict.rule})"
    return f"unjudged: {verdict.reason}"


@dataclass(frozen=True)
class _Row:
    """A row of the ways-in table: its verdict, cells, notes and evidence."""

    kind: VerdictKind
    cells: tuple[str, str, str, str, str, str]  # capped and escaped
    notes: tuple[str, ...]
    evidence: str


def _row(judged: JudgedEntrance, locations: Mapping[str, str]) -> _Row:
    entrance = judged.entrance
    address = entrance.address.display
    if judged.cluster:
        address = f"{judged.cluster}: {address}"
    cells = (shown(address, OBJECT_LIMIT), entrance.port_display, shown(describe_announcing(entrance.announcing),
             MESSAGE_LIMIT), shown(forwarded_by(judged), MESSAGE_LIMIT), shown(backend_of(judged), MESSAGE_LIMIT),
             shown(verdict_of(judged, locations), MESSAGE_LIMIT))
    return _Row(judged.verdict.kind, cells, tuple(shown(n, LINE_LIMIT) for n in entrance.notes),
                shown(entrance.evidence.describe(), LINE_LIMIT))


# --- layout ----------------------------------------------------------------------------


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


def _column_widths(rows: Sequence[_Row], width: int) -> tuple[int, ...] | None:
    """The table's column widths, or None when it cannot fit `width` without cutting a word.

    ADDRESS and PORT never wrap; the other columns share the rest, each at least its longest word,
    the room left going to the columns that need it, in proportion to what they lack."""
    fixed = [max(len(HEADERS[i]), *(len(r.cells[i]) for r in rows)) for i in (0, 1)]
    needed = [max(len(HEADERS[i]), *(len(r.cells[i]) for r in rows)) for i in range(2, 6)]
    least = [min(n, max(MIN_CELL, len(HEADERS[i + 2]), *(_longest_word(r.cells[i + 2]) for r in rows)))
             for i, n in enumerate(needed)]
    room = width - len(INDENT) - sum(fixed) - len(GAP) * (len(HEADERS) - 1)
    if room < sum(least):
        return None
    widths = list(least)
    spare, lacking = room - sum(least), [n - w for n, w in zip(needed, widths, strict=True)]
    total = sum(lacking)
    if total:
        for i, lack in enumerate(lacking):
            widths[i] += min(lack, spare * lack // total)
    return (*fixed, *widths)


def _table(rows: Sequence[_Row], widths: tuple[int, ...], style: _Style) -> list[str]:
    def line(cells: Sequence[str], kind: VerdictKind | None = None) -> str:
        padded = [cell.ljust(w) for cell, w in zip(cells, widths, strict=True)]
        if kind is not None and cells[5]:
            padded[5] = style(cells[5], VERDICT_COLOURS[kind]) + " " * (widths[5] - len(cells[5]))
        return (INDENT + GAP.join(padded)).rstrip()

    lines = [line(HEADERS), line(["-" * w for w in widths])]
    for row in rows:
        wrapped = [[row.cells[0]], [row.cells[1]], *(wrap(row.cells[i], widths[i]) for i in range(2, 6))]
        for number in range(max(len(cell) for cell in wrapped)):
            cells = [cell[number] if number < len(cell) else "" for cell in wrapped]
            lines.append(line(cells, row.kind))
    return lines


def _block(row: _Row, width: int, style: _Style, verbose: bool) -> list[str]:
    address, port, announced, forwarded, backend, verdict = row.cells
    lines = wrap(f"{port} {row.kind.value}", width, f"{address} ", "  ")
    if lines[0].endswith(row.kind.value):
        lines[0] = lines[0][: -len(row.kind.value)] + style(row.kind.value, VERDICT_COLOURS[row.kind])
    labelled = [("announced", announced), ("forwarded", forwarded), ("backend", backend), ("verdict", verdict)]
    if verbose:
        labelled += [("evidence", row.evidence), *(("note", note) for note in row.notes)]
    for label, text in labelled:
        lines += wrap(text, width, f"{INDENT}{label:<10} ", " " * (len(INDENT) + 11))
    return lines


# --- the report ------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What the ways in of an audit come to: counts, what could not be judged, what fails."""

    counts: Counter[VerdictKind]
    unjudged: tuple[str, ...]  # why ways in were not judged, or a rule judging them could not read: exit 3
    unchecked: tuple[str, ...]  # rules judging ways in that did not run on offline input (not failing)
    failing: int  # drift ways in whose finding fails the gate

    @property
    def exit_code(self) -> int:
        if self.unjudged:
            return EXIT_INCOMPLETE
        return EXIT_FINDINGS if self.failing else EXIT_OK


def outcome(result: AuditResult) -> Outcome:
    """As for audits: a way in whose verdict is unknown, or a rule judging ways in in error, is incomplete
    (exit 3); a rule that did not run on offline input (no workload in a GitOps repository: no hostPort to
    see) only with --require-complete (always live), unless the configuration declares it not applicable
    here; a partial verdict with an undeclared gap too, with --require-complete; an input problem (a file
    not read) always, as in audits."""
    counts: Counter[VerdictKind] = Counter(j.verdict.kind for j in result.exposures)
    statuses = {r.id: r for r in result.rules}
    unjudged: list[str] = []
    unchecked: list[str] = []
    for rule_id in EXPOSURE_RULES:
        rule = statuses.get(rule_id)
        if rule is not None and rule.status in (RuleStatus.PASSED, RuleStatus.FAILED):
            if rule.open_gap and result.require_complete:  # a partial verdict, as audits count it
                unjudged.append(f"rule {rule_id} did not see: {'; '.join(map(str, rule.unseen))}")
            continue
        why = f"rule {rule_id} was not selected" if rule is None else f"rule {rule_id} is {rule.status.value}: " \
            f"{rule.reason}"
        error = rule is not None and rule.status is RuleStatus.ERROR
        # Declared not applicable here (.cilium-audit.yaml, docs/config.md): no gap, even with requireComplete.
        declared = rule is not None and rule.status is RuleStatus.NOT_APPLICABLE
        (unjudged if error or (result.require_complete and not declared) else unchecked).append(why)
    # A file that could not be read may hold a way in: as in audits, the run is incomplete (fail closed).
    unjudged += [f"{problem.where}: not read ({problem.message}): it may hold a way in"
                 for problem in result.input_problems]
    ways = sorted({j.verdict.reason for j in result.exposures if j.verdict.kind is VerdictKind.UNJUDGED})
    unjudged += [why for why in ways if why not in unjudged]
    failing = {(f.cluster, f.rule, f.object) for f in result.failing}
    drift = sum(1 for j in result.exposures if j.verdict.kind is VerdictKind.DRIFT
                and (j.cluster, j.entrance.rule, j.entrance.subject.ref) in failing)
    return Outcome(counts, tuple(unjudged), tuple(w for w in unchecked if w not in unjudged), drift)


def _summary(result: AuditResult, found: Outcome, width: int, style: _Style) -> list[str]:
    counts = ", ".join(f"{found.counts[kind]} {kind.value}" for kind in VerdictKind)
    lines = ["", *(style(line, "bold") for line in wrap(
        f"{_plural(len(result.exposures), 'way')} in: {counts}", width, "", "  "))]
    if found.unjudged:
        lines += wrap(f"not judged: {'; '.join(shown(u, LINE_LIMIT) for u in found.unjudged)}", width, "", "  ")
    if found.unchecked:
        lines += wrap(f"not checked: {'; '.join(shown(u, LINE_LIMIT) for u in found.unchecked)}", width, "", "  ")
    if found.unjudged:
        verdict, colour = "Verdict: INCOMPLETE (some ways in could not be judged; exit 3)", "red"
    elif found.failing:
        verdict = (f"Verdict: FAIL ({_plural(found.failing, 'way')} in drift at or above {result.fail_on.value}; "
                   "exit 1)")
        colour = "red"
    elif found.unchecked and result.require_complete:  # only rules declared not applicable here did not run
        verdict = ("Verdict: PASS (every way in is sanctioned, excepted or below --fail-on; the rules declared "
                   "not applicable here did not run)")
        colour = "green"
    elif found.unchecked:
        verdict = ("Verdict: PASS on what could be checked (some rules judging ways in did not run; "
                   "--require-complete makes that fail)")
        colour = "yellow"
    else:
        verdict, colour = "Verdict: PASS (every way in is sanctioned, excepted or below --fail-on)", "green"
    return [*lines, *(style(line, colour) for line in wrap(verdict, width, "", "  "))]


def render_text(result: AuditResult, color: bool = False, width: int = DEFAULT_WIDTH,
                verbosity: Verbosity = Verbosity.NORMAL) -> str:
    width, style = max(width, MIN_WIDTH), _Style(color)
    shown_ways = [j for j in result.exposures
                  if verbosity is not Verbosity.QUIET or j.verdict.kind in (VerdictKind.DRIFT, VerdictKind.UNJUDGED)]
    locations = entry_locations(result)
    rows = [_row(j, locations) for j in shown_ways]
    lines: list[str] = []
    if verbosity is not Verbosity.QUIET:
        lines += [style(line, "bold") for line in wrap(f"Ways in of {target_line(result)}", width, "", "  ")]
        lines += wrap(ConfigSources.of(result).sentence(), width, "", "  ")
        lines.append("")
    widths = _column_widths(rows, width) if rows and verbosity is not Verbosity.VERBOSE else None
    if widths is not None:
        lines += _table(rows, widths, style)
    else:
        for row in rows:
            lines += [*_block(row, width, style, verbosity is Verbosity.VERBOSE), ""]
    if not result.exposures:
        lines.append("No way in from outside the cluster.")
    lines += _summary(result, outcome(result), width, style)
    tidy = [line for index, line in enumerate(lines) if line or (index and lines[index - 1])]
    return neutralize("\n".join(tidy).strip("\n"), color) + "\n"


def to_dict(result: AuditResult) -> dict[str, Any]:
    """The JSON of `audit exposure` (auditor/data/exposures.schema.json)."""
    found = outcome(result)
    return {
        "exposuresVersion": EXPOSURES_VERSION,
        "tool": {"name": TOOL_NAME, "version": __version__},
        "asOf": result.as_of.isoformat(),
        "target": target_dict(result),
        "sources": sources_dict(result),
        "summary": {
            "ways": len(result.exposures),
            **{kind.value: found.counts[kind] for kind in VerdictKind},
            "failing": found.failing,
            "failOn": result.fail_on.value,
            "notJudged": list(found.unjudged),
            "notChecked": list(found.unchecked),
            "exitCode": found.exit_code,
        },
        "rules": [rule_dict(r) for r in result.rules if r.id in EXPOSURE_RULES],
        "exposures": [exposure_dict(judged) for judged in result.exposures],
    }


def render_json(result: AuditResult) -> str:
    return json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"


def render(name: str, result: AuditResult, presentation: Presentation = _PLAIN) -> str:
    """`audit exposure`'s report `name`: its own text and JSON; the reports of that name otherwise
    (Markdown, HTML: they draw the map of the same ways in)."""
    if name == "text":
        return render_text(result, presentation.color, presentation.width, presentation.verbosity)
    if name == "json":
        return render_json(result)
    from auditor.report import render as render_report

    return render_report(name, result, presentation)
