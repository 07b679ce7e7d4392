"""policy-allows-all: a namespace-wide policy that opens a direction to anywhere on every port."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from auditor.api import (
    AnyOf,
    Fact,
    Finding,
    K8sObject,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    is_empty_selector,
    kinds,
    selector_matches,
)
from auditor_rules.policy._policies import (
    NAMESPACE_LABEL,
    cilium_open_entries,
    cilium_rules,
    namespace_only_selector,
    network_policy_directions,
    network_policy_open_rules,
    network_policy_selects_all,
)

# Egress to anywhere weakens containment; ingress from anywhere exposes every
# pod of the namespace: the latter is the rule's error, the former a warning.
DIRECTION_SEVERITY = {"ingress": None, "egress": Severity.WARNING}
DIRECTION_TEXT = {"ingress": "ingress from anywhere", "egress": "egress to anywhere"}
# A name no real namespace has: a namespace-only selector that selects it
# (NotIn / DoesNotExist) selects namespaces beyond the excluded ones.
_PROBE_NAMESPACE = "policy-allows-all-probe"


class PolicyAllowsAll(Rule):
    id = "policy-allows-all"
    severity = Severity.ERROR
    title = "Network policy opening a whole namespace to anywhere on every port"
    rationale_fact = (
        "A NetworkPolicy with an empty podSelector selects every pod of its namespace; a rule with no "
        "from/to matches every peer and one with no ports every port, and the allow rules of all "
        "policies selecting a pod add up. Cilium's entity world stands for every peer outside the "
        "cluster, all for every peer. So one policy that selects a whole namespace and allows a "
        "direction from or to anywhere on every port undoes default deny for that namespace, whatever "
        "the other policies say. A Cilium rule holding only `{}` is upstream's documented default-deny "
        "pattern, not an allow-all."
    )
    rationale_decision = (
        "Every application namespace of the platform starts from deny-all and re-opens flows one by "
        "one: such a policy is reported, ingress from anywhere as an error, egress to anywhere as a "
        "warning. Covered: NetworkPolicy rules with no peers or an ipBlock 0.0.0.0/0 (::/0), and "
        "CiliumNetworkPolicy / CiliumClusterwideNetworkPolicy entries with fromEntities/toEntities all "
        "or world or a 0.0.0.0/0 CIDR, all with no ports. Rules bounded by ports are deliberate "
        "openings; namespaces excluded by the posture are skipped."
    )
    remediation = (
        "Narrow the policy: select the pods that need the flow, name the peers (namespaces, "
        "pods, CIDRs) and the ports, or delete it and rely on the namespace's default-deny "
        "plus specific allow rules."
    )
    requires = (AnyOf(*kinds.NETWORK_POLICY_KINDS, name="network policies"),)
    posture_fields = ("defaultDeny.excludedNamespaces",)
    uses = (kinds.NAMESPACE,)
    facts = (
        Fact(
            "NetworkPolicy: podSelector {} selects every pod of the namespace; a rule with no from/to "
            "matches all sources/destinations and one with no ports all ports; allow rules of all "
            "policies selecting a pod are combined.",
            "networking.k8s.io/v1",
            "https://kubernetes.io/docs/concepts/services-networking/network-policies/",
        ),
        Fact(
            "Cilium entity world stands for every peer outside the cluster and all for every peer.",
            "Cilium 1.19 (policy language)",
            "https://docs.cilium.io/en/stable/security/policy/layer3/#entities-based",
        ),
        Fact(
            "An empty ingress/egress rule `{}` in a Cilium policy is upstream's documented default-deny "
            "pattern; its traffic effect is contested by third parties.",
            "Cilium 1.16+ docs",
            "https://docs.cilium.io/en/stable/security/policy/language/#ingress-egress-default-deny",
        ),
    )
    references = (
        "https://kubernetes.io/docs/concepts/services-networking/network-policies/#allow-all-ingress-traffic",
        "https://docs.cilium.io/en/stable/security/policy/language/",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        excluded = ctx.posture.namespace_excluded
        for policy in snapshot.of_kind(kinds.NETWORK_POLICY):
            if not policy.namespace or excluded(policy.namespace):
                continue
            ctx.examined(policy)
            if not network_policy_selects_all(policy):
                continue
            for direction in network_policy_directions(policy):
                opened = network_policy_open_rules(policy, direction)
                if opened:
                    yield self._finding(policy, f"every pod of namespace {policy.namespace}", direction, opened)
        for policy in snapshot.of_kind(kinds.CILIUM_NETWORK_POLICY):
            if not policy.namespace or excluded(policy.namespace):
                continue
            ctx.examined(policy)
            for rule in cilium_rules(policy):
                selector = rule.get("endpointSelector")
                if not (namespace_only_selector(selector)
                        and selector_matches(selector, {NAMESPACE_LABEL: policy.namespace})):
                    continue
                for direction in ("ingress", "egress"):
                    opened = cilium_open_entries(rule, direction)
                    if opened:
                        yield self._finding(policy, f"every pod of namespace {policy.namespace}", direction, opened)
        clusterwide = snapshot.of_kind(kinds.CILIUM_CLUSTERWIDE_NETWORK_POLICY)
        known_namespaces = self._known_namespaces(snapshot) if clusterwide else []
        for policy in clusterwide:
            ctx.examined(policy)
            for rule in cilium_rules(policy):
                scope = self._clusterwide_scope(rule.get("endpointSelector"), known_namespaces, excluded)
                if scope is None:
                    continue
                for direction in ("ingress", "egress"):
                    opened = cilium_open_entries(rule, direction)
                    if opened:
                        yield self._finding(policy, scope, direction, opened)

    def _finding(self, policy: K8sObject, scope: str, direction: str, opened: list[str]) -> Finding:
        return self.finding(
            policy,
            f"selects {scope} and allows {DIRECTION_TEXT[direction]} on every port ({'; '.join(opened)})",
            DIRECTION_SEVERITY[direction],
        )

    @staticmethod
    def _known_namespaces(snapshot: Snapshot) -> list[str]:
        names = {ns.name for ns in snapshot.of_kind(kinds.NAMESPACE)}
        names.update(obj.namespace for obj in snapshot.objects if obj.namespace)
        return sorted(names)

    @staticmethod
    def _clusterwide_scope(selector: object, namespaces: list[str], excluded: Callable[[str], bool]) -> str | None:
        """What a clusterwide rule's endpointSelector covers as whole namespaces, or None."""
        if selector is None:
            return None  # a host policy (nodeSelector) or an invalid rule: not about pods
        if is_empty_selector(selector):
            return "every endpoint of the cluster"
        if not namespace_only_selector(selector):
            return None
        hit = [ns for ns in namespaces if not excluded(ns) and selector_matches(selector, {NAMESPACE_LABEL: ns})]
        if hit:
            shown = ", ".join(hit[:5]) + (f" and {len(hit) - 5} more" if len(hit) > 5 else "")
            return f"every pod of namespace(s) {shown}"
        if selector_matches(selector, {NAMESPACE_LABEL: _PROBE_NAMESPACE}):
            return "every pod of the namespaces its selector admits"
        return None
