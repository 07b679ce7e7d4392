"""`audit trace TARGET`: the first broken hop of each fixture tree (tests/fixtures/trace/README.md), live
against the project's test API server (EndpointSlices, Leases), unknown and hostile targets."""

from __future__ import annotations

import copy
import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from auditor import kinds
from auditor.config_files import load_schema
from tests.conftest import FIXTURES, CliResult, one_line_error, run_cli
from tests.kubeapi import KubeApiServer
from tests.kubeapi.sample_cluster import sample_snapshot
from tests.test_live_fixtures import kubeconfig, platform_crds, run, serve_items

TRACE = FIXTURES / "trace"
AS_OF = ("--as-of", "2026-11-29")
ESC = "\x1b"


def validator(name: str) -> Any:
    """A validator of auditor/data/`name`, resolving its references to the report schema."""
    jsonschema: Any = importlib.import_module("jsonschema")
    referencing: Any = importlib.import_module("referencing")
    registry = referencing.Registry()
    for schema_name in ("report.schema.json", "exposures.schema.json", "trace.schema.json"):
        schema = load_schema(schema_name)
        registry = registry.with_resource(schema["$id"], referencing.Resource.from_contents(schema))
    return jsonschema.Draft202012Validator(load_schema(name), registry=registry,
                                           format_checker=jsonschema.FormatChecker())


TRACE_SCHEMA = validator("trace.schema.json")


def trace(target: str, *folders: str, fmt: str = "json", extra: tuple[str, ...] = ()) -> CliResult:
    return run_cli("trace", target, *(str(TRACE / folder) for folder in folders), "-o", fmt, *AS_OF, *extra)


def payload(result: CliResult) -> dict[str, Any]:
    assert "Traceback" not in result.stderr, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    TRACE_SCHEMA.validate(data)
    assert data["summary"]["exitCode"] == result.code
    return data


# (folders, target, exit code, first broken hop, its status, what its reason says)
CASES = [
    (("common", "gateway", "route-section-name"), "argocd.cluster.lan", 1, "route", "broken",
     "parentRef Gateway/gateway/edge#https attaches it to no listener: NoMatchingParent"),
    (("common", "gateway", "listener-hostname"), "argocd.example.org", 1, "listener", "broken",
     r"hostname \*\.cluster\.lan matches none of the route's \(argocd\.example\.org\)"),
    (("common", "namespace-not-allowed", "app"), "argocd.cluster.lan", 1, "route", "broken",
     "NotAllowedByListeners: listener websecure .*allowedRoutes.namespaces.from Same"),
    (("common", "certificate-missing", "app"), "argocd.cluster.lan", 1, "certificate", "broken",
     "tls.mode Terminate without certificateRefs"),
    (("common", "certificate-unseen", "app"), "argocd.cluster.lan", 3, "certificate", "unseen",
     "Secret gateway/edge-tls is not present and no cert-manager annotation"),
    (("common", "gateway", "backend-port"), "Service/argocd/argocd-server", 1, "backend", "broken",
     r"port-not-exposed: Service argocd/argocd-server has no port 8080 \(its ports: 80\)"),
    (("common", "gateway", "backend-missing"), "argocd.cluster.lan", 1, "backend", "broken",
     "no-service: no Service argocd/argocd-srv in the input"),
    (("common", "ip-in-no-pool", "app"), "Gateway/gateway/edge", 1, "address", "broken",
     "10.20.30.40 is in no CiliumLoadBalancerIPPool"),
    (("common", "no-l2-policy", "app"), "argocd.cluster.lan", 1, "announcement", "broken",
     "no CiliumL2AnnouncementPolicy with loadBalancerIPs: true selects it"),
    (("common", "gateway"), "Gateway/gateway/edge", 1, "route", "broken", "no route attaches to listener websecure"),
    # The route names a Gateway the input does not hold: offline, it may be in another repository.
    (("common", "app"), "Service/argocd/argocd-server", 3, "route", "unseen", "the Gateway is not in the input"),
]


@pytest.mark.parametrize("folders, target, code, hop, status, reason", CASES,
                         ids=[f"{case[0][-1]}:{case[3]}" for case in CASES])
