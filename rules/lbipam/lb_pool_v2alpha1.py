"""lb-pool-v2alpha1: LB-IPAM pools still written in the deprecated API version."""

from __future__ import annotations

import json
from collections.abc import Iterator

from auditor.api import (
    Fact,
    Finding,
    K8sObject,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    as_mapping,
    as_str,
    kinds,
)

DEPRECATED = "cilium.io/v2alpha1"
CURRENT = "cilium.io/v2"
POOL_CRD_NAME = "ciliumloadbalancerippools.cilium.io"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _last_applied_api_version(pool: K8sObject) -> str | None:
    text = pool.annotations.get(LAST_APPLIED)
    if not isinstance(text, str):
        return None
    try:
        applied = json.loads(text)
    except ValueError:
        return None
    return as_str(as_mapping(applied).get("apiVersion")) or None


def _writers_in_deprecated_version(pool: K8sObject) -> list[str]:
    """Field managers that last wrote the pool's spec through v2alpha1.

    The API server converts between served versions, so a pool listed as v2
    may still be maintained by a v2alpha1 manifest; managedFields keep the
    version each manager wrote with. Status writers (the operator) do not
    count: they do not own the manifest.
    """
    managers = []
    for entry in as_list(pool.metadata.get("managedFields")):
        entry = as_mapping(entry)
        if entry.get("apiVersion") == DEPRECATED and entry.get("subresource") != "status":
            managers.append(as_str(entry.get("manager"), "unknown manager"))
    return sorted(set(managers))


class LbPoolV2alpha1(Rule):
    id = "lb-pool-v2alpha1"
    severity = Severity.WARNING
    title = "CiliumLoadBalancerIPPool still in the deprecated cilium.io/v2alpha1"
    nothing_to_check = "CiliumLoadBalancerIPPool, nor its CRD"
    rationale_fact = (
        "CiliumLoadBalancerIPPool was promoted to cilium.io/v2 in Cilium 1.18; in 1.19 both versions "
        "are served, v2 is the storage version and v2alpha1 is marked deprecated, so a later release "
        "will stop serving it and manifests, and objects still stored, in v2alpha1 will break. "
        "CiliumL2AnnouncementPolicy is not affected: v2alpha1 is its only version in 1.19. The API "
        "server converts versions on read, so a pool listed as v2 may still be written through v2alpha1 "
        "(managedFields, the last-applied-configuration annotation) or stored in it (the CRD's "
        "status.storedVersions)."
    )
    rationale_decision = (
        "The platform pins its pools to cilium.io/v2 (ADR 0020): a pool written, applied or stored in "
        "v2alpha1 is a warning."
    )
    remediation = (
        "Change apiVersion to cilium.io/v2 in the pool manifest (spec.blocks is unchanged) and "
        "re-apply it; once every pool is rewritten, drop v2alpha1 from the CRD's "
        "status.storedVersions."
    )
    requires = (kinds.LB_IP_POOL,)
    uses = (kinds.CRD,)
    references = (
        "https://github.com/cilium/cilium/pull/39090",
        "https://docs.cilium.io/en/stable/network/lb-ipam/",
        "https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#upgrade-existing-objects-to-a-new-stored-version",
    )
    facts = (
        Fact("CiliumLoadBalancerIPPool is served as cilium.io/v2 (storage version)", "Cilium 1.18+", "https://github.com/cilium/cilium/pull/39090"),
        Fact(
            "cilium.io/v2alpha1 of the pool is still served but marked deprecated",
            "Cilium 1.19 (exact release of the deprecation marker: PARTIAL)",
            "https://github.com/cilium/cilium/pull/39134",
        ),
        Fact(
            "CiliumL2AnnouncementPolicy exists only as cilium.io/v2alpha1 (not flagged)",
            "Cilium 1.19",
            "https://github.com/cilium/cilium/blob/main/pkg/k8s/apis/cilium.io/client/crds/v2alpha1/ciliuml2announcementpolicies.yaml",
        ),
        Fact(
            "The API server converts between served versions on read; managedFields keep the version each manager "
            "wrote with, and status.storedVersions lists versions objects may still be stored in",
            "Kubernetes 1.16+ (CRD v1)",
            "https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/",
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        for pool in snapshot.of_kind(kinds.LB_IP_POOL):
            ctx.examined(pool)
            if pool.api_version == DEPRECATED:
                yield self.finding(pool, f"written in {DEPRECATED}; use {CURRENT}")
                continue
            reasons = []
            writers = _writers_in_deprecated_version(pool)
            if writers:
                reasons.append(f"managedFields show {', '.join(writers)} writing it in {DEPRECATED}")
            if _last_applied_api_version(pool) == DEPRECATED:
                reasons.append(f"last applied (kubectl apply) as {DEPRECATED}")
            if reasons:
                yield self.finding(pool, f"read as {pool.api_version} but {'; '.join(reasons)}")
        crd = snapshot.get(kinds.CRD, None, POOL_CRD_NAME)
        if crd is not None:
            ctx.examined(crd)
            stored = [v for v in as_list(crd.status.get("storedVersions")) if isinstance(v, str)]
            if "v2alpha1" in stored:
                yield self.finding(
                    crd,
                    f"status.storedVersions still lists v2alpha1 ({', '.join(stored)}): pools stored in the "
                    "deprecated version must be rewritten before it is removed",
                )
