"""Exposure objects: Services of every type, (Cilium)NetworkPolicies, LB-IPAM pools,
L2 announcement policies and Gateway API resources, shaped as Cilium 1.19 leaves them."""

from __future__ import annotations

import ipaddress

from synth_common import Gen, Obj, clone, condition, decorate, meta, owner_ref, ts
from synth_workloads import NsCtx, mgmt_annotations

GW_CONTROLLER = "io.cilium/gateway-controller"
GW_GROUP = "gateway.networking.k8s.io"
L2_CLASS = "io.cilium/l2-announcer"
# Pools: (name, apiVersion, block spec, selector, allocation range or None)
POOLS: tuple[tuple[str, str, Obj, Obj | None, str | None], ...] = (
    ("default-pool", "cilium.io/v2", {"blocks": [{"start": "10.0.0.240", "stop": "10.0.0.250"}]}, None, None),
    ("apps-pool", "cilium.io/v2", {"blocks": [{"cidr": "10.0.8.0/22"}]},
     {"matchExpressions": [{"key": "io.cilium.gateway/owning-gateway", "operator": "DoesNotExist"}]}, "10.0.8.0/22"),
    ("gateway-pool", "cilium.io/v2", {"blocks": [{"cidr": "10.0.16.0/23"}]},
     {"matchExpressions": [{"key": "io.cilium.gateway/owning-gateway", "operator": "Exists"}]}, "10.0.16.0/23"),
    # Left over from Cilium 1.14: v2alpha1 and the long-deprecated `cidrs` field.
    ("legacy-lab-pool", "cilium.io/v2alpha1", {"cidrs": [{"cidr": "192.168.67.240/28"}]},
     {"matchLabels": {"lab": "true"}}, None),
    ("legacy-dmz-pool", "cilium.io/v2alpha1", {"blocks": [{"start": "192.168.70.10", "stop": "192.168.70.30"}],
                                               "disabled": True}, None, None),
)


class LbAllocator:
    """Hands out LB IPs sequentially from the apps/gateway pools (wrapping, never random)."""

    def __init__(self) -> None:
        self._hosts = {name: list(ipaddress.ip_network(cidr).hosts()) for name, _, _, _, cidr in POOLS if cidr}
        self._next = dict.fromkeys(self._hosts, 0)

    def take(self, pool: str) -> str:
        hosts = self._hosts[pool]
        ip = hosts[self._next[pool] % len(hosts)]
        self._next[pool] += 1
        return str(ip)


def _defaulted_service(g: Gen, user: Obj, stype: str) -> Obj:
    spec: Obj = clone(user)
    spec["type"] = stype
    spec["sessionAffinity"] = "None"
    if stype == "ExternalName":
        return spec
    for p in spec["ports"]:
        p["protocol"] = "TCP"
        p.setdefault("targetPort", p["port"])
        if stype in ("NodePort", "LoadBalancer"):
            p["nodePort"] = g.between(30000, 32767)
    ip = spec.get("clusterIP") or g.cluster_ip()
    spec.update(clusterIP=ip, clusterIPs=[ip], internalTrafficPolicy="Cluster", ipFamilies=["IPv4"],
                ipFamilyPolicy="SingleStack")
    if stype in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if stype == "LoadBalancer":
        spec["allocateLoadBalancerNodePorts"] = True
        if spec["externalTrafficPolicy"] == "Local":
            spec["healthCheckNodePort"] = g.between(30000, 32767)
    return spec


