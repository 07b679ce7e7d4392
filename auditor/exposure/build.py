"""Building the exposure model of one snapshot, in time linear in its size.

Everything is indexed once: Services by namespace and name and by the
labels Gateway controllers put on their data-plane Services, pools by range,
L2 policies and BGP advertisements compiled into memoised selector sets,
workloads by namespace and pod label, ReferenceGrants by namespace. Each
object is then visited a bounded number of times; no step scans one kind
for every object of another.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from auditor import kinds
from auditor.cilium.config import CiliumConfig
from auditor.cilium.helm_values import merged_release_values
from auditor.exposure import gateway as gw
from auditor.exposure.announce import Announcers
from auditor.exposure.index import ExposureModel, ServicesByName, ServiceViews
from auditor.exposure.lines import KeyLines
from auditor.exposure.model import (
    NOT_NEEDED,
    Address,
    AddressKind,
    Announcing,
    Backend,
    BackendProblem,
    Channel,
    Declared,
    Detached,
    Detachment,
    Entrance,
    Evidence,
    GatewayView,
    ListenerHop,
    RouteHop,
    RouteView,
    ServiceView,
    Subject,
    Workload,
)
from auditor.exposure.pools import (
    RangeIndex,
    lb_ipam_serves,
    parse_address,
    pool_blocks,
    pool_disabled,
    requested_addresses,
    requested_ips,
)
from auditor.exposure.rules import (
    EXTERNAL_IPS_RULE,
    HOSTNETWORK_RULE,
    HOSTPORT_RULE,
    LB_RULE,
    NODEPORT_RULE,
)
from auditor.exposure.selection import (
    LB_POOL_SERVICES,
    SERVICE_NAME_LABEL,
    SERVICE_NAMESPACE_LABEL,
    SelectorSet,
    service_selector_labels,
)
from auditor.exposure.services import (
    EXPOSING_TYPES,
    ServicePort,
    allocates_node_ports,
    external_ips,
    external_traffic_policy,
    ingress_addresses,
    load_balancer_class,
    service_ports,
    service_type,
)
from auditor.exposure.settings import ExposureSettings, resolve_settings
from auditor.exposure.values import (
    EXPOSING_WORDS,
    DeclaredService,
    ReleaseValues,
    ValuesLayers,
    declared_services,
    dotted,
)
from auditor.exposure.workloads import WORKLOAD_KINDS, WorkloadIndex, ports_of
from auditor.model import K8sObject, ObjectRef, as_list, as_mapping, as_str, string_labels
from auditor.posture import Posture
from auditor.snapshot import Snapshot

# NodePort range default (kube-apiserver --service-node-port-range); Cilium does not bind a hostPort inside
# it (kubeproxy-free guide, "Container HostPort Support"; facts section 6).
NODE_PORT_RANGE = (30000, 32767)


def build(snapshot: Snapshot, cilium: CiliumConfig, posture: Posture, *, lines: KeyLines | None = None,
          parse_values: Callable[[str], Any] | None = None) -> ExposureModel:
    """The exposure model of `snapshot`, read with the effective Cilium configuration and the posture's
    expectations (only `gatewayHostNetwork` and `ciliumVersionLine`, where the input does not tell)."""
    return _Builder(snapshot, resolve_settings(cilium, posture), lines or KeyLines(),
                    parse_values or _parse_embedded).model()


def _parse_embedded(text: str) -> Any:
    from auditor.parsing.yaml_docs import YAMLInputError, iter_documents

    try:
        documents = list(iter_documents(text, max_alias_expansion=10_000))
    except YAMLInputError:
        return None
    return documents[0].data if len(documents) == 1 else None


def _subject(obj: K8sObject, declared: Declared = Declared.OBJECT, source: Any = None) -> Subject:
    return Subject(obj.ref, source or obj.source, tuple(sorted(string_labels(obj.labels).items())), declared)


class _Pools:
    """The LB-IPAM pools: by range, and each pool's memoised serviceSelector (absent: every Service)."""

    def __init__(self, pools: list[K8sObject]) -> None:
        self.pools = pools
        self.index: RangeIndex[K8sObject] = RangeIndex((block, pool) for pool in pools for block in pool_blocks(pool))
        self.selects = {id(pool): SelectorSet.of(LB_POOL_SERVICES, [pool.spec.get("serviceSelector")])
                        for pool in pools}

    def holding(self, text: str, labels: Mapping[str, str] | None = None) -> tuple[ObjectRef, ...]:
        address = parse_address(text)
        if address is None:
            return ()
        holders = [pool for _, pool in self.index.containing(address.version, int(address))]
        if labels is not None:
            holders = [p for p in holders if not pool_disabled(p) and self.selects[id(p)].matches(labels)]
        return tuple(dict.fromkeys(p.ref for p in holders))

    def selecting(self, labels: Mapping[str, str]) -> tuple[ObjectRef, ...]:
        return tuple(p.ref for p in self.pools if not pool_disabled(p) and self.selects[id(p)].matches(labels))


