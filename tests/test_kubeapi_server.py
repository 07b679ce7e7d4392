"""Fidelity tests for the fake Kubernetes API server in tests/kubeapi.

The server is only useful if real clients cannot tell it from a cluster, so
most tests drive the real `kubectl` binaries and the official python client
through a kubeconfig the server wrote, and compare what they get with the
snapshot the server was built from.
"""

from __future__ import annotations

import base64
import http.client
import importlib
import json
import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import urllib3

from tests.kubeapi import (
    DEFAULT_TOKEN,
    DEFAULT_USER,
    Fault,
    KubeApiServer,
    KubeconfigContext,
    ResourceType,
    User,
    make_crd,
    write_kubeconfig,
)
from tests.kubeapi.kubectl import SDK_BIN, Kubectl, find_kubectl
from tests.kubeapi.rbac import PolicyRule, RbacPolicy
from tests.kubeapi.sample_cluster import (
    SECRET_PASSWORD,
    SECRET_USERNAME,
    auditor_cluster_role,
    sample_snapshot,
)
from tests.kubeapi.selectors import SelectorError, parse_label_selector
from tests.kubeapi.status import INCONSISTENT_CONTINUE
from tests.kubeapi.tables import human_duration

# The official client's models make every field Optional; these fidelity tests read
# them as a client's user does, so the client is used untyped (Any).
client: Any = importlib.import_module("kubernetes.client")
config: Any = importlib.import_module("kubernetes.config")
DynamicClient: Any = importlib.import_module("kubernetes.dynamic").DynamicClient

# Seven days after the sample objects' creationTimestamp: Table ages are "7d".
FIXED_NOW = datetime(2024, 5, 9, 9, 14, 27, tzinfo=timezone.utc)
PREFERRED_KUBECTL = "1.32"
OLD_KUBECTL, NEW_KUBECTL = "1.27", "1.33"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
AUDITOR = DEFAULT_USER
Json = dict[str, Any]
Serve = Callable[..., KubeApiServer]  # serve(**KubeApiServer options) -> a started server
KubectlFor = Callable[..., Kubectl]  # kubectl_for(server, version=..., **kubeconfig options)
Connect = Callable[..., Any]  # connect(server or kubeconfig, context=None, retries=None) -> ApiClient


def _key(obj: Json) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _of_kind(snapshot: list[Json], kind: str) -> list[Json]:
    return sorted((o for o in snapshot if o["kind"] == kind), key=_key)


# ---------------------------------------------------------------- fixtures --

@pytest.fixture
def snapshot() -> list[Json]:
    return sample_snapshot()


@pytest.fixture
def serve(snapshot: list[Json]) -> Iterator[Serve]:
    """Factory for started servers; all are closed (and must have logged no
    internal errors) at teardown."""
    servers: list[KubeApiServer] = []

    def _serve(**kwargs: Any) -> KubeApiServer:
        kwargs.setdefault("clock", lambda: FIXED_NOW)
        srv = KubeApiServer(kwargs.pop("snapshot", snapshot), **kwargs).start()
        servers.append(srv)
        return srv

    yield _serve
    for srv in servers:
        srv.close()
    for srv in servers:
        assert srv.errors == [], srv.errors[0]


@pytest.fixture
def server(serve: Serve) -> KubeApiServer:
    return serve()


@pytest.fixture
def restricted(serve: Serve) -> KubeApiServer:
    return serve(cluster_role=auditor_cluster_role())


def _kubectl(version: str, kubeconfig: Path, home: Path) -> Kubectl:
    binary = find_kubectl(version)
    if binary is None:
        pytest.skip(f"kubectl {version} is not installed "
                    f"(looked for {SDK_BIN}/kubectl.{version} and kubectl.{version} on PATH)")
    home.mkdir(parents=True, exist_ok=True)
    return Kubectl(binary, kubeconfig, home)


@pytest.fixture
def kubectl_for(tmp_path: Path) -> KubectlFor:
    """kubectl_for(server, version=..., **kubeconfig kwargs) -> Kubectl with a
    private HOME/KUBECACHEDIR per call."""
    counter = iter(range(1000))

    def _make(srv: KubeApiServer, version: str = PREFERRED_KUBECTL, **kc: Any) -> Kubectl:
        n = next(counter)
        kubeconfig = srv.write_kubeconfig(tmp_path / f"kubeconfig-{n}", **kc)
        return _kubectl(version, kubeconfig, tmp_path / f"home-{n}")

    return _make


@pytest.fixture
def connect(tmp_path: Path) -> Iterator[Connect]:
    """connect(server_or_kubeconfig, context=None, retries=None) -> ApiClient
    built by kubernetes.config.load_kube_config from a written kubeconfig."""
    made: list[Any] = []

    def _connect(target: KubeApiServer | Path, context: str | None = None,
                 retries: object = None, pool: int | None = None) -> Any:
        path = target if isinstance(target, Path) else \
            target.write_kubeconfig(tmp_path / f"py-kubeconfig-{len(made)}")
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(path), context=context,
                                client_configuration=cfg, temp_file_path=str(tmp_path / "kc-tmp"))
        if retries is not None:
            cfg.retries = retries
        if pool is not None:
            cfg.connection_pool_maxsize = pool
        api = client.ApiClient(cfg)
        made.append(api)
        return api

    yield _connect
    for api in made:
        api.close()


def raw(srv: KubeApiServer, path: str, accept: str | None = None, method: str = "GET",
        token: str | None = DEFAULT_TOKEN) -> tuple[int, dict[str, str], bytes]:
    """One request over a fresh TLS connection verified against the server CA."""
    ctx = ssl.create_default_context(cadata=srv.ca_pem.decode())
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=ctx, timeout=30)
    headers = {}
    if accept:
        headers["Accept"] = accept
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, path, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def raw_json(srv: KubeApiServer, path: str, accept: str | None = None) -> Json:
    status, _, body = raw(srv, path, accept)
    assert status == 200, body
    document: Json = json.loads(body)
    return document


def api_error(exc_info: pytest.ExceptionInfo[Any]) -> Json:
    document: Json = json.loads(exc_info.value.body)
    return document


# ------------------------------------------------------ kubectl: fidelity --

