"""hostnetwork-pod-not-excepted: a hostNetwork workload serves its ports on the node's addresses."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import AnyOf, Fact, Finding, Rule, RuleContext, Severity, Snapshot, cilium_keys, exposure, kinds
from auditor_rules.exposure._channels import judge, mode_note
from auditor_rules.exposure.hostport_not_excepted import WORKLOADS, unnamed_note

_GATEWAY_WHY = {
    "l4": "exposure.mode l4 expects no Gateway (UIs are reached by NodePort and hostPort on node IPs, ADR 0092)",
    "none": "exposure.mode none: nothing may be reachable from outside the cluster",
}


def _gateway(ctx: RuleContext, subject: exposure.Subject, found: list[exposure.Entrance]) -> str:
    listeners = ", ".join(dict.fromkeys(
        f"{e.listener.name} ({e.listener.protocol}:{e.listener.port})" for e in found if e.listener is not None))
    where = f"Cilium's Envoy listens in the host network on {found[0].address.display} for listeners {listeners}"
    mode = ctx.posture.exposure_mode
    if mode == "gateway":
        patterns = ", ".join(ctx.posture.edge_gateways) or "none"
        return f"{where}: not an edge Gateway of the posture (exposure.edgeGateways: {patterns})"
    return f"{where}: {_GATEWAY_WHY.get(mode, f'exposure.mode {mode}')}"


def describe(ctx: RuleContext, subject: exposure.Subject, found: list[exposure.Entrance]) -> str:
    if found[0].listener is not None:
        return _gateway(ctx, subject, found)
    ports = ", ".join(dict.fromkeys(
        e.port_display + (f" ({e.notes[0]})" if e.notes else "") for e in found))
    address = found[0].address.display
    return (f"hostNetwork pod serves {ports} on {address}: it is reachable on any port it listens on, outside "
            f"any Gateway{unnamed_note(ctx)}{mode_note(ctx)}")


class HostNetworkPodNotExcepted(Rule):
    id = "hostnetwork-pod-not-excepted"
    severity = Severity.ERROR
    title = "Ports served in the host network outside the posture (hostNetwork workloads, hostNetwork Gateways)"
    nothing_to_check = "hostNetwork workload declaring ports, and no Gateway in hostNetwork mode"
    rationale_fact = (
        "A pod with hostNetwork: true shares the node's network namespace: whatever it listens on is "
        "reachable on the node's addresses (containerPort is informational there, and hostPort must "
        "equal it), and it carries the node's identity, so a CiliumNetworkPolicy endpointSelector cannot "
        "select it; only host policies (CiliumClusterwideNetworkPolicy nodeSelector, host firewall) can. "
        "A Cilium Gateway in hostNetwork mode is served the same way: Cilium's Envoy listens on every node "
        "address on the listener ports (its Service is ClusterIP up to 1.19)."
    )
    rationale_decision = (
        "Only the platform's own components run in the host network: the posture lists them "
        "(exposure.infrastructure: the Cilium agent, Envoy and operator, node exporters, control-plane "
        "static Pods). Any other workload declaring container ports in the host network is drift "
        "(exposure.mode gateway and none), or must be named in exposure.allow (mode l4, ADR 0092). "
        "Declared ports are a lower bound of what such a pod exposes. A Gateway in hostNetwork mode is "
        "sanctioned in mode gateway when it is an edge Gateway (exposure.edgeGateways, default every "
        "Gateway), and drift in modes l4 (no Gateway expected) and none."
    )
    remediation = (
        "Drop hostNetwork and publish the port through the edge Gateway, list the component in the "
        "posture's exposure.infrastructure if it is part of the platform, or add a named exception with its "
        "reason to exceptions.yaml."
    )
    requires = (AnyOf(*WORKLOADS, kinds.GATEWAY, name="workloads (Deployments, StatefulSets, DaemonSets, Jobs, "
                      "CronJobs, Pods) or Gateways"),)
    uses = (kinds.GATEWAY_CLASS, kinds.NODE)
    cilium_settings = (cilium_keys.GATEWAY_API_HOST_NETWORK,)
    posture_fields = ("exposure.mode", "exposure.allow", "exposure.infrastructure", "exposure.edgeGateways",
                      "exposure.gatewayHostNetwork")
    facts = (
        Fact(
            "For hostNetwork pods containerPort is primarily informational and hostPort must match containerPort: "
            "every port the process listens on is reachable on the node",
            "Kubernetes core/v1",
            "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#ports",
        ),
        Fact(
            "Traffic from and to hostNetwork pods carries the host/remote-node identity: endpoint selectors do not "
            "select them, host policies do",
            "Cilium, all versions",
            "https://docs.cilium.io/en/stable/security/policy/language/#ip-cidr-based",
            also=("https://docs.cilium.io/en/stable/security/host-firewall/",),
        ),
        Fact(
            "In hostNetwork mode (gateway-api-hostnetwork-enabled) Cilium's Envoy listens on the nodes' addresses "
            "on the listener ports; the Gateway's Service is ClusterIP up to 1.19, NodePort from 1.20, and the "
            "Gateway stays Programmed=False while traffic flows (cilium/cilium#42786)",
            "Cilium 1.16+",
            "https://docs.cilium.io/en/stable/network/servicemesh/gateway-api/gateway-api/#host-network-mode",
            also=("https://github.com/cilium/cilium/issues/42786", "https://github.com/cilium/cilium/pull/47171"),
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        yield from judge(self, ctx, lambda subject, found: describe(ctx, subject, found))
