"""hubble-ui-exposed: the Hubble UI must stay inside the cluster."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    AnyOf,
    Fact,
    Finding,
    K8sObject,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    as_mapping,
    kinds,
)
from auditor_rules.exposure._services import exposed_ports, service_type

NAME = "hubble-ui"
LABELS = (("k8s-app", NAME), ("app.kubernetes.io/name", NAME))


def _is_hubble_ui(service: K8sObject) -> bool:
    if service.name == NAME:
        return True
    labels = service.labels
    if NAME not in labels.values():  # asked of every Service: one C call for nearly all
        return False
    for key, value in LABELS:  # noqa: SIM110 - asked of every Service: a loop, not a generator
        if labels.get(key) == value:
            return True
    return False


def _ingress_backends(ingress: K8sObject) -> list[str]:
    """Names of the Services an Ingress sends traffic to (networking/v1 and the older v1beta1 form)."""
    backends = [as_mapping(ingress.spec.get("defaultBackend")), as_mapping(ingress.spec.get("backend"))]
    for rule in as_list(ingress.spec.get("rules")):
        for path in as_list(as_mapping(as_mapping(rule).get("http")).get("paths")):
            backends.append(as_mapping(as_mapping(path).get("backend")))
    names = []
    for backend in backends:
        name = as_mapping(backend.get("service")).get("name") or backend.get("serviceName")
        if isinstance(name, str):
            names.append(name)
    return names


class HubbleUiExposed(Rule):
    id = "hubble-ui-exposed"
    severity = Severity.ERROR
    title = "Hubble UI reachable from outside the cluster"
    nothing_to_check = "Hubble UI Service, nor a route or Ingress to one"
    rationale_fact = (
        "Hubble UI shows the network flows Hubble observes across the cluster: which workload talks to "
        "which, on which ports, with the policy verdicts. The Cilium chart renders Service hubble-ui "
        "(labels k8s-app: hubble-ui) with type hubble.ui.service.type, default ClusterIP, and can also "
        "render an Ingress or HTTPRoute for it."
    )
    rationale_decision = (
        "The platform keeps Hubble UI internal, reached through kubectl port-forward and never "
        "published through the edge Gateway: the hubble-ui Service with another type than ClusterIP, "
        "and any HTTPRoute or Ingress whose backend is it, are errors."
    )
    remediation = (
        "Set hubble.ui.service.type=ClusterIP, remove the Ingress/HTTPRoute in front of "
        "hubble-ui (hubble.ui.ingress.enabled=false), and reach it with kubectl port-forward "
        "or `cilium hubble ui`."
    )
    requires = (AnyOf(kinds.SERVICE, kinds.HTTP_ROUTE, kinds.INGRESS, name="Services, HTTPRoutes or Ingresses"),)
    facts = (
        Fact(
            "The chart's Hubble UI Service is hubble-ui (labels k8s-app: hubble-ui, "
            "app.kubernetes.io/name: hubble-ui), port 80 to 8081, type hubble.ui.service.type "
            "(default ClusterIP); the chart also ships optional ingress.yaml and httproute.yaml for it.",
            "Cilium chart (main branch, read for 1.19)",
            "https://github.com/cilium/cilium/blob/main/install/kubernetes/cilium/templates/hubble-ui/service.yaml",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/observability/hubble/hubble-ui/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        hubble: dict[tuple[str | None, str], K8sObject] = {}
        for service in snapshot.of_kind(kinds.SERVICE):
            if not _is_hubble_ui(service):
                continue
            hubble[(service.namespace, service.name)] = service
            ctx.examined(service)
            kind = service_type(service)
            if kind != "ClusterIP":
                yield self.finding(service, f"Hubble UI Service of type {kind} exposes {exposed_ports(service)}")
        # The routes' backends as the exposure model reads them (auditor/exposure/gateway.py).
        for route in ctx.exposures.routes:
            if route.kind != "HTTPRoute":
                continue
            targets = sorted({
                f"{b.service.namespace}/{b.service.name}" if b.service.namespace else b.service.name
                for b in route.backends
                if (b.service.namespace, b.service.name) in hubble or b.service.name == NAME
            })
            if targets:
                ctx.examined(route.ref)
                # Labels left to the engine, which reads them from the object at this source (own_labels).
                yield Finding(object=route.ref, source=route.evidence.source,
                              message=f"routes traffic to the Hubble UI (Service {', '.join(targets)})")
        for ingress in snapshot.of_kind(kinds.INGRESS):
            targets = sorted({
                name for name in _ingress_backends(ingress)
                if (ingress.namespace, name) in hubble or name == NAME
            })
            if targets:
                ctx.examined(ingress)
                yield self.finding(ingress, f"routes traffic to the Hubble UI (Service {', '.join(targets)})")
