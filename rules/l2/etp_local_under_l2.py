"""etp-local-under-l2: externalTrafficPolicy Local drops traffic under L2 announcements."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    AnyOf,
    Fact,
    Finding,
    NotRun,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    cilium_keys,
    exposure,
    kinds,
)

L2_KEY = cilium_keys.ENABLE_L2_ANNOUNCEMENTS
# cilium/cilium#46399, backported to 1.20.2 (#48550): nodes without a local endpoint of an ETP Local
# Service leave its L2 election (notes/facts.md X7).
LOCAL_ELECTION_SINCE = (1, 20, 2)


def _l2_policies(view: exposure.ServiceView) -> list[str]:
    return sorted({a.by.name for a in view.announcing.by if a.kind is exposure.AnnouncementKind.L2})


def _cilium_gateway(model: exposure.ExposureModel, view: exposure.ServiceView) -> bool:
    if view.gateway is None:
        return False
    found = model.gateway(view.gateway.namespace, view.gateway.name)
    return found is not None and found.controller == "cilium"


class EtpLocalUnderL2(Rule):
    id = "etp-local-under-l2"
    severity = Severity.ERROR
    title = "LoadBalancer Service with externalTrafficPolicy Local under L2 announcements"
    nothing_to_check = "LoadBalancer Service Cilium's L2 announcer may announce (no other loadBalancerClass)"
    rationale_fact = (
        "With L2 announcements one elected node (the lease holder) answers ARP for a Service IP and "
        "receives all its traffic. With externalTrafficPolicy: Local that node drops the traffic "
        "whenever it runs no endpoint of the Service, so the IP works or not depending on where the "
        "lease landed: Cilium lists eTP=Local as incompatible with L2 announcements. From 1.20.2 nodes "
        "without a local endpoint leave the election instead, and a Cilium Gateway's Service, whose only "
        "endpoint is a placeholder without a node, is then announced by no node. Only Services Cilium's "
        "L2 announcer handles count (no loadBalancerClass, or io.cilium/l2-announcer), and only those an "
        "L2 policy of the cluster selects: a Service no L2 policy selects is announced by BGP or not at all."
    )
    rationale_decision = (
        "The platform keeps externalTrafficPolicy Cluster under L2 announcements and preserves client "
        "addresses at L7 in the Gateway (X-Forwarded-For), so a Service with Local that an L2 policy "
        "selects is an error while L2 announcements are on (or when the input does not show the "
        "setting). Services declared in Helm values and the Services Gateway controllers make (Envoy "
        "Gateway defaults to Local) are judged too, before anything is applied."
    )
    remediation = (
        "Set spec.externalTrafficPolicy to Cluster (the default) on the Service (envoyService."
        "externalTrafficPolicy for Envoy Gateway, gatewayAPI.externalTrafficPolicy or the "
        "CiliumGatewayClassConfig for Cilium's Gateways), or announce it through BGP instead of L2."
    )
    requires = (AnyOf(kinds.SERVICE, kinds.HELM_RELEASE, kinds.ARGO_APPLICATION, kinds.GATEWAY,
                      name="Services, Helm values or Gateways"),)
    uses = (kinds.L2_ANNOUNCEMENT_POLICY, kinds.GATEWAY_CLASS, kinds.CILIUM_GATEWAY_CLASS_CONFIG, kinds.ENVOY_PROXY)
    cilium_settings = (L2_KEY, cilium_keys.GATEWAY_API_SERVICE_ETP, cilium_keys.GATEWAY_API_HOST_NETWORK,
                       cilium_keys.AGENT_VERSION)
    posture_fields = ("exposure.gatewayHostNetwork", "expected.ciliumVersionLine")
    references = (
        "https://docs.cilium.io/en/stable/network/l2-announcements/#limitations",
        "https://docs.cilium.io/en/stable/network/l2-announcements/#service-selector",
    )
    facts = (
        Fact(
            "L2 announcements are incompatible with externalTrafficPolicy: Local: the IP may be announced by a node "
            "without a local endpoint, and that traffic is dropped",
            "Cilium 1.14-1.20.1 (docs, Limitations; no ETP check in the announcer)",
            "https://docs.cilium.io/en/stable/network/l2-announcements/#limitations",
        ),
        Fact(
            "Nodes without a local endpoint of an ETP Local Service leave its L2 election; a Cilium Gateway Service "
            "(one placeholder endpoint 192.192.192.192:9999 without nodeName) is then announced by no node",
            "Cilium 1.20.2+ (cilium/cilium#46399, backport #48550)",
            "https://github.com/cilium/cilium/pull/46399",
            also=("https://github.com/mitchross/talos-argocd-proxmox/issues/2441",),
        ),
        Fact(
            "Only Services without loadBalancerClass, or with io.cilium/l2-announcer, are announced; a policy with "
            "no serviceSelector (or {}) selects every Service, and announces LoadBalancer IPs only with "
            "loadBalancerIPs: true",
            "Cilium 1.14+",
            exposure.L2_POLICY_SERVICES.source,
        ),
        Fact(
            "Envoy Gateway's EnvoyProxy envoyService.externalTrafficPolicy defaults to Local; Cilium's Gateway "
            "Services take gatewayAPI.externalTrafficPolicy (default Cluster) or the CiliumGatewayClassConfig's",
            "Envoy Gateway v1.x; Cilium 1.16+ (CiliumGatewayClassConfig 1.18+)",
            "https://github.com/envoyproxy/gateway/blob/8ed7f626f6535cf7c7c340f0aa01b70324080719/api/v1alpha1/"
            "shared_types.go",
            also=("https://github.com/cilium/cilium/pull/33332",),
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        model = ctx.exposures
        candidates = [v for v in model.service_views_of_type("LoadBalancer")
                      if v.load_balancer_class in (None, exposure.L2_LB_CLASS)]
        for view in candidates:
            ctx.examined(view.subject.ref)
        local = [v for v in candidates if v.external_traffic_policy == "Local"]
        if not local:
            return
        l2 = model.settings.l2
        if l2.on is False:
            return  # with L2 off the policies are inert: nothing is announced by L2
        if not ctx.known(kinds.L2_ANNOUNCEMENT_POLICY):
            if l2.on is None and ctx.setting_sources(L2_KEY):
                raise NotRun(f"{len(local)} LoadBalancer Service(s) use externalTrafficPolicy Local and the input "
                             f"holds no CiliumL2AnnouncementPolicy objects: {l2.why}")
            if l2.on is None:
                raise NotRun(f"{len(local)} LoadBalancer Service(s) use externalTrafficPolicy Local, but the input "
                             f"shows neither cilium-config ({L2_KEY}) nor CiliumL2AnnouncementPolicy objects")
            raise NotRun(f"{len(local)} LoadBalancer Service(s) use externalTrafficPolicy Local while L2 "
                         "announcements are on, but the input holds no CiliumL2AnnouncementPolicy objects: cannot "
                         "tell whether one selects them")
        for view in local:
            policies = _l2_policies(view)
            if not policies:
                continue  # no L2 policy of this cluster selects it: announced by BGP, or not at all
            yield self.finding_about(view.subject, self._message(ctx, model, view, policies),
                                     severity=self._severity(model, view))

    @staticmethod
    def _severity(model: exposure.ExposureModel, view: exposure.ServiceView) -> Severity | None:
        if model.settings.version >= LOCAL_ELECTION_SINCE and not _cilium_gateway(model, view):
            return Severity.WARNING  # no drops any more: announced only from nodes with a local endpoint
        return None

    @staticmethod
    def _message(ctx: RuleContext, model: exposure.ExposureModel, view: exposure.ServiceView,
                 policies: list[str]) -> str:
        setting = ctx.concrete_setting(L2_KEY)
        selected = f"selected by CiliumL2AnnouncementPolicy {', '.join(policies)}"
        if model.settings.l2.on:
            why = f"{L2_KEY}=true from {setting.origin}; {selected}" if setting else f"{L2_KEY}=true; {selected}"
        else:
            why = selected
        if view.declared is exposure.Declared.HELM_VALUES:
            why += f"; {view.evidence.field}: declared in values; the rendered Service is what a live audit sees"
        elif view.declared is exposure.Declared.CONTROLLER:
            why += f"; the Service the controller of {view.gateway.display if view.gateway else 'a Gateway'} will " \
                   f"create ({view.notes[0] if view.notes else ''})"
        version = model.settings.version
        if version >= LOCAL_ELECTION_SINCE:
            effect = ("no node announces it: its only endpoint is Cilium's placeholder without a node "
                      f"({model.settings.version_why}, cilium/cilium#46399)" if _cilium_gateway(model, view)
                      else f"only nodes with a local endpoint announce it ({model.settings.version_why})")
        else:
            effect = "the elected node drops traffic when it has no local endpoint"
        return f"externalTrafficPolicy Local under L2 announcements ({why}): {effect}"
