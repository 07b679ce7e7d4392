"""The layout as a whole: one scope when clusters cannot be told apart, clusters given by hand,
broken files as problems of those files, no traceback on any input, and the seam to the offline reader."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auditor.sources.files import read_paths
from auditor.sources.gitops import (
    UNREACHED_SCOPE,
    WHOLE_TREE_SCOPE,
    ClusterSpec,
    EntryKind,
    NamespaceReason,
    ObjectId,
    TreeFiles,
    parse_cluster_arg,
    read_layout,
    read_tree_files,
    resolve_layout,
)
from auditor.sources.gitops.seam import place_objects
from tests.conftest import FIXTURES

GITOPS = FIXTURES / "gitops"


def test_a_tree_without_entry_points_is_one_scope_said_once() -> None:
    layout = read_layout(str(GITOPS / "plain"))
    assert layout.single_scope
    assert [c.name for c in layout.clusters] == [WHOLE_TREE_SCOPE]
    assert layout.scopes == (WHOLE_TREE_SCOPE,)
    assert layout.unreached == ()
    messages = [n.message for n in layout.notes]
    assert sum("read as one scope" in m for m in messages) == 1
    web = layout.namespace_of(ObjectId("apps/web/deployment.yaml", 1))
    assert web is not None and web.describe() == "namespace web from apps/web/kustomization.yaml:3"
    job = layout.namespace_of(ObjectId("loose/job.yaml", 1))
    assert job is not None and job.reason is NamespaceReason.UNSET


def test_same_named_cluster_scoped_objects_in_one_scope_are_a_sign_of_two_clusters() -> None:
    layout = read_layout(str(GITOPS / "plain"))
    signs = [str(n) for n in layout.notes if "sign of two clusters" in n.message]
    assert signs == [
        "site-a/cluster-config.yaml:1: 2 cluster-scoped ClusterRole.rbac.authorization.k8s.io named "
        "platform-operators in scope (whole tree) (identical: site-a/cluster-config.yaml:1, "
        "site-b/cluster-config.yaml:1): a sign of two clusters in one scope",
        "site-a/cluster-config.yaml:10: 2 cluster-scoped CiliumLoadBalancerIPPool.cilium.io named edge-pool in "
        "scope (whole tree) (different: site-a/cluster-config.yaml:10, site-b/cluster-config.yaml:10): a sign of two "
        "clusters in one scope",
    ]
    # Told which folder is which cluster, the sign goes away.
    given_by_hand = read_layout(str(GITOPS / "plain"), [ClusterSpec("a", "site-a"), ClusterSpec("b", "site-b")])
    assert not any("sign of two clusters" in n.message for n in given_by_hand.notes)


def test_clusters_given_by_hand_replace_detection() -> None:
    layout = read_layout(str(GITOPS / "flux-fleet"), [ClusterSpec("prod", "clusters/production")])
    (cluster,) = layout.clusters
    assert cluster.name == "prod"
    assert [e.kind for e in cluster.entry_points] == [EntryKind.EXPLICIT]
    deployment = ObjectId("apps/base/podinfo/deployment.yaml", 1)
    assert [(p.scope, p.namespace.value) for p in layout.placements_of(deployment)] == [("prod", "podinfo")]
    # What only staging deploys is now unreached.
    assert ObjectId("clusters/staging/apps.yaml", 1) in layout.unreached


def test_a_cluster_path_outside_the_tree_is_a_problem() -> None:
    layout = read_layout(str(GITOPS / "plain"), [ClusterSpec("x", "nowhere")])
    assert [str(p) for p in layout.problems] == ["nowhere: cluster x: nowhere is not in the tree"]


@pytest.mark.parametrize(("text", "error"), [
    ("prod", "--cluster 'prod': expected NAME=PATH"),
    ("=clusters/prod", "--cluster '=clusters/prod': expected NAME=PATH"),
    ("prod=", "--cluster 'prod=': expected NAME=PATH"),
    ("(x)=a", "--cluster '(x)=a': a cluster name cannot start with '(' or hold '/'"),
])
def test_cluster_arguments_are_checked(text: str, error: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_cluster_arg(text)
    assert str(raised.value) == error
    assert parse_cluster_arg(" prod = clusters/prod ") == ClusterSpec("prod", "clusters/prod")


def test_broken_kustomizations_are_problems_of_their_files_and_hide_nothing_else() -> None:
    layout = read_layout(str(GITOPS / "broken"))
    assert [str(p) for p in layout.problems] == [
        "apps/bad-yaml/kustomization.yaml:5: invalid YAML: while parsing a flow sequence did not find expected ',' "
        "or ']'",
        "apps/component-misuse/kustomization.yaml:4: ../../components/probe is a Component: list it under components",
        "apps/cycle-b/kustomization.yaml:4: resource ../cycle-a includes this kustomization again (a cycle); "
        "kustomize refuses it",
        "apps/duplicate-key/service.yaml:9: duplicate key 'type' (first at line 6)",
        "apps/kustomization.yaml:12: resource no-kustomization is a folder without a kustomization file "
        "(kustomization.yaml, kustomization.yml, Kustomization)",
        "apps/kustomization.yaml:14: resource ../../outside is outside the tree",
        "apps/missing/kustomization.yaml:3: namespace must be a string, not {'name': 'not-a-string'}",
        "apps/missing/kustomization.yaml:7: resource absent.yaml not found",
        "apps/not-object/values.yaml:2: not a Kubernetes object; kustomize would fail the build that includes it",
        "apps/two-namespaces/kustomization.yaml:3: namespace shared renames 2 Namespace objects to the same name "
        "(apps/two-namespaces/namespaces.yaml:1, apps/two-namespaces/namespaces.yaml:6); kustomize refuses the build",
        "apps/wrong-kind/kustomization.yaml:1: not a kustomization (apps/v1 Deployment); kustomize refuses it",
    ]
    (cluster,) = layout.clusters
    assert cluster.name == "lab"
    good = layout.namespace_of(ObjectId("apps/good/service.yaml", 1), "lab")
    assert good is not None and good.value == "good"
    present = layout.namespace_of(ObjectId("apps/missing/present.yaml", 1), "lab")
    assert present is not None and present.value == "missing-demo"  # the broken namespace: is not applied
    assert layout.namespace_of(ObjectId("apps/not-object/configmap.yaml", 1), "lab").value == "values-demo"  # type: ignore[union-attr]
    # A manifest-looking document in a kustomization file is never an object.
    assert ObjectId("apps/wrong-kind/kustomization.yaml", 1) not in layout.placements
    assert layout.non_resource_files["apps/wrong-kind/kustomization.yaml"] == "kustomization"


def _write(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def test_hostile_files_are_problems_never_tracebacks(tmp_path: Path) -> None:
    _write(tmp_path, {
        "kustomization.yaml": b"resources: [binary.yaml, latin1.yaml, deep.yaml, bomb.yaml, list.yaml, ok.yaml]\n"
                              b"components: notalist\nnamespace: [x]\nconfigMapGenerator: {a: b}\n",
        "binary.yaml": b"apiVersion: v1\x00\x01",
        "latin1.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n",
        "deep.yaml": b"[" * 5000 + b"]" * 5000,
        "bomb.yaml": b"a: &a [x, x, x, x, x, x, x, x, x]\n"
                     + b"".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
                                f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
                                f"*{chr(97 + i)}]\n".encode() for i in range(8)),
        "list.yaml": b"- just\n- a list\n",
        "ok.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: survivor\n",
        "sub/kustomization.yaml": b"- not a mapping\n",
        "sub2/kustomization.yaml": b"",
        "sub3/Kustomization": b"resources:\n  - 42\n  - {a: b}\n",
    })
    os.mkfifo(tmp_path / "fifo.yaml")
    layout = read_layout(str(tmp_path))
    problems = {str(p).split(":", 1)[0] for p in layout.problems}
    assert {"binary.yaml", "latin1.yaml", "deep.yaml", "bomb.yaml", "list.yaml", "fifo.yaml",
            "kustomization.yaml", "sub/kustomization.yaml", "sub2/kustomization.yaml", "sub3/Kustomization"} <= problems
    survivor = layout.namespace_of(ObjectId("ok.yaml", 1))
    assert survivor is not None and survivor.reason is NamespaceReason.UNSET  # `namespace: [x]` is refused
    assert all(":" in str(p) for p in layout.problems)


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=12))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                       max_leaves=12)
_KUSTOMIZATION_KEYS = ("apiVersion", "kind", "namespace", "resources", "bases", "components", "patches",
                       "configMapGenerator", "generatorOptions", "crds", "namePrefix")
_FIELDS = st.fixed_dictionaries({}, optional=dict.fromkeys(_KUSTOMIZATION_KEYS, _VALUES))


@given(kustomization=_FIELDS, flux_spec=st.dictionaries(
    st.sampled_from(["path", "targetNamespace", "sourceRef", "components", "dependsOn", "postBuild", "kubeConfig"]),
    _VALUES, max_size=5))
def test_any_kustomization_or_flux_spec_resolves_without_an_exception(kustomization: dict[str, object],
                                                                      flux_spec: dict[str, object]) -> None:
    import json

    texts = {
        "apps/kustomization.yaml": json.dumps(kustomization),
        "apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
        "clusters/x/flux.json": json.dumps({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "flux-system", "namespace": "flux-system"}, "spec": flux_spec}),
    }
    layout = resolve_layout(TreeFiles.from_texts(texts))
    assert ObjectId("apps/cm.yaml", 1) in layout.placements or "apps/cm.yaml" in layout.non_resource_files


_FLUX_SYNC = ("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
              "metadata: {name: flux-system, namespace: flux-system}\nspec:\n  path: ./apps\n"
              "  sourceRef: {kind: GitRepository, name: flux-system}\n")
_ARGO_CHART_APP = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: shop, namespace: argocd}\n"
                   "spec:\n  destination: {namespace: shop}\n  source:\n    repoURL: https://git.example.com/x\n"
                   "    path: charts/shop\n")


@pytest.mark.parametrize("texts", [
    {"clusters/x/sync.yaml": _FLUX_SYNC + "  components: true\n  dependsOn: 1\n"},
    {"argocd/shop.yaml": _ARGO_CHART_APP + "    helm: {valueFiles: 1}\n",
     "charts/shop/Chart.yaml": "apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies: true\n"},
], ids=["flux-components-and-dependsOn", "argo-valueFiles-and-chart-dependencies"])
def test_lists_written_as_scalars_resolve(texts: dict[str, str]) -> None:
    """Found by the fuzzer (tests/test_fuzz.py): `components: true`, `dependsOn: 1` (Flux), `valueFiles: 1`
    and a Chart.yaml's `dependencies: true` (Argo CD) were iterated and ended the run with a TypeError. Each is
    a list in its API; anything else lists nothing, and the entry point still deploys its folder."""
    tree = TreeFiles.from_texts({**texts, "apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
                                 "charts/shop/values.yaml": "service: {type: ClusterIP}\n"})
    layout = resolve_layout(tree)
    assert len(layout.clusters) == 1 and layout.clusters[0].entry_points
    if "clusters/x/sync.yaml" in texts:
        assert [p.scope for p in layout.placements[ObjectId("apps/cm.yaml", 1)]] == [layout.clusters[0].name]
    else:
        assert [v.files for v in layout.chart_values] == [(("values.yaml", "charts/shop/values.yaml"),)]


def test_same_tree_same_layout() -> None:
    first = read_layout(str(GITOPS / "flux-fleet"))
    second = read_layout(str(GITOPS / "flux-fleet"))
    assert first == second
    assert repr(first) == repr(second)


def test_the_offline_reader_objects_split_into_one_set_per_scope() -> None:
    root = GITOPS / "flux-fleet"
    snapshot = read_paths([str(root)])
    layout = read_layout(str(root))
    placed = place_objects(snapshot.objects, layout)
    assert sorted(placed.by_scope) == ["(unreached)", "production", "staging"]
    assert placed.unknown == [] and placed.dropped == []
    staging = {(p.object.kind, p.object.namespace, p.object.name) for p in placed.by_scope["staging"]}
    assert ("Deployment", "podinfo-staging", "podinfo") in staging
    assert ("Namespace", None, "podinfo-staging") in staging
    assert ("CiliumLoadBalancerIPPool", None, "default-pool") in staging
    production = {(p.object.kind, p.object.namespace, p.object.name) for p in placed.by_scope["production"]}
    assert ("Deployment", "podinfo", "podinfo") in production
    assert not any(ns == "podinfo-staging" for _, ns, _ in production)
    unreached = [(p.object.kind, p.object.namespace) for p in placed.by_scope[UNREACHED_SCOPE]]
    assert unreached == [("Deployment", "legacy"), ("Kustomization", "legacy")]
    # The objects read are left as they were.
    original = next(o for o in snapshot.objects if o.kind == "Deployment" and o.name == "podinfo")
    assert original.namespace is None


def test_the_seam_applies_subject_namespaces_and_drops_patch_files() -> None:
    root = GITOPS / "kustomize"
    snapshot = read_paths([str(root)])
    layout = read_tree_files(str(root))
    placed = place_objects(snapshot.objects, resolve_layout(layout, [ClusterSpec("c", "overlays/prod")]))
    binding = next(p.object for p in placed.by_scope["c"] if p.object.kind == "RoleBinding")
    assert [s.get("namespace") for s in binding.raw["subjects"]] == ["prod", "elsewhere", "prod"]
    original = next(o for o in snapshot.objects if o.kind == "RoleBinding")
    assert [s.get("namespace") for s in original.raw["subjects"]] == [None, "elsewhere", "monitoring"]
    assert [o.source.path.rsplit("/", 2)[-2:] for o in placed.dropped if o.source] == [["with-remote", "replicas.yaml"]]


def test_the_worked_example_of_docs_gitops_md_is_what_the_layout_says() -> None:
    import doctest

    from tests.conftest import ROOT

    text = (ROOT / "docs" / "gitops.md").read_text(encoding="utf-8")
    example = text.split("## Worked example", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    test = doctest.DocTestParser().get_doctest(example, {}, "docs/gitops.md", "docs/gitops.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        runner.run(test)
    finally:
        os.chdir(cwd)
    assert runner.failures == 0 and runner.tries == 4


def test_hostile_nesting_is_a_problem_not_a_recursion_error() -> None:
    texts: dict[str, str] = {}
    path = "d"
    for depth in range(400):
        resources = "[next, cm.yaml]" if depth < 399 else "[cm.yaml]"
        texts[f"{path}/kustomization.yaml"] = f"resources: {resources}\n"
        texts[f"{path}/cm.yaml"] = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{depth}\n"
        path += "/next"
    layout = resolve_layout(TreeFiles.from_texts(texts))
    assert any("nested more than 100 deep" in p.message for p in layout.problems)
    assert ObjectId("d/cm.yaml", 1) in layout.placements
