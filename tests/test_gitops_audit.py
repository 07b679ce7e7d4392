"""`audit TREE` on GitOps trees: one snapshot per cluster, effective namespaces, values from generators.

Every test runs the real command (`python -m auditor`, a subprocess) on a
tree laid out as kustomize, Flux or Argo CD repositories are, and reads its
reports: the fixtures under tests/fixtures/gitops (docs/gitops.md describes
them) and small trees written for one behaviour each.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.ci_support import report_validator
from tests.conftest import FIXTURES, ROOT, CliResult, run_cli

GITOPS = FIXTURES / "gitops"
AS_OF = ("--as-of", "2026-11-29")
# Trees are given as a user in the repository would give them (relative paths: shorter lines in reports).
TWO_SITES = str((GITOPS / "two-sites").relative_to(ROOT))


KUBECTL = shutil.which("kubectl")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def audit_json(*args: str, cwd: Path | None = None) -> tuple[CliResult, dict[str, Any]]:
    """The real command's JSON report (validated against the schema); never exit 2, never a traceback."""
    result = run_cli(*args, "--format", "json", *AS_OF, cwd=cwd)
    assert result.code in (0, 1, 3), result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    errors = sorted(report_validator().iter_errors(report), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
    return result, report


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def flux_cluster(name: str, *paths: str) -> dict[str, str]:
    """What `flux bootstrap --path=clusters/NAME` writes, plus one Flux Kustomization per path."""
    files = {
        f"clusters/{name}/flux-system/gotk-sync.yaml": f"""\
            apiVersion: source.toolkit.fluxcd.io/v1
            kind: GitRepository
            metadata: {{name: flux-system, namespace: flux-system}}
            spec: {{interval: 1m, url: ssh://git@example.com/fleet, ref: {{branch: main}}}}
            ---
            apiVersion: kustomize.toolkit.fluxcd.io/v1
            kind: Kustomization
            metadata: {{name: flux-system, namespace: flux-system}}
            spec:
              interval: 10m
              path: ./clusters/{name}
              sourceRef: {{kind: GitRepository, name: flux-system}}
            """,
        f"clusters/{name}/flux-system/kustomization.yaml": "resources: [gotk-sync.yaml]\n",
    }
    for index, path in enumerate(paths):
        files[f"clusters/{name}/deploy-{index}.yaml"] = f"""\
            apiVersion: kustomize.toolkit.fluxcd.io/v1
            kind: Kustomization
            metadata: {{name: deploy-{index}, namespace: flux-system}}
            spec:
              interval: 1h
              path: ./{path}
              sourceRef: {{kind: GitRepository, name: flux-system}}
            """
    return files


def findings(report: dict[str, Any], rule: str | None = None, status: str | None = None) -> list[tuple[Any, ...]]:
    """(cluster, rule, Kind/namespace/name) of each finding, in report order."""
    out = []
    for f in report["findings"]:
        if (rule is None or f["rule"] == rule) and (status is None or f["status"] == status):
            obj = f["object"]
            out.append((f.get("cluster"), f["rule"], "/".join(p for p in (obj["kind"], obj["namespace"], obj["name"])
                                                              if p)))
    return out


def rule_of(report: dict[str, Any], rule: str) -> dict[str, Any]:
    return next(r for r in report["rules"] if r["id"] == rule)


# --- clusters, and each cluster as its own snapshot ------------------------------------------------


@pytest.fixture(scope="module")
def two_sites() -> dict[str, Any]:
    return audit_json(TWO_SITES)[1]


def test_each_cluster_of_the_tree_is_found_and_audited_on_its_own(two_sites: dict[str, Any]) -> None:
    clusters = [(c["name"], c["kind"], c["root"], [e["kind"] for e in c["entryPoints"]], c["objects"], c["audited"])
                for c in two_sites["target"]["clusters"]]
    assert clusters == [("edge", "cluster", "clusters/edge", ["Flux bootstrap"], 10, True),
                        ("lab", "cluster", "clusters/lab", ["Flux bootstrap"], 10, True)]
    assert two_sites["target"]["repository"]["namespaceCoverage"] == {"namespaced": 12, "withNamespace": 12}
    # The shared base (apps/) is audited in each cluster: its Service fails in both, tagged with its cluster.
    assert findings(two_sites, "lb-service-not-excepted") == [
        ("edge", "lb-service-not-excepted", "Service/web/web"),
        ("lab", "lb-service-not-excepted", "HelmRelease/kube-system/cilium"),
        ("lab", "lb-service-not-excepted", "Service/web/web")]
    # ... and the same object in two clusters is no duplicate.
    assert two_sites["duplicateObjects"] == []


def test_an_l2_policy_and_a_pool_of_one_cluster_never_serve_another(two_sites: dict[str, Any]) -> None:
    """The lab's pool holds 192.168.67.241 and its L2 policy selects every Service; the edge's pool does not hold
    it and its policy selects only `announce: edge`. The shared Service asks for that address in both clusters."""
    ways_in = {(e["cluster"], e["address"]["kind"]): e for e in two_sites["exposures"]
               if e["subject"]["object"]["name"] == "web"}
    lab, edge = ways_in[("lab", "load-balancer-ip")], ways_in[("edge", "load-balancer-ip")]
    assert lab["address"].get("pools") == ["lab-pool"]
    assert [b["object"]["name"] for b in lab["announcement"]["by"]] == ["lab-l2"]
    assert "pools" not in edge["address"]
    assert edge["announcement"]["state"] == "not-announced" and edge["announcement"]["by"] == []
    assert findings(two_sites, "lb-ip-outside-pools") == [("edge", "lb-ip-outside-pools", "Service/web/web")]
    assert findings(two_sites, "l2-service-unannounced") == [("edge", "l2-service-unannounced", "Service/web/web")]


def test_the_same_tree_read_as_one_scope_mixes_the_sites_and_says_why_rules_cannot_run() -> None:
    """`--cluster all=.` builds the whole tree as one cluster: the two sites' Cilium releases differ, so no rule
    reading the configuration guesses which one runs (first-wins was the bug), and each object both sites
    declare is a duplicate of that one scope."""
    _, report = audit_json(TWO_SITES, "--cluster", "all=.")
    assert [c["name"] for c in report["target"]["clusters"]] == ["all"]
    for rule in ("kpr-not-enabled", "lb-ip-outside-pools", "l2-service-unannounced", "wireguard-disabled"):
        status = rule_of(report, rule)
        assert status["status"] == "not-run", rule
        assert "two Cilium configurations in one scope: 2 releases of the cilium chart with different values" in (
            status["reason"])
        assert "infra/edge/cilium.yaml:2" in status["reason"] and "infra/lab/cilium.yaml:2" in status["reason"]
    duplicated = {(d["cluster"], d["object"]["kind"], d["object"]["name"]) for d in report["duplicateObjects"]}
    assert ("all", "HelmRelease", "cilium") in duplicated


def test_findings_name_the_namespace_a_kustomization_gives_their_object(two_sites: dict[str, Any]) -> None:
    service = next(f for f in two_sites["findings"] if f["object"]["name"] == "web" and f["cluster"] == "lab"
                   and f["rule"] == "lb-service-not-excepted")
    assert service["file"].endswith("two-sites/apps/web/service.yaml") and service["line"] == 2
    origin = service["namespaceFrom"]
    assert (origin["namespace"], origin["reason"], origin["line"]) == ("web", "kustomize", 3)
    assert origin["file"].endswith("two-sites/apps/kustomization.yaml")
    assert origin["description"] == f"namespace web from {origin['file']}:3"


def test_an_exception_by_namespace_matches_an_object_whose_namespace_only_the_kustomization_sets(
        tmp_path: Path) -> None:
    exceptions = write_tree(tmp_path, {"exceptions.yaml": """\
        exceptions:
          - name: web-frontend
            rules: [lb-service-not-excepted]
            match: {kind: Service, namespace: web, name: web}
            reason: The web front end is published on its own address (ticket NET-7).
        """}) / "exceptions.yaml"
    _, report = audit_json(TWO_SITES, "--exceptions", str(exceptions))
    assert findings(report, "lb-service-not-excepted", "excepted") == [
        ("edge", "lb-service-not-excepted", "Service/web/web"), ("lab", "lb-service-not-excepted", "Service/web/web")]
    (entry,) = report["exceptions"]
    assert (entry["status"], entry["matched"]) == ("used", 2)


def test_cilium_values_from_a_configmap_generator_are_the_release_values(two_sites: dict[str, Any]) -> None:
    """The lab's HelmRelease has no `values`: all of them come through `valuesFrom` from the ConfigMap that
    infra/lab/kustomization.yaml generates from cilium-values.yaml. They count as complete values (rules
    that need the whole configuration run), and a Service they declare is seen at its line in that file."""
    for rule in ("kpr-not-enabled", "wireguard-disabled", "kpr-missing-api-endpoint"):
        assert rule_of(two_sites, rule)["status"] == "passed", rule
    hubble = next(f for f in two_sites["findings"] if f["object"]["kind"] == "HelmRelease")
    assert hubble["file"].endswith("two-sites/infra/lab/cilium-values.yaml") and hubble["line"] == 13
    assert hubble["message"].startswith("hubble.ui.service.type in ") and "(valuesFrom[0] of the HelmRelease)" in (
        hubble["message"])
    armed = next(f for f in two_sites["findings"] if f["rule"] == "lb-pool-not-armed" and f["cluster"] == "lab")
    assert "enable-l2-announcements=true from l2announcements.enabled in " in armed["message"]
    assert "cilium-values.yaml:5 (valuesFrom[0] of HelmRelease kube-system/cilium" in armed["message"]


def test_a_values_file_with_a_type_mapping_still_declares_its_service(tmp_path: Path) -> None:
    """A chart's own `persistence.type: {size: 1Gi}` beside `service.type: NodePort` in a `valuesFrom` file:
    the Service is found at its line, and the mapping is no Service type (looking it up in a set of type
    names raised TypeError: an internal error for the whole run)."""
    tree = write_tree(tmp_path, {
        "kustomization.yaml": """\
            apiVersion: kustomize.config.k8s.io/v1beta1
            kind: Kustomization
            namespace: web
            resources: [helmrelease.yaml]
            configMapGenerator:
              - name: web-values
                files: [values.yaml]
            """,
        "helmrelease.yaml": """\
            apiVersion: helm.toolkit.fluxcd.io/v2
            kind: HelmRelease
            metadata: {name: web}
            spec:
              interval: 1h
              chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts}}}
              valuesFrom:
                - {kind: ConfigMap, name: web-values, valuesKey: values.yaml}
            """,
        "values.yaml": "service:\n  type: NodePort\npersistence:\n  type: {size: 1Gi}\n",
    })
    result, report = audit_json(str(tree))
    assert result.code == 1
    (nodeport,) = [f for f in report["findings"] if f["rule"] == "nodeport-service-not-excepted"]
    assert (nodeport["file"], nodeport["line"]) == (str(tree / "values.yaml"), 2)
    assert nodeport["message"].startswith("service.type in ")


def test_the_text_report_groups_findings_by_cluster() -> None:
    result = run_cli(TWO_SITES, *AS_OF, env={"COLUMNS": "120"})
    assert result.code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1:4] == [
        "GitOps tree deploying 2 clusters, each audited on its own:",
        "  edge: 10 objects (clusters/edge; Flux bootstrap at clusters/edge/flux-system/gotk-sync.yaml:13)",
        "  lab: 10 objects (clusters/lab; Flux bootstrap at clusters/lab/flux-system/gotk-sync.yaml:13)",
    ]
    assert lines[4].startswith("Namespaces: 12 of 12 namespaced objects (100.0 %)")
    edge, lab = lines.index("Cluster edge: 6 findings failed"), lines.index("Cluster lab: 4 findings failed")
    assert edge < lab
    edge_part, lab_part = "\n".join(lines[edge:lab]), "\n".join(lines[lab:])
    assert "lb-ip-outside-pools" in edge_part and "lb-ip-outside-pools" not in lab_part.split("NOT RUN")[0]
    # Rows carry no cluster prefix under their cluster's heading; the namespace's origin follows the file.
    assert "edge: Service" not in result.stdout
    assert "namespace web from tests/fixtures/gitops/two-sites/apps/kustomization.yaml:3" in edge_part


