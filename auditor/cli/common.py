"""Options and the report pipeline shared by every command that audits (offline and live)."""

from __future__ import annotations

import datetime as dt
import functools
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

import click

from auditor.model import Severity
from auditor.report import FORMATS

FILE_FORMATS = tuple(name for name in FORMATS if name != "text")
SEVERITIES = tuple(severity.value for severity in Severity.highest_first())


@dataclass
class AuditOptions:
    output_format: str
    output_files: dict[str, str]
    exceptions_file: str | None
    posture_file: str | None
    fail_on: str
    require_complete: bool
    only_rules: tuple[str, ...]
    skip_rules: tuple[str, ...]
    as_of: dt.date | None
    color: bool | None
    baseline_file: str | None = None


def _parse_date(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None


def audit_options(command: Callable) -> Callable:
    """Add the options every auditing command takes, collected into `options: AuditOptions`."""
    decorators = [
        click.option("--format", "output_format", type=click.Choice(list(FORMATS)), default="text", show_default=True,
                     help="Report format on standard output."),
        *[
            click.option(f"--{name}", f"file_{name}", metavar="FILE", type=click.Path(dir_okay=False),
                         help=f"Also write the {name} report to FILE (atomically).")
            for name in FILE_FORMATS
        ],
        click.option("--exceptions", "exceptions_file", metavar="FILE", type=click.Path(dir_okay=False),
                     help="Exception list (default: ./exceptions.yaml if present, else the bundled one)."),
        click.option("--posture", "posture_file", metavar="FILE", type=click.Path(dir_okay=False),
                     help="Posture file (default: ./audit-posture.yaml if present, else the platform defaults)."),
        click.option("--fail-on", type=click.Choice(SEVERITIES), default="error", show_default=True,
                     help="Lowest severity of a failed finding that makes the run exit 1."),
        click.option("--require-complete", is_flag=True,
                     help="Exit 3 when a selected rule could not run on the data it needs."),
        click.option("--rule", "only_rules", multiple=True, metavar="ID", help="Run only this rule (repeatable)."),
        click.option("--skip-rule", "skip_rules", multiple=True, metavar="ID", help="Do not run this rule (repeatable)."),
        click.option("--as-of", callback=_parse_date, metavar="DATE",
                     help="Judge exception expiry as of DATE (YYYY-MM-DD; default: today, UTC)."),
        click.option("--color/--no-color", default=None,
                     help="Colour the text report (default: only on a terminal, never with NO_COLOR)."),
        click.option("--baseline", "baseline_file", metavar="PREVIOUS.json", type=click.Path(dir_okay=False),
                     help="A previous JSON report: its findings no longer fail the run, only new ones do; "
                          "fixed ones are reported."),
    ]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        files = {name: kwargs.pop(f"file_{name}") for name in FILE_FORMATS}
        options = AuditOptions(
            output_format=kwargs.pop("output_format"),
            output_files={name: path for name, path in files.items() if path},
            exceptions_file=kwargs.pop("exceptions_file"),
            posture_file=kwargs.pop("posture_file"),
            fail_on=kwargs.pop("fail_on"),
            require_complete=kwargs.pop("require_complete"),
            only_rules=kwargs.pop("only_rules"),
            skip_rules=kwargs.pop("skip_rules"),
            as_of=kwargs.pop("as_of"),
            color=kwargs.pop("color"),
            baseline_file=kwargs.pop("baseline_file"),
        )
        return command(options=options, **kwargs)

    for decorator in reversed(decorators):
        wrapper = decorator(wrapper)
    return wrapper


@dataclass
class Prepared:
    """Everything an audit needs besides the snapshot, loaded before any input is read."""

    rule_set: Any
    exceptions: Any
    posture: Any
    baseline: Any = None  # the --baseline report (a dict), validated before any input is read


def prepare(options: AuditOptions) -> Prepared:
    from auditor import exceptions_list, posture, registry

    all_rules = registry.load_rules()  # once per run: plugins are imported and checked once
    rule_set = registry.select(all_rules, options.only_rules, options.skip_rules)
    exceptions = exceptions_list.load(options.exceptions_file or exceptions_list.default_path())
    exceptions.check_rules(all_rules.ids)
    posture_config = posture.load(options.posture_file or posture.default_path())
    posture_config.check_rules(all_rules.ids)
    baseline_report = None
    if options.baseline_file:
        from auditor.baseline import load_report

        baseline_report = load_report(options.baseline_file, "baseline")
    return Prepared(rule_set, exceptions, posture_config, baseline_report)


def use_colour(options: AuditOptions) -> bool:
    if options.color is not None:
        return options.color
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def render_all(result: Any, options: AuditOptions) -> tuple[str, dict[str, str]]:
    """Render stdout and every requested file before writing anything."""
    from auditor.report import renderer

    colour = use_colour(options)
    rendered: dict[str, str] = {}

    def render(name: str) -> str:
        if name not in rendered:
            rendered[name] = renderer(name)(result, color=colour) if name == "text" else renderer(name)(result)
        return rendered[name]

    stdout_text = render(options.output_format)
    files = {path: render(name) for name, path in options.output_files.items()}
    return stdout_text, files


def evaluate(snapshot: Any, prepared: Prepared, options: AuditOptions) -> Any:
    """Run the rules over `snapshot`: the `AuditResult`, before any baseline or report."""
    from auditor import engine
    from auditor.model import Severity

    as_of = options.as_of or dt.datetime.now(dt.timezone.utc).date()
    return engine.run(
        snapshot,
        prepared.rule_set,
        prepared.exceptions,
        prepared.posture,
        as_of=as_of,
        fail_on=Severity(options.fail_on),
        require_complete=options.require_complete,
    )


def report(result: Any, prepared: Prepared, options: AuditOptions) -> int:
    """Apply --baseline, write the reports, and return the exit code."""
    from auditor.atomic import write_atomically

    if prepared.baseline is not None and options.baseline_file:
        result = result.with_baseline(prepared.baseline, options.baseline_file)
    stdout_text, files = render_all(result, options)
    for path, text in files.items():
        write_atomically(path, text)
    # click strips ANSI codes when stdout is not a terminal; --color forces them.
    click.echo(stdout_text, nl=False, color=options.output_format == "text" and use_colour(options) or None)
    return result.exit_code


def finish(snapshot: Any, prepared: Prepared, options: AuditOptions) -> int:
    """Run the rules, write the reports, and return the exit code."""
    return report(evaluate(snapshot, prepared, options), prepared, options)
