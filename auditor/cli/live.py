"""`audit live`, `audit snapshot`, `audit rbac`: reading running clusters (docs/live.md).

The kubernetes client is imported only inside these commands' bodies, when
they run (`auditor.sources.live`), never at start-up.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from auditor.cli.common import (
    AuditOptions,
    Prepared,
    audit_options,
    evaluate,
    prepare,
    report,
    warm_up,
)
from auditor.errors import EXIT_INCOMPLETE, EXIT_OK, AuditError
from auditor.gc_pause import collector_paused

if TYPE_CHECKING:
    from auditor.sources.live.reader import ReadOptions
    from auditor.sources.live.target import Target

Command = TypeVar("Command", bound=Callable[..., Any])
Result = TypeVar("Result")

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_SIZE = re.compile(r"^(\d+)\s*(B|KiB|MiB|GiB|K|M|G|Ki|Mi|Gi)?$")
_SIZE_UNITS = {None: 1, "B": 1, "K": 1024, "Ki": 1024, "KiB": 1024, "M": 1024**2, "Mi": 1024**2, "MiB": 1024**2,
               "G": 1024**3, "Gi": 1024**3, "GiB": 1024**3}
MIN_RESPONSE_BYTES = 64 * 1024  # a discovery document is tens of kilobytes


def _parse_timeout(ctx: click.Context | None, param: click.Parameter | None, value: str) -> float | None:
    """kubectl's --request-timeout: `30s`, `1m`, `500ms`, a plain number of seconds; 0 = no timeout."""
    match = _DURATION.match(value.strip())
    if not match:
        raise click.BadParameter(f"{value!r} is not a duration (e.g. 30s, 1m, 0 for none)")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    return seconds or None


def _parse_size(ctx: click.Context | None, param: click.Parameter | None, value: str) -> int:
    """A size in bytes: `64MiB`, `512KiB`, `1GiB`, a plain number of bytes (binary units, as kubectl's quantities)."""
    match = _SIZE.match(value.strip())
    if not match:
        raise click.BadParameter(f"{value!r} is not a size (e.g. 64MiB, 512KiB, 1GiB)")
    size = int(match.group(1)) * _SIZE_UNITS[match.group(2)]
    if size < MIN_RESPONSE_BYTES:
        raise click.BadParameter(f"{value!r} is below {MIN_RESPONSE_BYTES // 1024} KiB, too small for discovery")
    return size


def expected_clusters(values: tuple[str, ...]) -> tuple[str, ...]:
    """The --expect-cluster values (each may be comma-separated, as EXPECT_CLUSTER is).

    Given, but with nothing in it (`--expect-cluster ""`, `EXPECT_CLUSTER=", ,"`), is a usage
    error: silently running without the guard is exactly what the option exists to prevent.
    """
    expected = tuple(part.strip() for value in values for part in value.split(",") if part.strip())
    if values and not expected:
        from auditor.sources.live.safe_text import printable

        shown = printable(", ".join(repr(value) for value in values))
        raise click.UsageError(f"--expect-cluster / EXPECT_CLUSTER is set but names no cluster ({shown}): give a "
                               "fingerprint or a posture label, or unset it")
    return expected


@dataclass(frozen=True)
class ClusterOptions:
    """The options naming the cluster(s) to read and bounding how (docs/live.md, "Connecting")."""

    kubeconfig: str | None
    contexts: tuple[str, ...]
    all_contexts: bool
    timeout: float | None
    exec_timeout: float | None
    max_response_size: int
    max_pages: int
    expect: tuple[str, ...]
    concurrency: int
    chunk_size: int
    max_chunk_size: int
    max_retries: int


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _cluster_option_decorators(fleet: bool) -> list[Decorator]:
    context_help = ("Kubeconfig context to audit (default: the current one); repeat it to audit a fleet."
                    if fleet else "Kubeconfig context to read (default: the current one).")
    decorators: list[Decorator] = [
        click.option("--kubeconfig", metavar="FILE", type=click.Path(dir_okay=False),
                     help="Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config; in a pod without "
                          "either, the pod's service account)."),
        click.option("--context", "contexts", metavar="NAME", multiple=fleet, help=context_help),
        click.option("--request-timeout", default="30s", show_default=True, callback=_parse_timeout,
                     metavar="DURATION", help="The most one request (each retry alike) may take, connecting "
                                              "and reading the whole answer included (0: no limit)."),
        click.option("--exec-timeout", default="60s", show_default=True, callback=_parse_timeout,
                     metavar="DURATION", help="The most a kubeconfig exec credential plugin may run (0: no limit)."),
        click.option("--max-response-size", default="64MiB", show_default=True, callback=_parse_size,
                     metavar="SIZE", help="The largest answer read; a larger one fails what it was for."),
        click.option("--max-pages", type=click.IntRange(1), default=1000, show_default=True,
                     help="The most pages one list may take (re-lists included)."),
        click.option("--expect-cluster", "expect_cluster", metavar="VALUE", multiple=True, envvar="EXPECT_CLUSTER",
                     help="Refuse to audit unless the cluster's fingerprint, or its label in the posture file "
                          "(clusters:), is VALUE (repeatable; env EXPECT_CLUSTER)."),
        click.option("--concurrency", type=click.IntRange(1, 64), default=8, show_default=True,
                     help="Kinds listed at once (per cluster)."),
        click.option("--chunk-size", type=click.IntRange(0), default=500, show_default=True,
                     help="Objects in a list's first page (limit/continue; 0: unpaginated)."),
        click.option("--max-chunk-size", type=click.IntRange(1), default=5000, show_default=True,
                     help="Objects in a later page, which is sized to what the server says is left."),
        click.option("--max-retries", type=click.IntRange(0, 20), default=4, show_default=True,
                     help="Retries of a request that got 429, 5xx, a timeout or a dropped connection."),
    ]
    if fleet:
        decorators.append(click.option("--all-contexts", is_flag=True,
                                       help="Audit every context of the kubeconfig (a fleet)."))
    return decorators


