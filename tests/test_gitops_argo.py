"""Argo CD as it deploys a tree (tests/fixtures/gitops/argocd, and argocd-apps chart values).

An app of apps applied by hand, Applications with a plain folder, a
kustomization and a Helm chart, one deploying to another cluster, and an
ApplicationSet with a git directory generator.
"""

from __future__ import annotations

import pytest

from auditor.sources.gitops import (
    UNREACHED_SCOPE,
    WHOLE_TREE_SCOPE,
    EntryKind,
    NamespaceReason,
    ObjectId,
    Origin,
    Tool,
    TreeFiles,
    TreeLayout,
    read_layout,
    resolve_layout,
)
from tests.conftest import FIXTURES

ARGOCD = FIXTURES / "gitops" / "argocd"


@pytest.fixture(scope="module")
def layout() -> TreeLayout:
    return read_layout(str(ARGOCD))


def test_the_app_of_apps_is_the_entry_and_another_destination_is_another_cluster(layout: TreeLayout) -> None:
    assert [c.name for c in layout.clusters] == ["argocd", "edge-cluster"]
    home, edge = layout.clusters
    (entry,) = home.entry_points
    assert (entry.kind, entry.origin, entry.path, entry.name) == (
        EntryKind.ARGOCD_APP_OF_APPS, Origin("bootstrap/root.yaml", 2), "argocd/apps", "root")
    (edge_entry,) = edge.entry_points
    assert (edge_entry.kind, edge_entry.origin) == (EntryKind.ARGOCD_DESTINATION,
                                                    Origin("argocd/apps/edge-agent.yaml", 1))
    assert edge.files == frozenset({"apps/agent/daemonset.yaml"})
    # The root Application, applied by hand, is an object of the cluster it starts.
    (root,) = layout.placements_of(ObjectId("bootstrap/root.yaml", 2))
    assert (root.scope, root.namespace.value, root.application) == ("argocd", "argocd", None)
    assert layout.problems == ()


def test_the_destination_namespace_applies_only_to_objects_without_one(layout: TreeLayout) -> None:
    storefront = layout.namespace_of(ObjectId("apps/shop/deployment.yaml", 1))
    assert storefront is not None
    assert (storefront.value, storefront.reason, storefront.source) == (
        "shop", NamespaceReason.ARGOCD_DESTINATION, Origin("argocd/apps/shop.yaml", 14))
    payments = layout.namespace_of(ObjectId("apps/shop/payments-service.yaml", 2))
    assert payments is not None
    assert (payments.value, payments.reason) == ("payments", NamespaceReason.MANIFEST)
    app = layout.application_of(ObjectId("apps/shop/payments-service.yaml", 2))
    assert app is not None and (app.tool, app.name, app.destination, app.target_namespace) == (
        Tool.ARGOCD, "shop", "in-cluster", "shop")
    agent = layout.placements_of(ObjectId("apps/agent/daemonset.yaml", 1))
    assert [(p.scope, p.namespace.value) for p in agent] == [("edge-cluster", "agent")]


def test_a_plain_folder_is_read_without_its_subfolders(layout: TreeLayout) -> None:
    guestbook = layout.namespace_of(ObjectId("apps/guestbook/deployment.yaml", 1))
    assert guestbook is not None and guestbook.value == "guestbook"
    (debug,) = layout.placements_of(ObjectId("apps/guestbook/extras/debug.yaml", 2))
    assert debug.scope == UNREACHED_SCOPE  # directory.recurse is not set


def test_an_application_set_makes_one_application_per_matching_folder(layout: TreeLayout) -> None:
    for team in ("team-a", "team-b"):
        (placement,) = layout.placements_of(ObjectId(f"tenants/{team}/deployment.yaml", 1))
        assert placement.namespace.value == team
        assert placement.namespace.source == Origin("argocd/apps/tenants.yaml", 26)
        assert placement.application is not None
        assert (placement.application.kind, placement.application.name) == ("ApplicationSet", f"tenant-{team}")
    assert layout.unreached == (ObjectId("apps/guestbook/extras/debug.yaml", 2),
                                ObjectId("tenants/archived/deployment.yaml", 1))  # excluded by the generator


