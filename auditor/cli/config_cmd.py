"""`audit config [PATH...]`: the effective configuration, and where each value came from (docs/config.md)."""

from __future__ import annotations

import json
from typing import Any

import click

from auditor.cli.common import AuditOptions, _defaults, _flags, audit_options
from auditor.cli.completion import INPUT_PATH
from auditor.cli.scan import _cluster_specs


@click.command()
@click.argument("paths", nargs=-1, required=False, metavar="[PATH...]", type=INPUT_PATH)
@audit_options
@click.option("--cluster", "clusters", metavar="NAME=PATH", multiple=True, callback=_cluster_specs,
              help="As for `audit PATH`: shown as the clusters setting given on the command line.")
def config(paths: tuple[str, ...], options: AuditOptions, clusters: tuple[Any, ...]) -> None:
    """Print the effective configuration of `audit PATH...` run with the same options.

    Each setting with its value and where it came from: a command-line option
    (flag --NAME), the configuration file (FILE:LINE), the tool's default, or
    the built-in platform posture and exception list. The configuration file
    is --config FILE, else $AUDIT_CONFIG, else the .cilium-audit.yaml found
    walking up from PATH (or the working folder) to the repository root. Every
    rule id the file names is checked: a wrong one is an error (exit 2).
    -o json prints the same as JSON.
    """
    from auditor import registry
    from auditor.project_config import effective

    if options.output_format not in ("text", "json") or options.output_files:
        raise click.UsageError("audit config prints text or JSON on standard output (-o text|json)")
    settings = options.settings
    if options.project is None:  # no file: every setting is the command line's or the default
        settings = effective.resolve(None, _flags(options, {"paths": paths, "clusters": clusters}), _defaults(None))
    else:
        options.project.check_rules(registry.load_rules().ids)
    if options.output_format == "json":
        click.echo(json.dumps(effective.to_dict(settings), indent=2, ensure_ascii=False))
    else:
        click.echo(effective.render_text(settings), nl=False)
