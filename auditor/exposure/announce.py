"""How an address is announced: the L2 policies and BGP advertisements that select its Service.

- L2 (Cilium 1.14+): a CiliumL2AnnouncementPolicy with `loadBalancerIPs:
  true` (or `externalIPs: true`) whose serviceSelector selects the Service;
  an absent serviceSelector selects every Service, and so does `{}`.
- BGP: a CiliumBGPAdvertisement entry of advertisementType Service with
  LoadBalancerIP (or ExternalIP) among `service.addresses` whose selector
  selects the Service; an absent selector selects nothing, `{}` every Service
  (facts X1), and the `NotIn [never-used-value]` idiom every Service (X11).

One announcing path that selects the Service is enough; when none does, the
answer is `unknown` as soon as an enabled path's objects are not in the
input, never "not announced" by default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from auditor import kinds
from auditor.exposure.model import Announcement, AnnouncementKind, AnnouncementState, Announcing, Evidence
from auditor.exposure.selection import (
    BGP_ADVERTISEMENT_SERVICES,
    L2_POLICY_SERVICES,
    SelectorField,
    SelectorSet,
)
from auditor.exposure.services import BGP_LB_CLASS, L2_LB_CLASS
from auditor.exposure.settings import ExposureSettings
from auditor.model import K8sObject, as_list, as_mapping

MECHANISMS = {AnnouncementKind.L2: "L2 announcements", AnnouncementKind.BGP: "the BGP control plane"}
LB_IP = "LoadBalancerIP"
EXTERNAL_IP = "ExternalIP"


@dataclass(frozen=True)
class _Announcer:
    """An announcement policy as the model reads it: what it selects and which nodes and interfaces it
    announces from."""

    obj: K8sObject
    kind: AnnouncementKind
    selects: SelectorSet
    field: str
    interfaces: tuple[str, ...]
    nodes: str


def _one(field: SelectorField, selector: Any) -> SelectorSet:
    return SelectorSet.of(field, [selector])


def _l2_nodes(spec: Mapping[str, Any]) -> str:
    selector = spec.get("nodeSelector")
    return "every node" if selector is None else "the nodes its nodeSelector selects"


class Announcers:
    """The L2 policies and BGP advertisement entries of a snapshot, each compiled once."""

    def __init__(self, policies: list[K8sObject], advertisements: list[K8sObject]) -> None:
        self.lb: list[_Announcer] = []
        self.external: list[_Announcer] = []
        for policy in policies:
            spec = policy.spec
            interfaces = tuple(i for i in as_list(spec.get("interfaces")) if isinstance(i, str))
            for flag, into in (("loadBalancerIPs", self.lb), ("externalIPs", self.external)):
                if spec.get(flag) is True:
                    into.append(_Announcer(policy, AnnouncementKind.L2, _one(L2_POLICY_SERVICES,
                                           spec.get("serviceSelector")), f"spec.{flag}", interfaces, _l2_nodes(spec)))
        for advertisement in advertisements:
            for index, entry in enumerate(as_list(advertisement.spec.get("advertisements"))):
                entry = as_mapping(entry)
                if entry.get("advertisementType") != "Service":
                    continue
                addresses = as_list(as_mapping(entry.get("service")).get("addresses"))
                for address, into in ((LB_IP, self.lb), (EXTERNAL_IP, self.external)):
                    if address in addresses:
                        into.append(_Announcer(advertisement, AnnouncementKind.BGP, _one(
                            BGP_ADVERTISEMENT_SERVICES, entry.get("selector")), f"spec.advertisements[{index}]",
                            (), ""))

    def announcing(self, labels: Mapping[str, str], lb_class: str | None, settings: ExposureSettings,
                   known: Callable[[str], bool], *, external: bool = False, labels_known: bool = True) -> Announcing:
        """How an address of a Service with these selector `labels` and class is announced."""
        l2_ok = lb_class in (None, L2_LB_CLASS) and settings.l2.on is not False
        bgp_ok = lb_class in (None, BGP_LB_CLASS) and settings.bgp.on is not False
        found: list[Announcement] = []
        for announcer in self.external if external else self.lb:
            eligible = l2_ok if announcer.kind is AnnouncementKind.L2 else bgp_ok
            if eligible and announcer.selects.matches(labels):
                found.append(Announcement(
                    announcer.kind, announcer.obj.ref,
                    Evidence(announcer.obj.ref, announcer.obj.source, announcer.field), announcer.interfaces,
                    announcer.nodes))
        return self._judge(found, lb_class, settings, known, labels_known, external)

    @staticmethod
    def _judge(found: list[Announcement], lb_class: str | None, settings: ExposureSettings,
               known: Callable[[str], bool], labels_known: bool, external: bool) -> Announcing:
        paths = [(AnnouncementKind.L2, settings.l2, kinds.L2_ANNOUNCEMENT_POLICY, L2_LB_CLASS),
                 (AnnouncementKind.BGP, settings.bgp, kinds.BGP_ADVERTISEMENT, BGP_LB_CLASS)]
        confirmed = [a for a in found if next(s for k, s, _, _ in paths if k is a.kind).on is True]
        if confirmed:
            return Announcing(AnnouncementState.ANNOUNCED, tuple(confirmed))
        if found:
            kinds_seen = ", ".join(sorted({str(a.kind) for a in found}))
            return Announcing(AnnouncementState.UNKNOWN, tuple(found),
                              f"selected for {kinds_seen}, but the input does not show whether it is on")
        unknown, missing = [], []
        for kind, state, gk, own_class in paths:
            if lb_class not in (None, own_class) or state.on is False:
                continue
            if state.on is None:
                unknown.append(state.why)
            elif not known(gk):
                unknown.append(f"{MECHANISMS[kind]} is on but the input holds no {gk.split('.', 1)[0]} objects")
            elif kind is AnnouncementKind.L2:
                flag = "externalIPs" if external else "loadBalancerIPs"
                missing.append(f"no CiliumL2AnnouncementPolicy with {flag}: true selects it")
            else:
                address = EXTERNAL_IP if external else LB_IP
                missing.append(f"no CiliumBGPAdvertisement (Service, {address}) selects it")
        if unknown or (not labels_known and missing):
            why = "; ".join(unknown) or "the rendered Service's labels are not all in the values"
            return Announcing(AnnouncementState.UNKNOWN, (), why)
        if not missing:
            on = [MECHANISMS[kind] for kind, state, _, _ in paths if state.on]
            why = (f"loadBalancerClass {lb_class} is not announced by what is on ({', '.join(on)})" if on
                   else "neither L2 announcements nor the BGP control plane is on")
            return Announcing(AnnouncementState.NOT_ANNOUNCED, (), why)
        return Announcing(AnnouncementState.NOT_ANNOUNCED, (), " and ".join(missing))


def describe(announcing: Announcing) -> str:
    """`L2 by CiliumL2AnnouncementPolicy default-l2 on ^eth0$` / `not announced: ...`, for messages."""
    if announcing.state is AnnouncementState.NOT_NEEDED:
        return "node addresses"
    parts = []
    for announcement in announcing.by:
        where = f" on {', '.join(announcement.interfaces)}" if announcement.interfaces else ""
        parts.append(f"{str(announcement.kind).upper()} by {announcement.by.kind} {announcement.by.name}{where}")
    text = "; ".join(parts)
    if announcing.state is AnnouncementState.ANNOUNCED:
        return text
    return f"{announcing.state.value}: {announcing.why}" + (f" ({text})" if text else "")

