"""`ExposureModel`: the built model and the questions reports, rules and `audit trace` ask of it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, overload

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
from auditor.model import K8sObject, ObjectRef

# Listener protocols whose traffic is routed by hostname (Host header or TLS SNI).
HOSTNAME_PROTOCOLS = ("HTTP", "HTTPS", "TLS")

if TYPE_CHECKING:
    from auditor.exposure.settings import ExposureSettings
    from auditor.exposure.workloads import WorkloadIndex


Key = tuple[str | None, str]  # (namespace, name)


class ServiceViews(Sequence[ServiceView]):
    """The input's Services as views, in input order, each built the first time it is asked for.

    Most Services of a large cluster are ClusterIP Services that open no door; building a view
    for each (a frozen dataclass of twenty fields, its subject, evidence and ports) was most of
    the model's time on a 100k-Service dump, where only a few are ever looked at again (the
    Service of a finding, a route's backend). The builder asks at once for the views of the
    Services that open a door; a view is the same whenever it is built (a pure function of the
    Service and what the builder indexed before).
    """

    def __init__(self, keys: Sequence[Key], types: Sequence[str], build: Callable[[int], ServiceView]) -> None:
        self._keys, self._types, self._build = keys, types, build
        self._views: list[ServiceView | None] = [None] * len(keys)

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> ServiceView: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ServiceView]: ...

    def __getitem__(self, index: int | slice) -> ServiceView | Sequence[ServiceView]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        view = self._views[index]
        if view is None:
            view = self._views[index] = self._build(index % len(self) if index < 0 else index)
        return view

    def __iter__(self) -> Iterator[ServiceView]:
        return (self[i] for i in range(len(self)))

    def of_type(self, *types: str) -> list[ServiceView]:
        """The views of the Services of these `spec.type`s, in input order (building only those)."""
        return [self[i] for i, kind in enumerate(self._types) if kind in types]

    def named(self, namespace: str | None, name: str) -> list[ServiceView]:
        """Every view of the Service `namespace/name`, in input order (a base and an overlay are two)."""
        key = (namespace, name)
        positions = self._defined_again.get(key)
        if positions is None:
            first = self.first_named().get(key)
            positions = [] if first is None else [first]
        return [self[i] for i in positions]

    def first_named(self) -> Mapping[Key, int]:
        """(namespace, name) -> the position of its first definition, the one lookups find."""
        return self._first

    @cached_property
    def _first(self) -> dict[Key, int]:
        """In input order. Built at C speed when every identity is defined once (nearly always)."""
        once = dict(zip(self._keys, range(len(self._keys)), strict=True))
        if len(once) == len(self._keys):
            return once
        first: dict[Key, int] = {}
        for position, key in enumerate(self._keys):
            first.setdefault(key, position)
        return first

    @cached_property
    def _defined_again(self) -> dict[Key, list[int]]:
        """The positions of the identities defined more than once (none, most of the time)."""
        if len(self._first) == len(self._keys):
            return {}
        grouped: dict[Key, list[int]] = defaultdict(list)
        for position, key in enumerate(self._keys):
            grouped[key].append(position)
        return {key: positions for key, positions in grouped.items() if len(positions) > 1}


class ServicesByName(Mapping[Key, ServiceView]):
    """The first view of each (namespace, name), built when looked up, as `ServiceViews` builds them."""

    def __init__(self, views: ServiceViews) -> None:
        self._views, self._first = views, views.first_named()

    def __getitem__(self, key: Key) -> ServiceView:
        return self._views[self._first[key]]

    def __contains__(self, key: object) -> bool:
        return key in self._first

    def __iter__(self) -> Iterator[Key]:
        return iter(self._first)

    def __len__(self) -> int:
        return len(self._first)


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
    listed: Sequence[ServiceView]  # every Service of the input, in input order (two definitions of one
    # identity, a base and an overlay, are two views; `services` keeps the first, as the snapshot does);
    # a `ServiceViews` when built by auditor.exposure.build: views made on first use
    implied: tuple[ServiceView, ...]
    declared: tuple[ServiceView, ...]
    gateways: tuple[GatewayView, ...]
    routes: tuple[RouteView, ...]
    node_addresses: tuple[str, ...]
    settings: ExposureSettings
    notes: tuple[str, ...] = ()
    # The workloads by namespace and pod label, indexed once (`workloads_of`).
    workload_index: WorkloadIndex | None = field(default=None, repr=False)
    # The input's Services by `spec.type` (as `service_type` reads it), in input order (`services_of_type`).
    services_by_type: Mapping[str, Sequence[K8sObject]] | None = field(default=None, repr=False)

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

    def services_of_type(self, kind: str) -> Sequence[K8sObject]:
        """The input's Service objects of this `spec.type`, in input order: what a rule that judges
        only LoadBalancer Services walks, instead of asking every Service its type again."""
        if self.services_by_type is None:  # a model not made by auditor.exposure.build: never guess "none"
            raise LookupError("this exposure model was built without its Services by type")
        return self.services_by_type.get(kind, ())

    def service_views_of_type(self, *types: str) -> Iterator[ServiceView]:
        """`service_views()` of these `spec.type`s only (without building the input's other views)."""
        listed = self.listed.of_type(*types) if isinstance(self.listed, ServiceViews) else self.listed
        yield from (view for view in listed if view.type in types)
        yield from (view for view in (*self.implied, *self.declared) if view.type in types)

    def workloads_of(self, view: ServiceView) -> tuple[Workload, ...]:
        """The workloads (top-level owners: Deployment, DaemonSet...) whose pods the Service's selector selects."""
        if self.workload_index is None or not view.pod_selector:
            return ()
        return tuple(Workload(obj.ref, Evidence(obj.ref, obj.source, "pod template labels"))
                     for obj in self.workload_index.selected_by(view.ref.namespace, view.pod_selector))

    def view_of(self, subject: Subject) -> ServiceView | None:
        """The Service a subject stands for (a Service, a Gateway's data-plane Service, a values declaration);
        of several views with an equal subject, the last one."""
        for view in reversed((*self.declared, *self.implied)):
            if view.subject == subject:
                return view
        ref = subject.ref
        listed = (self.listed.named(ref.namespace, ref.name) if isinstance(self.listed, ServiceViews)
                  else self.listed)  # a listed view's subject names its own Service
        return next((view for view in reversed(listed) if view.subject == subject), None)

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