def test_kubectl_get_services_json_equals_snapshot(server: KubeApiServer, kubectl_for: KubectlFor,
                                                   snapshot: list[dict[str, Any]]) -> None:
    kubectl = kubectl_for(server)
    # kubectl hides metadata.managedFields in -o json/yaml unless asked.
    out = json.loads(kubectl.ok("get", "services", "-A", "-o", "json", "--show-managed-fields"))
    assert out["kind"] == "List"
    # kubectl re-adds kind/apiVersion to the typed list's items; everything
    # else must round-trip exactly, in (namespace, name) order.
    assert out["items"] == _of_kind(snapshot, "Service")
    lists = [r for r in server.requests if r.path == "/api/v1/services"]
    assert len(lists) == 1 and lists[0].status == 200
    assert "as=Table" not in lists[0].accept


def test_kubectl_legacy_discovery_fallback(serve: Serve, kubectl_for: KubectlFor) -> None:
    srv = serve(aggregated_discovery=False)
    kubectl = kubectl_for(srv)
    assert kubectl.ok("get", "ippools", "-o", "name").split() == [
        "ciliumloadbalancerippool.cilium.io/default-pool",
        "ciliumloadbalancerippool.cilium.io/staging-pool"]
    walked = {r.path for r in srv.requests}
    assert {"/api", "/apis", "/api/v1", "/apis/cilium.io/v2", "/apis/cilium.io/v2alpha1"} <= walked


def test_kubectl_short_name_human_output(server: KubeApiServer, kubectl_for: KubectlFor) -> None:
    kubectl = kubectl_for(server)
    lines = kubectl.ok("get", "svc", "-n", "shop").splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    rows = [line.split() for line in lines[1:]]
    assert rows == [
        ["checkout", "NodePort", "10.96.51.3", "<none>", "8080:30880/TCP", "7d"],
        ["frontend", "LoadBalancer", "10.96.188.20", "192.0.2.10", "80:31380/TCP", "7d"],
        ["legacy-billing", "ExternalName", "<none>", "billing.example.com", "<none>", "7d"],
        ["payments-db", "ClusterIP", "None", "<none>", "5432/TCP", "7d"],
    ]
    (req,) = [r for r in server.requests if r.path == "/api/v1/namespaces/shop/services"]
    assert req.accept.startswith(TABLE)  # server-side printing, as on a real cluster


def test_kubectl_all_namespaces_table_uses_row_objects(server: KubeApiServer, kubectl_for: KubectlFor) -> None:
    out = kubectl_for(server).ok("get", "svc", "-A", "-l", "tier=web")
    assert [line.split()[:2] for line in out.splitlines()] == [
        ["NAMESPACE", "NAME"], ["shop", "checkout"], ["shop", "frontend"], ["staging", "frontend"]]


@pytest.mark.parametrize("selector, expected", [
    ("app=frontend", ["service/frontend", "service/frontend"]),
    ("tier in (web,data),app!=frontend,!k8s-app", ["service/checkout", "service/payments-db"]),
])
def test_kubectl_label_selector(server: KubeApiServer, kubectl_for: KubectlFor, selector: str,
                                expected: list[str]) -> None:
    out = kubectl_for(server).ok("get", "svc", "-A", "-l", selector, "-o", "name")
    assert out.split() == expected
    (req,) = [r for r in server.requests if r.path == "/api/v1/services"]
    assert req.param("labelSelector") == selector  # filtered by the server, not kubectl


def test_kubectl_crd_cluster_scoped_json(server: KubeApiServer, kubectl_for: KubectlFor,
                                         snapshot: list[dict[str, Any]]) -> None:
    kubectl = kubectl_for(server)
    out = json.loads(kubectl.ok("get", "ciliumloadbalancerippools", "-o", "json"))
    pools = _of_kind(snapshot, "CiliumLoadBalancerIPPool")
    # staging-pool was stored as v2alpha1: the None conversion serves it at
    # the preferred v2 with only apiVersion rewritten.
    assert [p["apiVersion"] for p in pools] == ["cilium.io/v2", "cilium.io/v2alpha1"]
    assert out["items"] == [{**p, "apiVersion": "cilium.io/v2"} for p in pools]
    assert [r.path for r in server.requests if r.path.endswith("ippools")] == [
        "/apis/cilium.io/v2/ciliumloadbalancerippools"]
    # Explicitly asking for the older served version rewrites the other way.
    older = json.loads(kubectl.ok("get", "ciliumloadbalancerippools.v2alpha1.cilium.io",
                                  "-o", "json"))
    assert {i["apiVersion"] for i in older["items"]} == {"cilium.io/v2alpha1"}


def test_kubectl_crd_printer_columns(server: KubeApiServer, kubectl_for: KubectlFor) -> None:
    lines = kubectl_for(server).ok("get", "ippools").splitlines()
    assert lines[0].split() == ["NAME", "DISABLED", "CONFLICTING", "IPS", "AVAILABLE", "AGE"]
    assert [line.split() for line in lines[1:]] == [
        ["default-pool", "false", "False", "14", "7d"],
        ["staging-pool", "false", "False", "8", "7d"]]


def test_kubectl_absent_crd_is_not_served(server: KubeApiServer, kubectl_for: KubectlFor) -> None:
    kubectl = kubectl_for(server)
    proc = kubectl.run("get", "gateways", "-A")
    assert proc.returncode != 0
    assert 'the server doesn\'t have a resource type "gateways"' in proc.stderr
    proc = kubectl.run("get", "--raw", "/apis/gateway.networking.k8s.io/v1/gateways")
    assert proc.returncode != 0 and "NotFound" in proc.stderr


@pytest.mark.parametrize("version", [OLD_KUBECTL, PREFERRED_KUBECTL, NEW_KUBECTL])
def test_kubectl_chunked_list(server: KubeApiServer, kubectl_for: KubectlFor, snapshot: list[dict[str, Any]],
                              version: str) -> None:
    out = json.loads(kubectl_for(server, version).ok(
        "get", "svc", "-A", "--chunk-size=2", "-o", "json", "--show-managed-fields"))
    assert out["items"] == _of_kind(snapshot, "Service")
    pages = [r for r in server.requests if r.path == "/api/v1/services"]
    assert [r.param("limit") for r in pages] == ["2"] * 5
    assert [r.param("continue") is not None for r in pages] == [False, True, True, True, True]
    # Aggregated discovery was understood (v2 by new clients, v2beta1 by
    # 1.27): no per-group-version discovery walk happened.
    assert [r.path for r in server.requests if r.path not in ("/api/v1/services",)] == [
        "/api", "/apis"]


