"""`audit trace TARGET [PATH...] | --live`: the chain from the LAN to a hostname, Service or Gateway, hop by hop.

The input is read and audited as by `audit PATH...` (or `audit live` with
--live, which also lists EndpointSlices and Leases), every rule selected;
the chains come from the exposure model (auditor/trace/). Exit 0 when every
chain is whole, 1 when a hop is broken, 3 when a hop could not be seen (or
the cluster could not be read), 2 for an unknown target (with the closest
known ones) or a usage or input error.
"""

from __future__ import annotations

import datetime as dt

import click

from auditor.cli.common import STDOUT, AuditOptions, _parse_date, prepare, report_width, use_colour
from auditor.cli.completion import INPUT_PATH
from auditor.cli.exposure_cmd import LIVE_HELP, audit_source, check_source
from auditor.cli.live import ClusterOptions, cluster_options
from auditor.cli.scan import InputOptions, input_options


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
@input_options
@cluster_options(fleet=False)
@click.pass_context
def trace(ctx: click.Context, target: str, paths: tuple[str, ...], live: bool, output_format: str,
          exceptions_file: str | None, posture_file: str | None, as_of: dt.date | None, color: bool | None,
          inputs: InputOptions, cluster: ClusterOptions) -> None:
    """Trace how traffic reaches TARGET, hop by hop, and name the first broken hop.

    TARGET is a hostname (argocd.cluster.lan; wildcard listener hostnames
    match as Gateway API says), Service/NAMESPACE/NAME or Gateway/NAMESPACE/NAME.
    Each chain: the L2/BGP announcement (live: the node holding the L2 lease),
    the address (the LoadBalancer IP from its pool, or the node addresses),
    the Gateway listener and its TLS certificate, the route, the backend
    Service and port, its endpoints (live: the ready ones; offline: the
    workloads its selector selects), each hop with its evidence.

    Exit 0 when every chain is whole, 1 when a hop is broken, 3 when a hop
    could not be seen, 2 for an unknown target (with the closest known ones).
    """
    from auditor import kinds
    from auditor.trace import parse_target
    from auditor.trace import trace as build_trace
    from auditor.trace.render import render_json, render_text

    check_source(ctx, paths, live)
    wanted = parse_target(target)
    options = AuditOptions(output_format=output_format, output_files={}, exceptions_file=exceptions_file,
                           posture_file=posture_file, fail_on="error", require_complete=live, only_rules=(),
                           skip_rules=(), as_of=as_of, color=color)
    prepared = prepare(options)
    result = audit_source(paths, live, inputs, cluster, prepared, options, extra_kinds=kinds.TRACE_KINDS,
                          fleet=False)
    found = build_trace(result, wanted)
    if output_format == "json":
        text = render_json(found, result)
    else:
        text = render_text(found, result, color=use_colour(options), width=report_width())
    click.echo(text, nl=False, color=(output_format == "text" and use_colour(options)) or None)
    ctx.exit(found.exit_code)


__all__ = ["STDOUT", "trace"]