class _Builder:
    def __init__(self, snapshot: Snapshot, settings: ExposureSettings, lines: KeyLines,
                 parse_values: Callable[[str], Any]) -> None:
        self.snapshot = snapshot
        self.settings = settings
        self.lines = lines
        self.parse_values = parse_values
        self.notes: list[str] = []
        self.pools = _Pools(snapshot.of_kind(kinds.LB_IP_POOL))
        self.announcers = Announcers(snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY),
                                     snapshot.of_kind(kinds.BGP_ADVERTISEMENT))
        self.workload_index = WorkloadIndex(snapshot.of_kind(*WORKLOAD_KINDS))
        self.node_ips = _node_addresses(snapshot.of_kind(kinds.NODE))
        self.node_address = Address(
            AddressKind.NODE_IPS, None,
            f"every node address ({len(self.node_ips)} nodes)" if self.node_ips else "every node address",
            nodes=self.node_ips)
        self._workloads: dict[tuple[str | None, tuple[tuple[str, str], ...]], tuple[Workload, ...]] = {}
        self.grants: dict[str | None, list[K8sObject]] = defaultdict(list)
        for grant in snapshot.of_kind(kinds.REFERENCE_GRANT):
            self.grants[grant.namespace].append(grant)

    def known(self, gk: str) -> bool:
        return self.snapshot.coverage(gk).state.known

    # --- the whole model ------------------------------------------------------------------

    def model(self) -> ExposureModel:
        services = self.snapshot.of_kind(kinds.SERVICE)
        data_planes = _data_plane_index(services)
        gateways, gateway_services, implied = self._gateways(data_planes)
        # service_type, inlined: asked of every Service (100k on a large dump).
        types = [kind if isinstance(kind := s.spec.get("type"), str) and kind else "ClusterIP" for s in services]
        by_type: dict[str, list[K8sObject]] = defaultdict(list)
        for service, kind in zip(services, types, strict=True):
            by_type[kind].append(service)
        listed = ServiceViews([(s.namespace, s.name) for s in services], types,
                              lambda i: self._service_view(services[i], gateway_services.get(id(services[i]))))
        # The first definition of an identity is the one looked up, as in the snapshot.
        views = ServicesByName(listed)
        declared = [self._declared_view(d) for d in self._declarations()]
        routes, by_listener = self._routes(views, implied)
        entrances: list[Entrance] = []
        # Only LoadBalancer and NodePort Services and those with externalIPs open a door of their own
        # (`_service_entrances`): the views of the others are built when something asks for them.
        doors = [listed[i] for i, service in enumerate(services)
                 if types[i] in EXPOSING_TYPES or (service.spec.get("externalIPs") and external_ips(service))]
        for view in [*doors, *declared]:
            if view.gateway is None:
                entrances += self._service_entrances(view)
        for gateway in gateways:
            plane = views.get((gateway.service.namespace, gateway.service.name)) if gateway.service else None
            plane = plane or implied.get(gateway.ref)
            entrances += self._gateway_entrances(gateway, plane, by_listener, views)
        entrances += self._workload_entrances()
        entrances.sort(key=lambda e: e.sort_key)
        return ExposureModel(
            entrances=tuple(entrances), services=views, listed=listed, implied=tuple(implied.values()),
            declared=tuple(declared),
            gateways=tuple(gateways), routes=tuple(routes), node_addresses=self.node_ips, settings=self.settings,
            notes=tuple(dict.fromkeys(self.notes)), workload_index=self.workload_index, services_by_type=dict(by_type),
        )

    # --- Services ---------------------------------------------------------------------------

    def _lb_addresses(self, ingress: Iterable[str], requested: Sequence[tuple[str, str]], labels: Mapping[str, str],
                      lb_ipam: bool, lb_class: str | None, evidence: Evidence, live: bool) -> tuple[Address, ...]:
        listed = list(ingress)
        if listed:
            return tuple(Address(AddressKind.LOAD_BALANCER_IP, ip, "status.loadBalancer.ingress", evidence,
                                 pools=self.pools.holding(ip)) for ip in listed)
        if not lb_ipam:
            given = f"loadBalancerClass {lb_class}" if lb_class else "the IPAM default-lb-service-ipam names"
            return (Address(AddressKind.LOAD_BALANCER_IP, None, f"given by {given}, not LB-IPAM", evidence),)
        if live:
            return (Address(AddressKind.LOAD_BALANCER_IP, None, "no address allocated (status.loadBalancer is "
                            "empty)", evidence, pools=self.pools.selecting(labels)),)
        if requested:
            return tuple(Address(AddressKind.LOAD_BALANCER_IP, text, f"requested by {where}", evidence,
                                 pools=self.pools.holding(text, labels)) for where, text in requested)
        pools = self.pools.selecting(labels)
        if pools:
            detail = "allocated by LB-IPAM when applied"
        elif self.known(kinds.LB_IP_POOL):
            detail = "no CiliumLoadBalancerIPPool selects it: LB-IPAM gives it no address"
        else:
            detail = "allocated by LB-IPAM from a pool the input does not hold"
        return (Address(AddressKind.LOAD_BALANCER_IP, None, detail, evidence, pools=pools),)

    def _service_view(self, service: K8sObject, gateway_ref: ObjectRef | None) -> ServiceView:
        ref = service.ref
        kind, lb_class = service_type(service), load_balancer_class(service)
        external = external_ips(service)
        # Cilium's selectors only ever look at the Services that get an address of their own.
        labels = service_selector_labels(service) if kind == "LoadBalancer" or external else {}
        evidence = Evidence(ref, service.source, "spec.type")
        lb_ipam = lb_ipam_serves(kind, lb_class, self.settings.default_lb_ipam)
        requested, ingress = requested_ips(service), ingress_addresses(service)
        announcing: Announcing = NOT_NEEDED
        addresses: tuple[Address, ...] = ()
        if kind == "LoadBalancer":
            announcing = self.announcers.announcing(labels, lb_class, self.settings, self.known)
            addresses = self._lb_addresses(ingress, requested, labels, lb_ipam, lb_class, evidence,
                                           self.snapshot.read_from_cluster(service))
        selector = service.spec.get("selector")
        return ServiceView(
            ref=ref, declared=Declared.OBJECT, subject=_subject(service), type=kind,
            external_traffic_policy=external_traffic_policy(service), load_balancer_class=lb_class,
            ports=tuple(service_ports(service)), evidence=evidence, selector_labels=labels,
            pod_selector=string_labels(selector) if isinstance(selector, dict) and selector else None,
            requested_ips=tuple(requested), ingress=tuple(ingress),
            external_ips=tuple(external), allocates_node_ports=allocates_node_ports(service),
            gateway=gateway_ref, lb_ipam=lb_ipam, announcing=announcing, addresses=addresses,
        )

    def _declarations(self) -> list[DeclaredService]:
        """Services declared in values, minus the releases whose rendered Services the input holds."""
        if self.snapshot.mode.from_cluster:
            return []  # a live read lists the rendered Services themselves
        owners = self.snapshot.of_kind(kinds.HELM_RELEASE, kinds.ARGO_APPLICATION)
        owners += [o for o in self.snapshot.objects if o.gk not in _PLAIN_KINDS and "." in o.gk]
        if not owners:
            return []  # nothing declares a Service (asking every Service for its release is then for nothing)
        rendered = {
            (as_str(s.annotations.get("meta.helm.sh/release-namespace")), as_str(s.annotations.get(
                "meta.helm.sh/release-name")))
            for s in self.snapshot.of_kind(kinds.SERVICE) if s.annotations.get("meta.helm.sh/release-name")
        }
        return [d for d in declared_services(list(dict.fromkeys(owners)), self.parse_values, self._release_values)
                if (d.namespace or "", d.release) not in rendered]

    def _release_values(self, release: K8sObject) -> ValuesLayers | None:
        """A HelmRelease's `valuesFrom` files of the input, and how to merge them (None: `spec.values` alone)."""
        files = self.snapshot.values_files(release)
        if not files:
            return None
        # A file whose text never writes a Service type cannot ask for one (escapes aside: looked into).
        layers = tuple(f.values for f in files if f.text is None or "\\" in f.text
                       or any(word in f.text for word in EXPOSING_WORDS))

        def merged() -> ReleaseValues:
            values, provenance, files, _ = merged_release_values(self.snapshot, release)
            return values, provenance, files

        return layers, merged

    def _declared_view(self, declared: DeclaredService) -> ServiceView:
        owner = declared.owner
        source = declared.values_source or self.lines.source_of(owner.source, declared.path)
        service_path = dotted(declared.path[:-1])
        ref = ObjectRef("Service", declared.namespace, f"{declared.release}:{service_path}", "v1")
        labels = {**declared.labels, SERVICE_NAMESPACE_LABEL: declared.namespace or ""}
        evidence = Evidence(owner.ref, source, declared.where,
                            note=f"declared in {declared.via}; the rendered Service is what a live audit sees")
        lb_class = declared.load_balancer_class
        lb_ipam = lb_ipam_serves(declared.type, lb_class, self.settings.default_lb_ipam)
        requested = requested_addresses(declared.annotations, declared.load_balancer_ip)
        announcing: Announcing = NOT_NEEDED
        addresses: tuple[Address, ...] = ()
        if declared.type == "LoadBalancer":
            announcing = self.announcers.announcing(labels, lb_class, self.settings, self.known, labels_known=False)
            addresses = self._lb_addresses((), requested, labels, lb_ipam, lb_class, evidence, live=False)
        return ServiceView(
            ref=ref, declared=Declared.HELM_VALUES, subject=_subject(owner, Declared.HELM_VALUES, source),
            type=declared.type, external_traffic_policy=declared.external_traffic_policy or "Cluster",
            load_balancer_class=lb_class, ports=declared.ports, evidence=evidence, selector_labels=labels,
            labels_known=False, requested_ips=tuple(requested), lb_ipam=lb_ipam, announcing=announcing,
            addresses=addresses,
        )

    # --- Gateways ---------------------------------------------------------------------------

    def _gateways(self, data_planes: dict[tuple[str, str | None, str], K8sObject]
                  ) -> tuple[list[GatewayView], dict[int, ObjectRef], dict[ObjectRef, ServiceView]]:
        views: list[GatewayView] = []
        owned: dict[int, ObjectRef] = {}
        implied: dict[ObjectRef, ServiceView] = {}
        for gateway in self.snapshot.of_kind(kinds.GATEWAY):
            controller = gw.controller_of(self.snapshot, gateway)
            hops = tuple(hop for _, hop in gw.listener_hops(gateway, controller))
            evidence = Evidence(gateway.ref, gateway.source, "spec.gatewayClassName")
            key = ("envoy" if controller == "envoy-gateway" else "cilium", gateway.namespace, gateway.name)
            live = data_planes.get(key)
            if controller not in ("cilium", "envoy-gateway"):
                what = f"controller {controller}" if controller else "a GatewayClass the input does not hold"
                views.append(GatewayView(gateway.ref, evidence, controller, None, f"served by {what}",
                                         live.ref if live else None, hops,
                                         (f"Gateway {gateway.ref.display}: served by {what}; its data plane is not "
                                          "modelled",)))
                if live is not None:
                    owned[id(live)] = gateway.ref
                continue
            plane = (gw.cilium_data_plane(self.snapshot, gateway, self.settings.gateway) if controller == "cilium"
                     else gw.envoy_data_plane(self.snapshot, gateway))
            listed = self.snapshot.mode.from_cluster and self.known(kinds.SERVICE)
            if live is not None:
                owned[id(live)] = gateway.ref
                service_ref: ObjectRef | None = live.ref
            elif plane.type == "ClusterIP" or listed:
                # Read from a cluster that lists its Services: the controller made none (yet), and the model
                # does not invent one; offline, it stands for the Service the controller will make.
                service_ref = None
            else:
                implied[gateway.ref] = self._implied_view(gateway, plane, hops)
                service_ref = implied[gateway.ref].ref
            host = plane.host_network if controller == "cilium" else False
            why = self.settings.gateway.host_network_why if controller == "cilium" else "Envoy Gateway runs pods"
            notes = () if live is not None else (plane.why,)  # a Service in the input speaks for itself
            views.append(GatewayView(gateway.ref, evidence, controller, host, why, service_ref, hops, notes))
        return views, owned, implied

    def _implied_view(self, gateway: K8sObject, plane: gw.DataPlane, hops: tuple[ListenerHop, ...]) -> ServiceView:
        ref = ObjectRef("Service", plane.namespace, plane.name, "v1")
        labels = {**plane.labels, SERVICE_NAMESPACE_LABEL: plane.namespace or "", SERVICE_NAME_LABEL: plane.name}
        ports = tuple(dict.fromkeys(
            ServicePort(f"port-{hop.port}", hop.port, "UDP" if hop.protocol.upper() == "UDP" else "TCP", hop.port, None)
            for hop in hops))
        requested = [("spec.addresses of the Gateway", as_str(as_mapping(a).get("value")))
                     for a in as_list(gateway.spec.get("addresses"))
                     if as_str(as_mapping(a).get("type"), "IPAddress") == "IPAddress" and as_mapping(a).get("value")]
        requested += requested_addresses(plane.annotations, None)
        lb_ipam = lb_ipam_serves(plane.type, plane.load_balancer_class, self.settings.default_lb_ipam)
        announcing: Announcing = NOT_NEEDED
        addresses: tuple[Address, ...] = ()
        if plane.type == "LoadBalancer":
            announcing = self.announcers.announcing(labels, plane.load_balancer_class, self.settings, self.known)
            addresses = self._lb_addresses((), requested, labels, lb_ipam, plane.load_balancer_class, plane.evidence,
                                           live=False)
        notes = () if plane.exact_name else ("the controller adds a suffix to this name: match it by its labels",)
        return ServiceView(
            ref=ref, declared=Declared.CONTROLLER,
            subject=Subject(ref, gateway.source, tuple(sorted(plane.labels.items())), Declared.CONTROLLER),
            type=plane.type, external_traffic_policy=plane.external_traffic_policy,
            load_balancer_class=plane.load_balancer_class, ports=ports, evidence=plane.evidence,
            selector_labels=labels, requested_ips=tuple(requested), gateway=gateway.ref, lb_ipam=lb_ipam,
            announcing=announcing, addresses=addresses, notes=(plane.why, *notes),
        )

    # --- routes -----------------------------------------------------------------------------

    def _routes(self, views: Mapping[tuple[str | None, str], ServiceView], implied: Mapping[ObjectRef, ServiceView]
                ) -> tuple[list[RouteView], dict[tuple[ObjectRef, str], list[RouteView]]]:
        namespace_labels = ({ns.name: string_labels(ns.labels) for ns in self.snapshot.of_kind(kinds.NAMESPACE)}
                            if self.known(kinds.NAMESPACE) else None)
        # The listed Services first, then the Gateways' implied ones, looked up in turn: looking a backend
        # up builds only its own view (`ServicesByName` is lazy; merging it into a dict would build them all).
        by_key = _ListedThenImplied(views, {(v.ref.namespace, v.ref.name): v for v in implied.values()})
        backends = _BackendJudge(self.snapshot, by_key, self.grants, self.lines)
        hops: dict[ObjectRef, dict[int, ListenerHop]] = {}
        routes: list[RouteView] = []
        by_listener: dict[tuple[ObjectRef, str], list[RouteView]] = defaultdict(list)
        for gk, kind in gw.ROUTE_KINDS.items():
            for route in self.snapshot.of_kind(gk):
                attached: list[ListenerHop] = []
                unattached: list[Detachment] = []
                for index, ref in gw.parent_refs(route):
                    parent = gw.parent_gateway(self.snapshot, route, ref)
                    if parent is None:
                        unattached.append(self._no_gateway(route, index, ref))
                        continue
                    if parent.ref not in hops:
                        hops[parent.ref] = dict(gw.listener_hops(parent, gw.controller_of(self.snapshot, parent)))
                    attachment = gw.attaches(kind, route, ref, parent, namespace_labels)
                    attached += [hops[parent.ref][p] for p in attachment.positions if p in hops[parent.ref]]
                    if attachment.reason is not None:
                        unattached.append(self._detachment(route, index, ref, parent.ref, attachment.reason,
                                                           attachment.why, attachment.verified))
                view = RouteView(kind, route.ref, Evidence(route.ref, route.source, "spec.parentRefs"),
                                 gw.route_hostnames(route), tuple(dict.fromkeys(attached)), tuple(unattached),
                                 tuple(backends.judge(route, kind)))
                routes.append(view)
                for hop in view.attached:
                    by_listener[(hop.gateway, hop.name)].append(view)
        return routes, by_listener

    def _no_gateway(self, route: K8sObject, index: int, ref: Mapping[str, Any]) -> Detachment:
        """A parentRef naming a Gateway the input does not hold: verified missing only when read from a
        cluster that lists Gateways (offline, it may be defined in another repository)."""
        gateway = gw.ref_of("Gateway", as_str(ref.get("namespace")) or route.namespace, as_str(ref.get("name")))
        listed = self.snapshot.mode.from_cluster and self.known(kinds.GATEWAY)
        why = (f"the cluster has no Gateway {gateway.namespace}/{gateway.name}" if listed
               else "the Gateway is not in the input")
        return self._detachment(route, index, ref, gateway, Detached.NO_GATEWAY, why, listed)

    def _detachment(self, route: K8sObject, index: int, ref: Mapping[str, Any], gateway: ObjectRef,
                    reason: Detached, why: str, verified: bool) -> Detachment:
        port = ref.get("port")
        return Detachment(
            parent=gw.parent_display(route, ref), gateway=gateway, reason=reason, why=why,
            evidence=Evidence(route.ref, self.lines.source_of(route.source, ("spec", "parentRefs")),
                              f"spec.parentRefs[{index}]"),
            verified=verified, section=as_str(ref.get("sectionName")) or None,
            port=port if isinstance(port, int) and not isinstance(port, bool) else None)

    # --- entrances --------------------------------------------------------------------------

    def _workloads_of(self, view: ServiceView) -> tuple[Workload, ...]:
        if not view.pod_selector:
            return ()
        key = (view.ref.namespace, tuple(sorted(view.pod_selector.items())))
        if key not in self._workloads:
            self._workloads[key] = tuple(
                Workload(obj.ref, Evidence(obj.ref, obj.source, "pod template labels"))
                for obj in self.workload_index.selected_by(view.ref.namespace, view.pod_selector))
        return self._workloads[key]

    def _service_entrances(self, view: ServiceView) -> list[Entrance]:
        """The ways in a Service opens: its LoadBalancer IPs, node ports, external IPs."""
        out: list[Entrance] = []
        if view.type not in ("LoadBalancer", "NodePort") and not view.external_ips:
            return out  # a ClusterIP (or headless, ExternalName) Service opens no door of its own
        ports: tuple[ServicePort | None, ...] = view.ports or (None,)
        workloads = self._workloads_of(view)

        def entrance(channel: Channel, rule: str, address: Address, number: int | None, port: ServicePort | None,
                     announcing: Announcing = NOT_NEEDED, field: str = "spec.type") -> Entrance:
            evidence = Evidence(view.evidence.ref, view.evidence.source, view.evidence.field if field == "spec.type"
                                else field, view.evidence.note)
            return Entrance(
                channel=channel, subject=view.subject, rule=rule, address=address, port=number,
                protocol=port.protocol if port else "TCP", evidence=evidence, announcing=announcing,
                backends=(Backend(view.ref, port.port if port else None, view.evidence),), workloads=workloads,
                service_port=port.port if port else None, external_traffic_policy=view.external_traffic_policy,
                notes=view.notes)

        if view.type == "LoadBalancer":
            for address in view.addresses:
                out += [entrance(Channel.LOAD_BALANCER, LB_RULE, address, p.port if p else None, p, view.announcing)
                        for p in ports]
        if view.type == "NodePort" or (view.type == "LoadBalancer" and view.allocates_node_ports):
            rule = NODEPORT_RULE if view.type == "NodePort" else LB_RULE
            out += [entrance(Channel.NODE_PORT, rule, self.node_address, p.node_port if p else None, p)
                    for p in ports]
        if view.external_ips:
            announcing = self.announcers.announcing(view.selector_labels, view.load_balancer_class, self.settings,
                                                    self.known, external=True, labels_known=view.labels_known)
            for ip in view.external_ips:
                address = Address(AddressKind.EXTERNAL_IP, ip, "spec.externalIPs", view.evidence)
                out += [entrance(Channel.EXTERNAL_IP, EXTERNAL_IPS_RULE, address, p.port if p else None, p,
                                 announcing, "spec.externalIPs") for p in ports]
        return out

    def _route_hop(self, route: RouteView, listener: ListenerHop) -> RouteHop:
        forwards, why = True, ""
        l4 = route.kind in ("TCPRoute", "UDPRoute")
        if l4 and listener.controller == "cilium" and self.settings.version < gw.CILIUM_L4_ROUTES_SINCE:
            forwards = False
            why = (f"Cilium implements {route.kind} from 1.20 (cilium/cilium#46184); "
                   f"{self.settings.version_why} forwards nothing for it")
        return RouteHop(route.kind, route.ref, route.hostnames, route.evidence, forwards, why)

    def _gateway_doors(self, gateway: GatewayView, plane: ServiceView | None) -> list[_Door]:
        """Where a Gateway takes traffic: its Service's LoadBalancer IPs and node ports, or the nodes'
        addresses in hostNetwork mode; each with the port on that address of every listener port."""
        doors: list[_Door] = []
        if plane is not None and plane.type in ("LoadBalancer", "NodePort"):
            same: dict[int, int | None] = {p.port: p.port for p in plane.ports}
            if plane.type == "LoadBalancer":
                doors += [_Door(Channel.LOAD_BALANCER, LB_RULE, address, plane.subject, plane.announcing, same,
                                plane.evidence) for address in plane.addresses]
            if plane.type == "NodePort" or plane.allocates_node_ports:
                rule = NODEPORT_RULE if plane.type == "NodePort" else LB_RULE
                node_ports: dict[int, int | None] = {p.port: p.node_port for p in plane.ports}
                doors.append(_Door(Channel.NODE_PORT, rule, self.node_address, plane.subject, NOT_NEEDED, node_ports,
                                   plane.evidence))
        if gateway.host_network:
            listener_ports: dict[int, int | None] = {hop.port: hop.port for hop in gateway.listeners}
            doors.append(_Door(Channel.HOST_NETWORK, HOSTNETWORK_RULE, self.node_address,
                               _gateway_subject(self.snapshot, gateway), NOT_NEEDED, listener_ports, gateway.evidence))
        return doors

    def _gateway_entrances(self, gateway: GatewayView, plane: ServiceView | None,
                           by_listener: Mapping[tuple[ObjectRef, str], list[RouteView]],
                           views: Mapping[tuple[str | None, str], ServiceView]) -> list[Entrance]:
        """The ways in a Gateway opens: per door, per listener, per attached route (or the listener alone
        when nothing attaches)."""
        out: list[Entrance] = []
        for door in self._gateway_doors(gateway, plane):
            for hop in gateway.listeners:
                if hop.port not in door.ports:
                    continue
                routes: list[RouteView | None] = [*by_listener.get((hop.gateway, hop.name), [])] or [None]
                for route in routes:
                    backends = route.backends if route is not None else ()
                    workloads = tuple(dict.fromkeys(
                        w for b in backends for w in self._workloads_of_ref(b.service, views)))
                    out.append(Entrance(
                        channel=door.channel, subject=door.subject, rule=door.rule, address=door.address,
                        port=door.ports[hop.port], protocol="UDP" if hop.protocol.upper() == "UDP" else "TCP",
                        evidence=door.evidence, announcing=door.announcing, listener=hop,
                        route=self._route_hop(route, hop) if route is not None else None, backends=backends,
                        workloads=workloads, service_port=hop.port,
                        external_traffic_policy=plane.external_traffic_policy if plane else None, notes=gateway.notes))
        return out

    def _workloads_of_ref(self, ref: ObjectRef, views: Mapping[tuple[str | None, str], ServiceView]
                          ) -> tuple[Workload, ...]:
        view = views.get((ref.namespace, ref.name))
        return self._workloads_of(view) if view is not None else ()

    def _workload_entrances(self) -> list[Entrance]:
        """hostPort and hostNetwork ports of the top-level workloads (one entrance per declared port)."""
        out: list[Entrance] = []
        for obj, spec, base in self.workload_index.host_candidates:
            on_host = spec.get("hostNetwork") is True
            ports = [p for p in ports_of(spec, base) if on_host or p.host_port is not None]
            if not ports:
                continue
            subject = _subject(obj)
            itself = (Workload(obj.ref, Evidence(obj.ref, obj.source, "")),)
            for port in ports:
                number = port.host_port or port.container_port if on_host else port.host_port
                notes: tuple[str, ...] = ()
                if on_host:
                    channel, rule, address = Channel.HOST_NETWORK, HOSTNETWORK_RULE, self.node_address
                    field = f"{port.path.split('.containers')[0].split('.initContainers')[0]}.hostNetwork"
                    notes = ("a hostNetwork pod is reachable on any port it listens on: declared ports are a "
                             "lower bound",)
                else:
                    channel, rule, field = Channel.HOST_PORT, HOSTPORT_RULE, f"{port.path}.hostPort"
                    address = (Address(AddressKind.HOST_IP, port.host_ip, "hostIP") if port.host_ip
                               else self.node_address)
                    if number is not None and NODE_PORT_RANGE[0] <= number <= NODE_PORT_RANGE[1]:
                        notes = ("inside the default NodePort range 30000-32767, where Cilium does not bind "
                                 "hostPorts",)
                out.append(Entrance(
                    channel=channel, subject=subject, rule=rule, address=address, port=number,
                    protocol=port.protocol, evidence=Evidence(obj.ref, obj.source, field), workloads=itself,
                    notes=(f"container {port.container}" + (f" port {port.name}" if port.name else ""), *notes)))
        return out


