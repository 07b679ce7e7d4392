"""Which objects a label selector selects, field by field: the one evaluator the model and the rules use.

Kubernetes' `LabelSelectorAsSelector` (and Cilium's slim copy of it) turns a
nil selector into "nothing" and a selector with no requirements (`{}`) into
"everything". Some fields substitute "everything" for nil in code, so
"absent" means different things in different CRDs: each field the auditor
reads is declared here with what an absent selector means there and where
that is documented (notes/facts.md section 1), and `selects` is the only
place the difference is applied. `{}` always selects everything.

Matching 100,000 Services against a few dozen policies stays linear:
`SelectorSet` memoises verdicts on the values of the label keys its
selectors read.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from auditor.model import K8sObject, as_list, as_mapping, string_labels
from auditor.selectors import selector_matches, strip_source

# Labels Cilium adds to every Service before matching its selectors (BGP serviceLabelSet,
# L2 svcAndMetaLabels, LB-IPAM; notes/facts.md section 1).
SERVICE_NAMESPACE_LABEL = "io.kubernetes.service.namespace"
SERVICE_NAME_LABEL = "io.kubernetes.service.name"


class Absent(enum.Enum):
    """What a field's absent (nil) selector selects."""

    NOTHING = "nothing"
    EVERYTHING = "everything"


@dataclass(frozen=True, slots=True)
class SelectorField:
    """One selector field the auditor reads, with its documented meaning of "absent"."""

    name: str
    absent: Absent
    holds_for: str
    source: str


BGP_ADVERTISEMENT_SERVICES = SelectorField(
    "CiliumBGPAdvertisement.spec.advertisements[].selector", Absent.NOTHING, "cilium.io/v2alpha1 and v2, Cilium 1.16+",
    "https://github.com/cilium/cilium/blob/1caf37d44b2703fb67cb64349e9f3de35a780400/pkg/k8s/apis/cilium.io/client/"
    "crds/v2/ciliumbgpadvertisements.yaml",
)
BGP_PEER_CONFIG_ADVERTISEMENTS = SelectorField(
    "CiliumBGPPeerConfig.spec.families[].advertisements", Absent.NOTHING, "cilium.io/v2alpha1 and v2, Cilium 1.16+",
    "https://github.com/cilium/cilium/blob/9bcad54a352594f8137a385f962b857622e0b741/pkg/bgp/manager/reconciler/"
    "peer_advertisements.go",
)
BGP_CLUSTER_CONFIG_NODES = SelectorField(
    "CiliumBGPClusterConfig.spec.nodeSelector", Absent.EVERYTHING, "cilium.io/v2alpha1 and v2, Cilium 1.16+",
    "https://github.com/cilium/cilium/blob/main/operator/pkg/bgpv2/cluster.go",
)
L2_POLICY_SERVICES = SelectorField(
    "CiliumL2AnnouncementPolicy.spec.serviceSelector", Absent.EVERYTHING, "cilium.io/v2alpha1, Cilium 1.14+",
    "https://github.com/cilium/cilium/blob/21d690e1b2e70ec1f2ce60c4de01a251e60eea37/pkg/l2announcer/l2announcer.go",
)
L2_POLICY_NODES = SelectorField(
    "CiliumL2AnnouncementPolicy.spec.nodeSelector", Absent.EVERYTHING, "cilium.io/v2alpha1, Cilium 1.14+",
    "https://github.com/cilium/cilium/blob/21d690e1b2e70ec1f2ce60c4de01a251e60eea37/pkg/l2announcer/l2announcer.go",
)
LB_POOL_SERVICES = SelectorField(
    "CiliumLoadBalancerIPPool.spec.serviceSelector", Absent.EVERYTHING, "cilium.io/v2alpha1 (1.13+) and v2 (1.18+)",
    "https://github.com/cilium/cilium/blob/main/operator/pkg/lbipam/lbipam.go",
)
# A Service's own spec.selector: absent and `{}` are the same on the wire (the field is
# `omitempty`) and both mean "endpoints are not managed from pods" (kubernetes#25836, #26193).
SERVICE_PODS = SelectorField(
    "Service.spec.selector", Absent.NOTHING, "Kubernetes, all versions (absent and {} alike)",
    "https://github.com/kubernetes/kubernetes/issues/25836",
)