def test_trace_names_the_first_broken_hop(folders: tuple[str, ...], target: str, code: int, hop: str, status: str,
                                          reason: str) -> None:
    result = trace(target, *folders)
    assert result.code == code, (result.stdout, result.stderr)
    first = payload(result)["summary"]["firstBroken"]
    assert (first["hop"], first["status"]) == (hop, status)
    assert re.search(reason, first["reason"]), first["reason"]
    text = trace(target, *folders, fmt="text")
    assert text.code == code
    verdict = " ".join(text.stdout.split()[-60:])
    assert f"the {hop} hop of chain {first['chain']}" in verdict and f"exit {code}" in verdict


def test_the_whole_chain_hop_by_hop_with_its_evidence() -> None:
    result = trace("argocd.cluster.lan", "common", "gateway", "app")
    assert result.code == 0, result.stdout
    data = payload(result)
    assert data["summary"] == {"chains": 2, "whole": 2, "broken": 0, "unseen": 0, "exitCode": 0, "firstBroken": None}
    first = data["chains"][0]
    assert [hop["hop"] for hop in first["hops"]] == [
        "announcement", "address", "listener", "certificate", "route", "backend", "endpoints"]
    assert all(hop["status"] == "ok" for hop in first["hops"]) and first["firstProblem"] is None
    hops = {hop["hop"]: hop for hop in first["hops"]}
    assert hops["address"]["summary"].startswith("192.168.50.240 from pool lan-pool")
    assert hops["announcement"]["evidence"][0]["object"]["name"] == "lan"
    assert hops["announcement"]["evidence"][0]["file"].endswith("trace/common/cilium.yaml")
    assert hops["listener"]["evidence"][0]["field"] == "spec.listeners[0]"
    assert hops["route"]["evidence"][0]["file"].endswith("trace/app/argocd.yaml")
    assert hops["endpoints"]["summary"].startswith("Deployment argocd/argocd-server")
    # The way in the chain follows, as the JSON report shows it, with its verdict.
    assert first["way"]["verdict"]["status"] == "sanctioned" and first["way"]["listener"]["name"] == "websecure"
    # The second chain: the node ports the Gateway's LoadBalancer Service allocates.
    assert data["chains"][1]["way"]["channel"] == "node-port"


def test_wildcard_listener_hostnames_match_per_gateway_api(tmp_path: Path) -> None:
    """`*.cluster.lan` takes `a.b.cluster.lan` but not `cluster.lan`; a listener for the name with no route
    for it is a broken route hop."""
    deep = trace("a.b.cluster.lan", "common", "gateway", "app")
    assert deep.code == 1 and payload(deep)["summary"]["firstBroken"]["summary"] == "no route for a.b.cluster.lan"
    apex = trace("cluster.lan", "common", "gateway", "app", fmt="text")
    assert apex.code == 2 and "unknown target 'cluster.lan'" in apex.stderr


def test_the_rules_report_the_same_broken_hops() -> None:
    """The broken route and backend hops are findings of every audit too."""
    for folders, rule in ((("common", "gateway", "route-section-name"), "gateway-route-not-attached"),
                          (("common", "gateway", "backend-port"), "gateway-route-backend-missing")):
        result = run_cli(*(str(TRACE / f) for f in folders), "-o", "json", *AS_OF)
        report = json.loads(result.stdout)
        assert [(f["rule"], f["object"]["name"]) for f in report["findings"] if f["rule"] == rule] == [
            (rule, "argocd")]


# --- unknown and hostile targets ---------------------------------------------------------------




@pytest.mark.parametrize("target, closest", [
    ("argocd.cluster.lann", "argocd.cluster.lan"),
    ("Service/argocd/argocd-srver", "Service/argocd/argocd-server"),
    ("service/argcd/argocd-server", "Service/argocd/argocd-server"),
    ("Gateway/gatway/edge", "Gateway/gateway/edge"),
])
def test_an_unknown_target_exits_2_with_the_closest_known_ones(target: str, closest: str) -> None:
    line = one_line_error(trace(target, "common", "gateway", "app"))
    assert "unknown target" in line and f"closest known targets: {closest}" in line


