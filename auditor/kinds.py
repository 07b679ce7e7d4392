"""Group-kind keys of the objects the rules read (see `model.group_kind`).

Rules declare the kinds they need with these names; the live reader maps them
to API resources through discovery, so only the group and kind matter here.
"""

# core group
CONFIGMAP = "ConfigMap"
NAMESPACE = "Namespace"
NODE = "Node"
POD = "Pod"
REPLICATION_CONTROLLER = "ReplicationController"
SECRET = "Secret"
SERVICE = "Service"
SERVICE_ACCOUNT = "ServiceAccount"

# apps / batch
DAEMONSET = "DaemonSet.apps"
DEPLOYMENT = "Deployment.apps"
REPLICASET = "ReplicaSet.apps"
STATEFULSET = "StatefulSet.apps"
CRONJOB = "CronJob.batch"
JOB = "Job.batch"

# discovery / coordination: what `audit trace --live` reads besides the rules' kinds (which pods back a
# Service, and which node holds a Service's L2 announcement lease)
ENDPOINT_SLICE = "EndpointSlice.discovery.k8s.io"
LEASE = "Lease.coordination.k8s.io"
TRACE_KINDS = (ENDPOINT_SLICE, LEASE)

# networking / rbac / apiextensions
INGRESS = "Ingress.networking.k8s.io"
INGRESS_CLASS = "IngressClass.networking.k8s.io"
NETWORK_POLICY = "NetworkPolicy.networking.k8s.io"
CLUSTER_ROLE = "ClusterRole.rbac.authorization.k8s.io"
CLUSTER_ROLE_BINDING = "ClusterRoleBinding.rbac.authorization.k8s.io"
ROLE = "Role.rbac.authorization.k8s.io"
ROLE_BINDING = "RoleBinding.rbac.authorization.k8s.io"
CRD = "CustomResourceDefinition.apiextensions.k8s.io"
VALIDATING_WEBHOOK_CONFIGURATION = "ValidatingWebhookConfiguration.admissionregistration.k8s.io"

# Cilium
BGP_ADVERTISEMENT = "CiliumBGPAdvertisement.cilium.io"
CILIUM_NETWORK_POLICY = "CiliumNetworkPolicy.cilium.io"
CILIUM_CLUSTERWIDE_NETWORK_POLICY = "CiliumClusterwideNetworkPolicy.cilium.io"
LB_IP_POOL = "CiliumLoadBalancerIPPool.cilium.io"
L2_ANNOUNCEMENT_POLICY = "CiliumL2AnnouncementPolicy.cilium.io"
CILIUM_GATEWAY_CLASS_CONFIG = "CiliumGatewayClassConfig.cilium.io"

# Gateway API
GATEWAY = "Gateway.gateway.networking.k8s.io"
GATEWAY_CLASS = "GatewayClass.gateway.networking.k8s.io"
HTTP_ROUTE = "HTTPRoute.gateway.networking.k8s.io"
GRPC_ROUTE = "GRPCRoute.gateway.networking.k8s.io"
TLS_ROUTE = "TLSRoute.gateway.networking.k8s.io"
TCP_ROUTE = "TCPRoute.gateway.networking.k8s.io"
UDP_ROUTE = "UDPRoute.gateway.networking.k8s.io"
ROUTE_KINDS = (HTTP_ROUTE, GRPC_ROUTE, TLS_ROUTE, TCP_ROUTE, UDP_ROUTE)
REFERENCE_GRANT = "ReferenceGrant.gateway.networking.k8s.io"
# Envoy Gateway's data-plane configuration (a Gateway controller other than Cilium's)
ENVOY_PROXY = "EnvoyProxy.gateway.envoyproxy.io"
# cert-manager Certificates name the Secrets Gateway listeners reference
CERT_MANAGER_CERTIFICATE = "Certificate.cert-manager.io"

# GitOps controllers whose objects may carry Cilium's Helm values (auditor/cilium/helm_values.py)
HELM_RELEASE = "HelmRelease.helm.toolkit.fluxcd.io"
OCI_REPOSITORY = "OCIRepository.source.toolkit.fluxcd.io"
ARGO_APPLICATION = "Application.argoproj.io"

# MetalLB (a load balancer Cilium LB-IPAM + L2 announcements replace)
METALLB_IP_ADDRESS_POOL = "IPAddressPool.metallb.io"
METALLB_L2_ADVERTISEMENT = "L2Advertisement.metallb.io"
METALLB_BGP_ADVERTISEMENT = "BGPAdvertisement.metallb.io"
METALLB_BGP_PEER = "BGPPeer.metallb.io"
METALLB_KINDS = (METALLB_IP_ADDRESS_POOL, METALLB_L2_ADVERTISEMENT, METALLB_BGP_ADVERTISEMENT, METALLB_BGP_PEER)

# Objects that run pods: a namespace holding any of these (or a Service) has
# something a default-deny policy protects.
WORKLOAD_KINDS = (
    POD,
    DEPLOYMENT,
    STATEFULSET,
    DAEMONSET,
    REPLICASET,
    JOB,
    CRONJOB,
    REPLICATION_CONTROLLER,
)

NETWORK_POLICY_KINDS = (NETWORK_POLICY, CILIUM_NETWORK_POLICY, CILIUM_CLUSTERWIDE_NETWORK_POLICY)


def split_gk(gk: str) -> tuple[str, str]:
    """`Deployment.apps` -> (`apps`, `Deployment`); `Service` -> (``, `Service`)."""
    kind, _, group = gk.partition(".")
    return group, kind


