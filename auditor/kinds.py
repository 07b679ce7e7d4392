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

# networking / rbac / apiextensions
INGRESS = "Ingress.networking.k8s.io"
INGRESS_CLASS = "IngressClass.networking.k8s.io"
NETWORK_POLICY = "NetworkPolicy.networking.k8s.io"
CLUSTER_ROLE = "ClusterRole.rbac.authorization.k8s.io"
CLUSTER_ROLE_BINDING = "ClusterRoleBinding.rbac.authorization.k8s.io"
ROLE = "Role.rbac.authorization.k8s.io"
ROLE_BINDING = "RoleBinding.rbac.authorization.k8s.io"
CRD = "CustomResourceDefinition.apiextensions.k8s.io"

# Cilium
CILIUM_NETWORK_POLICY = "CiliumNetworkPolicy.cilium.io"
CILIUM_CLUSTERWIDE_NETWORK_POLICY = "CiliumClusterwideNetworkPolicy.cilium.io"
LB_IP_POOL = "CiliumLoadBalancerIPPool.cilium.io"
L2_ANNOUNCEMENT_POLICY = "CiliumL2AnnouncementPolicy.cilium.io"

# Gateway API
GATEWAY = "Gateway.gateway.networking.k8s.io"
GATEWAY_CLASS = "GatewayClass.gateway.networking.k8s.io"
HTTP_ROUTE = "HTTPRoute.gateway.networking.k8s.io"

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
