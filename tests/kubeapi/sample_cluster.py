"""A small, realistic Cilium cluster snapshot for tests.

Objects look the way `kubectl get -o json` returns them from a v1.32 cluster
running Cilium with LB-IPAM and L2 announcements: server-set metadata (uid,
resourceVersion, creationTimestamp, managedFields on a few), defaulted spec
fields and status.  Values are from documentation ranges (192.0.2.0/24,
198.51.100.0/24, example.com).
"""

from __future__ import annotations

import base64
from typing import Any

from .crds import make_crd, stable_uid

CREATED = "2024-05-02T09:14:27Z"
SECRET_USERNAME = "svc_ledger_rw"
SECRET_PASSWORD = "s3cr3t-Pa55w0rd-do-not-leak"


def _meta(name: str, namespace: str | None, rv: int, created: str = CREATED, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"creationTimestamp": created}
    meta.update(extra)
    meta["name"] = name
    if namespace is not None:
        meta["namespace"] = namespace
    meta["resourceVersion"] = str(rv)
    meta["uid"] = stable_uid(namespace or "", name, str(rv))
    return meta


def namespace(name: str, rv: int, created: str = CREATED) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": _meta(name, None, rv, created, labels={"kubernetes.io/metadata.name": name}),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _port(name: str | None, port: int, target: int | str, protocol: str = "TCP",
          node_port: int | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {}
    if name:
        p["name"] = name
    if node_port:
        p["nodePort"] = node_port
    p.update({"port": port, "protocol": protocol, "targetPort": target})
    return p


def service(name: str, ns: str, rv: int, svc_type: str = "ClusterIP", cluster_ip: str = "",
            ports: list[dict[str, Any]] | None = None, selector: dict[str, Any] | None = None,
            labels: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None,
            lb_ip: str | None = None, external_name: str | None = None,
            managed_by: str | None = None, created: str = CREATED) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if annotations:
        extra["annotations"] = annotations
    if labels:
        extra["labels"] = labels
    meta = _meta(name, ns, rv, created, **extra)
    if managed_by:
        meta["managedFields"] = [{
            "apiVersion": "v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, **{f"f:{k}": {} for k in labels or {}}}},
                         "f:spec": {"f:ports": {".": {}}, "f:selector": {}, "f:type": {}}},
            "manager": managed_by, "operation": "Update", "time": created,
        }]
    spec: dict[str, Any] = {}
    if svc_type == "ExternalName":
        spec = {"externalName": external_name, "sessionAffinity": "None", "type": "ExternalName"}
    else:
        if svc_type == "LoadBalancer":
            spec["allocateLoadBalancerNodePorts"] = True
        spec.update({"clusterIP": cluster_ip, "clusterIPs": [cluster_ip]})
        if svc_type in ("NodePort", "LoadBalancer"):
            spec["externalTrafficPolicy"] = "Cluster"
        spec.update({"internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
                     "ipFamilyPolicy": "SingleStack", "ports": ports or []})
        if selector:
            spec["selector"] = selector
        spec.update({"sessionAffinity": "None", "type": svc_type})
    status: dict[str, Any] = {"loadBalancer": {}}
    if lb_ip:
        status = {"loadBalancer": {"ingress": [{"ip": lb_ip, "ipMode": "VIP"}]}}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec,
            "status": status}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def sample_snapshot() -> list[dict[str, Any]]:
    """Objects of a small cluster, in no particular order (the server sorts)."""
    return [*_namespaces(), *_services(), *_config_and_secrets(), *_cilium(), *_discovery(),
            *_uninstalled_kinds()]


def _namespaces() -> list[dict[str, Any]]:
    return [
        namespace("default", 15, "2024-05-02T09:10:02Z"),
        namespace("kube-system", 4, "2024-05-02T09:10:00Z"),
        namespace("shop", 2210),
        namespace("staging", 2214),
    ]


