"""How every report words what an audit of a GitOps tree adds: its clusters, coverage, what is left out.

One wording for the text and Markdown reports (and SARIF's run properties),
so they never disagree: `clusters_sentence`, `unreached_sentence`,
`namespaces_sentence`, each a plain sentence the caller escapes or wraps as
its format needs. The values come from `AuditResult.repository`
(auditor/repository.py); docs/input.md explains them.
"""

from __future__ import annotations

from typing import Any

from auditor.engine import AuditResult
from auditor.model import Finding, FindingStatus
from auditor.repository import RemarkKind, RepositoryView, ScopeKind, ScopeView

UNREACHED_FOLDERS_SHOWN = 5


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def relative(path: str, root: str) -> str:
    """`path` (spelled as findings spell files) relative to the tree `root`, for sentences about the tree."""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def scope_sentence(scope: ScopeView, root: str) -> str:
    """`production: 12 objects (clusters/production; Flux bootstrap at clusters/…/gotk-sync.yaml:16)`."""
    entries = [f"{e.kind} at {relative(str(e.source), root)}" for e in scope.entry_points]
    where = "; ".join(part for part in (scope.root, *entries) if part)
    generated = f" and {_plural(scope.generated, 'generated Application')}" if scope.generated else ""
    return f"{scope.name}: {_plural(scope.objects, 'object')}{generated}" + (f" ({where})" if where else "")


def clusters_sentence(repository: RepositoryView) -> str:
    """What the tree deploys, as the report's second line says it (one line per cluster follows)."""
    if repository.single_scope:
        return ("GitOps tree read as one scope: no cluster entry point found (no Flux bootstrap or sync, no "
                "Argo CD application), so its clusters cannot be told apart")
    clusters = [s for s in repository.scopes if s.kind is ScopeKind.CLUSTER]
    if len(clusters) == 1:
        return "GitOps tree deploying 1 cluster:"
    return f"GitOps tree deploying {len(clusters):,} clusters, each audited on its own:"


def cluster_lines(repository: RepositoryView) -> list[str]:
    if repository.single_scope:
        return []
    return [scope_sentence(s, repository.root) for s in repository.scopes if s.kind is ScopeKind.CLUSTER]


def unreached_sentence(repository: RepositoryView) -> str | None:
    """What no cluster deploys, and whether it was audited (None when everything is deployed)."""
    if repository.single_scope or not repository.unreached:
        return None
    scope = next((s for s in repository.scopes if s.kind is ScopeKind.UNREACHED), None)
    folders = repository.unreached_folders
    shown = ", ".join(f"{folder} ({count})" for folder, count in folders[:UNREACHED_FOLDERS_SHOWN])
    more = len(folders) - UNREACHED_FOLDERS_SHOWN
    where = shown + (f" and {_plural(more, 'more folder')}" if more > 0 else "")
    if scope is not None and scope.audited:
        return (f"{scope.name}: {_plural(repository.unreached, 'object')} deployed by no cluster entry point, "
                f"audited as a scope of their own: {where}")
    return (f"not audited: {_plural(repository.unreached, 'object')} deployed by no cluster entry point "
            f"(--audit-unreached audits them): {where}")


def namespaces_sentence(repository: RepositoryView) -> str:
    ratio = f"{repository.namespace_ratio:.1%}".replace("%", " %")
    return (f"Namespaces: {repository.with_namespace:,} of {_plural(repository.namespaced, 'namespaced object')} "
            f"({ratio}) have the namespace kustomize, Flux or Argo CD give them")


def grouped(result: AuditResult) -> bool:
    """Whether findings are shown by cluster (a tree of several scopes audited)."""
    repository = result.repository
    return repository is not None and not repository.single_scope


def scope_heading(scope: ScopeView, findings: list[Finding]) -> str:
    """`Cluster production: 2 findings failed, 1 excepted`."""
    failed = sum(1 for f in findings if f.status is FindingStatus.FAILED)
    excepted = len(findings) - failed
    label = "Cluster" if scope.kind is ScopeKind.CLUSTER else "Scope"
    return f"{label} {scope.name}: {_plural(failed, 'finding')} failed" + (f", {excepted:,} excepted" if excepted
                                                                            else "")


def remark_dicts(repository: RepositoryView, kind: RemarkKind) -> list[dict[str, Any]]:
    return [{**({"file": r.source.path} if r.source is not None else {}),
             **({"line": r.source.line} if r.source is not None and r.source.line else {}),
             "message": r.message} for r in repository.remarks_of(kind)]
