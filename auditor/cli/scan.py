"""`audit [scan] PATH...`: audit offline input (dumps, manifests, GitOps trees, stdin)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from auditor.cli.common import AuditOptions, audit_options, evaluate, finish, prepare, report
from auditor.cli.completion import INPUT_PATH
from auditor.errors import InputError

STDIN = "-"


def _cluster_specs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[Any, ...]:
    """`--cluster NAME=PATH` values as `ClusterSpec`s (auditor.sources.gitops), each checked."""
    if not values:
        return ()
    from auditor.sources.gitops.layout import parse_cluster_arg

    specs = []
    for value in values:
        try:
            specs.append(parse_cluster_arg(value))
        except ValueError as error:
            raise click.BadParameter(str(error).removeprefix(f"--cluster {value!r}: ")) from None
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise click.BadParameter(f"cluster {next(n for n in names if names.count(n) > 1)!r} given twice")
    return tuple(specs)


def stdin_is_closed() -> bool:
    """Whether standard input cannot be read at all (`audit - <&-` starts Python without one)."""
    stream = sys.stdin
    if stream is None or getattr(stream, "closed", False):
        return True
    try:
        os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError) as error:
        # A stream without a descriptor (a test's stand-in) can still be read; a bad descriptor cannot.
        return isinstance(error, OSError) and not isinstance(error, ValueError)
    return False


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...", type=INPUT_PATH)
@audit_options
@click.option("--max-file-bytes", type=click.IntRange(min=1), default=768 * 1024 * 1024, show_default=True,
              help="Refuse input files larger than this.")
@click.option("--max-files", type=click.IntRange(min=1), default=50_000, show_default=True,
              help="Refuse folders holding more manifest files than this.")
@click.option("--max-alias-expansion", type=click.IntRange(min=0), default=100_000, show_default=True,
              help="Refuse YAML documents whose aliases add more nodes than this.")
@click.option("--max-yaml-nodes", type=click.IntRange(min=1), default=2_000_000, show_default=True,
              help="Refuse YAML files that would build more nodes than this (estimated before parsing).")
@click.option("--max-json-nodes", type=click.IntRange(min=1), default=14_000_000, show_default=True,
              help="Refuse JSON files that could hold more values than this (estimated before parsing).")
@click.option("--allow-no-objects", is_flag=True,
              help="Input without any Kubernetes object is not an error: every rule is then not-run "
                   "(for pre-commit runs on commits that change only other YAML).")
@click.option("--cilium-values", "cilium_values", metavar="FILE", multiple=True, type=click.Path(),
              help="Cilium Helm values file the cluster is installed with (repeatable; a later file wins, "
                   "as with helm -f). The cilium-config ConfigMap, when in the input, still wins.")
@click.option("--cluster", "clusters", metavar="NAME=PATH", multiple=True, callback=_cluster_specs,
              help="A GitOps folder: audit PATH (a folder or file of it, read as Flux reads a path) as the "
                   "cluster NAME, instead of the clusters the tree's Flux and Argo CD objects say (repeatable).")
@click.option("--audit-unreached", is_flag=True,
              help="A GitOps folder: also audit what no cluster deploys, as a scope of its own named (unreached).")
@click.pass_context
def scan(ctx: click.Context, paths: tuple[str, ...], options: AuditOptions, max_file_bytes: int, max_files: int,
         max_alias_expansion: int, max_yaml_nodes: int, max_json_nodes: int, allow_no_objects: bool,
         cilium_values: tuple[str, ...], clusters: tuple[Any, ...], audit_unreached: bool) -> None:
    """Audit offline input.

    PATH is a `kubectl get -o json|yaml` List, a manifest file (one object or
    several YAML documents), a folder of manifests read recursively (*.yaml,
    *.yml, *.json; hidden folders and Helm chart templates skipped), or - for
    standard input.
    """
    from auditor.cilium.helm_values import read_values_file
    from auditor.sources.files import ReadLimits, read_paths

    if STDIN in paths and stdin_is_closed():
        raise InputError("<stdin>: standard input is closed: nothing to read (pipe the input in, or give a file)")
    prepared = prepare(options)
    values_files = [read_values_file(path) for path in cilium_values]
    limits = ReadLimits(max_file_bytes=max_file_bytes, max_files=max_files, max_alias_expansion=max_alias_expansion,
                        max_yaml_nodes=max_yaml_nodes, max_json_nodes=max_json_nodes)
    if len(paths) == 1 and paths[0] != STDIN and os.path.isdir(paths[0]):
        # A folder is read as a GitOps tree (docs/input.md, "GitOps repositories"); plain manifests as before.
        from auditor.sources.gitops.audit_scopes import read_tree

        tree = read_tree(paths[0], limits=limits, clusters=clusters, audit_unreached=audit_unreached,
                         allow_no_objects=allow_no_objects, freeze=True)
        if not tree.plain:
            from auditor.fleet import audit_tree

            result = audit_tree(tree, lambda snapshot: evaluate(snapshot, prepared, options), values_files)
            ctx.exit(report(result, prepared, options))
        snapshot = tree.snapshot
    elif clusters or audit_unreached:
        raise click.UsageError("--cluster and --audit-unreached read one GitOps folder: give exactly one folder")
    else:
        snapshot = read_paths(list(paths), limits=limits, allow_no_objects=allow_no_objects, freeze=True)
    if snapshot.cluster is not None:  # a snapshot: name its cluster as the posture does (docs/live.md)
        snapshot.cluster.label = prepared.posture.cluster_label(snapshot.cluster.fingerprint)
    snapshot.cilium_values = values_files
    snapshot.inputs.extend(f"--cilium-values {values.ref.name}" for values in values_files)
    ctx.exit(finish(snapshot, prepared, options))
