"""l2-service-unannounced: a Cilium LoadBalancer Service whose IP nothing announces."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, cilium_keys, kinds
from auditor_rules.exposure._services import (
    bgp_lb_selectors,
    handled_by_cilium_bgp,
    handled_by_cilium_l2,
    l2_lb_selectors,
    load_balancer_class,
    selector_labels,
)
from auditor_rules.lbipam._pools import DEFAULT_LB_IPAM_KEY, lb_ipam_handles

L2_KEY = cilium_keys.ENABLE_L2_ANNOUNCEMENTS
BGP_KEY = cilium_keys.ENABLE_BGP_CONTROL_PLANE
BGP_ADVERTISEMENT = kinds.BGP_ADVERTISEMENT


class L2ServiceUnannounced(Rule):
    id = "l2-service-unannounced"
    severity = Severity.ERROR
    title = "LoadBalancer Service that no L2 policy or BGP advertisement announces"
    rationale_fact = (
        "LB-IPAM hands a LoadBalancer Service an address, but nothing outside the cluster reaches it "
        "until something announces it: a CiliumL2AnnouncementPolicy with loadBalancerIPs: true whose "
        "serviceSelector matches the Service (L2, Cilium 1.14+), or, with the BGP control plane, a "
        "cilium.io/v2 CiliumBGPAdvertisement entry with advertisementType Service, LoadBalancerIP among "
        "its addresses and a selector matching the Service (an empty selector selects nothing); "
        "CiliumBGPPeeringPolicy was removed in 1.19. A Service of class io.cilium/l2-announcer is "
        "eligible only for L2, one of io.cilium/bgp-control-plane only for BGP; other classes are not "
        "Cilium's."
    )
    rationale_decision = (
        "The platform exposes through the edge Gateway; when its LB-IPAM + L2 path is used, an "
        "unannounced Service is an exposure that silently does not work (error). The rule runs only "
        "when L2 announcements or the BGP control plane are on (cilium-config, else Helm values) and "
        "reads the selecting objects, not the peering."
    )
    remediation = (
        "Label the Service so an L2 announcement policy (loadBalancerIPs: true) or a BGP "
        "advertisement selects it, widen a policy's serviceSelector, or change the Service to "
        "ClusterIP if it should not be reachable."
    )
    requires = (kinds.SERVICE,)
    uses = (kinds.L2_ANNOUNCEMENT_POLICY, BGP_ADVERTISEMENT)
    cilium_settings = (L2_KEY, BGP_KEY, DEFAULT_LB_IPAM_KEY)
    facts = (
        Fact(
            "An L2 policy announces a Service's LoadBalancer IP only with loadBalancerIPs: true and a matching "
            "serviceSelector "
            "(absent selector = all); the Service must have no loadBalancerClass or io.cilium/l2-announcer",
            "Cilium 1.14+",
            "https://docs.cilium.io/en/stable/network/l2-announcements/#service-selector",
        ),
        Fact(
            "BGP advertises a Service through CiliumBGPAdvertisement advertisementType Service with LoadBalancerIP; "
            "an empty selector selects nothing",
            "cilium.io/v2 BGP CRDs, 1.18+ (only option in 1.19)",
            "https://github.com/cilium/cilium/blob/main/pkg/k8s/apis/cilium.io/client/crds/v2/ciliumbgpadvertisements.yaml",
            also=("https://github.com/cilium/cilium/pull/42278",),
        ),
    )
    references = (
        "https://docs.cilium.io/en/stable/network/l2-announcements/",
        "https://docs.cilium.io/en/stable/network/bgp-control-plane/",
        "https://github.com/cilium/cilium/pull/42278",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        what = "cannot tell how LoadBalancer IPs are announced"
        l2_on = ctx.setting_enabled(L2_KEY, unknown_because=what)
        bgp_on = ctx.setting_enabled(BGP_KEY, unknown_because=what)
        if not (l2_on or bgp_on):
            return  # neither L2 nor BGP: no announcement mechanism to judge
        default_ipam = ctx.setting(DEFAULT_LB_IPAM_KEY, unknown_because=what)
        services = [
            s for s in snapshot.of_kind(kinds.SERVICE)
            if lb_ipam_handles(s, default_ipam.value if default_ipam else None)
        ]
        if not services:
            return
        if l2_on and not ctx.known(kinds.L2_ANNOUNCEMENT_POLICY):
            raise NotRun(f"L2 announcements are on but the input holds no CiliumL2AnnouncementPolicy objects: {what}")
        if bgp_on and not ctx.known(BGP_ADVERTISEMENT):
            raise NotRun(f"the BGP control plane is on but the input holds no CiliumBGPAdvertisement objects: {what}")
        # Compiled once, memoised on the label keys they read (100,000 Services stay fast).
        l2_selects = l2_lb_selectors(snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY) if l2_on else [])
        bgp_selects = bgp_lb_selectors(snapshot.of_kind(BGP_ADVERTISEMENT) if bgp_on else [])
        mechanisms = " and ".join(m for m, on in (("L2 announcements", l2_on), ("BGP control plane", bgp_on)) if on)
        for service in services:
            ctx.examined(service)
            l2_eligible = l2_on and handled_by_cilium_l2(service)
            bgp_eligible = bgp_on and handled_by_cilium_bgp(service)
            labels = selector_labels(service)
            if l2_eligible and l2_selects.matches(labels):
                continue
            if bgp_eligible and bgp_selects.matches(labels):
                continue
            lb_class = load_balancer_class(service)
            if not (l2_eligible or bgp_eligible):
                message = (
                    f"loadBalancerClass {lb_class} needs a mechanism that is off (on: {mechanisms}): "
                    "its LoadBalancer IP is not announced"
                )
            else:
                missing = []
                if l2_eligible:
                    missing.append("no CiliumL2AnnouncementPolicy with loadBalancerIPs: true selects it")
                if bgp_eligible:
                    missing.append("no CiliumBGPAdvertisement (Service, LoadBalancerIP) selects it")
                message = f"{' and '.join(missing)}: its LoadBalancer IP is not announced (on: {mechanisms})"
            yield self.finding(service, message)
