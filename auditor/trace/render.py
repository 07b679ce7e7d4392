"""`audit trace` as text (fits the terminal, as the text report) and as JSON (auditor/data/trace.schema.json)."""

from __future__ import annotations

import json
from typing import Any

from auditor import TOOL_NAME, __version__
from auditor.engine import AuditResult
from auditor.exposure import Evidence
from auditor.report.exposures import entry_locations
from auditor.report.json_report import exposure_dict, object_dict, source_dict, sources_dict, target_dict
from auditor.report.sources import ConfigSources
from auditor.report.text import (
    LINE_LIMIT,
    MESSAGE_LIMIT,
    MIN_WIDTH,
    _plural,
    _Style,
    neutralize,
    shown,
    target_line,
    wrap,
)
from auditor.trace.model import Chain, Hop, HopStatus, Trace

TRACE_VERSION = "1"
STATUS_COLOURS = {HopStatus.OK: "green", HopStatus.BROKEN: "red", HopStatus.UNSEEN: "yellow"}
KIND_WIDTH = 12  # the longest hop kind, `announcement`


def _evidence_text(evidence: Evidence) -> str:
    return evidence.describe() + (f": {evidence.note}" if evidence.note else "")


def _hop_lines(hop: Hop, width: int, style: _Style) -> list[str]:
    status = hop.status.value
    prefix = f"  {status:<6} {hop.kind.value:<{KIND_WIDTH}} "
    hang = " " * len(prefix)
    lines = wrap(shown(hop.summary, MESSAGE_LIMIT), width, prefix, hang)
    lines[0] = lines[0].replace(status, style(status, STATUS_COLOURS[hop.status]), 1)
    if hop.reason:
        label = "why" if hop.status is not HopStatus.OK else "note"
        lines += wrap(f"{label}: {shown(hop.reason, MESSAGE_LIMIT)}", width, hang, hang + "  ")
    for evidence in hop.evidence[:5]:
        lines += [style(line, "dim") for line in wrap(f"at {shown(_evidence_text(evidence), LINE_LIMIT)}", width,
                                                      hang, hang + "  ")]
    if len(hop.evidence) > 5:
        lines.append(f"{hang}and {len(hop.evidence) - 5} more")
    return lines


def _way_verdict(chain: Chain, locations: dict[str, str]) -> str:
    if chain.way is None:
        return ""
    verdict = chain.way.verdict
    at = f" ({locations[verdict.by]})" if verdict.by in locations else ""
    detail = {"sanctioned": f" by {verdict.by}", "excepted": f" by {verdict.by}{at}: {verdict.reason}",
              "drift": f" ({verdict.rule})", "unjudged": f": {verdict.reason}"}[verdict.kind.value]
    return f"way in: {verdict.kind.value}{detail}"


def _verdict(found: Trace) -> tuple[str, str]:
    first = found.first_broken
    if first is None:
        return f"Verdict: WHOLE (every chain reaches the target; exit {found.exit_code})", "green"
    number, _, hop = first
    what = "could not be seen" if hop.status is HopStatus.UNSEEN else "is broken"
    word = "INCOMPLETE" if hop.status is HopStatus.UNSEEN else "BROKEN"
    return (f"Verdict: {word}: the {hop.kind.value} hop of chain {number} {what} "
            f"({shown(hop.summary, LINE_LIMIT)}: {shown(hop.reason, LINE_LIMIT)}; exit {found.exit_code})",
            "red" if word == "BROKEN" else "yellow")


def render_text(found: Trace, result: AuditResult, color: bool = False, width: int = 80) -> str:
    width, style = max(width, MIN_WIDTH), _Style(color)
    heading = f"Trace of {shown(found.target.text, LINE_LIMIT)} in {target_line(result)}: " + _plural(
        len(found.chains), "chain")
    lines = [style(line, "bold") for line in wrap(heading, width, "", "  ")]
    lines += [*wrap(ConfigSources.of(result).sentence(), width, "", "  "), ""]
    locations = entry_locations(result)
    for number, chain in enumerate(found.chains, 1):
        status = "whole" if chain.status is HopStatus.OK else chain.status.value
        title = f"Chain {number} of {len(found.chains)}: {shown(chain.title, LINE_LIMIT)}: "
        lines += wrap(f"{title}{status}", width, "", "  ")
        lines[-1] = lines[-1][: len(lines[-1]) - len(status)] + style(status, STATUS_COLOURS[chain.status])
        for hop in chain.hops:
            lines += _hop_lines(hop, width, style)
        way = _way_verdict(chain, locations)
        if way:
            lines += wrap(shown(way, MESSAGE_LIMIT), width, "  ", "    ")
        lines.append("")
    text, colour = _verdict(found)
    lines += [style(line, colour) for line in wrap(text, width, "", "  ")]
    return neutralize("\n".join(lines), color) + "\n"


def _evidence_dict(evidence: Evidence) -> dict[str, Any]:
    out: dict[str, Any] = {"object": object_dict(evidence.ref), **source_dict(evidence.source)}
    if evidence.field:
        out["field"] = evidence.field
    if evidence.note:
        out["note"] = evidence.note
    return out


def _hop_dict(hop: Hop) -> dict[str, Any]:
    out: dict[str, Any] = {"hop": hop.kind.value, "status": hop.status.value, "summary": hop.summary}
    if hop.reason:
        out["reason"] = hop.reason
    out["evidence"] = [_evidence_dict(e) for e in hop.evidence]
    return out


def to_dict(found: Trace, result: AuditResult) -> dict[str, Any]:
    first = found.first_broken
    counts = {status: sum(1 for c in found.chains if c.status is status) for status in HopStatus}
    return {
        "traceVersion": TRACE_VERSION,
        "tool": {"name": TOOL_NAME, "version": __version__},
        "asOf": result.as_of.isoformat(),
        "input": target_dict(result),
        "sources": sources_dict(result),
        "target": {"text": found.target.text, "kind": found.target.kind.value,
                   "object": object_dict(found.target.ref) if found.target.ref is not None else None},
        "summary": {
            "chains": len(found.chains), "whole": counts[HopStatus.OK], "broken": counts[HopStatus.BROKEN],
            "unseen": counts[HopStatus.UNSEEN], "exitCode": found.exit_code,
            "firstBroken": None if first is None else {"chain": first[0], **_hop_dict(first[2])},
        },
        "chains": [
            {"title": chain.title, "status": "whole" if chain.status is HopStatus.OK else chain.status.value,
             "firstProblem": chain.first_problem,
             "way": exposure_dict(chain.way) if chain.way is not None else None,
             "hops": [_hop_dict(hop) for hop in chain.hops]}
            for chain in found.chains
        ],
    }


def render_json(found: Trace, result: AuditResult) -> str:
    return json.dumps(to_dict(found, result), indent=2, ensure_ascii=False) + "\n"
