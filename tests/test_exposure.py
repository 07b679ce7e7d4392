"""The exposure model (auditor/exposure), end to end and piece by piece (issue 12).

- The fixture cluster tests/fixtures/clusters/exposure.yaml (built by build.py) holds every way in
  the model knows; it is audited through the CLI like any input, and the JSON report's `exposures`
  is checked entry by entry, under each posture mode.
- The platform's own repository (../shared/corpus, gateway-era) is audited in mode l4 with an
  exposure contract shaped like the platform's.
- The selector semantics of every field the model reads, the values walker on the real GitOps
  repositories of ../shared/gitops, the line locator, and the model's query API.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from auditor import exposure
from auditor.cilium import config as cilium_config
from auditor.errors import InputError
from auditor.exposure.lines import KeyLines, find_key_line
from auditor.exposure.values import declared_services
from auditor.posture import Posture
from auditor.snapshot import Snapshot
from auditor.sources.files import read_paths
from tests.ci_support import report_validator
from tests.conftest import FIXTURES, ROOT, run_cli

CLUSTER = FIXTURES / "clusters" / "exposure.yaml"
POSTURE = FIXTURES / "clusters" / "exposure-posture.yaml"
EXCEPTIONS = FIXTURES / "clusters" / "exposure-exceptions.yaml"
L4_POSTURE = FIXTURES / "exposure" / "l4-posture.yaml"
GITOPS = ROOT.parent / "shared" / "gitops"
AS_OF = ("--as-of", "2026-06-01")


def _audit(*args: str, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    result = run_cli(*args, "--format", "json", *AS_OF, cwd=cwd)
    assert result.code in (0, 1), result.stderr
    return result.code, json.loads(result.stdout)


def _ways(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Exposures by (channel, subject Kind/ns/name, port/protocol[@listener])."""
    out = {}
    for entry in report["exposures"]:
        subject = entry["subject"]["object"]
        name = "/".join(p for p in (subject["kind"], subject["namespace"], subject["name"]) if p)
        listener = f"@{entry['listener']['name']}" if entry["listener"] else ""
        out[(entry["channel"], name, f"{entry['port']}/{entry['protocol']}{listener}")] = entry
    return out


# --- the fixture cluster: every channel ----------------------------------------------------------


@pytest.fixture(scope="module")
def fixture_report() -> dict[str, Any]:
    code, report = _audit(str(CLUSTER), "--posture", str(POSTURE), "--exceptions", str(EXCEPTIONS))
    assert code == 1
    return report


def test_the_fixture_uses_every_channel_and_every_declaration(fixture_report: dict[str, Any]) -> None:
    entries = fixture_report["exposures"]
    assert {e["channel"] for e in entries} == {"load-balancer", "node-port", "external-ip", "host-port", "host-network"}
    assert {e["subject"]["declared"] for e in entries} == {"object", "helm-values", "controller"}
    assert {e["verdict"]["status"] for e in entries} == {"sanctioned", "excepted", "drift"}
    assert not list(report_validator().iter_errors(fixture_report))


