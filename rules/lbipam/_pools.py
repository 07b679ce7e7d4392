"""LB-IPAM facts several rules share: pool ranges, requested IPs, interval indexes (pure).

Pools, ranges, requested addresses and the range index belong to the
exposure model now (auditor/exposure/pools.py, issue 12) and are re-exported
here under the names the rules have always used; what stays here is only the
rules' own range arithmetic (overlaps, coverage) and the cluster's own ranges.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Iterable, Iterator
from typing import TypeVar

from auditor.api import Snapshot, as_list, as_mapping, as_str, exposure, kinds

IPS_ANNOTATION = exposure.IPS_ANNOTATION
LEGACY_IPS_ANNOTATION = exposure.LEGACY_IPS_ANNOTATION
SHARING_KEY_ANNOTATION = exposure.SHARING_KEY_ANNOTATION
LEGACY_SHARING_KEY_ANNOTATION = exposure.LEGACY_SHARING_KEY_ANNOTATION
POOL_CONFLICT = exposure.POOL_CONFLICT
REQUEST_SATISFIED = exposure.REQUEST_SATISFIED
DEFAULT_LB_IPAM_KEY = exposure.DEFAULT_LB_IPAM_KEY
Range = exposure.Range
RangeIndex = exposure.RangeIndex
parse_address = exposure.parse_address
parse_cidr = exposure.parse_cidr
parse_start_stop = exposure.parse_start_stop
parse_range_text = exposure.parse_range_text
pool_blocks = exposure.pool_blocks
pool_disabled = exposure.pool_disabled
requested_ips = exposure.requested_ips
lb_ipam_handles = exposure.lb_ipam_handles

T = TypeVar("T")


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
