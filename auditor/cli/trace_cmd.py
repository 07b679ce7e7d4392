"""`audit trace TARGET [PATH...] | --live`: the chain from the LAN to a hostname, Service or Gateway, hop by hop.

The input is read and audited as by `audit PATH...` (or `audit live` with
--live, which also lists EndpointSlices and Leases), with the configuration
file applied as `audit` applies it (docs/config.md: its paths when no PATH is
given, excludes, clusters, posture, exceptions, rule selection); the chains
come from the exposure model (auditor/trace/). A GitOps tree of several
clusters is traced in each, every chain named by its cluster. Exit 0 when
every chain is whole, 1 when a hop is broken, 3 when a hop could not be seen
(or the cluster could not be read), 2 for an unknown target (with the
closest known ones) or a usage or input error.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from auditor.cli.common import (
    STDOUT,
    AuditOptions,
    _parse_date,
    apply_project_config,
    config_option,
    evaluate,
    prepare,
    report_width,
    use_colour,
)
from auditor.cli.completion import INPUT_PATH
from auditor.cli.exposure_cmd import LIVE_HELP, Source, audit_source, configured_source
from auditor.cli.live import ClusterOptions, cluster_options
from auditor.cli.scan import InputOptions, input_options, tree_options


def _options(output_format: str, files: tuple[str | None, str | None], as_of: dt.date | None,
             color: bool | None, config_file: str | None, paths: tuple[str, ...], clusters: tuple[Any, ...],
             ) -> AuditOptions:
    """The audit behind the trace: every rule, unless the configuration file selects them, with its posture
    and exceptions (`apply_project_config`, as every auditing command)."""
    exceptions_file, posture_file = files
    options = AuditOptions(output_format=output_format, output_files={}, exceptions_file=exceptions_file,
                           posture_file=posture_file, fail_on="error", require_complete=False, only_rules=(),
                           skip_rules=(), as_of=as_of, color=color, config_file=config_file)
    apply_project_config(options, {"paths": paths, "clusters": clusters})
    return options


def _trace_kinds(live: bool) -> tuple[str, ...]:
    """What a live trace lists besides the selected rules' kinds: the Leases and EndpointSlices of its hops,
    and every kind a rule reads, so that a configuration selecting few rules still draws whole chains."""
    from auditor import kinds

    if not live:
        return ()
    from auditor import registry
    from auditor.cli.live import kinds_for

    return (*kinds.TRACE_KINDS, *kinds_for(registry.load_rules()))


def traced(source: Source, prepared: Any, options: AuditOptions, target: Any) -> tuple[Any, Any]:
    """(the trace of `target`, the audit it was drawn from): in each cluster of a GitOps tree of several,
    each chain named by its cluster."""
    from auditor.trace import trace as build_trace
    from auditor.trace import trace_clusters

    scopes: list[Any] = []

    def evaluate_scope(snapshot: Any) -> Any:
        scopes.append(evaluate(snapshot, prepared, options))
        return scopes[-1]

    result = audit_source(source, prepared, options, extra_kinds=_trace_kinds(source.live), fleet=False,
                          evaluate_snapshot=evaluate_scope)
    if result.exposure_model is None and result.repository is not None and result.fleet:
        # audit_tree evaluates the clusters in the order it lists them (result.fleet).
        return trace_clusters([(c.name, part) for c, part in zip(result.fleet, scopes, strict=True)], target), result
    return build_trace(result, target), result


@click.command()
@click.argument("target", metavar="TARGET")
@click.argument("paths", nargs=-1, metavar="[PATH...]", type=INPUT_PATH)
@click.option("--live", is_flag=True, help=LIVE_HELP + " Also lists EndpointSlices and Leases.")
@click.option("-o", "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="The trace on standard output as text or JSON (auditor/data/trace.schema.json).")
@click.option("--exceptions", "exceptions_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Exception list (default: ./exceptions.yaml if present, else the bundled one).")
@click.option("--posture", "posture_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Posture file (default: ./audit-posture.yaml if present, else the platform defaults).")
@click.option("--as-of", callback=_parse_date, metavar="DATE",
              help="Judge exception expiry as of DATE (YYYY-MM-DD; default: today, UTC).")
@click.option("--color/--no-color", default=None,
              help="Colour the text (default: only on a terminal, never with NO_COLOR).")
@config_option
@input_options
@tree_options
@cluster_options(fleet=False)
@click.pass_context
def trace(ctx: click.Context, target: str, paths: tuple[str, ...], live: bool, output_format: str,
          exceptions_file: str | None, posture_file: str | None, as_of: dt.date | None, color: bool | None,
          config_file: str | None, inputs: InputOptions, clusters: tuple[Any, ...], audit_unreached: bool,
          cluster: ClusterOptions) -> None:
    """Trace how traffic reaches TARGET, hop by hop, and name the first broken hop.

    TARGET is a hostname (argocd.cluster.lan; wildcard listener hostnames
    match as Gateway API says), Service/NAMESPACE/NAME or Gateway/NAMESPACE/NAME.
    Each chain: the L2/BGP announcement (live: the node holding the L2 lease),
    the address (the LoadBalancer IP from its pool, or the node addresses),
    the Gateway listener and its TLS certificate, the route, the backend
    Service and port, its endpoints (live: the ready ones; offline: the
    workloads its selector selects), each hop with its evidence.

    PATH... is read as by `audit PATH...` (a GitOps tree of several clusters
    is traced in each); without PATH, the configuration file
    (.cilium-audit.yaml, see --config and docs/config.md) says what to read.

    Exit 0 when every chain is whole, 1 when a hop is broken, 3 when a hop
    could not be seen, 2 for an unknown target (with the closest known ones).
    """
    from auditor.trace import parse_target
    from auditor.trace.render import render_json, render_text

    options = _options(output_format, (exceptions_file, posture_file), as_of, color, config_file, paths,
                       clusters)
    source = configured_source(ctx, Source(paths, live, inputs, cluster, clusters, audit_unreached), options)
    wanted = parse_target(target)
    options.require_complete = live or options.require_complete  # as `audit live`: always complete
    found, result = traced(source, prepare(options), options, wanted)
    if output_format == "json":
        text = render_json(found, result)
    else:
        text = render_text(found, result, color=use_colour(options), width=report_width())
    click.echo(text, nl=False, color=(output_format == "text" and use_colour(options)) or None)
    ctx.exit(found.exit_code)


__all__ = ["STDOUT", "trace", "traced"]
