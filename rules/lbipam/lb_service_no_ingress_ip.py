"""lb-service-no-ingress-ip: a Cilium LoadBalancer Service that never got an address."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, as_str, conditions, kinds
from auditor_rules.exposure._services import ingress_addresses, load_balancer_class, service_type
from auditor_rules.lbipam._pools import DEFAULT_LB_IPAM_KEY, REQUEST_SATISFIED, lb_ipam_handles

NODE_IPAM_CLASS = "io.cilium/node"


class LbServiceNoIngressIp(Rule):
    id = "lb-service-no-ingress-ip"
    severity = Severity.WARNING
    title = "Cilium LoadBalancer Service without an address in status.loadBalancer.ingress"
    nothing_to_check = "LoadBalancer Service Cilium gives an address to"
    rationale_fact = (
        "A LoadBalancer Service is reachable only once an address shows in status.loadBalancer.ingress. "
        "For the Services Cilium handles (no loadBalancerClass unless default-lb-service-ipam says "
        "otherwise, io.cilium/l2-announcer, io.cilium/bgp-control-plane, or io.cilium/node for Node "
        "IPAM) an empty status means LB-IPAM could not allocate: no pool (LB-IPAM is dormant until the "
        "first one), none selecting the Service, a conflicting or exhausted pool, or a requested IP "
        "outside the pools. LB-IPAM records why in the Service condition "
        "io.cilium/lb-ipam-request-satisfied (cilium.io/IPAMRequestSatisfied in later releases)."
    )
    rationale_decision = (
        "A LoadBalancer Service the platform runs must have its address: one without is a warning, "
        "quoting the IPAM condition when present. Manifests never carry status, so only Services read "
        "from a cluster are judged (a live read, a snapshot, a kubectl dump), where an empty status is "
        "a fact, not an absence."
    )
    remediation = (
        "Read the Service's IPAM condition, then add or fix a pool that selects it (or fix its "
        "requested IP); if the Service should not be exposed, change it to ClusterIP."
    )
    requires = (kinds.SERVICE,)
    cilium_settings = (DEFAULT_LB_IPAM_KEY,)
    facts = (
        Fact("LB-IPAM is always enabled but dormant until the first pool exists", "Cilium 1.13+", "https://docs.cilium.io/en/stable/network/lb-ipam/"),
        Fact(
            "Service condition on failed allocation: io.cilium/lb-ipam-request-satisfied (1.15 docs) / "
            "cilium.io/IPAMRequestSatisfied (seen on 1.16.2) — PARTIAL, both accepted",
            "Cilium 1.15 / 1.16+",
            "https://docs.cilium.io/en/stable/network/lb-ipam/",
            also=("https://github.com/cilium/cilium/issues/30692",),
        ),
    )
    references = ("https://docs.cilium.io/en/stable/network/lb-ipam/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        setting = ctx.setting_if_set(DEFAULT_LB_IPAM_KEY, unknown_because="cannot tell which Services LB-IPAM serves")
        default_ipam = setting.value if setting is not None else None
        services = [  # both kinds of Service are LoadBalancer Services
            s for s in ctx.exposures.services_of_type("LoadBalancer")
            if lb_ipam_handles(s, default_ipam)
            or (service_type(s) == "LoadBalancer" and load_balancer_class(s) == NODE_IPAM_CLASS)
        ]
        if not services:
            return
        judged = [s for s in services if snapshot.read_from_cluster(s)]
        if not judged:
            raise NotRun(
                f"{len(services)} Cilium LoadBalancer Service(s), but only in manifests, which carry no status: "
                "audit a live cluster, a snapshot or a kubectl dump to read status.loadBalancer.ingress"
            )
        if len(judged) < len(services):  # a dump beside manifests: the manifests' Services have no status
            ctx.did_not_see(f"the status of {len(services) - len(judged)} LoadBalancer Service(s) read from manifests",
                            "manifests carry no status.loadBalancer.ingress")
        for service in judged:
            ctx.examined(service)
            if ingress_addresses(service):
                continue
            found = conditions(service)
            detail = ""
            for kind in REQUEST_SATISFIED:
                condition = found.get(kind)
                if condition is not None and as_str(condition.get("status")) == "False":
                    why = ": ".join(p for p in (as_str(condition.get("reason")), as_str(condition.get("message"))) if p)
                    detail = f" ({kind}=False{': ' + why if why else ''})"
                    break
            yield self.finding(service, f"no address in status.loadBalancer.ingress{detail}: not reachable")