# --- what no cluster deploys, and trees that are one scope --------------------------------------------


def test_what_no_cluster_deploys_is_listed_and_not_audited_unless_asked() -> None:
    root = rel(GITOPS / "flux-fleet")
    _, report = audit_json(root)
    unreached = report["target"]["repository"]["unreached"]
    assert unreached == {"objects": 2, "folders": [{"folder": "archive/old-app", "objects": 2}]}
    (scope,) = [c for c in report["target"]["clusters"] if c["kind"] == "unreached"]
    assert (scope["name"], scope["audited"]) == ("(unreached)", False)
    assert not any(f.get("cluster") == "(unreached)" for f in report["findings"])
    text = run_cli(root, *AS_OF, env={"COLUMNS": "200"}).stdout
    assert ("  not audited: 2 objects deployed by no cluster entry point (--audit-unreached audits them): "
            "archive/old-app (2)") in text
    _, audited = audit_json(root, "--audit-unreached", "--rule", "namespace-missing-default-deny")
    (scope,) = [c for c in audited["target"]["clusters"] if c["kind"] == "unreached"]
    assert scope["audited"] is True and scope["exitCode"] in (0, 1, 3)


def test_a_tree_without_entry_points_is_one_scope_and_the_report_says_so_once() -> None:
    _, report = audit_json(rel(GITOPS / "kustomize"))
    repository = report["target"]["repository"]
    assert repository["singleScope"] is True
    assert [c["name"] for c in report["target"]["clusters"]] == ["(whole tree)"]
    one_scope = [w for w in repository["warnings"] if w["message"].startswith("no cluster entry point found")]
    assert len(one_scope) == 1
    assert not any("cluster" in f for f in report["findings"])  # one scope: findings untagged, as any folder's
    text = run_cli(rel(GITOPS / "kustomize"), *AS_OF, env={"COLUMNS": "200"}).stdout
    assert text.count("no cluster entry point found") == 1


