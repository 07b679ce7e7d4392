"""lb-pool-conflict: a pool LB-IPAM reports as conflicting (it allocates nothing)."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, as_str, conditions, kinds
from auditor_rules.lbipam._pools import POOL_CONFLICT


class LbPoolConflict(Rule):
    id = "lb-pool-conflict"
    severity = Severity.ERROR
    title = "LB-IPAM pool reported as conflicting (cilium.io/PoolConflict)"
    nothing_to_check = "CiliumLoadBalancerIPPool"
    rationale_fact = (
        "When CiliumLoadBalancerIPPools overlap, LB-IPAM marks the last-added one with the status "
        "condition cilium.io/PoolConflict=True (reason e.g. cidr_overlap; the Conflicting column of "
        "kubectl get ippools) and that pool stops allocating (Cilium 1.13+). Services only it could "
        "serve stay without an address. It is the operator's own verdict, so it covers conflicts a "
        "reading of manifests cannot see."
    )
    rationale_decision = (
        "A pool that allocates nothing breaks the platform's LB-IPAM path: a conflicting pool is an "
        "error. Only objects read from a cluster carry a status: pools of a live read, a snapshot or a "
        "kubectl dump are judged, manifests without status give not-run instead of passing."
    )
    remediation = (
        "Remove the overlap (see lb-pool-overlap and the condition's message), then check that "
        "kubectl get ippools shows Conflicting false for every pool."
    )
    requires = (kinds.LB_IP_POOL,)
    facts = (
        Fact(
            "Status condition type cilium.io/PoolConflict (printer column Conflicting); a conflicting pool stops "
            "allocating",
            "Cilium 1.13+",
            "https://github.com/cilium/cilium/blob/main/pkg/k8s/apis/cilium.io/client/crds/v2/ciliumloadbalancerippools.yaml",
            also=("https://docs.cilium.io/en/stable/network/lb-ipam/",),
        ),
    )
    references = ("https://docs.cilium.io/en/stable/network/lb-ipam/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        pools = snapshot.of_kind(kinds.LB_IP_POOL)
        judged = [p for p in pools if snapshot.read_from_cluster(p)]
        if pools and not judged:
            raise NotRun(
                f"{len(pools)} pool(s) in offline manifests, none with status.conditions: the conflict verdict "
                "is only in the status of pools read from a cluster (audit live, a snapshot or a kubectl dump)"
            )
        for pool in judged:
            ctx.examined(pool)
            condition = conditions(pool).get(POOL_CONFLICT)
            if condition is None or as_str(condition.get("status")) != "True":
                continue
            reason = as_str(condition.get("reason"))
            message = as_str(condition.get("message"))
            detail = ": ".join(part for part in (reason, message) if part)
            yield self.finding(
                pool,
                f"{POOL_CONFLICT}=True{f' ({detail})' if detail else ''}: this pool allocates no addresses",
            )
