"""Which kinds have no namespace: built-in cluster-scoped kinds, well-known CRDs, and CRDs in the tree.

Two views are kept apart on purpose:

- what the **API server** does: a cluster-scoped kind has no namespace, whatever
  the manifest or kustomize writes into it. This decides the effective
  namespace.
- what **kustomize** knows: its namespace transformer skips only the kinds its
  built-in OpenAPI schema marks cluster-scoped (the Kubernetes 1.21 built-ins;
  sigs.k8s.io/kustomize/kyaml/openapi). Any other kind, CRDs included (even
  one the same build declares `scope: Cluster`), gets the namespace written.
  Checked against `kubectl kustomize` (kustomize v5.5.0): a
  CiliumLoadBalancerIPPool, a GatewayClass, a ValidatingAdmissionPolicy get
  `namespace:`; a StorageClass or an IngressClass do not.

A kind known to neither table and not declared by a CRD in the tree counts
as namespaced, as kustomize and kubectl (without discovery) treat it.
"""

from __future__ import annotations

from collections.abc import Iterable

from auditor.model import group_kind, split_api_version
from auditor.sources.gitops.tree import ObjectRecord

# Built-in kinds kustomize's schema knows as cluster-scoped (group-kind keys).
KUSTOMIZE_CLUSTER_SCOPED: frozenset[str] = frozenset({
    "Namespace", "Node", "PersistentVolume", "ComponentStatus",
    "ClusterRole.rbac.authorization.k8s.io", "ClusterRoleBinding.rbac.authorization.k8s.io",
    "CustomResourceDefinition.apiextensions.k8s.io",
    "APIService.apiregistration.k8s.io",
    "MutatingWebhookConfiguration.admissionregistration.k8s.io",
    "ValidatingWebhookConfiguration.admissionregistration.k8s.io",
    "StorageClass.storage.k8s.io", "CSIDriver.storage.k8s.io", "CSINode.storage.k8s.io",
    "VolumeAttachment.storage.k8s.io",
    "PriorityClass.scheduling.k8s.io",
    "RuntimeClass.node.k8s.io",
    "IngressClass.networking.k8s.io",
    "CertificateSigningRequest.certificates.k8s.io",
    "PodSecurityPolicy.policy",
})

# Cluster-scoped for the API server but unknown to kustomize's schema: newer
# built-ins, and the CRDs GitOps repositories of this platform use most.
# Scopes from each project's CRD definitions (spec.scope: Cluster).
_API_CLUSTER_SCOPED_EXTRA: frozenset[str] = frozenset({
    # Kubernetes built-ins newer than kustomize's schema
    "ValidatingAdmissionPolicy.admissionregistration.k8s.io",
    "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io",
    "MutatingAdmissionPolicy.admissionregistration.k8s.io",
    "MutatingAdmissionPolicyBinding.admissionregistration.k8s.io",
    "FlowSchema.flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io",
    "ClusterTrustBundle.certificates.k8s.io",
    "IPAddress.networking.k8s.io", "ServiceCIDR.networking.k8s.io",
    "VolumeAttributesClass.storage.k8s.io",
    "DeviceClass.resource.k8s.io", "ResourceSlice.resource.k8s.io",
    "StorageVersionMigration.storagemigration.k8s.io",
    "TokenReview.authentication.k8s.io", "SelfSubjectReview.authentication.k8s.io",
    "SubjectAccessReview.authorization.k8s.io", "SelfSubjectAccessReview.authorization.k8s.io",
    "SelfSubjectRulesReview.authorization.k8s.io",
    # Cilium (github.com/cilium/cilium pkg/k8s/apis/cilium.io/client/crds)
    "CiliumClusterwideNetworkPolicy.cilium.io", "CiliumClusterwideEnvoyConfig.cilium.io",
    "CiliumLoadBalancerIPPool.cilium.io", "CiliumL2AnnouncementPolicy.cilium.io",
    "CiliumBGPPeeringPolicy.cilium.io", "CiliumBGPClusterConfig.cilium.io", "CiliumBGPPeerConfig.cilium.io",
    "CiliumBGPAdvertisement.cilium.io", "CiliumBGPNodeConfig.cilium.io", "CiliumBGPNodeConfigOverride.cilium.io",
    "CiliumEgressGatewayPolicy.cilium.io", "CiliumNode.cilium.io", "CiliumIdentity.cilium.io",
    "CiliumExternalWorkload.cilium.io", "CiliumCIDRGroup.cilium.io", "CiliumPodIPPool.cilium.io",
    "CiliumGatewayClassConfig.cilium.io",
    # Gateway API, cert-manager, external-secrets, snapshots
    "GatewayClass.gateway.networking.k8s.io",
    "ClusterIssuer.cert-manager.io",
    "ClusterSecretStore.external-secrets.io", "ClusterExternalSecret.external-secrets.io",
    "ClusterGenerator.generators.external-secrets.io", "ClusterPushSecret.external-secrets.io",
    "VolumeSnapshotClass.snapshot.storage.k8s.io", "VolumeSnapshotContent.snapshot.storage.k8s.io",
    "VolumeGroupSnapshotClass.groupsnapshot.storage.k8s.io",
    "VolumeGroupSnapshotContent.groupsnapshot.storage.k8s.io",
    # Policy engines and node features
    "ClusterPolicy.kyverno.io", "ClusterCleanupPolicy.kyverno.io", "ClusterPolicyReport.wgpolicyk8s.io",
    "NodeFeatureRule.nfd.k8s-sigs.io",
    # MetalLB has no cluster-scoped kinds; Flux and Argo CD kinds are all namespaced.
})

API_CLUSTER_SCOPED: frozenset[str] = KUSTOMIZE_CLUSTER_SCOPED | _API_CLUSTER_SCOPED_EXTRA


class Scopes:
    """Cluster-scoped kinds for one tree: the tables above plus the CRDs the tree declares."""

    def __init__(self, objects: Iterable[ObjectRecord]) -> None:
        declared_cluster: set[str] = set()
        declared_namespaced: set[str] = set()
        for record in objects:
            if record.gk != "CustomResourceDefinition.apiextensions.k8s.io":
                continue
            spec = record.data.get("spec")
            if not isinstance(spec, dict):
                continue
            names = spec.get("names")
            group = spec.get("group")
            kind = names.get("kind") if isinstance(names, dict) else None
            if not isinstance(group, str) or not isinstance(kind, str):
                continue
            target = declared_cluster if spec.get("scope") == "Cluster" else declared_namespaced
            target.add(group_kind(group, kind))
        # A CRD in the tree is the best evidence of its kind's scope.
        self.cluster_scoped: frozenset[str] = frozenset((API_CLUSTER_SCOPED | declared_cluster) - declared_namespaced)

    def is_cluster_scoped(self, gk: str) -> bool:
        return gk in self.cluster_scoped

    @staticmethod
    def kustomize_skips(gk: str) -> bool:
        """Whether kustomize's namespace transformer leaves this kind alone."""
        return gk in KUSTOMIZE_CLUSTER_SCOPED


def gk_of(api_version: str, kind: str) -> str:
    group, _ = split_api_version(api_version)
    return group_kind(group, kind)
