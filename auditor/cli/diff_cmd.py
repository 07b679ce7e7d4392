"""`audit diff OLD.json NEW.json`: what changed between two JSON reports.

Findings are matched by rule and object (kind, namespace, name, and cluster in
fleet reports), never by message — the same identity `--baseline` uses
(auditor/baseline.py). Exit 1 when NEW has new failing findings (failed, at or
above NEW's `--fail-on` unless given here), 0 otherwise, 2 when a report
cannot be read or is not a valid JSON report.
"""

from __future__ import annotations

import json

import click

DIFF_VERSION = "1"


def _target(entry: dict) -> str:
    obj = entry["object"]
    display = f"{obj['kind']}/{obj['namespace']}/{obj['name']}" if obj.get("namespace") else f"{obj['kind']}/{obj['name']}"
    return f"{entry['cluster']}: {display}" if entry.get("cluster") else display


def _line(label: str, entry: dict) -> str:
    where = ""
    if entry.get("file"):
        where = f"  ({entry['file']}:{entry['line']})" if entry.get("line") else f"  ({entry['file']})"
    status = " [excepted]" if entry.get("status") == "excepted" else ""
    return f"  {label:<10} {entry['severity']:<8} {entry['rule']}  {_target(entry)}: {entry['message']}{status}{where}"


def _text(old_path: str, new_path: str, comparison, new_failing: list, fail_on: str) -> str:
    lines = [f"Findings of {new_path} compared with {old_path} (matched by rule and object):", ""]
    sections = [
        ("new", comparison.new),
        ("fixed", comparison.fixed),
        ("unverified", comparison.unverified),
        ("unchanged", comparison.unchanged),
    ]
    for label, entries in sections:
        for entry in entries:
            lines.append(_line(label, entry))
    if any(entries for _, entries in sections):
        lines.append("")
    if comparison.unverified:
        lines.append("unverified: in OLD but not in NEW, whose rule reached no verdict in NEW (not counted as fixed)")
    lines.append(
        f"{len(comparison.new)} new, {len(comparison.fixed)} fixed, {len(comparison.unchanged)} unchanged"
        + (f", {len(comparison.unverified)} unverified" if comparison.unverified else "")
    )
    if new_failing:
        lines.append(f"Verdict: FAIL ({len(new_failing)} new failing finding{'s' if len(new_failing) != 1 else ''} "
                     f"at or above {fail_on}; exit 1)")
    else:
        lines.append(f"Verdict: PASS (no new failing finding at or above {fail_on})")
    return "\n".join(lines) + "\n"


@click.command()
@click.argument("old_report", metavar="OLD.json", type=click.Path(dir_okay=False))
@click.argument("new_report", metavar="NEW.json", type=click.Path(dir_okay=False))
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default=None,
              help="Lowest severity of a new failed finding that makes the run exit 1 (default: NEW's failOn).")
@click.pass_context
def diff(ctx: click.Context, old_report: str, new_report: str, output_format: str, fail_on: str | None) -> None:
    """Compare two JSON reports: new, fixed and unchanged findings.

    OLD and NEW are reports written with --json FILE or --format json. Prints the findings that are new in NEW, fixed since OLD, and unchanged.
    Exit 1 when there are new failing findings, 0 otherwise, 2 when a report
    is unreadable or not a valid report.
    """
    from auditor.baseline import diff_reports, is_failing, load_report
    from auditor.model import Severity

    old = load_report(old_report, "report")
    new = load_report(new_report, "report")
    threshold = Severity(fail_on or new["summary"]["failOn"])
    comparison = diff_reports(old, new)
    new_failing = [entry for entry in comparison.new if is_failing(entry, threshold)]
    code = 1 if new_failing else 0
    if output_format == "json":
        payload = {
            "diffVersion": DIFF_VERSION,
            "old": {"file": old_report, "asOf": old["asOf"]},
            "new": {"file": new_report, "asOf": new["asOf"]},
            "failOn": threshold.value,
            "summary": {
                "new": len(comparison.new),
                "newFailing": len(new_failing),
                "fixed": len(comparison.fixed),
                "unchanged": len(comparison.unchanged),
                "unverified": len(comparison.unverified),
                "exitCode": code,
            },
            "findings": {
                "new": comparison.new,
                "fixed": comparison.fixed,
                "unchanged": comparison.unchanged,
                "unverified": comparison.unverified,
            },
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        from auditor.report.text import neutralize

        # The reports' object names come from audited input: escapes print as text.
        click.echo(neutralize(_text(old_report, new_report, comparison, new_failing, threshold.value), False), nl=False)
    ctx.exit(code)
