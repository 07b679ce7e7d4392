"""gateway-class-not-cilium: a Gateway not served by Cilium's Gateway API controller."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, kinds
from auditor_rules.gateway._gateway_api import CILIUM_CONTROLLER, CILIUM_DEFAULT_CLASS, class_controller, class_name


class GatewayClassNotCilium(Rule):
    id = "gateway-class-not-cilium"
    severity = Severity.ERROR
    title = "Gateway whose GatewayClass is missing or not Cilium's"
    nothing_to_check = "Gateway"
    rationale_fact = (
        "A Gateway is programmed only by the controller its GatewayClass names in controllerName; "
        "Cilium's Gateway API implementation is io.cilium/gateway-controller (Cilium 1.13+), and the "
        "Cilium chart can create its class, named cilium. A Gateway naming no class, a class that does "
        "not exist, or a class of another controller (Envoy Gateway, Istio, Traefik...) is either dead "
        "configuration nothing programs or a second ingress implementation."
    )
    rationale_decision = (
        "The platform's exposure is all-Cilium (ADR 0020): every Gateway must be Cilium's, else it is "
        "an error. The class is looked up among the GatewayClass objects, so the input must hold some; "
        "a class missing from offline input is only a warning (the chart can render the cilium class "
        "itself), from a live read or snapshot an error."
    )
    remediation = (
        "Set spec.gatewayClassName to the Cilium GatewayClass (controllerName "
        "io.cilium/gateway-controller, named cilium by the chart) and create that class if it "
        "is missing."
    )
    requires = (kinds.GATEWAY, kinds.GATEWAY_CLASS)
    facts = (
        Fact(
            "Cilium's GatewayClass has controllerName io.cilium/gateway-controller; the chart's "
            "class is named cilium (Helm gatewayAPI.gatewayClass.create).",
            "Cilium 1.13+",
            "https://docs.cilium.io/en/stable/network/servicemesh/gateway-api/gateway-api/",
        ),
        Fact(
            "A Gateway is programmed only by the controller named in its GatewayClass's controllerName.",
            "Gateway API v1",
            "https://gateway-api.sigs.k8s.io/api-types/gatewayclass/",
        ),
    )
    references = ("https://gateway-api.sigs.k8s.io/api-types/gatewayclass/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        # Offline input holding some GatewayClasses does not hold every class the
        # cluster has (the Cilium chart renders its own), so a class missing from
        # it is a warning; a live read or snapshot lists them all.
        listed = snapshot.mode.from_cluster
        for gateway in snapshot.of_kind(kinds.GATEWAY):
            ctx.examined(gateway)
            name = class_name(gateway)
            if name is None:
                yield self.finding(gateway, "spec.gatewayClassName is not set")
                continue
            gateway_class = snapshot.get(kinds.GATEWAY_CLASS, None, name)
            if gateway_class is None:
                if listed:
                    yield self.finding(gateway, f"GatewayClass {name!r} does not exist: nothing programs this Gateway")
                else:
                    chart = (
                        " (the Cilium chart can render it: Helm gatewayAPI.gatewayClass.create)"
                        if name == CILIUM_DEFAULT_CLASS else ""
                    )
                    yield self.finding(
                        gateway,
                        f"GatewayClass {name!r} is not in the input{chart}: check that it exists and is Cilium's",
                        Severity.WARNING,
                    )
                continue
            controller = class_controller(gateway_class)
            if controller != CILIUM_CONTROLLER:
                yield self.finding(
                    gateway,
                    f"GatewayClass {name!r} is served by {controller or '(no controllerName)'}, "
                    f"not {CILIUM_CONTROLLER}",
                )
