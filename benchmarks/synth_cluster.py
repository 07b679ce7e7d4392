"""Assembles a whole synthetic cluster of exactly N objects, and the Services-only dataset.

Sizing: ~1 namespace per 100 objects, ~1 node per 2,500 objects (DaemonSet pods scale with
nodes). Each app namespace gets an equal share of the remaining budget and is filled
app by app; the last few slots take "long tail" objects (Helm release Secrets, TLS
Secrets, ConfigMaps) so the total is exact, not approximate.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import synth_config as cfg
import synth_network as net
from synth_common import WORDS, Gen, Obj
from synth_system import kube_system, make_nodes
from synth_workloads import ARCHETYPES, Node, NsCtx, daemonset, deployment, mgmt_labels, pod_spec, statefulset

MANAGERS = (("kubectl-client-side-apply",) * 7 + ("argocd-controller",) * 6 + ("helm",) * 4
            + ("kustomize-controller",) * 3)
SHARED_GW = ("gateway", "edge")


@dataclass
class Drift:
    """Ground truth of what was sprinkled in, written to the .meta.json sidecar."""

    no_default_deny: list[str] = field(default_factory=list)
    lb_unexcepted: list[str] = field(default_factory=list)
    lb_infra: list[str] = field(default_factory=list)
    lb_gateway: list[str] = field(default_factory=list)
    nodeport: list[str] = field(default_factory=list)
    external_ips: list[str] = field(default_factory=list)
    kube_proxy_leftover: list[str] = field(default_factory=list)
    v2alpha1_pools: list[str] = field(default_factory=list)


@dataclass
class AppPlan:
    app: str
    arche: tuple[Any, ...]
    replicas: int
    extra_svc: str  # "" | headless | nodeport | lb | externalname | externalips
    netpol: bool
    cnp: bool
    route: bool

    def size(self) -> int:
        # workload + pods + svc + cm + secret + sa (+ optional ones)
        return 5 + self.replicas + (self.extra_svc != "") + self.netpol + self.cnp + self.route


def namespace_names(n: int) -> list[str]:
    # Infra namespaces first: the shared Gateway lives in the first one.
    pool = [SHARED_GW[0], "monitoring", "cert-manager", "argocd"] + [w for w in WORDS if w != SHARED_GW[0]]
    names: list[str] = []
    seen: dict[str, int] = {}
    for i in range(n):
        w = pool[i % len(pool)]
        seen[w] = seen.get(w, 0) + 1
        names.append(w if seen[w] == 1 else f"{w}-{seen[w]}")
    return names


def _plan_app(g: Gen, ctx: NsCtx, has_gateway: bool) -> AppPlan:
    arche = g.pick(ARCHETYPES)
    sts = arche[4] == "StatefulSet"
    r = g.rng.random()
    extra = ("headless" if sts else "") if r > 0.08 else g.pick(("nodeport", "nodeport", "lb", "externalname",
                                                                "externalname", "externalips"))
    app = g.pick(WORDS) if g.chance(0.6) else ctx.name.split("-")[0]
    if app in ctx.apps:  # names must stay unique inside the namespace
        app = f"{app}-{len(ctx.apps)}"
    return AppPlan(app=app, arche=arche, replicas=g.pick((1, 1, 2, 2, 2, 3, 4) if not sts else (1, 3)),
                   extra_svc=extra, netpol=g.chance(0.7), cnp=g.chance(0.12),
                   route=arche[0] in ("web", "frontend", "api") and (has_gateway or g.chance(0.3)))


def _build_app(g: Gen, ctx: NsCtx, p: AppPlan, gw: tuple[str, str], lb: net.LbAllocator, drift: Drift) -> list[Obj]:
    role, _, ports, _, kind = p.arche
    version = f"v{g.between(0, 5)}.{g.between(0, 20)}.{g.between(0, 9)}"
    labels = mgmt_labels(ctx, p.app, role, version)
    name = f"{p.app}-{role}"
    ctx.apps.append(p.app)
    spec = pod_spec(g, ctx, p.app, p.arche, name, f"{name}-config", f"{name}-secret")
    build = statefulset if kind == "StatefulSet" else deployment
    out = build(g, ctx, name, labels, spec, p.replicas, g.after(ctx.created, 120 * 86400))
    selector = {"app.kubernetes.io/name": p.app, "app.kubernetes.io/component": role}
    svc_ports = list(ports) or [("metrics", 9090)]
    out.append(net.service(g, ctx, name, labels, svc_ports, selector=selector))
    out += [cfg.app_configmap(g, ctx, f"{name}-config", labels, p.app),
            cfg.opaque_secret(g, ctx, f"{name}-secret", labels), cfg.service_account(g, ctx, name, labels)]
    ref = f"{ctx.name}/{name}"
    if p.extra_svc == "headless":
        out.append(net.service(g, ctx, f"{name}-headless", labels, svc_ports, selector=selector, headless=True))
    elif p.extra_svc == "nodeport":
        out.append(net.service(g, ctx, f"{name}-nodeport", labels, svc_ports, "NodePort", selector=selector))
        drift.nodeport.append(ref + "-nodeport")
    elif p.extra_svc == "lb":
        out.append(_drift_lb(g, ctx, f"{name}-lb", labels, svc_ports, selector, lb))
        drift.lb_unexcepted.append(ref + "-lb")
    elif p.extra_svc == "externalname":
        out.append(net.service(g, ctx, f"{name}-upstream", labels, [], "ExternalName",
                               external_name=f"{p.app}.legacy.univ-lehavre.fr"))
    elif p.extra_svc == "externalips":
        out.append(net.service(g, ctx, f"{name}-ext", labels, svc_ports, selector=selector,
                               external_ips=[f"192.168.80.{g.between(2, 250)}"]))
        drift.external_ips.append(ref + "-ext")
    if p.netpol:
        out.append(net.allow_app(g, ctx, p.app, role, svc_ports[0][1]))
    if p.cnp:
        out.append(net.cilium_network_policy(g, ctx, p.app))
    if p.route:
        out.append(net.http_route(g, ctx, name, gw[0], gw[1], f"{p.app}.apps.cluster.lan", name, svc_ports[0][1]))
    return out


def _drift_lb(g: Gen, ctx: NsCtx, name: str, labels: Obj, ports: list[Any], selector: Obj, lb: net.LbAllocator) -> Obj:
    """A LoadBalancer Service bypassing the Gateway: the exposure drift the auditor exists for."""
    ip = lb.take("apps-pool")
    ann = {"lbipam.cilium.io/ips": ip} if g.chance(0.5) else {}
    if g.chance(0.2):
        ann["lbipam.cilium.io/sharing-key"] = ctx.name
    return net.service(g, ctx, name, labels, ports, "LoadBalancer", selector=selector,
                       etp=g.pick(("Local", "Cluster")), lb_class=net.L2_CLASS if g.chance(0.4) else None,
                       lb_ip=ip, annotations=ann)


def _missing_drift(drift: Drift) -> list[str]:
    """Drift kinds random sprinkling has not produced yet (small clusters may miss some)."""
    lists = {"no-deny": drift.no_default_deny, "lb": drift.lb_unexcepted, "nodeport": drift.nodeport,
             "externalips": drift.external_ips}
    return [kind for kind, found in lists.items() if not found]


def app_namespace(g: Gen, ctx: NsCtx, budget: int, lb: net.LbAllocator, drift: Drift, inject: bool,
                  force: list[str]) -> list[Obj]:
    """One app namespace of exactly `budget` objects; `force` names drift kinds it must contain."""
    out: list[Obj] = [cfg.namespace(g, ctx), cfg.service_account(g, ctx, "default"), cfg.root_ca_configmap(g, ctx)]
    if inject and (g.chance(0.05) or "no-deny" in force):
        drift.no_default_deny.append(ctx.name)
    else:
        out.append(net.default_deny(g, ctx))
    if g.chance(0.9):
        out.append(net.allow_dns(g, ctx))
    gw = SHARED_GW
    if ctx.name == SHARED_GW[0] or g.chance(0.25):
        shared = ctx.name == SHARED_GW[0]
        gw = (ctx.name, SHARED_GW[1] if shared else ctx.name)
        host = "*.apps.cluster.lan" if shared else f"{ctx.name}.cluster.lan"
        ip = lb.take("gateway-pool")
        out += net.gateway(g, ctx, gw[1], [host], ip, g.between(1, 8), shared)
        out.append(cfg.tls_secret(g, ctx, net.tls_name(host), host))
        drift.lb_gateway.append(f"{ctx.name}/cilium-gateway-{gw[1]}")
    if g.chance(0.3):
        out.append(cfg.dockerconfig_secret(g, ctx))
    forced = [k for k in force if k != "no-deny"]
    while True:
        plan = _plan_app(g, ctx, gw != SHARED_GW)
        if forced:
            plan.extra_svc = forced.pop()
        if len(out) + plan.size() > budget:
            break
        out += _build_app(g, ctx, plan, gw, lb, drift)
    out += [cfg.filler(g, ctx, i) for i in range(budget - len(out))]
    return out


def _infra(g: Gen, nodes: list[Node], inject: bool, drift: Drift, lb: net.LbAllocator, p_mf: float) -> list[Obj]:
    out = kube_system(g, nodes, inject, p_mf)
    if inject:
        drift.kube_proxy_leftover += ["kube-system/DaemonSet/kube-proxy", "kube-system/ConfigMap/kube-proxy",
                                      "kube-system/ServiceAccount/kube-proxy"]
    ks = NsCtx("kube-system", g.past(600, 700), "kubectl-client-side-apply", nodes, p_mf)
    ip = lb.take("apps-pool")
    out.append(net.service(g, ks, "kube-api", {"app": "kube-api"}, [("https", 6443)], "LoadBalancer",
                           selector={"k8s-app": "kube-apiserver", "tier": "control-plane"}, etp="Local", lb_ip=ip,
                           annotations={"lbipam.cilium.io/ips": ip}))
    drift.lb_infra.append("kube-system/kube-api")
    out += _node_agents(g, nodes, p_mf)
    for name in ("kube-system", "kube-public", "kube-node-lease", "default", "cilium-secrets"):
        c = NsCtx(name, g.past(600, 700), "kubectl-client-side-apply", nodes, 0.0)
        out.append(cfg.namespace(g, c))
        if name != "kube-system":
            out += [cfg.service_account(g, c, "default"), cfg.root_ca_configmap(g, c)]
    out += [net.gateway_class(g), net.clusterwide_policy(g), *net.l2_policies(g)]
    return out


def _node_agents(g: Gen, nodes: list[Node], p_mf: float) -> list[Obj]:
    """Monitoring DaemonSets: with Cilium's two they make node count drive the Pod total."""
    mon = NsCtx("monitoring", g.past(400, 500), "helm", nodes, p_mf)
    out: list[Obj] = []
    for name, image, port in (("prometheus-node-exporter", "quay.io/prometheus/node-exporter:v1.9.1", 9100),
                              ("promtail", "docker.io/grafana/promtail:3.5.1", 3101)):
        labels = mgmt_labels(mon, name, "agent", image.rsplit(":", 1)[1])
        spec = pod_spec(g, mon, name, ("agent", image, (("metrics", port),), "http", "DaemonSet"), name,
                        f"{name}-config", f"{name}-secret")
        spec |= {"hostNetwork": True, "hostPID": name.endswith("exporter"), "tolerations": [{"operator": "Exists"}]}
        out += daemonset(g, mon, name, labels, spec, mon.created)
        out.append(cfg.service_account(g, mon, name, labels))
    return out


