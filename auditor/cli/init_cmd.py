"""`audit init [PATH] | --live`: write a starter `.cilium-audit.yaml` that matches what is there (docs/config.md).

It reads the repository (as `audit PATH` reads a GitOps tree) or the cluster
(as `audit live` does), derives the posture the input shows, audits the input
against it with no exception, and writes what that audit says: the clusters
found, the rules that cannot run here (not applicable, each with why), and one
exception entry per way in that is drift today (auditor/cli/init_starter.py).
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import click

from auditor.cli.common import _parse_date
from auditor.cli.exposure_cmd import CLUSTER_ONLY, _set_on_command_line
from auditor.cli.live import ClusterOptions, cluster_options
from auditor.errors import AuditError


def _scope_objects(tree: Any) -> dict[str, list[tuple[str, int, str]]]:
    """What each scope of a tree read holds: (file, line, effective namespace) of every object, sorted."""
    return {scope.name: sorted((str(o.source.path), o.source.line or 0, o.namespace or "")
                               for o in scope.snapshot.objects)
            for scope in tree.scopes if scope.snapshot is not None}


def _read_offline(path: str) -> tuple[list[tuple[str, Any]], Any, dict[str, str], list[str]]:
    """(the scopes' snapshots, the tree read, the clusters as `name: folder`, remarks) of the folder `path`.

    The clusters are written by folder only when naming them so reads the tree exactly as the layout's
    entry points do (the same objects, each with the same namespace, in each cluster); otherwise they are
    left to the entry points, and a remark names them."""
    from auditor.repository import ScopeKind
    from auditor.sources.gitops.layout import ClusterSpec
    from auditor.sources.gitops.tree_read import read_tree

    tree = read_tree(path, input_problems=True)
    if tree.plain:
        return [(os.path.basename(os.path.abspath(path)), tree.snapshot)], None, {}, []
    scopes = [(scope.name, scope.snapshot) for scope in tree.scopes if scope.snapshot is not None]
    repository = tree.repository
    assert repository is not None  # a tree that is not plain has its layout
    found: dict[str, str] = {} if repository.single_scope else {
        scope.name: scope.root for scope in repository.scopes if scope.kind is ScopeKind.CLUSTER}
    if not found:
        return scopes, tree, {}, []
    if all(found.values()):
        named = read_tree(path, input_problems=True, clusters=[ClusterSpec(n, root) for n, root in found.items()])
        if _scope_objects(named) == _scope_objects(tree):
            return scopes, tree, found, []
    listed = ", ".join(f"{name} ({root or 'no folder of its own'})" for name, root in sorted(found.items()))
    return scopes, tree, {}, [f"clusters: {listed}, found by the layout's entry points; not written by folder, "
                              "which would read them differently (clusters: NAME: PATH names them by hand)"]


def _read_live(cluster: ClusterOptions, rule_set: Any) -> Any:
    from auditor.cli.live import _read_options, _targets, kinds_for
    from auditor.posture import Posture
    from auditor.sources.live.progress import Progress
    from auditor.sources.live.reader import read_cluster

    targets = _targets(cluster, Posture())
    progress = Progress()
    try:
        return read_cluster(targets[0], kinds_for(rule_set), _read_options(cluster), progress).snapshot
    finally:
        progress.close()


def _refuse_overwrite(paths: list[str]) -> None:
    existing = [path for path in paths if os.path.lexists(path)]
    if existing:
        raise AuditError(f"{existing[0]}: already exists (--force replaces it; --dry-run prints what would be written)")


def _starter(path: str, live: bool, cluster: ClusterOptions, as_of: dt.date) -> tuple[str, str, str]:
    """(the configuration text, the exception list text, a one-line summary) for the input."""
    from auditor import engine, registry
    from auditor.cli import init_starter as starter
    from auditor.exceptions_list import ExceptionList
    from auditor.parsing.yaml_docs import LocatedConfig
    from auditor.posture import from_config
    from auditor.project_config import FILE_NAME

    rule_set = registry.select(registry.load_rules(), (), ())
    tree: Any = None
    clusters: dict[str, str] = {}
    if live:
        snapshot = _read_live(cluster, rule_set)
        scopes, source = [(snapshot.cluster.context or "cluster", snapshot)], f"the cluster of context " \
            f"{snapshot.cluster.context or '(in-cluster)'}"
    else:
        scopes, tree, clusters, remarks = _read_offline(path)
        source = f"the repository {path}"
    observed = starter.observe(scopes)
    if not live:
        observed = starter.Observed(observed.posture, (*remarks, *observed.remarks))
    posture = from_config(LocatedConfig(observed.posture, {}), os.path.join(path, FILE_NAME))
    nothing = ExceptionList(starter.EXCEPTIONS_FILE, [])

    def evaluate(snapshot: Any) -> Any:
        return engine.run(snapshot, rule_set, nothing, posture, as_of=as_of, require_complete=True)

    if tree is not None:
        from auditor.fleet import audit_tree

        result = audit_tree(tree, evaluate)
    else:
        result = evaluate(scopes[0][1])
    entries = starter.way_in_exceptions(result, as_of)
    declared = starter.not_applicable(result)
    if not declared and not any(r.status.value in ("passed", "failed") for r in result.rules):
        observed = starter.Observed(observed.posture, (starter.NOTHING_RAN, *observed.remarks))
    header = [f"Written by `audit init` from {source} as of {as_of.isoformat()} (docs/config.md).",
              "Review it before committing: it says what the input shows today, not what it should be."]
    config = starter.config_text(header, not live, clusters, observed, declared, starter.EXCEPTIONS_FILE)
    exceptions = starter.exceptions_text(header, entries)
    found = f"clusters {', '.join(sorted(clusters))}" if clusters else f"{len(scopes)} scope(s)"
    partial = sum(1 for rule in result.rules if rule.partial)
    summary = (f"{found}, {len(declared)} rule(s) not applicable ({partial} of them partial), "
               f"{len(entries)} way(s) in excepted until {as_of + dt.timedelta(days=starter.EXPIRY_DAYS)}")
    if result.input_problems:
        summary += f"; {len(result.input_problems)} file(s) could not be read (audit lists them)"
    return config, exceptions, summary


@click.command()
@click.argument("path", required=False, default=".", metavar="[PATH]",
                type=click.Path(exists=True, file_okay=False))
@click.option("--live", is_flag=True,
              help="Inspect the cluster of the kubeconfig context (the options of `audit live`) instead of a "
                   "repository; the files are written into PATH.")
@cluster_options(fleet=False)
@click.option("--force", is_flag=True, help="Replace the files if they exist.")
@click.option("--dry-run", is_flag=True, help="Print the files on standard output instead of writing them.")
@click.option("--as-of", callback=_parse_date, metavar="DATE",
              help="The day the exceptions' 30 days count from (YYYY-MM-DD; default: today, UTC).")
@click.pass_context
def init(ctx: click.Context, path: str, live: bool, cluster: ClusterOptions, force: bool, dry_run: bool,
         as_of: dt.date | None) -> None:
    """Write a starter .cilium-audit.yaml for the repository at PATH (default: .), or for a cluster (--live).

    It holds the clusters the GitOps layout deploys, the posture the input
    shows (exposure mode, LB-IPAM pool ranges, L2 announcements, the Cilium
    version line), requireComplete with every rule that cannot run on this
    input declared not applicable (with why), and the exception list file
    .cilium-audit-exceptions.yaml: one entry per way in that is drift today,
    reason TODO, expiring in 30 days. Existing files are never replaced
    without --force; --dry-run prints both instead.
    """
    from auditor.cli import init_starter as starter
    from auditor.project_config import FILE_NAME

    wrong = [] if live else _set_on_command_line(ctx, CLUSTER_ONLY)
    if wrong:
        raise click.UsageError(f"{', '.join(wrong)}: not without --live (they are for clusters)")
    as_of = as_of or dt.datetime.now(dt.timezone.utc).date()
    targets = [os.path.join(path, FILE_NAME), os.path.join(path, starter.EXCEPTIONS_FILE)]
    if not dry_run and not force:
        _refuse_overwrite(targets)
    config, exceptions, summary = _starter(path, live, cluster, as_of)
    if dry_run:
        click.echo(f"# --- {targets[0]}\n{config}---\n# --- {targets[1]}\n{exceptions}", nl=False)
        return
    for target, text in zip(targets, (config, exceptions), strict=True):
        with open(target, "w", encoding="utf-8") as stream:
            stream.write(text)
    click.echo(f"audit init: wrote {targets[0]} and {targets[1]}: {summary}. Next: replace each TODO, "
               "then run `audit` (it reads .cilium-audit.yaml).", err=True)