def test_same_named_cluster_scoped_objects_in_one_scope_are_a_warning_naming_both_files() -> None:
    _, report = audit_json(rel(GITOPS / "plain"))
    signs = [w for w in report["target"]["repository"]["warnings"] if "a sign of two clusters" in w["message"]]
    assert [w["message"] for w in signs] == [
        "2 cluster-scoped ClusterRole.rbac.authorization.k8s.io named platform-operators in scope (whole tree) "
        "(identical: site-a/cluster-config.yaml:1, site-b/cluster-config.yaml:1): a sign of two clusters in one scope",
        "2 cluster-scoped CiliumLoadBalancerIPPool.cilium.io named edge-pool in scope (whole tree) (different: "
        "site-a/cluster-config.yaml:10, site-b/cluster-config.yaml:10): a sign of two clusters in one scope"]
    text = run_cli(rel(GITOPS / "plain"), *AS_OF, env={"COLUMNS": "300"}).stdout
    assert "warning: tests/fixtures/gitops/plain/site-a/cluster-config.yaml:10: 2 cluster-scoped " in text
    assert text.count("a sign of two clusters") == 2


def test_a_folder_of_plain_manifests_is_audited_exactly_as_before() -> None:
    """No kustomization, no Flux or Argo CD object: nothing to resolve, the report is the plain folder's."""
    _, report = audit_json(rel(FIXTURES / "ci" / "main"))
    assert "repository" not in report["target"] and "clusters" not in report["target"]
    assert not any("namespaceFrom" in f for f in report["findings"])