def _services() -> list[dict[str, Any]]:
    return [
        service("kubernetes", "default", 231, cluster_ip="10.96.0.1",
                ports=[_port("https", 443, 6443)],
                labels={"component": "apiserver", "provider": "kubernetes"},
                created="2024-05-02T09:10:02Z"),
        service("kube-dns", "kube-system", 298, cluster_ip="10.96.0.10",
                ports=[_port("dns", 53, 53, "UDP"), _port("dns-tcp", 53, 53),
                       _port("metrics", 9153, 9153)],
                selector={"k8s-app": "kube-dns"},
                labels={"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                        "kubernetes.io/name": "CoreDNS"},
                annotations={"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
                created="2024-05-02T09:10:04Z"),
        service("hubble-peer", "kube-system", 1187, cluster_ip="10.96.102.77",
                ports=[_port("peer-service", 443, 4244)], selector={"k8s-app": "cilium"},
                labels={"app.kubernetes.io/name": "hubble-peer",
                        "app.kubernetes.io/part-of": "cilium", "k8s-app": "cilium"},
                annotations={"meta.helm.sh/release-name": "cilium",
                             "meta.helm.sh/release-namespace": "kube-system"}),
        service("cilium-ingress", "kube-system", 1203, "LoadBalancer", "10.96.40.12",
                ports=[_port("http", 80, 80, node_port=30080),
                       _port("https", 443, 443, node_port=30443)],
                labels={"cilium.io/ingress": "true"}, lb_ip="192.0.2.2"),
        service("frontend", "shop", 2301, "LoadBalancer", "10.96.188.20",
                ports=[_port("http", 80, "http", node_port=31380)], selector={"app": "frontend"},
                labels={"app": "frontend", "tier": "web"},
                annotations={"lbipam.cilium.io/ips": "192.0.2.10",
                             "lbipam.cilium.io/sharing-key": "shop"},
                lb_ip="192.0.2.10", managed_by="kubectl-client-side-apply"),
        service("checkout", "shop", 2305, "NodePort", "10.96.51.3",
                ports=[_port("http", 8080, 8080, node_port=30880)], selector={"app": "checkout"},
                labels={"app": "checkout", "tier": "web"}, managed_by="helm"),
        service("payments-db", "shop", 2311, cluster_ip="None",
                ports=[_port("postgres", 5432, 5432)], selector={"app": "payments-db"},
                labels={"app": "payments-db", "tier": "data"}),
        service("legacy-billing", "shop", 2319, "ExternalName",
                external_name="billing.example.com", labels={"app": "billing"}),
        service("frontend", "staging", 2402, cluster_ip="10.96.7.140",
                ports=[_port("http", 80, 8080)], selector={"app": "frontend"},
                labels={"app": "frontend", "tier": "web"}),
    ]


def _config_and_secrets() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta("cilium-config", "kube-system", 1150,
                              annotations={"meta.helm.sh/release-name": "cilium",
                                           "meta.helm.sh/release-namespace": "kube-system"},
                              labels={"app.kubernetes.io/managed-by": "Helm"},
                              managedFields=[{
                                  "apiVersion": "v1", "fieldsType": "FieldsV1",
                                  "fieldsV1": {"f:data": {".": {}, "f:enable-l2-announcements": {},
                                                          "f:enable-lb-ipam": {},
                                                          "f:kube-proxy-replacement": {}}},
                                  "manager": "helm", "operation": "Update", "time": CREATED}]),
            "data": {
                "bpf-lb-mode": "snat", "cluster-name": "lab-1", "cluster-pool-ipv4-cidr": "10.0.0.0/8",
                "enable-l2-announcements": "true", "enable-lb-ipam": "true",
                "enable-policy": "default", "ipam": "kubernetes", "kube-proxy-replacement": "true",
                "routing-mode": "tunnel", "tunnel-protocol": "vxlan",
            },
        },
        {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta("kube-root-ca.crt", "shop", 2211,
                              annotations={"kubernetes.io/description": "Contains a CA bundle "
                                           "that can be used to verify the kube-apiserver when "
                                           "using internal endpoints such as the internal "
                                           "service IP or kubernetes.default.svc. No other "
                                           "usage is guaranteed across distributions of "
                                           "Kubernetes clusters."}),
            "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"},
        },
        {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta("payments-db-credentials", "shop", 2290,
                              labels={"app": "payments-db"},
                              managedFields=[{
                                  "apiVersion": "v1", "fieldsType": "FieldsV1",
                                  "fieldsV1": {"f:data": {".": {}, "f:password": {}, "f:username": {}},
                                               "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                               "f:type": {}},
                                  "manager": "payments-operator", "operation": "Update",
                                  "time": CREATED}]),
            "data": {"password": _b64(SECRET_PASSWORD), "username": _b64(SECRET_USERNAME)},
        },
    ]


