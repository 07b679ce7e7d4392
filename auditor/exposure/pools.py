"""LB-IPAM facts the model and several rules share: pool ranges, requested IPs, the range index (pure).

Addresses are handled as (family, first, last) integer ranges from Python's
`ipaddress`, so containment and overlap are integer comparisons and lookups
are sorted/bisected, never Services x pools loops. Malformed values anywhere
(`blocks: "x"`, `cidr: 5`, a bad address) are treated as absent. Moved here
from the rules' `_pools.py` when the exposure model took them over.
"""

from __future__ import annotations

import bisect
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from auditor.cilium import keys as cilium_keys
from auditor.exposure.services import CILIUM_LB_CLASSES, load_balancer_class, service_type
from auditor.model import K8sObject, as_list, as_mapping

# Service annotations requesting addresses (docs/cilium-facts.md §3.4).
IPS_ANNOTATION = "lbipam.cilium.io/ips"
LEGACY_IPS_ANNOTATION = "io.cilium/lb-ipam-ips"
SHARING_KEY_ANNOTATION = "lbipam.cilium.io/sharing-key"
LEGACY_SHARING_KEY_ANNOTATION = "io.cilium/lb-ipam-sharing-key"
POOL_CONFLICT = "cilium.io/PoolConflict"
# Service condition LB-IPAM sets when it cannot satisfy a request (both spellings seen, §1.3).
REQUEST_SATISFIED = ("io.cilium/lb-ipam-request-satisfied", "cilium.io/IPAMRequestSatisfied")
DEFAULT_LB_IPAM_KEY = cilium_keys.DEFAULT_LB_SERVICE_IPAM


@dataclass(frozen=True, slots=True)
class Range:
    """An inclusive address range of one IP family, with how the input wrote it."""

    family: int  # 4 or 6
    first: int
    last: int
    text: str


def parse_address(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not isinstance(text, str):
        return None
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def parse_cidr(text: Any) -> Range | None:
    """`10.0.0.0/24` (host bits allowed, as Go's ParseCIDR does) -> Range."""
    if not isinstance(text, str) or "/" not in text:
        return None
    try:
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    return Range(network.version, int(network.network_address), int(network.broadcast_address), text.strip())


def parse_start_stop(start: Any, stop: Any) -> Range | None:
    """A `start`[-`stop`] block: a lone start is one address; both must be one family, in order."""
    first = parse_address(start)
    if first is None:
        return None
    if stop is None:
        return Range(first.version, int(first), int(first), str(start).strip())
    last = parse_address(stop)
    if last is None or last.version != first.version or int(last) < int(first):
        return None
    return Range(first.version, int(first), int(last), f"{str(start).strip()}-{str(stop).strip()}")


def parse_range_text(text: Any) -> Range | None:
    """A posture range: CIDR, `start-stop`, or a single address."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if "/" in text:
        return parse_cidr(text)
    if "-" in text:
        start, _, stop = text.partition("-")
        return parse_start_stop(start, stop)
    return parse_start_stop(text, None)


def pool_blocks(pool: K8sObject) -> list[Range]:
    """A pool's ranges: `spec.blocks` (cidr, or start/stop) and the pre-1.16 `spec.cidrs`."""
    ranges: list[Range] = []
    for field_name in ("blocks", "cidrs"):
        for block in as_list(pool.spec.get(field_name)):
            block = as_mapping(block)
            if "cidr" in block:
                parsed = parse_cidr(block.get("cidr"))
            elif "start" in block:
                parsed = parse_start_stop(block.get("start"), block.get("stop"))
            else:
                parsed = None
            if parsed is not None:
                ranges.append(parsed)
    return ranges


def pool_disabled(pool: K8sObject) -> bool:
    return pool.spec.get("disabled") is True


def requested_ips(service: K8sObject) -> list[tuple[str, str]]:
    """(where, text) of every address the Service asks LB-IPAM for (see `requested_addresses`)."""
    return requested_addresses(service.annotations, service.spec.get("loadBalancerIP"))


def requested_addresses(annotations: Mapping[str, Any], load_balancer_ip: Any) -> list[tuple[str, str]]:
    """(where, text) of every address asked for by these annotations and `spec.loadBalancerIP`.

    The `lbipam.cilium.io/ips` annotation wins over the legacy key when both
    are set (LB-IPAM reads the new key first, §3.4); `spec.loadBalancerIP` is
    honoured as well. Values are comma-separated; empty items are dropped.
    """
    found: list[tuple[str, str]] = []
    for key in (IPS_ANNOTATION, LEGACY_IPS_ANNOTATION):
        value = annotations.get(key)
        if isinstance(value, str) and value.strip():
            found += [(f"annotation {key}", part.strip()) for part in value.split(",") if part.strip()]
            break
    if isinstance(load_balancer_ip, str) and load_balancer_ip.strip():
        found.append(("spec.loadBalancerIP", load_balancer_ip.strip()))
    return found


def lb_ipam_handles(service: K8sObject, default_ipam: str | None) -> bool:
    """Whether Cilium's LB-IPAM allocates for this LoadBalancer Service (see `lb_ipam_serves`)."""
    kind = service_type(service)  # asked of every Service by two rules: the class only of LoadBalancers
    return kind == "LoadBalancer" and lb_ipam_serves(kind, load_balancer_class(service), default_ipam)


def lb_ipam_serves(kind: str, lb_class: str | None, default_ipam: str | None) -> bool:
    """Whether Cilium's LB-IPAM allocates for a Service of this type and loadBalancerClass.

    Services with Cilium's L2 or BGP class always; with no class unless
    `default-lb-service-ipam` hands class-less Services to another IPAM
    (`nodeipam`, `none`; default `lbipam`, 1.17+). Other classes belong to
    another implementation (§3.2, §3.3).
    """
    if kind != "LoadBalancer":
        return False
    if lb_class is None:
        return (default_ipam or "lbipam").strip() == "lbipam"
    return lb_class in CILIUM_LB_CLASSES


T = TypeVar("T")


class RangeIndex(Generic[T]):
    """Ranges with a payload, answering "which ranges contain this address?" by bisection.

    Ranges may overlap (pools can): per family they are sorted by start with a
    running maximum of ends, so a query walks back only over ranges that can
    still reach the address.
    """

    def __init__(self, items: Iterable[tuple[Range, T]]) -> None:
        by_family: dict[int, list[tuple[Range, T]]] = {}
        for rng, payload in items:
            by_family.setdefault(rng.family, []).append((rng, payload))
        self._starts: dict[int, list[int]] = {}
        self._items: dict[int, list[tuple[Range, T]]] = {}
        self._reach: dict[int, list[int]] = {}
        for family, entries in by_family.items():
            entries.sort(key=lambda entry: (entry[0].first, entry[0].last))
            reach, highest = [], -1
            for rng, _ in entries:
                highest = max(highest, rng.last)
                reach.append(highest)
            self._items[family] = entries
            self._starts[family] = [rng.first for rng, _ in entries]
            self._reach[family] = reach

    def containing(self, family: int, value: int) -> list[tuple[Range, T]]:
        starts = self._starts.get(family)
        if not starts:
            return []
        items, reach = self._items[family], self._reach[family]
        found = []
        index = bisect.bisect_right(starts, value) - 1
        while index >= 0 and reach[index] >= value:
            rng, payload = items[index]
            if rng.last >= value:
                found.append((rng, payload))
            index -= 1
        found.reverse()
        return found
