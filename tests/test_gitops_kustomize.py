"""kustomize namespaces as kustomize itself computes them (tests/fixtures/gitops/kustomize).

Every fixture folder kustomize can build offline is cross-checked against the
real `kubectl kustomize` (skipped when kubectl is absent); the other tests
pin what kustomize does and the reasons and origins reports show.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from auditor.sources.gitops import (
    ClusterSpec,
    NamespaceReason,
    ObjectId,
    Origin,
    Placement,
    TreeFiles,
    TreeLayout,
    read_tree_files,
    resolve_layout,
)
from auditor.sources.gitops.tree import find_key_line
from tests.conftest import FIXTURES

KUSTOMIZE = FIXTURES / "gitops" / "kustomize"
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None,
                                   reason="kubectl is not installed (kubectl kustomize is the reference)")


def build(folder: str, root: Path = KUSTOMIZE) -> tuple[TreeLayout, dict[tuple[str, str], Placement]]:
    """The layout of `root` with `folder` given as a cluster, and its placements by (kind, name)."""
    layout = resolve_layout(read_tree_files(str(root)), [ClusterSpec("c", folder)])
    placements = {(p.kind, p.name): p for p in layout.in_scope("c")}
    return layout, placements


def kubectl_kustomize(path: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    done = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def written_namespace(placement: Placement) -> str | None:
    """What kustomize writes into the object: for a CRD kind its schema does not know, the namespace it ignores."""
    namespace = placement.namespace
    return namespace.written if namespace.reason is NamespaceReason.CLUSTER_SCOPED else namespace.value


def subjects_after(placement: Placement, raw: dict[str, Any]) -> list[str | None]:
    subjects = [dict(s) for s in raw.get("subjects", [])]
    for edit in placement.edits:
        index = int(edit.path.split("[", 1)[1].split("]", 1)[0])
        subjects[index]["namespace"] = edit.value
    return [s.get("namespace") for s in subjects]


@needs_kubectl
@pytest.mark.parametrize("folder", ["base", "overlays/prod", "overlays/dev"])
def test_namespaces_and_names_match_kubectl_kustomize(folder: str) -> None:
    expected = kubectl_kustomize(KUSTOMIZE / folder)
    tree = read_tree_files(str(KUSTOMIZE))
    layout, placements = build(folder)
    assert sorted(placements) == sorted((d["kind"], d["metadata"]["name"]) for d in expected)
    records = {r.id: r for f in tree.files.values() for r in f.objects}
    for doc in expected:
        placement = placements[(doc["kind"], doc["metadata"]["name"])]
        assert written_namespace(placement) == doc["metadata"].get("namespace"), placement
        if doc["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            raw = records[placement.object].data
            assert subjects_after(placement, raw) == [s.get("namespace") for s in doc["subjects"]]
        if doc["kind"] == "APIService":
            assert [(e.path, e.value) for e in placement.edits] == [
                ("spec.service.namespace", doc["spec"]["service"]["namespace"])]
        if doc["kind"] == "ValidatingWebhookConfiguration":
            # kustomize leaves webhook client services alone (kubectl 1.32, kustomize v5.5.0)
            assert placement.edits == ()
            assert doc["webhooks"][0]["clientConfig"]["service"]["namespace"] == "webhook-system"
    assert layout.problems == ()


def test_the_outermost_namespace_wins_and_overrides_the_manifest() -> None:
    _, placements = build("overlays/prod")
    web = placements[("Deployment", "web")].namespace
    assert (web.value, web.reason, web.source, web.replaced) == (
        "prod", NamespaceReason.KUSTOMIZE, Origin("overlays/prod/kustomization.yaml", 3), "written-in-manifest")
    assert web.describe() == ("namespace prod from overlays/prod/kustomization.yaml:3 "
                              "(the manifest says written-in-manifest)")
    _, base = build("base")
    assert base[("Deployment", "web")].namespace.source == Origin("base/kustomization.yaml", 3)


def test_a_component_namespace_covers_what_was_gathered_before_it() -> None:
    _, placements = build("overlays/dev")
    for key in (("Deployment", "web"), ("ConfigMap", "web-dashboard"), ("ConfigMap", "web-features")):
        namespace = placements[key].namespace
        assert namespace.value == "from-component"
        assert namespace.reason is NamespaceReason.KUSTOMIZE_COMPONENT
        assert namespace.source == Origin("components/namespace-setter/kustomization.yaml", 3)


def test_a_namespace_object_is_renamed_to_the_namespace_kustomize_sets() -> None:
    _, placements = build("overlays/prod")
    namespace = placements[("Namespace", "prod")]
    assert namespace.renamed_from == "_"
    assert namespace.namespace.reason is NamespaceReason.CLUSTER_SCOPED
    assert namespace.object == ObjectId("overlays/prod/namespace.yaml", 1)


def test_only_subjects_named_default_get_the_namespace() -> None:
    _, placements = build("overlays/prod")
    binding = placements[("RoleBinding", "web-reader")]
    assert [(e.path, e.value, str(e.source)) for e in binding.edits] == [
        ("subjects[0].namespace", "prod", "overlays/prod/kustomization.yaml:3"),
        ("subjects[2].namespace", "prod", "overlays/prod/kustomization.yaml:3"),
    ]
    cluster_binding = placements[("ClusterRoleBinding", "web-nodes")]
    assert cluster_binding.namespace.reason is NamespaceReason.CLUSTER_SCOPED
    assert [e.path for e in cluster_binding.edits] == ["subjects[0].namespace"]


def test_cluster_scoped_kinds_have_no_namespace_even_when_kustomize_writes_one() -> None:
    _, placements = build("overlays/prod")
    pool = placements[("CiliumLoadBalancerIPPool", "prod-pool")].namespace
    assert (pool.value, pool.reason, pool.written) == (None, NamespaceReason.CLUSTER_SCOPED, "prod")
    assert pool.known and pool.describe() == "cluster-scoped (no namespace)"
    for key in (("StorageClass", "fast"), ("ClusterRole", "web-nodes")):
        namespace = placements[key].namespace
        assert (namespace.value, namespace.written) == (None, None)


def test_list_items_are_objects_and_local_config_is_dropped() -> None:
    layout, placements = build("base")
    assert placements[("ConfigMap", "web-settings")].object == ObjectId("base/configmaps.yaml", 4)
    assert placements[("ConfigMap", "web-features")].object == ObjectId("base/configmaps.yaml", 10)
    assert ("ConfigMap", "web-local-tooling") not in placements
    assert any("local-config" in n.message and n.origin == Origin("base/local-only.yaml", 2) for n in layout.notes)


def test_remote_bases_patches_and_generators_are_noted_not_guessed() -> None:
    layout, placements = build("with-remote")
    notes = {str(n) for n in layout.notes}
    assert "with-remote/kustomization.yaml:5: remote base github.com/example/operator//config/default?ref=v1.2.0 " \
           "not read (noted, not guessed)" in notes
    assert "with-remote/kustomization.yaml:6: remote base https://raw.githubusercontent.com/example/app/v1.0.0/" \
           "install.yaml not read (noted, not guessed)" in notes
    assert "with-remote/kustomization.yaml:8: patches not applied (noted, not guessed)" in notes
    assert "with-remote/kustomization.yaml:21: image overrides not applied (noted, not guessed)" in notes
    assert layout.problems == ()
    # The local base is still built, under the overlay's namespace.
    assert placements[("Deployment", "web")].namespace.value == "remote-demo"
    # A strategic-merge patch file looks like a manifest but is no object of any cluster.
    assert layout.non_resource_files["with-remote/replicas.yaml"] == "kustomize patch"
    assert ObjectId("with-remote/replicas.yaml", 2) not in layout.placements


def test_kustomization_file_names_and_several_in_one_folder() -> None:
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n"
                  "  selector: {{matchLabels: {{app: x}}}}\n  template:\n    metadata: {{labels: {{app: x}}}}\n"
                  "    spec: {{containers: [{{name: x, image: x}}]}}\n")
    tree = TreeFiles.from_texts({
        "a/kustomization.yml": "namespace: from-yml\nresources: [d.yaml]\n",
        "a/d.yaml": deployment.format(name="a"),
        "b/Kustomization": "namespace: from-bare-name\nresources: [d.yaml]\n",
        "b/d.yaml": deployment.format(name="b"),
        "c/kustomization.yaml": "namespace: first\nresources: [d.yaml]\n",
        "c/kustomization.yml": "namespace: second\n",
        "c/d.yaml": deployment.format(name="c"),
    })
    layout = resolve_layout(tree)
    assert layout.namespace_of(ObjectId("a/d.yaml", 1)).value == "from-yml"  # type: ignore[union-attr]
    assert layout.namespace_of(ObjectId("b/d.yaml", 1)).value == "from-bare-name"  # type: ignore[union-attr]
    assert [str(p) for p in layout.problems] == [
        "c/kustomization.yaml: several kustomization files in one folder (kustomization.yaml, kustomization.yml); "
        "kustomize refuses the folder"]


def test_key_lines_follow_block_yaml_and_skip_block_scalars() -> None:
    text = (
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\n"  # 1
        "kind: Kustomization\n"  # 2
        "metadata:\n"  # 3
        "  name: apps\n"  # 4
        "spec:\n"  # 5
        "  patches:\n"  # 6
        "    - patch: |-\n"  # 7
        "        spec:\n"  # 8
        "          targetNamespace: inside-a-patch\n"  # 9
        "      target: {kind: Kustomization}\n"  # 10
        "  'targetNamespace': real\n"  # 11
        "  path: ./apps   # comment: here\n"  # 12
        "subjects:\n"  # 13
        "- kind: ServiceAccount\n"  # 14
        "  namespace: x\n"  # 15
    )
    lines = text.splitlines()
    assert find_key_line(lines, 1, 15, ("spec", "targetNamespace")) == 11
    assert find_key_line(lines, 1, 15, ("spec", "path")) == 12
    assert find_key_line(lines, 1, 15, ("spec", "patches", "target")) == 10
    assert find_key_line(lines, 1, 15, ("subjects", "namespace")) == 15
    assert find_key_line(lines, 1, 15, ("metadata", "namespace")) is None
    assert find_key_line(lines, 1, 15, ()) == 1


def test_a_kustomization_nothing_builds_still_reports_its_defects_in_line_order() -> None:
    tree = TreeFiles.from_texts({
        "c/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: [x]\n",
        "c/kustomization.yml": "namespace: y\n",
    })
    assert [str(p) for p in resolve_layout(tree).problems] == [
        "c/kustomization.yaml: several kustomization files in one folder (kustomization.yaml, kustomization.yml); "
        "kustomize refuses the folder",
        "c/kustomization.yaml:3: namespace must be a string, not ['x']",
    ]