FIELDS: tuple[SelectorField, ...] = (
    BGP_ADVERTISEMENT_SERVICES, BGP_PEER_CONFIG_ADVERTISEMENTS, BGP_CLUSTER_CONFIG_NODES,
    L2_POLICY_SERVICES, L2_POLICY_NODES, LB_POOL_SERVICES, SERVICE_PODS,
)


def selects(field: SelectorField, selector: Any, labels: Mapping[str, str]) -> bool:
    """Whether `selector` (as read from `field`) selects an object with `labels`.

    None is the absent selector (the field's documented meaning); `{}` selects
    everything; anything malformed selects nothing.
    """
    if selector is None:
        return field.absent is Absent.EVERYTHING
    return selector_matches(selector, labels)


def describe_selector(field: SelectorField, selector: Any) -> str:
    """`serviceSelector absent (selects every Service)`, `{}`, or the selector, for messages."""
    if selector is None:
        return f"{field.name.rsplit('.', 1)[-1]} absent (selects {field.absent.value})"
    if isinstance(selector, dict) and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return "{} (selects everything)"
    return "a selector"


def service_selector_labels(service: K8sObject) -> dict[str, str]:
    """The labels Cilium's Service selectors see: the Service's own plus its identity labels."""
    labels = string_labels(service.labels)
    if service.namespace:
        labels[SERVICE_NAMESPACE_LABEL] = service.namespace
    labels[SERVICE_NAME_LABEL] = service.name
    return labels


def _selector_keys(selector: object) -> tuple[str, ...]:
    """The label keys a selector reads (after stripping Cilium source prefixes)."""
    keys: set[str] = set()
    if isinstance(selector, dict):
        match_labels = selector.get("matchLabels")
        if isinstance(match_labels, dict):
            keys.update(strip_source(k) for k in match_labels if isinstance(k, str))
        for expression in as_list(selector.get("matchExpressions")):
            key = as_mapping(expression).get("key")
            if isinstance(key, str):
                keys.add(strip_source(key))
    return tuple(sorted(keys))


class SelectorSet:
    """Whether any of several selectors matches a label set, memoised on the keys they read.

    A selector's verdict depends only on the values of the keys it names, and
    those repeat across Services (a handful of namespaces, a few labels), so
    matching 100,000 Services against a few dozen policies costs one tuple and
    one dict lookup per Service. `always`: every label set matches (a field
    whose absent selector means everything).
    """

    __slots__ = ("_cache", "always", "keys", "selectors")

    def __init__(self, selectors: Iterable[Any], always: bool = False) -> None:
        self.selectors = list(selectors)
        self.always = always
        self.keys = tuple(sorted({key for s in self.selectors for key in _selector_keys(s)}))
        self._cache: dict[tuple[str | None, ...], bool] = {}

    @classmethod
    def of(cls, field: SelectorField, selectors: Iterable[Any]) -> SelectorSet:
        """The set of `selectors` read from `field` (None entries are absent selectors)."""
        listed = list(selectors)
        always = field.absent is Absent.EVERYTHING and any(s is None for s in listed)
        return cls([s for s in listed if s is not None], always)

    def __bool__(self) -> bool:
        return self.always or bool(self.selectors)

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.always:
            return True
        if not self.selectors:
            return False
        projection = tuple(labels.get(key) for key in self.keys)
        verdict = self._cache.get(projection)
        if verdict is None:
            verdict = any(selector_matches(s, labels) for s in self.selectors)
            self._cache[projection] = verdict
        return verdict
