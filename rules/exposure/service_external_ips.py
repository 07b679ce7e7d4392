"""service-external-ips: a Service claiming spec.externalIPs."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, exposure, kinds
from auditor_rules.exposure._channels import judge, mode_note
from auditor_rules.exposure.lb_service_not_excepted import service_ports_text


def describe(ctx: RuleContext, subject: exposure.Subject, found: list[exposure.Entrance]) -> str:
    view = ctx.exposures.view_of(subject)
    addresses = ", ".join(dict.fromkeys(e.address.display for e in found))
    ports = service_ports_text(view) if view is not None else ", ".join(dict.fromkeys(e.port_display for e in found))
    by = found[0].announcing.by
    l2 = sorted({a.by.name for a in by if a.kind is exposure.AnnouncementKind.L2})
    bgp = sorted({a.by.name for a in by if a.kind is exposure.AnnouncementKind.BGP})
    announced = ""
    if l2:
        announced += f"; announced on the LAN by CiliumL2AnnouncementPolicy {', '.join(l2)}"
    if bgp:
        announced += f"; advertised by CiliumBGPAdvertisement {', '.join(bgp)}"
    return f"externalIPs {addresses} expose {ports} outside the Gateway{announced}{mode_note(ctx)}"


class ServiceExternalIps(Rule):
    id = "service-external-ips"
    severity = Severity.ERROR
    title = "Service with spec.externalIPs"
    nothing_to_check = "Service"
    rationale_fact = (
        "With kube-proxy replacement, Cilium's eBPF load balancer serves a Service's spec.externalIPs "
        "on the nodes (since 1.18 the external-IPs feature is always on under "
        "kubeProxyReplacement=true), and a CiliumL2AnnouncementPolicy with externalIPs: true (or a "
        "CiliumBGPAdvertisement with ExternalIP) announces them on the LAN. Whoever can create a Service "
        "can claim any address this way and intercept traffic meant for it, a design flaw Kubernetes "
        "tracks as CVE-2020-8554, with no fix in the API itself."
    )
    rationale_decision = (
        "No exposure mode of the platform uses externalIPs (gateway: the edge Gateway, ADR 0020; l4: "
        "NodePort and hostPort, ADR 0092; none): every Service that sets them is an error."
    )
    remediation = (
        "Remove spec.externalIPs and publish the Service through an HTTPRoute on the edge "
        "Gateway (or a named, excepted LoadBalancer Service); block the field cluster-wide with "
        "the DenyServiceExternalIPs admission plugin."
    )
    requires = (kinds.SERVICE,)
    uses = (kinds.L2_ANNOUNCEMENT_POLICY, kinds.BGP_ADVERTISEMENT)
    posture_fields = ("exposure.mode",)
    facts = (
        Fact(
            "A user who can create a Service with spec.externalIPs can intercept traffic to those IPs "
            "(CVE-2020-8554, unfixable in the API).",
            "Kubernetes, all versions",
            "https://github.com/kubernetes/kubernetes/issues/97076",
        ),
        Fact(
            "enable-external-ips (with enable-node-port, enable-host-port) is deprecated and always on "
            "when kube-proxy replacement is on; the flags are removed in 1.19.",
            "Cilium 1.18 (deprecated), 1.19 (removed)",
            "https://github.com/cilium/cilium/pull/39581",
            also=("https://github.com/cilium/cilium/pull/41277",),
        ),
        Fact(
            "A CiliumL2AnnouncementPolicy with externalIPs: true announces the selected Services' spec.externalIPs "
            "(serviceSelector absent or {} = every Service).",
            "Cilium 1.14+",
            "https://docs.cilium.io/en/stable/network/l2-announcements/",
            also=(exposure.L2_POLICY_SERVICES.source,),
        ),
    )
    references = (
        "https://github.com/kubernetes/kubernetes/issues/97076",
        "https://kubernetes.io/docs/concepts/services-networking/service/#external-ips",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        ctx.examined_all(snapshot.of_kind(kinds.SERVICE))
        yield from judge(self, ctx, lambda subject, found: describe(ctx, subject, found))
