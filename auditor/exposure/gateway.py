"""Gateways: their controller, the data-plane Service the controller makes, listeners and route attachment.

The Service a Gateway controller creates is what makes a Gateway reachable,
and offline input does not hold it: it is derived here from the controller's
configuration (notes/facts.md section 3), so the LoadBalancer and L2 rules
see it before anything is applied.

- Cilium (`io.cilium/gateway-controller`): `cilium-gateway-<gateway>` in the
  Gateway's namespace, labelled `gateway.networking.k8s.io/gateway-name`.
  Type LoadBalancer, or `spec.service.type` of the GatewayClass's
  CiliumGatewayClassConfig (1.18+); in hostNetwork mode
  (`gateway-api-hostnetwork-enabled`) ClusterIP up to 1.19 and NodePort from
  1.20 (facts X5), Envoy listening on the nodes' addresses. ETP from the
  CiliumGatewayClassConfig, else `gateway-api-service-externaltrafficpolicy`
  (Helm `gatewayAPI.externalTrafficPolicy`, default Cluster).
- Envoy Gateway (`gateway.envoyproxy.io/gatewayclass-controller`): the
  EnvoyProxy of the Gateway's `infrastructure.parametersRef` or the class's
  `parametersRef`; `envoyService.type` default LoadBalancer and
  `envoyService.externalTrafficPolicy` default Local; the Service lives in
  the controller's namespace (or the Gateway's, in Gateway Namespace Mode),
  labelled `gateway.envoyproxy.io/owning-gateway-name` / `-namespace`.

Attachment follows the Gateway API: a parentRef names a Gateway (and
optionally a listener by `sectionName` or `port`); the listener must allow the
route's kind (its `allowedRoutes.kinds`, else the kinds of its protocol) and
namespace (`allowedRoutes.namespaces.from`, default Same), and its hostname
must intersect the route's hostnames.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor import kinds
from auditor.exposure.model import Detached, Evidence, ListenerHop
from auditor.model import K8sObject, ObjectRef, as_list, as_mapping, as_str, string_labels
from auditor.selectors import selector_matches
from auditor.snapshot import Snapshot
from auditor.versions import Version

CILIUM_CONTROLLER = "io.cilium/gateway-controller"
ENVOY_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
CILIUM_DEFAULT_CLASS = "cilium"
GATEWAY_API_GROUP = "gateway.networking.k8s.io"
ENVOY_GROUP = "gateway.envoyproxy.io"
CILIUM_GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name"
CILIUM_OWNING_GATEWAY_LABEL = "io.cilium.gateway/owning-gateway"
ENVOY_GATEWAY_NAME_LABEL = "gateway.envoyproxy.io/owning-gateway-name"
ENVOY_GATEWAY_NAMESPACE_LABEL = "gateway.envoyproxy.io/owning-gateway-namespace"
ENVOY_DEFAULT_NAMESPACE = "envoy-gateway-system"
# The first Cilium line whose hostNetwork Gateway Service is NodePort (ClusterIP before; facts X5),
# and the first that implements TCPRoute/UDPRoute (cilium/cilium#46184; facts X9).
HOST_NETWORK_NODEPORT_SINCE: Version = (1, 20, 0)
CILIUM_L4_ROUTES_SINCE: Version = (1, 20, 0)

ROUTE_KINDS = {
    kinds.HTTP_ROUTE: "HTTPRoute", kinds.GRPC_ROUTE: "GRPCRoute", kinds.TLS_ROUTE: "TLSRoute",
    kinds.TCP_ROUTE: "TCPRoute", kinds.UDP_ROUTE: "UDPRoute",
}
# The route kinds a listener accepts when its allowedRoutes.kinds is empty, by protocol
# (Gateway API v1 ListenerStatus.supportedKinds; GRPCRoute is served on HTTP/HTTPS listeners).
_PROTOCOL_KINDS = {
    "HTTP": ("HTTPRoute", "GRPCRoute"), "HTTPS": ("HTTPRoute", "GRPCRoute"), "TLS": ("TLSRoute",),
    "TCP": ("TCPRoute",), "UDP": ("UDPRoute",),
}


def class_name(gateway: K8sObject) -> str | None:
    value = gateway.spec.get("gatewayClassName")
    return value if isinstance(value, str) and value else None


def class_controller(gateway_class: K8sObject) -> str | None:
    value = gateway_class.spec.get("controllerName")
    return value if isinstance(value, str) and value else None


def gateway_class(snapshot: Snapshot, gateway: K8sObject) -> K8sObject | None:
    name = class_name(gateway)
    return snapshot.get(kinds.GATEWAY_CLASS, None, name) if name else None


def served_by_cilium(snapshot: Snapshot, gateway: K8sObject) -> bool | None:
    """Whether Cilium's controller serves this Gateway: True/False, None when the input cannot tell.

    Decided by the GatewayClass's controllerName; a class absent from input
    that does not list GatewayClasses is judged by name (`cilium`, the class
    the chart creates), which is a guess, hence None for other names.
    """
    found = gateway_class(snapshot, gateway)
    if found is not None:
        return class_controller(found) == CILIUM_CONTROLLER
    if class_name(gateway) == CILIUM_DEFAULT_CLASS:
        return True
    return None


def controller_of(snapshot: Snapshot, gateway: K8sObject) -> str:
    """`cilium`, `envoy-gateway`, another class's controllerName, or "" when the input cannot tell."""
    found = gateway_class(snapshot, gateway)
    controller = class_controller(found) if found is not None else None
    if controller == CILIUM_CONTROLLER or (found is None and class_name(gateway) == CILIUM_DEFAULT_CLASS):
        return "cilium"
    if controller == ENVOY_GATEWAY_CONTROLLER:
        return "envoy-gateway"
    return controller or ""


