"""lb-pool-not-armed: an LB-IPAM pool exists while the posture says LB-IPAM + L2 is not armed."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, cilium_keys, kinds
from auditor_rules.lbipam._pools import pool_blocks, pool_disabled

L2_KEY = cilium_keys.ENABLE_L2_ANNOUNCEMENTS
BGP_KEY = cilium_keys.ENABLE_BGP_CONTROL_PLANE


def _announcing(snapshot: Snapshot, ctx: RuleContext) -> str | None:
    """What would announce LoadBalancer IPs, when the input shows something that does."""
    reasons = []
    for key in (L2_KEY, BGP_KEY):
        setting = ctx.concrete_setting(key)
        if setting is not None and setting.as_bool():
            reasons.append(f"{key}=true from {setting.origin}")
    policies = [p.name for p in snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY) if p.spec.get("loadBalancerIPs") is True]
    if policies:
        reasons.append(f"CiliumL2AnnouncementPolicy {', '.join(sorted(policies))} announce LoadBalancer IPs")
    return "; ".join(reasons) or None


class LbPoolNotArmed(Rule):
    id = "lb-pool-not-armed"
    severity = Severity.ERROR
    title = "LB-IPAM pool present while the posture keeps LB-IPAM + L2 unarmed"
    nothing_to_check = "CiliumLoadBalancerIPPool"
    rationale_fact = (
        "LB-IPAM is always enabled but dormant until the first CiliumLoadBalancerIPPool exists (Cilium "
        "1.13+): creating a pool wakes it, and every LoadBalancer Service its selector matches gets an "
        "address, reachable from the LAN as soon as an L2 announcement policy or a BGP advertisement "
        "covers it. A pool with spec.disabled: true makes no new allocations."
    )
    rationale_decision = (
        "In the platform's design the edge Gateway runs in hostNetwork and LB-IPAM with L2 "
        "announcements is an optional production path, armed only on purpose (posture "
        "exposure.lbIpamL2, default false; ADR 0020). A pool while the posture says unarmed is an "
        "exposure path opened outside the design: an error when L2 announcements or the BGP control "
        "plane are on or an L2 policy announces LoadBalancer IPs, a warning when nothing announcing is "
        "shown. A disabled (staged) pool passes."
    )
    remediation = (
        "Delete the pool (or set spec.disabled: true) while the path is not armed, or arm it on "
        "purpose: set exposure.lbIpamL2: true in the posture file and review the pool's range."
    )
    requires = (kinds.LB_IP_POOL,)
    uses = (kinds.L2_ANNOUNCEMENT_POLICY,)
    cilium_settings = (L2_KEY, BGP_KEY)
    posture_fields = ("exposure.lbIpamL2",)
    facts = (
        Fact("LB-IPAM is always enabled but dormant until the first pool is created", "Cilium 1.13+", "https://docs.cilium.io/en/stable/network/lb-ipam/"),
        Fact("spec.disabled: true stops new allocations, existing ones are kept", "Cilium 1.13+", "https://github.com/cilium/cilium/blob/main/pkg/k8s/apis/cilium.io/client/crds/v2/ciliumloadbalancerippools.yaml"),
    )
    references = ("https://docs.cilium.io/en/stable/network/lb-ipam/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        pools = snapshot.of_kind(kinds.LB_IP_POOL)
        for pool in pools:
            ctx.examined(pool)
        if ctx.posture.lb_ipam_l2_armed or not pools:
            return
        announcing = _announcing(snapshot, ctx)
        for pool in pools:
            ranges = ", ".join(block.text for block in pool_blocks(pool)) or "no readable blocks"
            if pool_disabled(pool):
                continue  # staged: it makes no new allocations
            if announcing:
                yield self.finding(
                    pool,
                    f"pool ({ranges}) wakes LB-IPAM while the posture keeps LB-IPAM + L2 unarmed, and its "
                    f"addresses are announced ({announcing})",
                )
            else:
                yield self.finding(
                    pool,
                    f"pool ({ranges}) wakes LB-IPAM while the posture keeps LB-IPAM + L2 unarmed (the input "
                    "shows nothing announcing its addresses yet)",
                    Severity.WARNING,
                )