# --- kustomize, Flux and Argo CD forms, through the command ------------------------------------------


def test_flux_target_namespace_wins_over_the_base_and_a_component_adds_to_one_cluster() -> None:
    _, report = audit_json(rel(GITOPS / "flux-fleet"), "--rule", "namespace-missing-default-deny")
    clusters = {c["name"]: c for c in report["target"]["clusters"]}
    assert clusters["production"]["namespaceCoverage"] == {"namespaced": 10, "withNamespace": 9}
    assert clusters["staging"]["namespaceCoverage"] == {"namespaced": 11, "withNamespace": 11}
    examined = rule_of(report, "namespace-missing-default-deny")
    assert examined["status"] == "passed" and examined["checked"] == 2  # podinfo in one, podinfo-staging in the other


def test_argo_cd_destination_namespaces_and_a_destination_cluster() -> None:
    _, report = audit_json(rel(GITOPS / "argocd"), "--rule", "lb-service-not-excepted")
    names = [(c["name"], [e["kind"] for e in c["entryPoints"]]) for c in report["target"]["clusters"]]
    assert names == [("argocd", ["Argo CD app of apps"]), ("edge-cluster", ["Argo CD destination"]),
                     ("(unreached)", [])]
    (payments,) = report["findings"]
    # Argo CD's destination namespace (shop) applies only to objects without one: the manifest's stays.
    assert (payments["cluster"], payments["object"]["namespace"]) == ("argocd", "payments")
    assert payments["namespaceFrom"]["reason"] == "manifest"


