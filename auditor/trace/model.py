"""What `audit trace` finds: the chains from the LAN to a target, hop by hop, each with its evidence.

A `Chain` is one way the target is reached (or meant to be): its hops in
the platform's order (announcement, the L2 lease live, address, Gateway
listener, its certificate, route, backend Service, endpoints), each `ok`,
`broken` (the input shows it does not work) or `unseen` (the input cannot
tell). The first hop that is not ok names where the chain breaks.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from auditor.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK
from auditor.exposure import Evidence, JudgedEntrance
from auditor.model import ObjectRef


class HopStatus(str, enum.Enum):
    OK = "ok"
    BROKEN = "broken"  # the input shows this hop does not carry the traffic
    UNSEEN = "unseen"  # the input cannot tell (not in it, not read, or not authoritative)

    def __str__(self) -> str:
        return self.value


class HopKind(str, enum.Enum):
    ANNOUNCEMENT = "announcement"  # L2 policies / BGP advertisements, or the nodes' own addresses
    LEASE = "lease"  # live: the node holding the Service's L2 announcement lease
    ADDRESS = "address"  # the LoadBalancer IP (from its pool), the node addresses, the external IP
    LISTENER = "listener"  # the Gateway listener
    CERTIFICATE = "certificate"  # an HTTPS listener's certificate Secret (gateway-https-listener-tls)
    ROUTE = "route"  # the HTTPRoute/GRPCRoute/TLSRoute/TCPRoute/UDPRoute
    BACKEND = "backend"  # the Service and port the traffic is sent to
    ENDPOINTS = "endpoints"  # live: its ready endpoints; offline: the workloads its selector selects

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Hop:
    """One hop of a traced way in, with its status and the evidence for it."""

    kind: HopKind
    status: HopStatus
    summary: str  # what the hop is (`192.168.67.240 from pool lan`)
    reason: str = ""  # why it is broken or unseen, or a remark
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True)
class Chain:
    """One way to the target, hop by hop; `way`: the way in of the exposure model it follows (with its verdict)."""

    title: str
    hops: tuple[Hop, ...]
    way: JudgedEntrance | None = None

    @property
    def first_problem(self) -> int | None:
        """The position of the first hop that is not ok (None: the chain is whole)."""
        return next((index for index, hop in enumerate(self.hops) if hop.status is not HopStatus.OK), None)

    @property
    def status(self) -> HopStatus:
        index = self.first_problem
        return HopStatus.OK if index is None else self.hops[index].status


class TargetKind(str, enum.Enum):
    HOSTNAME = "hostname"
    SERVICE = "service"
    GATEWAY = "gateway"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Target:
    """What `audit trace` was asked about (an address, hostname or object), as given."""

    kind: TargetKind
    text: str  # as given (hostnames lower-cased)
    ref: ObjectRef | None = None  # the Service or Gateway


@dataclass(frozen=True)
class Trace:
    """A trace: the target and every chain of hops that leads to it."""

    target: Target
    chains: tuple[Chain, ...]

    @property
    def first_broken(self) -> tuple[int, Chain, Hop] | None:
        """The chain and hop that decide the verdict: the first unseen one (incompleteness ranks above a
        break, as in audits), else the first broken one; None when every chain is whole."""
        for wanted in (HopStatus.UNSEEN, HopStatus.BROKEN):
            for number, chain in enumerate(self.chains, 1):
                index = chain.first_problem
                if index is not None and chain.hops[index].status is wanted:
                    return number, chain, chain.hops[index]
        return None

    @property
    def exit_code(self) -> int:
        found = self.first_broken
        if found is None:
            return EXIT_OK
        return EXIT_INCOMPLETE if found[2].status is HopStatus.UNSEEN else EXIT_FINDINGS
