"""Facts about Services that several rules share (pure functions)."""

from __future__ import annotations

from typing import Any

from auditor.api import (
    K8sObject,
    as_list,
    as_mapping,
    as_str,
    is_empty_selector,
    selector_matches,
    string_labels,
    strip_source,
)

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


# --- announcement (L2 and BGP), added for the LB-IPAM / L2 rules ---------------------

BGP_LB_CLASS = "io.cilium/bgp-control-plane"


def handled_by_cilium_bgp(service: K8sObject) -> bool:
    """Whether Cilium's BGP control plane may advertise this Service (no class, or its class)."""
    return load_balancer_class(service) in (None, BGP_LB_CLASS)


# --- matching many Services quickly ---------------------------------------------------


def _selector_keys(selector: object) -> tuple[str, ...]:
    """The label keys a selector reads (after stripping Cilium source prefixes)."""
    keys: set[str] = set()
    if isinstance(selector, dict):
        match_labels = selector.get("matchLabels")
        if isinstance(match_labels, dict):
            keys.update(strip_source(k) for k in match_labels if isinstance(k, str))
        for expression in as_list(selector.get("matchExpressions")):
            key = as_mapping(expression).get("key")
            if isinstance(key, str):
                keys.add(strip_source(key))
    return tuple(sorted(keys))


class SelectorSet:
    """Whether any of several label selectors matches a label set, memoised.

    A selector's verdict depends only on the values of the keys it names, and
    those repeat across Services (a handful of namespaces, a few labels), so
    verdicts are cached on that projection: matching 100,000 Services against
    a few dozen policies costs one tuple and one dict lookup per Service.
    `always` makes every label set match (a policy without a selector).
    """

    __slots__ = ("_cache", "always", "keys", "selectors")

    def __init__(self, selectors: list[Any], always: bool = False) -> None:
        self.selectors = list(selectors)
        self.always = always
        self.keys = tuple(sorted({key for s in self.selectors for key in _selector_keys(s)}))
        self._cache: dict[tuple[str | None, ...], bool] = {}

    def __bool__(self) -> bool:
        return self.always or bool(self.selectors)

    def matches(self, labels: dict[str, str]) -> bool:
        if self.always:
            return True
        if not self.selectors:
            return False
        projection = tuple(labels.get(key) for key in self.keys)
        verdict = self._cache.get(projection)
        if verdict is None:
            verdict = any(selector_matches(s, labels) for s in self.selectors)
            self._cache[projection] = verdict
        return verdict


def l2_lb_selectors(policies: list[K8sObject]) -> SelectorSet:
    """The Services whose LoadBalancer IPs some L2 policy announces (see `l2_policy_selects`)."""
    announcing = [p.spec for p in policies if p.spec.get("loadBalancerIPs") is True]
    always = any(spec.get("serviceSelector") is None for spec in announcing)
    return SelectorSet([s["serviceSelector"] for s in announcing if s.get("serviceSelector") is not None], always)


def l2_external_ip_selectors(policies: list[K8sObject]) -> SelectorSet:
    """The Services whose spec.externalIPs some L2 policy announces."""
    announcing = [p.spec for p in policies if p.spec.get("externalIPs") is True]
    always = any(spec.get("serviceSelector") is None for spec in announcing)
    return SelectorSet([s["serviceSelector"] for s in announcing if s.get("serviceSelector") is not None], always)


def bgp_lb_selectors(advertisements: list[K8sObject]) -> SelectorSet:
    """The Services whose LoadBalancer IPs some CiliumBGPAdvertisement advertises.

    It needs an entry with advertisementType Service, LoadBalancerIP among
    service.addresses, and a selector matching the Service: for this type an
    empty or absent selector selects nothing (CRD v2, docs/cilium-facts.md §8.1).
    """
    selectors = []
    for advertisement in advertisements:
        for entry in as_list(advertisement.spec.get("advertisements")):
            entry = as_mapping(entry)
            if entry.get("advertisementType") != "Service":
                continue
            if "LoadBalancerIP" not in as_list(as_mapping(entry.get("service")).get("addresses")):
                continue
            selector = entry.get("selector")
            if isinstance(selector, dict) and not is_empty_selector(selector):
                selectors.append(selector)
    return SelectorSet(selectors)