ARGO_APP = ("apiVersion: argoproj.io/v1alpha1\nkind: {kind}\nmetadata: {{name: {name}, namespace: argocd}}\n"
            "spec:\n{spec}")
LB_SERVICE = ("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}{namespace}}}\n"
              "spec: {{type: LoadBalancer, ports: [{{port: 443}}]}}\n")


def test_argo_cd_application_sets_and_kustomize_namespace_overrides(tmp_path: Path) -> None:
    """An app of apps deploys an ApplicationSet (git directories generator, one namespace per folder) and an
    Application whose `source.kustomize.namespace` overrides like a kustomization's `namespace:`; the
    destination namespace applies only to objects that name none (Argo CD ApplicationDestination)."""
    source = "  source: {{repoURL: https://example.com/platform.git, targetRevision: main, path: {path}{extra}}}\n"
    destination = "  destination: {{server: https://kubernetes.default.svc, namespace: '{namespace}'}}\n"
    write_tree(tmp_path, {
        "bootstrap/root.yaml": ARGO_APP.format(kind="Application", name="root", spec=(
            source.format(path="argocd/apps", extra="") + destination.format(namespace="argocd"))),
        "argocd/apps/shop.yaml": ARGO_APP.format(kind="Application", name="shop", spec=(
            source.format(path="apps/shop", extra=", kustomize: {namespace: shop-prod}")
            + destination.format(namespace="shop"))),
        "argocd/apps/tenants.yaml": ARGO_APP.format(kind="ApplicationSet", name="tenants", spec=(
            "  generators:\n"
            "    - git: {repoURL: https://example.com/platform.git, revision: main, directories: [{path: tenants/*}]}\n"
            "  template:\n"
            "    metadata: {name: 'tenant-{{path.basename}}'}\n"
            "    spec:\n"
            "      project: tenants\n"
            "      source: {repoURL: https://example.com/platform.git, targetRevision: main, path: '{{path}}'}\n"
            "      destination: {server: https://kubernetes.default.svc, namespace: '{{path.basename}}'}\n")),
        "apps/shop/kustomization.yaml": "resources: [service.yaml]\n",
        "apps/shop/service.yaml": LB_SERVICE.format(name="shop", namespace=", namespace: written"),
        "tenants/team-a/service.yaml": LB_SERVICE.format(name="api", namespace=""),
        "tenants/team-b/service.yaml": LB_SERVICE.format(name="api", namespace=", namespace: custom"),
    })
    _, report = audit_json(str(tmp_path), "--rule", "lb-service-not-excepted")
    (cluster,) = report["target"]["clusters"]
    assert [e["kind"] for e in cluster["entryPoints"]] == ["Argo CD app of apps"]
    placed = [(f["object"]["namespace"], f["object"]["name"], f["namespaceFrom"]["reason"],
               f["namespaceFrom"]["file"].removeprefix(f"{tmp_path}/")) for f in report["findings"]]
    assert placed == [
        ("custom", "api", "manifest", "tenants/team-b/service.yaml"),
        ("shop-prod", "shop", "argocd-kustomize-namespace", "argocd/apps/shop.yaml"),
        ("team-a", "api", "argocd-destination", "argocd/apps/tenants.yaml"),
    ]