def service(g: Gen, ctx: NsCtx, name: str, labels: Obj, ports: list[tuple[str, int]], stype: str = "ClusterIP",
            selector: Obj | None = None, etp: str | None = None, lb_class: str | None = None, lb_ip: str = "",
            annotations: Obj | None = None, headless: bool = False, external_ips: list[str] | None = None,
            external_name: str = "", owner: Obj | None = None, manager: str = "") -> Obj:
    created = g.after(ctx.created, 90 * 86400)
    if external_name:
        user: Obj = {"type": stype, "externalName": external_name}
    else:
        user = {"type": stype, "ports": [{"name": n, "port": p, "targetPort": n} for n, p in ports]}
        if selector:
            user["selector"] = selector
    if headless:
        user["clusterIP"] = "None"
    if etp:
        user["externalTrafficPolicy"] = etp
    if lb_class:
        user["loadBalancerClass"] = lb_class
    if external_ips:
        user["externalIPs"] = external_ips
    spec = _defaulted_service(g, user, stype)
    if headless:
        spec["clusterIPs"] = ["None"]
    status: Obj = {"loadBalancer": {}}
    if stype == "LoadBalancer" and lb_ip:
        status = {"conditions": [condition("cilium.io/IPAMRequestSatisfied", "True", g.after(created, 30),
                                           "satisfied", "")],
                  "loadBalancer": {"ingress": [{"ip": lb_ip, "ipMode": "VIP"}]}}
    ann = (annotations or {}) | mgmt_annotations(ctx, "/Service", name)
    m = meta(g, name, ctx.name, created, labels=labels, annotations=ann, owner=owner)
    obj = {"apiVersion": "v1", "kind": "Service", "metadata": m, "spec": spec, "status": status}
    decorate(g, obj, created, manager or ctx.manager, {"spec": user}, ctx.p_managed_fields,
             "cilium-operator-generic" if stype == "LoadBalancer" else "")
    return obj


# -- NetworkPolicies ----------------------------------------------------------------

def _netpol(g: Gen, ctx: NsCtx, name: str, spec: Obj) -> Obj:
    created = g.after(ctx.created, 7 * 86400)
    m = meta(g, name, ctx.name, created, generation=1,
             annotations=mgmt_annotations(ctx, "networking.k8s.io/NetworkPolicy", name))
    obj = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": m, "spec": spec}
    decorate(g, obj, created, ctx.manager, {"spec": spec}, ctx.p_managed_fields)
    return obj


def default_deny(g: Gen, ctx: NsCtx) -> Obj:
    return _netpol(g, ctx, "default-deny-all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})


def allow_dns(g: Gen, ctx: NsCtx) -> Obj:
    return _netpol(g, ctx, "allow-dns-egress", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                 "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
         "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}]})


def allow_app(g: Gen, ctx: NsCtx, app: str, role: str, port: int) -> Obj:
    peers = [{"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": ctx.name}}}]
    if g.chance(0.5):
        peers.append({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}})
    spec: Obj = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": app, "app.kubernetes.io/component": role}},
            "policyTypes": ["Ingress"], "ingress": [{"from": peers, "ports": [{"port": port, "protocol": "TCP"}]}]}
    if g.chance(0.3):
        spec["policyTypes"].append("Egress")
        spec["egress"] = [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/24"]}}],
                           "ports": [{"port": 443, "protocol": "TCP"}, {"port": 5432, "protocol": "TCP"}]}]
    return _netpol(g, ctx, f"allow-{app}-{role}", spec)


def _cilium_policy(g: Gen, kind: str, name: str, ns: str | None, created: int, spec: Obj, ctx: NsCtx | None) -> Obj:
    m = meta(g, name, ns, created, generation=g.between(1, 4))
    obj = {"apiVersion": "cilium.io/v2", "kind": kind, "metadata": m, "spec": spec,
           "status": {"conditions": [{"lastTransitionTime": ts(g.after(created, 20)), "message":
                                      "Policy validation succeeded", "status": "True", "type": "Valid"}]}}
    if ctx is not None:
        decorate(g, obj, created, ctx.manager, {"spec": spec}, ctx.p_managed_fields, "cilium-agent")
    return obj


