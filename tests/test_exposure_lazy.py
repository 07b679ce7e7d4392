"""The exposure model builds the views of door-less Services only when asked (auditor/exposure/index.py).

What is built lazily must be what an eager build gives: the same views, in the same order, the same
lookups (first definition for `services`, last equal subject for `view_of`), and the same entrances.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from auditor import exposure, kinds
from auditor.cilium import config as cilium_config
from auditor.exposure.index import ServicesByName, ServiceViews
from auditor.exposure.services import external_ips, service_type
from auditor.posture import Posture
from auditor.snapshot import Snapshot
from auditor.sources.files import read_paths
from tests.conftest import FIXTURES

CLUSTER = FIXTURES / "clusters" / "exposure.yaml"
build_module = importlib.import_module("auditor.exposure.build")

# A base and an overlay of one identity, and a ClusterIP Service a route could name: appended to the
# fixture cluster, whose own Services open every kind of door.
EXTRA = """
---
apiVersion: v1
kind: Service
metadata: {name: twin, namespace: shop, labels: {copy: first}}
spec: {type: ClusterIP, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: twin, namespace: shop, labels: {copy: second}}
spec: {type: NodePort, ports: [{port: 80, nodePort: 30080}]}
---
apiVersion: v1
kind: Service
metadata: {name: quiet, namespace: shop}
spec: {ports: [{port: 8080, name: http}], selector: {app: quiet}}
"""


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    path = tmp_path_factory.mktemp("lazy") / "cluster.yaml"
    path.write_text(CLUSTER.read_text(encoding="utf-8") + EXTRA, encoding="utf-8")
    return read_paths([str(path)])


def _build(snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch) -> tuple[exposure.ExposureModel, list[str]]:
    built: list[str] = []
    real = build_module._Builder._service_view

    def counting(self: Any, service: Any, gateway_ref: Any) -> exposure.ServiceView:
        built.append(f"{service.namespace}/{service.name}")
        return real(self, service, gateway_ref)

    monkeypatch.setattr(build_module._Builder, "_service_view", counting)
    return exposure.build(snapshot, cilium_config.resolve(snapshot), Posture()), built


def _eager_views(snapshot: Snapshot) -> list[exposure.ServiceView]:
    """Every Service's view, built one after the other as the model did before it was lazy."""
    model = exposure.build(snapshot, cilium_config.resolve(snapshot), Posture())
    assert isinstance(model.listed, ServiceViews)
    return [model.listed._build(i) for i in range(len(model.listed))]


def _door_openers(snapshot: Snapshot) -> Iterator[str]:
    for service in snapshot.of_kind(kinds.SERVICE):
        if service_type(service) in ("LoadBalancer", "NodePort") or external_ips(service):
            yield f"{service.namespace}/{service.name}"


def test_only_services_that_open_a_door_are_built(snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch) -> None:
    model, built = _build(snapshot, monkeypatch)
    doors = list(_door_openers(snapshot))
    assert doors and len(doors) < len(snapshot.of_kind(kinds.SERVICE))  # the fixture has both kinds
    # The door openers, and the data-plane Services of Gateways (looked up by name) at most.
    assert set(doors) <= set(built) and len(built) < len(snapshot.of_kind(kinds.SERVICE))
    assert "shop/quiet" not in built
    assert ("shop", "quiet") in model.services and "shop/quiet" not in built  # membership builds nothing
    assert model.service("shop", "quiet") is not None and built[-1] == "shop/quiet"


def test_lazy_views_are_the_eager_ones(snapshot: Snapshot) -> None:
    eager = _eager_views(snapshot)
    model = exposure.build(snapshot, cilium_config.resolve(snapshot), Posture())
    assert list(model.listed) == eager  # in input order, equal field by field
    assert model.listed[-1] == eager[-1] and list(model.listed[1:3]) == eager[1:3]
    assert len(model.listed) == len(snapshot.of_kind(kinds.SERVICE))


def test_lookups_are_the_eager_ones(snapshot: Snapshot) -> None:
    eager = _eager_views(snapshot)
    model = exposure.build(snapshot, cilium_config.resolve(snapshot), Posture())
    first: dict[tuple[str | None, str], exposure.ServiceView] = {}
    for view in eager:
        first.setdefault((view.ref.namespace, view.ref.name), view)
    assert isinstance(model.services, ServicesByName)
    assert dict(model.services) == first and model.services[("shop", "twin")].type == "ClusterIP"
    assert list(model.services) == list(first)  # in input order
    everything = [*eager, *model.implied, *model.declared]
    by_subject = {view.subject: view for view in everything}  # the last equal subject wins
    assert all(model.view_of(view.subject) is not None for view in everything)
    assert all(model.view_of(subject) == view for subject, view in by_subject.items())
    twins = [v for v in eager if v.ref.name == "twin"]
    assert [v.type for v in twins] == ["ClusterIP", "NodePort"] and twins[0].subject != twins[1].subject
    for kind in ("LoadBalancer", "NodePort", "ClusterIP"):
        assert list(model.service_views_of_type(kind)) == [v for v in everything if v.type == kind]


def test_entrances_do_not_depend_on_what_was_looked_at_first(snapshot: Snapshot) -> None:
    fresh = exposure.build(snapshot, cilium_config.resolve(snapshot), Posture())
    looked = exposure.build(snapshot, cilium_config.resolve(snapshot), Posture())
    list(looked.listed)  # every view built, in order
    assert fresh.entrances == looked.entrances and list(fresh.listed) == list(looked.listed)