def test_kustomize_overlays_and_components_give_each_cluster_its_namespace(tmp_path: Path) -> None:
    """`--cluster NAME=PATH` names the clusters by hand. The outermost `namespace:` wins over the base's and the
    manifest's; a Component's covers what was gathered before it, and its kustomization's own wins over it."""
    write_tree(tmp_path, {
        "base/kustomization.yaml": "namespace: base-ns\nresources: [service.yaml]\n",
        "base/service.yaml": """\
            apiVersion: v1
            kind: Service
            metadata: {name: api, namespace: written-ns}
            spec: {type: LoadBalancer, ports: [{port: 443}]}
            """,
        "components/team/kustomization.yaml": """\
            apiVersion: kustomize.config.k8s.io/v1alpha1
            kind: Component
            namespace: team-ns
            """,
        "overlays/dev/kustomization.yaml": "resources: [../../base]\ncomponents: [../../components/team]\n",
        "overlays/prod/kustomization.yaml": ("namespace: prod\nresources: [../../base]\n"
                                             "components: [../../components/team]\n"),
    })
    _, report = audit_json(str(tmp_path), "--cluster", "dev=overlays/dev", "--cluster", "prod=overlays/prod",
                           "--rule", "lb-service-not-excepted")
    assert [(c["name"], [e["kind"] for e in c["entryPoints"]]) for c in report["target"]["clusters"]] == [
        ("dev", ["--cluster"]), ("prod", ["--cluster"])]
    placed = [(f["cluster"], f["object"]["namespace"], f["namespaceFrom"]["reason"],
               f["namespaceFrom"]["file"].removeprefix(f"{tmp_path}/")) for f in report["findings"]]
    assert placed == [("dev", "team-ns", "kustomize-component", "components/team/kustomization.yaml"),
                      ("prod", "prod", "kustomize", "overlays/prod/kustomization.yaml")]
    if KUBECTL is not None:  # what kustomize itself builds (kubectl 1.32 embeds kustomize v5.5)
        for overlay, namespace in (("dev", "team-ns"), ("prod", "prod")):
            built = subprocess.run([KUBECTL, "kustomize", str(tmp_path / "overlays" / overlay)], check=True,
                                   capture_output=True, text=True).stdout
            assert f"namespace: {namespace}" in built


