"""Workloads and their pods' templates: which workloads a Service selects, which open host ports.

A workload is the top-level owner of pods: a Pod or ReplicaSet whose
controller (an ownerReference with `controller: true`) is in the input is
represented by that controller, so a live dump's Deployment, ReplicaSet and
Pods count once, as the Deployment. Labels are indexed by namespace, key and
value, so finding the workloads a Service selects intersects a few postings
instead of scanning the namespace.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from auditor import kinds
from auditor.model import K8sObject, as_list, as_mapping, as_str, string_labels

WORKLOAD_KINDS = (
    kinds.DEPLOYMENT, kinds.STATEFULSET, kinds.DAEMONSET, kinds.REPLICASET, kinds.JOB, kinds.CRONJOB, kinds.POD,
    kinds.REPLICATION_CONTROLLER,
)
# Kinds an ownerReference names, by the owner's kind (the group does not matter for these).
_OWNER_GK = {
    "Deployment": kinds.DEPLOYMENT, "StatefulSet": kinds.STATEFULSET, "DaemonSet": kinds.DAEMONSET,
    "ReplicaSet": kinds.REPLICASET, "Job": kinds.JOB, "CronJob": kinds.CRONJOB,
    "ReplicationController": kinds.REPLICATION_CONTROLLER,
}


def pod_template(obj: K8sObject) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(pod labels, pod spec, the path of the pod spec) of a workload or Pod."""
    if obj.gk == kinds.POD:
        return string_labels(obj.labels), obj.spec, "spec"
    spec = obj.spec
    path = "spec.template"
    if obj.gk == kinds.CRONJOB:
        spec = as_mapping(as_mapping(spec.get("jobTemplate")).get("spec"))
        path = "spec.jobTemplate.spec.template"
    template = as_mapping(spec.get("template"))
    return string_labels(as_mapping(template.get("metadata")).get("labels") or {}), as_mapping(
        template.get("spec")), f"{path}.spec"


@dataclass(frozen=True, slots=True)
class ContainerPort:
    """One entry of a container's `ports`, with where it is (`spec.template.spec.containers[0].ports[1]`)."""

    container: str
    name: str
    container_port: int | None
    host_port: int | None
    host_ip: str | None
    protocol: str
    path: str


def container_ports(obj: K8sObject) -> Iterator[ContainerPort]:
    """Every declared port of every container (init containers too: a sidecar can serve)."""
    _, spec, base = pod_template(obj)
    return ports_of(spec, base)


def ports_of(spec: Mapping[str, Any], base: str) -> Iterator[ContainerPort]:
    """The declared ports of a pod spec's containers and init containers."""
    for field in ("containers", "initContainers"):
        for index, container in enumerate(as_list(spec.get(field))):
            container = as_mapping(container)
            for position, port in enumerate(as_list(container.get("ports"))):
                port = as_mapping(port)
                number, host = port.get("containerPort"), port.get("hostPort")
                host_ip = as_str(port.get("hostIP"))
                yield ContainerPort(
                    container=as_str(container.get("name")),
                    name=as_str(port.get("name")),
                    container_port=number if isinstance(number, int) and not isinstance(number, bool) else None,
                    host_port=host if isinstance(host, int) and not isinstance(host, bool) and host > 0 else None,
                    host_ip=host_ip if host_ip and host_ip != "0.0.0.0" else None,
                    protocol=as_str(port.get("protocol"), "TCP") or "TCP",
                    path=f"{base}.{field}[{index}].ports[{position}]",
                )


def opens_host_ports(spec: Mapping[str, Any]) -> bool:
    """Whether a pod spec may open ports on the node: hostNetwork, or a port with a hostPort (a quick
    test that skips the pods that do neither, nearly all of them)."""
    if spec.get("hostNetwork") is True:
        return True
    for field in ("containers", "initContainers"):
        for container in as_list(spec.get(field)):
            for port in as_list(as_mapping(container).get("ports")):
                if isinstance(port, dict) and port.get("hostPort"):
                    return True
    return False


def host_network(obj: K8sObject) -> bool:
    return pod_template(obj)[1].get("hostNetwork") is True


def _controller_owner(obj: K8sObject) -> tuple[str, str] | None:
    for reference in as_list(obj.metadata.get("ownerReferences")):
        reference = as_mapping(reference)
        gk = _OWNER_GK.get(as_str(reference.get("kind")))
        name = reference.get("name")
        if reference.get("controller") is True and gk is not None and isinstance(name, str):
            return gk, name
    return None


class WorkloadIndex:
    """Top-level workloads by namespace and pod label, for Service selectors (linear to build)."""

    def __init__(self, objects: Iterable[K8sObject]) -> None:
        present: set[tuple[str, str | None, str]] = set()
        candidates: list[K8sObject] = []
        for obj in objects:
            present.add((obj.gk, obj.namespace, obj.name))
            candidates.append(obj)
        self.workloads: list[K8sObject] = []
        # The pod spec (and its path) of each workload that may open host ports.
        self.host_candidates: list[tuple[K8sObject, dict[str, Any], str]] = []
        self._labels: list[dict[str, str]] = []
        self._postings: dict[tuple[str | None, str, str], list[int]] = defaultdict(list)
        for obj in candidates:
            owner = _controller_owner(obj)
            if owner is not None and (owner[0], obj.namespace, owner[1]) in present:
                continue  # represented by its controller
            labels, spec, base = pod_template(obj)
            if opens_host_ports(spec):
                self.host_candidates.append((obj, spec, base))
            position = len(self.workloads)
            self.workloads.append(obj)
            self._labels.append(labels)
            for key, value in labels.items():
                self._postings[(obj.namespace, key, value)].append(position)

    def selected_by(self, namespace: str | None, selector: Mapping[str, str]) -> list[K8sObject]:
        """The workloads of `namespace` whose pod labels include all of `selector` (a Service selector)."""
        if not selector:
            return []
        smallest: list[int] | None = None
        for key, value in selector.items():
            found = self._postings.get((namespace, key, value))
            if not found:
                return []
            if smallest is None or len(found) < len(smallest):
                smallest = found
        # Check the shortest posting's workloads against the whole selector: the cost is that
        # posting's length, never the length of a label every workload carries.
        return [
            self.workloads[position] for position in smallest or []
            if all(self._labels[position].get(key) == value for key, value in selector.items())
        ]
