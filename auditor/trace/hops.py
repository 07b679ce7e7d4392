"""Each hop of a chain, judged from the exposure model and, live, from EndpointSlices and Leases.

Facts encoded here:
- Cilium's L2 announcer elects one node per Service through a Lease named
  `cilium-l2announce-<namespace>-<service>` in the namespace Cilium runs in, held by the node's
  name (cilium/cilium pkg/l2announcer/l2announcer.go, `leasePrefix`, `newLeaseLock` and
  `leaseNamespace`, read at 00cfe9e8; docs "L2 Announcements", Leases). No holder: no node answers
  ARP for the address.
- EndpointSlices name their Service in the label `kubernetes.io/service-name`; an endpoint whose
  `conditions.ready` is absent counts as ready (discovery.k8s.io/v1 EndpointConditions,
  https://kubernetes.io/docs/reference/kubernetes-api/service-resources/endpoint-slice-v1/).
- An HTTPS listener's certificate is judged by gateway-https-listener-tls's own checker (the
  rule and the trace share it): a Secret offline input does not list is unseen, not missing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cached_property

from auditor import kinds
from auditor.engine import AuditResult
from auditor.exposure import (
    AddressKind,
    AnnouncementKind,
    AnnouncementState,
    Backend,
    Entrance,
    Evidence,
    ExposureModel,
    ListenerHop,
    ServiceView,
    describe_announcing,
)
from auditor.model import K8sObject, ObjectRef, as_list, as_mapping, as_str
from auditor.snapshot import CoverageState
from auditor.trace.model import Hop, HopKind, HopStatus
from auditor_rules.gateway.gateway_https_listener_tls import ListenerTlsChecker

LEASE_PREFIX = "cilium-l2announce"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_LISTENER_INDEX = re.compile(r"spec\.listeners\[(\d+)\]")


def lease_name(service: ObjectRef) -> str:
    """The Lease Cilium's L2 announcer elects the announcing node with, for `service`."""
    return f"{LEASE_PREFIX}-{service.namespace}-{service.name}"


