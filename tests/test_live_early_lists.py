"""Issue 15: the likely largest built-in lists start before discovery has answered.

They are asked at the resource every Kubernetes release serves them at (`KNOWN_RESOURCES`), and
used only when discovery names that very resource: a kind discovery does not serve, serves under
another name, or could not tell about, is judged by discovery as before, never by the early list.
Real `kubernetes` client, tests/kubeapi server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor import kinds
from auditor.snapshot import CoverageState
from auditor.sources.live import target as target_module
from auditor.sources.live.client import RetryPolicy
from auditor.sources.live.reader import KNOWN_RESOURCES, LIKELY_LARGEST, ClusterReader, ReadOptions, ReadResult
from tests.kubeapi import Fault, KubeApiServer
from tests.test_live_fixtures import kubeconfig

FAST = RetryPolicy(max_retries=1, backoff_base=0.01, backoff_cap=0.02, timeout=10)
READ = [kinds.SERVICE, kinds.POD, kinds.NAMESPACE]


def _items() -> list[dict[str, Any]]:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}
    services = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc-{i}", "namespace": "apps"},
                 "spec": {"type": "ClusterIP"}} for i in range(4)]
    return [namespace, *services]


@pytest.fixture(params=[True, False], ids=["aggregated", "legacy"])
def server(request: pytest.FixtureRequest) -> Iterator[KubeApiServer]:
    with KubeApiServer(_items(), aggregated_discovery=request.param) as started:
        yield started


def _read(server: KubeApiServer, tmp_path: Path, concurrency: int = 8) -> ReadResult:
    target = target_module.resolve(kubeconfig(server, tmp_path))[0]
    return ClusterReader(target, READ, ReadOptions(concurrency=concurrency, policy=FAST)).read()


def test_the_known_resources_are_the_likely_largest_built_in_kinds() -> None:
    assert set(KNOWN_RESOURCES) == set(LIKELY_LARGEST) - {kinds.CILIUM_NETWORK_POLICY}
    assert all(gk == resource.gk and resource.version == "v1" for gk, resource in KNOWN_RESOURCES.items())


EARLY = {"/api/v1/services", "/api/v1/pods", "/api/v1/namespaces"}


def test_the_largest_lists_are_asked_while_discovery_is_held(server: KubeApiServer, tmp_path: Path) -> None:
    gate = threading.Event()
    server.faults.add(Fault.hold(gate, timeout=20, path=r"^/apis?$", times=None))
    box: dict[str, ReadResult] = {}
    worker = threading.Thread(target=lambda: box.update(result=_read(server, tmp_path)))
    worker.start()
    try:
        deadline = time.monotonic() + 15  # a hang guard, not a timing assertion
        while not {r.path for r in server.requests} >= EARLY and time.monotonic() < deadline:
            time.sleep(0.01)
        answered_first = {r.path for r in server.requests}
    finally:
        gate.set()
        worker.join(30)
    assert answered_first >= EARLY
    assert not {"/api", "/apis"} & answered_first
    snap = box["result"].snapshot
    assert snap.coverage(kinds.SERVICE).state is CoverageState.LISTED
    assert len(snap.of_kind(kinds.SERVICE)) == 4
    assert [r.path for r in server.requests].count("/api/v1/services") == 1  # used, not asked again


def test_with_little_concurrency_discovery_comes_first(server: KubeApiServer, tmp_path: Path) -> None:
    _read(server, tmp_path, concurrency=3)
    paths = [r.path for r in server.requests]
    assert paths.index("/api/v1/services") > max(paths.index("/api"), paths.index("/apis"))


def _drop_services(document: Any, _: int) -> Any:
    """Discovery (aggregated or legacy) without the core group's Service."""
    if isinstance(document, dict):
        return {key: _drop_services(value, 0) for key, value in document.items()}
    if isinstance(document, list):
        return [_drop_services(value, 0) for value in document
                if not (isinstance(value, dict) and "services" in (value.get("resource"), value.get("name")))]
    return document


def _rename_services(document: Any, _: int) -> Any:
    """Discovery naming the core group's Service resource `svcs`."""
    if isinstance(document, dict):
        renamed = {key: _rename_services(value, 0) for key, value in document.items()}
        for key in ("resource", "name"):
            if renamed.get(key) == "services":
                renamed[key] = "svcs"
        return renamed
    if isinstance(document, list):
        return [_rename_services(value, 0) for value in document]
    return document