def test_a_service_declared_in_helm_values_is_a_target_and_offered_for_its_rendered_name() -> None:
    """two-sites' lab declares Hubble UI's LoadBalancer in the Cilium HelmRelease's values only: the Service
    the chart renders has a name the chart chooses, so trace names the declaration by release and key path,
    traces it, and offers it for the rendered name of its namespace."""
    tree = str(FIXTURES / "gitops" / "two-sites")
    exposures = json.loads(run_cli("exposure", tree, "-o", "json", *AS_OF).stdout)
    declared = sorted({e["backends"][0]["object"]["name"] for e in exposures["exposures"]
                       if e["subject"].get("declared") == "helm-values"})
    assert declared == ["cilium:spec.values.hubble.ui.service"]
    target = f"Service/kube-system/{declared[0]}"
    result = run_cli("trace", target, tree, "-o", "json", *AS_OF)
    assert result.code == 0, result.stderr
    chains = json.loads(result.stdout)["chains"]
    ways = [e for e in exposures["exposures"] if e["subject"].get("declared") == "helm-values"]
    assert len(chains) == len(ways) > 0 and all(chain["way"]["verdict"]["status"] == "drift" for chain in chains)
    line = one_line_error(run_cli("trace", "Service/kube-system/hubble-ui", tree, *AS_OF))
    assert f"closest known targets: {target}" in line and "nor Helm values declare it" in line


@pytest.mark.parametrize("target", ["Service/argocd/argocd-server/extra", "Pod/argocd/argocd-server", "Gateway//edge",
                                    " "])
def test_a_malformed_target_is_a_usage_error(target: str) -> None:
    line = one_line_error(trace(target, "common", "gateway", "app"))
    assert "TARGET is a hostname" in line


def test_an_object_without_a_namespace_is_kind_slash_name(tmp_path: Path) -> None:
    """Manifests whose namespace a Kustomization sets keep none: `Gateway/NAME` names them."""
    gateway = tmp_path / "edge.yaml"
    gateway.write_text((TRACE / "gateway" / "edge.yaml").read_text(encoding="utf-8").replace(
        "  namespace: gateway\n", "", 1), encoding="utf-8")
    result = run_cli("trace", "Gateway/edge", str(TRACE / "common"), str(gateway), "-o", "json", *AS_OF)
    assert result.code == 1 and payload(result)["target"]["object"]["namespace"] is None
    assert "Gateway edge is the edge" in result.stdout


def test_hostile_targets_are_printed_safely() -> None:
    escape = f"{ESC}]0;owned{chr(7)}{ESC}[2J\u202eevil.example.org"
    line = one_line_error(trace(escape, "common", "gateway", "app"))
    assert ESC not in line and "\\x1b]0;owned\\x07\\x1b[2j\\u202e" in line and "\u202e" not in line  # lower-cased
    # Under the wildcard listener it is a name like any other: traced (no route for it), and shown escaped.
    under = trace(escape.replace("example.org", "cluster.lan"), "common", "gateway", "app", fmt="text")
    assert under.code == 1 and "\\x1b]0;owned" in under.stdout
    assert ESC not in under.stdout and "\u202e" not in under.stdout and chr(7) not in under.stdout
    huge = "a" * 100_000 + ".example.org"
    line = one_line_error(trace(huge, "common", "gateway", "app"))
    assert len(line) < 2_000 and "characters elided" in line
    traced = trace(huge.replace("example.org", "cluster.lan"), "common", "gateway", "app", fmt="text")
    assert traced.code == 1 and len(traced.stdout) < 40_000 and "characters elided" in traced.stdout
    service = one_line_error(trace(f"Service/{ESC}[31m/{'x' * 50_000}", "common", "gateway", "app"))
    assert ESC not in service and len(service) < 2_000


def test_paths_and_live_exclude_each_other() -> None:
    assert "give PATH... or --live, not both" in trace("argocd.cluster.lan", "common", extra=("--live",)).stderr
    assert "give PATH..." in run_cli("trace", "argocd.cluster.lan").stderr
    wrong = run_cli("trace", "argocd.cluster.lan", "--live", "--max-files", "3")
    assert wrong.code == 2 and "--max-files: not with --live" in wrong.stderr