# --- API resources of the kinds above (live reader, RBAC generation) ---------
# group-kind -> (API group, plural resource name). The live reader maps kinds to
# resources through discovery; this static table is what `audit rbac` (and
# docs/rbac.yaml) grants `list` on, so every kind a registered rule reads must
# be here (tests/test_live_rbac.py checks it). Keys are literal group-kinds so
# the table does not depend on which constants exist above.
RESOURCES: dict[str, tuple[str, str]] = {
    # core
    "ConfigMap": ("", "configmaps"),
    "Endpoints": ("", "endpoints"),
    "Namespace": ("", "namespaces"),
    "Node": ("", "nodes"),
    "Pod": ("", "pods"),
    "ReplicationController": ("", "replicationcontrollers"),
    "Secret": ("", "secrets"),
    "Service": ("", "services"),
    "ServiceAccount": ("", "serviceaccounts"),
    # apps, batch
    "DaemonSet.apps": ("apps", "daemonsets"),
    "Deployment.apps": ("apps", "deployments"),
    "ReplicaSet.apps": ("apps", "replicasets"),
    "StatefulSet.apps": ("apps", "statefulsets"),
    "CronJob.batch": ("batch", "cronjobs"),
    "Job.batch": ("batch", "jobs"),
    # networking, discovery
    "Ingress.networking.k8s.io": ("networking.k8s.io", "ingresses"),
    "IngressClass.networking.k8s.io": ("networking.k8s.io", "ingressclasses"),
    "NetworkPolicy.networking.k8s.io": ("networking.k8s.io", "networkpolicies"),
    "EndpointSlice.discovery.k8s.io": ("discovery.k8s.io", "endpointslices"),
    "Lease.coordination.k8s.io": ("coordination.k8s.io", "leases"),
    # rbac, apiextensions, admission
    "ClusterRole.rbac.authorization.k8s.io": ("rbac.authorization.k8s.io", "clusterroles"),
    "ClusterRoleBinding.rbac.authorization.k8s.io": ("rbac.authorization.k8s.io", "clusterrolebindings"),
    "Role.rbac.authorization.k8s.io": ("rbac.authorization.k8s.io", "roles"),
    "RoleBinding.rbac.authorization.k8s.io": ("rbac.authorization.k8s.io", "rolebindings"),
    "CustomResourceDefinition.apiextensions.k8s.io": ("apiextensions.k8s.io", "customresourcedefinitions"),
    "ValidatingWebhookConfiguration.admissionregistration.k8s.io": (
        "admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    "MutatingWebhookConfiguration.admissionregistration.k8s.io": (
        "admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    # Cilium
    "CiliumNetworkPolicy.cilium.io": ("cilium.io", "ciliumnetworkpolicies"),
    "CiliumClusterwideNetworkPolicy.cilium.io": ("cilium.io", "ciliumclusterwidenetworkpolicies"),
    "CiliumLoadBalancerIPPool.cilium.io": ("cilium.io", "ciliumloadbalancerippools"),
    "CiliumL2AnnouncementPolicy.cilium.io": ("cilium.io", "ciliuml2announcementpolicies"),
    "CiliumBGPAdvertisement.cilium.io": ("cilium.io", "ciliumbgpadvertisements"),
    "CiliumBGPClusterConfig.cilium.io": ("cilium.io", "ciliumbgpclusterconfigs"),
    "CiliumBGPPeeringPolicy.cilium.io": ("cilium.io", "ciliumbgppeeringpolicies"),
    "CiliumEnvoyConfig.cilium.io": ("cilium.io", "ciliumenvoyconfigs"),
    "CiliumClusterwideEnvoyConfig.cilium.io": ("cilium.io", "ciliumclusterwideenvoyconfigs"),
    "CiliumNode.cilium.io": ("cilium.io", "ciliumnodes"),
    "CiliumGatewayClassConfig.cilium.io": ("cilium.io", "ciliumgatewayclassconfigs"),
    # Gateway API
    "Gateway.gateway.networking.k8s.io": ("gateway.networking.k8s.io", "gateways"),
    "GatewayClass.gateway.networking.k8s.io": ("gateway.networking.k8s.io", "gatewayclasses"),
    "HTTPRoute.gateway.networking.k8s.io": ("gateway.networking.k8s.io", "httproutes"),
    "GRPCRoute.gateway.networking.k8s.io": ("gateway.networking.k8s.io", "grpcroutes"),
    "TLSRoute.gateway.networking.k8s.io": ("gateway.networking.k8s.io", "tlsroutes"),
    "TCPRoute.gateway.networking.k8s.io": ("gateway.networking.k8s.io", "tcproutes"),
    "UDPRoute.gateway.networking.k8s.io": ("gateway.networking.k8s.io", "udproutes"),
    "EnvoyProxy.gateway.envoyproxy.io": ("gateway.envoyproxy.io", "envoyproxies"),
    "ReferenceGrant.gateway.networking.k8s.io": ("gateway.networking.k8s.io", "referencegrants"),
    # cert-manager, MetalLB, GitOps controllers
    "Certificate.cert-manager.io": ("cert-manager.io", "certificates"),
    "IPAddressPool.metallb.io": ("metallb.io", "ipaddresspools"),
    "L2Advertisement.metallb.io": ("metallb.io", "l2advertisements"),
    "BGPAdvertisement.metallb.io": ("metallb.io", "bgpadvertisements"),
    "BGPPeer.metallb.io": ("metallb.io", "bgppeers"),
    "Application.argoproj.io": ("argoproj.io", "applications"),
    "HelmRelease.helm.toolkit.fluxcd.io": ("helm.toolkit.fluxcd.io", "helmreleases"),
    "OCIRepository.source.toolkit.fluxcd.io": ("source.toolkit.fluxcd.io", "ocirepositories"),
    "HelmRepository.source.toolkit.fluxcd.io": ("source.toolkit.fluxcd.io", "helmrepositories"),
}
