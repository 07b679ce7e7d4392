"""Argo CD Applications whose path is a Helm chart folder of the tree (tests/fixtures/gitops/argocharts).

An app of apps (bootstrap/root.yaml) deploys an ApplicationSet whose git directories generator makes one
Application per wrapper chart under charts/ (app-template as a dependency, its values under
`app-template:`), every one with `helm.valueFiles: [values-prod.yaml]` and `ignoreMissingValueFiles`, and
a plain Application manifest (argocd/apps/dashboard.yaml) whose path is a chart, with a valueFiles entry
and a valuesObject. Argo CD renders each chart with its values.yaml, then the valueFiles in order, then
values, valuesObject and parameters (https://argo-cd.readthedocs.io/en/release-3.4/user-guide/helm/):
the Services those values ask for are ways in reported on the Application, at the values line.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from auditor.sources.gitops import ObjectId, Origin, TreeLayout, read_layout
from tests.conftest import run_cli
from tests.test_gitops_audit import GITOPS, audit_json, rel, write_tree

ARGOCHARTS = GITOPS / "argocharts"


@pytest.fixture(scope="module")
def layout() -> TreeLayout:
    return read_layout(str(ARGOCHARTS))


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    _, found = audit_json(rel(ARGOCHARTS))
    return found


def failed(report: dict[str, Any], rule: str, status: str = "failed") -> list[tuple[str, str]]:
    """(Kind/namespace/name, file:line relative to the tree) of each finding of `rule` with `status`."""
    out = []
    for f in report["findings"]:
        if f["rule"] == rule and f["status"] == status:
            obj = f["object"]
            where = f["file"].removeprefix(f"{rel(ARGOCHARTS)}/")
            out.append((f"{obj['kind']}/{obj['namespace']}/{obj['name']}", f"{where}:{f['line']}"))
    return out


def test_each_chart_application_gets_its_chart_values_in_argo_cd_order(layout: TreeLayout) -> None:
    charts = {c.application: c for c in layout.chart_values}
    assert sorted(charts) == ["dashboard", "game", "legacy", "media", "vpn", "web"]
    media = charts["media"]
    # values.yaml first, then the template's valueFiles entry, which only this chart has.
    assert media.files == (("values.yaml", "charts/media/values.yaml"),
                           ("spec.source.helm.valueFiles[0]", "charts/media/values-prod.yaml"))
    assert (media.kind, media.own_object, media.declared_by) == (
        "ApplicationSet", False, ObjectId("argocd/apps/charts.yaml", 2))
    assert (media.destination_namespace, media.destination_origin) == ("media", Origin("argocd/apps/charts.yaml", 29))
    assert charts["vpn"].files == (("values.yaml", "charts/vpn/values.yaml"),)
    dashboard = charts["dashboard"]
    assert (dashboard.kind, dashboard.own_object, dashboard.declared_by) == (
        "Application", True, ObjectId("argocd/apps/dashboard.yaml", 1))
    assert dashboard.files[1] == ("spec.source.helm.valueFiles[0]", "standalone/dashboard/values-lab.yaml")
    notes = {str(n) for n in layout.notes}
    assert ("charts/media/Chart.yaml: Argo CD ApplicationSet media: Helm chart rendered by Argo CD; its values are "
            "read (values.yaml, values-prod.yaml), its templates are not") in notes
    assert ("argocd/apps/charts.yaml:2: Argo CD ApplicationSet vpn: spec.source.helm.valueFiles[0] values-prod.yaml "
            "is not in the tree (ignoreMissingValueFiles: Argo CD skips it): not read") in notes
    assert layout.problems == ()


def test_services_the_chart_values_ask_for_are_reported_on_the_application_at_the_values_line(
        report: dict[str, Any]) -> None:
    assert failed(report, "lb-service-not-excepted") == [
        ("Application/argocd/media", "charts/media/values-prod.yaml:5"),  # valueFiles override values.yaml
        ("Application/argocd/vpn", "charts/vpn/values.yaml:12"),
    ]
    assert failed(report, "nodeport-service-not-excepted") == [
        ("Application/argocd/dashboard", "standalone/dashboard/values-lab.yaml:4"),
        ("Application/argocd/game", "charts/game/values.yaml:12"),
    ]
    # charts/web asks for ClusterIP, charts/legacy's LoadBalancer has `enabled: false`: neither is a way in.
    named = {f["object"]["name"] for f in report["findings"] if f["rule"].endswith("-service-not-excepted")}
    assert not named & {"web", "legacy"}
    vpn = next(f for f in report["findings"] if f["object"]["name"] == "vpn" and f["rule"] == "lb-service-not-excepted")
    tree = rel(ARGOCHARTS)
    assert vpn["message"] == (
        f"app-template.service.vpn.type in {tree}/charts/vpn/values.yaml (the chart's values.yaml; namespace vpn from "
        f"the Argo CD destination at {tree}/argocd/apps/charts.yaml:29) requests a LoadBalancer Service (51820/UDP): "
        "declared in values; the rendered Service is what a live audit sees")
    # The generated Application lives in its ApplicationSet's namespace.
    origin = vpn["namespaceFrom"]
    assert (origin["namespace"], origin["reason"], origin["file"], origin["line"]) == (
        "argocd", "manifest", f"{tree}/argocd/apps/charts.yaml", 6)
    dashboard = next(f for f in report["findings"] if f["object"]["name"] == "dashboard"
                     and f["rule"] == "nodeport-service-not-excepted")
    assert "spec.source.helm.valueFiles[0] of the Application; namespace monitoring" in dashboard["message"]
    assert dashboard["namespaceFrom"]["file"] == f"{tree}/argocd/apps/dashboard.yaml"


def test_generated_applications_are_objects_of_their_cluster_once(report: dict[str, Any]) -> None:
    assert report["duplicateObjects"] == []
    (cluster,) = report["target"]["clusters"]
    # The cluster's objects are those of its files: the two Applications and the ApplicationSet.
    assert (cluster["name"], cluster["objects"]) == ("argocharts", 3)
    # The generated ones, one per folder of the ApplicationSet's `charts/*` directories, are counted apart: no
    # file holds them (the text report says so too).
    charts = sorted(p.name for p in (ARGOCHARTS / "charts").iterdir() if (p / "Chart.yaml").is_file())
    assert cluster["generatedApplications"] == len(charts)
    text = run_cli(rel(ARGOCHARTS), "--as-of", "2026-12-01").stdout
    assert f"argocharts: 3 objects and {len(charts)} generated Applications" in " ".join(text.split())
    # A generated Application is no workload: nothing runs pods of its own.
    hostnetwork = next(r for r in report["rules"] if r["id"] == "hostnetwork-pod-not-excepted")
    assert hostnetwork["status"] == "not-run"


def test_an_exception_on_the_application_excepts_its_chart_service(tmp_path: Path) -> None:
    exceptions = write_tree(tmp_path, {"exceptions.yaml": """\
        exceptions:
          - name: wireguard-endpoint
            rules: [lb-service-not-excepted]
            match: {kind: Application, namespace: argocd, name: vpn}
            reason: The VPN endpoint is published on its own LAN address (ticket NET-12).
        """}) / "exceptions.yaml"
    _, report = audit_json(rel(ARGOCHARTS), "--exceptions", str(exceptions))
    assert failed(report, "lb-service-not-excepted", "excepted") == [
        ("Application/argocd/vpn", "charts/vpn/values.yaml:12")]
    assert failed(report, "lb-service-not-excepted") == [
        ("Application/argocd/media", "charts/media/values-prod.yaml:5")]
    (entry,) = report["exceptions"]
    assert (entry["status"], entry["matched"]) == ("used", 1)


def test_a_generated_application_carries_its_templates_plain_labels_for_exceptions(tmp_path: Path) -> None:
    """An ApplicationSet template's labels are on each Application it generates (as Argo CD creates them), so
    an exception matching by label covers a chart Service of one; a label whose value holds a placeholder
    Argo CD fills per directory is filled, one never filled is left off (not guessed)."""
    tree = tmp_path / "tree"
    shutil.copytree(ARGOCHARTS, tree)
    appset = tree / "argocd" / "apps" / "charts.yaml"
    appset.write_text(appset.read_text().replace(
        "    metadata:\n      name: '{{path.basename}}'\n",
        "    metadata:\n      name: '{{path.basename}}'\n      labels:\n        exposure: lan\n"
        "        app: '{{path.basename}}'\n        unknown: '{{nothing.here}}'\n", 1))
    exceptions = write_tree(tmp_path, {"exceptions.yaml": """\
        exceptions:
          - name: lan-apps
            rules: [lb-service-not-excepted]
            match: {kind: Application, name: "*", labels: {exposure: lan, app: vpn}}
            reason: Published on the LAN by design (ticket NET-12).
        """}) / "exceptions.yaml"
    _, report = audit_json(str(tree), "--exceptions", str(exceptions))
    excepted = [f["object"]["name"] for f in report["findings"]
                if f["rule"] == "lb-service-not-excepted" and f["status"] == "excepted"]
    still = [f["object"]["name"] for f in report["findings"]
             if f["rule"] == "lb-service-not-excepted" and f["status"] == "failed"]
    assert excepted == ["vpn"] and "media" in still  # the app label was filled per directory
    # A label left unfilled is no label: an exception needing it matches nothing.
    exceptions.write_text(exceptions.read_text().replace("app: vpn", "unknown: x"))
    _, report = audit_json(str(tree), "--exceptions", str(exceptions))
    assert not [f for f in report["findings"] if f["status"] == "excepted"]


APP = """\
    apiVersion: argoproj.io/v1alpha1
    kind: Application
    metadata: {{name: {name}, namespace: argocd}}
    spec:
      source:
        repoURL: https://example.com/lab.git
        targetRevision: main
        path: {path}
{helm}      destination: {{server: https://kubernetes.default.svc, namespace: {name}}}
    """
CHART = "apiVersion: v2\nname: {name}\nversion: 0.0.0\n"
LB_VALUES = "service:\n  main:\n    type: LoadBalancer\n    ports: {http: {port: 80}}\n"


def test_inline_values_win_over_value_files_which_win_over_the_chart_values(tmp_path: Path) -> None:
    """values.yaml asks for a LoadBalancer, the valueFiles entry for ClusterIP, valuesObject for a NodePort:
    valuesObject wins, and the finding points at its line in the Application."""
    helm = ("        helm:\n          valueFiles: [values-lab.yaml]\n"
            "          valuesObject:\n            service:\n              main:\n                type: NodePort\n")
    write_tree(tmp_path, {
        "apps/root.yaml": APP.format(name="root", path="argocd", helm=""),
        "argocd/api.yaml": APP.format(name="api", path="charts/api", helm=helm),
        "charts/api/Chart.yaml": CHART.format(name="api"),
        "charts/api/values.yaml": LB_VALUES,
        "charts/api/values-lab.yaml": "service:\n  main:\n    type: ClusterIP\n",
    })
    _, report = audit_json(str(tmp_path), "--rule", "lb-service-not-excepted", "--rule",
                           "nodeport-service-not-excepted")
    found = [(f["rule"], f["object"]["name"], f["file"].removeprefix(f"{tmp_path}/"), f["line"])
             for f in report["findings"]]
    assert found == [("nodeport-service-not-excepted", "api", "argocd/api.yaml", 14)]
    assert report["findings"][0]["message"].startswith("spec.source.helm.valuesObject.service.main.type requests")


def test_a_missing_value_file_is_a_problem_and_a_generated_application_never_shadows_a_declared_one(
        tmp_path: Path) -> None:
    generator = """\
        apiVersion: argoproj.io/v1alpha1
        kind: ApplicationSet
        metadata: {name: charts, namespace: argocd}
        spec:
          generators:
            - git: {repoURL: https://example.com/lab.git, revision: main, directories: [{path: charts/*}]}
          template:
            metadata: {name: '{{path.basename}}'}
            spec:
              source: {repoURL: https://example.com/lab.git, targetRevision: main, path: '{{path}}'}
              destination: {server: https://kubernetes.default.svc, namespace: '{{path.basename}}'}
        """
    write_tree(tmp_path, {
        "apps/root.yaml": APP.format(name="root", path="argocd", helm=""),
        "argocd/charts.yaml": generator,
        # An Application of the same identity as one the ApplicationSet generates: Argo CD keeps this one.
        "argocd/api.yaml": APP.format(name="api", path="charts/api", helm=(
            "        helm: {valueFiles: [values-missing.yaml]}\n")),
        "charts/api/Chart.yaml": CHART.format(name="api"),
        "charts/api/values.yaml": LB_VALUES,
    })
    _, report = audit_json(str(tmp_path), "--rule", "lb-service-not-excepted")
    assert report["duplicateObjects"] == []
    found = [(f["object"]["name"], f["file"].removeprefix(f"{tmp_path}/"), f["line"]) for f in report["findings"]]
    assert found == [("api", "charts/api/values.yaml", 3)]
    remarks = {(r.get("file", "").removeprefix(f"{tmp_path}/"), r["message"])
               for r in report["target"]["repository"]["problems"] + report["target"]["repository"]["notes"]}
    assert ("argocd/api.yaml", "Argo CD Application api: spec.source.helm.valueFiles[0] charts/api/values-missing.yaml "
            "is not in the tree (Argo CD fails to render the chart without it)") in remarks
    assert ("argocd/charts.yaml", "Argo CD ApplicationSet api: Application argocd/api is already an object of "
            f"{tmp_path.name}; the values of chart charts/api are not read for it") in remarks


def test_external_traffic_policy_in_chart_values_is_judged_as_on_a_rendered_service(tmp_path: Path) -> None:
    """The same rule ids as for a rendered Service: `externalTrafficPolicy: Local` under L2 announcements."""
    write_tree(tmp_path, {
        "apps/root.yaml": APP.format(name="root", path="argocd", helm=""),
        "argocd/api.yaml": APP.format(name="api", path="charts/api", helm=""),
        "argocd/cilium.yaml": APP.format(name="kube-system", path="infra", helm=""),
        "charts/api/Chart.yaml": CHART.format(name="api"),
        "charts/api/values.yaml": LB_VALUES + "    externalTrafficPolicy: Local\n",
        "infra/cilium-config.yaml": ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cilium-config}\n"
                                     "data: {enable-l2-announcements: \"true\"}\n"),
        "infra/l2.yaml": ("apiVersion: cilium.io/v2alpha1\nkind: CiliumL2AnnouncementPolicy\nmetadata: {name: all}\n"
                          "spec: {loadBalancerIPs: true}\n"),
    })
    _, report = audit_json(str(tmp_path), "--rule", "etp-local-under-l2")
    found = [(f["status"], f["object"]["kind"], f["object"]["name"], f["file"].removeprefix(f"{tmp_path}/"), f["line"])
             for f in report["findings"]]
    assert found == [("failed", "Application", "api", "charts/api/values.yaml", 3)]


def test_an_application_declared_in_argocd_apps_values_is_read_with_its_chart_values(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "bootstrap/root.yaml": APP.format(name="argocd", path="system/argocd", helm=""),
        "system/argocd/Chart.yaml": ("apiVersion: v2\nname: argocd\nversion: 0.0.0\ndependencies:\n"
                                     "  - {name: argocd-apps, version: 2.0.0, "
                                     "repository: https://argoproj.github.io/argo-helm}\n"),
        "system/argocd/values.yaml": """\
            argocd-apps:
              applications:
                game:
                  namespace: argocd
                  source: {repoURL: https://example.com/lab.git, targetRevision: main, path: charts/game}
                  destination: {name: in-cluster, namespace: games}
            """,
        "charts/game/Chart.yaml": CHART.format(name="game"),
        "charts/game/values.yaml": "service:\n  main:\n    type: NodePort\n    ports: {game: {port: 25565}}\n",
    })
    _, report = audit_json(str(tmp_path), "--rule", "nodeport-service-not-excepted")
    (game,) = report["findings"]
    assert (game["object"]["kind"], game["object"]["namespace"], game["object"]["name"]) == ("Application", "argocd",
                                                                                             "game")
    assert (game["file"].removeprefix(f"{tmp_path}/"), game["line"]) == ("charts/game/values.yaml", 3)
    assert "namespace games from the Argo CD destination at" in game["message"]
    origin = game["namespaceFrom"]
    assert (origin["reason"], origin["file"].removeprefix(f"{tmp_path}/"), origin["line"]) == (
        "manifest", "system/argocd/values.yaml", 4)
    assert origin["description"].endswith("(as the argocd-apps values say)")
