"""gateway-route-backend-missing: a route backendRef to a Service or port that does not exist, or may not be reached."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import AnyOf, Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, kinds

ROUTES = AnyOf(*kinds.ROUTE_KINDS, name="Gateway API routes")
SPEC = "https://gateway-api.sigs.k8s.io/reference/spec/"


class GatewayRouteBackendMissing(Rule):
    id = "gateway-route-backend-missing"
    severity = Severity.ERROR
    title = "Route backendRef to a missing Service or port"
    rationale_fact = (
        "In Gateway API v1 a backendRef to a core Service must give the Service port (a CEL rule of the "
        "CRD rejects it otherwise); a backendRef to a Service in another namespace needs a ReferenceGrant "
        "in that namespace allowing the route's kind and namespace (ResolvedRefs False, RefNotPermitted), "
        "and one to a Service that does not exist resolves to nothing (BackendNotFound). The share of "
        "traffic meant for an invalid backend gets HTTP 500. Cilium's operator skips a backendRef without "
        "a port or whose Service does not exist; a rule left without backends answers 500 directly."
    )
    rationale_decision = (
        "A route that sends to nothing is a broken hop of the chain audit trace follows: every backendRef "
        "whose Service is missing, has no such port, has no port, or lies in another namespace without a "
        "ReferenceGrant is an error. Offline, a Service absent from the input is unverified when a Helm "
        "release or Argo CD Application deploys into its namespace (it may render it), and a missing "
        "ReferenceGrant is unverified when the input holds none at all; the verdict is not-run when only "
        "unverified ones are found."
    )
    remediation = (
        "Point the backendRef at an existing Service and one of its ports (port is the Service port, not "
        "the container's), or create the Service; for a Service in another namespace add a ReferenceGrant "
        "there whose from names the route's kind and namespace."
    )
    requires = (ROUTES,)
    uses = (kinds.SERVICE, kinds.REFERENCE_GRANT, kinds.GATEWAY, kinds.GATEWAY_CLASS, kinds.HELM_RELEASE,
            kinds.ARGO_APPLICATION)
    facts = (
        Fact(
            "A backendRef to a Service must have a port (CEL \"Must have port for Service reference\"); "
            "ResolvedRefs False reasons: RefNotPermitted (a cross-namespace reference without ReferenceGrant), "
            "BackendNotFound (the referent does not exist).",
            "Gateway API v1.0+",
            f"{SPEC}#backendobjectreference",
            also=("https://github.com/kubernetes-sigs/gateway-api/blob/main/apis/v1/object_reference_types.go",
                  "https://github.com/kubernetes-sigs/gateway-api/blob/main/apis/v1/shared_types.go"),
        ),
        Fact(
            "A reference to an object in another namespace is valid only when a ReferenceGrant in the "
            "target namespace allows it (from: group, kind and namespace of the route; to: the Service, by "
            "name or all).",
            "Gateway API v1.0+ (ReferenceGrant v1beta1)",
            "https://gateway-api.sigs.k8s.io/api-types/referencegrant/",
        ),
        Fact(
            "Invalid backendRefs get HTTP 500 for their share of the traffic (all of it when none is valid).",
            "Gateway API v1.0+",
            f"{SPEC}#httprouterule",
            also=("https://github.com/kubernetes-sigs/gateway-api/blob/main/apis/v1/httproute_types.go",),
        ),
        Fact(
            "Cilium's Gateway ingestion skips backendRefs without a port or to a Service that does not exist; "
            "a rule left without backends becomes a direct 500 response.",
            "Cilium 1.14+ (main branch read)",
            "https://github.com/cilium/cilium/blob/main/operator/pkg/model/ingestion/gateway.go",
        ),
    )
    references = ("https://gateway-api.sigs.k8s.io/guides/multiple-ns/#cross-namespace-routing",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        findings: list[Finding] = []
        unverified: list[str] = []
        for route in ctx.exposures.routes:
            ctx.examined(route.ref)
            for backend in route.backends:
                if backend.problem is None:
                    continue
                port = f" port {backend.port}" if backend.port is not None else ""
                text = (f"backendRef {backend.evidence.field} to Service {backend.service.namespace}/"
                        f"{backend.service.name}{port} sends nothing ({backend.problem}): {backend.evidence.note}")
                if backend.verified:
                    findings.append(Finding(object=route.ref, source=backend.evidence.source, message=text))
                else:
                    unverified.append(f"{route.ref.display} {text}")
        if unverified and not findings:
            raise NotRun("the input cannot tell whether these backends exist (they may be rendered or granted "
                         f"elsewhere): {'; '.join(unverified[:5])}"
                         + (f"; and {len(unverified) - 5} more" if len(unverified) > 5 else ""))
        yield from findings
