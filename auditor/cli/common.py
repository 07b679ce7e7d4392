"""Options and the report pipeline shared by every command that audits (offline and live)."""

from __future__ import annotations

import datetime as dt
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import click

from auditor.cli.completion import RULE_ID
from auditor.errors import AuditError
from auditor.gc_pause import collector_paused
from auditor.model import Severity
from auditor.report import DEFAULT_WIDTH, FORMATS, Presentation, Verbosity

FILE_FORMATS = tuple(name for name in FORMATS if name != "text")
SEVERITIES = tuple(severity.value for severity in Severity.highest_first())
STDOUT = "-"


@dataclass(frozen=True)
class ReportRequest:
    """One report asked for: its format, where (`-`: standard output), and the option that asked."""

    format: str
    path: str
    option: str  # "--json out.json", "--format json", or "the text report" (the default)

    @property
    def default(self) -> bool:
        return self.option == DEFAULT_REPORT


DEFAULT_REPORT = "the text report"


def report_requests(output_format: str | None, files: dict[str, str | None]) -> list[ReportRequest]:
    """The reports the options ask for, in order: the standard output one (given or default) first."""
    requests = [ReportRequest(name, path, f"--{name} {path}") for name, path in files.items() if path]
    if output_format is not None:
        requests.insert(0, ReportRequest(output_format, STDOUT, f"--format {output_format}"))
    elif not any(request.path == STDOUT for request in requests):
        requests.insert(0, ReportRequest("text", STDOUT, DEFAULT_REPORT))
    return requests


@dataclass
class AuditOptions:
    """The options every audit command shares: reports, exceptions, posture, the gate and the rules to run."""

    output_format: str  # the report on standard output
    output_files: dict[str, str]  # format -> FILE of the other reports
    exceptions_file: str | None
    posture_file: str | None
    fail_on: str
    require_complete: bool
    only_rules: tuple[str, ...]
    skip_rules: tuple[str, ...]
    as_of: dt.date | None
    color: bool | None
    baseline_file: str | None = None
    verbosity: Verbosity = Verbosity.NORMAL
    # Every report asked for, checked together (`check_outputs`): two of them on standard output,
    # or in one file, is an error. Empty: `output_format` on stdout plus `output_files`.
    requests: list[ReportRequest] = field(default_factory=list)
    # The configuration file (`.cilium-audit.yaml`, docs/config.md) and what it sets, once applied
    # (`apply_project_config`): None / empty when there is none.
    config_file: str | None = None  # --config
    project: Any = None  # auditor.project_config.ProjectConfig
    settings: dict[str, Any] = field(default_factory=dict)  # key -> effective.Setting
    exceptions_files: tuple[str, ...] | None = None  # the file's `exceptions:` (merged), None: --exceptions/default
    inline_posture: bool = False
    severity: dict[str, str] = field(default_factory=dict)
    not_applicable: dict[str, Any] = field(default_factory=dict)  # rule id -> engine.NotApplicable


