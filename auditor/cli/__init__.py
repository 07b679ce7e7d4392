"""Command line: `audit PATH...` (offline), `audit rules`, `audit explain ID`, ...

Only click is imported at start-up; every command imports what it needs when
it runs, so `audit --version` answers in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import sys

import click

from auditor.cli import completion
from auditor.errors import EXIT_INCOMPLETE, EXIT_USAGE, AuditError

# Extra commands registered by name -> "module:attribute", imported on use.
LAZY_COMMANDS: dict[str, str] = {
    "scan": "auditor.cli.scan:scan",
    "rules": "auditor.cli.rules_cmd:rules",
    "explain": "auditor.cli.rules_cmd:explain",
    "diff": "auditor.cli.diff_cmd:diff",
    "exposure": "auditor.cli.exposure_cmd:exposure",
    "trace": "auditor.cli.trace_cmd:trace",
    "live": "auditor.cli.live:live",
    "snapshot": "auditor.cli.live:snapshot",
    "rbac": "auditor.cli.live:rbac",
    "version": "auditor.cli.version_cmd:version",
    "config": "auditor.cli.config_cmd:config",
    "init": "auditor.cli.init_cmd:init",
}
DEFAULT_COMMAND = "scan"

# When the command line is the process (`main()` without argv: the `audit` script, `python -m
# auditor`), what a run built is kept here until the process ends, and the process ends with
# os._exit once its output is flushed: freeing a 100k-object snapshot object by object took
# 0.15 s after the reports were written, for nothing the user sees. In-process callers (tests
# pass argv) free it as usual.
_PROCESS_LIFETIME: list[object] | None = None


def outlive(value: object) -> None:
    """Keep `value` until the process exits, when the command line is the process (else nothing)."""
    if _PROCESS_LIFETIME is not None:
        _PROCESS_LIFETIME.append(value)


def _exit_at_once(code: int) -> None:
    """Flush what the run wrote, then end the process without freeing what it built."""
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader that went away, a closed stream
            stream.flush()
    os._exit(code)


def print_short_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """`--version` (eager): auditor.cli.version_cmd, and the hashing it does, only when it is given."""
    if value:
        from auditor.cli.version_cmd import print_short_version as print_version

        print_version(ctx, param, value)


class AuditGroup(click.Group):
    """A group whose default command is `scan`: `audit dump.json` means `audit scan dump.json`.

    Subcommands are imported lazily. A path that happens to be named like a
    command can be given as `./rules`. Completing the first word offers both
    the commands and the paths (auditor/cli/completion.py).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        spec = LAZY_COMMANDS.get(name)
        if spec is None:
            return super().get_command(ctx, name)
        import importlib

        module_name, _, attribute = spec.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command), spec
        return completion.complete_known_options(command)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[click.shell_completion.CompletionItem]:
        return completion.with_paths(super().shell_complete(ctx, incomplete), incomplete)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.list_commands(ctx) and args[0] not in ("--help", "-h", "--version"):
            args = [DEFAULT_COMMAND, *args]
        elif not args and _configured():
            args = [DEFAULT_COMMAND]  # a bare `audit` in a configured repository audits it (docs/config.md)
        return super().parse_args(ctx, args)


def _configured() -> bool:
    """Whether a configuration file is in force for a run from here (AUDIT_CONFIG, or one found above)."""
    from auditor.project_config import locate

    return locate(None, ()) is not None


@click.group(
    cls=AuditGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=(
        "Run `audit PATH...` to audit offline input (same as `audit scan PATH...`). "
        "Exit codes: 0 nothing failing, 1 failing findings, 2 usage or input error, "
        "3 audit incomplete. See `audit COMMAND --help`."
    ),
)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=print_short_version,
              help="Print the tool's version and the rule set version, and exit.")
def cli() -> None:
    """Audit a Kubernetes cluster's Cilium-based exposure for drift and compliance."""


def _own_data_file(error: BaseException) -> str | None:
    """The auditor's own file (rule index, schema, bundled list) an OSError is about, if it is one.

    When the installation cannot be read by the user running it (a checkout under
    a folder others cannot enter), that is a setup error to name, not an auditor bug.
    """
    filename = getattr(error, "filename", None) if isinstance(error, OSError) else None
    if not isinstance(filename, str):
        return None
    roots = []
    for name in ("auditor", "auditor_rules"):  # the package and its rules: their data files
        location = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(location, str):
            roots.append(os.path.dirname(os.path.abspath(location)))
    path = os.path.abspath(filename)
    return path if any(os.path.commonpath([path, root]) == root for root in roots) else None


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one line per error, documented exit codes, no tracebacks."""
    global _PROCESS_LIFETIME
    if argv is None:
        _PROCESS_LIFETIME = []
    try:
        code = cli.main(args=argv, prog_name="audit", standalone_mode=False)
    except AuditError as error:
        click.echo(f"audit: error: {error.message}", err=True)
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        click.echo("audit: aborted", err=True)
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(EXIT_USAGE if error.exit_code == 2 else error.exit_code)
    except KeyboardInterrupt:
        click.echo("audit: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        # `audit ... | head`: the reader went away; that is not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as error:  # an auditor bug: still one line, and never a pass
        own = _own_data_file(error)
        if own is not None:
            reason = getattr(error, "strerror", None) or type(error).__name__
            click.echo(f"audit: error: {own}: cannot read the auditor's own data: {reason} "
                       "(the installation must be readable by the user running audit)", err=True)
            sys.exit(EXIT_USAGE)
        if os.environ.get("AUDIT_DEBUG"):
            raise
        message = str(error).splitlines()[0] if str(error) else ""
        click.echo(f"audit: internal error: {type(error).__name__}: {message} (AUDIT_DEBUG=1 shows the traceback)",
                   err=True)
        sys.exit(EXIT_INCOMPLETE)
    code = code if isinstance(code, int) else 0
    if _PROCESS_LIFETIME is not None:
        _exit_at_once(code)
    sys.exit(code)
