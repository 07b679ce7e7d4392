"""The verdict of every way in: sanctioned by the posture, excepted by an entry, or drift.

`sanction` is what the posture allows (rules call it through their declared
view of the posture, so reading a field they do not declare is an error);
`judge` runs after the rules, and reads each entrance's verdict from its
rule's finding about the entrance's subject, so the exception list decides
once, for the rule and for the model alike.

The modes (docs/posture.md):
- `gateway` (default; ADR 0020 amended by 0071): the edge Gateways' listeners (on their
  LoadBalancer Service, its node ports, or the nodes in hostNetwork mode) are sanctioned;
  everything else is drift unless excepted.
- `l4` (ADR 0092): NodePort Services, hostPorts and hostNetwork ports the posture names
  (exposure.allow, the exposure contract) are sanctioned; LoadBalancer Services and Gateways
  are drift.
- `none`: nothing is sanctioned.
In every mode the infrastructure the posture lists (exposure.infrastructure: the Cilium agent,
node exporters, control-plane static Pods...) is sanctioned: its host ports are the nodes' own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from auditor.exposure.model import Entrance, JudgedEntrance, Verdict, VerdictKind
from auditor.exposure.rules import HOSTNETWORK_RULE, HOSTPORT_RULE, LB_RULE, NODEPORT_RULE
from auditor.model import Finding, FindingStatus, ObjectRef, RuleStatus
from auditor.posture import Posture

MODE_DECISIONS = {
    "gateway": "the edge Gateway is the only way in (ADR 0020, amended by 0071)",
    "l4": "UIs are reached on node IPs through the NodePort Services and hostPorts the posture names (ADR 0092)",
    "none": "nothing may be reachable from outside the cluster",
}


@dataclass(frozen=True, slots=True)
class Sanction:
    """The part of the posture that sanctions a way in, and why."""

    by: str  # the part of the posture: `exposure.mode gateway: Gateway gateway/edge (exposure.edgeGateways */*)`
    reason: str


def _infrastructure(entrance: Entrance, posture: Posture) -> Sanction | None:
    ref = entrance.subject.ref
    entry = next((e for e in posture.exposure_infrastructure if e.matches(ref.kind, ref.namespace, ref.name)), None)
    if entry is None:
        return None
    return Sanction(f"exposure.infrastructure entry {entry.describe()}", entry.reason)


def sanction(entrance: Entrance, posture: Posture) -> Sanction | None:
    """What part of the posture allows this way in, or None (then its rule reports it).

    Reads exposure.infrastructure for host ports, exposure.mode, exposure.edgeGateways for
    Gateway listeners, exposure.allow in mode l4: a rule calling it declares what it can reach.
    """
    if entrance.rule in (HOSTPORT_RULE, HOSTNETWORK_RULE) and entrance.listener is None:
        found = _infrastructure(entrance, posture)
        if found is not None:
            return found
    mode = posture.exposure_mode
    gateway_rules = (LB_RULE, NODEPORT_RULE, HOSTNETWORK_RULE)
    if mode == "gateway" and entrance.listener is not None and entrance.rule in gateway_rules:
        gateway = entrance.listener.gateway
        pattern = posture.edge_gateway(gateway.namespace, gateway.name)
        if pattern is not None:
            name = f"{gateway.namespace}/{gateway.name}" if gateway.namespace else gateway.name
            return Sanction(f"exposure.mode gateway: Gateway {name} is the edge "
                            f"(exposure.edgeGateways {pattern})", MODE_DECISIONS["gateway"])
    if mode == "l4" and entrance.listener is None and entrance.rule in (NODEPORT_RULE, HOSTPORT_RULE, HOSTNETWORK_RULE):
        ref = entrance.subject.ref
        entry = next((e for e in posture.exposure_allow if e.matches(ref.kind, ref.namespace, ref.name)), None)
        if entry is not None:
            return Sanction(f"exposure.mode l4: exposure.allow entry {entry.describe()}", entry.reason)
    return None


def unsanctioned(entrances: Iterable[Entrance], posture: Posture) -> dict[ObjectRef, list[Entrance]]:
    """The entrances the posture does not allow, by subject, in model order (what a rule reports)."""
    grouped: dict[ObjectRef, list[Entrance]] = {}
    for entrance in entrances:
        if sanction(entrance, posture) is None:
            grouped.setdefault(entrance.subject.ref, []).append(entrance)
    return grouped


def judge(entrances: Iterable[Entrance], posture: Posture, findings: Iterable[Finding],
          rules: Mapping[str, tuple[RuleStatus, str]]) -> tuple[JudgedEntrance, ...]:
    """Each entrance with its verdict. `rules`: the status and reason of each rule that was selected."""
    about: dict[tuple[str, ObjectRef], list[Finding]] = defaultdict(list)
    for finding in findings:
        about[(finding.rule, finding.object)].append(finding)
    judged = []
    for entrance in entrances:
        judged.append(JudgedEntrance(entrance, _verdict(entrance, posture, about, rules)))
    return tuple(judged)


def _verdict(entrance: Entrance, posture: Posture, about: Mapping[tuple[str, ObjectRef], list[Finding]],
             rules: Mapping[str, tuple[RuleStatus, str]]) -> Verdict:
    allowed = sanction(entrance, posture)
    if allowed is not None:
        return Verdict(VerdictKind.SANCTIONED, entrance.rule, allowed.by, allowed.reason)
    status = rules.get(entrance.rule)
    if status is None:
        return Verdict(VerdictKind.UNJUDGED, entrance.rule, reason=f"rule {entrance.rule} was not selected")
    if status[0] not in (RuleStatus.PASSED, RuleStatus.FAILED):
        return Verdict(VerdictKind.UNJUDGED, entrance.rule, reason=f"rule {entrance.rule} is {status[0].value}: "
                       f"{status[1]}")
    found = about.get((entrance.rule, entrance.subject.ref), [])
    excepted = [f for f in found if f.status is FindingStatus.EXCEPTED and f.exception is not None]
    if found and len(excepted) == len(found):
        entry = excepted[0].exception
        assert entry is not None
        return Verdict(VerdictKind.EXCEPTED, entrance.rule, entry.name, entry.reason)
    if found:
        return Verdict(VerdictKind.DRIFT, entrance.rule, reason=found[0].message)
    return Verdict(VerdictKind.UNJUDGED, entrance.rule, reason=f"rule {entrance.rule} reported nothing about it")