def test_each_way_in_carries_its_chain_and_verdict(fixture_report: dict[str, Any]) -> None:
    ways = _ways(fixture_report)
    edge = ways[("load-balancer", "Service/gateway/cilium-gateway-edge", "443/TCP@websecure")]
    assert edge["address"] == {"kind": "load-balancer-ip", "value": "192.168.67.240", "display": "192.168.67.240",
                               "detail": "requested by annotation lbipam.cilium.io/ips", "pools": ["bench-pool"]}
    assert edge["subject"]["declared"] == "controller"  # no such Service in the tree: Cilium will make it
    assert [(a["kind"], a["object"]["name"], a["interfaces"]) for a in edge["announcement"]["by"]] == [
        ("l2", "default-l2", ["^eth1$"])]
    assert edge["route"]["object"]["name"] == "mlflow" and edge["route"]["hostnames"] == ["mlflow.bench.lan"]
    assert [b["object"]["name"] for b in edge["backends"]] == ["mlflow"]
    assert [w["object"]["name"] for w in edge["workloads"]] == ["mlflow"]
    assert edge["verdict"]["status"] == "sanctioned" and "exposure.edgeGateways gateway/edge" in edge["verdict"]["by"]
    tcp = ways[("load-balancer", "Service/gateway/cilium-gateway-edge", "5432/TCP@postgres")]
    assert tcp["route"]["forwards"] is False and "TCPRoute from 1.20" in tcp["route"]["reason"]
    internal = ways[("load-balancer", "Service/envoy-gateway-system/envoy-network-internal", "80/TCP@http")]
    assert internal["externalTrafficPolicy"] == "Local" and internal["verdict"] == {
        "status": "drift", "rule": "lb-service-not-excepted", "reason": internal["verdict"]["reason"]}
    plex = ways[("load-balancer", "HelmRelease/media/plex", "32400/TCP")]
    assert plex["subject"]["declared"] == "helm-values" and plex["evidence"]["field"] == "spec.values.service.app.type"
    lines = CLUSTER.read_text(encoding="utf-8").splitlines()
    assert lines[plex["subject"]["line"] - 1].strip() == "type: LoadBalancer"  # the values line itself
    mailpit = ways[("host-port", "Deployment/mail/mailpit", "1025/TCP")]
    assert mailpit["verdict"]["by"] == "mailpit-smtp-relay"
    exporter = ways[("host-network", "DaemonSet/monitoring/prometheus-node-exporter", "9100/TCP")]
    assert exporter["verdict"]["by"].startswith("exposure.infrastructure entry */*node-exporter")
    resolver = ways[("external-ip", "Service/dns/resolver", "53/UDP")]
    assert resolver["announcement"]["state"] == "announced"  # default-l2 announces externalIPs too
    assert ways[("load-balancer", "MariaDB/database/mariadb", "None/TCP")]["address"]["value"] == "192.168.67.248"
    assert ("node-port", "Application/argocd/minecraft", "None/TCP") in ways


def test_exposures_are_sorted_by_address_then_port_and_deterministic(fixture_report: dict[str, Any]) -> None:
    entries = fixture_report["exposures"]
    keys = [exposure.Address(exposure.AddressKind(e["address"]["kind"]), e["address"]["value"],
                             e["address"]["detail"], pools=()).sort_key[:3] for e in entries]
    assert keys == sorted(keys)
    first_ip = [e["address"]["value"] for e in entries if e["address"]["value"]]
    assert first_ip[:2] == ["192.168.67.53", "192.168.67.240"]  # numeric, not text, order
    again = run_cli(str(CLUSTER), "--posture", str(POSTURE), "--exceptions", str(EXCEPTIONS), "--format", "json",
                    *AS_OF)
    assert json.loads(again.stdout) == fixture_report


def test_every_verdict_names_its_rule_and_findings_agree(fixture_report: dict[str, Any]) -> None:
    findings = {(f["rule"], f["object"]["kind"], f["object"]["namespace"], f["object"]["name"]): f["status"]
                for f in fixture_report["findings"]}
    for entry in fixture_report["exposures"]:
        verdict, subject = entry["verdict"], entry["subject"]["object"]
        key = (entry["rule"], subject["kind"], subject["namespace"], subject["name"])
        if verdict["status"] == "drift":
            assert findings.get(key) == "failed", entry
        elif verdict["status"] == "excepted":
            assert findings.get(key) == "excepted", entry
        else:
            assert verdict["status"] == "sanctioned" and key not in findings, entry


# --- the same tree under each mode -----------------------------------------------------------------

