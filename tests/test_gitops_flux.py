"""Flux as it deploys a multi-cluster tree (tests/fixtures/gitops/flux-fleet, the layout of Flux's docs).

Two clusters bootstrapped with `flux bootstrap` (clusters/production and
clusters/staging), a shared infrastructure base both deploy, app overlays,
a targetNamespace, Flux components, a configMapGenerator feeding a
HelmRelease, an OCI source and an archived folder nothing deploys. The Flux
builds are cross-checked against `kubectl kustomize` on a copy of the tree
edited the way kustomize-controller edits it (fluxcd/pkg kustomize_generator.go).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from auditor.sources.gitops import (
    UNREACHED_SCOPE,
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

FLEET = FIXTURES / "gitops" / "flux-fleet"
KUBECTL = shutil.which("kubectl")


@pytest.fixture(scope="module")
def fleet() -> TreeLayout:
    return read_layout(str(FLEET))


def test_each_bootstrapped_cluster_is_found_with_its_entry_point(fleet: TreeLayout) -> None:
    assert [(c.name, c.root) for c in fleet.clusters] == [("production", "clusters/production"),
                                                          ("staging", "clusters/staging")]
    for cluster in fleet.clusters:
        (entry,) = cluster.entry_points
        assert entry.kind is EntryKind.FLUX_BOOTSTRAP
        assert entry.origin == Origin(f"clusters/{cluster.name}/flux-system/gotk-sync.yaml", 16)
        assert (entry.path, entry.name) == (f"clusters/{cluster.name}", "flux-system")
    assert not fleet.single_scope
    assert fleet.scopes == ("production", "staging", UNREACHED_SCOPE)
    assert fleet.problems == ()


def test_clusters_do_not_leak_into_each_other(fleet: TreeLayout) -> None:
    production, staging = fleet.clusters
    assert not any(f.startswith("clusters/staging/") for f in production.files)
    assert not any(f.startswith("clusters/production/") for f in staging.files)
    assert "apps/production/kustomization.yaml" in production.files
    assert "apps/staging/kustomization.yaml" not in production.files


def test_a_shared_base_belongs_to_each_cluster_that_includes_it(fleet: TreeLayout) -> None:
    production, staging = fleet.clusters
    for path in ("infrastructure/controllers/cilium.yaml", "infrastructure/controllers/lb-pool.yaml",
                 "apps/base/podinfo/deployment.yaml"):
        assert path in production.files and path in staging.files
    pool = fleet.placements_of(ObjectId("infrastructure/controllers/lb-pool.yaml", 3))
    assert [p.scope for p in pool] == ["production", "staging"]
    # Cluster-scoped in each cluster: kustomize writes kube-system into it, the API server ignores it.
    assert {(p.namespace.reason, p.namespace.written) for p in pool} == {
        (NamespaceReason.CLUSTER_SCOPED, "kube-system")}
    # One pool per cluster is not a sign of two clusters in one scope.
    assert not any("sign of two clusters" in n.message for n in fleet.notes)


def test_target_namespace_wins_over_the_kustomize_namespace(fleet: TreeLayout) -> None:
    deployment = ObjectId("apps/base/podinfo/deployment.yaml", 1)
    staging = fleet.namespace_of(deployment, "staging")
    assert staging is not None
    assert (staging.value, staging.reason, staging.source) == (
        "podinfo-staging", NamespaceReason.FLUX_TARGET_NAMESPACE, Origin("clusters/staging/apps.yaml", 16))
    assert staging.describe() == ("namespace podinfo-staging from the Flux targetNamespace at "
                                  "clusters/staging/apps.yaml:16")
    production = fleet.namespace_of(deployment, "production")
    assert production is not None
    assert (production.value, production.reason, production.source) == (
        "podinfo", NamespaceReason.KUSTOMIZE, Origin("apps/base/podinfo/kustomization.yaml", 3))
    # The Namespace object follows: Flux's namespace renames it like kustomize's does (fluxcd/flux2#4570).
    (namespace,) = fleet.placements_of(ObjectId("apps/base/podinfo/namespace.yaml", 1), "staging")
    assert (namespace.name, namespace.renamed_from) == ("podinfo-staging", "podinfo")


def test_objects_belong_to_the_flux_kustomization_that_builds_them(fleet: TreeLayout) -> None:
    deployment = ObjectId("apps/base/podinfo/deployment.yaml", 1)
    app = fleet.application_of(deployment, "production")
    assert app is not None
    assert (app.tool, app.kind, app.namespace, app.name, app.path) == (
        Tool.FLUX, "Kustomization", "flux-system", "apps", "apps/production")
    assert app.origin == Origin("clusters/production/apps.yaml", 1)
    assert app.depends_on == ("flux-system/infra-controllers",)
    assert app.source_ref == "GitRepository/flux-system/flux-system"
    # postBuild.substitute is kept as written, and never applied.
    assert app.substitute == (("cluster_name", "production"), ("replicas", "3"))
    tree = TreeFiles.from_texts({"d.yaml": (FLEET / "apps/base/podinfo/deployment.yaml").read_text()})
    assert "${cluster_name}" in str(tree.files["d.yaml"].objects[0].data)
    # The Flux Kustomization objects themselves belong to the cluster's flux-system Kustomization.
    ks = fleet.application_of(ObjectId("clusters/production/apps.yaml", 1), "production")
    assert ks is not None and (ks.name, ks.path) == ("flux-system", "clusters/production")


def test_flux_components_are_relative_to_the_path_and_added_at_its_root(fleet: TreeLayout) -> None:
    rules = ObjectId("components/alerts/alert-rules.yaml", 1)
    (placement,) = fleet.placements_of(rules)
    assert placement.scope == "production"
    assert placement.application is not None and placement.application.name == "apps"
    # The component joins at the root, where no namespace is set: nothing places it.
    assert placement.namespace.reason is NamespaceReason.UNSET
    assert fleet.coverage().without == (rules,)


def test_configmap_generator_files_are_the_helm_release_values(fleet: TreeLayout) -> None:
    sources = [(v.scope, v.helm_release, v.helm_release_name, v.namespace, v.config_map, v.key, v.file,
                str(v.generator), v.name_suffix_hash) for v in fleet.values_sources]
    release = ObjectId("infrastructure/controllers/cilium.yaml", 9)
    assert sources == [
        (scope, release, "cilium", "kube-system", "cilium-values", "values.yaml",
         "infrastructure/controllers/cilium-values.yaml", "infrastructure/controllers/kustomization.yaml:8", False)
        for scope in ("production", "staging")
    ]
    assert fleet.non_resource_files["infrastructure/controllers/cilium-values.yaml"] == "configMapGenerator input"


def test_what_no_entry_point_deploys_is_unreached_but_keeps_its_namespace(fleet: TreeLayout) -> None:
    assert fleet.unreached == (ObjectId("archive/old-app/deployment.yaml", 1), ObjectId("archive/old-app/ks.yaml", 2))
    (placement,) = fleet.placements_of(ObjectId("archive/old-app/deployment.yaml", 1))
    assert placement.scope == UNREACHED_SCOPE
    assert placement.namespace.describe() == "namespace legacy from archive/old-app/kustomization.yaml:3"
    assert placement.application is not None and placement.application.tool is Tool.KUSTOMIZE
    notes = {str(n) for n in fleet.notes}
    assert ("archive/old-app/ks.yaml:9: Flux Kustomization old-app: path ./apps/old-app is not in this tree "
            "(another repository, or a stale path)") in notes
    assert ("clusters/staging/external.yaml:21: Flux Kustomization podinfo-oci builds OCIRepository "
            "podinfo-manifests, not this tree") in notes
    assert "apps/production/kustomization.yaml:5: patches not applied (noted, not guessed)" in notes


def test_a_flux_instance_sync_is_an_entry_point() -> None:
    helm_release = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: flux-instance
  namespace: flux-system
spec:
  chartRef:
    kind: OCIRepository
    name: flux-instance
  values:
    instance:
      sync:
        kind: GitRepository
        url: https://github.com/example/home-ops
        ref: refs/heads/main
        path: kubernetes/flux/cluster
"""
    apps = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cluster-apps
  namespace: flux-system
