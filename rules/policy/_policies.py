"""Reading network policies for what they open (pure functions).

A rule "opens a direction to anywhere" when its peer set is unrestricted and
it names no ports: the whole point is to tell a deliberate, port-bounded
opening (`ipBlock 0.0.0.0/0` on 443) from one that undoes default deny.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.api import K8sObject, as_list, as_mapping, as_str, is_empty_selector, selector_matches, strip_source
from auditor_rules.policy._address_space import Reach, RuleReach

NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
# Cilium entities that stand for "any peer" (`all`) or "any peer outside the
# cluster" (`world`, split per address family in dual-stack clusters).
ANYWHERE_ENTITIES = ("all", "world", "world-ipv4", "world-ipv6")
_WORLD_FAMILIES = {"world": (4, 6), "world-ipv4": (4,), "world-ipv6": (6,)}

# A Cilium rule entry naming no peer at all (`{}`, or only toPorts) is not
# read as "from anywhere" here: `ingress: [{}]` is upstream's documented
# default-deny pattern, and its traffic effect is contested (cilium-facts §6.3).
_CILIUM_ENTITIES = {"ingress": "fromEntities", "egress": "toEntities"}
_CILIUM_CIDRS = {"ingress": "fromCIDR", "egress": "toCIDR"}
_CILIUM_CIDR_SETS = {"ingress": "fromCIDRSet", "egress": "toCIDRSet"}


# --- Kubernetes NetworkPolicy -------------------------------------------------


def network_policy_selects_all(policy: K8sObject) -> bool:
    """`podSelector: {}` (or none): every pod of the policy's namespace."""
    selector = policy.spec.get("podSelector")
    return selector is None or is_empty_selector(selector)


def network_policy_directions(policy: K8sObject) -> list[str]:
    """The directions a NetworkPolicy governs; without policyTypes, Ingress always and
    Egress when it has egress rules (networking/v1 API reference)."""
    spec = policy.spec
    types = spec.get("policyTypes")
    if isinstance(types, list):
        return [d for d in ("ingress", "egress") if d.capitalize() in types]
    return ["ingress"] + (["egress"] if as_list(spec.get("egress")) else [])


@dataclass(frozen=True)
class OpenRule:
    """A rule that opens a direction on every port: where it is, what it allows, how far that reaches."""

    description: str
    reach: Reach


def network_policy_open_rules(policy: K8sObject, direction: str) -> list[OpenRule]:
    """The rules that allow `direction` on every port from/to every peer or a whole address space
    (an ipBlock 0.0.0.0/0 or ::/0, whatever it excepts: the except list decides how far it reaches)."""
    peer_key = "from" if direction == "ingress" else "to"
    out = []
    for index, rule in enumerate(as_list(policy.spec.get(direction))):
        if not isinstance(rule, dict) or as_list(rule.get("ports")):
            continue
        peers = rule.get(peer_key)
        if peers is None or peers == []:
            out.append(OpenRule(f"rule #{index + 1} has no {peer_key} and no ports: every peer, in the cluster "
                                "and outside", Reach.ANYWHERE))
            continue
        reach, blocks = RuleReach(), []
        for peer in as_list(peers):
            block = as_mapping(as_mapping(peer).get("ipBlock"))
            excepts = [e for e in as_list(block.get("except")) if isinstance(e, str)]
            cidr = reach.add_cidr(block.get("cidr"), excepts)
            if cidr is not None:
                blocks.append(f"ipBlock {cidr}" + (f" except {', '.join(excepts)}" if excepts else ""))
        opened = reach.opened()
        if opened is not None:
            out.append(OpenRule(f"rule #{index + 1} allows {'; '.join(blocks)}: {reach.describe()}", opened))
    return out


# --- Cilium policies ----------------------------------------------------------


def cilium_rules(policy: K8sObject) -> list[dict[str, Any]]:
    """The rules of a CiliumNetworkPolicy / CiliumClusterwideNetworkPolicy: `spec`, `specs`, or both."""
    rules = [policy.spec] if policy.spec else []
    rules += [rule for rule in as_list(policy.raw.get("specs")) if isinstance(rule, dict)]
    return rules


def namespace_only_selector(selector: object) -> bool:
    """A selector whose only constraints are on the pod-namespace label (or none at all)."""
    if not isinstance(selector, dict):
        return False
    if set(selector) - {"matchLabels", "matchExpressions"}:
        return False
    keys = [strip_source(k) for k in as_mapping(selector.get("matchLabels")) if isinstance(k, str)]
    keys += [strip_source(as_str(as_mapping(e).get("key"))) for e in as_list(selector.get("matchExpressions"))]
    return all(key == NAMESPACE_LABEL for key in keys)


def selector_selects_namespace(selector: object, namespace: str) -> bool:
    """Whether a namespace-only endpoint selector selects every pod of `namespace`."""
    return namespace_only_selector(selector) and selector_matches(selector, {NAMESPACE_LABEL: namespace})


def cilium_open_entries(rule: dict[str, Any], direction: str) -> list[OpenRule]:
    """The entries of a Cilium rule that allow `direction` on every port (no toPorts) from/to every peer
    (`*Entities: [all]`) or a whole address space (`world`, `world-ipv4`, `world-ipv6`, a 0.0.0.0/0 or
    ::/0 CIDR or CIDR set, whatever it excepts)."""
    out = []
    for index, entry in enumerate(as_list(rule.get(direction))):
        if not isinstance(entry, dict) or as_list(entry.get("toPorts")):
            continue
        reach, shown = RuleReach(), []
        entities_key = _CILIUM_ENTITIES[direction]
        entities = [e.strip().lower() for e in as_list(entry.get(entities_key)) if isinstance(e, str)]
        wide = [e for e in entities if e in ANYWHERE_ENTITIES]
        for entity in wide:
            if entity == "all":
                reach.anywhere = True
            else:
                reach.add_world(_WORLD_FAMILIES[entity])
        if wide:
            shown.append(f"{entities_key}: [{', '.join(wide)}]")
        cidrs = [c for c in as_list(entry.get(_CILIUM_CIDRS[direction])) if reach.add_cidr(c) is not None]
        for item in as_list(entry.get(_CILIUM_CIDR_SETS[direction])):
            item = as_mapping(item)
            excepts = [e for e in as_list(item.get("except")) if isinstance(e, str)]
            cidr = reach.add_cidr(item.get("cidr"), excepts)
            if cidr is not None:
                cidrs.append(cidr + (f" except {', '.join(excepts)}" if excepts else ""))
        if cidrs:
            shown.append(f"allows {', '.join(cidrs)}")
        opened = reach.opened()
        if opened is not None:
            out.append(OpenRule(f"{direction}[{index}] {', '.join(shown)} with no toPorts: {reach.describe()}",
                                opened))
    return out
