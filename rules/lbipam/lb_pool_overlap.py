"""lb-pool-overlap: LB-IPAM pools overlapping each other, the pod CIDR or the Service CIDR."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, K8sObject, Rule, RuleContext, Severity, Snapshot, cilium_keys, kinds
from auditor_rules.lbipam._pools import (
    Range,
    node_pod_cidrs,
    overlapping_pairs,
    parse_cidr,
    pool_blocks,
    service_cidrs,
)

CLUSTER_POOL_KEY = cilium_keys.CLUSTER_POOL_IPV4_CIDR
CLUSTER_POOL_V6_KEY = cilium_keys.CLUSTER_POOL_IPV6_CIDR
IPAM_KEY = cilium_keys.IPAM


def _pod_ranges(snapshot: Snapshot, ctx: RuleContext) -> list[tuple[Range, str]]:
    ranges: list[tuple[Range, str]] = []
    ipam = ctx.concrete_setting(IPAM_KEY)
    if ipam is None or ipam.value == "cluster-pool":
        for key in (CLUSTER_POOL_KEY, CLUSTER_POOL_V6_KEY):
            setting = ctx.concrete_setting(key)
            if setting is None:
                continue
            for part in setting.value.replace(",", " ").split():
                parsed = parse_cidr(part)
                if parsed is not None:
                    ranges.append((parsed, f"the pod CIDR {parsed.text} ({key} from {setting.origin})"))
    for parsed in node_pod_cidrs(snapshot):
        ranges.append((parsed, f"the pod CIDR {parsed.text} (Node spec.podCIDRs)"))
    return ranges


class LbPoolOverlap(Rule):
    id = "lb-pool-overlap"
    severity = Severity.ERROR
    title = "LB-IPAM pool overlapping another pool, the pod CIDR or the Service CIDR"
    nothing_to_check = "CiliumLoadBalancerIPPool"
    rationale_fact = (
        "LB-IPAM treats overlapping CiliumLoadBalancerIPPools as a soft error: the pool added last is "
        "marked cilium.io/PoolConflict and stops allocating (Cilium 1.13+), so which pool works depends "
        "on creation order. A pool overlapping the pod CIDR or the Service CIDR hands out LoadBalancer "
        "IPs the cluster already routes to pods or Services."
    )
    rationale_decision = (
        "The platform keeps its pools in a range reserved on the node network (ADR 0020), so any "
        "overlap is an error, and two blocks of one pool overlapping each other a warning. Ranges are "
        "compared as integers in one sorted sweep. The pod CIDR is cilium-config cluster-pool-ipv4-cidr "
        "/ cluster-pool-ipv6-cidr (cluster-pool IPAM, from the ConfigMap or the Helm values) and the "
        "Nodes' spec.podCIDRs; the Service CIDR is the kube-apiserver static Pod's "
        "--service-cluster-ip-range, else kubeadm's ClusterConfiguration serviceSubnet. Checks whose "
        "range the input does not show are skipped."
    )
    remediation = (
        "Give each pool a range of its own, outside the pod and Service CIDRs (shrink or move the "
        "blocks), then check that no pool reports cilium.io/PoolConflict."
    )
    requires = (kinds.LB_IP_POOL,)
    uses = (kinds.NODE, kinds.POD)
    cilium_settings = (IPAM_KEY, CLUSTER_POOL_KEY, CLUSTER_POOL_V6_KEY)
    facts = (
        Fact(
            "Overlapping pools: the last added is marked cilium.io/PoolConflict and stops allocating",
            "Cilium 1.13+",
            "https://docs.cilium.io/en/stable/network/lb-ipam/",
        ),
        Fact(
            "Pool ranges: spec.blocks with cidr or start/stop (a lone start is one IP); spec.cidrs removed",
            "blocks 1.15+, cidrs removed 1.16",
            "https://github.com/cilium/cilium/pull/33151",
            also=("https://github.com/cilium/cilium/blob/main/pkg/k8s/apis/cilium.io/client/crds/v2/ciliumloadbalancerippools.yaml",),
        ),
        Fact(
            "Helm ipam.operator.clusterPoolIPv4PodCIDRList renders cluster-pool-ipv4-cidr (space-joined) in "
            "cluster-pool IPAM",
            "Cilium chart",
            "https://github.com/cilium/cilium/blob/002c6fff44159c64bdb86ebfb145157b33eb997f/install/kubernetes/cilium/templates/cilium-configmap.yaml",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/network/lb-ipam/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        pools = snapshot.of_kind(kinds.LB_IP_POOL)
        entries: list[tuple[Range, tuple[str, K8sObject | None, str]]] = []
        for pool in pools:
            ctx.examined(pool)
            for block in pool_blocks(pool):
                entries.append((block, ("pool", pool, f"block {block.text}")))
        if not entries:
            return
        for rng, label in _pod_ranges(snapshot, ctx):
            entries.append((rng, ("cluster", None, label)))
        found = service_cidrs(snapshot)
        if found is not None:
            ranges, where = found
            for rng in ranges:
                entries.append((rng, ("cluster", None, f"the Service CIDR {rng.text} ({where})")))
        problems: dict[int, tuple[K8sObject, list[str], Severity]] = {}

        def add(pool: K8sObject, text: str, severity: Severity) -> None:
            _, texts, worst = problems.setdefault(id(pool), (pool, [], severity))
            texts.append(text)
            if severity.rank > worst.rank:
                problems[id(pool)] = (pool, texts, severity)

        for (_, (a_kind, a_pool, a_text)), (_, (b_kind, b_pool, b_text)) in overlapping_pairs(entries):
            if a_kind == "cluster" and b_kind == "cluster":
                continue
            if a_pool is not None and b_pool is not None:
                if a_pool is b_pool:
                    add(a_pool, f"{a_text} overlaps its own {b_text}", Severity.WARNING)
                    continue
                add(a_pool, f"{a_text} overlaps {b_text} of pool {b_pool.name}", Severity.ERROR)
                add(b_pool, f"{b_text} overlaps {a_text} of pool {a_pool.name}", Severity.ERROR)
            elif a_pool is not None:
                add(a_pool, f"{a_text} overlaps {b_text}", Severity.ERROR)
            elif b_pool is not None:
                add(b_pool, f"{b_text} overlaps {a_text}", Severity.ERROR)
        for pool, texts, severity in problems.values():
            yield self.finding(pool, "; ".join(texts), severity)
