"""`audit trace TARGET`: the chains that reach a hostname, a Service or a Gateway, from the exposure model.

A chain follows one way in of the model (address, listener, route, backend)
and adds what the model does not judge by itself: the certificate of an
HTTPS listener, live the L2 lease and the ready endpoints. A route that a
Gateway it names does not attach (`RouteView.unattached`) gives a chain too,
through that Gateway's doors, broken at the listener (hostname) or the route.

Hostname targets match per Gateway API (listener `*.example.com` matches
`a.example.com` and `a.b.example.com`, not `example.com`): the ways in whose
listener routes by hostname (HTTP, HTTPS, TLS) and whose route names a
matching hostname, or sets none on a listener whose hostname matches.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import cached_property

from auditor import kinds
from auditor.engine import AuditResult
from auditor.errors import AuditError, ClusterError
from auditor.exposure import (
    Backend,
    Detached,
    Detachment,
    ExposureModel,
    JudgedEntrance,
    ListenerHop,
    RouteView,
)
from auditor.exposure.gateway import hostnames_intersect
from auditor.exposure.index import HOSTNAME_PROTOCOLS
from auditor.model import ObjectRef
from auditor.report.text import shown
from auditor.snapshot import CoverageState
from auditor.trace.hops import Hops
from auditor.trace.model import Chain, Hop, HopKind, HopStatus, Target, TargetKind, Trace

QUERY_LIMIT = 300  # characters of a target compared with the known ones (a DNS name has at most 253)
USAGE = ("TARGET is a hostname (argocd.cluster.lan), Service/NAMESPACE/NAME or Gateway/NAMESPACE/NAME "
         "(Kind/NAME for an object without a namespace)")
_KINDS = {"service": TargetKind.SERVICE, "svc": TargetKind.SERVICE, "gateway": TargetKind.GATEWAY,
          "gw": TargetKind.GATEWAY}


class UnknownTarget(AuditError):
    """A target the input does not know: exit 2, with the closest known targets."""

    why: str = ""  # what the input lacks (the message without the closest targets)


def parse_target(text: str) -> Target:
    """`argocd.cluster.lan`, `Service/argocd/argocd-server`, `Gateway/gateway/edge`."""
    if "/" not in text:
        hostname = text.strip().rstrip(".").lower()
        if not hostname:
            raise AuditError(f"an empty TARGET: {USAGE}")
        return Target(TargetKind.HOSTNAME, hostname)
    parts = text.split("/")
    kind = _KINDS.get(parts[0].lower())
    if kind is None or len(parts) not in (2, 3) or not all(parts[1:]):
        raise AuditError(f"TARGET '{shown(text, QUERY_LIMIT)}' is not valid: {USAGE}")
    # `Kind/NAME`: an object the input gives no namespace (a manifest whose namespace a Kustomization sets).
    namespace, name = (parts[1], parts[2]) if len(parts) == 3 else (None, parts[1])
    ref = ObjectRef("Service" if kind is TargetKind.SERVICE else "Gateway", namespace, name)
    return Target(kind, ref.display, ref)


def _name(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


def known_targets(model: ExposureModel) -> list[str]:
    """Every target the input knows: listener and route hostnames, Services, Gateways."""
    found: dict[str, None] = {}
    for gateway in model.gateways:
        found.update((hop.hostname.lower(), None) for hop in gateway.listeners if hop.hostname)
    for route in model.routes:
        found.update((name.lower(), None) for name in route.hostnames)
    # Values-declared Services are named by their release and key path (`cilium:spec.values.hubble.ui.service`):
    # the name the chart renders is the chart's to choose, so it is not guessed.
    found.update((f"Service/{_name(v.ref)}", None) for v in (*model.listed, *model.implied, *model.declared))
    found.update((f"Gateway/{_name(g.ref)}", None) for g in model.gateways)
    return sorted(found)


def _same_kind(target: Target, candidate: str) -> bool:
    prefix = {TargetKind.SERVICE: "Service/", TargetKind.GATEWAY: "Gateway/"}.get(target.kind)
    return candidate.startswith(prefix) if prefix else "/" not in candidate


def unknown(target: Target, model: ExposureModel | Sequence[ExposureModel], why: str) -> UnknownTarget:
    """The error for a target the input does not know, with the closest known targets of its kind (over
    every model given: the clusters of a GitOps tree)."""
    models = [model] if isinstance(model, ExposureModel) else list(model)
    candidates = sorted({candidate for each in models for candidate in known_targets(each)})
    # Compared without the kind (`Service/`), which every candidate of the kind shares.
    bare = {c.split("/", 1)[1] if "/" in c else c: c for c in candidates if _same_kind(target, c)}
    query = (target.text.split("/", 1)[1] if target.ref is not None else target.text)[:QUERY_LIMIT]
    close = [bare[c] for c in difflib.get_close_matches(query, list(bare), n=3, cutoff=0.6)]
    if not close and target.ref is not None and target.ref.namespace:
        # Nothing spelled alike: the targets of its namespace (a Service declared in Helm values is named by
        # its release and key path, never like the Service the chart renders).
        close = [bare[c] for c in sorted(bare) if c.startswith(f"{target.ref.namespace}/")][:3]
    hint = (f"closest known targets: {', '.join(close)}" if close
            else f"{len(candidates)} known targets, none close" if candidates
            else "the input has no Gateway listener, route or Service to trace")
    error = UnknownTarget(f"unknown target '{shown(target.text, QUERY_LIMIT)}': {why} ({shown(hint, 2000)})")
    error.why = why
    return error


class _Tracer:
    def __init__(self, result: AuditResult, model: ExposureModel) -> None:
        self.result = result
        self.model = model
        self.hops = Hops(result, model)

    # --- chains of ways in -------------------------------------------------------------------

    def way_chain(self, judged: JudgedEntrance, only: ObjectRef | None = None) -> Chain:
        entrance = judged.entrance
        hops = [*self.hops.announcement(entrance), self.hops.address(entrance)]
        title = f"{entrance.address.display} {entrance.port_display}"
        backends = [b for b in entrance.backends if only is None or b.service == only]
        if entrance.listener is not None:
            hops += self.listener_hops(entrance.listener)
            route = entrance.route
            title += f" → Gateway {_name(entrance.listener.gateway)}#{entrance.listener.name}"
            if route is None:
                hops.append(Hop(HopKind.ROUTE, HopStatus.BROKEN, "no route",
                                f"no route attaches to listener {entrance.listener.name}"))
                return Chain(title, tuple(hops), judged)
            title += f" → {route.kind} {_name(route.ref)}"
            status = HopStatus.OK if route.forwards else HopStatus.BROKEN
            hops.append(Hop(HopKind.ROUTE, status, f"{route.kind} {_name(route.ref)}{_hostnames(route.hostnames)}",
                            route.why, (route.evidence,)))
            if not entrance.backends:
                hops.append(Hop(HopKind.BACKEND, HopStatus.BROKEN, "no backend",
                                "the route has no Service backendRef: it sends nothing"))
        elif not backends:  # a hostPort or hostNetwork pod: the workload itself
            names = ", ".join(f"{w.ref.kind} {_name(w.ref)}" for w in entrance.workloads) or "?"
            detail = next((note for note in entrance.notes if note.startswith("container ")), "")
            evidence = tuple(w.evidence for w in entrance.workloads)
            hops.append(Hop(HopKind.ENDPOINTS, HopStatus.OK, names, detail, evidence))
        else:
            title += f" → Service {_name(backends[0].service)}"
        hops += self._backend_hops(backends)
        return Chain(title, tuple(hops), judged)

    def listener_hops(self, listener: ListenerHop, mismatch: str = "") -> list[Hop]:
        hops = [self.hops.listener(listener, mismatch=mismatch)]
        certificate = self.hops.certificate(listener)
        return [*hops, certificate] if certificate is not None else hops

    def _backend_hops(self, backends: Iterable[Backend]) -> list[Hop]:
        hops = []
        for backend in backends:
            hops.append(self.hops.backend(backend))
            if backend.problem is None:
                endpoints = self.hops.endpoints(backend.service)
                if endpoints is not None:
                    hops.append(endpoints)
        return hops

    # --- chains of routes that attach nowhere --------------------------------------------------

    def detached_chains(self, route: RouteView, detachment: Detachment, only: ObjectRef | None = None) -> list[Chain]:
        status = HopStatus.BROKEN if detachment.verified else HopStatus.UNSEEN
        condition = f"{detachment.reason.condition}: " if detachment.reason.condition else ""
        route_hop = Hop(HopKind.ROUTE, status, f"{route.kind} {_name(route.ref)}{_hostnames(route.hostnames)}",
                        f"parentRef {detachment.parent} attaches it to no listener: {condition}{detachment.why}",
                        (detachment.evidence,))
        tail = self._backend_hops(b for b in route.backends if only is None or b.service == only)
        title = f"{route.kind} {_name(route.ref)} → {detachment.parent} (attached to no listener)"
        gateway = self.model.gateway(detachment.gateway.namespace, detachment.gateway.name)
        listeners = [hop for hop in gateway.listeners
                     if (detachment.section is None or hop.name == detachment.section)
                     and (detachment.port is None or hop.port == detachment.port)] if gateway is not None else []
        if not listeners:
            return [Chain(title, (route_hop, *tail))]
        chains = []
        for listener in listeners:
            mismatch = ""
            if detachment.reason is Detached.NO_MATCHING_HOSTNAME and not hostnames_intersect(
                    listener.hostname, route.hostnames):
                mismatch = f"hostname {listener.hostname} matches none of the route's ({', '.join(route.hostnames)})"
            doors: list[JudgedEntrance | None] = [*self.doors(listener)] or [None]
            for door in doors:
                head = [*self.hops.announcement(door.entrance), self.hops.address(door.entrance)] if door else []
                chains.append(Chain(title, (*head, *self.listener_hops(listener, mismatch), route_hop, *tail), door))
        return chains

    @cached_property
    def _doors(self) -> dict[ListenerHop, dict[tuple[str, str, str], JudgedEntrance]]:
        found: dict[ListenerHop, dict[tuple[str, str, str], JudgedEntrance]] = defaultdict(dict)
        for judged in self.result.exposures:
            entrance = judged.entrance
            if entrance.listener is not None:
                found[entrance.listener].setdefault(
                    (str(entrance.channel), entrance.address.display, entrance.port_display), judged)
        return found

    def doors(self, listener: ListenerHop) -> list[JudgedEntrance]:
        """One way in per address and port where `listener` takes traffic (indexed once)."""
        return list(self._doors.get(listener, {}).values())

    def detached(self, routes: Iterable[RouteView], only: ObjectRef | None = None,
                 gateway: ObjectRef | None = None) -> list[Chain]:
        chains = []
        for route in routes:
            for detachment in route.unattached:
                if gateway is None or detachment.gateway == gateway:
                    chains += self.detached_chains(route, detachment, only)
        return chains


def _hostnames(names: Iterable[str]) -> str:
    names = list(names)
    return f" ({', '.join(names)})" if names else ""


# --- targets -------------------------------------------------------------------------------


def _listener_for(listener: ListenerHop | None, hostname: str) -> bool:
    """Whether `listener` routes by hostname and names one matching `hostname` (one without a hostname takes
    every name, but says nothing of this one: DNS decides whether it reaches that Gateway)."""
    return (listener is not None and listener.protocol.upper() in HOSTNAME_PROTOCOLS and bool(listener.hostname)
            and hostnames_intersect(listener.hostname, (hostname,)))


def _matches_hostname(judged: JudgedEntrance, hostname: str) -> bool:
    """Whether a request for `hostname` takes this way in: the listener routes by hostname and matches it,
    and the route names a matching hostname (or names none, on a listener whose own hostname matches)."""
    listener, route = judged.entrance.listener, judged.entrance.route
    if listener is None or route is None or listener.protocol.upper() not in HOSTNAME_PROTOCOLS:
        return False
    if not route.hostnames:
        return _listener_for(listener, hostname)
    return hostnames_intersect(listener.hostname, (hostname,)) and hostnames_intersect(hostname, route.hostnames)


def _hostname_chains(tracer: _Tracer, hostname: str) -> list[Chain]:
    model, ways = tracer.model, tracer.result.exposures
    chains = [tracer.way_chain(j) for j in ways if _matches_hostname(j, hostname)]
    routes = [r for r in model.routes if r.hostnames and hostnames_intersect(hostname, r.hostnames)]
    chains += tracer.detached(routes)
    if chains:
        return chains
    # A listener for the name, but no route of it for the name: broken at the route.
    listeners = {j.entrance.listener for j in ways if _listener_for(j.entrance.listener, hostname)}
    for listener in sorted((hop for hop in listeners if hop is not None), key=lambda h: (h.gateway.sort_key, h.name)):
        for door in tracer.doors(listener):
            head = [*tracer.hops.announcement(door.entrance), tracer.hops.address(door.entrance)]
            route = Hop(HopKind.ROUTE, HopStatus.BROKEN, f"no route for {hostname}",
                        f"no route attached to listener {listener.name} names {hostname} (or sets no hostname)")
            chains.append(Chain(f"{door.entrance.address.display} {door.entrance.port_display} → Gateway "
                                f"{_name(listener.gateway)}#{listener.name}",
                                (*head, *tracer.listener_hops(listener), route), door))
    if not chains:
        raise unknown(Target(TargetKind.HOSTNAME, hostname), model,
                      "no Gateway listener or route of the input serves that hostname")
    return chains


def _service_chains(tracer: _Tracer, target: Target, ref: ObjectRef) -> list[Chain]:
    model = tracer.model
    view = model.service(ref.namespace, ref.name)
    declared = view is None
    if view is None:
        view = next((v for v in model.declared if (v.ref.namespace, v.ref.name) == (ref.namespace, ref.name)), None)
    if view is None:
        raise unknown(target, model, "the input holds no such Service (nor does a Gateway controller make it, "
                                     "nor Helm values declare it)")
    # A values-declared Service is one declaration of its release (which may declare several): its own subject.
    own = [tracer.way_chain(j) for j in tracer.result.exposures
           if (j.entrance.subject == view.subject if declared else j.entrance.subject.ref == view.subject.ref)]
    routed = [tracer.way_chain(j, only=view.ref) for j in tracer.result.exposures
              if j.entrance.listener is not None and j.entrance.subject.ref != view.subject.ref
              and any(b.service == view.ref for b in j.entrance.backends)]
    detached = tracer.detached([r for r in model.routes if any(b.service == view.ref for b in r.backends)],
                               only=view.ref)
    chains = [*own, *routed, *detached]
    if not chains:
        reason = (f"Service {_name(view.ref)} is {view.type}: it opens no door of its own, and no route sends "
                  "traffic to it")
        chains = [Chain(f"Service {_name(view.ref)}", (Hop(HopKind.BACKEND, HopStatus.BROKEN,
                                                            f"Service {_name(view.ref)} ({view.type})", reason,
                                                            (view.evidence,)),))]
    return chains


def _gateway_chains(tracer: _Tracer, target: Target, ref: ObjectRef) -> list[Chain]:
    model = tracer.model
    gateway = model.gateway(ref.namespace, ref.name)
    if gateway is None:
        raise unknown(target, model, "the input holds no such Gateway")
    chains = [tracer.way_chain(j) for j in tracer.result.exposures
              if j.entrance.listener is not None and j.entrance.listener.gateway == gateway.ref]
    chains += tracer.detached(model.routes, gateway=gateway.ref)
    if chains:
        return chains
    if gateway.controller not in ("cilium", "envoy-gateway"):
        status, reason = HopStatus.UNSEEN, gateway.host_network_why
    elif not gateway.listeners:
        status, reason = HopStatus.BROKEN, "the Gateway has no listener with a port"
    else:
        status = HopStatus.BROKEN
        reason = ("its data-plane Service opens no door (ClusterIP, or none made yet) and it does not listen on "
                  f"the nodes' addresses ({gateway.host_network_why})")
    hop = Hop(HopKind.ADDRESS, status, f"Gateway {_name(gateway.ref)}", reason, (gateway.evidence,))
    return [Chain(f"Gateway {_name(gateway.ref)}", (hop,))]


# Kinds whose failed read only hides one hop (it is then `unseen`); any other failed kind hides ways in.
_PER_HOP_KINDS = frozenset({kinds.LEASE, kinds.ENDPOINT_SLICE, kinds.SECRET, kinds.CERT_MANAGER_CERTIFICATE})


def _check_read(result: AuditResult, target: Target) -> None:
    """Fail closed: a kind the exposure model reads that could not be read may hide a way in, a pool or
    a route, so no chain drawn without it is trusted (exit 3, as for an audit that could not read)."""
    failed = [coverage.reason or gk for gk, coverage in sorted(result.snapshot.listed.items())
              if coverage.state is CoverageState.FAILED and gk not in _PER_HOP_KINDS]
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise ClusterError(f"cannot trace '{shown(target.text, QUERY_LIMIT)}': {shown(failed[0], 2000)}{more}")


def trace(result: AuditResult, target: Target) -> Trace:
    """The chains that reach `target` in the audited input; `UnknownTarget` when it knows no such target."""
    model = result.exposure_model
    if model is None:  # a fleet: each cluster has its own model (the command reads one cluster)
        raise AuditError("audit trace reads one cluster or one input at a time")
    _check_read(result, target)
    tracer = _Tracer(result, model)
    if target.kind is TargetKind.HOSTNAME or target.ref is None:
        chains = _hostname_chains(tracer, target.text)
    elif target.kind is TargetKind.SERVICE:
        chains = _service_chains(tracer, target, target.ref)
    else:
        chains = _gateway_chains(tracer, target, target.ref)
    return Trace(target, tuple(chains))


def trace_clusters(parts: Sequence[tuple[str, AuditResult]], target: Target) -> Trace:
    """The chains to `target` in each cluster of a GitOps tree (`parts`: name, that cluster's result), each
    titled with its cluster and its way in tagged with it, as the tree's audit tags findings; a cluster that
    does not know the target adds none. `UnknownTarget` only when no cluster knows it, with the closest
    known targets over them all."""
    chains: list[Chain] = []
    missing: list[UnknownTarget] = []
    for name, result in parts:
        try:
            found = trace(result, target)
        except UnknownTarget as error:
            missing.append(error)
            continue
        chains += [replace(chain, title=f"{name}: {chain.title}",
                           way=replace(chain.way, cluster=name) if chain.way is not None else None)
                   for chain in found.chains]
    if not chains:
        models = [result.exposure_model for _, result in parts if result.exposure_model is not None]
        raise unknown(target, models, missing[0].why if missing else "the tree audits no cluster")
    return Trace(target, tuple(chains))
