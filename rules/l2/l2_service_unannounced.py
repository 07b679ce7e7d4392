"""l2-service-unannounced: a Cilium LoadBalancer Service whose IP nothing announces."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, cilium_keys, exposure, kinds

L2_KEY = cilium_keys.ENABLE_L2_ANNOUNCEMENTS
BGP_KEY = cilium_keys.ENABLE_BGP_CONTROL_PLANE
BGP_ADVERTISEMENT = kinds.BGP_ADVERTISEMENT
WHAT = "cannot tell how LoadBalancer IPs are announced"


def _mechanisms(settings: exposure.ExposureSettings) -> str:
    on = [name for name, state in (("L2 announcements", settings.l2), ("BGP control plane", settings.bgp)) if state.on]
    return " and ".join(on)


class L2ServiceUnannounced(Rule):
    id = "l2-service-unannounced"
    severity = Severity.ERROR
    title = "LoadBalancer Service that no L2 policy or BGP advertisement announces"
    nothing_to_check = "LoadBalancer Service LB-IPAM gives an address to"
    rationale_fact = (
        "LB-IPAM hands a LoadBalancer Service an address, but nothing outside the cluster reaches it "
        "until something announces it: a CiliumL2AnnouncementPolicy with loadBalancerIPs: true whose "
        "serviceSelector matches the Service (absent or {}: every Service; L2, Cilium 1.14+), or, with "
        "the BGP control plane, a cilium.io/v2 CiliumBGPAdvertisement entry with advertisementType "
        "Service, LoadBalancerIP among its addresses and a selector matching the Service: an absent "
        "selector selects nothing, {} every Service, and so does the `NotIn [never-used-value]` idiom "
        "(NotIn matches a Service without the key). CiliumBGPPeeringPolicy was removed in 1.19. A "
        "Service of class io.cilium/l2-announcer is eligible only for L2, one of "
        "io.cilium/bgp-control-plane only for BGP; other classes are not Cilium's."
    )
    rationale_decision = (
        "When the platform's LB-IPAM + L2 path is used, an unannounced Service is an exposure that "
        "silently does not work (error). One announcing path that selects the Service is enough: a "
        "Service BGP advertises is announced even when the input holds no L2 policy. The rule reads the "
        "Services of the input and those Gateway controllers make, runs only when L2 announcements or the "
        "BGP control plane are on (cilium-config, else Helm values), and reads the selecting objects, not "
        "the peering."
    )
    remediation = (
        "Label the Service so an L2 announcement policy (loadBalancerIPs: true) or a BGP "
        "advertisement selects it, widen a policy's serviceSelector, or change the Service to "
        "ClusterIP if it should not be reachable."
    )
    requires = (kinds.SERVICE,)
    uses = (kinds.L2_ANNOUNCEMENT_POLICY, BGP_ADVERTISEMENT, kinds.GATEWAY, kinds.GATEWAY_CLASS,
            kinds.CILIUM_GATEWAY_CLASS_CONFIG, kinds.ENVOY_PROXY)
    cilium_settings = (L2_KEY, BGP_KEY, cilium_keys.DEFAULT_LB_SERVICE_IPAM, cilium_keys.GATEWAY_API_HOST_NETWORK)
    posture_fields = ("exposure.gatewayHostNetwork",)
    facts = (
        Fact(
            "An L2 policy announces a Service's LoadBalancer IP only with loadBalancerIPs: true and a matching "
            "serviceSelector (absent or {} = every Service); the Service must have no loadBalancerClass or "
            "io.cilium/l2-announcer",
            "Cilium 1.14+",
            exposure.L2_POLICY_SERVICES.source,
            also=("https://docs.cilium.io/en/stable/network/l2-announcements/#service-selector",),
        ),
        Fact(
            "BGP advertises a Service through CiliumBGPAdvertisement advertisementType Service with LoadBalancerIP; "
            "an absent selector selects nothing, {} (no requirements) every eligible Service",
            "cilium.io/v2 BGP CRDs, 1.18+ (only option in 1.19)",
            exposure.BGP_ADVERTISEMENT_SERVICES.source,
            also=("https://github.com/cilium/cilium/blob/058641d7da6d8f562a64d3d80e50ab2d7930e114/pkg/bgp/manager/"
                  "reconciler/service.go",
                  "https://github.com/cilium/cilium/blob/7aeb8b9cd1007887dee42b305189df9b20481c27/pkg/k8s/slim/k8s/"
                  "apis/meta/v1/helpers.go"),
        ),
        Fact(
            "A NotIn requirement matches an object without the key (apimachinery Requirement.Matches), so "
            "`matchExpressions: [{key: somekey, operator: NotIn, values: [never-used-value]}]` selects every Service",
            "Kubernetes apimachinery and Cilium's slim copy, all versions",
            "https://github.com/kubernetes/apimachinery/blob/master/pkg/labels/selector.go",
        ),
    )
    references = (
        "https://docs.cilium.io/en/stable/network/l2-announcements/",
        "https://docs.cilium.io/en/stable/network/bgp-control-plane/",
        "https://github.com/cilium/cilium/pull/42278",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        model = ctx.exposures
        settings = model.settings
        if not (settings.l2.on or settings.bgp.on):
            if settings.l2.on is None or settings.bgp.on is None:
                raise NotRun(f"{WHAT}: {settings.l2.why if settings.l2.on is None else settings.bgp.why}")
            ctx.examined_configuration()  # judged: neither L2 nor BGP
            return  # neither L2 nor BGP: no announcement mechanism to judge
        views = [v for v in model.service_views_of_type("LoadBalancer")
                 if v.declared is not exposure.Declared.HELM_VALUES and v.lb_ipam]  # the input's and the implied
        findings, unknown = [], []
        for view in views:
            state = view.announcing.state
            if state is exposure.AnnouncementState.UNKNOWN:
                unknown.append(view)
                continue
            ctx.examined(view.ref)
            if state is exposure.AnnouncementState.NOT_ANNOUNCED:
                findings.append(self.finding_about(view.subject, self._message(view, settings)))
        if unknown and len(unknown) == len(views):
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise NotRun(f"{WHAT}: {unknown[0].ref.display}: {unknown[0].announcing.why}{more}")
        for view in unknown:  # the verdict is on the others
            ctx.did_not_see(f"whether {view.ref.display} is announced", view.announcing.why)
        yield from findings

    @staticmethod
    def _message(view: exposure.ServiceView, settings: exposure.ExposureSettings) -> str:
        mechanisms = _mechanisms(settings)
        lb_class = view.load_balancer_class
        l2_eligible = bool(settings.l2.on) and lb_class in (None, exposure.L2_LB_CLASS)
        bgp_eligible = bool(settings.bgp.on) and lb_class in (None, exposure.BGP_LB_CLASS)
        made = (f" (the Service the controller of {view.gateway.display} will create)"
                if view.declared is exposure.Declared.CONTROLLER and view.gateway else "")
        if not (l2_eligible or bgp_eligible):
            return (f"loadBalancerClass {lb_class} needs a mechanism that is off (on: {mechanisms}): "
                    f"its LoadBalancer IP is not announced{made}")
        return f"{view.announcing.why}: its LoadBalancer IP is not announced (on: {mechanisms}){made}"