def _cluster_options_from(kwargs: dict[str, Any]) -> ClusterOptions:
    """Pop the cluster options out of a command's keyword arguments."""
    contexts = kwargs.pop("contexts")
    if isinstance(contexts, str):
        contexts = (contexts,)
    return ClusterOptions(
        kubeconfig=kwargs.pop("kubeconfig"),
        contexts=tuple(contexts or ()),
        all_contexts=kwargs.pop("all_contexts", False),
        timeout=kwargs.pop("request_timeout"),
        exec_timeout=kwargs.pop("exec_timeout"),
        max_response_size=kwargs.pop("max_response_size"),
        max_pages=kwargs.pop("max_pages"),
        expect=expected_clusters(kwargs.pop("expect_cluster")),
        concurrency=kwargs.pop("concurrency"),
        chunk_size=kwargs.pop("chunk_size"),
        max_chunk_size=kwargs.pop("max_chunk_size"),
        max_retries=kwargs.pop("max_retries"),
    )


def cluster_options(fleet: bool) -> Callable[[Command], Command]:
    """Options naming the cluster(s) and bounding how they are read, collected into `cluster: ClusterOptions`."""
    def decorate(command: Command) -> Command:
        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            kwargs["cluster"] = _cluster_options_from(kwargs)
            return command(**kwargs)

        decorated: Callable[..., Any] = wrapper
        for decorator in reversed(_cluster_option_decorators(fleet)):
            decorated = decorator(decorated)
        return decorated  # type: ignore[return-value]  # the same command, with options
    return decorate


def _targets(cluster: ClusterOptions, posture: Any) -> list[Target]:
    """Resolve the targets, attach posture labels, apply the target guard."""
    from auditor.sources.live import target as target_module

    if cluster.all_contexts and cluster.contexts:
        raise click.UsageError("give --context or --all-contexts, not both")
    targets = target_module.resolve(cluster.kubeconfig, cluster.contexts, cluster.all_contexts,
                                    concurrency=cluster.concurrency, exec_timeout=cluster.exec_timeout)
    for target in targets:
        target.label = posture.cluster_label(target.fingerprint)
    target_module.check_expected(targets, cluster.expect, posture.cluster_labels)
    return targets


def _read_options(cluster: ClusterOptions) -> ReadOptions:
    from auditor.sources.live.client import RetryPolicy
    from auditor.sources.live.reader import ReadOptions

    return ReadOptions(concurrency=cluster.concurrency, chunk_size=cluster.chunk_size,
                       max_chunk_size=cluster.max_chunk_size, max_pages=cluster.max_pages,
                       policy=RetryPolicy(max_retries=cluster.max_retries, timeout=cluster.timeout,
                                          max_response_bytes=cluster.max_response_size))


def kinds_for(rule_set: Any) -> list[str]:
    from auditor.rule import kinds_read_by

    return kinds_read_by(rule_set.rules)