@dataclass(frozen=True, slots=True)
class _Door:
    """A way in being assembled: its channel, address, subject, announcement, ports and evidence, before it
    is judged."""

    channel: Channel
    rule: str
    address: Address
    subject: Subject
    announcing: Announcing
    ports: dict[int, int | None]  # listener port -> the port on the address
    evidence: Evidence


# Kinds never walked for operator-declared Services (built-in, Cilium, Gateway API, GitOps).
_PLAIN_KINDS = frozenset({kinds.HELM_RELEASE, kinds.ARGO_APPLICATION, *WORKLOAD_KINDS, kinds.CRD})


_DATA_PLANE_LABELS = frozenset({gw.CILIUM_GATEWAY_NAME_LABEL, gw.CILIUM_OWNING_GATEWAY_LABEL,
                                gw.ENVOY_GATEWAY_NAME_LABEL, gw.ENVOY_GATEWAY_NAMESPACE_LABEL})


def _data_plane_index(services: Iterable[K8sObject]) -> dict[tuple[str, str | None, str], K8sObject]:
    """Services by the labels Gateway controllers put on their data-plane Services."""
    found: dict[tuple[str, str | None, str], K8sObject] = {}
    for service in services:
        labels = service.labels
        if _DATA_PLANE_LABELS.isdisjoint(labels) and not service.name.startswith("cilium-gateway-"):
            continue  # nearly every Service: told by one C call
        for label in (gw.CILIUM_GATEWAY_NAME_LABEL, gw.CILIUM_OWNING_GATEWAY_LABEL):
            name = labels.get(label)
            if isinstance(name, str):
                found.setdefault(("cilium", service.namespace, name), service)
        if service.name.startswith("cilium-gateway-"):
            found.setdefault(("cilium", service.namespace, service.name[len("cilium-gateway-"):]), service)
        name, namespace = labels.get(gw.ENVOY_GATEWAY_NAME_LABEL), labels.get(gw.ENVOY_GATEWAY_NAMESPACE_LABEL)
        if isinstance(name, str) and isinstance(namespace, str):
            found.setdefault(("envoy", namespace, name), service)
    return found


