"""The exposure model's types: every way traffic from outside the cluster reaches a pod.

An `Entrance` is one way in: an address (a LoadBalancer IP, every node
address, an external IP), a port and protocol, how the address is announced
on the network, what forwards it (a Gateway listener and route), the backend
Services and the workloads behind them. Every piece carries the `Evidence` it
was read from (an object, file:line, the field), so a report or a trace can
say why. `ExposureModel` holds them all, sorted by address then port, with
indexes for the questions reports and `audit trace` ask.

All types are small frozen dataclasses; building is in `auditor.exposure.build`.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

from auditor.exposure.services import ServicePort
from auditor.model import ObjectRef, Source


class Channel(str, enum.Enum):
    """The kind of door: what opens the address and port."""

    LOAD_BALANCER = "load-balancer"  # a Service of type LoadBalancer: its LoadBalancer IP
    NODE_PORT = "node-port"  # a node port (NodePort Service, or one a LoadBalancer Service allocates)
    EXTERNAL_IP = "external-ip"  # a Service's spec.externalIPs
    HOST_PORT = "host-port"  # a container's hostPort
    HOST_NETWORK = "host-network"  # a port of a hostNetwork pod, or of a Gateway in hostNetwork mode

    def __str__(self) -> str:
        return self.value


class Declared(str, enum.Enum):
    """How the input shows the object that opens the door."""

    OBJECT = "object"  # an object of the input (a Service, a Deployment, a Gateway)
    HELM_VALUES = "helm-values"  # values that render it (HelmRelease, Argo CD Application, operator resource)
    CONTROLLER = "controller"  # a controller makes it from the input's objects (a Gateway's Service)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where one piece of the model was read: the object, file and line, the field, and a remark."""

    ref: ObjectRef
    source: Source | None
    field: str = ""
    note: str = ""

    def describe(self) -> str:
        """`Service mail/smtp spec.type (dump.json:12)`."""
        where = f" ({self.source})" if self.source else ""
        name = f"{self.ref.namespace}/{self.ref.name}" if self.ref.namespace else self.ref.name
        at = f" {self.field}" if self.field else ""
        return f"{self.ref.kind} {name}{at}{where}"


class AddressKind(str, enum.Enum):
    LOAD_BALANCER_IP = "load-balancer-ip"
    NODE_IPS = "node-ips"  # every node address (NodePort, hostPort, hostNetwork)
    EXTERNAL_IP = "external-ip"
    HOST_IP = "host-ip"  # a hostPort bound to one hostIP

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Address:
    """Where the door is. `value` is the IP when the input shows it (None: not known yet)."""

    kind: AddressKind
    value: str | None
    detail: str  # how it is known: "status.loadBalancer.ingress", "from pool default-pool", ...
    evidence: Evidence | None = None
    pools: tuple[ObjectRef, ...] = ()  # LB-IPAM pools that can give it
    nodes: tuple[str, ...] = ()  # NODE_IPS: the node addresses the input shows

    @property
    def display(self) -> str:
        if self.value:
            return self.value
        if self.kind is AddressKind.NODE_IPS:
            return f"node IPs ({', '.join(self.nodes)})" if self.nodes else "every node IP"
        if self.pools:
            return f"an IP from pool {', '.join(p.name for p in self.pools)}"
        return f"({self.detail})"

    @property
    def sort_key(self) -> tuple[int, int, int, str]:
        """Known IPs first, by family and value; then node addresses; then addresses not known yet."""
        if self.value:
            try:
                ip = ipaddress.ip_address(self.value)
                return (0, ip.version, int(ip), self.value)
            except ValueError:
                return (1, 0, 0, self.value)
        return (2 if self.kind is AddressKind.NODE_IPS else 3, 0, 0, self.display)


class AnnouncementKind(str, enum.Enum):
    L2 = "l2"  # a CiliumL2AnnouncementPolicy (ARP/NDP from one elected node)
    BGP = "bgp"  # a CiliumBGPAdvertisement

    def __str__(self) -> str:
        return self.value


class AnnouncementState(str, enum.Enum):
    ANNOUNCED = "announced"
    NOT_ANNOUNCED = "not-announced"
    UNKNOWN = "unknown"  # the input does not show the configuration or the policies
    NOT_NEEDED = "not-needed"  # the nodes' own addresses: the LAN routes them already

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Announcement:
    """One object that announces an address, and how."""

    kind: AnnouncementKind
    by: ObjectRef
    evidence: Evidence
    interfaces: tuple[str, ...] = ()  # L2 spec.interfaces (regular expressions; none: every interface)
    nodes: str = ""  # which nodes may announce (L2 nodeSelector), described


