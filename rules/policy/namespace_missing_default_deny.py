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
    NotRun,
    ObjectRef,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    as_mapping,
    as_str,
    cilium_keys,
    is_empty_selector,
    is_placeholder,
    kinds,
)
from auditor_rules.policy._policies import cilium_rules, selector_selects_namespace

DIRECTIONS = ("ingress", "egress")
# What deploys into a namespace besides the workloads and Services in it: a Flux HelmRelease (into
# spec.targetNamespace, default its own namespace) and an Argo CD Application (into
# spec.destination.namespace).
DEPLOYERS = (kinds.HELM_RELEASE, kinds.ARGO_APPLICATION)
NO_POLICY_AT_ALL = "the input holds no network policy at all"


def deploys_into(obj: K8sObject) -> str | None:
    """The namespace a workload, Service, HelmRelease or Application puts pods or Services into (None: unknown).

    HelmRelease: `spec.targetNamespace`, else its own namespace (helm-controller API, HelmReleaseSpec).
    Application: `spec.destination.namespace` (Argo CD sets it on the namespaced objects that name none);
    without one, its objects name their own namespaces, which the Application does not show.
    """
    if obj.gk == kinds.HELM_RELEASE:
        namespace = as_str(obj.spec.get("targetNamespace")) or obj.namespace
    elif obj.gk == kinds.ARGO_APPLICATION:
        namespace = as_str(as_mapping(obj.spec.get("destination")).get("namespace")) or None
    else:
        namespace = obj.namespace
    return namespace if namespace and not is_placeholder(namespace) else None


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
    nothing_to_check = "application namespace holding workloads, Services, HelmReleases or Argo CD Applications"
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
        "holding workloads or Services, or that a HelmRelease or an Argo CD Application deploys into, "
        "without both directions denied is an error. A folder of manifests (a GitOps tree) is declared "
        "state: one that holds no network policy at all fails every such namespace; a cluster dump "
        "without policies (kubectl get all) or files named one by one say nothing about them, and the "
        "rule does not run on those. Accepted: those "
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
        AnyOf(*kinds.WORKLOAD_KINDS, kinds.SERVICE, *DEPLOYERS,
              name="workloads, Services, HelmReleases or Argo CD Applications"),
    )
    uses = (*kinds.NETWORK_POLICY_KINDS, kinds.NAMESPACE)
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
            "A HelmRelease installs into spec.targetNamespace, which defaults to the HelmRelease's namespace",
            "Flux helm-controller v2 (helm.toolkit.fluxcd.io/v2)",
            "https://fluxcd.io/flux/components/helm/helmreleases/",
        ),
        Fact(
            "An Argo CD Application's spec.destination.namespace is set on the namespaced resources it deploys "
            "that do not set metadata.namespace",
            "Argo CD v2.x (ApplicationDestination.Namespace)",
            "https://github.com/argoproj/argo-cd/blob/master/pkg/apis/application/v1alpha1/types.go",
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
        holders, unplaced = self._namespaces_with_workloads(snapshot, ctx)
        if unplaced:  # which namespaces they deploy into is not in the input: the verdict is on the others
            what = _unplaced_text(unplaced)
            if not holders:
                raise NotRun(f"{what}: which namespaces they deploy into is unknown")
            ctx.did_not_see(f"the namespaces of {what}", "no metadata.namespace (or targetNamespace) the input "
                            "resolves: kustomize or Flux sets it")
        if not holders:
            return
        enforcement = ctx.concrete_setting(cilium_keys.ENABLE_POLICY)
        if enforcement is not None and enforcement.value == "always":
            # Cilium enforces policy on every endpoint, rules or not: deny-all by default.
            for namespace in sorted(holders):
                ctx.examined(self._namespace_ref(snapshot, namespace))
            return
        no_policy = not any(ctx.known(gk) for gk in kinds.NETWORK_POLICY_KINDS)
        if no_policy:
            holders = self._declared_only(snapshot, ctx, holders)
        denied, clusterwide = self._denials(snapshot)
        for namespace in sorted(holders):
            covered = set(denied.get(namespace, ()))
            for rule, directions in clusterwide:
                if selector_selects_namespace(rule.get("endpointSelector"), namespace):
                    covered |= directions
            ref, source = self._namespace_ref(snapshot, namespace), holders[namespace][0].source
            ctx.examined(ref)
            missing = [d for d in DIRECTIONS if d not in covered]
            if missing:
                namespace_obj = snapshot.get(kinds.NAMESPACE, None, namespace)
                suffix = f"; {NO_POLICY_AT_ALL}" if no_policy else ""
                yield Finding(
                    object=ref,
                    message=f"no default-deny for {' and '.join(missing)} ({_holding(namespace, holders)}){suffix}",
                    source=namespace_obj.source if namespace_obj is not None else source,
                )

    @staticmethod
    def _declared_only(snapshot: Snapshot, ctx: RuleContext,
                       holders: dict[str, list[K8sObject]]) -> dict[str, list[K8sObject]]:
        """The namespaces whose objects are all declared state (a tree), when the input holds no policy.

        A folder of manifests (a GitOps tree) declares what the cluster runs: no policy in it is the
        strongest evidence that none is applied. Objects read from a cluster (a live read, a snapshot, a
        `kubectl get all` dump) and files named one by one (a commit's changed files) say nothing about
        policies kept elsewhere: the rule does not run on them, and says it did not see their
        namespaces' policies when it judges others.
        """
        declared = {ns: objs for ns, objs in holders.items() if all(snapshot.from_tree(obj) for obj in objs)}
        if not declared:
            raise NotRun(f"the input holds none of {', '.join(kinds.NETWORK_POLICY_KINDS)}, and it is not a tree of "
                         "manifests (a cluster dump, or files named one by one, says nothing about policies kept "
                         "elsewhere)")
        fragments = sorted(set(holders) - set(declared))
        if fragments:
            ctx.did_not_see(f"network policies of namespace{'s' if len(fragments) > 1 else ''} {', '.join(fragments)}",
                            "their objects were read from a cluster dump or from files named one by one, not from a "
                            "tree of manifests")
        return declared

    @staticmethod
    def _denials(snapshot: Snapshot) -> tuple[dict[str, set[str]], list[tuple[dict[str, Any], set[str]]]]:
        """The directions each namespace's own policies deny, and the clusterwide rules that deny some."""
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
        return denied, [(rule, directions) for rule, directions in clusterwide if directions]

    @staticmethod
    def _namespaces_with_workloads(snapshot: Snapshot,
                                   ctx: RuleContext) -> tuple[dict[str, list[K8sObject]], list[K8sObject]]:
        """The objects deploying into each namespace, and those whose namespace the input does not say
        (a manifest without metadata.namespace, which kustomize or Flux would set; a `${VAR}`)."""
        holders: dict[str, list[K8sObject]] = {}
        unplaced: list[K8sObject] = []
        posture = ctx.posture
        # Asked of every workload and Service (100k on a large dump) about a few hundred namespaces:
        # whether a namespace is a placeholder, and whether the posture excludes it, once per namespace.
        placeholder: dict[str, bool] = {}
        excluded: dict[str, bool] = {}
        for obj in snapshot.of_kind(*kinds.WORKLOAD_KINDS, kinds.SERVICE, *DEPLOYERS):
            if obj.gk in DEPLOYERS:
                namespace = deploys_into(obj)
            else:  # deploys_into, for an object that deploys into its own namespace
                namespace = obj.namespace
                if namespace is not None:
                    unknown = placeholder.get(namespace)
                    if unknown is None:
                        unknown = placeholder[namespace] = is_placeholder(namespace)
                    if unknown:
                        namespace = None
            if namespace is None:
                if obj.gk != kinds.ARGO_APPLICATION:  # an Application without a destination namespace: its objects'
                    unplaced.append(obj)
                continue
            skip = excluded.get(namespace)
            if skip is None:
                skip = excluded[namespace] = posture.namespace_excluded(namespace)
            if skip:
                continue
            if obj.gk == kinds.SERVICE and namespace == "default" and obj.name == "kubernetes":
                continue  # the API server's own Service
            holders.setdefault(namespace, []).append(obj)
        return holders, unplaced

    @staticmethod
    def _namespace_ref(snapshot: Snapshot, namespace: str) -> ObjectRef:
        obj = snapshot.get(kinds.NAMESPACE, None, namespace)
        return obj.ref if obj is not None else ObjectRef("Namespace", None, namespace, "v1")


def _unplaced_text(unplaced: list[K8sObject]) -> str:
    """`3 HelmRelease, 1 Service whose namespace the input does not show (...)` (the first few named)."""
    counts = Counter(obj.kind for obj in unplaced)
    named = ", ".join(obj.ref.display for obj in unplaced[:3]) + (" ..." if len(unplaced) > 3 else "")
    return f"{', '.join(f'{n} {kind}' for kind, n in sorted(counts.items()))} whose namespace the input does not " \
           f"show ({named})"


def _holding(namespace: str, holders: dict[str, list[K8sObject]]) -> str:
    """`namespace holds 2 Deployment, 1 Service` (and what deploys into it from elsewhere)."""
    objects = holders[namespace]
    held = Counter(obj.kind for obj in objects if obj.namespace == namespace)
    text = "namespace holds " + ", ".join(f"{n} {kind}" for kind, n in sorted(held.items())) if held else ""
    deployers = sorted(obj.ref.display for obj in objects if obj.namespace != namespace)
    if deployers:
        into = f"{', '.join(deployers[:3])}{f' and {len(deployers) - 3} more' if len(deployers) > 3 else ''} " \
               "deploy" + ("s" if len(deployers) == 1 else "") + " into it"
        text = f"{text}; {into}" if text else into
    return text
