"""service-external-ips: a Service claiming spec.externalIPs."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    Fact,
    Finding,
    K8sObject,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    kinds,
    selector_matches,
)
from auditor_rules.exposure._services import exposed_ports, selector_labels


def _announces_external_ips(policy: K8sObject, service: K8sObject) -> bool:
    """Whether a CiliumL2AnnouncementPolicy announces this Service's externalIPs on the LAN."""
    spec = policy.spec
    if spec.get("externalIPs") is not True:
        return False
    selector = spec.get("serviceSelector")
    if selector is None:
        return True
    return selector_matches(selector, selector_labels(service))


class ServiceExternalIps(Rule):
    id = "service-external-ips"
    severity = Severity.ERROR
    title = "Service with spec.externalIPs"
    rationale_fact = (
        "With kube-proxy replacement, Cilium's eBPF load balancer serves a Service's spec.externalIPs "
        "on the nodes (since 1.18 the external-IPs feature is always on under "
        "kubeProxyReplacement=true), and a CiliumL2AnnouncementPolicy with externalIPs: true announces "
        "them on the LAN. Whoever can create a Service can claim any address this way and intercept "
        "traffic meant for it, a design flaw Kubernetes tracks as CVE-2020-8554, with no fix in the API "
        "itself."
    )
    rationale_decision = (
        "The only way in is the platform's edge Gateway (ADR 0020) and it uses no externalIPs: every "
        "Service that sets them is an error."
    )
    remediation = (
        "Remove spec.externalIPs and publish the Service through an HTTPRoute on the edge "
        "Gateway (or a named, excepted LoadBalancer Service); block the field cluster-wide with "
        "the DenyServiceExternalIPs admission plugin."
    )
    requires = (kinds.SERVICE,)
    uses = (kinds.L2_ANNOUNCEMENT_POLICY,)
    facts = (
        Fact(
            "A user who can create a Service with spec.externalIPs can intercept traffic to those IPs "
            "(CVE-2020-8554, unfixable in the API).",
            "Kubernetes, all versions",
            "https://github.com/kubernetes/kubernetes/issues/97076",
        ),
        Fact(
            "enable-external-ips (with enable-node-port, enable-host-port) is deprecated and always on "
            "when kube-proxy replacement is on.",
            "Cilium 1.18+ (removal targeted at 1.19)",
            "https://github.com/cilium/cilium/pull/39581",
        ),
        Fact(
            "A CiliumL2AnnouncementPolicy with externalIPs: true announces the selected Services' spec.externalIPs.",
            "Cilium 1.14+",
            "https://docs.cilium.io/en/stable/network/l2-announcements/",
        ),
    )
    references = (
        "https://github.com/kubernetes/kubernetes/issues/97076",
        "https://kubernetes.io/docs/concepts/services-networking/service/#external-ips",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        policies = snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY)
        for service in snapshot.of_kind(kinds.SERVICE):
            ctx.examined(service)
            addresses = [a for a in as_list(service.spec.get("externalIPs")) if isinstance(a, str) and a]
            if not addresses:
                continue
            announcing = sorted(p.name for p in policies if _announces_external_ips(p, service))
            announced = ""
            if announcing:
                announced = f"; announced on the LAN by CiliumL2AnnouncementPolicy {', '.join(announcing)}"
            yield self.finding(
                service,
                f"externalIPs {', '.join(addresses)} expose {exposed_ports(service)} outside the Gateway{announced}",
            )