def listeners(gateway: K8sObject) -> list[tuple[int, dict[str, Any]]]:
    """(position in spec.listeners, listener) for every listener that is a mapping."""
    raw = as_list(gateway.spec.get("listeners"))
    return [(index, listener) for index, listener in enumerate(raw) if isinstance(listener, dict)]


def listener_label(listener: Mapping[str, Any], index: int) -> str:
    """`websecure (HTTPS:443)` for messages."""
    name = as_str(listener.get("name")) or f"#{index + 1}"
    protocol = as_str(listener.get("protocol")) or "?"
    port = listener.get("port")
    return f"{name} ({protocol}:{port})" if isinstance(port, int) else f"{name} ({protocol})"


def listener_hops(gateway: K8sObject, controller: str) -> list[tuple[int, ListenerHop]]:
    """(position in spec.listeners, hop) of every listener with a port."""
    hops = []
    for index, listener in listeners(gateway):
        port = listener.get("port")
        if not isinstance(port, int) or isinstance(port, bool):
            continue
        hostname = listener.get("hostname")
        hops.append((index, ListenerHop(
            gateway=gateway.ref, name=as_str(listener.get("name")) or f"#{index + 1}",
            protocol=as_str(listener.get("protocol")) or "?", port=port,
            hostname=hostname if isinstance(hostname, str) and hostname else None,
            evidence=Evidence(gateway.ref, gateway.source, f"spec.listeners[{index}]"), controller=controller,
        )))
    return hops


# --- the data-plane Service a controller makes ------------------------------------------


@dataclass(frozen=True, slots=True)
class DataPlane:
    """What the controller's configuration says about a Gateway's Service."""

    name: str
    namespace: str | None
    type: str  # LoadBalancer, NodePort, ClusterIP
    external_traffic_policy: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    load_balancer_class: str | None
    why: str  # where the type and ETP come from
    evidence: Evidence
    host_network: bool = False
    exact_name: bool = True  # False when the controller adds a hash the input cannot tell