def test_a_patch_in_an_overlay_is_not_a_duplicate_but_two_definitions_in_one_cluster_are(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        **flux_cluster("one", "overlay"),
        "base/kustomization.yaml": "resources: [service.yaml]\n",
        "base/service.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec: {ports: [{port: 80}]}\n",
        "overlay/kustomization.yaml": """\
            namespace: shop
            resources: [../base, copy.yaml]
            patches:
              - path: api-patch.yaml
            """,
        # The patch looks like a manifest, but kustomize reads it as a patch: no object of any cluster.
        "overlay/api-patch.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec: {type: NodePort}\n",
        # A second definition of the same object in the same build: kustomize would refuse it, and it is reported.
        "overlay/copy.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec: {ports: [{port: 81}]}\n",
    })
    _, report = audit_json(str(tmp_path), "--rule", "nodeport-service-not-excepted")
    (duplicate,) = report["duplicateObjects"]
    assert (duplicate["cluster"], duplicate["object"]["namespace"], duplicate["object"]["name"]) == (
        "one", "shop", "api")
    assert [d["file"].rsplit("/", 2)[-2:] for d in duplicate["definitions"]] == [["base", "service.yaml"],
                                                                                ["overlay", "copy.yaml"]]
    assert any(n["message"].startswith("patches not applied") for n in report["target"]["repository"]["notes"])
    assert findings(report) == []  # the patch's NodePort is noted, not guessed


# --- two Cilium configurations in one cluster ---------------------------------------------------------

CILIUM_RELEASE = """\
    apiVersion: helm.toolkit.fluxcd.io/v2
    kind: HelmRelease
    metadata: {{name: cilium, namespace: {namespace}}}
    spec:
      chart: {{spec: {{chart: cilium, version: 1.19.1, sourceRef: {{kind: HelmRepository, name: cilium}}}}}}
      values:
        kubeProxyReplacement: true
        k8sServiceHost: 10.0.0.1
        k8sServicePort: 6443
        encryption: {{enabled: {encrypted}, type: wireguard}}
    """


@pytest.mark.parametrize(("second", "ambiguous"), [
    ({"namespace": "cilium", "encrypted": "false"}, True),
    ({"namespace": "cilium", "encrypted": "true"}, False),
])
def test_two_cilium_releases_in_one_cluster_are_never_resolved_silently(
        tmp_path: Path, second: dict[str, str], ambiguous: bool) -> None:
    write_tree(tmp_path, {
        **flux_cluster("one", "infra"),
        "infra/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
        "infra/a.yaml": CILIUM_RELEASE.format(namespace="kube-system", encrypted="true"),
        "infra/b.yaml": CILIUM_RELEASE.format(**second),
    })
    _, report = audit_json(str(tmp_path), "--rule", "wireguard-disabled")
    status = rule_of(report, "wireguard-disabled")
    if ambiguous:
        assert status["status"] == "not-run"
        assert status["reason"].startswith("one: two Cilium configurations in one scope: 2 releases of the cilium "
                                           "chart with different values (HelmRelease kube-system/cilium (")
        assert "infra/a.yaml:1" in status["reason"] and "infra/b.yaml:1" in status["reason"]
    else:  # the same values twice are one configuration
        assert status["status"] == "passed"


def test_two_cilium_config_maps_in_one_cluster_are_settled_only_by_the_agents_namespace(tmp_path: Path) -> None:
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cilium-config, namespace: {ns}}}\n" \
                 "data: {{kube-proxy-replacement: 'true', enable-wireguard: '{wg}'}}\n"
    agent = ("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: cilium, namespace: cilium}\nspec:\n"
             "  template: {spec: {containers: [{name: cilium-agent, image: 'quay.io/cilium/cilium:v1.19.1'}]}}\n")
    files = {**flux_cluster("one", "infra"), "infra/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
             "infra/a.yaml": config_map.format(ns="kube-system", wg="true"),
             "infra/b.yaml": config_map.format(ns="cilium", wg="false")}
    write_tree(tmp_path / "without-agent", files)
    _, report = audit_json(str(tmp_path / "without-agent"), "--rule", "wireguard-disabled")
    status = rule_of(report, "wireguard-disabled")
    assert status["status"] == "not-run" and "2 cilium-config ConfigMaps with different data" in status["reason"]
    # The agent mounts the ConfigMap of its own namespace: with the agent in the input, that one is in effect.
    write_tree(tmp_path / "with-agent", {**files, "infra/kustomization.yaml": "resources: [a.yaml, b.yaml, c.yaml]\n",
                                         "infra/c.yaml": agent})
    _, report = audit_json(str(tmp_path / "with-agent"), "--rule", "wireguard-disabled")
    assert findings(report) == [("one", "wireguard-disabled", "ConfigMap/cilium/cilium-config")]