@dataclass(frozen=True, slots=True)
class Announcing:
    """How an address is announced: by what, or why not."""

    state: AnnouncementState
    by: tuple[Announcement, ...] = ()
    why: str = ""


NOT_NEEDED = Announcing(AnnouncementState.NOT_NEEDED, why="the nodes' own addresses")


@dataclass(frozen=True, slots=True)
class ListenerHop:
    """The Gateway listener that takes the traffic."""

    gateway: ObjectRef
    name: str
    protocol: str
    port: int
    hostname: str | None
    evidence: Evidence
    controller: str  # "cilium", "envoy-gateway", the class's controllerName, or "" when unknown


@dataclass(frozen=True, slots=True)
class RouteHop:
    """The route that forwards it (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute)."""

    kind: str
    ref: ObjectRef
    hostnames: tuple[str, ...]
    evidence: Evidence
    forwards: bool = True
    why: str = ""  # when it does not forward


class BackendProblem(str, enum.Enum):
    """Why a route's backendRef sends nothing (Gateway API `ResolvedRefs` False, or a port Cilium drops)."""

    NO_SERVICE = "no-service"  # the Service does not exist (reason BackendNotFound)
    NOT_PERMITTED = "not-permitted"  # another namespace, and no ReferenceGrant there allows it (RefNotPermitted)
    NO_PORT = "no-port"  # a Service backendRef without a port number (the CRD's CEL rule rejects it)
    PORT_NOT_EXPOSED = "port-not-exposed"  # the Service has no port of that number

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Backend:
    """A Service traffic is sent to, and the port."""

    service: ObjectRef
    port: int | str | None
    evidence: Evidence  # a route's backendRef: the route, `spec.rules[i].backendRefs[j]`, and why not (`note`)
    exists: bool = True  # the Service is in the input (or made by a controller), and the route may reach it
    problem: BackendProblem | None = None  # why this backend sends nothing (the first verified one)
    verified: bool = True  # False: the input cannot tell (the Service may be rendered from elsewhere)


@dataclass(frozen=True, slots=True)
class Workload:
    """A workload whose pods receive the traffic (the top-level owner: Deployment, DaemonSet, ...)."""

    ref: ObjectRef
    evidence: Evidence


@dataclass(frozen=True, slots=True)
class Subject:
    """The object a finding about a way in is about: what an exception entry matches."""

    ref: ObjectRef
    source: Source | None
    labels: tuple[tuple[str, str], ...]
    declared: Declared


@dataclass(frozen=True, slots=True)
class Entrance:
    """One way in from outside the cluster."""

    channel: Channel
    subject: Subject
    rule: str  # the rule that judges this way in (its findings carry the verdict)
    address: Address
    port: int | None  # the port on the address (None: allocated when applied, e.g. a NodePort)
    protocol: str
    evidence: Evidence  # what opens it (`spec.type`, `ports[0].hostPort`, a listener)
    announcing: Announcing = NOT_NEEDED
    listener: ListenerHop | None = None
    route: RouteHop | None = None
    backends: tuple[Backend, ...] = ()
    workloads: tuple[Workload, ...] = ()
    service_port: int | None = None  # the Service port behind a node port
    external_traffic_policy: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def port_display(self) -> str:
        return f"{self.port if self.port is not None else '?'}/{self.protocol}"

    @property
    def key(self) -> str:
        """A stable identity: channel, subject, address, port, listener and route."""
        parts = [str(self.channel), self.subject.ref.display, self.address.display, self.port_display]
        if self.listener is not None:
            parts.append(f"{self.listener.gateway.display}#{self.listener.name}")
        if self.route is not None:
            parts.append(self.route.ref.display)
        return " ".join(parts)

    @property
    def sort_key(self) -> tuple[tuple[int, int, int, str], int, str, str]:
        return (self.address.sort_key, self.port if self.port is not None else 1 << 20, self.protocol, self.key)