@dataclass(frozen=True, slots=True)
class CiliumGatewaySettings:
    """The Cilium configuration a Gateway's Service depends on, each with where it comes from."""

    host_network: bool | None
    host_network_why: str
    external_traffic_policy: str
    external_traffic_policy_why: str
    version: Version | None
    version_why: str


def _infrastructure(gateway: K8sObject) -> tuple[dict[str, str], dict[str, str]]:
    infrastructure = as_mapping(gateway.spec.get("infrastructure"))
    return string_labels(as_mapping(infrastructure.get("labels"))), string_labels(
        as_mapping(infrastructure.get("annotations")))


def _parameters(snapshot: Snapshot, ref: Any, gk: str, default_namespace: str | None) -> K8sObject | None:
    ref = as_mapping(ref)
    group, kind = gk.split(".", 1)[1], gk.split(".", 1)[0]
    if as_str(ref.get("group")) != group or as_str(ref.get("kind")) != kind:
        return None
    name = as_str(ref.get("name"))
    namespace = as_str(ref.get("namespace")) or default_namespace
    return snapshot.get(gk, namespace, name) if name else None


def cilium_data_plane(snapshot: Snapshot, gateway: K8sObject, settings: CiliumGatewaySettings) -> DataPlane:
    """The Service Cilium's operator creates for `gateway` (translator `toServiceType` and its ETP)."""
    labels, annotations = _infrastructure(gateway)
    labels = {**labels, CILIUM_GATEWAY_NAME_LABEL: gateway.name, CILIUM_OWNING_GATEWAY_LABEL: gateway.name}
    found_class = gateway_class(snapshot, gateway)
    config = _parameters(snapshot, found_class.spec.get("parametersRef"), kinds.CILIUM_GATEWAY_CLASS_CONFIG,
                         None) if found_class is not None else None
    service_spec = as_mapping(config.spec.get("service")) if config is not None else {}
    etp, etp_why = settings.external_traffic_policy, settings.external_traffic_policy_why
    if config is not None and service_spec:
        # The CRD defaults externalTrafficPolicy to Cluster, so a config with spec.service wins (facts 3.1).
        etp = as_str(service_spec.get("externalTrafficPolicy")) or "Cluster"
        etp_why = f"CiliumGatewayClassConfig {config.namespace}/{config.name} spec.service"
    kind = as_str(service_spec.get("type")) or "LoadBalancer"
    why = (f"Cilium's default for a Gateway ({kind})" if not service_spec.get("type")
           else f"spec.service.type of CiliumGatewayClassConfig {config.namespace}/{config.name}" if config else "")
    if settings.host_network:
        since = settings.version is not None and settings.version >= HOST_NETWORK_NODEPORT_SINCE
        kind, etp = ("NodePort" if since else "ClusterIP"), "Cluster"
        why = (f"hostNetwork mode ({settings.host_network_why}) on {settings.version_why}: "
               f"{kind} (ClusterIP up to 1.19, NodePort from 1.20)")
        etp_why = "ETP is not set in hostNetwork mode"
    name = f"cilium-gateway-{gateway.name}"
    return DataPlane(
        name=name, namespace=gateway.namespace, type=kind, external_traffic_policy=etp, labels=labels,
        annotations=annotations, load_balancer_class=as_str(service_spec.get("loadBalancerClass")) or None,
        why=f"{why}; externalTrafficPolicy {etp} ({etp_why})", host_network=bool(settings.host_network),
        evidence=Evidence(gateway.ref, gateway.source, "spec.gatewayClassName", note=why),
        exact_name=len(name) <= 63,
    )


def envoy_controller_namespace(snapshot: Snapshot) -> tuple[str | None, bool]:
    """(namespace of Envoy Gateway's controller, whether it runs in Gateway Namespace Mode)."""
    for release in snapshot.of_kind(kinds.HELM_RELEASE):
        if release.name not in ("envoy-gateway", "eg", "gateway-helm"):
            continue
        deploy = as_mapping(as_mapping(as_mapping(as_mapping(as_mapping(
            release.spec.get("values")).get("config")).get("envoyGateway")).get("provider")).get("kubernetes"))
        namespace = as_str(release.spec.get("targetNamespace")) or release.namespace
        return namespace, as_str(as_mapping(deploy.get("deploy")).get("type")) == "GatewayNamespace"
    for deployment in snapshot.of_kind(kinds.DEPLOYMENT):
        if deployment.name == "envoy-gateway":
            return deployment.namespace, False
    return None, False


