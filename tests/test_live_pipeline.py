"""Issue 15: a list's next page is asked for from the page's head, before the page is parsed.

The early request is a guess (the head's continue token, the page assumed full): it is used only
when the parsed page calls for exactly that request. These tests serve pages whose head and
parsed document disagree, and pages that are not JSON past their head, through the real
`kubernetes` client against tests/kubeapi.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor import kinds
from auditor.snapshot import CoverageState
from auditor.sources.live import target as target_module
from auditor.sources.live.client import Client, RetryPolicy
from auditor.sources.live.reader import ClusterReader, ReadOptions, ReadResult, list_head
from tests.kubeapi import Fault, KubeApiServer, RequestRecord
from tests.test_live_fixtures import kubeconfig

FAST = RetryPolicy(max_retries=4, backoff_base=0.01, backoff_cap=0.05, timeout=10)
SERVICES = 9


def _service(index: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"svc-{index}", "namespace": "apps", "uid": f"uid-{index}"},
            "spec": {"type": "ClusterIP", "ports": [{"port": 80 + index, "protocol": "TCP"}]}}


@pytest.fixture
def server() -> Iterator[KubeApiServer]:
    with KubeApiServer([_service(i) for i in range(SERVICES)]) as started:
        yield started


def _read(server: KubeApiServer, tmp_path: Path) -> ReadResult:
    target = target_module.resolve(kubeconfig(server, tmp_path))[0]
    return ClusterReader(target, [kinds.SERVICE], ReadOptions(chunk_size=3, max_chunk_size=3, policy=FAST)).read()


def _pages(server: KubeApiServer) -> list[RequestRecord]:
    return [r for r in server.requests if r.path == "/api/v1/services"]


def _first_page(server: KubeApiServer, tmp_path: Path) -> dict[str, Any]:
    target = target_module.resolve(kubeconfig(server, tmp_path, "plain"))[0]
    client = Client(target.configuration, FAST)
    try:
        document, _ = client.get_json("/api/v1/services", [("limit", "3")])
    finally:
        client.close()
    assert isinstance(document, dict) and document["metadata"]["continue"]
    return document


def _names(result: ReadResult) -> list[str]:
    return sorted(service.name for service in result.snapshot.of_kind(kinds.SERVICE))


def test_the_next_page_is_asked_for_before_the_page_is_parsed(server: KubeApiServer, tmp_path: Path) -> None:
    """A first page whose head is whole but whose items are cut (not JSON) is asked again, as any
    truncated answer is; the request for the second page went out from its head before that."""
    page = json.dumps(_first_page(server, tmp_path)).encode()
    server.clear_requests()
    server.faults.add(Fault.answer(page[: page.index(b'"items"') + 40], resource="services", continued=False))
    result = _read(server, tmp_path)
    pages = _pages(server)
    assert [bool(r.param("continue")) for r in pages[:3]] == [False, True, False]  # cut page, early, again
    # The early request was the right one (the parsed page asked for it): it was used, not repeated.
    assert len(pages) == 1 + SERVICES // 3
    assert _names(result) == sorted(f"svc-{i}" for i in range(SERVICES))


def test_an_early_request_the_parsed_page_contradicts_is_not_used(server: KubeApiServer, tmp_path: Path) -> None:
    """The head says one continue token, the parsed document another (a duplicate `metadata`, whose
    last value JSON keeps): the list goes on from the parsed one, so no object is skipped."""
    real = _first_page(server, tmp_path)
    later = _first_page_after(server, tmp_path, real["metadata"]["continue"])
    skipping = later["metadata"]["continue"]  # would skip svc-3..svc-5
    head = {"kind": real["kind"], "apiVersion": real["apiVersion"],
            "metadata": {**real["metadata"], "continue": skipping}}
    body = (json.dumps(head)[:-1] + ', "items": ' + json.dumps(real["items"])
            + ', "metadata": ' + json.dumps(real["metadata"]) + "}").encode()
    assert list_head(body) is not None and list_head(body).token == skipping  # type: ignore[union-attr]
    assert json.loads(body)["metadata"]["continue"] == real["metadata"]["continue"]
    server.clear_requests()
    server.faults.add(Fault.answer(body, resource="services", continued=False))
    result = _read(server, tmp_path)
    assert result.snapshot.coverage(kinds.SERVICE).state is CoverageState.LISTED
    assert _names(result) == sorted(f"svc-{i}" for i in range(SERVICES))
    # The head's token was asked for early (it is also the real third page's), the parsed one after it.
    tokens = [r.param("continue") for r in _pages(server)]
    assert skipping in tokens and real["metadata"]["continue"] in tokens


def _first_page_after(server: KubeApiServer, tmp_path: Path, token: str) -> dict[str, Any]:
    target = target_module.resolve(kubeconfig(server, tmp_path, "plain-next"))[0]
    client = Client(target.configuration, FAST)
    try:
        document, _ = client.get_json("/api/v1/services", [("limit", "3"), ("continue", token)])
    finally:
        client.close()
    assert isinstance(document, dict)
    return document


@pytest.mark.parametrize("body", [
    b'{"items":[],"metadata":{"continue":"x"}}',  # the items first: nothing before them
    b'{"kind":"ServiceList","metadata":{"labels":{"items":1}},"items":[]}',  # "items" inside metadata
    b'{"kind":"ServiceList","metadata":{"continue":"a \\"items"},"items":[]}',  # the cut inside a string
    b'{"kind":"ServiceList","apiVersion":"v1","items":[]}',  # no metadata
    b'[{"items":[]}]',  # not an object
    b'{"kind":"ServiceList","metadata":{"continue":"\xff"},"items":[]}',  # not UTF-8
])
def test_a_head_that_cannot_be_read_alone_is_none(body: bytes) -> None:
    assert list_head(body) is None


def test_the_head_of_a_list_as_the_api_server_writes_it() -> None:
    body = b'{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"abc",' \
           b'"remainingItemCount":12},"items":[{"metadata":{"name":"items"}}]}'
    head = list_head(body)
    assert head is not None and (head.token, head.remaining) == ("abc", 12)
    quoted = list_head(b'{"kind":"ServiceList","metadata":{"continue":"a \\"items\\" b"},"items":[]}')
    assert quoted is not None and quoted.token == 'a "items" b'  # an escaped quote is no `"items"` key
    last = list_head(b'{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}')
    assert last is not None and (last.token, last.remaining) == (None, None)