# --- live: EndpointSlices and Leases --------------------------------------------------------------


def _documents(*paths: Path) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in paths:
        for file in sorted(path.glob("*.yaml")) if path.is_dir() else [path]:
            docs += [doc for doc in yaml.safe_load_all(file.read_text(encoding="utf-8")) if doc]
    return docs


def live_cluster() -> list[dict[str, Any]]:
    """The objects of `common gateway app` as the cluster holds them, with what controllers wrote."""
    return _documents(TRACE / "common", TRACE / "gateway", TRACE / "app", TRACE / "live.yaml")


def _serve(items: list[dict[str, Any]], **kwargs: Any) -> KubeApiServer:
    return serve_items(items, platform_crds(("v2",)), **kwargs).start()


@pytest.fixture
def cluster() -> Iterator[KubeApiServer]:
    with _serve(live_cluster()) as server:
        yield server


def live_trace(server: KubeApiServer, tmp_path: Path, target: str, fmt: str = "json") -> CliResult:
    return run("trace", target, "--live", "--kubeconfig", kubeconfig(server, tmp_path), "-o", fmt, *AS_OF)


def test_live_trace_reads_the_lease_and_the_ready_endpoints(cluster: KubeApiServer, tmp_path: Path) -> None:
    result = live_trace(cluster, tmp_path, "argocd.cluster.lan")
    assert result.code == 0, (result.stdout, result.stderr)
    data = payload(result)
    assert data["input"]["mode"] == "live"
    hops = {hop["hop"]: hop for hop in data["chains"][0]["hops"]}
    assert list(hops) == ["announcement", "lease", "address", "listener", "certificate", "route", "backend",
                          "endpoints"]
    assert hops["lease"]["summary"].startswith(
        "node node-1 holds Lease kube-system/cilium-l2announce-gateway-cilium-gateway-edge")
    assert hops["address"]["summary"] == "192.168.50.240 from pool lan-pool (status.loadBalancer.ingress)"
    assert hops["endpoints"]["summary"].startswith("2 ready endpoint(s) on node-1, node-2")
    assert all(e["file"] == "cluster:kubeapi-test" for hop in hops.values() for e in hop["evidence"])
    # Read-only, and the kinds trace reads besides the rules' were listed cluster-wide.
    assert {r.method for r in cluster.requests} == {"GET"}
    paths = {r.path for r in cluster.requests}
    assert {"/apis/coordination.k8s.io/v1/leases", "/apis/discovery.k8s.io/v1/endpointslices"} <= paths
    text = live_trace(cluster, tmp_path, "argocd.cluster.lan", fmt="text")
    assert text.code == 0 and "Verdict: WHOLE" in text.stdout


def _edit(items: list[dict[str, Any]], kind: str, name: str, change: Any) -> list[dict[str, Any]]:
    items = copy.deepcopy(items)
    for item in items:
        if item["kind"] == kind and item["metadata"]["name"] == name:
            change(item)
    return items


def test_live_no_holder_of_the_lease_is_a_broken_hop(tmp_path: Path) -> None:
    items = _edit(live_cluster(), "Lease", "cilium-l2announce-gateway-cilium-gateway-edge",
                  lambda lease: lease["spec"].pop("holderIdentity"))
    with _serve(items) as server:
        result = live_trace(server, tmp_path, "argocd.cluster.lan")
    assert result.code == 1
    first = payload(result)["summary"]["firstBroken"]
    assert first["hop"] == "lease" and "has no holder" in first["summary"]


def test_live_no_lease_at_all_is_a_broken_hop(tmp_path: Path) -> None:
    items = [item for item in live_cluster() if item["kind"] != "Lease"]
    with _serve(items) as server:
        first = payload(live_trace(server, tmp_path, "argocd.cluster.lan"))["summary"]["firstBroken"]
    assert first["hop"] == "lease" and "no node has taken the L2 announcement election" in first["reason"]


