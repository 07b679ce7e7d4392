"""l2-policy-while-disabled: L2 announcement policies that nothing acts on."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, cilium_keys, kinds

L2_KEY = cilium_keys.ENABLE_L2_ANNOUNCEMENTS


class L2PolicyWhileDisabled(Rule):
    id = "l2-policy-while-disabled"
    severity = Severity.WARNING
    title = "CiliumL2AnnouncementPolicy present while L2 announcements are off"
    nothing_to_check = "CiliumL2AnnouncementPolicy"
    rationale_fact = (
        "A CiliumL2AnnouncementPolicy takes effect only when the agent runs with "
        "enable-l2-announcements=true (Helm l2announcements.enabled, default false; Cilium 1.14+). With "
        "the feature off the policy is inert: no node answers ARP for the LoadBalancer IPs it selects, "
        "so what it was written to expose is unreachable from the LAN while its manifest says "
        "otherwise."
    )
    rationale_decision = (
        "In the platform, L2 announcements belong to the optional LB-IPAM + L2 production path (posture "
        "lbIpamL2): a policy without the feature is drift one way or the other (warning). The effective "
        "setting comes from cilium-config, else the Helm values; absent means off."
    )
    remediation = (
        "Either enable L2 announcements (Helm l2announcements.enabled=true, with kube-proxy "
        "replacement on) or delete the unused CiliumL2AnnouncementPolicy."
    )
    requires = (kinds.L2_ANNOUNCEMENT_POLICY,)
    cilium_settings = (L2_KEY,)
    facts = (
        Fact(
            "L2 announcements need cilium-config enable-l2-announcements=true (Helm l2announcements.enabled, default "
            "false)",
            "Cilium 1.14+",
            "https://docs.cilium.io/en/stable/network/l2-announcements/",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/network/l2-announcements/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        policies = snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY)
        if not policies:
            return
        what = (f"{len(policies)} CiliumL2AnnouncementPolicy object(s) present, but cannot tell whether L2 "
                "announcements are on")
        setting = ctx.setting(L2_KEY, unknown_because=what)
        enabled = setting is not None and setting.as_bool()
        for policy in policies:
            ctx.examined(policy)
        if enabled:
            return
        why = (
            f"{L2_KEY}={setting.value} (from {setting.origin})" if setting is not None
            else f"{L2_KEY} is not set in {ctx.describe_configuration()} (default off)"
        )
        for policy in policies:
            yield self.finding(policy, f"L2 announcements are off ({why}): this policy announces nothing")
