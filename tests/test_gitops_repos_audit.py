"""`audit REPO` on the five whole GitOps repositories of ../shared/gitops, as their owners would read it.

Each repository is audited once with the real command (JSON report,
validated against the schema): never exit 2, never a traceback. Per
repository, the clusters found, the namespace coverage (at least 90 % of
namespaced objects have the namespace kustomize, Flux or Argo CD give them)
and a few findings are pinned. Every finding pinned here was checked by hand
in the repository's files; the comment beside it says what the owner wrote
and why the finding (or its absence) is what they would agree with. Skipped
when the repositories are not there.

Figures before this audit read repositories per cluster (one scope for the
whole tree, for comparison): carpenike 23 failed findings (17 LoadBalancer
Services, most of them in `_archive/`), samip5 51 (Gateways, Ingresses and
Namespaces of folders the owner commented out, and Cilium rules judged with
the first of the two clusters' HelmReleases).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ci_support import report_validator
from tests.conftest import ROOT, run_cli

GITOPS = ROOT.parent / "shared" / "gitops"
AS_OF = ("--as-of", "2026-11-29")
REPOS = ("onedr0p__home-ops", "bjw-s-labs__home-ops", "carpenike__k8s-gitops", "samip5__k8s-cluster",
         "khuedoan__homelab")

# (name, kind, root, entry point kinds, audited) of each scope, in report order.
CLUSTERS = {
    "onedr0p__home-ops": [("onedr0p__home-ops", "cluster", "", ["FluxInstance sync"], True),
                          ("(unreached)", "unreached", "", [], False)],
    "bjw-s-labs__home-ops": [("bjw-s-labs__home-ops", "cluster", "", ["FluxInstance sync"], True),
                             ("(unreached)", "unreached", "", [], False)],
    "carpenike__k8s-gitops": [("cluster-0", "cluster", "kubernetes/cluster-0", ["Flux bootstrap"], True),
                              ("nas-1", "cluster", "kubernetes/nas-1", ["Flux bootstrap"], True),
                              ("(unreached)", "unreached", "", [], False)],
    "samip5__k8s-cluster": [("media", "cluster", "k8s/media", ["Flux bootstrap"], True),
                            ("nebula", "cluster", "k8s/nebula", ["Flux bootstrap"], True),
                            ("(unreached)", "unreached", "", [], False)],
    "khuedoan__homelab": [("khuedoan__homelab", "cluster", "", ["Argo CD app of apps"], True),
                          ("(unreached)", "unreached", "", [], False)],
}
# Namespaced objects of the tree with an effective namespace, as the JSON report gives them.
COVERAGE = {
    "onedr0p__home-ops": (345, 348),
    "bjw-s-labs__home-ops": (403, 403),
    "carpenike__k8s-gitops": (507, 524),
    "samip5__k8s-cluster": (570, 580),
    "khuedoan__homelab": (0, 6),
}


@pytest.fixture(scope="module")
def reports() -> dict[str, dict[str, Any]]:
    if not GITOPS.is_dir():
        pytest.skip(f"shared GitOps repositories not present at {GITOPS}")
    validator = report_validator()
    out: dict[str, dict[str, Any]] = {}
    for repo in REPOS:
        result = run_cli(str(GITOPS / repo), "--format", "json", *AS_OF, timeout=300)
        assert result.code in (0, 1, 3), f"{repo}: exit {result.code}: {result.stderr}"
        assert "Traceback" not in result.stderr, result.stderr
        report = json.loads(result.stdout)
        errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
        assert not errors, f"{repo}: " + "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
        out[repo] = report
    return out


def found(report: dict[str, Any], repo: str, rule: str | None = None) -> list[tuple[Any, ...]]:
    """(cluster, rule, Kind/namespace/name, file:line relative to the repository) of each failed finding."""
    prefix = f"{GITOPS / repo}/"
    out = []
    for f in report["findings"]:
        if f["status"] == "failed" and (rule is None or f["rule"] == rule):
            obj = f["object"]
            name = "/".join(p for p in (obj["kind"], obj["namespace"], obj["name"]) if p)
            out.append((f.get("cluster"), f["rule"], name, f"{f['file'].removeprefix(prefix)}:{f.get('line')}"))
    return out


def finding(report: dict[str, Any], rule: str, name: str, cluster: str | None = None) -> dict[str, Any]:
    (match,) = [f for f in report["findings"] if f["rule"] == rule and f["object"]["name"] == name
                and (cluster is None or f.get("cluster") == cluster)]
    return match


def origin(entry: dict[str, Any], repo: str) -> tuple[str, str, str]:
    source = entry["namespaceFrom"]
    where = source["file"].removeprefix(f"{GITOPS / repo}/")
    return source["namespace"], source["reason"], f"{where}:{source['line']}"


def rule_status(report: dict[str, Any], rule: str) -> dict[str, Any]:
    return next(r for r in report["rules"] if r["id"] == rule)


@pytest.mark.parametrize("repo", REPOS)
def test_clusters_found(reports: dict[str, dict[str, Any]], repo: str) -> None:
    scopes = [(c["name"], c["kind"], c["root"], [e["kind"] for e in c["entryPoints"]], c["audited"])
              for c in reports[repo]["target"]["clusters"]]
    assert scopes == CLUSTERS[repo]


@pytest.mark.parametrize("repo", REPOS)
def test_namespace_coverage_through_the_report(reports: dict[str, dict[str, Any]], repo: str) -> None:
    coverage = reports[repo]["target"]["repository"]["namespaceCoverage"]
    assert (coverage["withNamespace"], coverage["namespaced"]) == COVERAGE[repo]
    if repo != "khuedoan__homelab":  # every app there is a Helm chart: see test_khuedoan_homelab
        assert coverage["withNamespace"] / coverage["namespaced"] >= 0.90


def test_onedr0p_home_ops(reports: dict[str, dict[str, Any]]) -> None:
    repo = "onedr0p__home-ops"
    report = reports[repo]
    cluster = "onedr0p__home-ops"
    apps = "kubernetes/apps/default"
    assert [f[2:] for f in found(report, repo, "lb-service-not-excepted")] == [
        # Each is an app-template `service.<name>.type: LoadBalancer` in the release's values (go2rtc's RTSP/WebRTC,
        # Plex, the torrent and Soulseek peers, the SMTP relay): published straight on the LAN, not through envoy.
        ("HelmRelease/default/go2rtc", f"{apps}/go2rtc/app/helmrelease.yaml:60"),
        ("HelmRelease/default/plex", f"{apps}/plex/app/helmrelease.yaml:71"),
        ("HelmRelease/default/qbittorrent", f"{apps}/qbittorrent/app/helmrelease.yaml:71"),
        ("HelmRelease/default/slskd", f"{apps}/slskd/app/helmrelease.yaml:81"),
        ("HelmRelease/default/smtp-relay", f"{apps}/smtp-relay/app/helmrelease.yaml:55"),
        # A plain Service publishing the Kubernetes API (6443) on 192.168.69.120 (cilium/app/networking.yaml).
        ("Service/kube-system/kube-api", "kubernetes/apps/kube-system/cilium/app/networking.yaml:64"),
    ]
    assert {f[0] for f in found(report, repo)} == {cluster}
    # The HelmRelease writes no namespace: Plex's Flux Kustomization sets targetNamespace: default (ks.yaml:22).
    plex = finding(report, "lb-service-not-excepted", "plex")
    assert origin(plex, repo) == ("default", "flux-targetNamespace", "kubernetes/apps/default/plex/ks.yaml:22")
    # Its address 192.168.69.128 is in the pool 192.168.69.0/24 and announced over BGP by the advertisement
    # that selects every Service (selector: somekey NotIn [never-used-value]) in the same networking.yaml.
    (plex_ip,) = [e for e in report["exposures"] if e["subject"]["object"]["name"] == "plex"
                  and e["address"]["kind"] == "load-balancer-ip"]
    assert (plex_ip["address"]["value"], plex_ip["address"]["pools"]) == ("192.168.69.128", ["pool"])
    assert [(b["kind"], b["object"]["name"]) for b in plex_ip["announcement"]["by"]] == [
        ("bgp", "l3-bgp-advertisement")]
    assert found(report, repo, "lb-pool-unapproved-range") == [
        (cluster, "lb-pool-unapproved-range", "CiliumLoadBalancerIPPool/pool",
         "kubernetes/apps/kube-system/cilium/app/networking.yaml:3")]
    # The runner scale set the owner commented out of kubernetes/apps/actions-runner-system is not deployed.
    folders = {f["folder"] for f in report["target"]["repository"]["unreached"]["folders"]}
    assert "kubernetes/apps/actions-runner-system" in folders


def test_bjw_s_home_ops(reports: dict[str, dict[str, Any]]) -> None:
    repo = "bjw-s-labs__home-ops"
    report = reports[repo]
    # cilium/app/httproute.yaml routes hubble.bjw-s.dev through envoy-internal to the hubble-ui Service.
    hubble = finding(report, "hubble-ui-exposed", "hubble-ui")
    assert (hubble["object"]["kind"], hubble["object"]["namespace"]) == ("HTTPRoute", "kube-system")
    assert origin(hubble, repo) == ("kube-system", "flux-targetNamespace",
                                    "kubernetes/apps/kube-system/cilium/ks.yaml:15")
    # Jellyfin's app-template values: service.app.type: LoadBalancer with lbipam.cilium.io/ips 10.1.6.62.
    jellyfin = finding(report, "lb-service-not-excepted", "jellyfin")
    assert (jellyfin["file"].endswith("kubernetes/apps/media/jellyfin/app/helmrelease.yaml"), jellyfin["line"]) == (
        True, 114)
    assert origin(jellyfin, repo) == ("media", "flux-targetNamespace", "kubernetes/apps/media/jellyfin/ks.yaml:28")
    # The pool (cilium/config/pool.yaml) hands out 10.1.6.30-10.1.6.199, outside the platform's approved range.
    assert [f[2:] for f in found(report, repo, "lb-pool-unapproved-range")] == [
        ("CiliumLoadBalancerIPPool/pool", "kubernetes/apps/kube-system/cilium/config/pool.yaml:3")]


def test_carpenike_k8s_gitops(reports: dict[str, dict[str, Any]]) -> None:
    repo = "carpenike__k8s-gitops"
    report = reports[repo]
    # cluster-0's Postgres is published as a LoadBalancer on 5432 (cloudnative-pg/cluster/service.yaml), with the
    # old io.cilium/lb-ipam-ips annotation; targetNamespace db of its Flux Kustomization (ks.yaml:31) places it.
    postgres = finding(report, "lb-service-not-excepted", "postgres-lb")
    assert (postgres["cluster"], postgres["object"]["namespace"]) == ("cluster-0", "db")
    assert origin(postgres, repo) == ("db", "flux-targetNamespace",
                                      "kubernetes/cluster-0/apps/db/cloudnative-pg/ks.yaml:31")
    assert found(report, repo, "lb-ipam-legacy-annotation") == [
        ("cluster-0", "lb-ipam-legacy-annotation", "Service/db/postgres-lb",
         "kubernetes/cluster-0/apps/db/cloudnative-pg/cluster/service.yaml:2")]
    # The pool is written as cilium.io/v2alpha1 (cilium/config/pool.yaml) and announced over BGP: the
    # bgpControlPlane switch is read from app/values.yaml, the configMapGenerator file the HelmRelease's
    # valuesFrom reads (its own `values` hold only a few keys).
    assert [f[2:] for f in found(report, repo, "lb-pool-v2alpha1")] == [
        ("CiliumLoadBalancerIPPool/main-pool", "kubernetes/cluster-0/apps/kube-system/cilium/config/pool.yaml:2")]
    armed = finding(report, "lb-pool-not-armed", "main-pool")
    assert "enable-bgp-control-plane=true from bgpControlPlane.enabled in " in armed["message"]
    assert "kubernetes/cluster-0/apps/kube-system/cilium/app/values.yaml:7 (valuesFrom[0] of " in armed["message"]
    # nas-1 deploys no Cilium at all (its kube-system holds external-secrets and traefik): its Cilium rules do
    # not run, where one scope judged it with cluster-0's values.
    kpr = rule_status(report, "kpr-not-enabled")
    assert kpr["status"] == "not-run" and kpr["reason"].startswith("nas-1: ")
    assert found(report, repo, "lb-service-not-excepted")[-1] == (
        "nas-1", "lb-service-not-excepted", "HelmRelease/network/nginx-internal",
        "kubernetes/nas-1/apps/network/ingress-nginx/internal/helmrelease.yaml:40")
    # _archive/ (its owner's history) is deployed by nothing and not audited.
    assert not any("_archive/" in f["file"] for f in report["findings"])
    assert len(found(report, repo, "lb-service-not-excepted")) == 7


def test_samip5_k8s_cluster(reports: dict[str, dict[str, Any]]) -> None:
    repo = "samip5__k8s-cluster"
    report = reports[repo]
    # nebula's Cilium values come from app/values.yaml through a configMapGenerator and valuesFrom; they ask for
    # hubble.relay.service.type: LoadBalancer (values.yaml:106).
    relay = finding(report, "lb-service-not-excepted", "cilium", "nebula")
    assert relay["file"].endswith("k8s/nebula/apps/kube-system/cilium/app/values.yaml") and relay["line"] == 106
    assert relay["message"].startswith("hubble.relay.service.type in ")
    # Each cluster's pools are its own (each cluster's cilium/config/loadbalancer-ips.yaml, all v2alpha1).
    pools = {(f[0], f[2].removeprefix("CiliumLoadBalancerIPPool/")) for f in found(report, repo, "lb-pool-v2alpha1")}
    assert pools == {("media", "dn42-kube-pool"), ("media", "main-pool"), ("media", "svc-pool"),
                     ("nebula", "main-pool"), ("nebula", "public-v6")}
    # media's Jellyfin asks for a LoadBalancer in its values (hr.yaml:67).
    assert ("media", "lb-service-not-excepted", "HelmRelease/media/jellyfin",
            "k8s/media/apps/media/jellyfin/app/hr.yaml:67") in found(report, repo)
    # The Cilium Gateways (apps/kube-system/cilium/gateway) are not deployed: both clusters comment out
    # cilium/ks-gateway.yaml. One scope failed gateway-api-disabled on them three times.
    assert found(report, repo, "gateway-api-disabled") == []
    assert not any("/cilium/gateway/" in f["file"] for f in report["findings"])
    # Namespace "system" is applied from two folders with different labels in nebula: said once, naming both.
    warnings = [w["message"] for w in report["target"]["repository"]["warnings"]]
    assert any(w.startswith("2 cluster-scoped Namespace named system in scope nebula (different: ") for w in warnings)
    # Most of k8s/nebula/apps is commented out of its kustomization.yaml: not deployed, not audited.
    assert report["target"]["repository"]["unreached"]["folders"][0] == {"folder": "k8s/nebula/apps", "objects": 255}


def test_khuedoan_homelab(reports: dict[str, dict[str, Any]]) -> None:
    """Every app is a wrapper Helm chart Argo CD renders: the ApplicationSet `root` in the argocd chart's values
    (system/argocd/values.yaml) generates one Application per folder of system/, platform/ and apps/, each in
    the namespace named after its folder. The charts' values.yaml are read as those Applications' Helm values
    (their templates are not): its one LoadBalancer, app-template's `service.wireguard.type` under the
    `app-template:` key of apps/wireguard/values.yaml, is reported on the generated Application, at that line."""
    repo = "khuedoan__homelab"
    report = reports[repo]
    tree = GITOPS / repo
    assert found(report, repo, "lb-service-not-excepted") == [
        (repo, "lb-service-not-excepted", "Application/argocd/wireguard", "apps/wireguard/values.yaml:19")]
    wireguard = finding(report, "lb-service-not-excepted", "wireguard")
    assert wireguard["message"].startswith(
        f"app-template.service.wireguard.type in {tree}/apps/wireguard/values.yaml (the chart's values.yaml; "
        f"namespace wireguard from the Argo CD destination at {tree}/system/argocd/values.yaml:50) requests a "
        "LoadBalancer Service (51820/UDP)")
    # The generated Applications live in the ApplicationSet's namespace, which its argocd-apps entry gives.
    assert origin(wireguard, repo) == ("argocd", "manifest", "system/argocd/values.yaml:35")
    # Each generated Application deploys into its folder's namespace, and the tree holds no network policy.
    folders = sorted(chart.parent.name for group in ("system", "platform", "apps")
                     for chart in (tree / group).glob("*/Chart.yaml"))
    assert sorted(f[2] for f in found(report, repo, "namespace-missing-default-deny")) == [
        f"Namespace/{name}" for name in folders]
    assert report["duplicateObjects"] == []
    (cluster, unreached) = report["target"]["clusters"]
    assert (cluster["objects"], unreached["objects"]) == (0, 6)  # objects of its files: the Applications are generated
    # ... and counted apart: one per chart folder the ApplicationSet's directories reach (argocd's own included).
    assert cluster["generatedApplications"] == len(folders) and "generatedApplications" not in unreached
    notes = [n for n in report["target"]["repository"]["notes"]
             if n.get("file", "").endswith("apps/wireguard/Chart.yaml")]
    assert [n["message"] for n in notes] == [
        "Argo CD ApplicationSet wireguard: Helm chart rendered by Argo CD; its values are read (values.yaml), its "
        "templates are not"]