def test_kubectl_forbidden(restricted: KubeApiServer, kubectl_for: KubectlFor) -> None:
    kubectl = kubectl_for(restricted)
    proc = kubectl.run("get", "configmaps", "-A")
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        'Error from server (Forbidden): configmaps is forbidden: User '
        '"system:serviceaccount:audit:auditor" cannot list resource "configmaps" in API group "" '
        'at the cluster scope')
    # resourceNames grants exactly one object
    assert kubectl.ok("get", "cm", "cilium-config", "-n", "kube-system", "-o", "name").strip() \
        == "configmap/cilium-config"
    proc = kubectl.run("get", "cm", "kube-root-ca.crt", "-n", "shop")
    assert 'configmaps "kube-root-ca.crt" is forbidden' in proc.stderr
    assert 'in the namespace "shop"' in proc.stderr


def test_kubectl_unauthorized(server: KubeApiServer, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "bad-kubeconfig"
    write_kubeconfig(kubeconfig, [KubeconfigContext("bad", server.url, server.ca_pem, "nope")])
    proc = _kubectl(PREFERRED_KUBECTL, kubeconfig, tmp_path / "home").run("get", "svc")
    assert proc.returncode == 1
    assert "You must be logged in to the server" in proc.stderr
    assert {r.status for r in server.requests} == {401}
    assert {r.user for r in server.requests} == {None}


def test_sdk_dispatcher_picks_kubectl_by_server_version(serve: Serve, tmp_path: Path) -> None:
    dispatcher = Path("/usr/bin/kubectl")
    if not (dispatcher.resolve().parent == SDK_BIN and find_kubectl("1.28")):
        pytest.skip("needs the Cloud SDK kubectl dispatcher and its kubectl.1.28")
    srv = serve(git_version="v1.28.5")
    kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
    out = Kubectl(dispatcher, kubeconfig, tmp_path / "home").ok("get", "ns", "-o", "name")
    assert out.split()[0] == "namespace/default"
    agents = [r.user_agent.split(" ")[0] for r in srv.requests]
    assert agents[0] == "kubectl-dispatcher/v1.0" and srv.requests[0].path == "/version"
    assert agents[-1].startswith("kubectl/v1.28.")


def test_kubeconfig_with_several_contexts(serve: Serve, kubectl_for: KubectlFor, connect: Connect,
                                          tmp_path: Path) -> None:
    admin = User("kubernetes-admin", "admin-token")
    srv = serve(cluster_role=auditor_cluster_role(), users=[admin])
    contexts = [srv.context("auditor"), srv.context("admin", user=admin, namespace="shop")]
    kubectl = kubectl_for(srv, contexts=contexts)
    assert kubectl.run("get", "cm", "-A").returncode == 1  # current context: auditor
    assert kubectl.ok("--context", "admin", "get", "cm", "-o", "name").split() == [
        "configmap/kube-root-ca.crt"]  # the admin context's default namespace
    path = srv.write_kubeconfig(tmp_path / "multi", contexts=contexts, current_context="admin")
    core = client.CoreV1Api(connect(path))
    assert len(core.list_config_map_for_all_namespaces().items) == 2
    assert {r.user for r in srv.requests} == {AUDITOR, "kubernetes-admin"}


def test_kubectl_retries_throttling_and_reports_errors(server: KubeApiServer, kubectl_for: KubectlFor) -> None:
    kubectl = kubectl_for(server)
    # client-go honours Retry-After on 429 and retries.
    server.faults.add(Fault.throttle(retry_after=0, times=2, resource="services"))
    assert len(kubectl.ok("get", "svc", "-A", "-o", "name").split()) == 9
    assert [r.status for r in server.requests if r.path == "/api/v1/services"] == [429, 429, 200]
    server.faults.add(Fault.error(resource="services"))
    proc = kubectl.run("get", "svc", "-A")
    assert proc.stderr.strip() == (
        "Error from server (InternalError): Internal error occurred: etcdserver: request timed out")


def test_kubectl_does_not_survive_an_expired_continue(server: KubeApiServer, kubectl_for: KubectlFor) -> None:
    server.faults.add(Fault.expired(resource="services"))
    proc = kubectl_for(server).run("get", "svc", "-A", "--chunk-size=4", "-o", "name")
    assert proc.returncode == 1
    assert len(proc.stdout.split()) == 4
    assert "Error from server (Expired): The provided continue parameter is too old" in proc.stderr


# ------------------------------------------------- python client: reads --

def test_python_client_pagination(server: KubeApiServer, connect: Connect, snapshot: list[dict[str, Any]]) -> None:
    core = client.CoreV1Api(connect(server))
    pages, token = [], None
    while True:
        page = core.list_service_for_all_namespaces(limit=4, _continue=token)
        pages.append(page)
        token = page.metadata._continue
        if not token:
            break
    assert [len(p.items) for p in pages] == [4, 4, 1]
    assert [p.metadata.remaining_item_count for p in pages] == [5, 1, None]
    assert len({p.metadata.resource_version for p in pages}) == 1
    got = [(i.metadata.namespace, i.metadata.name) for p in pages for i in p.items]
    assert got == [_key(o) for o in _of_kind(snapshot, "Service")]
    # Typed list items carry no kind/apiVersion, exactly like a real server.
    assert {(i.kind, i.api_version) for p in pages for i in p.items} == {(None, None)}
    frontend = next(i for p in pages for i in p.items if i.metadata.name == "frontend")
    assert frontend.status.load_balancer.ingress[0].ip == "192.0.2.10"
    assert frontend.metadata.managed_fields[0].manager == "kubectl-client-side-apply"


def test_python_client_namespaced_reads(server: KubeApiServer, connect: Connect) -> None:
    core = client.CoreV1Api(connect(server))
    assert [s.metadata.name for s in core.list_namespaced_service("shop").items] == [
        "checkout", "frontend", "legacy-billing", "payments-db"]
    assert core.list_namespaced_service("does-not-exist").items == []  # like a real server
    cm = core.read_namespaced_config_map("cilium-config", "kube-system")
    assert cm.data["kube-proxy-replacement"] == "true"
    assert core.read_namespace("shop").status.phase == "Active"
    assert core.read_namespaced_service_status("frontend", "shop").spec.type == "LoadBalancer"
    with pytest.raises(client.ApiException) as exc:
        core.read_namespaced_service("nope", "shop")
    assert exc.value.status == 404
    assert api_error(exc) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'services "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "kind": "services"}, "code": 404}


def test_python_custom_objects_at_every_served_version(server: KubeApiServer, connect: Connect) -> None:
    custom = client.CustomObjectsApi(connect(server))
    for version in ("v2", "v2alpha1"):
        pools = custom.list_cluster_custom_object("cilium.io", version, "ciliumloadbalancerippools")
        assert pools["kind"] == "CiliumLoadBalancerIPPoolList"
        assert pools["apiVersion"] == f"cilium.io/{version}"
        assert [(p["apiVersion"], p["metadata"]["name"]) for p in pools["items"]] == [
            (f"cilium.io/{version}", "default-pool"), (f"cilium.io/{version}", "staging-pool")]
    first = custom.list_cluster_custom_object("cilium.io", "v2", "ciliumloadbalancerippools",
                                              limit=1)
    rest = custom.list_cluster_custom_object("cilium.io", "v2", "ciliumloadbalancerippools",
                                             limit=1, _continue=first["metadata"]["continue"])
    assert [first["items"][0]["metadata"]["name"], rest["items"][0]["metadata"]["name"]] == [
        "default-pool", "staging-pool"]
    assert "continue" not in rest["metadata"]
    pool = custom.get_cluster_custom_object("cilium.io", "v2alpha1", "ciliumloadbalancerippools",
                                            "default-pool")
    assert pool["apiVersion"] == "cilium.io/v2alpha1" and pool["spec"]["blocks"][0]["cidr"] \
        == "192.0.2.0/28"
    l2 = custom.list_cluster_custom_object("cilium.io", "v2alpha1", "ciliuml2announcementpolicies")
    assert [p["metadata"]["name"] for p in l2["items"]] == ["default-l2"]
    with pytest.raises(client.ApiException) as exc:  # only served at v2alpha1
        custom.list_cluster_custom_object("cilium.io", "v2", "ciliuml2announcementpolicies")
    assert exc.value.status == 404
    assert api_error(exc)["message"] == "the server could not find the requested resource"


@pytest.mark.parametrize("labels, fields, expected", [
    ("app=frontend", None, ["shop/frontend", "staging/frontend"]),
    ("app==frontend,tier=web", None, ["shop/frontend", "staging/frontend"]),
    ("tier notin (web)", None, ["default/kubernetes", "kube-system/cilium-ingress",
                                "kube-system/hubble-peer", "kube-system/kube-dns",
                                "shop/legacy-billing", "shop/payments-db"]),
    ("tier", "metadata.namespace=shop,metadata.name!=frontend",
     ["shop/checkout", "shop/payments-db"]),
    (None, "metadata.name=frontend", ["shop/frontend", "staging/frontend"]),
])
def test_python_selectors(server: KubeApiServer, connect: Connect, labels: Any, fields: Any, expected: Any) -> None:
    core = client.CoreV1Api(connect(server))
    got = core.list_service_for_all_namespaces(label_selector=labels, field_selector=fields)
    assert [f"{i.metadata.namespace}/{i.metadata.name}" for i in got.items] == expected


@pytest.mark.parametrize("kwargs, message", [
    ({"label_selector": "app in frontend"},
     "unable to parse requirement: found 'frontend', expected: '('"),
    ({"field_selector": "spec.type=LoadBalancer"}, "field label not supported: spec.type"),
    ({"_continue": "not-a-token"}, "continue key is not valid: "),
    ({"_continue": base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v0","rv":1,"start":"a"}')
      .decode()}, "continue key is not valid: "),
])
def test_python_bad_list_options_are_400(server: KubeApiServer, connect: Connect, kwargs: dict[str, Any],
                                         message: str) -> None:
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(connect(server)).list_service_for_all_namespaces(**kwargs)
    assert exc.value.status == 400
    assert api_error(exc)["reason"] == "BadRequest"
    assert api_error(exc)["message"].startswith(message)


def test_metadata_only_secret_listing_never_carries_payload(server: KubeApiServer, connect: Connect) -> None:
    core = client.CoreV1Api(connect(server))
    resp = core.list_secret_for_all_namespaces(_headers={"Accept": PARTIAL_LIST},
                                               _preload_content=False)
    body = resp.data
    for secret_text in (SECRET_PASSWORD, SECRET_USERNAME):
        assert secret_text.encode() not in body
        assert base64.b64encode(secret_text.encode()) not in body
    doc = json.loads(body)
    assert (doc["kind"], doc["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert [sorted(i) for i in doc["items"]] == [["apiVersion", "kind", "metadata"]]
    item = doc["items"][0]
    assert item["kind"] == "PartialObjectMetadata"
    assert (item["metadata"]["namespace"], item["metadata"]["name"]) == (
        "shop", "payments-db-credentials")
    # The same list without the Accept header does carry the payload, so the
    # assertions above are meaningful.
    full = core.list_secret_for_all_namespaces()
    assert full.items[0].data["password"] == base64.b64encode(SECRET_PASSWORD.encode()).decode()
    one = core.read_namespaced_secret(
        "payments-db-credentials", "shop", _preload_content=False,
        _headers={"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"})
    assert base64.b64encode(SECRET_PASSWORD.encode()) not in one.data
    assert json.loads(one.data)["kind"] == "PartialObjectMetadata"


def test_dynamic_client_uses_legacy_discovery(server: KubeApiServer, connect: Connect) -> None:
    dyn = DynamicClient(connect(server))
    pools = dyn.resources.get(api_version="cilium.io/v2", kind="CiliumLoadBalancerIPPool")
    assert [p.metadata.name for p in pools.get().items] == ["default-pool", "staging-pool"]
    svc = dyn.resources.get(api_version="v1", kind="Service")
    assert svc.namespaced and svc.short_names == ["svc"]
    assert len(svc.get(namespace="shop").items) == 4


# ------------------------------------------------- auth, RBAC, read-only --

def test_python_client_unauthorized(serve: Serve, connect: Connect, tmp_path: Path) -> None:
    srv = serve(token="the-real-token")
    path = write_kubeconfig(tmp_path / "wrong", [
        KubeconfigContext("wrong", srv.url, srv.ca_pem, "not-the-token")])
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(connect(path)).list_namespace()
    assert exc.value.status == 401
    assert api_error(exc) == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Failure", "message": "Unauthorized",
                              "reason": "Unauthorized", "code": 401}
    for path_ in ("/version", "/api", "/api/v1/services"):  # no token at all
        assert raw(srv, path_, token=None)[0] == 401
    assert raw(srv, "/version", token="the-real-token")[0] == 200


def test_python_client_forbidden_messages(restricted: KubeApiServer, connect: Connect) -> None:
    api = connect(restricted)
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    prefix = f'User "{AUDITOR}" cannot'
    cases: list[tuple[Callable[[], Any], str, Json]] = [
        (lambda: core.list_config_map_for_all_namespaces(),
         f'configmaps is forbidden: {prefix} list resource "configmaps" in API group "" '
         f'at the cluster scope', {"kind": "configmaps"}),
        (lambda: core.read_namespaced_config_map("kube-root-ca.crt", "shop"),
         f'configmaps "kube-root-ca.crt" is forbidden: {prefix} get resource "configmaps" in '
         f'API group "" in the namespace "shop"', {"name": "kube-root-ca.crt", "kind": "configmaps"}),
        # resourceNames rules never grant list
        (lambda: core.list_namespaced_config_map("kube-system"),
         f'configmaps is forbidden: {prefix} list resource "configmaps" in API group "" in the '
         f'namespace "kube-system"', {"kind": "configmaps"}),
        # a list narrowed to one name is authorized (and named) as that name
        (lambda: core.list_namespaced_config_map("kube-system",
                                                 field_selector="metadata.name=cilium-config"),
         f'configmaps "cilium-config" is forbidden: {prefix} list resource "configmaps" in API '
         f'group "" in the namespace "kube-system"', {"name": "cilium-config", "kind": "configmaps"}),
        # a bare resource does not grant its subresources
        (lambda: core.read_namespaced_service_status("frontend", "shop"),
         f'services "frontend" is forbidden: {prefix} get resource "services/status" in API '
         f'group "" in the namespace "shop"', {"name": "frontend", "kind": "services"}),
        # authorization precedes routing, so even an unserved kind is a 403
        (lambda: custom.list_cluster_custom_object("gateway.networking.k8s.io", "v1", "gateways"),
         f'gateways.gateway.networking.k8s.io is forbidden: {prefix} list resource "gateways" '
         f'in API group "gateway.networking.k8s.io" at the cluster scope',
         {"group": "gateway.networking.k8s.io", "kind": "gateways"}),
    ]
    for call, message, details in cases:
        with pytest.raises(client.ApiException) as exc:
            call()
        assert exc.value.status == 403
        body = api_error(exc)
        assert (body["reason"], body["message"], body["details"]) == ("Forbidden", message, details)
    # What the role does allow still works, and discovery is always allowed.
    assert core.read_namespaced_config_map("cilium-config", "kube-system").data["ipam"] \
        == "kubernetes"
    assert len(custom.list_cluster_custom_object("cilium.io", "v2",
                                                 "ciliumloadbalancerippools")["items"]) == 2
    assert client.VersionApi(api).get_code().git_version == "v1.32.3"
    assert "cilium.io" in [g.name for g in client.ApisApi(api).get_api_versions().groups]


def test_rbac_rule_semantics() -> None:
    def allows(rule: Json, verb: str, group: str, resource: str, sub: str = "", name: str = "") -> bool:
        return PolicyRule.from_manifest(rule).allows_resource(verb, group, resource, sub, name)

    assert allows({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, "get", "x", "y", "status")
    assert allows({"apiGroups": [""], "resources": ["*/status"], "verbs": ["get"]},
                  "get", "", "pods", "status")
    assert not allows({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                      "get", "", "pods", "log")
    assert allows({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
                  "get", "", "pods", "log")
    assert not allows({"apiGroups": ["apps"], "resources": ["*"], "verbs": ["list"]},
                      "list", "", "pods")
    assert not allows({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                       "resourceNames": ["a"]}, "get", "", "secrets", name="b")
    policy = RbacPolicy.from_roles([], {"shop": [{"kind": "Role", "rules": [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list"]}]}]})
    assert policy.allows_resource("list", "", "services", "", "shop", "")
    assert not policy.allows_resource("list", "", "services", "", "", "")
    assert not policy.allows_resource("list", "", "services", "", "staging", "")
    assert policy.allows_path("get", "/apis/cilium.io/v2") and not policy.allows_path("get", "/metrics")


def test_every_write_is_405_and_nothing_changes(restricted: KubeApiServer, connect: Connect) -> None:
    core = client.CoreV1Api(connect(restricted))
    body = {"metadata": {"name": "x"}, "data": {"a": "b"}}
    attempts: list[Callable[[], Any]] = [
        lambda: core.create_namespaced_config_map("kube-system", body),
        lambda: core.replace_namespaced_config_map("cilium-config", "kube-system", body),
        lambda: core.patch_namespaced_config_map("cilium-config", "kube-system", {"data": {}}),
        lambda: core.delete_namespaced_service("frontend", "shop"),
        lambda: core.delete_collection_namespaced_secret("shop"),
    ]
    for attempt in attempts:
        with pytest.raises(client.ApiException) as exc:
            attempt()
        assert exc.value.status == 405  # even where RBAC would have said 403
        assert api_error(exc)["reason"] == "MethodNotAllowed"
    assert [(r.method, r.status) for r in restricted.requests] == [
        ("POST", 405), ("PUT", 405), ("PATCH", 405), ("DELETE", 405), ("DELETE", 405)]
    assert core.read_namespaced_config_map("cilium-config", "kube-system").data["ipam"] \
        == "kubernetes"
    assert raw(restricted, "/api/v1/namespaces/shop/services", method="POST", token=None)[0] == 401


def test_request_log_records_what_was_asked(server: KubeApiServer, kubectl_for: KubectlFor) -> None:
    kubectl_for(server).ok("get", "svc", "-n", "shop", "-o", "name")
    rec = server.requests[-1]
    assert (rec.method, rec.path, rec.status, rec.user) == (
        "GET", "/api/v1/namespaces/shop/services", 200, AUDITOR)
    assert rec.param("limit") == "500"
    assert rec.user_agent.startswith("kubectl.1.32/v1.32")
    assert rec.accept == "application/json"
    server.clear_requests()
    assert server.requests == []


# ---------------------------------------------------------------- faults --

def test_fault_throttle(server: KubeApiServer, connect: Connect) -> None:
    core = client.CoreV1Api(connect(server))
    server.faults.add(Fault.throttle(retry_after=0, times=1, resource="services"))
    assert len(core.list_service_for_all_namespaces().items) == 9
    assert [(r.status, r.faults) for r in server.requests] == [(429, ("throttle",)), (200, ())]
    # ...so with retries off the 429 reaches the caller, header and all.
    server.faults.add(Fault.throttle(retry_after=7, times=1, resource="services"))
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(connect(server, retries=False)).list_service_for_all_namespaces()
    assert exc.value.status == 429
    assert exc.value.headers["Retry-After"] == "7"
    assert api_error(exc)["details"] == {"retryAfterSeconds": 7}
    assert api_error(exc)["message"] == "Too many requests, please try again later."


def test_fault_internal_error(server: KubeApiServer, connect: Connect) -> None:
    server.faults.add(Fault.error("etcdserver: leader changed",
                                  resource="ciliumloadbalancerippools.cilium.io"))
    custom = client.CustomObjectsApi(connect(server))
    with pytest.raises(client.ApiException) as exc:
        custom.list_cluster_custom_object("cilium.io", "v2", "ciliumloadbalancerippools")
    assert exc.value.status == 500
    assert api_error(exc)["message"] == "Internal error occurred: etcdserver: leader changed"
    assert api_error(exc)["reason"] == "InternalError"
    assert len(custom.list_cluster_custom_object("cilium.io", "v2",
                                                 "ciliumloadbalancerippools")["items"]) == 2


def test_fault_connection_dropped_mid_list(server: KubeApiServer, connect: Connect) -> None:
    core = client.CoreV1Api(connect(server))
    server.faults.add(Fault.drop(resource="services", verb="list"))
    with pytest.raises(urllib3.exceptions.ProtocolError, match="IncompleteRead"):
        core.list_service_for_all_namespaces()
    assert [(r.status, r.faults) for r in server.requests] == [(200, ("drop",))]
    assert len(core.list_service_for_all_namespaces().items) == 9  # fired once only


def test_fault_expired_continue(server: KubeApiServer, connect: Connect, snapshot: list[dict[str, Any]]) -> None:
    core = client.CoreV1Api(connect(server))
    server.faults.add(Fault.expired(resource="services"))
    first = core.list_service_for_all_namespaces(limit=4)  # no token: does not fire
    with pytest.raises(client.ApiException) as exc:
        core.list_service_for_all_namespaces(limit=4, _continue=first.metadata._continue)
    assert exc.value.status == 410
    status = api_error(exc)
    assert (status["reason"], status["code"], status["message"]) == (
        "Expired", 410, INCONSISTENT_CONTINUE)
    # The 410 carries a token that continues (inconsistently) where we were.
    rest, token = [], status["metadata"]["continue"]
    while token:
        page = core.list_service_for_all_namespaces(limit=4, _continue=token)
        rest.extend(page.items)
        token = page.metadata._continue
    names = [(i.metadata.namespace, i.metadata.name) for i in first.items + rest]
    assert names == [_key(o) for o in _of_kind(snapshot, "Service")]


def test_fault_latency_and_selection(server: KubeApiServer, connect: Connect) -> None:
    core = client.CoreV1Api(connect(server))
    slow = Fault.slow(0.05, path=r"^/api/v1/namespaces/[^/]+/configmaps", times=2)
    getter = Fault.error(resource="configmaps", verb="get", times=None)
    server.faults.add(slow, getter)
    core.list_service_for_all_namespaces()
    core.list_namespaced_config_map("kube-system")
    core.list_namespaced_config_map("shop")
    core.list_namespaced_config_map("shop")
    with pytest.raises(client.ApiException):
        core.read_namespaced_config_map("cilium-config", "kube-system")
    assert [r.faults for r in server.requests] == [
        (), ("latency",), ("latency",), (), ("error",)]
    assert (slow.fired, slow.exhausted, getter.fired) == (2, True, 1)
    assert server.faults.pending() == [getter]


def test_fault_on_discovery_path(server: KubeApiServer, connect: Connect) -> None:
    server.faults.add(Fault.error(path=r"^/apis/?$"))
    with pytest.raises(client.ApiException) as exc:
        client.ApisApi(connect(server)).get_api_versions()
    assert exc.value.status == 500


def test_fault_answer_replaces_the_body(server: KubeApiServer) -> None:
    server.faults.add(Fault.answer({"kind": "Status", "status": "Success"}, path=r"^/api$"),
                      Fault.answer(b"not json at all", content_type="text/plain", resource="services"))
    assert raw_json(server, "/api") == {"kind": "Status", "status": "Success"}
    status, headers, body = raw(server, "/api/v1/services")
    assert (status, headers["content-type"], body) == (200, "text/plain", b"not json at all")
    assert raw_json(server, "/api")["kind"] == "APIVersions"  # each fired once
    assert [r.faults for r in server.requests] == [("answer",), ("answer",), ()]


def test_fault_continue_that_never_ends_or_repeats(server: KubeApiServer, connect: Connect) -> None:
    core = client.CoreV1Api(connect(server))
    server.faults.add(Fault.endless_continue(resource="services", times=3))
    tokens = []
    token = None
    for _ in range(3):
        page = core.list_service_for_all_namespaces(limit=100, _continue=token)
        token = page.metadata._continue
        tokens.append(token)
    assert len(set(tokens)) == 3 and all(tokens)
    server.faults.add(Fault.repeated_continue(resource="services", times=2))
    first = core.list_service_for_all_namespaces(limit=100)
    second = core.list_service_for_all_namespaces(limit=100, _continue=first.metadata._continue)
    assert first.metadata._continue == second.metadata._continue
    assert core.list_service_for_all_namespaces(limit=100).metadata._continue is None  # both exhausted


@pytest.mark.parametrize("chunked", [False, True])
def test_fault_huge_list_is_valid_json_of_the_size_asked(server: KubeApiServer, chunked: bool) -> None:
    server.faults.add(Fault.huge(1_000_000, chunked=chunked, resource="services"))
    status, headers, body = raw(server, "/api/v1/services")
    assert status == 200
    assert ("content-length" in headers) is not chunked
    assert abs(len(body) - 1_000_000) < 2000
    document = json.loads(body)
    assert document["kind"] == "ServiceList" and len(document["items"]) > 950
    assert raw_json(server, "/api/v1/services")["items"][0]["metadata"]["name"] != "huge-0000000000"


def test_fault_trickle_is_slow_but_complete_and_bounded(server: KubeApiServer) -> None:
    server.faults.add(Fault.trickle(every=0.001, nbytes=200, resource="services"))
    status, _, body = raw(server, "/api/v1/services")
    assert status == 200 and len(json.loads(body)["items"]) == 9
    # Bounded: past `for_at_most` the connection is closed, the answer incomplete.
    server.faults.add(Fault.trickle(every=0.05, nbytes=1, for_at_most=0.2, headers=True, resource="services"))
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        raw(server, "/api/v1/services")
    assert [r.faults for r in server.requests] == [("trickle",), ("trickle",)]


# ------------------------------------------------- protocol-level details --

def test_discovery_documents(serve: Serve) -> None:
    srv = serve(git_version="v1.31.7")
    assert raw_json(srv, "/version")["gitVersion"] == "v1.31.7"
    assert raw_json(srv, "/version")["minor"] == "31"
    api = raw_json(srv, "/api")
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    assert api["serverAddressByClientCIDRs"][0]["serverAddress"] == f"127.0.0.1:{srv.port}"
    core = raw_json(srv, "/api/v1")
    assert "apiVersion" not in core  # the legacy core document has none
    by_name = {r["name"]: r for r in core["resources"]}
    svc = by_name["services"]
    assert (svc["kind"], svc["singularName"], svc["namespaced"], svc["shortNames"],
            svc["categories"]) == ("Service", "service", True, ["svc"], ["all"])
    assert {"get", "list", "watch"} <= set(svc["verbs"])
    assert by_name["services/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["nodes"]["namespaced"] is False and by_name["nodes"]["shortNames"] == ["no"]
    groups = {g["name"]: g for g in raw_json(srv, "/apis")["groups"]}
    assert groups["cilium.io"]["preferredVersion"]["version"] == "v2"
    assert [v["version"] for v in groups["cilium.io"]["versions"]] == ["v2", "v2alpha1"]
    assert "gateway.networking.k8s.io" not in groups
    assert groups["coordination.k8s.io"]["preferredVersion"]["groupVersion"] == "coordination.k8s.io/v1"
    assert raw_json(srv, "/apis/cilium.io")["kind"] == "APIGroup"
    v2 = raw_json(srv, "/apis/cilium.io/v2")
    assert [r["name"] for r in v2["resources"]] == [
        "ciliumloadbalancerippools", "ciliumloadbalancerippools/status"]
    assert v2["resources"][0]["namespaced"] is False
    assert v2["resources"][0]["shortNames"] == ["ippools", "ippool", "lbippool", "lbippools"]
    v2alpha1 = raw_json(srv, "/apis/cilium.io/v2alpha1")
    assert [r["name"] for r in v2alpha1["resources"] if "/" not in r["name"]] == [
        "ciliuml2announcementpolicies", "ciliumloadbalancerippools"]
    crd = {r["name"]: r for r in raw_json(srv, "/apis/apiextensions.k8s.io/v1")["resources"]}
    assert crd["customresourcedefinitions"]["shortNames"] == ["crd", "crds"]
    for missing in ("/apis/gateway.networking.k8s.io", "/apis/cilium.io/v3",
                    "/apis/gateway.networking.k8s.io/v1/gateways", "/api/v2", "/nope"):
        status, headers, body = raw(srv, missing)
        assert status == 404 and headers["content-type"] == "application/json"
        assert json.loads(body)["kind"] == "Status"


@pytest.mark.parametrize("version", ["v2", "v2beta1"])
def test_aggregated_discovery(server: KubeApiServer, version: str) -> None:
    accept = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    status, headers, body = raw(server, "/apis", accept + ",application/json")
    assert status == 200 and headers["content-type"] == accept
    doc = json.loads(body)
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupDiscoveryList",
                                                f"apidiscovery.k8s.io/{version}")
    cilium = next(g for g in doc["items"] if g["metadata"]["name"] == "cilium.io")
    assert [v["version"] for v in cilium["versions"]] == ["v2", "v2alpha1"]
    pool = cilium["versions"][0]["resources"][0]
    assert (pool["resource"], pool["scope"], pool["singularResource"], pool["responseKind"]) == (
        "ciliumloadbalancerippools", "Cluster", "ciliumloadbalancerippool",
        {"group": "cilium.io", "version": "v2", "kind": "CiliumLoadBalancerIPPool"})
    core = json.loads(raw(server, "/api", accept)[2])
    assert [v["version"] for v in core["items"][0]["versions"]] == ["v1"]


def test_table_responses(server: KubeApiServer) -> None:
    table = raw_json(server, "/api/v1/namespaces/shop/services?limit=2", TABLE)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
    assert table["rows"][1]["cells"] == ["frontend", "LoadBalancer", "10.96.188.20", "192.0.2.10",
                                         "80:31380/TCP", "7d", "app=frontend"]
    assert table["rows"][1]["object"]["kind"] == "PartialObjectMetadata"
    assert table["rows"][1]["object"]["metadata"]["namespace"] == "shop"
    assert "continue" in table["metadata"]
    none = raw_json(server, "/api/v1/namespaces/shop/services?includeObject=None", TABLE)
    assert all("object" not in r for r in none["rows"])
    full = raw_json(server, "/api/v1/namespaces/shop/services?includeObject=Object", TABLE)
    assert full["rows"][0]["object"]["kind"] == "Service"
    assert full["rows"][0]["object"]["spec"]["type"] == "NodePort"
    pools = raw_json(server, "/apis/cilium.io/v2/ciliumloadbalancerippools", TABLE)
    assert [c["name"] for c in pools["columnDefinitions"]] == [
        "Name", "Disabled", "Conflicting", "IPs Available", "Age"]
    assert pools["rows"][0]["cells"] == ["default-pool", False, "False", "14", "7d"]
    assert raw(server, "/api/v1/services?includeObject=Everything", TABLE)[0] == 400


def test_list_items_typed_vs_unstructured(server: KubeApiServer) -> None:
    services = raw_json(server, "/api/v1/services")
    assert (services["kind"], services["apiVersion"]) == ("ServiceList", "v1")
    assert not any("kind" in i or "apiVersion" in i for i in services["items"])
    pools = raw_json(server, "/apis/cilium.io/v2/ciliumloadbalancerippools")
    assert {(i["kind"], i["apiVersion"]) for i in pools["items"]} == {
        ("CiliumLoadBalancerIPPool", "cilium.io/v2")}
    one = raw_json(server, "/api/v1/namespaces/shop/services/frontend")
    assert (one["kind"], one["apiVersion"]) == ("Service", "v1")


def test_content_negotiation_head_and_watch(server: KubeApiServer) -> None:
    status, _, _ = raw(server, "/api/v1/services", "application/vnd.kubernetes.protobuf")
    assert status == 406
    status, headers, body = raw(server, "/api/v1/services",
                                "application/vnd.kubernetes.protobuf,application/json")
    assert status == 200 and json.loads(body)["kind"] == "ServiceList"
    status, headers, body = raw(server, "/api/v1/services", method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 100
    status, _, body = raw(server, "/api/v1/services?watch=true")
    assert status == 405 and b"watch is not supported" in body


def test_extra_registrations(serve: Serve) -> None:
    ip_pool = {
        "apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
        "metadata": {"name": "legacy", "namespace": "metallb-system", "uid": "u1",
                     "resourceVersion": "77", "creationTimestamp": "2024-05-02T09:14:27Z"},
        "spec": {"addresses": ["203.0.113.0/28"]},
    }
    gateway_type = ResourceType("gateway.networking.k8s.io", ("v1",), "gateways", "gateway",
                                "Gateway", True, short_names=("gtw",))
    srv = serve(snapshot=[*sample_snapshot(), ip_pool],
                extra_crds=[make_crd("metallb.io", "IPAddressPool", "ipaddresspools",
                                     ["v1beta1"])],
                extra_resources=[gateway_type])
    pools = raw_json(srv, "/apis/metallb.io/v1beta1/namespaces/metallb-system/ipaddresspools")
    assert [i["metadata"]["name"] for i in pools["items"]] == ["legacy"]
    crds = raw_json(srv, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    assert "ipaddresspools.metallb.io" in [i["metadata"]["name"] for i in crds["items"]]
    gws = raw_json(srv, "/apis/gateway.networking.k8s.io/v1/gateways")
    assert [i["metadata"]["name"] for i in gws["items"]] == ["public"]


def test_unserved_crd_versions_and_unestablished_crds(serve: Serve) -> None:
    crd = make_crd("example.com", "Widget", "widgets", ["v1", "v1beta1"], served=["v1"])
    gadget = make_crd("example.com", "Gadget", "gadgets", ["v1"])
    gadget["status"]["conditions"][1].update(status="False", reason="Installing")
    legacy = {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
              "metadata": {"name": "gizmos.example.com"},
              "spec": {"group": "example.com", "version": "v1alpha1", "scope": "Namespaced",
                       "names": {"plural": "gizmos", "kind": "Gizmo"}}}
    srv = serve(snapshot=[crd, gadget, legacy])
    assert raw(srv, "/apis/example.com/v1/widgets")[0] == 200
    assert raw(srv, "/apis/example.com/v1beta1/widgets")[0] == 404
    assert raw(srv, "/apis/example.com/v1/gadgets")[0] == 404  # not Established
    assert raw(srv, "/apis/example.com/v1alpha1/namespaces/x/gizmos")[0] == 200
    assert [g["preferredVersion"]["version"] for g in raw_json(srv, "/apis")["groups"]
            if g["name"] == "example.com"] == ["v1"]


def test_snapshot_formats_and_validation(serve: Serve, snapshot: list[dict[str, Any]]) -> None:
    as_list = {"apiVersion": "v1", "kind": "List", "items": snapshot, "metadata": {}}
    srv = serve(snapshot=as_list)
    assert len(raw_json(srv, "/api/v1/services")["items"]) == 9
    with pytest.raises(ValueError, match="duplicate"):
        KubeApiServer([*snapshot, snapshot[-1]])
    orphan = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    with pytest.raises(ValueError, match=r"no metadata\.namespace"):
        KubeApiServer([orphan])


def test_label_selector_parser() -> None:
    sel = parse_label_selector("a in (x, y),b notin (z),!c,d,e!=1,f==2,g>3")
    assert sel.matches({"a": "x", "d": "", "e": "0", "f": "2", "g": "4"})
    assert not sel.matches({"a": "x", "d": "", "f": "2", "g": "3"})
    assert not sel.matches({"a": "x", "c": "", "d": "", "f": "2", "g": "4"})
    assert parse_label_selector("").matches({})
    for bad in ("a in", "a in (", "=x", "a b", "g > x"):
        with pytest.raises(SelectorError):
            parse_label_selector(bad)


def test_human_duration() -> None:
    assert [human_duration(s) for s in (5, 150, 600, 7200, 30 * 3600, 7 * 86400, 400 * 86400,
                                        3 * 365 * 86400 + 86400)] == [
        "5s", "2m30s", "10m", "120m", "30h", "7d", "400d", "3y1d"]


# ------------------------------------------------ concurrency, lifecycle --

def test_concurrent_listers(server: KubeApiServer, connect: Connect) -> None:
    gate = threading.Event()
    server.faults.add(Fault.hold(gate, resource="services", times=None))
    core = client.CoreV1Api(connect(server, pool=8))
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(core.list_service_for_all_namespaces, limit=3) for _ in range(6)]
        # All six must be inside the server at once before any is released.
        for _ in range(1000):
            if server.in_flight >= 6:
                break
            threading.Event().wait(0.01)
        in_flight = server.in_flight
        gate.set()
        results = [f.result(timeout=30) for f in futures]
    assert in_flight == 6 and server.peak_in_flight == 6
    assert {tuple(i.metadata.name for i in r.items) for r in results} == {
        ("kubernetes", "cilium-ingress", "hubble-peer")}
    assert len(server.requests) == 6


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_clean_shutdown_with_idle_keepalive_connections(snapshot: list[dict[str, Any]], connect: Connect,
                                                        tmp_path: Path) -> None:
    before_fds = _open_fds()
    srv = KubeApiServer(snapshot).start()
    port = srv.port
    api = connect(srv)
    client.CoreV1Api(api).list_namespace()  # leaves a pooled keep-alive connection open
    ctx = ssl.create_default_context(cadata=srv.ca_pem.decode())
    idle = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
    idle.request("GET", "/version", headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"})
    assert idle.getresponse().read()
    assert any(t.name.startswith("kubeapi-conn-") for t in threading.enumerate())
    srv.close()  # raises if a connection thread did not finish
    assert not [t.name for t in threading.enumerate() if t.name.startswith("kubeapi-")]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    idle.close()
    api.close()
    assert _open_fds() <= before_fds
    srv.close()  # idempotent


def test_context_manager_closes_on_error(snapshot: list[dict[str, Any]]) -> None:
    with pytest.raises(RuntimeError, match="boom"), KubeApiServer(snapshot) as srv:
        port = srv.port
        raise RuntimeError("boom")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