def envoy_data_plane(snapshot: Snapshot, gateway: K8sObject) -> DataPlane:
    """The Service Envoy Gateway creates for `gateway`, from its EnvoyProxy (defaults LoadBalancer, Local)."""
    labels, annotations = _infrastructure(gateway)
    labels = {**labels, ENVOY_GATEWAY_NAME_LABEL: gateway.name, ENVOY_GATEWAY_NAMESPACE_LABEL: gateway.namespace or ""}
    proxy = _parameters(snapshot, as_mapping(gateway.spec.get("infrastructure")).get("parametersRef"),
                        kinds.ENVOY_PROXY, gateway.namespace)
    found_class = gateway_class(snapshot, gateway)
    if proxy is None and found_class is not None:
        proxy = _parameters(snapshot, found_class.spec.get("parametersRef"), kinds.ENVOY_PROXY, None)
    service = as_mapping(as_mapping(as_mapping(proxy.spec.get("provider")).get("kubernetes")).get(
        "envoyService")) if proxy is not None else {}
    kind = as_str(service.get("type")) or "LoadBalancer"
    etp = as_str(service.get("externalTrafficPolicy")) or "Local"
    annotations = {**annotations, **string_labels(as_mapping(service.get("annotations")))}
    origin = f"EnvoyProxy {proxy.namespace}/{proxy.name}" if proxy is not None else "no EnvoyProxy in the input"
    why = (f"type {kind}, externalTrafficPolicy {etp} ({origin} envoyService; Envoy Gateway's defaults are "
           "LoadBalancer and Local)")
    controller_namespace, gateway_namespace_mode = envoy_controller_namespace(snapshot)
    namespace = gateway.namespace if gateway_namespace_mode else controller_namespace or ENVOY_DEFAULT_NAMESPACE
    return DataPlane(
        name=f"envoy-{gateway.namespace}-{gateway.name}", namespace=namespace, type=kind,
        external_traffic_policy=etp, labels=labels, annotations=annotations,
        load_balancer_class=as_str(service.get("loadBalancerClass")) or None, why=why,
        evidence=Evidence(proxy.ref if proxy is not None else gateway.ref,
                          proxy.source if proxy is not None else gateway.source,
                          "spec.provider.kubernetes.envoyService" if proxy is not None else "spec.gatewayClassName",
                          note=why),
        exact_name=False,
    )


def is_data_plane_of(service: K8sObject, gateway: K8sObject, controller: str) -> bool:
    """Whether a Service of the input is the data-plane Service of `gateway` (by the controller's labels)."""
    labels = service.labels
    if controller == "envoy-gateway":
        return labels.get(ENVOY_GATEWAY_NAME_LABEL) == gateway.name and labels.get(
            ENVOY_GATEWAY_NAMESPACE_LABEL) == gateway.namespace
    if service.namespace != gateway.namespace:
        return False
    return gateway.name in (labels.get(CILIUM_GATEWAY_NAME_LABEL), labels.get(CILIUM_OWNING_GATEWAY_LABEL)) or (
        controller == "cilium" and service.name == f"cilium-gateway-{gateway.name}")


# --- route attachment -------------------------------------------------------------------


def _hostname_matches(pattern: str, hostname: str) -> bool:
    """Gateway API hostname intersection: `*.example.com` matches any name below example.com."""
    pattern, hostname = pattern.lower(), hostname.lower()
    if pattern == hostname:
        return True
    if pattern.startswith("*."):
        return hostname.endswith(pattern[1:]) or (hostname.startswith("*.") and hostname.endswith(pattern[1:]))
    if hostname.startswith("*."):
        return pattern.endswith(hostname[1:])
    return False