@click.command()
@audit_options
@cluster_options(fleet=True)
@click.pass_context
def live(ctx: click.Context, options: AuditOptions, cluster: ClusterOptions) -> None:
    """Audit a running cluster, or several (a fleet), read-only.

    Lists, cluster-wide, exactly the kinds the selected rules read (Secrets
    as metadata only) and always behaves as --require-complete: a kind that
    could not be read (forbidden, timed out, 5xx after retries) makes the
    rules reading it report an error naming the resource and HTTP status, and
    the run exits 3. A kind whose CRD is not installed is "not served": there
    are none, and that is a pass. Every report names the context, API server,
    Kubernetes version and the cluster's fingerprint.
    """
    options.require_complete = True
    guess = None if cluster.all_contexts or len(cluster.contexts) > 1 else indexed_kinds(options)
    if guess is not None:
        ctx.exit(_audit_one_cluster(cluster, options, guess))
    prepared = prepare(options)
    # The collector off from the first page on, as for offline input (collector_paused): decoding the
    # pages and building the objects make no cycles worth its passes (~10 % of a 10k-Service read).
    with collector_paused(freeze=True):
        result = audit_clusters(cluster, prepared, options)
        code = report(result, prepared, options)
    ctx.exit(code)


def indexed_kinds(options: AuditOptions) -> list[str] | None:
    """The kinds the selected rules read as rules/index.json lists them (without importing a rule),
    or None when the selection names a rule the index does not hold (a plugin's, or a typo)."""
    import json
    import os

    import auditor_rules

    # The file registry.builtin_index reads (importing the registry imports the rule machinery).
    with open(os.path.join(os.path.dirname(os.path.abspath(auditor_rules.__file__)), "index.json"),
              encoding="utf-8") as file:
        entries: list[dict[str, Any]] = json.load(file)
    known = {entry["id"] for entry in entries}
    if not known.issuperset((*options.only_rules, *options.skip_rules)):
        return None
    keep = (set(options.only_rules) or known) - set(options.skip_rules)
    return sorted({gk for entry in entries if entry["id"] in keep for gk in entry["reads"]})


def _first_prepare_error(step: Callable[[], Result], options: AuditOptions) -> Result:
    """`step`, and when it fails, the error `prepare` finds if there is one (it comes first when
    prepare runs first), else the step's own."""
    try:
        return step()
    except (AuditError, click.ClickException):
        prepare(options)
        raise


def _audit_one_cluster(cluster: ClusterOptions, options: AuditOptions, guess: list[str]) -> int:
    """`audit live` of one cluster, its reading begun before the rules are loaded (issue 15).

    The rules' imports are most of the start-up besides the `kubernetes` client's, and need nothing
    from the cluster: `prepare` (rules, plugins, exceptions, posture, baseline, every check it
    makes) runs while the first answers are awaited. Which lists start first is chosen by `guess`
    (rules/index.json); what is read is the kinds of the rules `prepare` selected, whatever the
    guess (`ClusterReader.read`). The cluster is contacted before a configuration error is found,
    but the error reported is the one reported when `prepare` came first.
    """
    from auditor.cli.common import _load_posture
    from auditor.sources.live.progress import Progress
    from auditor.sources.live.reader import read_cluster

    posture_config = _first_prepare_error(lambda: _load_posture(options), options)  # for the target guard
    targets = _first_prepare_error(lambda: _targets(cluster, posture_config), options)
    box: dict[str, Prepared] = {}

    def meanwhile() -> list[str]:
        box["prepared"] = prepared = prepare(options)
        warm_up(options)
        return kinds_for(prepared.rule_set)

    progress = Progress()
    with collector_paused(freeze=True):  # (see `live`)
        try:
            result = read_cluster(targets[0], guess, _read_options(cluster), progress, meanwhile=meanwhile)
        finally:
            progress.close()
        prepared = box["prepared"]
        return report(evaluate(result.snapshot, prepared, options), prepared, options)


def audit_clusters(cluster: ClusterOptions, prepared: Any, options: AuditOptions, extra_kinds: tuple[str, ...] = (),
                   fleet: bool = True) -> Any:
    """Read the cluster(s) `cluster` names and audit them: one `AuditResult` (merged for a fleet).

    Lists the kinds the selected rules read, plus `extra_kinds` (what `audit trace` reads besides).
    """
    from auditor.sources.live.progress import Progress

    targets = _targets(cluster, prepared.posture)
    gks = sorted({*kinds_for(prepared.rule_set), *extra_kinds})
    read_options = _read_options(cluster)
    progress = Progress()
    if (len(targets) == 1 and not cluster.all_contexts) or not fleet:
        from auditor.sources.live.reader import read_cluster

        try:
            result = read_cluster(targets[0], gks, read_options, progress, meanwhile=lambda: warm_up(options))
        finally:
            progress.close()
        return evaluate(result.snapshot, prepared, options)
    from auditor.fleet import audit_fleet
    from auditor.sources.live.fleet import read_fleet

    try:
        with collector_paused(freeze=True):
            reads = read_fleet(targets, gks, read_options, progress)
    finally:
        progress.close()
    from auditor.sources.live.safe_text import printable

    for read in reads:
        if read.error:
            click.echo(printable(f"audit: error: {read.error} (its rules report errors; the others are audited)"),
                       err=True)
    return audit_fleet(reads, lambda snapshot: evaluate(snapshot, prepared, options))