def _parse_date(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _option_decorators() -> list[Callable[[Callable[..., Any]], Callable[..., Any]]]:
    """The click options of every auditing command, in the order `--help` lists them."""
    return [
        click.option("-o", "--format", "output_format", type=click.Choice(list(FORMATS)), default=None,
                     help="Report format on standard output (default: text, unless a FILE option is -)."),
        *[
            click.option(f"--{name}", f"file_{name}", metavar="FILE", type=click.Path(dir_okay=False, allow_dash=True),
                         help=f"Also write the {name} report to FILE (- for standard output; a regular file is "
                              "replaced atomically, a FIFO or device written as a stream).")
            for name in FILE_FORMATS
        ],
        click.option("--exceptions", "exceptions_file", metavar="FILE", type=click.Path(dir_okay=False),
                     help="Exception list (default: ./exceptions.yaml if present, else the bundled one)."),
        click.option("--posture", "posture_file", metavar="FILE", type=click.Path(dir_okay=False),
                     help="Posture file (default: ./audit-posture.yaml if present, else the platform defaults)."),
        click.option("--fail-on", type=click.Choice(SEVERITIES), default="error", show_default=True,
                     help="Lowest severity of a failed finding that makes the run exit 1."),
        click.option("--require-complete/--no-require-complete", default=False,
                     help="Exit 3 when a selected rule could not run on the data it needs (--no-require-complete: "
                          "not even when the configuration file's requireComplete says so)."),
        click.option("--rule", "only_rules", multiple=True, metavar="ID", type=RULE_ID,
                     help="Run only this rule (repeatable)."),
        click.option("--skip-rule", "skip_rules", multiple=True, metavar="ID", type=RULE_ID,
                     help="Do not run this rule (repeatable)."),
        click.option("--as-of", callback=_parse_date, metavar="DATE",
                     help="Judge exception expiry as of DATE (YYYY-MM-DD; default: today, UTC)."),
        click.option("--color/--no-color", default=None,
                     help="Colour the text report (default: only on a terminal, never with NO_COLOR)."),
        click.option("-q", "--quiet", is_flag=True,
                     help="Text report: only the failing findings, rules in error and the verdict."),
        click.option("-v", "--verbose", is_flag=True,
                     help="Reports: also why each rule did not run, the notes, and the unused entries of the "
                          "built-in exception list."),
        click.option("--baseline", "baseline_file", metavar="PREVIOUS.json", type=click.Path(dir_okay=False),
                     help="A previous JSON report: its findings no longer fail the run, only new ones do; "
                          "fixed ones are reported."),
        config_option,
    ]


config_option = click.option(
    "--config", "config_file", metavar="FILE", type=click.Path(dir_okay=False),
    help="Configuration file (default: $AUDIT_CONFIG, else the .cilium-audit.yaml found walking up from PATH to the "
         "repository root; docs/config.md). Options given here override it.")


def audit_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the options every auditing command takes, collected into `options: AuditOptions`."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        files = {name: kwargs.pop(f"file_{name}") for name in FILE_FORMATS}
        requests = report_requests(kwargs.pop("output_format"), files)
        quiet, verbose = kwargs.pop("quiet"), kwargs.pop("verbose")
        if quiet and verbose:
            raise click.UsageError("give -q/--quiet or -v/--verbose, not both")
        options = AuditOptions(
            output_format=next(r.format for r in requests if r.path == STDOUT),
            output_files={r.format: r.path for r in requests if r.path != STDOUT},
            requests=requests,
            exceptions_file=kwargs.pop("exceptions_file"),
            posture_file=kwargs.pop("posture_file"),
            fail_on=kwargs.pop("fail_on"),
            require_complete=kwargs.pop("require_complete"),
            only_rules=kwargs.pop("only_rules"),
            skip_rules=kwargs.pop("skip_rules"),
            as_of=kwargs.pop("as_of"),
            color=kwargs.pop("color"),
            baseline_file=kwargs.pop("baseline_file"),
            verbosity=Verbosity.QUIET if quiet else Verbosity.VERBOSE if verbose else Verbosity.NORMAL,
            config_file=kwargs.pop("config_file"),
        )
        apply_project_config(options, kwargs)
        return command(options=options, **kwargs)

    for decorator in reversed(_option_decorators()):
        wrapper = decorator(wrapper)
    return wrapper


@dataclass
class Prepared:
    """Everything an audit needs besides the snapshot, loaded before any input is used."""

    rule_set: Any
    exceptions: Any
    posture: Any
    baseline: Any = None  # the --baseline report (a dict), validated before any input is used
    # (format, where it goes) of every report, checked before any input is used.
    destinations: list[tuple[str, Any]] = field(default_factory=list)


def check_outputs(options: AuditOptions) -> list[tuple[str, Any]]:
    """Every report destination, checked together before anything is read or written (auditor/atomic.py).

    Settles `options.output_format` (the report on standard output) and
    `options.output_files` (the others) from where each path really leads.
    """
    from auditor.atomic import DestinationKind, check_destination, check_distinct, stdout_is_closed

    requests = options.requests or report_requests(options.output_format, dict(options.output_files))
    checked = [(r.format, replace(check_destination(r.path, f"{r.format} report"), option=r.option), r)
               for r in requests]
    on_stdout = [request for _, d, request in checked if d.kind is DestinationKind.STDOUT]
    if len(on_stdout) > 1 and on_stdout[0].default:
        checked = [item for item in checked if not item[2].default]  # it gives way to `--json /dev/stdout`
    destinations = [(name, destination) for name, destination, _ in checked]
    check_distinct([destination for _, destination in destinations])
    # One report always goes to standard output: a `-` path, or the default text report.
    stdout_name = next(name for name, d in destinations if d.kind is DestinationKind.STDOUT)
    if stdout_is_closed():
        raise AuditError(f"standard output is closed: nowhere to write the {stdout_name} report "
                         "(redirect it, e.g. >/dev/null, rather than closing it)")
    options.output_format = stdout_name
    options.output_files = {name: d.path for name, d in destinations if d.kind is not DestinationKind.STDOUT}
    return destinations


def _given(name: str) -> bool:
    """Whether the option `name` was given on the command line (not its default)."""
    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def _flags(options: AuditOptions, kwargs: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The settings of the configuration file the command line gives (docs/config.md, precedence)."""
    flags: dict[str, tuple[Any, str]] = {}
    if kwargs.get("paths"):
        flags["paths"] = (tuple(kwargs["paths"]), "flag PATH")
    if kwargs.get("clusters"):
        flags["clusters"] = (tuple((spec.name, spec.path) for spec in kwargs["clusters"]), "flag --cluster")
    if options.only_rules:
        flags["rules.only"] = (tuple(options.only_rules), "flag --rule")
    if options.skip_rules:
        flags["rules.skip"] = (tuple(options.skip_rules), "flag --skip-rule")
    if _given("fail_on"):
        flags["failOn"] = (options.fail_on, "flag --fail-on")
    if _given("require_complete"):
        option = "--require-complete" if options.require_complete else "--no-require-complete"
        flags["requireComplete"] = (options.require_complete, f"flag {option}")
    if options.posture_file:
        flags["posture"] = (options.posture_file, "flag --posture")
    if options.exceptions_file:
        flags["exceptions"] = ((options.exceptions_file,), "flag --exceptions")
    return flags


def _defaults(project: Any) -> dict[str, Any]:
    from auditor import exceptions_list, posture
    from auditor.project_config.effective import BUILTIN, DEFAULT, Setting

    folder = (project.folder,) if project is not None else ()
    posture_file, exceptions_file = posture.default_path(), exceptions_list.default_path()
    builtin_exceptions = exceptions_file == exceptions_list.bundled_path()
    table: list[tuple[str, Any, str]] = [
        ("paths", folder, f"{DEFAULT} (the configuration file's folder)" if folder else DEFAULT),
        ("exclude", (), DEFAULT), ("clusters", (), f"{DEFAULT} (the tree's Flux and Argo CD entry points)"),
        ("rules.only", (), f"{DEFAULT} (every rule)"), ("rules.skip", (), DEFAULT),
        ("severity", {}, f"{DEFAULT} (each rule's own)"), ("failOn", "error", DEFAULT),
        ("requireComplete", False, DEFAULT), ("notApplicable", {}, DEFAULT),
        ("posture", posture_file, f"{DEFAULT} (./{posture.DEFAULT_FILE})" if posture_file else BUILTIN),
        ("exceptions", None if builtin_exceptions else (exceptions_file,),
         BUILTIN if builtin_exceptions else f"{DEFAULT} (./{exceptions_list.DEFAULT_FILE})"),
    ]
    return {key: Setting(key, value, origin) for key, value, origin in table}


def apply_project_config(options: AuditOptions, kwargs: dict[str, Any]) -> None:
    """Read the configuration file in force, if any (docs/config.md), and settle every option it sets.

    Without a file (none found, none named), the options stay as given and nothing is imported or read
    beyond the search itself: a run without configuration costs what it cost before."""
    from auditor import project_config

    located = project_config.locate(options.config_file, tuple(kwargs.get("paths") or ()))
    if located is None:
        return
    from auditor.engine import NotApplicable
    from auditor.project_config.effective import resolve, value_of

    project = project_config.load(located)
    settings = resolve(project, _flags(options, kwargs), _defaults(project))
    options.project, options.settings = project, settings
    options.fail_on = value_of(settings, "failOn")
    options.require_complete = bool(value_of(settings, "requireComplete"))
    options.only_rules, options.skip_rules = value_of(settings, "rules.only"), value_of(settings, "rules.skip")
    posture_value = value_of(settings, "posture")
    options.inline_posture = posture_value == project_config.INLINE and settings["posture"].origin != "flag --posture"
    options.posture_file = None if options.inline_posture else posture_value
    exceptions = value_of(settings, "exceptions")
    options.exceptions_files = None if exceptions is None else tuple(exceptions)
    options.severity = value_of(settings, "severity")
    declared = settings["notApplicable"].value
    options.not_applicable = {rule: NotApplicable(item.value, item.origin) for rule, item in declared.items()}


def _load_exceptions(options: AuditOptions) -> Any:
    from auditor import exceptions_list

    files = options.exceptions_files
    if files is None:
        return exceptions_list.load(options.exceptions_file or exceptions_list.default_path())
    if not files:  # `exceptions: []`: nothing is excepted, and the reports name the key that says so
        return exceptions_list.ExceptionList(options.project.where("exceptions"), [])
    return exceptions_list.load_merged(list(files))


def _load_posture(options: AuditOptions) -> Any:
    from auditor import posture, project_config

    if options.inline_posture:
        project = options.project
        loaded = posture.load_inline(project_config.inline_posture(project), project.path)
    else:
        loaded = posture.load(options.posture_file or posture.default_path())
    return loaded


def prepare(options: AuditOptions) -> Prepared:
    from auditor import registry

    all_rules = registry.load_rules()  # once per run: plugins are imported and checked once
    if options.project is not None:
        options.project.check_rules(all_rules.ids)
    rule_set = registry.select(all_rules, options.only_rules, options.skip_rules)
    destinations = check_outputs(options)
    if not rule_set.rules and not rule_set.broken:
        # Nothing would be checked, and "PASS" would claim otherwise (with --require-complete and live too).
        raise AuditError("no rule selected: --rule/--skip-rule leave nothing to run (see `audit rules`)")
    exceptions = _load_exceptions(options)
    exceptions.check_rules(all_rules.ids)
    posture_config = _load_posture(options)
    posture_config.check_rules(all_rules.ids)
    if options.severity:  # the configuration file's `severity:`, over the posture's
        posture_config.severity_overrides.update({rule: Severity(level) for rule, level in options.severity.items()})
    baseline_report = None
    if options.baseline_file:
        from auditor.baseline import load_report

        baseline_report = load_report(options.baseline_file, "baseline")
    return Prepared(rule_set, exceptions, posture_config, baseline_report, destinations)


def warm_up(options: AuditOptions) -> None:
    """Import what judging and reporting the input will need (the engine, each report's renderer)
    while the input is still being read (cluster answers awaited, workers parsing), rather than
    after the read (issue 15)."""
    from auditor import engine  # noqa: F401  (imported for its cost, not its name)
    from auditor.report import FORMATS, renderer

    for name in dict.fromkeys([options.output_format, *options.output_files]):
        if name in FORMATS:  # (`audit exposure` and `audit trace` have formats of their own)
            renderer(name)


class PrepareOnce:
    """`prepare(options)` (and `warm_up`), run the first time it is called and remembered.

    The offline reader calls it before reading any file, after it has started the workers of a
    parallel read (auditor/sources/parallel.py): loading the rules, exceptions and posture then
    overlaps the workers' parsing, and what it raises (an unknown rule, an unreadable posture)
    still ends the run before any file is used. `audit live` overlaps them with the first
    requests in the same way (cli/live.py)."""

    def __init__(self, options: AuditOptions) -> None:
        self._options = options
        self._prepared: Prepared | None = None

    def __call__(self) -> Prepared:
        if self._prepared is None:
            self._prepared = prepare(self._options)
            warm_up(self._options)
        return self._prepared


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed, or a stand-in without a descriptor
        return False


def use_colour(options: AuditOptions) -> bool:
    """--color/--no-color, else colour only on a terminal and never with NO_COLOR (https://no-color.org)."""
    if options.color is not None:
        return options.color
    return _is_terminal(sys.stdout) and not os.environ.get("NO_COLOR")


def report_width(stream: Any = None) -> int:
    """The columns the text report may use: `COLUMNS`, else the terminal's width, else 80.

    The order of `shutil.get_terminal_size`, but asking the stream the report
    is written to (standard output) rather than the interpreter's original one,
    so a report captured or piped is 80 columns wide unless `COLUMNS` says otherwise.
    """
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = sys.stdout if stream is None else stream
    if _is_terminal(stream):
        try:
            width = os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            width = 0
        if width > 0:
            return width
    return DEFAULT_WIDTH


def presentation(options: AuditOptions) -> Presentation:
    return Presentation(width=report_width(), color=use_colour(options), verbosity=options.verbosity)


def render_each(result: Any, options: AuditOptions) -> dict[str, str]:
    """Every requested report by format (standard output's and the files'), rendered before anything is written."""
    from auditor.report import render

    shown = presentation(options)
    names = dict.fromkeys([options.output_format, *options.output_files])
    return {name: render(name, result, shown) for name in names}


def write_reports(result: Any, prepared: Prepared, options: AuditOptions) -> None:
    """Render every report, write the files (all or none), then standard output."""
    from auditor.atomic import DestinationKind, write_outputs

    destinations = prepared.destinations or check_outputs(options)
    rendered = render_each(result, options)
    write_outputs([(destination, rendered[name]) for name, destination in destinations
                   if destination.kind is not DestinationKind.STDOUT])
    stdout_text = rendered[options.output_format]
    # click strips ANSI codes when stdout is not a terminal; --color forces them.
    try:
        click.echo(stdout_text, nl=False, color=(options.output_format == "text" and use_colour(options)) or None)
        sys.stdout.flush()
    except BrokenPipeError:
        # `audit ... | head`: the reader stopped reading. That changes nothing about the verdict, so the
        # run still exits with it (a failing audit piped into head must not exit 0).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


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
        not_applicable=options.not_applicable,
    )


def report(result: Any, prepared: Prepared, options: AuditOptions) -> int:
    """Apply --baseline, write the reports, and return the exit code."""
    if prepared.baseline is not None and options.baseline_file:
        result = result.with_baseline(prepared.baseline, options.baseline_file)
    write_reports(result, prepared, options)
    from auditor.cli import outlive

    outlive(result)  # freed with the process (auditor.cli.main)
    return int(result.exit_code)


def finish(snapshot: Any, prepared: Prepared, options: AuditOptions) -> int:
    """Run the rules, write the reports, and return the exit code."""
    # The process ends with the run: what the rules and reports build leaves the collector's view.
    with collector_paused(freeze=True):
        return report(evaluate(snapshot, prepared, options), prepared, options)