def _cilium() -> list[dict[str, Any]]:
    return [
        make_crd("cilium.io", "CiliumLoadBalancerIPPool", "ciliumloadbalancerippools",
                 ["v2", "v2alpha1"], storage="v2", scope="Cluster",
                 short_names=["ippools", "ippool", "lbippool", "lbippools"],
                 categories=["cilium"], stored_versions=["v2alpha1", "v2"],
                 printer_columns=[
                     {"jsonPath": ".spec.disabled", "name": "Disabled", "type": "boolean"},
                     {"jsonPath": '.status.conditions[?(@.type=="cilium.io/PoolConflict")].status',
                      "name": "Conflicting", "type": "string"},
                     {"jsonPath": '.status.conditions[?(@.type=="cilium.io/IPsAvailable")].message',
                      "name": "IPs Available", "type": "string"},
                     {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
                 ], resource_version="1101"),
        make_crd("cilium.io", "CiliumL2AnnouncementPolicy", "ciliuml2announcementpolicies",
                 ["v2alpha1"], scope="Cluster", singular="ciliuml2announcementpolicy",
                 short_names=["l2announcement"], categories=["cilium"], resource_version="1102"),
        _pool("default-pool", "cilium.io/v2", 2001, "192.0.2.0/28", avail="14"),
        # Created through the older version; a v2 list must still show it.
        _pool("staging-pool", "cilium.io/v2alpha1", 2002, "198.51.100.0/29", avail="8",
              selector={"matchLabels": {"io.kubernetes.service.namespace": "staging"}}),
        {
            "apiVersion": "cilium.io/v2alpha1", "kind": "CiliumL2AnnouncementPolicy",
            "metadata": _meta("default-l2", None, 2003, generation=1),
            "spec": {"externalIPs": True, "interfaces": ["^eth[0-9]+"], "loadBalancerIPs": True,
                     "nodeSelector": {"matchExpressions": [{
                         "key": "node-role.kubernetes.io/control-plane",
                         "operator": "DoesNotExist"}]}},
        },
    ]


def _endpoint(ip: str, node: str, pod: str, ns: str, ready: bool) -> dict[str, Any]:
    return {"addresses": [ip], "conditions": {"ready": ready, "serving": ready, "terminating": False},
            "nodeName": node, "targetRef": {"kind": "Pod", "name": pod, "namespace": ns,
                                            "uid": stable_uid(ns, pod, "pod")}}


def _discovery() -> list[dict[str, Any]]:
    """EndpointSlices of two Services (the EndpointSlice controller's), and Leases: the one Cilium's L2
    announcer holds for shop/frontend (`cilium-l2announce-<ns>-<svc>` in Cilium's namespace) and a
    node heartbeat that is not one."""
    def endpoint_slice(name: str, ns: str, service: str, rv: int, port: int,
                       endpoints: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": _meta(name, ns, rv, generateName=f"{service}-", labels={
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                "kubernetes.io/service-name": service}),
            "endpoints": endpoints, "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
        }

    def lease(name: str, ns: str, rv: int, holder: str, duration: int) -> dict[str, Any]:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": _meta(name, ns, rv),
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                         "acquireTime": "2024-05-02T09:20:11.483921Z", "renewTime": "2024-05-02T11:02:47.118230Z",
                         "leaseTransitions": 0}}

    return [
        endpoint_slice("frontend-8kq2z", "shop", "frontend", 2330, 8080, [
            _endpoint("10.0.1.31", "worker-1", "frontend-7c9d8b6f5-4xk2p", "shop", True),
            _endpoint("10.0.2.44", "worker-2", "frontend-7c9d8b6f5-m9w7t", "shop", False)]),
        endpoint_slice("checkout-w2x9c", "shop", "checkout", 2331, 8080, [
            _endpoint("10.0.1.52", "worker-1", "checkout-5b8f9c7d4-zr6qn", "shop", False)]),
        lease("cilium-l2announce-shop-frontend", "kube-system", 2340, "worker-1", 15),
        lease("worker-1", "kube-node-lease", 2341, "worker-1", 40),
    ]


def _uninstalled_kinds() -> list[dict[str, Any]]:
    return [
        # A Gateway whose CRD is not installed: the server must not serve it.
        {
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": _meta("public", "shop", 2500, generation=1),
            "spec": {"gatewayClassName": "cilium",
                     "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
        },
    ]


def _pool(name: str, api_version: str, rv: int, cidr: str, avail: str,
          selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"blocks": [{"cidr": cidr}], "disabled": False}
    if selector:
        spec["serviceSelector"] = selector
    return {
        "apiVersion": api_version, "kind": "CiliumLoadBalancerIPPool",
        "metadata": _meta(name, None, rv, generation=1),
        "spec": spec,
        "status": {"conditions": [
            {"lastTransitionTime": CREATED, "message": avail, "observedGeneration": 1,
             "reason": "noreason", "status": "Unknown", "type": "cilium.io/IPsTotal"},
            {"lastTransitionTime": CREATED, "message": avail, "observedGeneration": 1,
             "reason": "noreason", "status": "Unknown", "type": "cilium.io/IPsAvailable"},
            {"lastTransitionTime": CREATED, "message": "0", "observedGeneration": 1,
             "reason": "noreason", "status": "Unknown", "type": "cilium.io/IPsUsed"},
            {"lastTransitionTime": CREATED, "message": "", "observedGeneration": 1,
             "reason": "resolved", "status": "False", "type": "cilium.io/PoolConflict"},
        ]},
    }


def auditor_cluster_role() -> dict[str, Any]:
    """The read-only ClusterRole an exposure auditor would be bound to: it
    may list Services, LB pools and L2 policies, read only the cilium-config
    ConfigMap, and list Secrets (which it does metadata-only)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": _meta("exposure-auditor", None, 3001),
        "rules": [
            {"apiGroups": [""], "resources": ["services", "namespaces"], "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cilium-config"],
             "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]},
            {"apiGroups": ["cilium.io"],
             "resources": ["ciliumloadbalancerippools", "ciliuml2announcementpolicies"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
             "verbs": ["list"]},
        ],
    }