def test_a_helm_chart_source_is_noted_not_rendered(layout: TreeLayout) -> None:
    assert ("charts/monitoring/Chart.yaml: Argo CD Application monitoring: Helm chart rendered by Argo CD; its "
            "values are read (values.yaml), its templates are not") in {str(n) for n in layout.notes}


def test_applications_declared_in_argocd_apps_chart_values() -> None:
    tree = TreeFiles.from_texts({
        "system/argocd/Chart.yaml": (
            "apiVersion: v2\nname: argocd\nversion: 0.0.0\ndependencies:\n"
            "  - name: argo-cd\n    version: 7.5.2\n    repository: https://argoproj.github.io/argo-helm\n"
            "  - name: argocd-apps\n    version: 2.0.0\n    repository: https://argoproj.github.io/argo-helm\n"),
        "system/argocd/values.yaml": (
            "argo-cd:\n  server:\n    ingress:\n      enabled: true\n"
            "argocd-apps:\n"
            "  applicationsets:\n"
            "    root:\n"
            "      namespace: argocd\n"
            "      generators:\n"
            "        - git:\n"
            "            repoURL: https://github.com/example/homelab\n"
            "            revision: main\n"
            "            directories:\n"
            "              - path: system/*\n"
            "              - path: apps/*\n"
            "      template:\n"
            "        metadata:\n"
            "          name: '{{path.basename}}'\n"
            "        spec:\n"
            "          destination:\n"
            "            name: in-cluster\n"
            "            namespace: '{{path.basename}}'\n"
            "          source:\n"
            "            repoURL: https://github.com/example/homelab\n"
            "            path: '{{path}}'\n"),
        "apps/blog/deployment.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: blog\nspec:\n"
            "  selector: {matchLabels: {app: blog}}\n  template:\n    metadata: {labels: {app: blog}}\n"
            "    spec: {containers: [{name: blog, image: ghcr.io/example/blog:1}]}\n"),
    }, root="/home/me/homelab")
    layout = resolve_layout(tree)
    (cluster,) = layout.clusters
    (entry,) = cluster.entry_points
    # The argocd chart's own values declare the ApplicationSet that deploys the chart: an app of apps.
    assert (cluster.name, entry.kind, entry.path) == ("homelab", EntryKind.ARGOCD_APP_OF_APPS, "system/argocd")
    blog = layout.namespace_of(ObjectId("apps/blog/deployment.yaml", 1))
    assert blog is not None
    assert blog.describe() == "namespace blog from the Argo CD destination at system/argocd/values.yaml:22"
    assert layout.unreached == ()


@pytest.mark.parametrize("generators", ["1", "x", "{git: {directories: [{path: apps/*}]}}", "null"])
def test_an_applicationset_whose_generators_are_no_list_makes_no_application(generators: str) -> None:
    """Found by the fuzzer (tests/test_fuzz.py): `generators: 1` ended the run with a TypeError (an int is
    not iterable); a string or a mapping was iterated for its characters or keys. Argo CD's generators are a
    list: anything else makes no Application (no cluster: the tree is read as one scope)."""
    tree = TreeFiles.from_texts({
        "argocd/apps.yaml": ("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\n"
                             "metadata:\n  name: apps\n  namespace: argocd\n"
                             f"spec:\n  generators: {generators}\n"
                             "  template:\n    metadata:\n      name: '{{path.basename}}'\n"
                             "    spec:\n      source: {path: '{{path}}'}\n      destination: {namespace: web}\n"),
        "apps/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
    })
    layout = resolve_layout(tree)
    assert layout.single_scope and [(c.name, c.entry_points, c.applications) for c in layout.clusters] == [
        (WHOLE_TREE_SCOPE, (), ())]
    assert [p.scope for p in layout.placements[ObjectId("apps/web/cm.yaml", 1)]] == [WHOLE_TREE_SCOPE]
