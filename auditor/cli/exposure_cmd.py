"""`audit exposure [PATH...] | --live`: every way in from outside the cluster, one line each, with its verdict.

Offline it takes the inputs and options of an audit (`audit PATH...`); with
`--live` those of `audit live` (the same read-only, bounded, fail-closed
reader). The rules run as in an audit; the report is the list of ways in
(auditor/report/exposures.py), or the Markdown/HTML report of the same audit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import click

from auditor.cli.common import STDOUT, AuditOptions, audit_options, check_outputs, evaluate, prepare, presentation
from auditor.cli.completion import INPUT_PATH
from auditor.cli.live import ClusterOptions, audit_clusters, cluster_options
from auditor.cli.scan import (
    OFFLINE_ONLY,
    STDIN,
    TREE_ONLY,
    InputOptions,
    configured_input,
    input_options,
    read_offline,
    stdin_is_closed,
    tree_options,
)
from auditor.errors import InputError

LIVE_HELP = ("Read the cluster of the kubeconfig context instead of PATHs (the options of `audit live`: "
             "--kubeconfig, --context, --request-timeout, ...).")


def _set_on_command_line(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    """The options among `names` given on the command line (or the environment), as `--flag` words."""
    given = []
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name) not in (
                click.core.ParameterSource.DEFAULT, None):
            given.append(param.opts[-1] if param.opts else str(param.name))
    return given


CLUSTER_ONLY = ("kubeconfig", "contexts", "all_contexts", "request_timeout", "exec_timeout", "max_response_size",
                "max_pages", "concurrency", "chunk_size", "max_chunk_size", "max_retries")


@dataclass(frozen=True)
class Source:
    """What a command reads: offline `paths` (with their read options and GitOps clusters), or the
    cluster(s) of the kubeconfig with `live`."""

    paths: tuple[str, ...]
    live: bool
    inputs: InputOptions
    cluster: ClusterOptions
    clusters: tuple[Any, ...] = ()
    audit_unreached: bool = False


def check_source(ctx: click.Context, paths: tuple[str, ...], live: bool, configured: bool = False) -> None:
    """PATHs or --live, each with only its own options (a usage error otherwise: exit 2). Without PATH, a
    configuration file (`configured`) names the offline input, as for `audit` (docs/config.md)."""
    if live and paths:
        raise click.UsageError("give PATH... or --live, not both")
    if not live and not paths and not configured:
        raise click.UsageError("give PATH... (offline input, or a .cilium-audit.yaml naming `paths:`; "
                               "docs/config.md) or --live (the kubeconfig's cluster)")
    wrong = _set_on_command_line(ctx, (*OFFLINE_ONLY, *TREE_ONLY) if live else CLUSTER_ONLY)
    if wrong:
        where = "with --live (they are for offline input)" if live else "without --live (they are for clusters)"
        raise click.UsageError(f"{', '.join(wrong)}: not {where}")


def configured_source(ctx: click.Context, source: Source, options: AuditOptions) -> Source:
    """`source` checked, with the configuration file applied as `audit` applies it (scan.configured_input:
    its paths when none is given, its clusters, its excludes); a live read has no paths to configure."""
    check_source(ctx, source.paths, source.live, configured=options.project is not None)
    if source.live:
        return source
    paths, clusters, inputs = configured_input(source.paths, source.clusters, source.inputs, options)
    return replace(source, paths=paths, clusters=clusters, inputs=inputs)


def audit_source(source: Source, prepared: Any, options: AuditOptions, extra_kinds: tuple[str, ...] = (),
                 fleet: bool = True, evaluate_snapshot: Callable[[Any], Any] | None = None) -> Any:
    """The `AuditResult` of the offline input, read as `audit PATH...` reads it (one folder as a GitOps tree,
    its clusters audited each by `evaluate_snapshot`), or of the cluster(s) with --live."""
    if source.live:
        return audit_clusters(source.cluster, prepared, options, extra_kinds, fleet=fleet)
    if STDIN in source.paths and stdin_is_closed():
        raise InputError("<stdin>: standard input is closed: nothing to read (pipe the input in, or give a file)")
    evaluate_scope = evaluate_snapshot or (lambda snapshot: evaluate(snapshot, prepared, options))
    result, snapshot = read_offline(source.paths, source.inputs, source.clusters, source.audit_unreached,
                                    lambda: prepared, evaluate_scope)
    return result if result is not None else evaluate_scope(snapshot)


def _check_formats(options: AuditOptions) -> None:
    from auditor.report.exposures import FORMATS

    for request in options.requests:
        if request.format not in FORMATS:
            raise click.UsageError(
                f"{request.option}: audit exposure writes {', '.join(FORMATS)}, not {request.format}")


def write(result: Any, prepared: Any, options: AuditOptions) -> None:
    """Render every requested report of the ways in, write the files (all or none), then standard output."""
    from auditor.atomic import DestinationKind, write_outputs
    from auditor.report.exposures import render

    shown = presentation(options)
    destinations = prepared.destinations or check_outputs(options)
    rendered = {name: render(name, result, shown) for name in dict.fromkeys(name for name, _ in destinations)}
    write_outputs([(d, rendered[name]) for name, d in destinations if d.kind is not DestinationKind.STDOUT])
    stdout = next(name for name, d in destinations if d.kind is DestinationKind.STDOUT)
    click.echo(rendered[stdout], nl=False, color=(stdout == "text" and shown.color) or None)


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATH...]", type=INPUT_PATH)
@click.option("--live", is_flag=True, help=LIVE_HELP)
@audit_options
@input_options
@tree_options
@cluster_options(fleet=True)
@click.pass_context
def exposure(ctx: click.Context, paths: tuple[str, ...], live: bool, options: AuditOptions, inputs: InputOptions,
             clusters: tuple[Any, ...], audit_unreached: bool, cluster: ClusterOptions) -> None:
    """List every way in from outside the cluster, with its verdict.

    One line per way in, sorted by address then port: the address, the
    port/protocol, how it is announced (L2, BGP, the nodes' own addresses),
    what forwards it (Gateway listener, route, hostname), the backend Service
    and workloads, and the verdict: sanctioned by the posture (which part),
    excepted by an entry (with its reason), or drift (the rule id).

    PATH... is read as by `audit PATH...` (one folder as a GitOps tree, each
    cluster on its own); --live reads the cluster as `audit live` does.
    Without PATH, the configuration file (.cilium-audit.yaml, see --config
    and docs/config.md) says what to read, as for `audit`. -o json gives the
    JSON report's `exposures`; markdown and html the reports of the same
    audit. Exit 0 when every way in is sanctioned or excepted, 1 when one is
    drift at or above --fail-on, 3 when one could not be judged, 2 on a usage
    or input error.
    """
    source = configured_source(ctx, Source(paths, live, inputs, cluster, clusters, audit_unreached), options)
    _check_formats(options)
    if live:
        options.require_complete = True
    prepared = prepare(options)
    result = audit_source(source, prepared, options)
    if prepared.baseline is not None and options.baseline_file:
        result = result.with_baseline(prepared.baseline, options.baseline_file)
    from auditor.report.exposures import outcome

    write(result, prepared, options)
    ctx.exit(outcome(result).exit_code)


__all__ = ["STDOUT", "Source", "audit_source", "check_source", "configured_source", "exposure", "write"]