def _gateway_subject(snapshot: Snapshot, gateway: GatewayView) -> Subject:
    obj = snapshot.get(kinds.GATEWAY, gateway.ref.namespace, gateway.ref.name)
    return _subject(obj) if obj is not None else Subject(gateway.ref, gateway.evidence.source, (), Declared.OBJECT)


def _node_addresses(nodes: list[K8sObject]) -> tuple[str, ...]:
    """The nodes' InternalIP and ExternalIP addresses, in address order."""
    found: dict[str, tuple[int, int]] = {}
    for node in nodes:
        for entry in as_list(node.status.get("addresses")):
            entry = as_mapping(entry)
            address = parse_address(entry.get("address"))
            if entry.get("type") in ("InternalIP", "ExternalIP") and address is not None:
                found[str(address)] = (address.version, int(address))
    return tuple(sorted(found, key=lambda text: found[text]))



class _ListedThenImplied(Mapping[tuple[str | None, str], ServiceView]):
    """The input's Services by (namespace, name), then the Gateway-implied ones for the names it lacks."""

    def __init__(self, listed: Mapping[tuple[str | None, str], ServiceView],
                 implied: Mapping[tuple[str | None, str], ServiceView]) -> None:
        self.listed, self.implied = listed, implied

    def __getitem__(self, key: tuple[str | None, str]) -> ServiceView:
        return self.listed[key] if key in self.listed else self.implied[key]

    def __iter__(self) -> Iterator[tuple[str | None, str]]:
        yield from self.listed
        yield from (key for key in self.implied if key not in self.listed)

    def __len__(self) -> int:
        return sum(1 for _ in self)