spec:
  path: ./kubernetes/apps
  sourceRef:
    kind: GitRepository
    name: flux-system
"""
    tree = TreeFiles.from_texts({
        "kubernetes/flux/cluster/ks.yaml": apps,
        "kubernetes/apps/flux-system/kustomization.yaml": "namespace: flux-system\nresources: [helmrelease.yaml]\n",
        "kubernetes/apps/flux-system/helmrelease.yaml": helm_release,
    }, root="/srv/home-ops")
    layout = resolve_layout(tree)
    (cluster,) = layout.clusters
    assert cluster.name == "home-ops"  # one cluster: named after the tree
    (entry,) = cluster.entry_points
    assert (entry.kind, entry.origin, entry.path) == (
        EntryKind.FLUX_INSTANCE, Origin("kubernetes/apps/flux-system/helmrelease.yaml", 12), "kubernetes/flux/cluster")
    assert layout.unreached == ()


# --- the same builds through kubectl kustomize ---------------------------------------------------


def _kubectl(path: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _as_flux_builds(copy: Path, path: str, target_namespace: str | None, components: list[str]) -> Path:
    """Edit the copy as kustomize-controller does before building `path`: generate, set namespace, add components."""
    folder = copy / path
    kustomization = folder / "kustomization.yaml"
    if kustomization.exists():
        data = yaml.safe_load(kustomization.read_text())
    else:
        resources = [p.name for p in sorted(folder.iterdir())
                     if (p.is_dir() and (p / "kustomization.yaml").exists()) or p.suffix in (".yaml", ".yml")]
        data = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources}
    if target_namespace is not None:
        data["namespace"] = target_namespace
    if components:
        data["components"] = [*data.get("components", []), *components]
    kustomization.write_text(yaml.safe_dump(data))
    return folder


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (kubectl kustomize is the reference)")
@pytest.mark.parametrize(("scope", "application", "path", "target", "components"), [
    ("staging", "apps", "apps/staging", "podinfo-staging", []),
    ("production", "apps", "apps/production", None, ["../../components/alerts"]),
    ("production", "infra-controllers", "infrastructure/controllers", None, []),
    ("production", "flux-system", "clusters/production", None, []),
])
def test_flux_builds_match_kubectl_kustomize(tmp_path: Path, fleet: TreeLayout, scope: str, application: str,
                                             path: str, target: str | None, components: list[str]) -> None:
    copy = tmp_path / "fleet"
    shutil.copytree(FLEET, copy)
    expected = sorted((d["kind"], d["metadata"]["name"], d["metadata"].get("namespace"))
                      for d in _kubectl(_as_flux_builds(copy, path, target, components)))
    got = sorted(
        (p.kind, p.name, p.namespace.written if p.namespace.reason is NamespaceReason.CLUSTER_SCOPED
         else p.namespace.value)
        for p in fleet.in_scope(scope) if p.application is not None and p.application.name == application)
    # The generated ConfigMap is not a file of the tree: it is in the values mapping instead.
    assert [e for e in expected if e not in got] == (
        [("ConfigMap", "cilium-values", "kube-system")] if application == "infra-controllers" else [])
    assert [g for g in got if g not in expected] == []


def test_an_oci_flux_system_bootstrap_is_read_as_this_tree() -> None:
    sync = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: oci://ghcr.io/example/fleet-manifests
  ref:
    tag: latest
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/edge
  prune: true
  sourceRef:
    kind: OCIRepository
    name: flux-system
"""
    tree = TreeFiles.from_texts({
        "clusters/edge/flux-system/gotk-sync.yaml": sync,
        "clusters/edge/flux-system/kustomization.yaml": "resources: [gotk-sync.yaml]\n",
        "clusters/edge/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: edge\n  namespace: edge\n",
        # kustomize reads kustomizations only from its three file names
        "clusters/edge/kustomize-settings.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                                 "namespace: never-used\n",
    })
    layout = resolve_layout(tree)
    (cluster,) = layout.clusters
    assert (cluster.name, cluster.entry_points[0].kind) == ("edge", EntryKind.FLUX_BOOTSTRAP)
    assert layout.placements_of(ObjectId("clusters/edge/config.yaml", 1))[0].scope == "edge"
    notes = {str(n) for n in layout.notes}
    assert ("clusters/edge/flux-system/gotk-sync.yaml:21: Flux Kustomization flux-system: OCIRepository flux-system "
            "read as an artifact of this tree") in notes
    assert ("clusters/edge/kustomize-settings.yaml:1: a kustomization in a file kustomize never reads as one (only "
            "kustomization.yaml, kustomization.yml, Kustomization): not used") in notes


