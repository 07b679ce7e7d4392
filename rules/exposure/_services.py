"""Facts about Services that several rules share: the exposure model's (auditor/exposure/services.py,
selection.py), re-exported under the names the rules have always used.

The model took these over (issue 12): Service types, load-balancer classes,
the labels Cilium's selectors see and the one selector evaluator live there,
so no rule rebuilds them. What is left here is the rules' shorthand.
"""

from __future__ import annotations

from auditor.api import K8sObject, exposure

CILIUM_LB_CLASSES = exposure.CILIUM_LB_CLASSES
L2_LB_CLASS = exposure.L2_LB_CLASS
BGP_LB_CLASS = exposure.BGP_LB_CLASS
SERVICE_NAMESPACE_LABEL = exposure.SERVICE_NAMESPACE_LABEL
SERVICE_NAME_LABEL = exposure.SERVICE_NAME_LABEL
SelectorSet = exposure.SelectorSet
service_type = exposure.service_type
load_balancer_class = exposure.load_balancer_class
handled_by_cilium_l2 = exposure.handled_by_cilium_l2
handled_by_cilium_bgp = exposure.handled_by_cilium_bgp
selector_labels = exposure.service_selector_labels
exposed_ports = exposure.exposed_ports
ingress_addresses = exposure.ingress_addresses


def l2_policy_selects(policy: K8sObject, service: K8sObject) -> bool:
    """Whether a CiliumL2AnnouncementPolicy announces this Service's LoadBalancer IP (loadBalancerIPs: true and
    its serviceSelector, absent or {} = every Service, selects it)."""
    spec = policy.spec
    if spec.get("loadBalancerIPs") is not True:
        return False
    return exposure.selects(exposure.L2_POLICY_SERVICES, spec.get("serviceSelector"), selector_labels(service))


def l2_lb_selectors(policies: list[K8sObject]) -> exposure.SelectorSet:
    """The Services whose LoadBalancer IPs some L2 policy announces (see `l2_policy_selects`)."""
    announcing = [p.spec for p in policies if p.spec.get("loadBalancerIPs") is True]
    return exposure.SelectorSet.of(exposure.L2_POLICY_SERVICES, [s.get("serviceSelector") for s in announcing])


def l2_external_ip_selectors(policies: list[K8sObject]) -> exposure.SelectorSet:
    """The Services whose spec.externalIPs some L2 policy announces."""
    announcing = [p.spec for p in policies if p.spec.get("externalIPs") is True]
    return exposure.SelectorSet.of(exposure.L2_POLICY_SERVICES, [s.get("serviceSelector") for s in announcing])
