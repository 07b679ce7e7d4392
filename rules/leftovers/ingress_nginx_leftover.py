"""ingress-nginx-leftover: ingress-nginx objects left behind after the Cilium Gateway replaced it."""

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
    as_str,
    kinds,
)

CONTROLLER = "k8s.io/ingress-nginx"
NAMESPACE = "ingress-nginx"
DEFAULT_CLASS = "nginx"
CONTROLLER_NAME = "ingress-nginx-controller"
WEBHOOK_NAME = "ingress-nginx-admission"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


def _is_controller(workload: K8sObject) -> bool:
    labels = workload.labels
    name, component = labels.get("app.kubernetes.io/name"), labels.get("app.kubernetes.io/component")
    if name == "ingress-nginx" and component == "controller":
        return True
    if workload.name == CONTROLLER_NAME:
        return True
    pod_spec = as_mapping(as_mapping(workload.spec.get("template")).get("spec"))
    for container in as_list(pod_spec.get("containers")):
        image = as_str(as_mapping(container).get("image")).split("@", 1)[0]
        if "ingress-nginx/controller" in image:
            return True
    return False


class IngressNginxLeftover(Rule):
    id = "ingress-nginx-leftover"
    severity = Severity.ERROR
    title = "ingress-nginx objects present beside the Cilium Gateway"
    nothing_to_check = (
        "ingress-nginx object (its namespace, an IngressClass, its controller, an Ingress of "
        "its classes, its admission webhook)"
    )
    rationale_fact = (
        "ingress-nginx registers IngressClass controller k8s.io/ingress-nginx (default class nginx) and "
        "runs Deployment ingress-nginx-controller in namespace ingress-nginx. A controller left running "
        "is an entrance with its own TLS and routing; Ingress objects of its class still publish routes "
        "through it, and its admission webhook, with failurePolicy Fail and its Service gone, blocks "
        "every Ingress write. Kubernetes SIG Network has announced the retirement of the community "
        "controller, with best-effort maintenance ending in March 2026 (seen in secondary sources "
        "only)."
    )
    rationale_decision = (
        "The platform's only way in is the edge Gateway served by Cilium "
        "(io.cilium/gateway-controller), which replaced ingress-nginx (ADR 0020): the controller "
        "workload is an error; the namespace, its IngressClasses, Ingresses of those classes and the "
        "admission webhook are warnings."
    )
    remediation = (
        "Move the remaining Ingress routes to HTTPRoutes on the edge Gateway, then uninstall "
        "ingress-nginx: its controller, IngressClass, ValidatingWebhookConfiguration "
        "ingress-nginx-admission and the ingress-nginx namespace."
    )
    requires = (AnyOf(kinds.NAMESPACE, kinds.INGRESS_CLASS, kinds.INGRESS, kinds.DEPLOYMENT, kinds.DAEMONSET,
                      name="where ingress-nginx shows"),)
    uses = (kinds.VALIDATING_WEBHOOK_CONFIGURATION,)
    facts = (
        Fact(
            "ingress-nginx registers IngressClass controller k8s.io/ingress-nginx (default class "
            "name nginx) and runs Deployment ingress-nginx-controller in namespace ingress-nginx "
            "(labels app.kubernetes.io/name=ingress-nginx, app.kubernetes.io/component=controller).",
            "ingress-nginx chart 4.x / controller 1.x (rendered output)",
            "https://github.com/kubernetes/ingress-nginx/tree/main/charts/ingress-nginx",
        ),
        Fact(
            "Cilium's Gateway API implementation registers GatewayClass controllerName io.cilium/gateway-controller.",
            "Cilium 1.13+",
            "https://docs.cilium.io/en/stable/network/servicemesh/gateway-api/gateway-api/",
        ),
    )
    references = (
        "https://kubernetes.github.io/ingress-nginx/deploy/",
        "https://gateway-api.sigs.k8s.io/guides/migrating-from-ingress/",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        namespace = snapshot.get(kinds.NAMESPACE, None, NAMESPACE)
        if namespace is not None:
            ctx.examined(namespace)
            yield self.finding(namespace, "ingress-nginx's namespace is still present", Severity.WARNING)
        nginx_classes = {DEFAULT_CLASS}
        for ingress_class in snapshot.of_kind(kinds.INGRESS_CLASS):
            ctx.examined(ingress_class)
            if ingress_class.spec.get("controller") != CONTROLLER:
                nginx_classes.discard(ingress_class.name)
                continue
            nginx_classes.add(ingress_class.name)
            default = ingress_class.annotations.get("ingressclass.kubernetes.io/is-default-class") == "true"
            yield self.finding(
                ingress_class,
                f"IngressClass for controller {CONTROLLER}"
                + (" (the cluster's default class: Ingresses without a class go to it)" if default else ""),
                Severity.WARNING,
            )
        for workload in snapshot.of_kind(kinds.DEPLOYMENT, kinds.DAEMONSET):
            if _is_controller(workload):
                ctx.examined(workload)
                yield self.finding(
                    workload,
                    "ingress-nginx controller: a second entrance beside the edge Gateway",
                )
        for ingress in snapshot.of_kind(kinds.INGRESS):
            class_name = ingress.spec.get("ingressClassName")
            legacy = ingress.annotations.get(LEGACY_CLASS_ANNOTATION)
            chosen = class_name if isinstance(class_name, str) else legacy if isinstance(legacy, str) else None
            if chosen in nginx_classes:
                ctx.examined(ingress)
                yield self.finding(
                    ingress,
                    f"Ingress of class {chosen!r} (ingress-nginx): publish it as an HTTPRoute on the edge Gateway",
                    Severity.WARNING,
                )
        for webhook in snapshot.of_kind(kinds.VALIDATING_WEBHOOK_CONFIGURATION):
            if webhook.name != WEBHOOK_NAME and webhook.labels.get("app.kubernetes.io/name") != "ingress-nginx":
                continue
            ctx.examined(webhook)
            policies = {
                as_str(as_mapping(hook).get("failurePolicy"), "Fail") for hook in as_list(webhook.raw.get("webhooks"))
            }
            blocking = ""
            if "Fail" in policies:
                blocking = " with failurePolicy Fail: Ingress writes fail once its Service is gone"
            yield self.finding(webhook, f"ingress-nginx admission webhook{blocking}", Severity.WARNING)
