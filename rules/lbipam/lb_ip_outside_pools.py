"""lb-ip-outside-pools: a Service asks LB-IPAM for an address no usable pool holds."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, K8sObject, NotRun, Rule, RuleContext, Severity, Snapshot, is_placeholder, kinds
from auditor_rules.exposure._services import SelectorSet, selector_labels
from auditor_rules.lbipam._pools import (
    DEFAULT_LB_IPAM_KEY,
    Range,
    RangeIndex,
    lb_ipam_handles,
    parse_address,
    pool_blocks,
    pool_disabled,
    requested_ips,
)


class LbIpOutsidePools(Rule):
    id = "lb-ip-outside-pools"
    severity = Severity.ERROR
    title = "LoadBalancer Service requests an IP that no usable LB-IPAM pool holds"
    nothing_to_check = "Service requesting a specific LoadBalancer IP from LB-IPAM"
    rationale_fact = (
        "A Service asks LB-IPAM for specific addresses with the lbipam.cilium.io/ips annotation (Cilium "
        "1.16+ spelling), the older io.cilium/lb-ipam-ips, or spec.loadBalancerIP (deprecated in "
        "Kubernetes since 1.24, still honoured). LB-IPAM allocates a requested address only from a pool "
        "that contains it, whose serviceSelector matches the Service, and which is not disabled; "
        "otherwise the Service stays without that address, and whatever points at it (DNS, firewall "
        "rules) points at nothing. LB-IPAM handles Services with no loadBalancerClass (unless "
        "default-lb-service-ipam hands them elsewhere), io.cilium/l2-announcer or "
        "io.cilium/bgp-control-plane."
    )
    rationale_decision = (
        "An address the platform publishes must be one a pool can give: every requested address no "
        "usable pool holds is an error. Pools are indexed by range, so each requested address costs a "
        "bisection, not a scan of every pool."
    )
    remediation = (
        "Request an address inside a pool that selects the Service (or drop the request and let "
        "LB-IPAM choose), or extend a pool's blocks or serviceSelector to cover it."
    )
    requires = (kinds.SERVICE,)
    uses = (kinds.LB_IP_POOL,)
    cilium_settings = (DEFAULT_LB_IPAM_KEY,)
    facts = (
        Fact(
            "Requested IPs: lbipam.cilium.io/ips (comma-separated), legacy io.cilium/lb-ipam-ips and "
            "spec.loadBalancerIP are all read; "
            "the pool's serviceSelector still applies",
            "new prefix 1.16+",
            "https://github.com/cilium/cilium/pull/30169",
            also=("https://docs.cilium.io/en/stable/network/lb-ipam/#requesting-ips",),
        ),
        Fact("spec.disabled: a disabled pool makes no new allocations", "Cilium 1.13+", "https://github.com/cilium/cilium/blob/main/pkg/k8s/apis/cilium.io/client/crds/v2/ciliumloadbalancerippools.yaml"),
        Fact(
            "LB-IPAM serves Services with no loadBalancerClass (per default-lb-service-ipam, default lbipam), "
            "io.cilium/l2-announcer or io.cilium/bgp-control-plane; other classes are ignored",
            "default-lb-service-ipam 1.17+",
            "https://docs.cilium.io/en/stable/network/lb-ipam/#loadbalancerclass",
        ),
    )
    references = (
        "https://docs.cilium.io/en/stable/network/lb-ipam/",
        "https://github.com/cilium/cilium/pull/30169",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        default_ipam = ctx.setting_if_set(
            DEFAULT_LB_IPAM_KEY, unknown_because="cannot tell which Services LB-IPAM serves"
        )
        requests: list[tuple[K8sObject, list[tuple[str, str]]]] = []
        for service in ctx.exposures.services_of_type("LoadBalancer"):  # lb_ipam_handles: LoadBalancers only
            if not lb_ipam_handles(service, default_ipam.value if default_ipam else None):
                continue
            wanted = requested_ips(service)
            if wanted:
                requests.append((service, wanted))
        if not requests:
            return
        if not ctx.known(kinds.LB_IP_POOL):
            raise NotRun(
                f"{len(requests)} Service(s) request specific LoadBalancer IPs, but the input holds no "
                "CiliumLoadBalancerIPPool objects"
            )
        pools = _Pools(snapshot.of_kind(kinds.LB_IP_POOL))
        for service, wanted in requests:
            ctx.examined(service)
            labels = selector_labels(service)
            problems = [problem for where, text in wanted if (problem := pools.problem(where, text, labels))]
            if problems:
                yield self.finding(service, f"requested LoadBalancer IP not allocatable: {'; '.join(problems)}")


class _Pools:
    """The pools indexed by range, each with its memoised serviceSelector (absent: every Service)."""

    def __init__(self, pools: list[K8sObject]) -> None:
        self.index: RangeIndex[K8sObject] = RangeIndex((block, pool) for pool in pools for block in pool_blocks(pool))
        self.selects = {
            id(pool): SelectorSet([pool.spec["serviceSelector"]]) if pool.spec.get("serviceSelector") is not None
            else SelectorSet([], always=True)
            for pool in pools
        }

    def problem(self, where: str, text: str, labels: dict[str, str]) -> str | None:
        """Why the address `text` (requested by `where`) cannot be allocated, or None when a pool can."""
        if is_placeholder(text):
            return None  # a substitution the input does not resolve
        address = parse_address(text)
        if address is None:
            return f"{text!r} ({where}) is not an IP address"
        value = Range(address.version, int(address), int(address), text)
        holders = [pool for _, pool in self.index.containing(value.family, value.first)]
        if any(self.selects[id(pool)].matches(labels) and not pool_disabled(pool) for pool in holders):
            return None
        if not holders:
            return f"{text} ({where}) is in no pool"
        reasons = []
        for pool in sorted(dict.fromkeys(holders), key=lambda p: p.name):
            if pool_disabled(pool):
                reasons.append(f"pool {pool.name} holds it but is disabled")
            else:
                reasons.append(f"pool {pool.name} holds it but its serviceSelector does not select this Service")
        return f"{text} ({where}): {', '.join(reasons)}"
