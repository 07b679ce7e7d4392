"""l2-policy-wrong-version: CiliumL2AnnouncementPolicy exists only as cilium.io/v2alpha1."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, crd_served_versions, kinds

GROUP = "cilium.io"
KNOWN_VERSIONS = ("v2alpha1",)  # the only version in Cilium 1.19 (docs/cilium-facts.md §2.1)
CRD_NAME = "ciliuml2announcementpolicies.cilium.io"


def served_versions(snapshot: Snapshot) -> tuple[list[str], str]:
    """Versions the API serves for the kind, and how that is known."""
    listed = snapshot.served_versions.get(kinds.L2_ANNOUNCEMENT_POLICY)
    if listed:
        return list(listed), "served by the API server (discovery)"
    crd = snapshot.get(kinds.CRD, None, CRD_NAME)
    if crd is not None:
        served = crd_served_versions(crd)
        if served:
            return served, f"served per CustomResourceDefinition {CRD_NAME}"
    return list(KNOWN_VERSIONS), "the only version Cilium 1.19 defines"


class L2PolicyWrongVersion(Rule):
    id = "l2-policy-wrong-version"
    severity = Severity.ERROR
    title = "CiliumL2AnnouncementPolicy written in an API version that is not served"
    nothing_to_check = "CiliumL2AnnouncementPolicy"
    rationale_fact = (
        "Unlike CiliumLoadBalancerIPPool (promoted to cilium.io/v2 in 1.18), CiliumL2AnnouncementPolicy "
        "has a single API version in Cilium 1.19, cilium.io/v2alpha1: the repository defines no v2 CRD "
        "for it and a 1.19.4 cluster serves only v2alpha1. A policy manifest \"upgraded\" to cilium.io/v2 "
        "along with the pools is rejected by the API server, so the GitOps sync fails and no L2 "
        "announcement policy exists."
    )
    rationale_decision = (
        "The platform pins the policy to v2alpha1, so any other version is an error (ADR 0020). The "
        "rule uses the versions the API serves when the input shows them (snapshot discovery or the "
        "CRD), else the 1.19 fact."
    )
    remediation = "Write the policy as apiVersion: cilium.io/v2alpha1 (its spec is unchanged) and re-apply it."
    requires = (kinds.L2_ANNOUNCEMENT_POLICY,)
    uses = (kinds.CRD,)
    facts = (
        Fact(
            "CiliumL2AnnouncementPolicy is served only as cilium.io/v2alpha1 (no v2 CRD)",
            "Cilium 1.19 (1.19.4 observed)",
            "https://github.com/cilium/cilium/tree/main/pkg/k8s/apis/cilium.io/client/crds/v2alpha1",
            also=("https://github.com/Faisal-Hajari/ai-platform/issues/15",),
        ),
    )
    references = (
        "https://docs.cilium.io/en/stable/network/l2-announcements/",
        "https://github.com/cilium/cilium/tree/main/pkg/k8s/apis/cilium.io/client/crds",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        versions, how = served_versions(snapshot)
        for policy in snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY):
            ctx.examined(policy)
            if policy.group == GROUP and policy.version in versions:
                continue
            expected = ", ".join(f"{GROUP}/{v}" for v in versions)
            yield self.finding(
                policy,
                f"written as {policy.api_version}, but CiliumL2AnnouncementPolicy is {how} only as {expected}: "
                "the API server rejects it and nothing is announced",
            )
