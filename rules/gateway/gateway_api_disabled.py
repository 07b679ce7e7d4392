"""gateway-api-disabled: Gateways exist while Cilium's Gateway API support is off."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, kinds
from auditor_rules.gateway._gateway_api import ENABLE_KEY, class_name, served_by_cilium


class GatewayApiDisabled(Rule):
    id = "gateway-api-disabled"
    severity = Severity.ERROR
    title = "Gateway objects while Cilium's Gateway API support is disabled"
    nothing_to_check = "Gateway meant for Cilium"
    rationale_fact = (
        "Cilium serves Gateways only when its Gateway API support is on: Helm gatewayAPI.enabled=true "
        "renders enable-gateway-api: \"true\" into cilium-config (Cilium 1.13+; the Helm default is "
        "false). With it off, no controller programs Gateways of the Cilium class: they get no "
        "listeners, no address and no routes, and everything published through them is unreachable."
    )
    rationale_decision = (
        "The platform's single way in is the edge Gateway served by Cilium (ADR 0020), so a Gateway "
        "meant for Cilium while the support is off is an error. Gateways whose GatewayClass belongs to "
        "another controller are left to gateway-class-not-cilium. Without the Cilium configuration in "
        "the input the verdict is not-run."
    )
    remediation = (
        "Enable Cilium's Gateway API support (Helm gatewayAPI.enabled=true, with the Gateway API "
        "CRDs installed first) and restart the operator and agents, or remove the Gateways."
    )
    requires = (kinds.GATEWAY,)
    uses = (kinds.GATEWAY_CLASS,)
    cilium_settings = (ENABLE_KEY,)
    facts = (
        Fact(
            "Helm gatewayAPI.enabled (default false) renders cilium-config enable-gateway-api and "
            "also turns on enable-envoy-config.",
            "Cilium 1.13+",
            "https://docs.cilium.io/en/stable/helm-reference/",
        ),
        Fact(
            "Cilium's Gateway API support needs kube-proxy replacement (or NodePort), the L7 proxy, "
            "and the Gateway API CRDs installed beforehand.",
            "Cilium 1.19",
            "https://docs.cilium.io/en/stable/network/servicemesh/gateway-api/gateway-api/",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/network/servicemesh/gateway-api/gateway-api/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        gateways = [g for g in snapshot.of_kind(kinds.GATEWAY) if served_by_cilium(snapshot, g) is not False]
        if not gateways:
            return
        what = f"{len(gateways)} Gateway(s) meant for Cilium; whether {ENABLE_KEY} is on is unknown"
        setting = ctx.setting(ENABLE_KEY, unknown_because=what)
        enabled = setting is not None and setting.as_bool()
        why = ctx.describe_setting(ENABLE_KEY, "false: Helm gatewayAPI.enabled defaults to false")
        for gateway in gateways:
            ctx.examined(gateway)
            if not enabled:
                yield self.finding(
                    gateway,
                    f"class {class_name(gateway) or '(none)'}: Cilium's Gateway API support is off ({why}), "
                    "nothing programs this Gateway",
                )