CORE_DISCOVERY = r"^/api(/v1)?$"


def test_an_early_list_of_a_kind_discovery_does_not_serve_is_not_used(server: KubeApiServer,
                                                                       tmp_path: Path) -> None:
    server.faults.add(Fault.rewrite(_drop_services, path=CORE_DISCOVERY, times=None))
    snap = _read(server, tmp_path).snapshot
    assert "/api/v1/services" in {r.path for r in server.requests}  # it was asked early
    assert snap.coverage(kinds.SERVICE).state is CoverageState.NOT_SERVED
    assert snap.of_kind(kinds.SERVICE) == []
    assert snap.coverage(kinds.POD).state is CoverageState.LISTED


def test_an_early_list_of_another_resource_than_discovery_names_is_not_used(server: KubeApiServer,
                                                                            tmp_path: Path) -> None:
    server.faults.add(Fault.rewrite(_rename_services, path=CORE_DISCOVERY, times=None))
    snap = _read(server, tmp_path).snapshot
    paths = {r.path for r in server.requests}
    assert {"/api/v1/services", "/api/v1/svcs"} <= paths  # early, then the resource discovery names
    coverage = snap.coverage(kinds.SERVICE)
    assert coverage.state is CoverageState.FAILED and "svcs" in coverage.reason and "404" in coverage.reason
    assert snap.of_kind(kinds.SERVICE) == []


def test_an_early_list_of_a_group_whose_discovery_failed_is_not_used(server: KubeApiServer, tmp_path: Path) -> None:
    server.faults.add(Fault.error(path=CORE_DISCOVERY, times=None))
    snap = _read(server, tmp_path).snapshot
    assert "/api/v1/services" in {r.path for r in server.requests}
    for gk in READ:
        coverage = snap.coverage(gk)
        assert coverage.state is CoverageState.FAILED and "HTTP 500" in coverage.reason, (gk, coverage)
    assert snap.objects == []


def test_meanwhile_runs_once_before_discovery_is_used(server: KubeApiServer, tmp_path: Path) -> None:
    """The CPU work the command does while the first answers are awaited (`audit live` imports the
    engine and the renderers): once, on the reading thread; if it fails, the read fails with it."""
    target = target_module.resolve(kubeconfig(server, tmp_path))[0]
    calls: list[str] = []
    result = ClusterReader(target, READ, ReadOptions(policy=FAST)).read(
        meanwhile=lambda: calls.append(threading.current_thread().name))
    assert calls == [threading.current_thread().name]
    assert result.snapshot.coverage(kinds.SERVICE).state is CoverageState.LISTED

    def broken() -> None:
        raise RuntimeError("meanwhile failed")

    with pytest.raises(RuntimeError, match="meanwhile failed"):
        ClusterReader(target, READ, ReadOptions(policy=FAST)).read(meanwhile=broken)


def test_what_is_read_is_what_meanwhile_decides_not_the_guess(server: KubeApiServer, tmp_path: Path) -> None:
    """`audit live` guesses the kinds from rules/index.json and loads the rules meanwhile: the rules'
    kinds are read, a guessed kind they do not read is not in the snapshot, a kind the guess missed is."""
    target = target_module.resolve(kubeconfig(server, tmp_path))[0]
    reader = ClusterReader(target, [kinds.SERVICE, kinds.POD], ReadOptions(policy=FAST))
    snap = reader.read(meanwhile=lambda: [kinds.SERVICE, kinds.NAMESPACE, kinds.CILIUM_NETWORK_POLICY]).snapshot
    assert set(snap.listed) == {kinds.SERVICE, kinds.NAMESPACE, kinds.CILIUM_NETWORK_POLICY}
    assert snap.coverage(kinds.NAMESPACE).state is CoverageState.LISTED
    assert snap.coverage(kinds.CILIUM_NETWORK_POLICY).state is CoverageState.NOT_SERVED  # discovery asked
    assert snap.of_kind(kinds.POD) == [] and len(snap.of_kind(kinds.NAMESPACE)) == 1
    assert "/api/v1/pods" in {r.path for r in server.requests}  # the guess's early list, unused


