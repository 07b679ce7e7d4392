"""nodeport-service-not-excepted: a NodePort opens a port on every node."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import AnyOf, Fact, Finding, Rule, RuleContext, Severity, Snapshot, cilium_keys, exposure, kinds
from auditor_rules.exposure._channels import declared_suffix, judge, mode_note
from auditor_rules.exposure.lb_service_not_excepted import SOURCES, service_ports_text


def describe(ctx: RuleContext, subject: exposure.Subject, found: list[exposure.Entrance]) -> str:
    view = ctx.exposures.view_of(subject)
    if view is None:  # pragma: no cover - every NodePort entrance comes from a Service view
        return f"type NodePort exposes {found[0].port_display} on every node{mode_note(ctx)}"
    if view.declared is exposure.Declared.HELM_VALUES:
        text = f"{view.evidence.field} requests a NodePort Service ({service_ports_text(view)})"
        return text + mode_note(ctx) + declared_suffix(subject)
    if view.declared is exposure.Declared.CONTROLLER:
        gateway = view.gateway.display if view.gateway else "its Gateway"
        return (f"type NodePort exposes {service_ports_text(view)} on every node: the Service the controller of "
                f"{gateway} will create ({view.notes[0] if view.notes else 'not in the input'}){mode_note(ctx)}")
    unnamed = ""
    if ctx.posture.exposure_mode == "l4":
        unnamed = "; not named by exposure.allow or the exposure contract"
        if subject.ref.namespace is None:
            unnamed += " (the manifest sets no namespace, so no entry for a namespace can name it)"
    return f"type NodePort exposes {service_ports_text(view)} on every node{unnamed}{mode_note(ctx)}"


class NodePortServiceNotExcepted(Rule):
    id = "nodeport-service-not-excepted"
    severity = Severity.ERROR
    title = "NodePort Service not on the exception list"
    nothing_to_check = (
        "NodePort (a NodePort or LoadBalancer Service, in the input, in Helm values or made by "
        "a Gateway controller)"
    )
    rationale_fact = (
        "With kube-proxy replacement, Cilium's eBPF load balancer answers a NodePort Service on every "
        "node address, so the Service is reachable on each node's IP, outside any Gateway, its TLS "
        "termination and its routes. Helm values declare such Services too (`service.type: NodePort`)."
    )
    rationale_decision = (
        "In exposure.mode gateway (the default, ADR 0020) NodePort exposure is excluded: application "
        "Services stay ClusterIP, and a NodePort is drift unless a named exception records why. In "
        "exposure.mode l4 (ADR 0092) the UIs are exposed by NodePort on purpose: a NodePort Service the "
        "posture names (exposure.allow, or the platform's exposure contract, `<service>-nodeport`) is "
        "sanctioned, any other is drift. In mode none every NodePort is drift."
    )
    remediation = (
        "Change the Service to type ClusterIP and publish it through an HTTPRoute on the edge Gateway; in "
        "exposure.mode l4, name it in exposure.allow or the exposure contract; or add a named exception with "
        "its reason to exceptions.yaml."
    )
    requires = (AnyOf(*SOURCES, name="Services, Helm values or Gateways"),)
    uses = (kinds.GATEWAY_CLASS, kinds.CILIUM_GATEWAY_CLASS_CONFIG, kinds.ENVOY_PROXY, kinds.OCI_REPOSITORY,
            kinds.NODE)
    cilium_settings = (cilium_keys.GATEWAY_API_HOST_NETWORK, cilium_keys.AGENT_VERSION)
    posture_fields = ("exposure.mode", "exposure.allow", "exposure.edgeGateways", "exposure.gatewayHostNetwork",
                      "expected.ciliumVersionLine")
    facts = (
        Fact(
            "With kube-proxy replacement, Cilium's eBPF load balancer serves NodePort Services on every node address "
            "(the enable-node-port switch was folded into kube-proxy-replacement=true)",
            "Cilium 1.16+ (true/false values); switch deprecated in 1.18",
            "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",
            also=("https://github.com/cilium/cilium/pull/39581",),
        ),
        Fact(
            "A Cilium Gateway in hostNetwork mode gets a NodePort Service from 1.20 (ClusterIP before)",
            "Cilium 1.20+ (main translator, toServiceType)",
            "https://github.com/cilium/cilium/blob/005fad665d4947f51ae309885eed453864eaa1b7/operator/pkg/model/"
            "translation/gateway-api/translator.go",
            also=("https://github.com/cilium/cilium/pull/47171",),
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        yield from judge(self, ctx, lambda subject, found: describe(ctx, subject, found),
                         needs=((kinds.SERVICE, "Service objects"),))
