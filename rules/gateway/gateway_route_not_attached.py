"""gateway-route-not-attached: a route that a Gateway it names does not attach to any listener."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import AnyOf, Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, exposure, kinds

ROUTES = AnyOf(*kinds.ROUTE_KINDS, name="Gateway API routes")
SPEC = "https://gateway-api.sigs.k8s.io/reference/spec/"
SHARED_TYPES = "https://github.com/kubernetes-sigs/gateway-api/blob/main/apis/v1/shared_types.go"


def _message(detachment: exposure.Detachment, route: exposure.RouteView) -> str:
    condition = detachment.reason.condition
    what = f"{condition}: " if condition else ""
    still = ""
    if route.attached:
        listeners = ", ".join(f"{hop.gateway.namespace}/{hop.gateway.name}#{hop.name}" for hop in route.attached)
        still = f" (it attaches to {listeners} through its other parentRefs)"
    return (f"parentRef {detachment.parent} ({detachment.evidence.field}) attaches it to no listener: {what}"
            f"{detachment.why}{still}")


class GatewayRouteNotAttached(Rule):
    id = "gateway-route-not-attached"
    severity = Severity.ERROR
    title = "Route attached to no listener of a Gateway it names"
    rationale_fact = (
        "In Gateway API v1 a route attaches to a Gateway through a parentRef: sectionName names one "
        "listener and port all listeners on that port (unset: the whole Gateway), and the route is "
        "accepted when at least one of those listeners accepts it. A listener accepts a route whose kind "
        "its allowedRoutes.kinds (else its protocol) allows, from a namespace its "
        "allowedRoutes.namespaces allows (from Same by default, All, or a Selector of namespace labels), "
        "and whose hostnames intersect its own (a listener or route without hostnames matches all; "
        "`*.example.com` matches any name below example.com). Otherwise the route is detached "
        "(Accepted False: NoMatchingParent, NotAllowedByListeners or NoMatchingListenerHostname) and "
        "forwards nothing through that Gateway; a parentRef to a Gateway that does not exist gets no "
        "status at all."
    )
    rationale_decision = (
        "Every way in is traced through the exposure model (audit trace): a route that attaches nowhere "
        "is a broken hop, so it is an error, one finding per parentRef. A Gateway missing from offline "
        "input may live in another repository, and a listener that selects namespaces by label cannot be "
        "judged without the Namespace: those are unverified, and the verdict is not-run when nothing else "
        "is found."
    )
    remediation = (
        "Point the parentRef at an existing listener (sectionName is the listener's name, port its "
        "port), allow the route's namespace and kind in that listener's allowedRoutes (or move the "
        "route), and give the route a hostname the listener's hostname matches."
    )
    requires = (ROUTES,)
    uses = (kinds.GATEWAY, kinds.GATEWAY_CLASS, kinds.NAMESPACE)
    facts = (
        Fact(
            "parentRefs[].sectionName selects the listener of that name and parentRefs[].port every listener "
            "on that port (both: both must match); attachment succeeds when at least one selected listener "
            "accepts the route, otherwise the route is detached from that parent.",
            "Gateway API v1.0+ (port: standard from v1.1)",
            f"{SPEC}#parentreference",
            also=(SHARED_TYPES,),
        ),
        Fact(
            "allowedRoutes.namespaces.from defaults to Same (the Gateway's namespace); All admits every "
            "namespace, Selector the namespaces whose labels its selector matches; allowedRoutes.kinds, when "
            "empty, is the kinds the listener's protocol implies (HTTP/HTTPS: HTTPRoute, GRPCRoute; TLS: "
            "TLSRoute; TCP: TCPRoute; UDP: UDPRoute).",
            "Gateway API v1.0+",
            f"{SPEC}#allowedroutes",
            also=("https://github.com/kubernetes-sigs/gateway-api/blob/main/apis/v1/gateway_types.go",),
        ),
        Fact(
            "A route's hostnames must intersect the listener's: a listener or route without hostnames matches "
            "all, `*.example.com` matches `a.example.com` and `a.b.example.com` but not `example.com`; with no "
            "intersection the route is not accepted (NoMatchingListenerHostname).",
            "Gateway API v1.0+",
            f"{SPEC}#httproutespec",
            also=("https://github.com/kubernetes-sigs/gateway-api/blob/main/apis/v1/httproute_types.go",),
        ),
        Fact(
            "Route Accepted=False reasons: NotAllowedByListeners, NoMatchingListenerHostname, NoMatchingParent; "
            "a controller may set no status for a parentRef to a Gateway that does not exist.",
            "Gateway API v1.0+",
            SHARED_TYPES,
        ),
    )
    references = (
        "https://gateway-api.sigs.k8s.io/api-types/httproute/#attaching-to-gateways",
        "https://gateway-api.sigs.k8s.io/guides/multiple-ns/",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        findings: list[Finding] = []
        unverified: list[str] = []
        for route in ctx.exposures.routes:
            ctx.examined(route.ref)
            for detachment in route.unattached:
                if detachment.verified:
                    # Labels left to the engine, which reads them from the object at this source.
                    findings.append(Finding(object=route.ref, source=detachment.evidence.source,
                                            message=_message(detachment, route)))
                else:
                    unverified.append(f"{route.ref.display} parentRef {detachment.parent}: {detachment.why}")
        if unverified and not findings:
            raise NotRun("the input cannot tell whether these routes attach (a Gateway or Namespace it does not "
                         f"hold): {'; '.join(unverified[:5])}"
                         + (f"; and {len(unverified) - 5} more" if len(unverified) > 5 else ""))
        yield from findings
