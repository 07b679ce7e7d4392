"""`audit diff OLD.json NEW.json` as text and JSON: what changed between two JSON reports.

Findings are matched by rule and object (kind, namespace, name, and cluster in
fleet reports), never by message: the identity `--baseline` uses
(auditor/baseline.py). Ways in (the reports' `exposures`) are matched by a
stable identity of the door: cluster, channel, address (the IP, or the kind of
address when it is not known yet), port, protocol and subject (kind,
namespace, name); a Gateway's routes behind one door share it. A way in is new
or removed when its identity is in one report only, changed when its verdict
is not the same. This module only words the comparison; the command is
auditor/cli/diff_cmd.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from auditor.baseline import Comparison, diff_reports, is_failing
from auditor.errors import EXIT_FINDINGS, EXIT_OK
from auditor.model import Severity
from auditor.report.text import neutralize

DIFF_VERSION = "1"

Entry = dict[str, Any]  # a finding as a JSON report holds it (`findings[]`)


WayKey = tuple[str, str, str, str, str, str, str, str]


def way_key(way: Entry) -> WayKey:
    """The identity of a way in of a report's `exposures`."""
    address, subject = way["address"], way["subject"]["object"]
    return (way.get("cluster") or "", way["channel"], address.get("value") or f"({address['kind']})",
            "" if way.get("port") is None else str(way["port"]), way["protocol"], subject["kind"],
            subject.get("namespace") or "", subject["name"])


def _verdicts(ways: list[Entry]) -> str:
    return ", ".join(sorted({way["verdict"]["status"] for way in ways}))


@dataclass(frozen=True)
class WaysDiff:
    """The ways in of two reports compared (`compared` False when OLD or NEW has no `exposures`)."""

    compared: bool
    new: list[Entry]  # NEW's ways in whose identity OLD does not have (the first of each identity)
    removed: list[Entry]  # OLD's ways in whose identity NEW does not have
    changed: list[tuple[Entry, Entry]]  # (OLD's, NEW's) of an identity whose verdicts differ
    reason: str = ""


def compare_ways(old: dict[str, Any], new: dict[str, Any]) -> WaysDiff:
    missing = [name for name, report in (("OLD", old), ("NEW", new)) if "exposures" not in report]
    if missing:
        return WaysDiff(False, [], [], [], f"{' and '.join(missing)} has no exposures (written before reports "
                                            "listed the ways in): ways in not compared")
    before: dict[WayKey, list[Entry]] = {}
    after: dict[WayKey, list[Entry]] = {}
    for report, into in ((old, before), (new, after)):
        for way in report["exposures"]:
            into.setdefault(way_key(way), []).append(way)
    changed = [(before[key][0], ways[0]) for key, ways in after.items()
               if key in before and _verdicts(before[key]) != _verdicts(ways)]
    return WaysDiff(True, [ways[0] for key, ways in after.items() if key not in before],
                    [ways[0] for key, ways in before.items() if key not in after], changed)


@dataclass(frozen=True)
class ReportDiff:
    """Two JSON reports compared: `new` is the later one."""

    old_path: str
    new_path: str
    old_as_of: str
    new_as_of: str
    comparison: Comparison[Entry]
    fail_on: Severity
    new_failing: list[Entry]  # new findings that are failed, at or above fail_on
    ways: WaysDiff

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.new_failing else EXIT_OK


def compare(old: dict[str, Any], new: dict[str, Any], old_path: str, new_path: str,
            fail_on: Severity | None = None) -> ReportDiff:
    """Compare two validated JSON reports; the gate is NEW's `failOn` unless `fail_on` is given."""
    threshold = fail_on or Severity(new["summary"]["failOn"])
    comparison = diff_reports(old, new)
    new_failing = [entry for entry in comparison.new if is_failing(entry, threshold)]
    return ReportDiff(old_path, new_path, old["asOf"], new["asOf"], comparison, threshold, new_failing,
                      compare_ways(old, new))


def entry_display(entry: Entry) -> str:
    """`Kind/namespace/name` of a report's finding, after its cluster in a fleet report."""
    obj = entry["object"]
    if obj.get("namespace"):
        display = f"{obj['kind']}/{obj['namespace']}/{obj['name']}"
    else:
        display = f"{obj['kind']}/{obj['name']}"
    return f"{entry['cluster']}: {display}" if entry.get("cluster") else display


