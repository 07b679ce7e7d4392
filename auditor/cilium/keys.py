"""The vocabulary of the Cilium configuration: its keys, where each one is read, the Helm values behind it.

A *key* is what rules ask for: a cilium-config ConfigMap key (`kube-proxy-replacement`)
or one of the pseudo-keys for what the agent DaemonSet carries instead of the
ConfigMap (`agent-version`, the agent image tag; `env.KUBERNETES_SERVICE_HOST` and
`env.KUBERNETES_SERVICE_PORT`, its environment) and for the operator image the
same Helm release renders (`operator-version`, Helm values only: the operator
Deployment itself is read by the rules that need it). `KEYS` says, for every key the
auditor knows, which Helm values of the `cilium` chart render it and how, so that
GitOps input holding only Helm values answers the same question as a cluster's
ConfigMap. A key no Helm value renders says why (`configmap_only`).

The mapping follows the chart's templates, read at
https://github.com/cilium/cilium/blob/002c6fff44159c64bdb86ebfb145157b33eb997f/install/kubernetes/cilium/templates/cilium-configmap.yaml
(cilium-config) and install/kubernetes/cilium/templates/cilium-agent/daemonset.yaml
(the agent's env), and docs/cilium-facts.md §8. Rules declare the keys they read
(`Rule.cilium_settings`); the meta-tests check every declared key is here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from auditor import kinds

CHART_NAME = "cilium"
CONFIG_MAP_NAME = "cilium-config"
AGENT_DAEMONSET_NAME = "cilium"
AGENT_CONTAINER_NAME = "cilium-agent"
DEFAULT_NAMESPACE = "kube-system"
# Pseudo-kind naming a values file in findings (it is not a Kubernetes object).
VALUES_FILE_KIND = "HelmValues"

# Kinds any one of which can show the Cilium configuration (a values file given
# with --cilium-values can too, but it is not an object of the snapshot).
CONFIG_KINDS = (kinds.CONFIGMAP, kinds.DAEMONSET, kinds.HELM_RELEASE, kinds.ARGO_APPLICATION)
# Every kind the resolution reads: the above, plus the OCIRepository a HelmRelease's
# chartRef may name (it tells whether the chart is Cilium's). A rule that reads a
# setting reads these (`Rule.kinds_read`), so `audit live --rule X` lists them.
SOURCE_KINDS = (*CONFIG_KINDS, kinds.OCI_REPOSITORY)

# The pseudo-keys (not cilium-config keys: the agent DaemonSet carries them).
AGENT_VERSION = "agent-version"
OPERATOR_VERSION = "operator-version"
ENV_HOST = "env.KUBERNETES_SERVICE_HOST"
ENV_PORT = "env.KUBERNETES_SERVICE_PORT"
AGENT_ENV_NAMES = {ENV_HOST: "KUBERNETES_SERVICE_HOST", ENV_PORT: "KUBERNETES_SERVICE_PORT"}

# The cilium-config keys rules read.
KUBE_PROXY_REPLACEMENT = "kube-proxy-replacement"
ENABLE_NODE_PORT = "enable-node-port"
ENABLE_HOST_PORT = "enable-host-port"
ENABLE_EXTERNAL_IPS = "enable-external-ips"
ENABLE_L2_ANNOUNCEMENTS = "enable-l2-announcements"
L2_LEASE_DURATION = "l2-announcements-lease-duration"
L2_RENEW_DEADLINE = "l2-announcements-renew-deadline"
L2_RETRY_PERIOD = "l2-announcements-retry-period"
K8S_CLIENT_QPS = "k8s-client-qps"
K8S_CLIENT_BURST = "k8s-client-burst"
ENABLE_GATEWAY_API = "enable-gateway-api"
GATEWAY_API_HOST_NETWORK = "gateway-api-hostnetwork-enabled"
GATEWAY_API_SERVICE_ETP = "gateway-api-service-externaltrafficpolicy"
ENABLE_BGP_CONTROL_PLANE = "enable-bgp-control-plane"
DEFAULT_LB_SERVICE_IPAM = "default-lb-service-ipam"
IPAM = "ipam"
CLUSTER_POOL_IPV4_CIDR = "cluster-pool-ipv4-cidr"
CLUSTER_POOL_IPV6_CIDR = "cluster-pool-ipv6-cidr"
ENABLE_WIREGUARD = "enable-wireguard"
ENABLE_IPSEC = "enable-ipsec"
ENCRYPT_NODE = "encrypt-node"
ENABLE_HOST_FIREWALL = "enable-host-firewall"
ROUTING_MODE = "routing-mode"
CNI_CHAINING_MODE = "cni-chaining-mode"
ENABLE_POLICY = "enable-policy"


class Rendering(enum.Enum):
    """How the chart turns the Helm value(s) into the key."""

    # Rendered whenever the value is set (`kubeProxyReplacement: false` renders "false").
    AS_WRITTEN = "as written"
    # Rendered only under `{{- with }}` / `{{- if }}`: unset, false, 0 and "" render nothing.
    WHEN_TRUTHY = "when truthy"
    # Computed from several values under conditions (auditor.cilium.helm_values.derived_settings).
    DERIVED = "derived"


@dataclass(frozen=True)
class Key:
    """One key of the Cilium configuration and the Helm values that render it."""

    name: str
    # Dotted Helm value paths; the first is the one a finding about the key names.
    helm: tuple[str, ...] = ()
    rendering: Rendering | None = None
    # When no Helm value renders the key: why (then `helm` is empty).
    configmap_only: str = ""
    # The condition of a DERIVED key, for the rule reference.
    condition: str = ""

    @property
    def helm_value(self) -> str:
        """`kubeProxyReplacement`, or "" for a ConfigMap-only key."""
        return self.helm[0] if self.helm else ""


def _key(name: str, *helm: str, rendering: Rendering = Rendering.AS_WRITTEN, condition: str = "") -> Key:
    return Key(name, tuple(helm), rendering, condition=condition)


KEYS: dict[str, Key] = {
    key.name: key
    for key in (
        _key(KUBE_PROXY_REPLACEMENT, "kubeProxyReplacement"),
        # Pre-1.18 per-feature switches (the old `partial` replacement); the 1.19 chart no longer renders them.
        _key(ENABLE_NODE_PORT, "nodePort.enabled"),
        _key(ENABLE_HOST_PORT, "hostPort.enabled"),
        _key(ENABLE_EXTERNAL_IPS, "externalIPs.enabled"),
        _key(ENABLE_L2_ANNOUNCEMENTS, "l2announcements.enabled"),
        _key(L2_LEASE_DURATION, "l2announcements.leaseDuration"),
        _key(L2_RENEW_DEADLINE, "l2announcements.leaseRenewDeadline"),
        _key(L2_RETRY_PERIOD, "l2announcements.leaseRetryPeriod"),
        _key(K8S_CLIENT_QPS, "k8sClientRateLimit.qps", rendering=Rendering.WHEN_TRUTHY),
        _key(K8S_CLIENT_BURST, "k8sClientRateLimit.burst", rendering=Rendering.WHEN_TRUTHY),
        _key(ENABLE_GATEWAY_API, "gatewayAPI.enabled"),
        _key(GATEWAY_API_HOST_NETWORK, "gatewayAPI.hostNetwork.enabled"),
        # The Gateway Services' externalTrafficPolicy (Cilium 1.16+, cilium/cilium#33332; default Cluster).
        _key(GATEWAY_API_SERVICE_ETP, "gatewayAPI.externalTrafficPolicy"),
        _key(ENABLE_BGP_CONTROL_PLANE, "bgpControlPlane.enabled"),
        _key(DEFAULT_LB_SERVICE_IPAM, "defaultLBServiceIPAM"),
        _key(IPAM, "ipam.mode"),
        _key(ENABLE_HOST_FIREWALL, "hostFirewall.enabled"),
        _key(ROUTING_MODE, "routingMode"),
        _key(CNI_CHAINING_MODE, "cni.chainingMode"),
        _key(ENV_HOST, "k8sServiceHost", rendering=Rendering.WHEN_TRUTHY),
        _key(ENV_PORT, "k8sServicePort", rendering=Rendering.WHEN_TRUTHY),
        _key(ENABLE_POLICY, "policyEnforcementMode", rendering=Rendering.DERIVED, condition="lower-cased"),
        _key(ENABLE_WIREGUARD, "encryption.enabled", "encryption.type", rendering=Rendering.DERIVED,
             condition="encryption.enabled with encryption.type wireguard"),
        _key(ENABLE_IPSEC, "encryption.enabled", "encryption.type", rendering=Rendering.DERIVED,
             condition="encryption.enabled with encryption.type ipsec"),
        _key(ENCRYPT_NODE, "encryption.nodeEncryption", "encryption.enabled", rendering=Rendering.DERIVED,
             condition="only with encryption.enabled"),
        _key(CLUSTER_POOL_IPV4_CIDR, "ipam.operator.clusterPoolIPv4PodCIDRList", "ipam.mode",
             rendering=Rendering.DERIVED, condition="space-joined, in cluster-pool IPAM"),
        _key(CLUSTER_POOL_IPV6_CIDR, "ipam.operator.clusterPoolIPv6PodCIDRList", "ipam.mode", "ipv6.enabled",
             rendering=Rendering.DERIVED, condition="space-joined, in cluster-pool IPAM with ipv6.enabled"),
        _key(AGENT_VERSION, "image.tag", "image.override", rendering=Rendering.DERIVED,
             condition="the agent image tag; image.override wins; else the chart version"),
        # The chart renders both images from one version (values.yaml.tmpl: image.tag and
        # operator.image.tag are both ${CILIUM_VERSION}; templates/cilium-operator/_helpers.tpl).
        _key(OPERATOR_VERSION, "operator.image.tag", "operator.image.override", rendering=Rendering.DERIVED,
             condition="the operator image tag; operator.image.override wins; else the chart version"),
    )
}


def helm_paths(rendering: Rendering) -> list[tuple[tuple[str, ...], str]]:
    """(Helm path, key) of every single-value key rendered `rendering`, in table order."""
    return [(tuple(key.helm[0].split(".")), key.name) for key in KEYS.values() if key.rendering is rendering]


def helm_name(key: str) -> str:
    """The Helm value a finding about `key` names (`k8sServiceHost`), or the key itself."""
    known = KEYS.get(key)
    return known.helm_value if known is not None and known.helm_value else key