MODES = {
    "gateway": "exposure:\n  mode: gateway\n",
    "l4": ("exposure:\n  mode: l4\n  allow:\n"
           "    - {kind: Service, name: '*-nodeport', reason: 'ADR 0092: one <service>-nodeport per UI'}\n"
           "    - {namespace: mail, name: mailpit, reason: 'the host relay reaches NodeIP:1025'}\n"),
    "none": "exposure:\n  mode: none\n",
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_same_tree_under_each_mode(tmp_path: Path, mode: str) -> None:
    (tmp_path / "posture.yaml").write_text(MODES[mode], encoding="utf-8")
    _, report = _audit(str(CLUSTER), "--posture", str(tmp_path / "posture.yaml"), "--exceptions",
                       str(ROOT / "exceptions.yaml"))
    ways = _ways(report)
    verdict = {key: entry["verdict"]["status"] for key, entry in ways.items()}
    edge = verdict[("load-balancer", "Service/gateway/cilium-gateway-edge", "443/TCP@websecure")]
    nodeport = verdict[("node-port", "Service/argocd/argocd-server-nodeport", "None/TCP")]
    hostport = verdict[("host-port", "Deployment/mail/mailpit", "1025/TCP")]
    smtp = verdict[("load-balancer", "Service/mail/smtp", "25/TCP")]
    exporter = verdict[("host-network", "DaemonSet/monitoring/prometheus-node-exporter", "9100/TCP")]
    assert exporter == "sanctioned"  # the infrastructure the posture lists, in every mode
    assert smtp == "drift"  # no mode sanctions an application LoadBalancer
    expected = {"gateway": ("sanctioned", "drift", "drift"), "l4": ("drift", "sanctioned", "sanctioned"),
                "none": ("drift", "drift", "drift")}[mode]
    assert (edge, nodeport, hostport) == expected
    if mode == "l4":
        by = ways[("node-port", "Service/argocd/argocd-server-nodeport", "None/TCP")]["verdict"]["by"]
        assert by.startswith("exposure.mode l4: exposure.allow entry Service */*-nodeport")


def test_allow_list_outside_l4_is_noted(tmp_path: Path) -> None:
    (tmp_path / "posture.yaml").write_text(
        "exposure:\n  allow:\n    - {name: x, reason: r}\n", encoding="utf-8")
    _, report = _audit(str(CLUSTER), "--posture", str(tmp_path / "posture.yaml"))
    assert any("read in exposure.mode l4 only" in note for note in report["notes"])


# --- the platform's repository in mode l4, with its exposure contract ------------------------------


def test_platform_repository_in_l4_mode_with_its_contract(corpus: Path) -> None:
    tree = corpus / "univ-lehavre-cluster" / "gateway-era" / "platform"
    _, report = _audit(str(tree), "--posture", str(L4_POSTURE))
    verdicts = {(e["subject"]["object"]["namespace"], e["subject"]["object"]["name"]): e["verdict"]
                for e in report["exposures"] if e["channel"] in ("node-port", "host-port")}
    sanctioned = {key for key, v in verdicts.items() if v["status"] == "sanctioned"}
    assert sanctioned == {
        ("argocd", "argocd-server-nodeport"), ("dagster", "dagster-dagster-webserver-nodeport"),
        ("gitea", "gitea-http-nodeport"), ("monitoring", "kube-prometheus-stack-grafana-nodeport"),
        ("kubernetes-dashboard", "kubernetes-dashboard-nodeport"), ("portal", "portal"), ("mail", "mailpit"),
    }
    assert "contract/endpoints.example.yaml:" in verdicts[("argocd", "argocd-server-nodeport")]["by"]
    # marquez/ and mlflow/ write no metadata.namespace (applied with `kubectl -n`): nothing can name them.
    drift = {key for key, v in verdicts.items() if v["status"] == "drift"}
    assert drift == {(None, "marquez-web-nodeport"), (None, "mlflow-nodeport")}
    finding = next(f for f in report["findings"] if f["object"]["name"] == "mlflow-nodeport")
    assert "the manifest sets no namespace" in finding["message"]
    # ADR 0092 expects no Gateway: the per-UI Gateways still in that tree are drift.
    gateways = [e for e in report["exposures"] if e["subject"]["object"]["kind"] == "Gateway"]
    assert gateways and {e["verdict"]["status"] for e in gateways} == {"drift"}


def test_a_missing_contract_file_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "posture.yaml").write_text("exposure:\n  mode: l4\n  contract: {file: nowhere.yaml}\n",
                                           encoding="utf-8")
    result = run_cli(str(CLUSTER), "--posture", str(tmp_path / "posture.yaml"))
    assert result.code == 2
    assert result.stderr.strip().splitlines() == [
        f"audit: error: {tmp_path / 'posture.yaml'}:3: posture: exposure.contract.file: nowhere.yaml is not a file "
        f"(resolved to {tmp_path / 'nowhere.yaml'})"]


