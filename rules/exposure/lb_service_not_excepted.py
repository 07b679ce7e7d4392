"""lb-service-not-excepted: a LoadBalancer Service is a second way in."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import AnyOf, Fact, Finding, Rule, RuleContext, Severity, Snapshot, cilium_keys, exposure, kinds
from auditor_rules.exposure._channels import declared_suffix, judge, mode_note

# What the model reads to find LoadBalancer Services: the Services, the Helm values and operator
# resources that declare them, and the Gateways whose controllers make them.
SOURCES = (kinds.SERVICE, kinds.HELM_RELEASE, kinds.ARGO_APPLICATION, kinds.GATEWAY)


def service_ports_text(view: exposure.ServiceView) -> str:
    """`443/TCP (nodePort 31443), 80/TCP`, as the Service's ports read."""
    parts = [f"{p.port}/{p.protocol}" + (f" (nodePort {p.node_port})" if p.node_port is not None else "")
             for p in view.ports]
    return ", ".join(parts) or "no ports"


def describe(ctx: RuleContext, subject: exposure.Subject, found: list[exposure.Entrance]) -> str:
    view = ctx.exposures.view_of(subject)
    if view is None:  # pragma: no cover - every LoadBalancer entrance comes from a Service view
        return f"type LoadBalancer exposes {found[0].port_display}{mode_note(ctx)}"
    where = f" on {', '.join(view.ingress)}" if view.ingress else ""
    if view.declared is exposure.Declared.HELM_VALUES:
        text = f"{view.evidence.field} requests a LoadBalancer Service ({service_ports_text(view)})"
        return text + mode_note(ctx) + declared_suffix(subject)
    if view.declared is exposure.Declared.CONTROLLER:
        gateway = view.gateway.display if view.gateway else "its Gateway"
        addresses = ", ".join(dict.fromkeys(a.display for a in view.addresses))
        why = view.notes[0] if view.notes else "not in the input"
        edge = "; not an edge Gateway (exposure.edgeGateways)" if ctx.posture.exposure_mode == "gateway" else ""
        return (f"type LoadBalancer exposes {service_ports_text(view)} on {addresses}: the Service the controller "
                f"of {gateway} will create ({why}){edge}{mode_note(ctx)}")
    return f"type LoadBalancer exposes {service_ports_text(view)}{where}{mode_note(ctx)}"


class LbServiceNotExcepted(Rule):
    id = "lb-service-not-excepted"
    severity = Severity.ERROR
    title = "LoadBalancer Service not on the exception list"
    nothing_to_check = (
        "LoadBalancer Service (a Service object, one Helm values declare, or one a Gateway "
        "controller makes)"
    )
    rationale_fact = (
        "A Service of type LoadBalancer takes an address from an LB-IPAM pool (LB-IPAM is always on, "
        "dormant until the first pool) and, once an L2 announcement policy or a BGP advertisement "
        "selects it, is reachable from the LAN: an entrance of its own, beside any Gateway and its TLS "
        "and routing. Such Services are also declared in Helm values (`service.type`, app-template's "
        "`service.<name>.type`, operator `serviceSpec`s) and made by Gateway controllers: Cilium makes a "
        "LoadBalancer Service per Gateway outside hostNetwork mode, Envoy Gateway one of the type its "
        "EnvoyProxy names (LoadBalancer by default)."
    )
    rationale_decision = (
        "The platform's exposure principle: application Services stay ClusterIP and the only way in is "
        "the edge Gateway (ADR 0020, exposure.mode gateway): every LoadBalancer Service is reported, "
        "wherever the input declares it (a Service, Helm values at the values line, the Service a "
        "Gateway controller will create), except the data-plane Service of an edge Gateway. In "
        "exposure.mode l4 (ADR 0092) and none, every LoadBalancer Service is drift. Named entries of the "
        "exception list accept the rest."
    )
    remediation = (
        "Change the Service to type ClusterIP and publish it through an HTTPRoute on the edge "
        "Gateway, or add a named exception with its reason to exceptions.yaml."
    )
    requires = (AnyOf(*SOURCES, name="Services, Helm values or Gateways"),)
    uses = (kinds.GATEWAY_CLASS, kinds.CILIUM_GATEWAY_CLASS_CONFIG, kinds.ENVOY_PROXY, kinds.OCI_REPOSITORY,
            kinds.LB_IP_POOL, kinds.L2_ANNOUNCEMENT_POLICY, kinds.BGP_ADVERTISEMENT, kinds.NODE)
    cilium_settings = (cilium_keys.GATEWAY_API_HOST_NETWORK, cilium_keys.GATEWAY_API_SERVICE_ETP,
                       cilium_keys.DEFAULT_LB_SERVICE_IPAM, cilium_keys.AGENT_VERSION)
    posture_fields = ("exposure.mode", "exposure.edgeGateways", "exposure.gatewayHostNetwork",
                      "expected.ciliumVersionLine")
    facts = (
        Fact(
            "A Service of type LoadBalancer gets an address from LB-IPAM once a pool exists (LB-IPAM is always on, "
            "dormant until the first pool); an L2 announcement policy or a BGP advertisement then makes it "
            "reachable from the LAN",
            "Cilium 1.13+ (LB-IPAM), 1.14+ (L2 announcements)",
            "https://docs.cilium.io/en/stable/network/lb-ipam/",
        ),
        Fact(
            "Cilium creates Service cilium-gateway-<gateway> for each Gateway, labelled "
            "gateway.networking.k8s.io/gateway-name: type LoadBalancer, or CiliumGatewayClassConfig spec.service.type; "
            "in hostNetwork mode ClusterIP up to 1.19 and NodePort from 1.20",
            "Cilium 1.16+ (gateway-name label 1.17+, CiliumGatewayClassConfig 1.18+)",
            "https://github.com/cilium/cilium/blob/005fad665d4947f51ae309885eed453864eaa1b7/operator/pkg/model/"
            "translation/gateway-api/translator.go",
            also=("https://github.com/cilium/cilium/pull/33990", "https://github.com/cilium/cilium/pull/37402"),
        ),
        Fact(
            "Envoy Gateway's EnvoyProxy envoyService.type defaults to LoadBalancer and externalTrafficPolicy to Local",
            "Envoy Gateway v1.x (api/v1alpha1)",
            "https://github.com/envoyproxy/gateway/blob/8ed7f626f6535cf7c7c340f0aa01b70324080719/api/v1alpha1/"
            "shared_types.go",
        ),
        Fact(
            "The bjw-s app-template chart renders service.<name>.type (default ClusterIP) and "
            "externalTrafficPolicy as written",
            "app-template / common library 3.x-5.x",
            "https://github.com/bjw-s-labs/helm-charts/blob/002305d5/charts/library/common/templates/classes/"
            "_service.tpl",
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        yield from judge(self, ctx, lambda subject, found: describe(ctx, subject, found),
                         needs=((kinds.SERVICE, "Service objects"),))
