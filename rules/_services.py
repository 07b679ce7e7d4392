"""Facts about Services that several rules share (pure functions)."""

from __future__ import annotations

from auditor.model import K8sObject, as_list, as_mapping, as_str, string_labels
from auditor.selectors import selector_matches

# loadBalancerClass values Cilium serves (docs/cilium-facts.md §3.3); a Service
# with another class belongs to another load-balancer implementation.
CILIUM_LB_CLASSES = ("io.cilium/l2-announcer", "io.cilium/bgp-control-plane")
L2_LB_CLASS = "io.cilium/l2-announcer"
# Labels Cilium adds to every Service for its selectors (§2.2).
SERVICE_NAMESPACE_LABEL = "io.kubernetes.service.namespace"
SERVICE_NAME_LABEL = "io.kubernetes.service.name"


def service_type(service: K8sObject) -> str:
    """`spec.type`, defaulting to ClusterIP as the API server does."""
    return as_str(service.spec.get("type"), "ClusterIP") or "ClusterIP"


def load_balancer_class(service: K8sObject) -> str | None:
    value = service.spec.get("loadBalancerClass")
    return value if isinstance(value, str) and value else None


def handled_by_cilium_l2(service: K8sObject) -> bool:
    """Whether Cilium's L2 announcer may announce this Service (no class, or its class)."""
    return load_balancer_class(service) in (None, L2_LB_CLASS)


def selector_labels(service: K8sObject) -> dict[str, str]:
    """The labels Cilium's service selectors see: the Service's own plus its identity."""
    labels = string_labels(service.labels)
    if service.namespace:
        labels[SERVICE_NAMESPACE_LABEL] = service.namespace
    labels[SERVICE_NAME_LABEL] = service.name
    return labels


def l2_policy_selects(policy: K8sObject, service: K8sObject) -> bool:
    """Whether a CiliumL2AnnouncementPolicy announces this Service's LoadBalancer IP.

    A policy with no serviceSelector selects every Service; one that does not
    set `loadBalancerIPs: true` announces no LoadBalancer IP at all.
    """
    spec = policy.spec
    if spec.get("loadBalancerIPs") is not True:
        return False
    selector = spec.get("serviceSelector")
    if selector is None:
        return True
    return selector_matches(selector, selector_labels(service))


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
