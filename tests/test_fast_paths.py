"""Fast paths of issue 15 answer exactly what the plain code they replaced answered.

Each reference below is the previous implementation, kept here as the definition; the fast one is
held to it on generated input, hostile shapes included (`labels: [app]`, `ports: "80"`, bools for ints).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.exposure.services import ServicePort, service_ports, service_type
from auditor.model import K8sObject, as_list, as_mapping, as_str, string_labels
from auditor.posture import Posture

ANY_SCALAR = st.none() | st.booleans() | st.integers(-3, 70000) | st.text(max_size=6) | st.floats(allow_nan=False)
ANY_VALUE = st.recursive(ANY_SCALAR, lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)


def reference_string_labels(labels: object) -> dict[str, str]:
    from collections.abc import Mapping

    if not isinstance(labels, Mapping):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5) | st.integers(0, 3) | st.booleans(),
                       st.text(max_size=5) | st.integers(0, 3) | st.none(), max_size=5) | ANY_VALUE)
def test_string_labels(labels: Any) -> None:
    fast = string_labels(labels)
    assert fast == reference_string_labels(labels)
    if isinstance(labels, dict):
        assert fast is not labels  # a copy: callers may add keys (service_selector_labels does)


def reference_service_ports(service: K8sObject) -> list[ServicePort]:
    out = []
    for raw in as_list(service.spec.get("ports")):
        entry = as_mapping(raw)
        number = entry.get("port")
        if not isinstance(number, int) or isinstance(number, bool):
            continue
        target, node_port = entry.get("targetPort"), entry.get("nodePort")
        out.append(ServicePort(
            name=as_str(entry.get("name")), port=number, protocol=as_str(entry.get("protocol"), "TCP") or "TCP",
            target=target if isinstance(target, (int, str)) and not isinstance(target, bool) else None,
            node_port=node_port if isinstance(node_port, int) and not isinstance(node_port, bool) else None,
        ))
    return out


PORT = st.fixed_dictionaries({}, optional={
    "name": ANY_SCALAR, "port": ANY_SCALAR, "protocol": ANY_SCALAR, "targetPort": ANY_SCALAR, "nodePort": ANY_SCALAR})


@settings(max_examples=300, deadline=None)
@given(st.lists(PORT | ANY_VALUE, max_size=4) | ANY_VALUE, ANY_SCALAR | ANY_VALUE)
def test_service_ports_and_type(ports: Any, kind: Any) -> None:
    spec: Any = {"ports": ports, "type": kind}
    service = K8sObject({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec})
    assert service_ports(service) == reference_service_ports(service)
    assert service_type(service) == (as_str(spec.get("type"), "ClusterIP") or "ClusterIP")


GLOB = st.text(alphabet="ab*?[]!-.\\(\n", max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(GLOB, max_size=4), st.text(alphabet="ab-.\\(\n[]", max_size=6))
def test_excluded_namespaces_match_as_fnmatchcase(patterns: list[str], namespace: str) -> None:
    posture = Posture()
    posture.excluded_namespaces = tuple(patterns)
    assert posture.namespace_excluded(namespace) == any(fnmatchcase(namespace, p) for p in patterns)


@settings(max_examples=200, deadline=None)
@given(ANY_VALUE, ANY_VALUE, ANY_VALUE)
def test_object_accessors_read_as_before(spec: Any, labels: Any, annotations: Any) -> None:
    raw = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "labels": labels,
                                                                "annotations": annotations}, "spec": spec}
    obj = K8sObject(raw)
    assert obj.spec == as_mapping(spec) and obj.labels == as_mapping(labels)
    assert obj.annotations == as_mapping(annotations)
    if isinstance(spec, dict):
        assert obj.spec is spec  # the mapping read, not a copy
    assert obj.ref is obj.ref and obj.ref.name == "s"