# --- the command line ------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (("--cluster", "prod"), "Invalid value for '--cluster': expected NAME=PATH"),
    (("--cluster", "(x)=clusters/lab"), "a cluster name cannot start with '('"),
    (("--cluster", "a=clusters/lab", "--cluster", "a=clusters/edge"), "cluster 'a' given twice"),
])
def test_bad_cluster_options_are_one_line_errors(args: tuple[str, ...], message: str) -> None:
    result = run_cli(TWO_SITES, *args)
    assert result.code == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_cluster_options_need_one_folder() -> None:
    result = run_cli(f"{TWO_SITES}/apps/web/service.yaml", "--cluster", "a=apps")
    assert result.code == 2 and "give exactly one folder" in result.stderr


def test_a_cluster_path_not_in_the_tree_is_a_problem_of_the_run(tmp_path: Path) -> None:
    _, report = audit_json(TWO_SITES, "--cluster", "lab=clusters/lab", "--cluster", "gone=clusters/gone")
    assert [c["name"] for c in report["target"]["clusters"]] == ["lab", "(unreached)"]
    assert report["target"]["repository"]["problems"] == [
        {"file": f"{TWO_SITES}/clusters/gone", "message": "cluster gone: clusters/gone is not in the tree"}]


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "markdown", "prometheus", "codequality"])
def test_every_report_format_renders_a_tree_the_same_twice(fmt: str) -> None:
    epoch = {"SOURCE_DATE_EPOCH": "1798675200"}  # the Prometheus report's timestamp (docs/json-report.md)
    first = run_cli(TWO_SITES, "--format", fmt, *AS_OF, env=epoch)
    second = run_cli(TWO_SITES, "--format", fmt, *AS_OF, env=epoch)
    assert first.code == 1 and "Traceback" not in first.stderr, first.stderr
    assert first.stdout == second.stdout


def test_sarif_and_markdown_show_the_clusters_and_the_namespace_origin() -> None:
    sarif = json.loads(run_cli(TWO_SITES, "--format", "sarif", *AS_OF).stdout)
    run = sarif["runs"][0]
    assert [c["name"] for c in run["properties"]["clusters"]] == ["edge", "lab"]  # everything is deployed
    located = [r for r in run["results"] if r["locations"][0]["logicalLocations"][0]["name"] == "web"
               and r["locations"][0]["logicalLocations"][0]["properties"]["kind"] == "Service"]
    origins = {r["locations"][0]["logicalLocations"][0]["properties"]["namespaceFrom"]["reason"] for r in located}
    assert origins == {"kustomize"}
    markdown = run_cli(TWO_SITES, "--format", "markdown", *AS_OF).stdout
    assert "- edge: 10 objects \\(clusters/edge; Flux bootstrap at clusters/edge/flux-system/gotk-sync.yaml:13\\)" in (
        markdown)
    assert "<br>namespace web from tests/fixtures/gitops/two-sites/apps/kustomization.yaml:3" in markdown


def test_the_worked_example_of_docs_input_md_is_what_audit_prints() -> None:
    """Every line of the example in docs/input.md ("GitOps repositories") is in the command's output, in order,
    but the lines shortened there (`...`)."""
    text = (ROOT / "docs" / "input.md").read_text(encoding="utf-8")
    block = text.split("### Worked example", 1)[1].split("```console\n", 1)[1].split("```", 1)[0]
    command, *expected = block.splitlines()
    args = command.removeprefix("$ COLUMNS=100 audit ").split()
    result = run_cli(*args, *AS_OF, env={"COLUMNS": "100"})
    assert result.code == 1, result.stderr
    actual = result.stdout.splitlines()
    position = 0
    for line in expected:
        if "..." in line:
            continue
        assert line in actual[position:], f"not printed (in this order): {line!r}"
        position = actual.index(line, position) + 1
