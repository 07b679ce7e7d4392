"""lb-pool-unapproved-range: LB-IPAM pools drawing from ranges the posture does not approve."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, kinds
from auditor_rules.lbipam._pools import covered, merge_ranges, parse_range_text, pool_blocks


class LbPoolUnapprovedRange(Rule):
    id = "lb-pool-unapproved-range"
    severity = Severity.ERROR
    title = "LB-IPAM pool range outside the approved ranges"
    nothing_to_check = "CiliumLoadBalancerIPPool"
    rationale_fact = (
        "A CiliumLoadBalancerIPPool decides which addresses LoadBalancer Services get, and with L2 "
        "announcements a node answers ARP for them on the LAN: an address outside the range agreed with "
        "the network administrators can collide with hosts, gateways or DHCP leases on the node "
        "network. Pool ranges are spec.blocks (cidr, or start/stop; a lone start is one address, Cilium "
        "1.15+) and the pre-1.16 spec.cidrs."
    )
    rationale_decision = (
        "The platform lists the ranges pools may use in the posture (exposure.approvedLbIpamRanges; "
        "default the bench pool 192.168.67.240-192.168.67.250, ADR 0020): every block must lie entirely "
        "inside their union, or it is an error. Malformed blocks are ignored here."
    )
    remediation = (
        "Move the pool's blocks into an approved range, or, once the network team has reserved the "
        "new range, add it to exposure.approvedLbIpamRanges in the posture file."
    )
    requires = (kinds.LB_IP_POOL,)
    posture_fields = ("exposure.approvedLbIpamRanges",)
    facts = (
        Fact(
            "Pool ranges are spec.blocks items with cidr, or start and optional stop; spec.cidrs was removed",
            "blocks 1.15+, cidrs removed 1.16",
            "https://github.com/cilium/cilium/pull/33151",
            also=("https://docs.cilium.io/en/stable/network/lb-ipam/",),
        ),
    )
    references = ("https://docs.cilium.io/en/stable/network/lb-ipam/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        approved_texts = list(ctx.posture.approved_lb_ipam_ranges)
        approved = []
        for text in approved_texts:
            parsed = parse_range_text(text)
            if parsed is None:
                raise NotRun(f"the posture's approvedLbIpamRanges entry {text!r} is not a CIDR, range or address")
            approved.append(parsed)
        spans = merge_ranges(approved)
        shown = ", ".join(approved_texts) or "none"
        for pool in snapshot.of_kind(kinds.LB_IP_POOL):
            ctx.examined(pool)
            outside = [block.text for block in pool_blocks(pool) if not covered(spans, block)]
            if outside:
                yield self.finding(
                    pool,
                    f"{', '.join(outside)} {'is' if len(outside) == 1 else 'are'} outside the approved ranges "
                    f"({shown})",
                )
