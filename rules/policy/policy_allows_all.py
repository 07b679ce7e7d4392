"""policy-allows-all: a namespace-wide policy that opens a direction on every port to anywhere, or to the world."""

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
from auditor_rules.policy._address_space import Reach
from auditor_rules.policy._policies import (
    NAMESPACE_LABEL,
    OpenRule,
    cilium_open_entries,
    cilium_rules,
    namespace_only_selector,
    network_policy_directions,
    network_policy_open_rules,
    network_policy_selects_all,
)

# How each reach reads in a finding, per direction (the broadest rule of the policy decides).
DIRECTION_TEXT = {
    ("ingress", Reach.ANYWHERE): "ingress from anywhere",
    ("ingress", Reach.WORLD): "ingress from everything outside the cluster (LAN included)",
    ("ingress", Reach.PARTIAL): "ingress from outside the cluster (part of the private ranges included)",
    ("ingress", Reach.INTERNET): "ingress from the internet",
    ("egress", Reach.ANYWHERE): "egress to anywhere",
    ("egress", Reach.WORLD): "egress to everything outside the cluster (LAN included)",
    ("egress", Reach.PARTIAL): "egress to outside the cluster (part of the private ranges included)",
    ("egress", Reach.INTERNET): "egress to the internet only",
}


def direction_severity(direction: str, reach: Reach) -> Severity | None:
    """Ingress from any of these exposes every pod of the namespace: the rule's error. Egress weakens
    containment: a warning while it reaches private networks (lateral movement to the LAN), info when it
    reaches the internet only (the private side stays closed; reported so it stays visible)."""
    if direction == "ingress":
        return None
    return Severity.INFO if reach is Reach.INTERNET else Severity.WARNING


# A name no real namespace has: a namespace-only selector that selects it
# (NotIn / DoesNotExist) selects namespaces beyond the excluded ones.
_PROBE_NAMESPACE = "policy-allows-all-probe"


class PolicyAllowsAll(Rule):
    id = "policy-allows-all"
    severity = Severity.ERROR
    title = "Network policy opening a whole namespace to anywhere, or to all or part of the world, on every port"
    nothing_to_check = "network policy outside the excluded namespaces"
    rationale_fact = (
        "A NetworkPolicy with an empty podSelector selects every pod of its namespace; a rule with no "
        "from/to matches every peer and one with no ports every port, and the allow rules of all "
        "policies selecting a pod add up. Cilium's entity all stands for every peer; world for every peer "
        "outside the cluster, and allowing world is the same as allowing 0.0.0.0/0. Cilium CIDR rules, and "
        "the ipBlocks it translates to CIDR rules, never match Cilium-managed pods or node IPs (unless "
        "policy-cidr-match-mode=nodes): 0.0.0.0/0 (::/0) is everything outside the cluster, the LAN and "
        "other private networks included, and excepting the pod or Service CIDRs changes nothing. What "
        "narrows it is excepting the private ranges (RFC 1918; fc00::/7 for IPv6): with all of them "
        "excepted, the internet only is left. A Cilium rule holding only `{}` is upstream's documented "
        "default-deny pattern, not an allow-all."
    )
    rationale_decision = (
        "Every application namespace of the platform starts from deny-all and re-opens flows one by one, "
        "so a policy that selects a whole namespace and opens a direction on every port is reported with "
        "what it reaches: anywhere (no peers, entity all), everything outside the cluster with the LAN "
        "(world, a whole-space CIDR whose excepts leave the private ranges reachable), outside the cluster "
        "with part of the private ranges (some excepted), or the internet only (every private range "
        "excepted; 100.64.0.0/10 and link-local ranges left reachable are named). Ingress from any of these "
        "is an error. Egress is a warning while it reaches private networks (lateral movement to the LAN) "
        "and info when it reaches the internet only (the private side stays closed; it stays visible in "
        "reports). Covered: NetworkPolicy rules with no peers or an ipBlock 0.0.0.0/0 or ::/0, and "
        "CiliumNetworkPolicy / CiliumClusterwideNetworkPolicy entries with fromEntities/toEntities all, "
        "world, world-ipv4, world-ipv6 or a whole-space fromCIDR/toCIDR/CIDR set, all with no ports; the "
        "union of a rule's CIDR peers decides what it reaches. Rules bounded by ports are deliberate "
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
            "Cilium entity all stands for every peer and world for every peer outside the cluster; allowing "
            "world is identical to allowing CIDR 0.0.0.0/0 (world-ipv4 / world-ipv6 name one family in "
            "dual-stack clusters).",
            "Cilium 1.19 (policy language)",
            "https://docs.cilium.io/en/stable/security/policy/language/#entities-based",
        ),
        Fact(
            "CIDR rules apply only to peers that are not Cilium-managed endpoints: traffic to or from pods "
            "and node IPs (hostNetwork pods included) is matched by identity, never by CIDR; since 1.15 "
            "policy-cidr-match-mode=nodes lets CIDR rules select node IPs. Cilium turns a NetworkPolicy "
            "ipBlock into such a CIDR rule (cidr with its except list).",
            "Cilium 1.15+",
            "https://docs.cilium.io/en/stable/security/policy/language/#ip-cidr-based",
            also=("https://docs.cilium.io/en/stable/network/kubernetes/policy/",),
        ),
        Fact(
            "Private-use address space: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 (RFC 1918) and IPv6 "
            "unique local addresses fc00::/7 (RFC 4193); 100.64.0.0/10 is shared address space for carrier "
            "NAT (RFC 6598), 169.254.0.0/16 and fe80::/10 are link-local.",
            "IETF",
            "https://www.rfc-editor.org/rfc/rfc1918",
            also=("https://www.rfc-editor.org/rfc/rfc4193", "https://www.rfc-editor.org/rfc/rfc6598"),
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

    def _finding(self, policy: K8sObject, scope: str, direction: str, opened: list[OpenRule]) -> Finding:
        reach = max(rule.reach for rule in opened)
        return self.finding(
            policy,
            f"selects {scope} and allows {DIRECTION_TEXT[direction, reach]} on every port "
            f"({'; '.join(rule.description for rule in opened)})",
            direction_severity(direction, reach),
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
