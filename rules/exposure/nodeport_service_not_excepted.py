"""nodeport-service-not-excepted: a NodePort opens a port on every node."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, kinds
from auditor_rules.exposure._services import exposed_ports, service_type


class NodePortServiceNotExcepted(Rule):
    id = "nodeport-service-not-excepted"
    severity = Severity.ERROR
    title = "NodePort Service not on the exception list"
    rationale_fact = (
        "With kube-proxy replacement, Cilium's eBPF load balancer answers a NodePort Service on every "
        "node address, so the Service is reachable on each node's IP, outside any Gateway, its TLS "
        "termination and its routes."
    )
    rationale_decision = (
        "NodePort exposure is excluded by the platform's design (all-Cilium exposure through the edge "
        "Gateway, ADR 0020): application Services stay ClusterIP, and a NodePort is drift unless a "
        "named exception records why it is needed."
    )
    remediation = (
        "Change the Service to type ClusterIP and publish it through an HTTPRoute on the edge "
        "Gateway, or add a named exception with its reason to exceptions.yaml."
    )
    requires = (kinds.SERVICE,)
    facts = (
        Fact(
            "With kube-proxy replacement, Cilium's eBPF load balancer serves NodePort Services on every node address "
            "(the enable-node-port switch was folded into kube-proxy-replacement=true)",
            "Cilium 1.16+ (true/false values); switch deprecated in 1.18",
            "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",
            also=("https://github.com/cilium/cilium/pull/39581",),
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        for service in snapshot.of_kind(kinds.SERVICE):
            if service_type(service) != "NodePort":
                continue
            ctx.examined(service)
            yield self.finding(service, f"type NodePort exposes {exposed_ports(service)} on every node")