def hostnames_intersect(listener: str | None, route: tuple[str, ...]) -> bool:
    if listener is None or not route:
        return True
    return any(_hostname_matches(listener, name) for name in route)


def _allowed_kinds(listener: Mapping[str, Any]) -> tuple[str, ...]:
    declared = as_list(as_mapping(listener.get("allowedRoutes")).get("kinds"))
    named = tuple(as_str(as_mapping(entry).get("kind")) for entry in declared if as_str(as_mapping(entry).get("kind")))
    return named or _PROTOCOL_KINDS.get(as_str(listener.get("protocol")).upper(), ())


def namespace_allowed(listener: Mapping[str, Any], gateway: K8sObject, route_namespace: str | None,
                      namespace_labels: Mapping[str, Mapping[str, str]] | None) -> tuple[bool | None, str]:
    """Whether the listener accepts routes from `route_namespace` (None: the input cannot tell)."""
    namespaces = as_mapping(as_mapping(listener.get("allowedRoutes")).get("namespaces"))
    origin = as_str(namespaces.get("from")) or "Same"  # the CRD default, absent from offline manifests
    if origin == "All":
        return True, ""
    if origin == "Same":
        same = route_namespace == gateway.namespace
        return same, "" if same else f"allowedRoutes.namespaces.from Same (the Gateway's namespace {gateway.namespace})"
    if origin == "Selector":
        if namespace_labels is None or route_namespace is None or route_namespace not in namespace_labels:
            return None, f"allowedRoutes selects namespaces by label and the input holds no Namespace {route_namespace}"
        allowed = selector_matches(namespaces.get("selector"), namespace_labels[route_namespace])
        return allowed, "" if allowed else "allowedRoutes.namespaces.selector does not select its namespace"
    return False, f"allowedRoutes.namespaces.from {origin!r} is not a Gateway API value"


def parent_refs(route: K8sObject) -> list[tuple[int, dict[str, Any]]]:
    """(position, parentRef) of the route's references to Gateways."""
    found = []
    for index, ref in enumerate(as_list(route.spec.get("parentRefs"))):
        ref = as_mapping(ref)
        if (as_str(ref.get("group")) or GATEWAY_API_GROUP) != GATEWAY_API_GROUP:
            continue
        if (as_str(ref.get("kind")) or "Gateway") != "Gateway" or not as_str(ref.get("name")):
            continue
        found.append((index, ref))
    return found


def route_hostnames(route: K8sObject) -> tuple[str, ...]:
    return tuple(h for h in as_list(route.spec.get("hostnames")) if isinstance(h, str) and h)


@dataclass(frozen=True, slots=True)
class Attachment:
    """Where one parentRef attaches a route: the listener positions, or why none (`reason`, `why`)."""

    positions: tuple[int, ...]
    reason: Detached | None = None
    why: str = ""
    verified: bool = True  # False when a listener's allowedRoutes could not be judged (namespace labels unknown)