def _name(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


def _evidence(obj: K8sObject, field: str = "", note: str = "") -> Evidence:
    return Evidence(obj.ref, obj.source, field, note)


class Hops:
    """Builds the hops of the chains of one audit (its snapshot, exposure model and verdicts)."""

    def __init__(self, result: AuditResult, model: ExposureModel) -> None:
        self.snapshot = result.snapshot
        self.model = model
        self.tls = ListenerTlsChecker(self.snapshot)

    # --- the address and how it is announced ----------------------------------------------

    def view_of(self, entrance: Entrance) -> ServiceView | None:
        return self.model.view_of(entrance.subject)

    def announcement(self, entrance: Entrance) -> list[Hop]:
        """The announcement hop, and live the L2 lease hop when only L2 announces it."""
        announcing = entrance.announcing
        evidence = tuple(a.evidence for a in announcing.by)
        text = describe_announcing(announcing)
        if announcing.state is AnnouncementState.NOT_NEEDED:
            return [Hop(HopKind.ANNOUNCEMENT, HopStatus.OK, "not needed: the nodes' own addresses")]
        if announcing.state is AnnouncementState.NOT_ANNOUNCED:
            return [Hop(HopKind.ANNOUNCEMENT, HopStatus.BROKEN, "not announced", announcing.why, evidence)]
        if announcing.state is AnnouncementState.UNKNOWN:
            return [Hop(HopKind.ANNOUNCEMENT, HopStatus.UNSEEN, text, announcing.why, evidence)]
        hops = [Hop(HopKind.ANNOUNCEMENT, HopStatus.OK, text, evidence=evidence)]
        view = self.view_of(entrance)
        if view is not None and all(a.kind is AnnouncementKind.L2 for a in announcing.by):
            lease = self.lease(view.ref)
            if lease is not None:
                hops.append(lease)
        return hops

    @cached_property
    def _leases(self) -> dict[str, list[K8sObject]]:
        found: dict[str, list[K8sObject]] = defaultdict(list)
        for lease in self.snapshot.of_kind(kinds.LEASE):
            if lease.name.startswith(LEASE_PREFIX):
                found[lease.name].append(lease)
        return found

    @cached_property
    def _cilium_namespace(self) -> str:
        from auditor.cilium.config import resolve

        return resolve(self.snapshot).namespace

    def lease(self, service: ObjectRef) -> Hop | None:
        """Live only (the reader listed Leases): which node holds the Service's L2 announcement lease."""
        coverage = self.snapshot.listed.get(kinds.LEASE)
        if coverage is None:
            return None  # offline input: who holds the lease is cluster state it does not show
        name = lease_name(service)
        if coverage.state is CoverageState.FAILED:
            return Hop(HopKind.LEASE, HopStatus.UNSEEN, f"Lease {name}", coverage.reason)
        candidates = sorted(self._leases.get(name, []), key=lambda o: (o.namespace != self._cilium_namespace,
                                                                       o.namespace or ""))
        if not candidates:
            return Hop(HopKind.LEASE, HopStatus.BROKEN, f"no Lease {name}",
                       f"no node has taken the L2 announcement election for Service {_name(service)} (no agent "
                       "selected by the policy's nodeSelector runs, or none has a matching interface)")
        lease = candidates[0]
        spec = lease.spec
        holder = as_str(spec.get("holderIdentity"))
        renewed = as_str(spec.get("renewTime"))
        evidence = (_evidence(lease, "spec.holderIdentity"),)
        if not holder:
            return Hop(HopKind.LEASE, HopStatus.BROKEN, f"Lease {lease.namespace}/{name} has no holder",
                       "no node answers ARP for the address", evidence)
        when = f", renewed {renewed}" if renewed else ""
        return Hop(HopKind.LEASE, HopStatus.OK, f"node {holder} holds Lease {lease.namespace}/{name}{when}",
                   evidence=evidence)

    def address(self, entrance: Entrance) -> Hop:
        address = entrance.address
        evidence = (address.evidence,) if address.evidence is not None else ()
        if address.kind is AddressKind.NODE_IPS:
            return Hop(HopKind.ADDRESS, HopStatus.OK, address.display, address.detail)
        if address.kind is not AddressKind.LOAD_BALANCER_IP:
            return Hop(HopKind.ADDRESS, HopStatus.OK, f"{address.display} ({address.detail})", evidence=evidence)
        pools = f" from pool {', '.join(p.name for p in address.pools)}" if address.pools else ""
        summary = f"{address.value or 'no address yet'}{pools} ({address.detail})"
        if address.value and address.detail == "status.loadBalancer.ingress":
            return Hop(HopKind.ADDRESS, HopStatus.OK, summary, evidence=evidence)
        view = self.view_of(entrance)
        if view is None or not view.lb_ipam:
            return Hop(HopKind.ADDRESS, HopStatus.UNSEEN, summary, "the address is not given by LB-IPAM", evidence)
        service = self.snapshot.get(kinds.SERVICE, view.ref.namespace, view.ref.name)
        if service is not None and self.snapshot.read_from_cluster(service):  # its status is cluster state
            return Hop(HopKind.ADDRESS, HopStatus.BROKEN, summary, "LB-IPAM has given the Service no address "
                       "(status.loadBalancer is empty)", evidence)
        if address.pools:
            return Hop(HopKind.ADDRESS, HopStatus.OK, summary, evidence=evidence)
        if not self.snapshot.coverage(kinds.LB_IP_POOL).state.known:
            return Hop(HopKind.ADDRESS, HopStatus.UNSEEN, summary, "the input holds no CiliumLoadBalancerIPPool",
                       evidence)
        why = (f"{address.value} is in no CiliumLoadBalancerIPPool that may give it to this Service" if address.value
               else "no CiliumLoadBalancerIPPool selects the Service")
        return Hop(HopKind.ADDRESS, HopStatus.BROKEN, summary, why, evidence)

    # --- the Gateway listener, its certificate, the route ---------------------------------------

    def listener(self, hop: ListenerHop, hostname: str | None = None, mismatch: str = "") -> Hop:
        where = f"{hop.protocol}:{hop.port}" + (f", hostname {hop.hostname}" if hop.hostname else "")
        summary = f"Gateway {_name(hop.gateway)} listener {hop.name} ({where})"
        if mismatch:
            return Hop(HopKind.LISTENER, HopStatus.BROKEN, summary, mismatch, (hop.evidence,))
        return Hop(HopKind.LISTENER, HopStatus.OK, summary, evidence=(hop.evidence,))

    def certificate(self, hop: ListenerHop) -> Hop | None:
        """An HTTPS listener's certificate, as gateway-https-listener-tls judges it (None: not HTTPS)."""
        gateway = self.snapshot.get(kinds.GATEWAY, hop.gateway.namespace, hop.gateway.name)
        match = _LISTENER_INDEX.fullmatch(hop.evidence.field)
        if gateway is None or match is None:
            return None
        index, listeners = int(match.group(1)), as_list(gateway.spec.get("listeners"))
        if index >= len(listeners):
            return None
        listener = as_mapping(listeners[index])
        verdict = self.tls.check(gateway, index, listener)
        if verdict is None:
            return None
        evidence = (Evidence(gateway.ref, gateway.source, f"{hop.evidence.field}.tls"),)
        summary = ", ".join(f"Secret {s}" for s in verdict.secrets) or "no certificate"
        if verdict.problems:
            return Hop(HopKind.CERTIFICATE, HopStatus.BROKEN, summary, "; ".join(verdict.problems), evidence)
        if verdict.unverified:
            return Hop(HopKind.CERTIFICATE, HopStatus.UNSEEN, summary, "; ".join(verdict.unverified), evidence)
        return Hop(HopKind.CERTIFICATE, HopStatus.OK, summary, evidence=evidence)

    # --- the backend Service and what serves it ------------------------------------------------

    def backend(self, backend: Backend) -> Hop:
        port = f" port {backend.port}" if backend.port is not None else ""
        summary = f"Service {_name(backend.service)}{port}"
        view = self.model.service(backend.service.namespace, backend.service.name)
        if view is not None:
            summary += f" ({view.type})"
        if backend.problem is None:
            return Hop(HopKind.BACKEND, HopStatus.OK, summary, evidence=(backend.evidence,))
        status = HopStatus.BROKEN if backend.verified else HopStatus.UNSEEN
        return Hop(HopKind.BACKEND, status, summary, f"{backend.problem.value}: {backend.evidence.note}",
                   (backend.evidence,))

    @cached_property
    def _slices(self) -> dict[tuple[str | None, str], list[K8sObject]]:
        found: dict[tuple[str | None, str], list[K8sObject]] = defaultdict(list)
        for piece in self.snapshot.of_kind(kinds.ENDPOINT_SLICE):
            service = piece.labels.get(SERVICE_NAME_LABEL)
            if isinstance(service, str):
                found[(piece.namespace, service)].append(piece)
        return found

    def endpoints(self, service: ObjectRef) -> Hop | None:
        """Live: the Service's ready endpoints. Offline: the workloads its selector selects (None: no Service,
        or one with no endpoints to have, ExternalName)."""
        view = self.model.service(service.namespace, service.name)
        if view is None or view.type == "ExternalName":
            return None
        coverage = self.snapshot.coverage(kinds.ENDPOINT_SLICE)
        slices = self._slices.get((service.namespace, service.name), [])
        if coverage.state is CoverageState.FAILED:
            return Hop(HopKind.ENDPOINTS, HopStatus.UNSEEN, f"EndpointSlices of Service {_name(service)}",
                       coverage.reason)
        if coverage.state is CoverageState.LISTED or slices:
            return _ready_endpoints(service, slices)
        return self._selected_workloads(view)

    def _selected_workloads(self, view: ServiceView) -> Hop:
        summary = f"pods of Service {_name(view.ref)}"
        if not view.pod_selector:
            return Hop(HopKind.ENDPOINTS, HopStatus.UNSEEN, summary,
                       "the Service has no selector: its endpoints are managed by hand, and the input shows none")
        selected = self.model.workloads_of(view)
        selector = ", ".join(f"{k}={v}" for k, v in sorted(view.pod_selector.items()))
        if not selected:
            return Hop(HopKind.ENDPOINTS, HopStatus.UNSEEN, summary,
                       f"no workload in the input carries the selector's labels {selector} (it may be rendered "
                       "elsewhere; ready endpoints are seen live)")
        names = ", ".join(f"{w.ref.kind} {_name(w.ref)}" for w in selected)
        return Hop(HopKind.ENDPOINTS, HopStatus.OK, f"{names} (selector {selector})",
                   "ready endpoints are seen live only", tuple(w.evidence for w in selected))


def _ready_endpoints(service: ObjectRef, slices: list[K8sObject]) -> Hop:
    ready, not_ready, pods, nodes = 0, 0, [], set()
    for piece in slices:
        for endpoint in as_list(piece.raw.get("endpoints")):
            endpoint = as_mapping(endpoint)
            if as_mapping(endpoint.get("conditions")).get("ready") is False:
                not_ready += 1
                continue
            ready += 1
            target = as_mapping(endpoint.get("targetRef"))
            if as_str(target.get("name")):
                pods.append(f"{as_str(target.get('kind')) or 'Pod'} {as_str(target.get('name'))}")
            if as_str(endpoint.get("nodeName")):
                nodes.add(as_str(endpoint.get("nodeName")))
    evidence = tuple(_evidence(piece, "endpoints") for piece in slices)
    if not slices:
        return Hop(HopKind.ENDPOINTS, HopStatus.BROKEN, f"no EndpointSlice of Service {_name(service)}",
                   "no pod backs the Service (its selector selects none, or it has none)")
    if not ready:
        return Hop(HopKind.ENDPOINTS, HopStatus.BROKEN, f"no ready endpoint of Service {_name(service)}",
                   f"{not_ready} endpoint(s), none ready", evidence)
    on = f" on {', '.join(sorted(nodes))}" if nodes else ""
    shown = f": {', '.join(pods[:5])}" + (f" and {len(pods) - 5} more" if len(pods) > 5 else "") if pods else ""
    more = f" ({not_ready} not ready)" if not_ready else ""
    return Hop(HopKind.ENDPOINTS, HopStatus.OK, f"{ready} ready endpoint(s){more}{on}{shown}", evidence=evidence)
