"""The live reader against the test API server: coverage, pagination, retries, faults, Secrets.

These run the reader in this process (no CLI) so every fault can be checked
against the server's request log.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor import kinds, registry
from auditor.errors import ClusterError
from auditor.snapshot import CoverageState
from auditor.sources.live import target as target_module
from auditor.sources.live.client import RetryPolicy
from auditor.sources.live.progress import Progress
from auditor.sources.live.reader import ClusterReader, ReadOptions, ReadResult
from tests.kubeapi import Fault, KubeApiServer, RequestRecord
from tests.test_live_fixtures import (
    SECRET_B64,
    SECRET_VALUE,
    kubeconfig,
    platform_crds,
    serve,
    serve_items,
    served_items,
)

ALL_KINDS = sorted({gk for rule in registry.load_rules(plugins=False).rules for gk in rule.kinds_read()})
FAST = RetryPolicy(max_retries=4, backoff_base=0.01, backoff_cap=0.05, timeout=10)


def _target(server: KubeApiServer, tmp_path: Path) -> target_module.Target:
    return target_module.resolve(kubeconfig(server, tmp_path))[0]


def read(server: KubeApiServer, tmp_path: Path, gks: list[str] | None = None, **options: Any) -> ReadResult:
    options.setdefault("policy", FAST)
    reader = ClusterReader(_target(server, tmp_path), ALL_KINDS if gks is None else gks, ReadOptions(**options))
    return reader.read()


def _services(server: KubeApiServer) -> list[RequestRecord]:
    return [r for r in server.requests if r.path == "/api/v1/services"]


@pytest.fixture
def drifted() -> Iterator[KubeApiServer]:
    with serve("drifted") as server:
        yield server


SERVICES_IN_DRIFTED = sum(1 for item in served_items("drifted") if item["kind"] == "Service")


# --- what is read, and how ---------------------------------------------------------------


def test_every_kind_is_covered_and_objects_are_typed(drifted: KubeApiServer, tmp_path: Path) -> None:
    result = read(drifted, tmp_path)
    snap = result.snapshot
    assert set(snap.listed) == set(ALL_KINDS)
    states = {gk: c.state for gk, c in snap.listed.items()}
    for gk in (kinds.SERVICE, kinds.NAMESPACE, kinds.LB_IP_POOL, kinds.L2_ANNOUNCEMENT_POLICY, kinds.CRD, kinds.SECRET):
        assert states[gk] is CoverageState.LISTED, snap.listed[gk]
    for gk in (*kinds.METALLB_KINDS, "Application.argoproj.io", "HelmRelease.helm.toolkit.fluxcd.io"):
        assert states[gk] is CoverageState.NOT_SERVED
        assert "not served" in snap.listed[gk].reason
    # The API server leaves kind/apiVersion out of built-in list items; the reader sets them.
    services = snap.of_kind(kinds.SERVICE)
    assert len(services) == SERVICES_IN_DRIFTED
    assert {(s.kind, s.api_version) for s in services} == {("Service", "v1")}
    assert {str(s.source) for s in snap.objects} == {"cluster:kubeapi-test"}
    # Custom resources come back at their preferred version, converted by the server.
    assert [p.api_version for p in snap.of_kind(kinds.LB_IP_POOL)] == ["cilium.io/v2"]
    assert [p.api_version for p in snap.of_kind(kinds.L2_ANNOUNCEMENT_POLICY)] == ["cilium.io/v2alpha1"]
    assert snap.served_versions[kinds.LB_IP_POOL] == ["v2", "v2alpha1"]
    assert snap.served_versions[kinds.L2_ANNOUNCEMENT_POLICY] == ["v2alpha1"]
    info = snap.cluster
    assert info is not None and (info.context, info.server, info.version) == ("kubeapi-test", drifted.url, "v1.32.3")
    assert _target(drifted, tmp_path).configuration.retries is False  # urllib3 never retries behind our back
    assert len(info.fingerprint or "") == 12 and result.counts[kinds.SERVICE] == SERVICES_IN_DRIFTED


def test_only_gets_only_what_the_rules_read_and_crds_by_name(drifted: KubeApiServer, tmp_path: Path) -> None:
    read(drifted, tmp_path)
    requests = drifted.requests
    assert requests and {r.method for r in requests} == {"GET"}
    assert not [r for r in requests if r.param("watch")]
    crd_requests = [r.path for r in requests if "customresourcedefinitions" in r.path]
    # Never the whole CRD list: only the CRDs of kinds read, and the Gateway API bundle.
    assert "/apis/apiextensions.k8s.io/v1/customresourcedefinitions" not in crd_requests
    names = {path.rsplit("/", 1)[1] for path in crd_requests}
    assert "ciliumloadbalancerippools.cilium.io" in names and "referencegrants.gateway.networking.k8s.io" in names
    assert "ciliumendpoints.cilium.io" not in names  # a big CRD no rule reads
    listed = {r.path for r in requests if r.param("limit")}
    assert "/api/v1/services" in listed and "/apis/cilium.io/v2/ciliumloadbalancerippools" in listed
    assert not any("ciliumendpoints" in path for path in listed)
    assert not any(path.startswith("/api/v1/namespaces/") for path in listed)  # cluster-wide lists only
    assert all(r.user_agent.startswith("cilium-exposure-auditor/") for r in requests)


def test_secrets_are_read_metadata_only_and_redacted(drifted: KubeApiServer, tmp_path: Path) -> None:
    snap = read(drifted, tmp_path).snapshot
    secret_requests = [r for r in drifted.requests if r.path == "/api/v1/secrets"]
    # Every media type offered is metadata-only: no plain application/json to fall back to.
    assert secret_requests and all("as=PartialObjectMetadataList" in media
                                   for r in secret_requests for media in r.accept.split(","))
    secret = snap.get(kinds.SECRET, "mail", "db-creds")
    assert secret is not None and set(secret.raw) == {"apiVersion", "kind", "metadata"}
    assert "managedFields" not in secret.metadata
    assert secret.annotations == {"team": "mail"}
    text = repr([o.raw for o in snap.objects])
    assert SECRET_VALUE not in text and SECRET_B64 not in text and "password-for-db" not in text


def test_a_full_secret_list_is_never_kept(drifted: KubeApiServer, tmp_path: Path) -> None:
    """A server (or proxy) that ignores the metadata-only Accept header: the answer is dropped, the kind failed."""
    from tests.test_live_fixtures import leaky_secret

    full = {"kind": "SecretList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": [leaky_secret()]}
    drifted.faults.add(Fault.answer(full, resource="secrets"))
    snap = read(drifted, tmp_path, [kinds.SECRET]).snapshot
    coverage = snap.coverage(kinds.SECRET)
    assert coverage.state is CoverageState.FAILED and "metadata only" in coverage.reason
    assert "a SecretList, not PartialObjectMetadataList" in coverage.reason
    assert snap.of_kind(kinds.SECRET) == []
    assert SECRET_B64 not in repr([o.raw for o in snap.objects]) + coverage.reason


def test_pagination_follows_continue(drifted: KubeApiServer, tmp_path: Path) -> None:
    snap = read(drifted, tmp_path, [kinds.SERVICE], chunk_size=3, max_chunk_size=3).snapshot
    pages = _services(drifted)
    assert len(pages) == -(-SERVICES_IN_DRIFTED // 3)
    assert [r.param("limit") for r in pages] == ["3"] * len(pages)
    assert pages[0].param("continue") is None and all(r.param("continue") for r in pages[1:])
    names = [(s.namespace, s.name) for s in snap.of_kind(kinds.SERVICE)]
    assert len(names) == len(set(names)) == SERVICES_IN_DRIFTED


def test_later_pages_are_sized_to_the_collection(drifted: KubeApiServer, tmp_path: Path) -> None:
    """The first page is --chunk-size; the server's remainingItemCount sizes the next ones,
    never past --max-chunk-size nor below --chunk-size."""
    snap = read(drifted, tmp_path, [kinds.SERVICE], chunk_size=3, max_chunk_size=5).snapshot
    pages = _services(drifted)
    assert SERVICES_IN_DRIFTED == 10  # 3, then 5 of the 7 left, then the last 2 (asked as 3)
    assert [r.param("limit") for r in pages] == ["3", "5", "3"]
    assert len(snap.of_kind(kinds.SERVICE)) == SERVICES_IN_DRIFTED
    drifted.clear_requests()
    read(drifted, tmp_path, [kinds.SERVICE], chunk_size=3)
    assert [r.param("limit") for r in _services(drifted)] == ["3", "7"]  # the rest in one page


def test_legacy_discovery_reads_the_same(tmp_path: Path) -> None:
    with serve("drifted", aggregated_discovery=False) as legacy, serve("drifted") as aggregated:
        old = read(legacy, tmp_path / "a").snapshot
        new = read(aggregated, tmp_path / "b").snapshot
        assert any(r.path == "/apis/cilium.io/v2alpha1" for r in legacy.requests)
    assert {gk: c.state for gk, c in old.listed.items()} == {gk: c.state for gk, c in new.listed.items()}
    def identities(snapshot: Any) -> list[tuple[str, str | None, str, str]]:
        return [(o.gk, o.namespace, o.name, o.api_version) for o in snapshot]

    assert identities(old) == identities(new)
    assert old.served_versions == new.served_versions


def test_absent_crds_are_not_served_and_rules_pass(tmp_path: Path) -> None:
    without_gateway_api = [crd for crd in platform_crds() if crd["spec"]["group"] != "gateway.networking.k8s.io"]
    items = [i for i in served_items("drifted") if not i["apiVersion"].startswith("gateway.networking.k8s.io/")
             and not i["metadata"]["name"].endswith(".gateway.networking.k8s.io")]
    with serve_items(items, without_gateway_api) as server:
        snap = read(server, tmp_path).snapshot
    for gk in (kinds.GATEWAY, kinds.GATEWAY_CLASS, kinds.HTTP_ROUTE):
        assert snap.coverage(gk).state is CoverageState.NOT_SERVED
    assert snap.coverage(kinds.CRD).state is CoverageState.LISTED
    assert not [o for o in snap.of_kind(kinds.CRD) if o.name.endswith(".gateway.networking.k8s.io")]


# --- faults --------------------------------------------------------------------------------


def test_latency_is_waited_for(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.slow(0.2, resource="services", times=None))
    snap = read(drifted, tmp_path, [kinds.SERVICE]).snapshot
    assert snap.coverage(kinds.SERVICE).state is CoverageState.LISTED
    assert [r.faults for r in _services(drifted)] == [("latency",)]


def test_429_waits_retry_after_then_succeeds(drifted: KubeApiServer, tmp_path: Path) -> None:
    throttle = Fault.throttle(retry_after=1, resource="services")
    drifted.faults.add(throttle)
    snap = read(drifted, tmp_path, [kinds.SERVICE]).snapshot
    assert snap.coverage(kinds.SERVICE).state is CoverageState.LISTED
    services = _services(drifted)
    assert [r.status for r in services] == [429, 200]
    # The retry came no sooner than Retry-After asked (the server logs before answering).
    assert services[1].at - services[0].at >= 0.95
    assert throttle.fired == 1


def test_500_then_success(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.error(resource="services", times=2))
    snap = read(drifted, tmp_path, [kinds.SERVICE]).snapshot
    assert [r.status for r in _services(drifted)] == [500, 500, 200]
    assert len(snap.of_kind(kinds.SERVICE)) == SERVICES_IN_DRIFTED


def test_connection_dropped_mid_list_then_success(drifted: KubeApiServer, tmp_path: Path) -> None:
    """The second page is cut mid-body: that page is retried, nothing is lost or doubled."""
    drifted.faults.add(Fault.drop(resource="services", continued=True))  # the first page with a token
    snap = read(drifted, tmp_path, [kinds.SERVICE], chunk_size=4).snapshot
    pages = _services(drifted)
    assert [r.faults for r in pages][:3] == [(), ("drop",), ()]
    assert pages[1].param("continue") == pages[2].param("continue")  # the same page, asked again
    names = [(s.namespace, s.name) for s in snap.of_kind(kinds.SERVICE)]
    assert len(names) == len(set(names)) == SERVICES_IN_DRIFTED


def test_expired_continue_token_relists_from_the_start(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.expired(resource="services"))
    snap = read(drifted, tmp_path, [kinds.SERVICE], chunk_size=4).snapshot
    pages = _services(drifted)
    assert [r.status for r in pages[:3]] == [200, 410, 200]
    assert pages[2].param("continue") is None  # a full re-list, not the 410's inconsistent token
    names = [(s.namespace, s.name) for s in snap.of_kind(kinds.SERVICE)]
    assert len(names) == len(set(names)) == SERVICES_IN_DRIFTED


def test_continue_expiring_again_ends_unpaginated(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.expired(resource="services", times=None))
    snap = read(drifted, tmp_path, [kinds.SERVICE], chunk_size=4, max_relists=3).snapshot
    pages = _services(drifted)
    assert pages[-1].param("limit") is None and pages[-1].status == 200
    assert [r.status for r in pages].count(410) == 2
    assert len(snap.of_kind(kinds.SERVICE)) == SERVICES_IN_DRIFTED


def test_persistent_500_fails_the_kind_with_resource_and_status(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.error(resource="services", times=None))
    policy = RetryPolicy(max_retries=2, backoff_base=0.01, backoff_cap=0.02, timeout=10)
    snap = read(drifted, tmp_path, [kinds.SERVICE, kinds.NAMESPACE], policy=policy).snapshot
    coverage = snap.coverage(kinds.SERVICE)
    assert coverage.state is CoverageState.FAILED
    assert "services" in coverage.reason and "HTTP 500" in coverage.reason and "after 3 attempts" in coverage.reason
    assert len(_services(drifted)) == 3  # bounded: 1 + 2 retries
    assert snap.coverage(kinds.NAMESPACE).state is CoverageState.LISTED  # the others are unaffected


def test_timeout_fails_the_kind(drifted: KubeApiServer, tmp_path: Path) -> None:
    gate = threading.Event()
    drifted.faults.add(Fault.hold(gate, timeout=5, resource="services", times=None))
    policy = RetryPolicy(max_retries=1, backoff_base=0.01, backoff_cap=0.02, timeout=0.3)
    try:
        snap = read(drifted, tmp_path, [kinds.SERVICE], policy=policy).snapshot
    finally:
        gate.set()
    coverage = snap.coverage(kinds.SERVICE)
    assert coverage.state is CoverageState.FAILED
    assert "no complete answer within 0.3s (--request-timeout)" in coverage.reason


def test_forbidden_kind_fails_with_403(tmp_path: Path) -> None:
    from auditor.sources.live import rbac

    role = rbac.cluster_role(registry.load_rules(plugins=False).rules)
    for rule in role["rules"]:
        rule["resources"] = [r for r in rule["resources"] if r != "services"]
    with serve("drifted", cluster_role=role) as server:
        snap = read(server, tmp_path).snapshot
    coverage = snap.coverage(kinds.SERVICE)
    assert coverage.state is CoverageState.FAILED
    assert "HTTP 403" in coverage.reason and "services" in coverage.reason
    assert snap.coverage(kinds.NAMESPACE).state is CoverageState.LISTED


def test_discovery_failure_makes_the_group_unknown_not_absent(tmp_path: Path) -> None:
    with serve("drifted", aggregated_discovery=False) as server:
        server.faults.add(Fault.error(path=r"^/apis/cilium\.io/v2$", times=None))
        snap = read(server, tmp_path).snapshot
    for gk in (kinds.LB_IP_POOL, kinds.L2_ANNOUNCEMENT_POLICY, kinds.CILIUM_NETWORK_POLICY):
        coverage = snap.coverage(gk)
        assert coverage.state is CoverageState.FAILED and "discovery of cilium.io/v2" in coverage.reason
        assert "HTTP 500" in coverage.reason
    assert snap.coverage(kinds.CRD).state is CoverageState.FAILED  # which CRDs to read is unknown
    assert snap.coverage(kinds.SERVICE).state is CoverageState.LISTED


def test_unreachable_and_rejected_credentials_are_cluster_errors(drifted: KubeApiServer, tmp_path: Path) -> None:
    from tests.kubeapi import KubeconfigContext, write_kubeconfig

    path = write_kubeconfig(tmp_path / "wrong", [KubeconfigContext("c", drifted.url, drifted.ca_pem, "wrong-token")])
    target = target_module.resolve(str(path))[0]
    with pytest.raises(ClusterError, match=r"credentials rejected \(HTTP 401 Unauthorized\)"):
        ClusterReader(target, [kinds.SERVICE], ReadOptions(policy=FAST)).read()
    dead_path = write_kubeconfig(tmp_path / "dead",
                                 [KubeconfigContext("c", "https://127.0.0.1:1", drifted.ca_pem, "t")])
    dead = target_module.resolve(str(dead_path))[0]
    with pytest.raises(ClusterError, match=r"unreachable: no answer after 2 attempts: cannot connect"):
        ClusterReader(dead, [kinds.SERVICE], ReadOptions(policy=RetryPolicy(max_retries=1, backoff_base=0.01))).read()


# --- concurrency ---------------------------------------------------------------------------


def test_all_lists_are_in_flight_together(drifted: KubeApiServer, tmp_path: Path) -> None:
    gate = threading.Event()
    drifted.faults.add(Fault.hold(gate, timeout=20, verb="list", times=None))
    concurrency = 6
    box: dict[str, ReadResult] = {}
    worker = threading.Thread(target=lambda: box.update(result=read(drifted, tmp_path, concurrency=concurrency)))
    worker.start()
    try:
        deadline = time.monotonic() + 15
        while drifted.in_flight < concurrency and time.monotonic() < deadline:
            time.sleep(0.01)
        held = drifted.in_flight
    finally:
        gate.set()
        worker.join(30)
    assert held == concurrency  # every worker was inside the server at once, none finished first
    assert drifted.peak_in_flight == concurrency
    assert box["result"].snapshot.coverage(kinds.SERVICE).state is CoverageState.LISTED


# --- configuration -------------------------------------------------------------------------


def test_fingerprint_is_the_ca_data_or_the_server_url(drifted: KubeApiServer, tmp_path: Path) -> None:
    import hashlib

    target = _target(drifted, tmp_path)
    assert target.fingerprint == hashlib.sha256(drifted.ca_pem).hexdigest()[:12]
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(drifted.ca_pem)
    config = tmp_path / "by-path"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: k, cluster: {{server: '{drifted.url}/', certificate-authority: ca.crt}}}}]\n"
        "users: [{name: u, user: {token: kubeapi-test-token}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    by_path = target_module.resolve(str(config))[0]
    assert by_path.fingerprint == hashlib.sha256(drifted.url.encode()).hexdigest()[:12]
    assert by_path.server == drifted.url
    # A relative certificate-authority path is resolved against the kubeconfig's folder.
    assert ClusterReader(by_path, [kinds.NAMESPACE], ReadOptions(policy=FAST)).read().snapshot.coverage(
        kinds.NAMESPACE).state is CoverageState.LISTED


def test_in_cluster_configuration(drifted: KubeApiServer, tmp_path: Path) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("kubeapi-test-token")
    (account / "ca.crt").write_bytes(drifted.ca_pem)
    environ = {"KUBECONFIG": str(tmp_path / "absent"), "KUBERNETES_SERVICE_HOST": "127.0.0.1",
               "KUBERNETES_SERVICE_PORT": str(drifted.port)}
    [target] = target_module.resolve(None, environ=environ, service_account_dir=str(account))
    assert (target.context, target.server) == ("in-cluster", drifted.url)
    snap = ClusterReader(target, [kinds.SERVICE], ReadOptions(policy=FAST)).read().snapshot
    assert len(snap.of_kind(kinds.SERVICE)) == SERVICES_IN_DRIFTED
    with pytest.raises(ClusterError, match="not running in a pod"):
        target_module.resolve(None, environ={"KUBECONFIG": str(tmp_path / "absent")})
    with pytest.raises(ClusterError, match="Service token file does not exist"):
        target_module.resolve(None, environ=environ, service_account_dir=str(tmp_path / "nowhere"))


def test_kubeconfig_merge_follows_kubectl(drifted: KubeApiServer, tmp_path: Path) -> None:
    first = kubeconfig(drifted, tmp_path, "first")
    second = tmp_path / "second"
    second.write_text("apiVersion: v1\nkind: Config\ncurrent-context: other\nclusters: []\ncontexts: []\nusers: []\n")
    # The first file setting current-context wins; missing files in KUBECONFIG are skipped.
    environ = {"KUBECONFIG": ":".join([str(tmp_path / "missing"), first, str(second)])}
    [target] = target_module.resolve(None, environ=environ)
    assert target.context == "kubeapi-test"


def test_progress_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    plain, tty = io.StringIO(), Tty()
    for stream in (plain, tty):
        progress = Progress(stream)
        progress.plan("c", 2)
        progress.objects(5)
        progress.kind_done()
        progress.close()
    assert plain.getvalue() == ""
    assert "1/2 kinds, 5 objects" in tty.getvalue() and tty.getvalue().endswith("\r\033[K")


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(backoff_base=0.25, backoff_cap=8.0)
    assert [policy.backoff(n, lambda: 1.0) for n in (1, 2, 3, 4, 7, 10)] == [0.25, 0.5, 1.0, 2.0, 8.0, 8.0]
    assert [policy.backoff(n, lambda: 0.0) for n in (1, 2, 3)] == [0.125, 0.25, 0.5]


def test_retry_after_is_capped_and_other_statuses_are_not_retried(drifted: KubeApiServer, tmp_path: Path) -> None:
    from auditor.sources.live.client import Client

    slept: list[float] = []
    client = Client(_target(drifted, tmp_path).configuration,
                    RetryPolicy(max_retries=2, retry_after_cap=0.5, backoff_base=0.01), sleep=slept.append)
    drifted.faults.add(Fault.throttle(retry_after=7, resource="services", times=1))
    assert client.get_json("/api/v1/services")[0]["kind"] == "ServiceList"
    assert slept == [0.5]  # Retry-After 7 s, capped
    from auditor.sources.live.client import ApiFailure

    with pytest.raises(ApiFailure) as failure:
        client.get_json("/api/v1/namespaces/nowhere/widgets")
    assert failure.value.status == 404 and failure.value.attempts == 1 and slept == [0.5]


@pytest.mark.parametrize("text, seconds", [("30s", 30.0), ("1m", 60.0), ("500ms", 0.5), ("2", 2.0), ("0", None)])
def test_request_timeout_durations(text: str, seconds: float | None) -> None:
    from auditor.cli.live import _parse_timeout

    assert _parse_timeout(None, None, text) == seconds


def test_bad_request_timeout_is_a_usage_error() -> None:
    from tests.test_live_fixtures import run

    result = run("live", "--request-timeout", "soon")
    assert result.code == 2 and "is not a duration" in result.stderr


# --- issue 15: what starts when ------------------------------------------------------------


def test_the_usually_biggest_kinds_are_listed_first(drifted: KubeApiServer, tmp_path: Path) -> None:
    read(drifted, tmp_path, concurrency=1)
    listed = [r.path.rsplit("/", 1)[1] for r in drifted.requests if r.param("limit")]
    assert listed[:5] == ["pods", "replicasets", "secrets", "configmaps", "services"]


def test_discovery_roots_are_asked_while_version_is_answered(drifted: KubeApiServer, tmp_path: Path) -> None:
    """/api and /apis need nothing /version says: they are answered while /version is held."""
    gate = threading.Event()
    drifted.faults.add(Fault.hold(gate, timeout=20, path=r"^/version$"))
    box: dict[str, ReadResult] = {}
    worker = threading.Thread(target=lambda: box.update(result=read(drifted, tmp_path, [kinds.SERVICE])))
    worker.start()
    try:
        deadline = time.monotonic() + 15
        while {"/api", "/apis"} - {r.path for r in drifted.requests} and time.monotonic() < deadline:
            time.sleep(0.01)
        answered_first = {r.path for r in drifted.requests}
    finally:
        gate.set()
        worker.join(30)
    # The early lists (tests/test_live_early_lists.py) need nothing /version says either.
    assert {"/api", "/apis"} <= answered_first <= {"/api", "/apis", "/api/v1/services"}
    assert box["result"].snapshot.coverage(kinds.SERVICE).state is CoverageState.LISTED