def test_a_malformed_contract_names_its_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "posture.yaml").write_text("exposure:\n  mode: l4\n  contract: {file: c.yaml}\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text("endpoints:\n  - service: argocd-server\n    exposed: true\n", encoding="utf-8")
    result = run_cli(str(CLUSTER), "--posture", str(tmp_path / "posture.yaml"))
    assert result.code == 2
    assert "c.yaml:2: exposure contract: endpoints[0]: 'namespace' is a required property" in result.stderr


# --- selector semantics: absent vs {} per field ------------------------------------------------------


@pytest.mark.parametrize("field", exposure.FIELDS, ids=lambda f: f.name)
def test_absent_and_empty_selectors_per_field(field: exposure.SelectorField) -> None:
    labels = {"app": "web", exposure.SERVICE_NAMESPACE_LABEL: "shop"}
    assert exposure.selects(field, None, labels) is (field.absent is exposure.Absent.EVERYTHING)
    assert exposure.selects(field, {}, labels) is True  # no requirements: everything
    assert exposure.selects(field, {"matchLabels": {}, "matchExpressions": []}, labels) is True
    assert field.source.startswith("https://") and field.holds_for


def test_the_documented_meanings_of_absent() -> None:
    nothing = {f.name for f in exposure.FIELDS if f.absent is exposure.Absent.NOTHING}
    assert nothing == {"CiliumBGPAdvertisement.spec.advertisements[].selector",
                       "CiliumBGPPeerConfig.spec.families[].advertisements", "Service.spec.selector"}


@pytest.mark.parametrize("expression, matches", [
    ({"key": "somekey", "operator": "NotIn", "values": ["never-used-value"]}, True),  # the real repos' idiom
    ({"key": "app", "operator": "NotIn", "values": ["web"]}, False),
    ({"key": "somekey", "operator": "In", "values": ["x"]}, False),
    ({"key": "somekey", "operator": "NotIn", "values": []}, False),  # invalid: selects nothing
    ({"key": "app", "operator": "Exists", "values": ["web"]}, False),  # invalid
    ({"key": "somekey", "operator": "DoesNotExist"}, True),
])
def test_expressions_on_missing_keys(expression: dict[str, Any], matches: bool) -> None:
    selector = {"matchExpressions": [expression]}
    assert exposure.selects(exposure.BGP_ADVERTISEMENT_SERVICES, selector, {"app": "web"}) is matches


def test_selector_sets_memoise_without_changing_verdicts() -> None:
    selectors = [{"matchLabels": {"tier": "edge"}}, {"matchExpressions": [{"key": "x", "operator": "NotIn",
                                                                           "values": ["y"]}]}]
    cached = exposure.SelectorSet(selectors)
    for labels in ({"tier": "edge", "x": "y"}, {"x": "y"}, {"tier": "core", "x": "y"}, {}):
        assert cached.matches(labels) == any(exposure.selects(exposure.L2_POLICY_SERVICES, s, labels)
                                             for s in selectors)
        assert cached.matches(labels) == cached.matches(dict(labels))


# --- the values walker on real repositories -------------------------------------------------------------

# LoadBalancer Services declared in values or operator resources outside archive folders, per repository
# of ../shared/gitops (notes/facts.md section 5.3 classifies the same 32 by hand: 22 service.<name>.type,
# 7 controller.service.type, 2 service.type, 1 EMQX listenersServiceTemplate).
GITOPS_DECLARED = {"bjw-s-labs__home-ops": 3, "carpenike__k8s-gitops": 10, "onedr0p__home-ops": 5,
                   "samip5__k8s-cluster": 14}


def _objects(repo: Path) -> list[Any]:
    objects = []
    for root, folders, files in os.walk(repo):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")):
                try:
                    objects += read_paths([os.path.join(root, name)]).objects
                except InputError:
                    continue  # files the offline reader refuses (custom tags): not this test's subject
    return objects


def _shape(where: str) -> str:
    """`spec.values.service.app.type` -> `service.<name>.type`; operator fields as written."""
    if not where.startswith("spec.values."):
        return where
    parts = where[len("spec.values."):].split(".")
    if len(parts) == 3 and parts[0] == "service":
        return "service.<name>.type"
    return ".".join(parts)


def test_values_declared_services_in_real_repositories() -> None:
    from collections import Counter

    from auditor.exposure.build import _parse_embedded

    repos = [repo for repo in sorted(GITOPS_DECLARED) if (GITOPS / repo).is_dir()]
    if len(repos) != len(GITOPS_DECLARED):
        pytest.skip(f"the GitOps repositories are not all in {GITOPS}")
    shapes: Counter[str] = Counter()
    for repo in repos:
        found = [d for d in declared_services(_objects(GITOPS / repo), _parse_embedded)
                 if "archive" not in str(d.owner.source)]
        assert len(found) == GITOPS_DECLARED[repo], repo
        assert {d.type for d in found} == {"LoadBalancer"}
        shapes.update(_shape(d.where) for d in found)
    assert shapes == {"service.<name>.type": 22, "controller.service.type": 7, "service.type": 2,
                      "spec.listenersServiceTemplate.spec.type": 1}


def test_a_type_key_that_holds_no_string_declares_nothing() -> None:
    """A chart's own `type: {...}` or `serviceType: [...]` is no Service type: the walks skip it rather than
    fail on it (a set lookup of a mapping raises), in a HelmRelease's values and an operator's spec alike,
    and a Service declared beside it is still found."""
    from auditor.exposure.build import _parse_embedded
    from auditor.exposure.values import declares_service

    odd = {"persistence": {"type": {"size": "1Gi"}}, "tls": {"serviceType": ["NodePort"]}}
    assert not declares_service(odd)
    assert declares_service({**odd, "service": {"main": {"type": "LoadBalancer"}}})
    objects = _parse("""\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: web}
spec:
  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts}}}
  values:
    persistence:
      type: {size: 1Gi}
    service:
      main:
        type: LoadBalancer
        ports: {http: {port: 80}}
---
apiVersion: example.com/v1
kind: Database
metadata: {name: db, namespace: web}
spec:
  type: {engine: postgres}
  exposure: {serviceType: [NodePort]}
""")
    found = declared_services(objects, _parse_embedded)
    assert [(d.owner.kind, d.where, d.type) for d in found] == [
        ("HelmRelease", "spec.values.service.main.type", "LoadBalancer")]


# --- the line locator ---------------------------------------------------------------------------------------


def test_key_lines_in_yaml_lists_and_json() -> None:
    yaml_lines = ["items:", "  - apiVersion: v1", "    kind: A", "    spec:", "      values:", "        x: 1",
                  "  - apiVersion: v1", "    spec:", "      values:", "        y: 2"]
    assert find_key_line(yaml_lines, 2, ("spec", "values", "x")) == 6
    assert find_key_line(yaml_lines, 7, ("spec", "values", "y")) == 10
    assert find_key_line(yaml_lines, 2, ("spec", "values", "y")) == 5  # the deepest prefix in its own object
    json_lines = ['{', '    "items": [', '        {', '            "kind": "A",', '            "spec": {',
                  '                "values": {"x": 1}', '            }', '        },', '        {',
                  '            "spec": {', '                "type": "LoadBalancer"', '            }', '        }']
    assert find_key_line(json_lines, 3, ("spec", "values")) == 6
    assert find_key_line(json_lines, 9, ("spec", "type")) == 11
    flow = ["{apiVersion: v1, spec: {values: {x: 1}}}"]
    assert find_key_line(flow, 1, ("spec", "values")) is None


def test_key_lines_fall_back_to_the_objects_line(tmp_path: Path) -> None:
    from auditor.model import Source

    lines = KeyLines()
    assert lines.source_of(Source("<stdin>", 3), ("spec",)) == Source("<stdin>", 3)
    assert lines.source_of(Source(str(tmp_path / "gone.yaml"), 3), ("spec",)) == Source(str(tmp_path / "gone.yaml"), 3)


# --- the model's API (what `audit exposure` and `audit trace` build on) ----------------------------------


@pytest.fixture(scope="module")
def model() -> exposure.ExposureModel:
    snapshot = read_paths([str(CLUSTER)])
    return exposure.build(snapshot, cilium_config.resolve(snapshot), Posture())


def test_model_queries(model: exposure.ExposureModel) -> None:
    by_host = model.by_hostname("mlflow.bench.lan")
    assert {e.route.ref.name for e in by_host if e.route} == {"mlflow"}
    # The internal Gateway's HTTP listener sets no hostname and has no route: a request for any name it
    # receives ends there (unrouted); the TCP listener does not route by hostname.
    assert {(e.listener.gateway.name, e.listener.name) for e in by_host if e.listener} == {
        ("edge", "websecure"), ("internal", "http")}
    assert {e.subject.ref.name for e in model.for_backend("mail", "smtp")} == {"smtp"}
    gateway = model.gateway("gateway", "edge")
    assert gateway is not None and gateway.controller == "cilium" and gateway.host_network is False
    assert gateway.service is not None and gateway.service.name == "cilium-gateway-edge"
    assert model.service("gateway", "cilium-gateway-edge") is not None  # made by the controller
    route = next(r for r in model.routes if r.ref.name == "postgres")
    assert [hop.name for hop in route.attached] == ["postgres"] and not route.unattached
    assert model.settings.l2.on is True and model.settings.version == (1, 19, 6)


def test_routes_say_why_they_attach_nowhere() -> None:
    text = CLUSTER.read_text(encoding="utf-8") + (
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: stray, namespace: shop}\n"
        "spec:\n  parentRefs: [{name: edge, namespace: gateway, sectionName: missing},"
        " {name: internal, namespace: network}, {name: gone}]\n  hostnames: [shop.bench.lan]\n")
    snapshot = Snapshot.build(read_paths([str(CLUSTER)]).objects + _parse(text)[-1:])
    model = exposure.build(snapshot, cilium_config.resolve(snapshot), Posture())
    (route,) = [r for r in model.routes if r.ref.name == "stray"]
    assert not route.attached
    assert {d.parent: d.why for d in route.unattached} == {
        "Gateway/gateway/edge#missing": "Gateway gateway/edge has no listener matching sectionName missing",
        "Gateway/network/internal": "listener http (HTTP:80): allowedRoutes.namespaces.from Same (the Gateway's "
                                    "namespace network)",
        "Gateway/shop/gone": "the Gateway is not in the input",
    }