def test_live_no_ready_endpoint_is_a_broken_hop(tmp_path: Path) -> None:
    def not_ready(piece: dict[str, Any]) -> None:
        for endpoint in piece["endpoints"]:
            endpoint["conditions"] = {"ready": False, "serving": False, "terminating": True}

    with _serve(_edit(live_cluster(), "EndpointSlice", "argocd-server-7xk2p", not_ready)) as server:
        result = live_trace(server, tmp_path, "Service/argocd/argocd-server")
    assert result.code == 1
    first = payload(result)["summary"]["firstBroken"]
    assert first["hop"] == "endpoints" and first["reason"] == "2 endpoint(s), none ready"


def _role_without(resource: str) -> dict[str, Any]:
    from auditor import registry
    from auditor.sources.live import rbac

    role = rbac.cluster_role(list(registry.load_rules(plugins=False).rules), extra=kinds.TRACE_KINDS)
    for rule in role["rules"]:
        rule["resources"] = [r for r in rule["resources"] if r != resource]
    return role


@pytest.mark.parametrize("resource, hop", [("leases", "lease"), ("endpointslices", "endpoints")])
def test_live_a_hop_that_cannot_be_read_is_unseen_exit_3(tmp_path: Path, resource: str, hop: str) -> None:
    with _serve(live_cluster(), cluster_role=_role_without(resource)) as server:
        result = live_trace(server, tmp_path, "argocd.cluster.lan")
    assert result.code == 3, result.stdout
    first = payload(result)["summary"]["firstBroken"]
    assert (first["hop"], first["status"]) == (hop, "unseen")


def test_live_the_certificate_secret_is_read_metadata_only_and_judged(tmp_path: Path) -> None:
    """Without cert-manager's annotation the listener's Secret must exist: live, Secrets are listed (metadata
    only) and its absence is a fact; when they cannot be listed, the hop is unseen."""
    items = [doc for doc in live_cluster() if doc["kind"] != "Gateway"]
    items += _documents(TRACE / "certificate-unseen")
    with _serve(items) as server:
        missing = live_trace(server, tmp_path, "argocd.cluster.lan")
    assert missing.code == 1
    first = payload(missing)["summary"]["firstBroken"]
    assert first["hop"] == "certificate" and "Secret gateway/edge-tls is not present" in first["reason"]
    with _serve(items, cluster_role=_role_without("secrets")) as server:
        unseen = live_trace(server, tmp_path, "argocd.cluster.lan")
    assert unseen.code == 3
    assert payload(unseen)["summary"]["firstBroken"]["status"] == "unseen"


def test_live_a_kind_the_model_reads_that_cannot_be_read_stops_the_trace(tmp_path: Path) -> None:
    with _serve(live_cluster(), cluster_role=_role_without("services")) as server:
        result = live_trace(server, tmp_path, "argocd.cluster.lan")
    line = one_line_error(result, 3)
    assert "cannot trace 'argocd.cluster.lan'" in line and "403" in line and "services" in line


def test_live_generated_role_grants_what_trace_reads(tmp_path: Path) -> None:
    from auditor import registry
    from auditor.sources.live import rbac

    role = rbac.cluster_role(list(registry.load_rules(plugins=False).rules), extra=kinds.TRACE_KINDS)
    with _serve(live_cluster(), cluster_role=role) as server:
        result = live_trace(server, tmp_path, "argocd.cluster.lan")
        assert {r.status for r in server.requests} == {200}
    assert result.code == 0


def test_live_sample_cluster_endpoints_and_lease(tmp_path: Path) -> None:
    """The test API server's sample cluster: shop/frontend's lease and its one ready endpoint, shop/checkout's
    endpoint not ready."""
    with KubeApiServer(sample_snapshot()).start() as server:
        frontend = payload(live_trace(server, tmp_path, "Service/shop/frontend"))
        checkout = live_trace(server, tmp_path, "Service/shop/checkout")
    hops = {hop["hop"]: hop for hop in frontend["chains"][0]["hops"]}
    assert hops["lease"]["summary"].startswith("node worker-1 holds Lease kube-system/cilium-l2announce-shop-frontend")
    assert hops["endpoints"]["summary"] == ("1 ready endpoint(s) (1 not ready) on worker-1: Pod "
                                            "frontend-7c9d8b6f5-4xk2p")
    assert frontend["summary"]["exitCode"] == 0
    assert checkout.code == 1 and payload(checkout)["summary"]["firstBroken"]["hop"] == "endpoints"