def cilium_network_policy(g: Gen, ctx: NsCtx, app: str) -> Obj:
    spec = {"endpointSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
            "ingress": [{"fromEntities": ["ingress"], "toPorts": [{"ports": [{"port": "8080", "protocol": "TCP"}]}]}],
            "egress": [{"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                         "k8s:k8s-app": "kube-dns"}}],
                        "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}],
                                     "rules": {"dns": [{"matchPattern": "*"}]}}]},
                       {"toFQDNs": [{"matchName": "s3.internal.lan"}, {"matchPattern": "*.github.com"}],
                        "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}]},
                       {"toEntities": ["kube-apiserver"]}]}
    return _cilium_policy(g, "CiliumNetworkPolicy", f"{app}-l7", ctx.name, g.after(ctx.created, 86400), spec, ctx)


def clusterwide_policy(g: Gen) -> Obj:
    spec = {"description": "Every endpoint may reach cluster DNS and the health endpoints.",
            "endpointSelector": {},
            "egress": [{"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                         "k8s:k8s-app": "kube-dns"}}],
                        "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}]}]},
                       {"toEntities": ["health", "remote-node"]}]}
    return _cilium_policy(g, "CiliumClusterwideNetworkPolicy", "allow-dns-and-health", None, g.past(300, 400), spec,
                          None)


# -- LB-IPAM and L2 announcements --------------------------------------------------

def lb_pools(g: Gen, used: dict[str, int]) -> list[Obj]:
    out = []
    for name, api, blocks, selector, cidr in POOLS:
        created = g.past(200, 400)
        spec = dict(blocks) | ({"serviceSelector": selector} if selector else {})
        total = ipaddress.ip_network(cidr).num_addresses - 2 if cidr else 11
        n_used = used.get(name, 0)
        conds = [condition("cilium.io/IPsTotal", "Unknown", created, "noreason", str(total)),
                 condition("cilium.io/IPsAvailable", "Unknown", created, "noreason", str(max(0, total - n_used))),
                 condition("cilium.io/IPsUsed", "Unknown", created, "noreason", str(n_used)),
                 condition("cilium.io/PoolConflict", "False", created, "resolved", "")]
        m = meta(g, name, None, created, generation=g.between(1, 3))
        obj = {"apiVersion": api, "kind": "CiliumLoadBalancerIPPool", "metadata": m, "spec": spec,
               "status": {"conditions": conds}}
        out.append(obj)
    return out


def l2_policies(g: Gen) -> list[Obj]:
    base = {"nodeSelector": {"matchExpressions": [{"key": "node-role.kubernetes.io/control-plane",
                                                   "operator": "DoesNotExist"}]},
            "interfaces": ["^eth0$"], "loadBalancerIPs": True}
    specs = [("default-l2", base | {"serviceSelector": {"matchLabels": {}}}),
             ("gateways-l2", base | {"externalIPs": False, "serviceSelector": {"matchExpressions": [
                 {"key": "io.cilium.gateway/owning-gateway", "operator": "Exists"}]}})]
    return [{"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumL2AnnouncementPolicy",
             "metadata": meta(g, name, None, g.past(200, 400), generation=1), "spec": spec} for name, spec in specs]


# -- Gateway API -------------------------------------------------------------------

def gateway_class(g: Gen) -> Obj:
    created = g.past(300, 400)
    features = ["Gateway", "GatewayPort8080", "GRPCRoute", "HTTPRoute", "HTTPRouteHostRewrite",
                "HTTPRouteMethodMatching", "HTTPRoutePathRedirect", "HTTPRoutePathRewrite", "HTTPRoutePortRedirect",
                "HTTPRouteQueryParamMatching", "HTTPRouteRequestMirror", "HTTPRouteResponseHeaderModification",
                "HTTPRouteSchemeRedirect", "ReferenceGrant", "TLSRoute"]
    return {"apiVersion": f"{GW_GROUP}/v1", "kind": "GatewayClass",
            "metadata": meta(g, "cilium", None, created, generation=1),
            "spec": {"controllerName": GW_CONTROLLER, "description": "The default Cilium GatewayClass"},
            "status": {"conditions": [condition("Accepted", "True", created, "Accepted", "Valid GatewayClass", 1)],
                       "supportedFeatures": [{"name": f} for f in features]}}


def tls_name(host: str) -> str:
    return host.split(".")[0].replace("*", "wildcard") + "-tls"


def gateway(g: Gen, ctx: NsCtx, name: str, hosts: list[str], lb_ip: str, routes: int, shared: bool) -> list[Obj]:
    """A Gateway plus the `cilium-gateway-<name>` LoadBalancer Service Cilium creates for it."""
    created = g.after(ctx.created, 86400)
    gen = g.between(1, 3)
    listeners = [{"name": f"https-{i}", "protocol": "HTTPS", "port": 443, "hostname": h,
                  "tls": {"mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret",
                                                                    "name": tls_name(h)}]},
                  "allowedRoutes": {"namespaces": {"from": "All" if shared else "Same"}}} for i, h in enumerate(hosts)]
    spec = {"gatewayClassName": "cilium", "listeners": listeners}
    def conds(kinds: tuple[str, ...]) -> list[Obj]:
        return [condition(k, "True", created, k, "", gen) for k in kinds]

    status = {"addresses": [{"type": "IPAddress", "value": lb_ip}], "conditions": conds(("Accepted", "Programmed")),
              "listeners": [{"attachedRoutes": routes, "conditions": conds(("Programmed", "Accepted", "ResolvedRefs")),
                             "name": lst["name"], "supportedKinds": [{"group": GW_GROUP, "kind": "HTTPRoute"},
                                                                      {"group": GW_GROUP, "kind": "GRPCRoute"}]}
                            for lst in listeners]}
    m = meta(g, name, ctx.name, created, generation=gen, annotations={"cert-manager.io/cluster-issuer": "internal-ca"})
    gw = {"apiVersion": f"{GW_GROUP}/v1", "kind": "Gateway", "metadata": m, "spec": spec, "status": status}
    decorate(g, gw, created, ctx.manager, {"spec": spec}, ctx.p_managed_fields, "cilium-operator-generic")
    labels = {"gateway.networking.k8s.io/gateway-name": name, "io.cilium.gateway/owning-gateway": name}
    svc = service(g, ctx, f"cilium-gateway-{name}", labels, [("port-443", 443)], "LoadBalancer", lb_ip=lb_ip,
                  owner=owner_ref(f"{GW_GROUP}/v1", "Gateway", name, m["uid"]), manager="cilium-operator-generic")
    svc["spec"]["ports"][0]["targetPort"] = 443
    return [gw, svc]