def attaches(route_kind: str, route: K8sObject, ref: Mapping[str, Any], gateway: K8sObject,
             namespace_labels: Mapping[str, Mapping[str, str]] | None) -> Attachment:
    """The listener positions `ref` attaches `route` to, and why none when none does.

    The route-level reason follows the Gateway API's `Accepted` reasons: no listener picked by
    sectionName/port is NoMatchingParent; no picked listener allowing the route's kind and namespace
    is NotAllowedByListeners; some allowing it but none whose hostname intersects the route's is
    NoMatchingListenerHostname (apis/v1/shared_types.go, RouteConditionReason; notes/facts.md §4).
    """
    section, port = as_str(ref.get("sectionName")), ref.get("port")
    hostnames = route_hostnames(route)
    attached: list[int] = []
    reasons: list[str] = []
    refused: set[Detached] = set()
    unknown = False
    for index, listener in listeners(gateway):
        label = listener_label(listener, index)
        if section and as_str(listener.get("name")) != section:
            continue
        if isinstance(port, int) and listener.get("port") != port:
            continue
        if route_kind not in _allowed_kinds(listener):
            reasons.append(f"listener {label} does not accept {route_kind}")
            refused.add(Detached.KIND_NOT_ALLOWED)
            continue
        allowed, why = namespace_allowed(listener, gateway, route.namespace, namespace_labels)
        if not allowed:
            reasons.append(f"listener {label}: {why}")
            refused.add(Detached.NAMESPACE_NOT_ALLOWED)
            unknown = unknown or allowed is None
            continue
        hostname = listener.get("hostname")
        if isinstance(hostname, str) and hostname and not hostnames_intersect(hostname, hostnames):
            reasons.append(f"listener {label}: hostname {hostname} matches none of {', '.join(hostnames)}")
            refused.add(Detached.NO_MATCHING_HOSTNAME)
            continue
        attached.append(index)
    if attached:
        return Attachment(tuple(attached))
    if not reasons:
        wanted = f"sectionName {section}" if section else f"port {port}" if isinstance(port, int) else "a listener"
        return Attachment((), Detached.NO_MATCHING_PARENT,
                          f"Gateway {gateway.namespace}/{gateway.name} has no listener matching {wanted}")
    reason = next(r for r in (Detached.NO_MATCHING_HOSTNAME, Detached.NAMESPACE_NOT_ALLOWED, Detached.KIND_NOT_ALLOWED)
                  if r in refused)
    return Attachment((), reason, "; ".join(reasons), verified=not unknown)


def parent_display(route: K8sObject, ref: Mapping[str, Any]) -> str:
    namespace = as_str(ref.get("namespace")) or route.namespace
    section = as_str(ref.get("sectionName"))
    return f"Gateway/{namespace}/{as_str(ref.get('name'))}" + (f"#{section}" if section else "")


def parent_gateway(snapshot: Snapshot, route: K8sObject, ref: Mapping[str, Any]) -> K8sObject | None:
    return snapshot.get(kinds.GATEWAY, as_str(ref.get("namespace")) or route.namespace, as_str(ref.get("name")))


def backend_refs(route: K8sObject) -> list[tuple[str, dict[str, Any]]]:
    """(path, backendRef) of every Service backend of the route's rules."""
    found = []
    for rule_index, rule in enumerate(as_list(route.spec.get("rules"))):
        for ref_index, ref in enumerate(as_list(as_mapping(rule).get("backendRefs"))):
            ref = as_mapping(ref)
            if (as_str(ref.get("kind")) or "Service") != "Service" or as_str(ref.get("group")) not in ("", "core"):
                continue
            if not as_str(ref.get("name")):
                continue
            found.append((f"spec.rules[{rule_index}].backendRefs[{ref_index}]", ref))
    return found


def reference_granted(grants: list[K8sObject], route_kind: str, route: K8sObject, name: str) -> bool:
    """Whether one of `grants` (the ReferenceGrants of the backend's namespace) lets `route` reach
    Service `name` there."""
    for grant in grants:
        sources = [as_mapping(entry) for entry in as_list(grant.spec.get("from"))]
        targets = [as_mapping(entry) for entry in as_list(grant.spec.get("to"))]
        from_ok = any(as_str(s.get("group")) == GATEWAY_API_GROUP and as_str(s.get("kind")) == route_kind
                      and as_str(s.get("namespace")) == route.namespace for s in sources)
        to_ok = any(as_str(t.get("group")) in ("", "core") and as_str(t.get("kind")) == "Service"
                    and as_str(t.get("name")) in ("", name) for t in targets)
        if from_ok and to_ok:
            return True
    return False


def ref_of(kind: str, namespace: str | None, name: str) -> ObjectRef:
    return ObjectRef(kind, namespace, name, "v1" if kind == "Service" else f"{GATEWAY_API_GROUP}/v1")
