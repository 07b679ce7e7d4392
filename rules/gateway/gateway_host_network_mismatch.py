"""gateway-host-network-mismatch: the Cilium Gateway mode differs from the posture's expectation."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import CILIUM_CONFIGURATION, Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot
from auditor_rules.gateway._gateway_api import ENABLE_KEY, HOST_NETWORK_KEY, configured_host_network

WHAT = "cannot compare Cilium's Gateway mode with the posture's exposure.gatewayHostNetwork"
HOST_NETWORK_DOCS = "https://docs.cilium.io/en/stable/network/servicemesh/gateway-api/gateway-api/#host-network-mode"
TRANSLATOR = (
    "https://github.com/cilium/cilium/blob/005fad665d4947f51ae309885eed453864eaa1b7/"
    "operator/pkg/model/translation/gateway-api/translator.go"
)


class GatewayHostNetworkMismatch(Rule):
    id = "gateway-host-network-mismatch"
    severity = Severity.ERROR
    title = "Cilium's Gateway mode (hostNetwork or LoadBalancer) differs from the posture"
    rationale_fact = (
        "Cilium's Gateway API support has two ways of receiving traffic, chosen by Helm "
        "gatewayAPI.hostNetwork.enabled (cilium-config gateway-api-hostnetwork-enabled, default false). Off, "
        "the operator creates one LoadBalancer Service cilium-gateway-<name> per Gateway, which takes an "
        "LB-IPAM address announced by L2 or BGP. On, Envoy binds the listener ports on every node's "
        "addresses and the Gateway gets no LoadBalancer Service (a ClusterIP Service up to 1.19, NodePort "
        "from 1.20). The two modes expose the edge on different addresses."
    )
    rationale_decision = (
        "The posture's exposure.gatewayHostNetwork (default true) is the expected mode, and the Cilium "
        "configuration must match it: a difference is an error on the configuration, whichever side is "
        "right. Other rules that depend on the mode (gateway-not-programmed) follow what the configuration "
        "sets and say when it contradicts the posture. Checked when Cilium's Gateway API support is on; "
        "without the Cilium configuration, or with the mode left to a substitution, the verdict is not-run."
    )
    remediation = (
        "Set Helm gatewayAPI.hostNetwork.enabled to the mode the platform runs, or correct the posture's "
        "exposure.gatewayHostNetwork after a deliberate change of mode (and review the exposure it implies)."
    )
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (ENABLE_KEY, HOST_NETWORK_KEY)
    posture_fields = ("exposure.gatewayHostNetwork",)
    facts = (
        Fact(
            "Helm gatewayAPI.hostNetwork.enabled (default false) renders gateway-api-hostnetwork-enabled; host "
            "network mode exposes the Gateway's listeners on the nodes and disables the LoadBalancer Service mode.",
            "Cilium 1.16+",
            HOST_NETWORK_DOCS,
        ),
        Fact(
            "Without hostNetwork the operator's translator gives each Gateway a Service cilium-gateway-<name> of "
            "type LoadBalancer; in hostNetwork mode the type is ClusterIP (1.16-1.19) or NodePort (1.20+).",
            "Cilium 1.13+ (LoadBalancer); hostNetwork Service type by version",
            TRANSLATOR,
        ),
    )
    references = (HOST_NETWORK_DOCS,)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        enable = ctx.setting_if_set(ENABLE_KEY, unknown_because=WHAT)
        if enable is None:
            ctx.require_settings(unknown_because=WHAT)
        if enable is None or not enable.as_bool():
            ctx.examined_configuration(enable)  # judged: off
            return  # Cilium serves no Gateway: its mode is moot (gateway-api-disabled covers Gateways left over)
        configured = configured_host_network(ctx)
        if configured is None:
            ctx.setting_if_set(HOST_NETWORK_KEY, unknown_because=WHAT)  # NotRun for a value left unresolved
            ctx.require_settings(unknown_because=f"{WHAT}: the input does not show {HOST_NETWORK_KEY}")
            raise NotRun(f"{WHAT}: the input does not show {HOST_NETWORK_KEY}")
        ctx.examined(ctx.configuration_anchor(configured.setting)[0])
        expected = bool(ctx.posture.gateway_host_network)
        if configured.enabled == expected:
            return
        if expected:
            message = (
                f"Cilium's Gateway runs in LoadBalancer mode ({configured.why}), but the posture expects hostNetwork "
                "mode (exposure.gatewayHostNetwork true): each Cilium Gateway gets a LoadBalancer Service "
                "cilium-gateway-<name> with an LB-IPAM address instead of listening on the node addresses"
            )
        else:
            message = (
                f"Cilium's Gateway runs in hostNetwork mode ({configured.why}), but the posture expects LoadBalancer "
                "mode (exposure.gatewayHostNetwork false): Envoy listens on the listener ports of every node's "
                "addresses and no Gateway gets a LoadBalancer Service"
            )
        yield ctx.configuration_finding(message, configured.setting)
