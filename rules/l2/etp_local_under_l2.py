"""etp-local-under-l2: externalTrafficPolicy Local drops traffic under L2 announcements."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, cilium_keys, kinds
from auditor_rules.exposure._services import handled_by_cilium_l2, l2_policy_selects, service_type

L2_KEY = cilium_keys.ENABLE_L2_ANNOUNCEMENTS


class EtpLocalUnderL2(Rule):
    id = "etp-local-under-l2"
    severity = Severity.ERROR
    title = "LoadBalancer Service with externalTrafficPolicy Local under L2 announcements"
    rationale_fact = (
        "With L2 announcements one elected node (the lease holder) answers ARP for a Service IP and "
        "receives all its traffic. With externalTrafficPolicy: Local that node drops the traffic "
        "whenever it runs no endpoint of the Service, so the IP works or not depending on where the "
        "lease landed: Cilium lists eTP=Local as incompatible with L2 announcements. Only Services "
        "Cilium's L2 announcer handles count: no loadBalancerClass, or io.cilium/l2-announcer."
    )
    rationale_decision = (
        "The platform keeps externalTrafficPolicy Cluster under L2 announcements and preserves client "
        "addresses at L7 in the Gateway (X-Forwarded-For), so any such Service is an error while L2 "
        "announcements are on, or while an L2 policy selects it when the input does not show the "
        "setting (ADR 0020)."
    )
    remediation = (
        "Set spec.externalTrafficPolicy to Cluster (the default) on the Service, or announce it "
        "through BGP instead of L2."
    )
    requires = (kinds.SERVICE,)
    uses = (kinds.L2_ANNOUNCEMENT_POLICY,)
    cilium_settings = (L2_KEY,)
    references = (
        "https://docs.cilium.io/en/stable/network/l2-announcements/#limitations",
        "https://docs.cilium.io/en/stable/network/l2-announcements/#service-selector",
    )
    facts = (
        Fact(
            "L2 announcements are incompatible with externalTrafficPolicy: Local: the IP may be announced by a node "
            "without a local endpoint, and that traffic is dropped",
            "Cilium 1.14-1.16 docs (Limitations); not re-read on the 1.19 page",
            "https://docs.cilium.io/en/stable/network/l2-announcements/#limitations",
        ),
        Fact(
            "Only Services without loadBalancerClass, or with io.cilium/l2-announcer, are announced; a policy with no "
            "serviceSelector selects every Service, and announces LoadBalancer IPs only with loadBalancerIPs: true",
            "Cilium 1.14+",
            "https://docs.cilium.io/en/stable/network/l2-announcements/#limitations",
        ),
        Fact(
            "enable-l2-announcements (Helm l2announcements.enabled) defaults to off",
            "Cilium 1.14+",
            "https://docs.cilium.io/en/stable/network/l2-announcements/#limitations",
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        candidates = [
            service
            for service in snapshot.of_kind(kinds.SERVICE)
            if service_type(service) == "LoadBalancer" and handled_by_cilium_l2(service)
        ]
        for service in candidates:
            ctx.examined(service)
        local = [s for s in candidates if s.spec.get("externalTrafficPolicy") == "Local"]
        if not local:
            return
        setting = ctx.concrete_setting(L2_KEY)
        if ctx.settings_known:
            # cilium-config decides: absent, the key defaults to off, and with
            # L2 off the policies are inert (nothing is announced).
            l2_enabled = ctx.setting_enabled(
                L2_KEY, unknown_because=f"{len(local)} LoadBalancer Service(s) use externalTrafficPolicy Local"
            )
            if not l2_enabled:
                return
        else:
            l2_enabled = False
            if not ctx.known(kinds.L2_ANNOUNCEMENT_POLICY):
                raise NotRun(
                    f"{len(local)} LoadBalancer Service(s) use externalTrafficPolicy Local, but the input "
                    f"shows neither cilium-config ({L2_KEY}) nor CiliumL2AnnouncementPolicy objects"
                )
        policies = snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY)
        for service in local:
            selecting = sorted(p.name for p in policies if l2_policy_selects(p, service))
            if l2_enabled:
                why = f"{L2_KEY}=true from {setting.origin}" if setting else f"{L2_KEY}=true"
                if selecting:
                    why += f"; selected by CiliumL2AnnouncementPolicy {', '.join(selecting)}"
            elif selecting:
                why = f"selected by CiliumL2AnnouncementPolicy {', '.join(selecting)}"
            else:
                continue
            yield self.finding(
                service,
                f"externalTrafficPolicy Local under L2 announcements ({why}): the elected node drops "
                "traffic when it has no local endpoint",
            )