def test_an_early_list_discovery_did_not_confirm_stops_at_its_next_page(tmp_path: Path) -> None:
    """Not a whole list read for nothing (and waited for): once discovery names another resource,
    the early list asks no further page."""
    more = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"more-{i}", "namespace": "apps"},
             "spec": {"type": "ClusterIP"}} for i in range(26)]
    items = [*_items(), *more]
    roots, later_pages = threading.Event(), threading.Event()
    with KubeApiServer(items) as server:
        server.faults.add(Fault.hold(roots, timeout=20, path=r"^/apis?$", times=None))
        server.faults.add(Fault.hold(later_pages, timeout=20, path=r"^/api/v1/services$", continued=True, times=None))
        server.faults.add(Fault.rewrite(_rename_services, path=CORE_DISCOVERY, times=None))
        target = target_module.resolve(kubeconfig(server, tmp_path))[0]
        reader = ClusterReader(target, READ, ReadOptions(chunk_size=3, max_chunk_size=3, policy=FAST))
        box: dict[str, ReadResult] = {}
        worker = threading.Thread(target=lambda: box.update(result=reader.read()))
        worker.start()
        try:
            _wait_for(server, "/api/v1/services")  # the early list's first page (its second one is held)
            roots.set()
            _wait_for(server, "/api/v1/svcs")  # discovery's resource is listed: the early list is abandoned
        finally:
            roots.set()
            later_pages.set()
            worker.join(30)
        pages = [r for r in server.requests if r.path == "/api/v1/services"]
    assert len(pages) <= 2  # of 10: the first, and the one held while discovery answered (if answered yet)
    assert box["result"].snapshot.of_kind(kinds.SERVICE) == []


def _wait_for(server: KubeApiServer, path: str) -> None:
    deadline = time.monotonic() + 15  # a hang guard, not a timing assertion
    while path not in {r.path for r in server.requests} and time.monotonic() < deadline:
        time.sleep(0.01)
    assert path in {r.path for r in server.requests}, f"{path} never asked"


def test_a_read_that_fails_stops_its_lists_at_their_next_page(tmp_path: Path) -> None:
    """`audit live` with a configuration error found while the first answers are awaited: the error
    is reported, and the lists already running ask no further page (the process would otherwise
    wait for them at exit)."""
    more = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"more-{i}", "namespace": "apps"},
             "spec": {"type": "ClusterIP"}} for i in range(26)]
    later_pages = threading.Event()
    with KubeApiServer([*_items(), *more]) as server:
        server.faults.add(Fault.hold(later_pages, timeout=20, path=r"^/api/v1/services$", continued=True, times=None))
        target = target_module.resolve(kubeconfig(server, tmp_path))[0]

        def failing() -> None:
            _wait_for(server, "/api/v1/services")  # the first page is in; the second is held
            raise RuntimeError("configuration error")

        reader = ClusterReader(target, READ, ReadOptions(chunk_size=3, max_chunk_size=3, policy=FAST))
        try:
            with pytest.raises(RuntimeError, match="configuration error"):
                reader.read(meanwhile=failing)
        finally:
            later_pages.set()
        for thread in threading.enumerate():
            if thread.name.startswith("audit-"):
                thread.join(30)
        pages = [r for r in server.requests if r.path == "/api/v1/services"]
    assert len(pages) <= 2  # of 10: the first, and the one held (if answered yet)


def test_a_failed_read_stops_the_retries_of_its_lists(tmp_path: Path) -> None:
    """A configuration error found while the first requests are out, against a cluster that does not
    answer: the lists' retries stop with the read (closing the client), instead of running their
    backoff out before the process may exit."""
    from tests.kubeapi import KubeconfigContext, write_kubeconfig

    with KubeApiServer([]) as server:
        ca = server.ca_pem
    dead = write_kubeconfig(tmp_path / "dead", [KubeconfigContext("c", "https://127.0.0.1:1", ca, "t")])
    target = target_module.resolve(str(dead))[0]
    patient = RetryPolicy(max_retries=4, backoff_base=0.5, backoff_cap=1.0, timeout=10)
    reader = ClusterReader(target, READ, ReadOptions(policy=patient))

    def configuration_error() -> None:
        raise RuntimeError("configuration error")

    with pytest.raises(RuntimeError, match="configuration error"):
        reader.read(meanwhile=configuration_error)
    for thread in threading.enumerate():
        if thread.name.startswith("audit-"):
            thread.join(30)  # a hang guard
    first_attempts = 3 + len(READ)  # /version, /api, /apis and the early lists
    assert reader.client.requests_made <= 2 * first_attempts  # not 5 attempts each