def http_route(g: Gen, ctx: NsCtx, name: str, gw_ns: str, gw_name: str, host: str, backend: str, port: int) -> Obj:
    created = g.after(ctx.created, 86400)
    gen = g.between(1, 5)
    parent = {"group": GW_GROUP, "kind": "Gateway", "name": gw_name, "namespace": gw_ns}
    user = {"parentRefs": [{"name": gw_name, "namespace": gw_ns}], "hostnames": [host],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                       "backendRefs": [{"name": backend, "port": port}]}]}
    spec = clone(user)
    spec["parentRefs"] = [parent]
    spec["rules"][0]["backendRefs"][0] |= {"group": "", "kind": "Service", "weight": 1}
    status = {"parents": [{"conditions": [condition("Accepted", "True", created, "Accepted", "Accepted HTTPRoute", gen),
                                          condition("ResolvedRefs", "True", created, "ResolvedRefs",
                                                    "Service reference is valid", gen)],
                           "controllerName": GW_CONTROLLER, "parentRef": parent}]}
    m = meta(g, name, ctx.name, created, generation=gen,
             annotations=mgmt_annotations(ctx, f"{GW_GROUP}/HTTPRoute", name))
    obj = {"apiVersion": f"{GW_GROUP}/v1", "kind": "HTTPRoute", "metadata": m, "spec": spec, "status": status}
    decorate(g, obj, created, ctx.manager, {"spec": user}, ctx.p_managed_fields, "cilium-operator-generic")
    return obj