def build_cluster(n_objects: int, seed: int, drift: Drift, inject: bool = True,
                  p_mf: float = 0.15) -> Iterator[Obj]:
    """Yields exactly n_objects items, namespace by namespace (streamed to keep memory flat)."""
    g = Gen(seed)
    lb = net.LbAllocator()
    nodes = make_nodes(max(3, min(60, 3 + n_objects // 2500)))
    infra = _infra(g, nodes, inject, drift, lb, p_mf)
    yield from infra
    n_ns = max(2, round(n_objects / 100) - 5)
    remaining = n_objects - len(infra) - len(net.POOLS)
    for i, name in enumerate(namespace_names(n_ns)):
        ctx = NsCtx(name, g.past(30, 500), g.pick(MANAGERS), nodes, p_mf)
        budget = remaining // (n_ns - i)
        # The last namespace carries any drift kind chance left out, so every size has all of them.
        force = _missing_drift(drift) if inject and i == n_ns - 1 else []
        yield from app_namespace(g, ctx, budget, lb, drift, inject, force)
        remaining -= budget
    used = {"apps-pool": len(drift.lb_unexcepted) + len(drift.lb_infra), "gateway-pool": len(drift.lb_gateway)}
    yield from net.lb_pools(g, used)
    drift.v2alpha1_pools = [name for name, api, *_ in net.POOLS if api.endswith("v2alpha1")]


def build_services(n_services: int, n_namespaces: int, seed: int, with_namespaces: bool) -> list[Obj]:
    """Exactly n_services Services spread evenly over n_namespaces (for the live-reader benchmark)."""
    g = Gen(seed)
    lb, nodes, out = net.LbAllocator(), make_nodes(3), []
    for i, name in enumerate(namespace_names(n_namespaces)):
        ctx = NsCtx(name, g.past(30, 500), g.pick(MANAGERS), nodes, 0.1)
        if with_namespaces:
            out.append(cfg.namespace(g, ctx))
        share = n_services // n_namespaces + (i < n_services % n_namespaces)
        for j in range(share):
            role, _, ports, _, _ = g.pick(ARCHETYPES)
            labels = mgmt_labels(ctx, f"{name}-{role}", role, "v1.0.0")
            sel = {"app.kubernetes.io/name": f"{name}-{role}"}
            kind = g.rng.random()
            if kind < 0.01:
                ip = lb.take("apps-pool")
                out.append(net.service(g, ctx, f"{role}-{j}", labels, list(ports), "LoadBalancer", selector=sel,
                                       etp=g.pick(("Local", "Cluster")), lb_ip=ip,
                                       annotations={"lbipam.cilium.io/ips": ip}))
            elif kind < 0.04:
                out.append(net.service(g, ctx, f"{role}-{j}", labels, list(ports), "NodePort", selector=sel))
            else:
                out.append(net.service(g, ctx, f"{role}-{j}", labels, list(ports) or [("metrics", 9090)],
                                       selector=sel, headless=kind > 0.9))
    return out