def _line(label: str, entry: Entry) -> str:
    where = ""
    if entry.get("file"):
        where = f"  ({entry['file']}:{entry['line']})" if entry.get("line") else f"  ({entry['file']})"
    status = " [excepted]" if entry.get("status") == "excepted" else ""
    what = f"{entry_display(entry)}: {entry['message']}{status}{where}"
    return f"  {label:<10} {entry['severity']:<8} {entry['rule']}  {what}"


def _way_line(label: str, way: Entry, verdict: str | None = None) -> str:
    subject = way["subject"]["object"]
    port = "?" if way.get("port") is None else way["port"]
    where = f"{way['cluster']}: " if way.get("cluster") else ""
    status = verdict or way["verdict"]["status"]
    return (f"  {label:<10} {where}{way['address']['display']} {port}/{way['protocol']} {way['channel']} "
            f"{entry_display({'object': subject})}: {status} ({way['verdict']['rule']})")


def _ways_lines(ways: WaysDiff) -> list[str]:
    if not ways.compared:
        return [f"Ways in: {ways.reason}"]
    lines = ["Ways in (matched by cluster, channel, address, port, protocol and subject):"]
    lines += [_way_line("new", way) for way in ways.new]
    lines += [_way_line("removed", way) for way in ways.removed]
    lines += [_way_line("changed", after, f"{before['verdict']['status']} -> {after['verdict']['status']}")
              for before, after in ways.changed]
    lines.append(f"{len(ways.new)} new, {len(ways.removed)} removed, {len(ways.changed)} changed verdicts")
    return lines


def render_text(diff: ReportDiff) -> str:
    comparison = diff.comparison
    lines = [f"Findings of {diff.new_path} compared with {diff.old_path} (matched by rule and object):", ""]
    sections = [
        ("new", comparison.new),
        ("fixed", comparison.fixed),
        ("unverified", comparison.unverified),
        ("unchanged", comparison.unchanged),
    ]
    for label, entries in sections:
        lines.extend(_line(label, entry) for entry in entries)
    if any(entries for _, entries in sections):
        lines.append("")
    if comparison.unverified:
        lines.append("unverified: in OLD but not in NEW, whose rule reached no verdict in NEW (not counted as fixed)")
    lines.append(
        f"{len(comparison.new)} new, {len(comparison.fixed)} fixed, {len(comparison.unchanged)} unchanged"
        + (f", {len(comparison.unverified)} unverified" if comparison.unverified else "")
    )
    lines += ["", *_ways_lines(diff.ways), ""]
    count, fail_on = len(diff.new_failing), diff.fail_on.value
    if count:
        findings = "finding" if count == 1 else "findings"
        lines.append(f"Verdict: FAIL ({count} new failing {findings} at or above {fail_on}; exit 1)")
    else:
        lines.append(f"Verdict: PASS (no new failing finding at or above {fail_on})")
    # The reports' object names come from audited input: escapes print as text.
    return neutralize("\n".join(lines) + "\n", False)


def to_dict(diff: ReportDiff) -> dict[str, Any]:
    comparison = diff.comparison
    return {
        "diffVersion": DIFF_VERSION,
        "old": {"file": diff.old_path, "asOf": diff.old_as_of},
        "new": {"file": diff.new_path, "asOf": diff.new_as_of},
        "failOn": diff.fail_on.value,
        "summary": {
            "new": len(comparison.new),
            "newFailing": len(diff.new_failing),
            "fixed": len(comparison.fixed),
            "unchanged": len(comparison.unchanged),
            "unverified": len(comparison.unverified),
            "newWays": len(diff.ways.new),
            "removedWays": len(diff.ways.removed),
            "changedWays": len(diff.ways.changed),
            "exitCode": diff.exit_code,
        },
        "findings": {
            "new": comparison.new,
            "fixed": comparison.fixed,
            "unchanged": comparison.unchanged,
            "unverified": comparison.unverified,
        },
        "exposures": {
            "compared": diff.ways.compared,
            **({"reason": diff.ways.reason} if diff.ways.reason else {}),
            "new": diff.ways.new,
            "removed": diff.ways.removed,
            "changed": [{"old": before, "new": after} for before, after in diff.ways.changed],
        },
    }


def render_json(diff: ReportDiff) -> str:
    return json.dumps(to_dict(diff), indent=2, ensure_ascii=False) + "\n"
