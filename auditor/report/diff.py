"""`audit diff OLD.json NEW.json` as text and JSON: what changed between two JSON reports.

Findings are matched by rule and object (kind, namespace, name, and cluster in
fleet reports), never by message: the identity `--baseline` uses
(auditor/baseline.py). This module only words the comparison; the command is
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

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.new_failing else EXIT_OK


def compare(old: dict[str, Any], new: dict[str, Any], old_path: str, new_path: str,
            fail_on: Severity | None = None) -> ReportDiff:
    """Compare two validated JSON reports; the gate is NEW's `failOn` unless `fail_on` is given."""
    threshold = fail_on or Severity(new["summary"]["failOn"])
    comparison = diff_reports(old, new)
    new_failing = [entry for entry in comparison.new if is_failing(entry, threshold)]
    return ReportDiff(old_path, new_path, old["asOf"], new["asOf"], comparison, threshold, new_failing)


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
            "exitCode": diff.exit_code,
        },
        "findings": {
            "new": comparison.new,
            "fixed": comparison.fixed,
            "unchanged": comparison.unchanged,
            "unverified": comparison.unverified,
        },
    }


def render_json(diff: ReportDiff) -> str:
    return json.dumps(to_dict(diff), indent=2, ensure_ascii=False) + "\n"