_Problem = tuple[BackendProblem, str, bool]  # (problem, why, verified)


class _BackendJudge:
    """Each backendRef of a route: the Service it names and, when it sends nothing, why.

    Gateway API v1: a backendRef to a Service in another namespace needs a ReferenceGrant there
    (RefNotPermitted); one to a Service that does not exist resolves to nothing (BackendNotFound);
    a Service backendRef must have a port (the CRD's CEL rule), and Cilium skips a backend whose
    Service is missing or that has no port (operator/pkg/model/ingestion; notes/facts.md §4).
    """

    def __init__(self, snapshot: Snapshot, services: Mapping[tuple[str | None, str], ServiceView],
                 grants: Mapping[str | None, list[K8sObject]], lines: KeyLines) -> None:
        self.services = services
        self.lines = lines
        self.grants = grants
        self.services_known = snapshot.coverage(kinds.SERVICE).state.known
        self.grants_known = snapshot.coverage(kinds.REFERENCE_GRANT).state.known
        self.from_cluster = snapshot.mode.from_cluster
        # Offline, a Service absent from the input may be rendered by a Helm chart or an Argo CD
        # Application deploying into its namespace: its absence is then not a fact.
        self.rendered: set[str | None] = set()
        if not self.from_cluster:
            for release in snapshot.of_kind(kinds.HELM_RELEASE):
                self.rendered.add(as_str(release.spec.get("targetNamespace")) or release.namespace)
            for app in snapshot.of_kind(kinds.ARGO_APPLICATION):
                self.rendered.add(as_str(as_mapping(app.spec.get("destination")).get("namespace")) or None)

    def judge(self, route: K8sObject, kind: str) -> list[Backend]:
        found = []
        for path, ref in gw.backend_refs(route):
            namespace, name = as_str(ref.get("namespace")) or route.namespace, as_str(ref.get("name"))
            raw_port = ref.get("port")
            port = raw_port if isinstance(raw_port, (int, str)) and not isinstance(raw_port, bool) else None
            problems = self._problems(route, kind, namespace, name, raw_port)
            chosen: _Problem | None = next(iter([p for p in problems if p[2]] or problems), None)
            exists = not any(p[0] in (BackendProblem.NO_SERVICE, BackendProblem.NOT_PERMITTED) for p in problems)
            # A finding about a backend that sends nothing points at the route's rules (the line is read
            # only then).
            source = self.lines.source_of(route.source, ("spec", "rules")) if problems else route.source
            found.append(Backend(gw.ref_of("Service", namespace, name), port,
                                 Evidence(route.ref, source, path, note="; ".join(p[1] for p in problems)),
                                 exists, chosen[0] if chosen else None, chosen[2] if chosen else True))
        return found

    def _problems(self, route: K8sObject, kind: str, namespace: str | None, name: str, port: Any) -> list[_Problem]:
        """(problem, why, verified) of one backendRef, the most fundamental first."""
        problems: list[_Problem] = []
        view = self.services.get((namespace, name))
        if view is None:
            if self.services_known:
                problems.append((BackendProblem.NO_SERVICE, f"no Service {namespace}/{name} in the input",
                                 self.from_cluster or namespace not in self.rendered))
            else:
                problems.append((BackendProblem.NO_SERVICE, "the input holds no Services", False))
        if namespace != route.namespace and not gw.reference_granted(self.grants.get(namespace, []), kind, route,
                                                                     name):
            problems.append((BackendProblem.NOT_PERMITTED,
                             f"no ReferenceGrant in {namespace} lets this {kind} reach it", self.grants_known))
        if not isinstance(port, int) or isinstance(port, bool):
            problems.append((BackendProblem.NO_PORT, "no port: a Service backendRef must name the Service port"
                             if port is None else f"port {port!r} is not a port number", True))
        elif view is not None and view.type != "ExternalName" and port not in {p.port for p in view.ports}:
            ports = ", ".join(str(p.port) for p in view.ports) or "none"
            problems.append((BackendProblem.PORT_NOT_EXPOSED,
                             f"Service {namespace}/{name} has no port {port} (its ports: {ports})", True))
        return problems