class VerdictKind(str, enum.Enum):
    SANCTIONED = "sanctioned"  # the posture allows it (which part: `by`)
    EXCEPTED = "excepted"  # an exception entry covers its finding (entry `by`, its reason)
    DRIFT = "drift"  # its rule reports it (`rule`)
    UNJUDGED = "unjudged"  # its rule did not run (not selected, not run, or in error)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Verdict:
    """The verdict on a way in: sanctioned, excepted, drift or unjudged, the rule that decides it, and why."""

    kind: VerdictKind
    rule: str
    by: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class JudgedEntrance:
    """A way in with its verdict (and, in a fleet audit, its cluster)."""

    entrance: Entrance
    verdict: Verdict
    cluster: str | None = None  # in a fleet audit, the cluster it is in


@dataclass(frozen=True)
class ServiceView:
    """A Service as the model knows it: in the input, declared in Helm values, or made by a controller."""

    ref: ObjectRef
    declared: Declared
    subject: Subject
    type: str
    external_traffic_policy: str
    load_balancer_class: str | None
    ports: tuple[ServicePort, ...]
    evidence: Evidence  # where the type was read
    selector_labels: Mapping[str, str] = field(default_factory=dict)  # as Cilium's selectors see it
    labels_known: bool = True  # False for values-declared Services (the rendered labels are not all known)
    pod_selector: Mapping[str, str] | None = None
    requested_ips: tuple[tuple[str, str], ...] = ()  # (where, address) asked of LB-IPAM
    ingress: tuple[str, ...] = ()  # status.loadBalancer.ingress
    external_ips: tuple[str, ...] = ()
    allocates_node_ports: bool = True
    gateway: ObjectRef | None = None  # the Gateway this Service is the data plane of
    lb_ipam: bool = False  # LB-IPAM allocates its address
    announcing: Announcing = NOT_NEEDED
    addresses: tuple[Address, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GatewayView:
    """A Gateway: its controller, data-plane Service (or hostNetwork), and listeners."""

    ref: ObjectRef
    evidence: Evidence
    controller: str
    host_network: bool | None  # None: the input cannot tell
    host_network_why: str
    service: ObjectRef | None  # its data-plane Service (in the input or made by the controller)
    listeners: tuple[ListenerHop, ...]
    notes: tuple[str, ...] = ()


class Detached(str, enum.Enum):
    """Why a parentRef attaches a route to no listener (the route's `Accepted` False reason, Gateway API v1)."""

    NO_GATEWAY = "no-gateway"  # the Gateway does not exist (a controller then sets no status at all)
    NO_MATCHING_PARENT = "no-matching-parent"  # sectionName / port names no listener (NoMatchingParent)
    KIND_NOT_ALLOWED = "kind-not-allowed"  # no listener accepts the route's kind (NotAllowedByListeners)
    NAMESPACE_NOT_ALLOWED = "namespace-not-allowed"  # allowedRoutes.namespaces refuses it (NotAllowedByListeners)
    NO_MATCHING_HOSTNAME = "no-matching-hostname"  # the listeners' hostnames match none of its own

    def __str__(self) -> str:
        return self.value

    @property
    def condition(self) -> str:
        """The `Accepted` condition reason a Gateway API controller writes (none for a missing Gateway)."""
        return _DETACHED_CONDITIONS[self]


_DETACHED_CONDITIONS = {
    Detached.NO_GATEWAY: "", Detached.NO_MATCHING_PARENT: "NoMatchingParent",
    Detached.KIND_NOT_ALLOWED: "NotAllowedByListeners", Detached.NAMESPACE_NOT_ALLOWED: "NotAllowedByListeners",
    Detached.NO_MATCHING_HOSTNAME: "NoMatchingListenerHostname",
}


@dataclass(frozen=True, slots=True)
class Detachment:
    """One parentRef of a route that attaches it to no listener of its Gateway, and why."""

    parent: str  # `Gateway/ns/name#section`, as the parentRef names it
    gateway: ObjectRef  # the Gateway it names (in the input or not)
    reason: Detached
    why: str  # each listener considered and why it refuses, or why no listener was considered
    evidence: Evidence  # the route's `spec.parentRefs[i]`
    verified: bool = True  # False: the input cannot tell (the Gateway, or the namespace's labels, elsewhere)
    section: str | None = None  # the parentRef's sectionName
    port: int | None = None  # the parentRef's port


@dataclass(frozen=True)
class RouteView:
    """A route and what became of each of its parent references."""

    kind: str
    ref: ObjectRef
    evidence: Evidence
    hostnames: tuple[str, ...]
    attached: tuple[ListenerHop, ...]  # the listeners it attaches to
    unattached: tuple[Detachment, ...]  # each parentRef that attaches it to no listener, and why
    backends: tuple[Backend, ...]
    forwards: bool = True
    why: str = ""
