"""Facts about Service objects the model and several rules share (pure functions).

Moved here from the rules' `_services.py` helpers when the exposure model
took them over; the rules read them through `auditor.api.exposure`.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.model import K8sObject, as_list, as_mapping, as_str

# loadBalancerClass values Cilium serves (docs/cilium-facts.md §3.3); a Service
# with another class belongs to another load-balancer implementation.
L2_LB_CLASS = "io.cilium/l2-announcer"
BGP_LB_CLASS = "io.cilium/bgp-control-plane"
CILIUM_LB_CLASSES = (L2_LB_CLASS, BGP_LB_CLASS)
EXPOSING_TYPES = ("LoadBalancer", "NodePort")


def service_type(service: K8sObject) -> str:
    """`spec.type`, defaulting to ClusterIP as the API server does."""
    kind = service.spec.get("type")
    return kind if isinstance(kind, str) and kind else "ClusterIP"


def load_balancer_class(service: K8sObject) -> str | None:
    value = service.spec.get("loadBalancerClass")
    return value if isinstance(value, str) and value else None


def handled_by_cilium_l2(service: K8sObject) -> bool:
    """Whether Cilium's L2 announcer may announce this Service (no class, or its class)."""
    return load_balancer_class(service) in (None, L2_LB_CLASS)


def handled_by_cilium_bgp(service: K8sObject) -> bool:
    """Whether Cilium's BGP control plane may advertise this Service (no class, or its class)."""
    return load_balancer_class(service) in (None, BGP_LB_CLASS)


def external_traffic_policy(service: K8sObject) -> str:
    """`spec.externalTrafficPolicy`, `Cluster` when absent (the API server's default for LB/NodePort)."""
    return as_str(service.spec.get("externalTrafficPolicy")) or "Cluster"


@dataclass(frozen=True, slots=True)
class ServicePort:
    """One entry of `spec.ports`, normalised."""

    name: str
    port: int
    protocol: str
    target: int | str | None
    node_port: int | None


def service_ports(service: K8sObject) -> list[ServicePort]:
    """The Service's ports that have a port number (malformed entries skipped)."""
    out = []
    for entry in as_list(service.spec.get("ports")):
        if not isinstance(entry, dict):
            continue  # a malformed entry has no port number either
        number = entry.get("port")
        if not isinstance(number, int) or isinstance(number, bool):
            continue
        name, protocol, target, node_port = (entry.get("name"), entry.get("protocol"), entry.get("targetPort"),
                                             entry.get("nodePort"))
        out.append(ServicePort(
            name if isinstance(name, str) else "",
            number,
            protocol if isinstance(protocol, str) and protocol else "TCP",
            target if isinstance(target, (int, str)) and not isinstance(target, bool) else None,
            node_port if isinstance(node_port, int) and not isinstance(node_port, bool) else None,
        ))
    return out


def exposed_ports(service: K8sObject) -> str:
    """`443/TCP, 80/TCP` (with node ports when set), for finding messages."""
    parts = []
    for port in as_list(service.spec.get("ports")):
        port = as_mapping(port)
        number, protocol = port.get("port"), as_str(port.get("protocol"), "TCP")
        if number is None:
            continue
        text = f"{number}/{protocol}"
        if port.get("nodePort") is not None:
            text += f" (nodePort {port.get('nodePort')})"
        parts.append(text)
    return ", ".join(parts) or "no ports"


def ingress_addresses(service: K8sObject) -> list[str]:
    """The addresses in `status.loadBalancer.ingress` (IPs or hostnames)."""
    addresses = []
    for entry in as_list(as_mapping(service.status.get("loadBalancer")).get("ingress")):
        entry = as_mapping(entry)
        address = entry.get("ip") or entry.get("hostname")
        if isinstance(address, str):
            addresses.append(address)
    return addresses


def external_ips(service: K8sObject) -> list[str]:
    """`spec.externalIPs` (strings only)."""
    return [a for a in as_list(service.spec.get("externalIPs")) if isinstance(a, str) and a]


def allocates_node_ports(service: K8sObject) -> bool:
    """Whether a LoadBalancer Service also opens node ports (allocateLoadBalancerNodePorts, default true)."""
    return service.spec.get("allocateLoadBalancerNodePorts") is not False