FLUX_LINE_DOCUMENTS = [
    # (document, key): the key may be indented differently, quoted, commented out above, or appear
    # deeper (a patch in a block scalar, another mapping) before the real one.
    ("spec:\n  interval: 1h\n  postBuild:\n    substituteFrom: [{kind: ConfigMap, name: s}]\n", "postBuild"),
    ("spec:\n    # postBuild: not this one\n    patches:\n      - patch: |\n          postBuild: no\n"
     "    postBuild:\n      substitute: {A: b}\n", "postBuild"),
    ('spec:\n  "postBuild":\n    substituteFrom: []\n', "postBuild"),
    ("spec:\n  path: ./apps\n  sourceRef: {kind: GitRepository, name: flux-system}\n", "sourceRef"),
    ("status:\n  sourceRef: x\nspec:\n  prune: true\n", "sourceRef"),
    ("spec: {path: ./apps, sourceRef: {kind: GitRepository, name: x}}\n", "sourceRef"),
]


@pytest.mark.parametrize(("body", "key"), FLUX_LINE_DOCUMENTS)
def test_a_flux_notes_line_is_the_key_index_line(body: str, key: str) -> None:
    """Notes about `spec.KEY` of a Flux Kustomization find its line by a scan that stops at the key;
    it must give the line the document's key index gives (the index decides what the scan cannot)."""
    from auditor.sources.gitops import flux
    from auditor.sources.gitops.tree import parse_text

    text = "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n" + body
    parsed = parse_text("ks.yaml", text)
    (record,) = parsed.objects
    expected = parsed.line_of(record.document, "spec", key) or record.id.line
    assert flux._line(parsed, record, "spec", key) == expected
