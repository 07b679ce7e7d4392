"""`audit [scan] PATH...`: audit offline input (dumps, manifests, GitOps trees, stdin)."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from auditor.cli.common import AuditOptions, PrepareOnce, audit_options, evaluate, finish, report
from auditor.cli.completion import INPUT_PATH
from auditor.errors import InputError

STDIN = "-"


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


@dataclass(frozen=True)
class InputOptions:
    """The options of offline input: limits and the Cilium Helm values given beside it."""

    max_file_bytes: int
    max_files: int
    max_alias_expansion: int
    max_yaml_nodes: int
    max_json_nodes: int
    allow_no_objects: bool
    strict_input: bool
    cilium_values: tuple[str, ...]
    exclude: Callable[[str], bool] | None = None  # the configuration file's `exclude:` (docs/config.md)
    jobs: int = 0  # processes parsing a folder's files (0: the CPUs available; docs/performance.md)


# The parameters of the offline-only options (commands that also read clusters refuse them with --live).
OFFLINE_ONLY = ("max_file_bytes", "max_files", "max_alias_expansion", "max_yaml_nodes", "max_json_nodes",
                "allow_no_objects", "strict_input", "cilium_values", "jobs")


def input_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the offline input options, collected into `inputs: InputOptions`."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        kwargs["inputs"] = InputOptions(**{name: kwargs.pop(name) for name in OFFLINE_ONLY})
        return command(**kwargs)

    decorators = [
        click.option("--max-file-bytes", type=click.IntRange(min=1), default=768 * 1024 * 1024, show_default=True,
                     help="Refuse input files larger than this."),
        click.option("--max-files", type=click.IntRange(min=1), default=50_000, show_default=True,
                     help="Refuse folders holding more manifest files than this."),
        click.option("--max-alias-expansion", type=click.IntRange(min=0), default=100_000, show_default=True,
                     help="Refuse YAML documents whose aliases add more nodes than this."),
        click.option("--max-yaml-nodes", type=click.IntRange(min=1), default=2_000_000, show_default=True,
                     help="Refuse YAML files that would build more nodes than this (estimated before parsing)."),
        click.option("--max-json-nodes", type=click.IntRange(min=1), default=14_000_000, show_default=True,
                     help="Refuse JSON files that could hold more values than this (estimated before parsing)."),
        click.option("--allow-no-objects", is_flag=True,
                     help="Input without any Kubernetes object is not an error: every rule is then not-run "
                          "(for pre-commit runs on commits that change only other YAML)."),
        click.option("--strict-input", is_flag=True,
                     help="A file of a folder that cannot be read stops the run (exit 2, one line naming it) instead "
                          "of being listed as an input problem (the run is then incomplete: exit 3)."),
        click.option("--cilium-values", "cilium_values", metavar="FILE", multiple=True, type=click.Path(),
                     help="Cilium Helm values file the cluster is installed with (repeatable; a later file wins, "
                          "as with helm -f). The cilium-config ConfigMap, when in the input, still wins."),
        click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Processes parsing the files of a folder (0: one per CPU available; 1: no workers). "
                          "The output is the same whatever the number."),
    ]
    decorated: Callable[..., Any] = wrapper
    for decorator in reversed(decorators):
        decorated = decorator(decorated)
    return decorated


def read_input(paths: tuple[str, ...], inputs: InputOptions, posture: Callable[[], Any],
               meanwhile: Callable[[], object] | None = None) -> Any:
    """The snapshot of offline input `paths` (with the Cilium values files given beside it); `posture`
    is asked for once the files are read, `meanwhile` called before (see `read_paths`)."""
    from auditor.sources.files import read_paths

    if STDIN in paths and stdin_is_closed():
        raise InputError("<stdin>: standard input is closed: nothing to read (pipe the input in, or give a file)")
    values_files = cilium_values_files(inputs)
    # freeze: what was read stays for the rest of this short-lived process (docs/performance.md).
    snapshot = read_paths(list(paths), limits=read_limits(inputs), allow_no_objects=inputs.allow_no_objects,
                          input_problems=not inputs.strict_input, freeze=True, meanwhile=meanwhile)
    return with_values(snapshot, values_files, posture())


def cilium_values_files(inputs: InputOptions) -> list[Any]:
    """The `--cilium-values` files, read before any input is (a broken one ends the run first)."""
    if not inputs.cilium_values:
        return []  # (and the Helm values module loads later, while a parallel read's workers parse)
    from auditor.cilium.helm_values import read_values_file

    return [read_values_file(path) for path in inputs.cilium_values]


def read_limits(inputs: InputOptions) -> Any:
    from auditor.sources.files import ReadLimits

    return ReadLimits(max_file_bytes=inputs.max_file_bytes, max_files=inputs.max_files,
                      max_alias_expansion=inputs.max_alias_expansion, max_yaml_nodes=inputs.max_yaml_nodes,
                      max_json_nodes=inputs.max_json_nodes, exclude=inputs.exclude, jobs=inputs.jobs)


def with_values(snapshot: Any, values_files: list[Any], posture: Any) -> Any:
    """`snapshot` with the Cilium values files given beside it (and a snapshot's cluster named)."""
    if snapshot.cluster is not None:  # a snapshot: name its cluster as the posture does (docs/live.md)
        snapshot.cluster.label = posture.cluster_label(snapshot.cluster.fingerprint)
    snapshot.cilium_values = values_files
    snapshot.inputs.extend(f"--cilium-values {values.ref.name}" for values in values_files)
    return snapshot


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


def audit_tree_input(path: str, inputs: InputOptions, clusters: tuple[Any, ...], audit_unreached: bool,
                     evaluate_snapshot: Callable[[Any], Any], posture: Callable[[], Any],
                     meanwhile: Callable[[], object] | None = None) -> tuple[Any, Any]:
    """A folder read once as a GitOps tree (docs/input.md, "GitOps repositories"): (the merged result of
    its clusters, None), or (None, its snapshot) when the folder is plain manifests, audited as before."""
    from auditor.sources.gitops.tree_read import read_tree

    values_files = cilium_values_files(inputs)
    tree = read_tree(path, limits=read_limits(inputs), clusters=clusters, audit_unreached=audit_unreached,
                     allow_no_objects=inputs.allow_no_objects, input_problems=not inputs.strict_input, freeze=True,
                     meanwhile=meanwhile)
    if tree.plain:
        return None, with_values(tree.snapshot, values_files, posture())
    from auditor.fleet import audit_tree

    return audit_tree(tree, evaluate_snapshot, values_files), None


def configured_input(paths: tuple[str, ...], clusters: tuple[Any, ...], inputs: InputOptions,
                     options: AuditOptions) -> tuple[tuple[str, ...], tuple[Any, ...], InputOptions]:
    """The paths, clusters and read limits of the run once the configuration file is applied (docs/config.md):
    its `paths` when the command line names none, its `clusters` (relative to the audited folder) unless
    --cluster is given, and its `exclude` patterns, which also drop files named on the command line (as
    pre-commit passes them)."""
    project = options.project
    if project is None:
        if not paths:
            raise click.UsageError("Missing argument 'PATH...' (or a .cilium-audit.yaml naming `paths:`; "
                                   "docs/config.md)")
        return paths, clusters, inputs
    from auditor.project_config import excluder
    from auditor.project_config.effective import value_of

    paths = paths or tuple(value_of(options.settings, "paths"))
    if not clusters and value_of(options.settings, "clusters"):
        clusters = _configured_clusters(value_of(options.settings, "clusters"), paths)
    exclude = excluder(project.folder, value_of(options.settings, "exclude"))
    if exclude is None:
        return paths, clusters, inputs
    kept = tuple(path for path in paths if path == STDIN or not exclude(path))
    if not kept:
        what = f"every PATH is excluded by {options.settings['exclude'].origin} (exclude:): nothing to audit"
        if not inputs.allow_no_objects:
            raise click.UsageError(what)
        click.echo(f"audit: {what}", err=True)  # a pre-commit run on excluded files only: nothing failed
        raise click.exceptions.Exit(0)
    return kept, clusters, dataclasses.replace(inputs, exclude=exclude)


def _configured_clusters(clusters: tuple[tuple[str, str], ...], paths: tuple[str, ...]) -> tuple[Any, ...]:
    """The file's `clusters` as `--cluster` specs: each path relative to the one folder audited."""
    from auditor.sources.gitops.layout import ClusterSpec

    if len(paths) != 1 or not os.path.isdir(paths[0]):
        return ()  # files (a pre-commit run): no tree to split, the clusters do not apply
    root = os.path.abspath(paths[0])
    return tuple(ClusterSpec(name, os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/"))
                 for name, path in clusters)


def tree_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --cluster and --audit-unreached (`clusters`, `audit_unreached`): how one GitOps folder is read."""
    command = click.option(
        "--audit-unreached", is_flag=True,
        help="A GitOps folder: also audit what no cluster deploys, as a scope of its own named (unreached).")(command)
    return click.option(
        "--cluster", "clusters", metavar="NAME=PATH", multiple=True, callback=_cluster_specs,
        help="A GitOps folder: audit PATH (a folder or file of it, read as Flux reads a path) as the cluster NAME, "
             "instead of the clusters the tree's Flux and Argo CD objects say (repeatable).")(command)


# The parameters of tree_options (offline only too: commands that also read clusters refuse them with --live).
TREE_ONLY = ("clusters", "audit_unreached")


def read_offline(paths: tuple[str, ...], inputs: InputOptions, clusters: tuple[Any, ...], audit_unreached: bool,
                 prepared: Callable[[], Any], evaluate_snapshot: Callable[[Any], Any]) -> tuple[Any, Any]:
    """Offline input read as `audit PATH...` reads it: one folder as a GitOps tree, (the result of its clusters
    audited by `evaluate_snapshot`, None), or (None, the snapshot) of plain manifests, files or stdin.

    `prepared` gives the run's `Prepared` (`PrepareOnce`): it is first called before any file is read,
    once the workers of a parallel read have started, so that loading the rules overlaps their parsing."""
    def posture() -> Any:
        return prepared().posture

    if len(paths) == 1 and paths[0] != STDIN and os.path.isdir(paths[0]):
        return audit_tree_input(paths[0], inputs, clusters, audit_unreached, evaluate_snapshot, posture, prepared)
    if clusters or audit_unreached:
        raise click.UsageError("--cluster and --audit-unreached read one GitOps folder: give exactly one folder")
    return None, read_input(paths, inputs, posture, prepared)


@click.command()
@click.argument("paths", nargs=-1, required=False, metavar="PATH...", type=INPUT_PATH)
@audit_options
@input_options
@tree_options
@click.pass_context
def scan(ctx: click.Context, paths: tuple[str, ...], options: AuditOptions, inputs: InputOptions,
         clusters: tuple[Any, ...], audit_unreached: bool) -> None:
    """Audit offline input.

    PATH is a `kubectl get -o json|yaml` List, a manifest file (one object or
    several YAML documents), a folder of manifests read recursively (*.yaml,
    *.yml, *.json; hidden folders and Helm chart templates skipped), or - for
    standard input.

    A file of a folder that cannot be read (invalid YAML, a duplicate key, a
    local tag in a manifest) is an input problem: listed in every report,
    none of its objects used, the rest audited, and the run exits 3
    (incomplete); --strict-input stops at it instead (exit 2).

    One folder is also read as a GitOps repository: each cluster its Flux and
    Argo CD objects deploy (or each --cluster NAME=PATH) is audited on its own.

    Without PATH, the paths of the configuration file (.cilium-audit.yaml,
    see --config and docs/config.md) are audited.
    """
    paths, clusters, inputs = configured_input(paths, clusters, inputs, options)
    if STDIN in paths and stdin_is_closed():
        raise InputError("<stdin>: standard input is closed: nothing to read (pipe the input in, or give a file)")
    prepared = PrepareOnce(options)
    result, snapshot = read_offline(paths, inputs, clusters, audit_unreached, prepared,
                                    lambda scope: evaluate(scope, prepared(), options))
    if result is not None:
        ctx.exit(report(result, prepared(), options))
    ctx.exit(finish(snapshot, prepared(), options))