def _parse(text: str) -> list[Any]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.yaml"
        path.write_text(text, encoding="utf-8")
        return read_paths([str(path)]).objects


def test_verdicts_follow_the_exception_list(model: exposure.ExposureModel) -> None:
    """`judge` reads each entrance's verdict from its rule's findings: one decision for both."""
    from auditor.model import AppliedException, Finding, FindingStatus, RuleStatus

    smtp = next(e for e in model.entrances if e.subject.ref.name == "smtp")
    statuses = dict.fromkeys(exposure.EXPOSURE_RULES, (RuleStatus.FAILED, ""))
    excepted = Finding(smtp.subject.ref, "m", rule=smtp.rule, status=FindingStatus.EXCEPTED,
                       exception=AppliedException("mail-lb", "why"))
    (judged,) = [j for j in exposure.judge(model.entrances, Posture(), [excepted], statuses)
                 if j.entrance is smtp]
    assert judged.verdict == exposure.Verdict(exposure.VerdictKind.EXCEPTED, "lb-service-not-excepted", "mail-lb",
                                              "why")
    unselected = exposure.judge((smtp,), Posture(), [], {})
    assert unselected[0].verdict.kind is exposure.VerdictKind.UNJUDGED
    assert unselected[0].verdict.reason == "rule lb-service-not-excepted was not selected"


def test_the_documented_default_posture_is_the_default(tmp_path: Path) -> None:
    """docs/posture.md: "the same file with every field at its default is equivalent to no file at all"."""
    import dataclasses

    from auditor import posture as posture_module

    text = (ROOT / "docs" / "posture.md").read_text(encoding="utf-8")
    block = text.split("equivalent to no file at all", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "posture.yaml").write_text(block, encoding="utf-8")
    loaded, default = posture_module.load(str(tmp_path / "posture.yaml")), Posture()
    for field in dataclasses.fields(Posture):
        if field.name not in ("path", "severity_lines"):
            assert getattr(loaded, field.name) == getattr(default, field.name), field.name
