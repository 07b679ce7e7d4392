"""`audit diff OLD.json NEW.json`: what changed between two JSON reports, findings and ways in (wording in
auditor/report/diff.py).

Exit 1 when NEW has new failing findings (failed, at or above NEW's
`--fail-on` unless given here), 0 otherwise, 2 when a report cannot be read or
is not a valid JSON report.
"""

from __future__ import annotations

import click

from auditor.model import Severity


@click.command()
@click.argument("old_report", metavar="OLD.json", type=click.Path(dir_okay=False))
@click.argument("new_report", metavar="NEW.json", type=click.Path(dir_okay=False))
@click.option("-o", "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--fail-on", type=click.Choice([severity.value for severity in Severity.highest_first()]), default=None,
              help="Lowest severity of a new failed finding that makes the run exit 1 (default: NEW's failOn).")
@click.pass_context
def diff(ctx: click.Context, old_report: str, new_report: str, output_format: str, fail_on: str | None) -> None:
    """Compare two JSON reports: new, fixed and unchanged findings; new and removed ways in.

    OLD and NEW are reports written with --json FILE or --format json. Prints
    the findings that are new in NEW, fixed since OLD, and unchanged; and the
    ways in (the reports' exposures, matched by cluster, channel, address,
    port, protocol and subject) that are new, removed, or judged otherwise.
    Exit 1 when there are new failing findings, 0 otherwise, 2 when a report
    is unreadable or not a valid report.
    """
    from auditor.baseline import load_report
    from auditor.report import diff as report_diff

    old = load_report(old_report, "report")
    new = load_report(new_report, "report")
    compared = report_diff.compare(old, new, old_report, new_report, Severity(fail_on) if fail_on else None)
    render = report_diff.render_json if output_format == "json" else report_diff.render_text
    click.echo(render(compared), nl=False)
    ctx.exit(compared.exit_code)