@click.command()
@click.option("-o", "--output", required=True, metavar="FILE",
              help="Where to write the snapshot (- for standard output).")
@cluster_options(fleet=False)
@click.option("--posture", "posture_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Posture file, for cluster labels (default: ./audit-posture.yaml if present).")
@click.option("--rule", "only_rules", multiple=True, metavar="ID", help="Read only what this rule reads (repeatable).")
@click.option("--skip-rule", "skip_rules", multiple=True, metavar="ID", help="Do not read for this rule (repeatable).")
@click.pass_context
def snapshot(ctx: click.Context, output: str, cluster: ClusterOptions, posture_file: str | None,
             only_rules: tuple[str, ...], skip_rules: tuple[str, ...]) -> None:
    """Write what `audit live` reads to FILE, to audit later (`audit FILE`).

    The file is a kubectl-compatible List (kubectl reads it) with an
    `auditSnapshot` header: context, API server, Kubernetes version,
    fingerprint, time, the coverage of every kind and the served versions.
    Secrets are metadata only; no credential is ever written. Exits 3 (after
    writing the file) when a kind could not be read.
    """
    from auditor import posture, registry
    from auditor.snapshot import CoverageState
    from auditor.sources.live import dump
    from auditor.sources.live.progress import Progress
    from auditor.sources.live.reader import read_cluster
    from auditor.sources.live.safe_text import printable

    rule_set = registry.select(registry.load_rules(), only_rules, skip_rules)
    posture_config = posture.load(posture_file or posture.default_path())
    targets = _targets(cluster, posture_config)
    progress = Progress()
    try:
        result = read_cluster(targets[0], kinds_for(rule_set), _read_options(cluster), progress)
    finally:
        progress.close()
    snap = result.snapshot
    dump.write(output, snap, dump.now(), result.counts)
    failed = {gk: c for gk, c in snap.listed.items() if c.state is CoverageState.FAILED}
    not_served = sum(1 for c in snap.listed.values() if c.state is CoverageState.NOT_SERVED)
    info = snap.cluster if snap.cluster is not None else targets[0].cluster_info()  # a live read always has it
    name = f"{info.context}" + (f" ({info.label})" if info.label else "")
    click.echo(printable(f"audit: wrote {output}: {len(snap):,} objects of "
                         f"{len(snap.listed) - not_served - len(failed)} kinds from {name}, {info.server}, "
                         f"Kubernetes {info.version}, fingerprint {info.fingerprint}; {not_served} kinds not served"),
               err=True)
    for coverage in failed.values():
        click.echo(printable(f"audit: error: {coverage.reason}"), err=True)
    ctx.exit(EXIT_INCOMPLETE if failed else EXIT_OK)


@click.command()
@click.option("--rule", "only_rules", multiple=True, metavar="ID", help="Only what this rule reads (repeatable).")
@click.option("--skip-rule", "skip_rules", multiple=True, metavar="ID", help="Leave out what only this rule reads.")
@click.option("--name", default="cilium-exposure-auditor", show_default=True, help="ServiceAccount/ClusterRole name.")
@click.option("--namespace", default="cilium-exposure-auditor", show_default=True, help="ServiceAccount namespace.")
def rbac(only_rules: tuple[str, ...], skip_rules: tuple[str, ...], name: str, namespace: str) -> None:
    """Print the least-privilege RBAC `audit live` needs (ServiceAccount, ClusterRole, binding).

    Generated from the kinds the selected rules read: `list` on exactly those
    resources, `get` on CustomResourceDefinitions; without --rule/--skip-rule,
    also what `audit trace --live` reads (EndpointSlices, Leases).
    docs/rbac.yaml is this output for every built-in rule.
    """
    from auditor import kinds, registry
    from auditor.sources.live import rbac as rbac_module

    rule_set = registry.select(registry.load_rules(), only_rules, skip_rules)
    command = ("audit rbac" + "".join(f" --rule {r}" for r in only_rules)
               + "".join(f" --skip-rule {r}" for r in skip_rules))
    # `audit trace --live` reads every rule's kinds and a few more: the role for every rule grants them.
    extra = () if only_rules or skip_rules else kinds.TRACE_KINDS
    try:
        text = rbac_module.render(rule_set.rules, name, namespace, command=command, extra=extra)
    except rbac_module.UnknownKinds as error:
        raise AuditError(str(error)) from None
    click.echo(text, nl=False)
