"""namespace-missing-default-deny: every application namespace starts from deny-all."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from auditor.api import (
    AnyOf,
    Fact,
    Finding,
    K8sObject,
    ObjectRef,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    as_mapping,
    cilium_keys,
    is_empty_selector,
    kinds,
)
from auditor_rules.policy._policies import cilium_rules, selector_selects_namespace

DIRECTIONS = ("ingress", "egress")


def _network_policy_denies(policy: K8sObject) -> set[str]:
    """Directions a NetworkPolicy denies for every pod of its namespace.

    Default-deny is `podSelector: {}` with a policy type listed and no rules
    for it. Without `policyTypes`, Ingress is implied, and Egress only when
    egress rules exist (networking/v1 API reference).
    """
    spec = policy.spec
    selector = spec.get("podSelector")
    if selector is not None and not is_empty_selector(selector):
        return set()
    types = spec.get("policyTypes")
    if not isinstance(types, list):
        types = ["Ingress"] + (["Egress"] if as_list(spec.get("egress")) else [])
    denied = set()
    if "Ingress" in types and not as_list(spec.get("ingress")):
        denied.add("ingress")
    if "Egress" in types and not as_list(spec.get("egress")):
        denied.add("egress")
    return denied


def _cilium_rule_denies(rule: dict[str, Any]) -> set[str]:
    """Directions a Cilium rule puts into default deny while allowing nothing.

    The documented pattern is a section holding one empty rule (`ingress:
    [{}]`); an empty or absent section does not enable default deny, nor does
    `enableDefaultDeny: {<direction>: false}` (Cilium 1.16+).
    """
    opt_out = as_mapping(rule.get("enableDefaultDeny"))
    denied = set()
    for direction in DIRECTIONS:
        section = rule.get(direction)
        if opt_out.get(direction) is False:
            continue
        if isinstance(section, list) and section and all(entry == {} for entry in section):
            denied.add(direction)
    return denied


class NamespaceMissingDefaultDeny(Rule):
    id = "namespace-missing-default-deny"
    severity = Severity.ERROR
    title = "Application namespace without a default-deny network policy"
    rationale_fact = (
        "A NetworkPolicy with an empty podSelector that lists a policy type and has no rules for it "
        "denies that direction for every pod of its namespace. Cilium puts an endpoint in default deny "
        "for a direction when a rule selecting it has that section; upstream's default-deny example is "
        "a section holding one empty rule, enableDefaultDeny.<direction>: false (1.16+) opts a policy "
        "out, and enable-policy=always enforces policy on every endpoint. A "
        "CiliumClusterwideNetworkPolicy is scoped to namespaces through the io.kubernetes.pod.namespace "
        "label. Without a default deny, any pod can reach any other and the outside world."
    )
    rationale_decision = (
        "Every application namespace of the platform starts from deny-all, ingress and egress, and "
        "re-opens flows one by one, so an exposure mistake elsewhere stays contained: a namespace "
        "holding workloads or Services without both directions denied is an error. Accepted: those "
        "NetworkPolicy, CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy forms, or "
        "enable-policy=always. The system namespaces excluded by the posture are not checked; the API "
        "server's own default/kubernetes Service is not a workload."
    )
    remediation = (
        "Add a NetworkPolicy named default-deny-all with podSelector: {} and policyTypes: "
        "[Ingress, Egress] to the namespace, then allow the flows it needs (DNS, its Gateway "
        "routes) with further policies."
    )
    requires = (
        AnyOf(*kinds.WORKLOAD_KINDS, kinds.SERVICE, name="workloads or Services"),
        AnyOf(*kinds.NETWORK_POLICY_KINDS, name="network policies"),
    )
    uses = (kinds.NAMESPACE,)
    cilium_settings = (cilium_keys.ENABLE_POLICY,)
    posture_fields = ("defaultDeny.excludedNamespaces",)
    references = (
        "https://kubernetes.io/docs/concepts/services-networking/network-policies/#default-policies",
        "https://docs.cilium.io/en/stable/security/policy/language/#ingress-egress-default-deny",
        "https://docs.cilium.io/en/stable/security/policy/intro/#policy-enforcement-modes",
    )
    facts = (
        Fact(
            "NetworkPolicy: podSelector {} with a policy type and no rules for it denies that direction; without "
            "policyTypes, Ingress is implied and Egress only when egress rules exist",
            "networking.k8s.io/v1 (Kubernetes 1.8+)",
            "https://kubernetes.io/docs/reference/kubernetes-api/policy-resources/network-policy-v1/",
        ),
        Fact(
            "A Cilium rule selecting an endpoint with an ingress/egress section puts it in default deny for that "
            "direction; upstream's default-deny example is a section holding one empty rule (- {}); an empty or "
            "absent section does not",
            "Cilium, all supported releases (the `- {}` reading is contested in third-party material: facts §6.3)",
            "https://docs.cilium.io/en/stable/security/policy/intro/",
            also=("https://github.com/cilium/cilium/tree/main/examples/policies/l3/egress-default-deny",),
        ),
        Fact(
            "enableDefaultDeny.<direction>: false keeps a policy from switching its endpoints to default deny",
            "Cilium 1.16+",
            "https://github.com/cilium/cilium/pull/30572",
            also=("https://github.com/cilium/cilium/issues/35558",),
        ),
        Fact(
            "enable-policy=always enforces policy on every endpoint, rules or not",
            "Cilium, all supported releases",
            "https://docs.cilium.io/en/stable/security/policy/intro/#policy-enforcement-modes",
        ),
        Fact(
            "A CiliumClusterwideNetworkPolicy is scoped to namespaces through the k8s:io.kubernetes.pod.namespace "
            "label",
            "Cilium, all supported releases",
            "https://docs.cilium.io/en/latest/policy/kubernetes/",
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        holders = self._namespaces_with_workloads(snapshot, ctx)
        if not holders:
            return
        enforcement = ctx.concrete_setting(cilium_keys.ENABLE_POLICY)
        if enforcement is not None and enforcement.value == "always":
            # Cilium enforces policy on every endpoint, rules or not: deny-all by default.
            for namespace in sorted(holders):
                ctx.examined(self._namespace_ref(snapshot, namespace))
            return
        denied: dict[str, set[str]] = {}
        for policy in snapshot.of_kind(kinds.NETWORK_POLICY):
            if policy.namespace:
                denied.setdefault(policy.namespace, set()).update(_network_policy_denies(policy))
        for policy in snapshot.of_kind(kinds.CILIUM_NETWORK_POLICY):
            if not policy.namespace:
                continue
            for rule in cilium_rules(policy):
                if selector_selects_namespace(rule.get("endpointSelector"), policy.namespace):
                    denied.setdefault(policy.namespace, set()).update(_cilium_rule_denies(rule))
        clusterwide = [
            (rule, _cilium_rule_denies(rule))
            for policy in snapshot.of_kind(kinds.CILIUM_CLUSTERWIDE_NETWORK_POLICY)
            for rule in cilium_rules(policy)
        ]
        clusterwide = [(rule, directions) for rule, directions in clusterwide if directions]
        for namespace in sorted(holders):
            covered = set(denied.get(namespace, ()))
            for rule, directions in clusterwide:
                if selector_selects_namespace(rule.get("endpointSelector"), namespace):
                    covered |= directions
            ref, source = self._namespace_ref(snapshot, namespace), holders[namespace][0].source
            ctx.examined(ref)
            missing = [d for d in DIRECTIONS if d not in covered]
            if missing:
                counts = Counter(obj.kind for obj in holders[namespace])
                holding = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
                namespace_obj = snapshot.get(kinds.NAMESPACE, None, namespace)
                yield Finding(
                    object=ref,
                    message=f"no default-deny for {' and '.join(missing)} (namespace holds {holding})",
                    source=namespace_obj.source if namespace_obj is not None else source,
                )

    @staticmethod
    def _namespaces_with_workloads(snapshot: Snapshot, ctx: RuleContext) -> dict[str, list[K8sObject]]:
        holders: dict[str, list[K8sObject]] = {}
        for obj in snapshot.of_kind(*kinds.WORKLOAD_KINDS, kinds.SERVICE):
            namespace = obj.namespace
            if namespace is None or ctx.posture.namespace_excluded(namespace):
                continue
            if obj.gk == kinds.SERVICE and namespace == "default" and obj.name == "kubernetes":
                continue  # the API server's own Service
            holders.setdefault(namespace, []).append(obj)
        return holders

    @staticmethod
    def _namespace_ref(snapshot: Snapshot, namespace: str) -> ObjectRef:
        obj = snapshot.get(kinds.NAMESPACE, None, namespace)
        return obj.ref if obj is not None else ObjectRef("Namespace", None, namespace, "v1")
