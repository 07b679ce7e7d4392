"""LB-IPAM facts several rules share: pool ranges, requested IPs, interval indexes (pure).

Addresses are handled as (family, first, last) integer ranges from Python's
`ipaddress`, so containment and overlap are integer comparisons and lookups
are sorted/bisected, never Services x pools loops. Malformed values anywhere
(`blocks: "x"`, `cidr: 5`, a bad address) are treated as absent.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from auditor.api import K8sObject, Snapshot, as_list, as_mapping, as_str, cilium_keys, kinds
from auditor_rules.exposure._services import (
    CILIUM_LB_CLASSES,
    load_balancer_class,
    service_type,
)

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
    """(where, text) of every address the Service asks LB-IPAM for.

    The `lbipam.cilium.io/ips` annotation wins over the legacy key when both
    are set (LB-IPAM reads the new key first, §3.4); `spec.loadBalancerIP` is
    honoured as well. Values are comma-separated; empty items are dropped.
    """
    found: list[tuple[str, str]] = []
    annotations = service.annotations
    for key in (IPS_ANNOTATION, LEGACY_IPS_ANNOTATION):
        value = annotations.get(key)
        if isinstance(value, str) and value.strip():
            found += [(f"annotation {key}", part.strip()) for part in value.split(",") if part.strip()]
            break
    legacy_field = service.spec.get("loadBalancerIP")
    if isinstance(legacy_field, str) and legacy_field.strip():
        found.append(("spec.loadBalancerIP", legacy_field.strip()))
    return found


def lb_ipam_handles(service: K8sObject, default_ipam: str | None) -> bool:
    """Whether Cilium's LB-IPAM allocates for this LoadBalancer Service.

    Services with Cilium's L2 or BGP class always; with no class unless
    `default-lb-service-ipam` hands class-less Services to another IPAM
    (`nodeipam`, `none`; default `lbipam`, 1.17+). Other classes belong to
    another implementation (§3.2, §3.3).
    """
    if service_type(service) != "LoadBalancer":
        return False
    lb_class = load_balancer_class(service)
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


def overlapping_pairs(ranges: list[tuple[Range, T]]) -> Iterator[tuple[tuple[Range, T], tuple[Range, T]]]:
    """Every pair of overlapping ranges, by one sorted sweep (output-sensitive)."""
    ordered = sorted(ranges, key=lambda entry: (entry[0].family, entry[0].first, entry[0].last))
    active: list[tuple[Range, T]] = []
    family = None
    for entry in ordered:
        rng = entry[0]
        if rng.family != family:
            active, family = [], rng.family
        active = [other for other in active if other[0].last >= rng.first]
        for other in active:
            yield other, entry
        active.append(entry)


def merge_ranges(ranges: Iterable[Range]) -> dict[int, list[tuple[int, int]]]:
    """Disjoint, sorted (first, last) spans per family covering `ranges`."""
    by_family: dict[int, list[tuple[int, int]]] = {}
    for rng in sorted(ranges, key=lambda r: (r.family, r.first)):
        spans = by_family.setdefault(rng.family, [])
        if spans and rng.first <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], max(spans[-1][1], rng.last))
        else:
            spans.append((rng.first, rng.last))
    return by_family


def covered(spans: dict[int, list[tuple[int, int]]], rng: Range) -> bool:
    """Whether merged `spans` contain all of `rng`."""
    family_spans = spans.get(rng.family, [])
    index = bisect.bisect_right(family_spans, (rng.first, float("inf"))) - 1
    return index >= 0 and family_spans[index][0] <= rng.first and rng.last <= family_spans[index][1]


# --- the cluster's own ranges ----------------------------------------------------------

_FLAG_VALUE = re.compile(r"^--service-cluster-ip-range(?:=(.*))?$")
_KUBEADM_SERVICE_SUBNET = re.compile(r"^\s*serviceSubnet:\s*[\"']?([^\"'\s#]+)", re.MULTILINE)


def _split_cidrs(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,]+", text.strip()) if part]


def service_cidrs(snapshot: Snapshot) -> tuple[list[Range], str] | None:
    """The Service CIDR(s) and where they were read, when the input shows them.

    First the kube-apiserver static Pod in kube-system (its
    --service-cluster-ip-range flag), then kubeadm's ClusterConfiguration in
    the kube-system/kubeadm-config ConfigMap (networking.serviceSubnet).
    """
    for pod in snapshot.of_kind(kinds.POD):
        if pod.namespace != "kube-system":
            continue
        if pod.labels.get("component") != "kube-apiserver" and not pod.name.startswith("kube-apiserver"):
            continue
        containers = as_list(as_mapping(pod.spec).get("containers"))
        for container in containers:
            container = as_mapping(container)
            arguments = as_list(container.get("command")) + as_list(container.get("args"))
            words = [w for w in arguments if isinstance(w, str)]
            for index, word in enumerate(words):
                match = _FLAG_VALUE.match(word)
                if not match:
                    continue
                following = words[index + 1] if index + 1 < len(words) else ""
                value = match.group(1) if match.group(1) is not None else following
                ranges = [r for r in (parse_cidr(part) for part in _split_cidrs(value)) if r is not None]
                if ranges:
                    return ranges, f"kube-apiserver --service-cluster-ip-range, Pod kube-system/{pod.name}"
    config_map = snapshot.get(kinds.CONFIGMAP, "kube-system", "kubeadm-config")
    if config_map is not None:
        text = as_str(config_map.data.get("ClusterConfiguration"))
        match = _KUBEADM_SERVICE_SUBNET.search(text)
        if match:
            ranges = [r for r in (parse_cidr(part) for part in _split_cidrs(match.group(1))) if r is not None]
            if ranges:
                return ranges, "networking.serviceSubnet, ConfigMap kube-system/kubeadm-config"
    return None


def node_pod_cidrs(snapshot: Snapshot) -> list[Range]:
    """Node `spec.podCIDRs` (and `spec.podCIDR`), merged into as few ranges as possible."""
    v4: list[ipaddress.IPv4Network] = []
    v6: list[ipaddress.IPv6Network] = []
    for node in snapshot.of_kind(kinds.NODE):
        texts = [t for t in as_list(node.spec.get("podCIDRs")) if isinstance(t, str)]
        single = node.spec.get("podCIDR")
        if isinstance(single, str):
            texts.append(single)
        for text in texts:
            try:
                network = ipaddress.ip_network(text.strip(), strict=False)
            except ValueError:
                continue
            if isinstance(network, ipaddress.IPv4Network):
                v4.append(network)
            else:
                v6.append(network)
    collapsed: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = [
        *ipaddress.collapse_addresses(v4), *ipaddress.collapse_addresses(v6)
    ]
    return [
        Range(network.version, int(network.network_address), int(network.broadcast_address), str(network))
        for network in collapsed
    ]
