"""lb-service-not-excepted: a LoadBalancer Service is a second way in."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, kinds
from auditor_rules.exposure._services import exposed_ports, ingress_addresses, service_type


class LbServiceNotExcepted(Rule):
    id = "lb-service-not-excepted"
    severity = Severity.ERROR
    title = "LoadBalancer Service not on the exception list"
    rationale_fact = (
        "A Service of type LoadBalancer takes an address from an LB-IPAM pool (LB-IPAM is always on, "
        "dormant until the first pool) and, once an L2 announcement policy or a BGP advertisement "
        "selects it, is reachable from the LAN: an entrance of its own, beside any Gateway and its TLS "
        "and routing."
    )
    rationale_decision = (
        "The platform's exposure principle: application Services stay ClusterIP and the only way in is "
        "the edge Gateway (ADR 0020). Every LoadBalancer Service is reported; the Services Cilium "
        "creates for a Gateway and the named entries of the exception list are sanctioned there."
    )
    remediation = (
        "Change the Service to type ClusterIP and publish it through an HTTPRoute on the edge "
        "Gateway, or add a named exception with its reason to exceptions.yaml."
    )
    requires = (kinds.SERVICE,)
    facts = (
        Fact(
            "A Service of type LoadBalancer gets an address from LB-IPAM once a pool exists (LB-IPAM is always on, "
            "dormant "
            "until the first pool); an L2 announcement policy or a BGP advertisement then makes it reachable from "
            "the LAN",
            "Cilium 1.13+ (LB-IPAM), 1.14+ (L2 announcements)",
            "https://docs.cilium.io/en/stable/network/lb-ipam/",
        ),
        Fact(
            "Cilium labels the Service it creates for a Gateway with gateway.networking.k8s.io/gateway-name "
            "(and io.cilium.gateway/owning-gateway): the bundled exception list matches that label",
            "Cilium 1.17+ (gateway-name label)",
            "https://github.com/cilium/cilium/pull/33990",
            also=("https://github.com/cilium/cilium/pull/31271",),
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        for service in snapshot.of_kind(kinds.SERVICE):
            if service_type(service) != "LoadBalancer":
                continue
            ctx.examined(service)
            addresses = ingress_addresses(service)
            where = f" on {', '.join(addresses)}" if addresses else ""
            yield self.finding(service, f"type LoadBalancer exposes {exposed_ports(service)}{where}")
