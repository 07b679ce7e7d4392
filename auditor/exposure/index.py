"""`ExposureModel`: the built model and the questions reports, rules and `audit trace` ask of it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from auditor.exposure.gateway import hostnames_intersect
from auditor.exposure.model import (
    Channel,
    Declared,
    Entrance,
    Evidence,
    GatewayView,
    RouteView,
    ServiceView,
    Subject,
    Workload,
)
from auditor.model import ObjectRef

# Listener protocols whose traffic is routed by hostname (Host header or TLS SNI).
HOSTNAME_PROTOCOLS = ("HTTP", "HTTPS", "TLS")

if TYPE_CHECKING:
    from auditor.exposure.settings import ExposureSettings
    from auditor.exposure.workloads import WorkloadIndex


@dataclass(frozen=True, eq=False)
class ExposureModel:
    """Every way in of one snapshot (`entrances`, sorted by address then port) and what they are made of.

    - `services`: the input's Services by (namespace, name), as the model reads them;
      `implied`: the data-plane Services Gateway controllers make (not in the input);
      `declared`: Services declared in Helm values or operator resources.
    - `gateways`, `routes`: every Gateway (controller, hostNetwork mode, listeners, data-plane
      Service) and every route (the listeners it attaches to, why not, its backends).
    - `node_addresses`: the nodes' addresses the input shows.
    """

    entrances: tuple[Entrance, ...]
    services: Mapping[tuple[str | None, str], ServiceView]
    listed: tuple[ServiceView, ...]  # every Service of the input, in input order (two definitions of one
    # identity, a base and an overlay, are two views; `services` keeps the first, as the snapshot does)
    implied: tuple[ServiceView, ...]
    declared: tuple[ServiceView, ...]
    gateways: tuple[GatewayView, ...]
    routes: tuple[RouteView, ...]
    node_addresses: tuple[str, ...]
    settings: ExposureSettings
    notes: tuple[str, ...] = ()
    # The workloads by namespace and pod label, indexed once (`workloads_of`).
    workload_index: WorkloadIndex | None = field(default=None, repr=False)

    # --- Services ---------------------------------------------------------------------------

    def service_views(self) -> Iterator[ServiceView]:
        """Every Service the model knows: the input's, the controller-made ones, the values-declared ones."""
        yield from self.listed
        yield from self.implied
        yield from self.declared

    def service(self, namespace: str | None, name: str) -> ServiceView | None:
        """A Service by namespace and name: the input's, else one a Gateway controller makes."""
        found = self.services.get((namespace, name))
        if found is not None:
            return found
        return next((v for v in self.implied if v.ref.namespace == namespace and v.ref.name == name), None)

    def workloads_of(self, view: ServiceView) -> tuple[Workload, ...]:
        """The workloads (top-level owners: Deployment, DaemonSet...) whose pods the Service's selector selects."""
        if self.workload_index is None or not view.pod_selector:
            return ()
        return tuple(Workload(obj.ref, Evidence(obj.ref, obj.source, "pod template labels"))
                     for obj in self.workload_index.selected_by(view.ref.namespace, view.pod_selector))

    @cached_property
    def _views_by_subject(self) -> dict[Subject, ServiceView]:
        return {view.subject: view for view in self.service_views()}

    def view_of(self, subject: Subject) -> ServiceView | None:
        """The Service a subject stands for (a Service, a Gateway's data-plane Service, a values declaration)."""
        return self._views_by_subject.get(subject)

    # --- entrances ----------------------------------------------------------------------------

    @cached_property
    def _by_subject(self) -> dict[ObjectRef, tuple[Entrance, ...]]:
        grouped: dict[ObjectRef, list[Entrance]] = defaultdict(list)
        for entrance in self.entrances:
            grouped[entrance.subject.ref].append(entrance)
        return {ref: tuple(found) for ref, found in grouped.items()}

    def for_subject(self, ref: ObjectRef) -> tuple[Entrance, ...]:
        """The ways in whose findings are about `ref` (a Service, a workload, a Gateway, a HelmRelease)."""
        return self._by_subject.get(ref, ())

    def for_rule(self, rule: str) -> tuple[Entrance, ...]:
        return tuple(e for e in self.entrances if e.rule == rule)

    def of_channel(self, *channels: Channel) -> tuple[Entrance, ...]:
        return tuple(e for e in self.entrances if e.channel in channels)

    def for_backend(self, namespace: str | None, name: str) -> tuple[Entrance, ...]:
        """The ways in that end at Service `namespace/name`."""
        return tuple(e for e in self.entrances
                     if any(b.service.namespace == namespace and b.service.name == name for b in e.backends))

    def for_gateway(self, ref: ObjectRef) -> tuple[Entrance, ...]:
        return tuple(e for e in self.entrances if e.listener is not None and e.listener.gateway == ref)

    def by_hostname(self, hostname: str) -> tuple[Entrance, ...]:
        """The Gateway ways in a request for `hostname` can take: listeners that route by hostname (HTTP,
        HTTPS, TLS) whose hostname matches it, and the routes whose hostnames match it (or that set none)."""
        return tuple(
            e for e in self.entrances
            if e.listener is not None and e.listener.protocol.upper() in HOSTNAME_PROTOCOLS
            and hostnames_intersect(e.listener.hostname, (hostname,))
            and (e.route is None or not e.route.hostnames or hostnames_intersect(hostname, e.route.hostnames))
        )

    def gateway(self, namespace: str | None, name: str) -> GatewayView | None:
        return next((g for g in self.gateways if g.ref.namespace == namespace and g.ref.name == name), None)

    def route(self, ref: ObjectRef) -> RouteView | None:
        return next((r for r in self.routes if r.ref == ref), None)

    def declared_by(self, declared: Declared) -> tuple[ServiceView, ...]:
        return tuple(v for v in self.service_views() if v.declared is declared)
