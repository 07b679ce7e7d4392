"""GitOps-like manifest tree: vendored CRD bundles, rendered charts, Helm values, Kustomize
bases/overlays and hand-written per-app manifests with comments, grown until it reaches
the requested size. Layout mirrors the real platform repositories in the shared corpus."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from synth_chart import rendered_chart
from synth_common import WORDS, Gen
from synth_crd import BUNDLES, bundle_docs
from synth_workloads import ARCHETYPES, NsCtx, pod_spec
from synth_yaml import comment_block, human_docs, values_yaml, vendor_docs

Obj = dict[str, Any]
KUSTOMIZE = "kustomize.config.k8s.io/v1beta1"
GW = "gateway.networking.k8s.io/v1"


class TreeWriter:
    """Writes files under root and keeps the tallies reported in the .meta.json."""

    def __init__(self, root: Path, g: Gen) -> None:
        self.root, self.g = root, g
        self.bytes = self.files = self.documents = self.objects = 0

    def _put(self, rel: str, text: str, docs: list[Obj]) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        path.write_bytes(data)
        self.bytes += len(data)
        self.files += 1
        self.documents += len(docs)
        # Kustomize configs are build inputs, not API objects; everything else with a kind is.
        self.objects += sum(1 for d in docs if "kind" in d and not str(d.get("apiVersion", "")).startswith(KUSTOMIZE))

    def human(self, rel: str, docs: list[Obj], header: int = 3) -> None:
        self._put(rel, human_docs(self.g, docs, header), docs)

    def vendor(self, rel: str, docs: list[Obj], sources: list[str] | None = None, preamble: str = "") -> None:
        self._put(rel, preamble + vendor_docs(docs, sources), docs)

    def raw(self, rel: str, text: str, docs: int = 0) -> None:
        """Text written as is; `docs` API objects it holds (values files and READMEs hold none)."""
        self._put(rel, text, [{"kind": "?"}] * docs)


def kustomization(resources: list[str], ns: str | None = None, **extra: Any) -> Obj:
    k: Obj = {"apiVersion": KUSTOMIZE, "kind": "Kustomization"}
    if ns:
        k["namespace"] = ns
    return k | {"resources": resources} | extra


def _platform_cilium(g: Gen, w: TreeWriter) -> None:
    values = {"kubeProxyReplacement": True, "k8sServiceHost": "10.0.0.10", "k8sServicePort": 6443,
              "k8sClientRateLimit": {"qps": 50, "burst": 100}, "routingMode": "native",
              "ipv4NativeRoutingCIDR": "10.42.0.0/16", "autoDirectNodeRoutes": True, "ipam": {"mode": "kubernetes"},
              "l2announcements": {"enabled": True, "leaseDuration": "3s", "leaseRenewDeadline": "1s"},
              "gatewayAPI": {"enabled": True, "hostNetwork": {"enabled": False}},
              "encryption": {"enabled": True, "type": "wireguard"}, "bpf": {"masquerade": True},
              "loadBalancer": {"algorithm": "maglev", "mode": "snat"},
              "hubble": {"enabled": True, "relay": {"enabled": True}, "ui": {"enabled": False}},
              "operator": {"replicas": 2, "rollOutPods": True}, "rollOutCiliumPods": True,
              "securityContext": {"capabilities": {"ciliumAgent": ["CHOWN", "KILL", "NET_ADMIN", "NET_RAW",
                                                                   "IPC_LOCK", "SYS_ADMIN", "SYS_RESOURCE"]}}}
    w.raw("platform/cilium/values.yaml", comment_block(g, 4) + values_yaml(g, values))
    w.human("platform/cilium/helmrelease.yaml", [
        {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
         "metadata": {"name": "cilium", "namespace": "kube-system"},
         "spec": {"interval": "12h", "url": "oci://quay.io/cilium/charts/cilium", "ref": {"tag": "1.19.1"}}},
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
         "metadata": {"name": "cilium", "namespace": "kube-system"},
         "spec": {"interval": "1h", "chartRef": {"kind": "OCIRepository", "name": "cilium"}, "values": values}}])
    pools = [{"apiVersion": "cilium.io/v2", "kind": "CiliumLoadBalancerIPPool", "metadata": {"name": "default-pool"},
              "spec": {"blocks": [{"start": "10.0.0.240", "stop": "10.0.0.250"}]}},
             {"apiVersion": "cilium.io/v2", "kind": "CiliumLoadBalancerIPPool", "metadata": {"name": "gateway-pool"},
              "spec": {"blocks": [{"cidr": "10.0.16.0/23"}], "serviceSelector": {"matchExpressions": [
                  {"key": "io.cilium.gateway/owning-gateway", "operator": "Exists"}]}}}]
    w.human("platform/cilium/lb-ipam-pool.yaml", pools, header=8)
    w.human("platform/cilium/l2-announcement-policy.yaml", [
        {"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumL2AnnouncementPolicy", "metadata": {"name": "default-l2"},
         "spec": {"serviceSelector": {"matchLabels": {}}, "nodeSelector": {"matchExpressions": [
             {"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}]},
             "interfaces": ["^eth0$"], "loadBalancerIPs": True}}], header=10)
    w.human("platform/cilium/gateway-class.yaml", [
        {"apiVersion": GW, "kind": "GatewayClass", "metadata": {"name": "cilium"},
         "spec": {"controllerName": "io.cilium/gateway-controller"}}], header=6)
    w.human("platform/cilium/kustomization.yaml", [kustomization(
        ["helmrelease.yaml", "lb-ipam-pool.yaml", "l2-announcement-policy.yaml", "gateway-class.yaml"],
        "kube-system")], header=1)


def _platform_legacy(g: Gen, w: TreeWriter) -> None:
    """Drift committed to Git: a v2alpha1 pool, MetalLB and kube-proxy remnants."""
    w.human("platform/legacy/lab-pool.yaml", [
        {"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumLoadBalancerIPPool", "metadata": {"name": "lab-pool"},
         "spec": {"cidrs": [{"cidr": "192.168.67.240/28"}]}}])
    w.human("platform/legacy/metallb.yaml", [
        {"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
         "metadata": {"name": "default", "namespace": "metallb-system"},
         "spec": {"addresses": ["192.168.1.240-192.168.1.250"]}},
        {"apiVersion": "metallb.io/v1beta1", "kind": "L2Advertisement",
         "metadata": {"name": "default", "namespace": "metallb-system"}, "spec": {"ipAddressPools": ["default"]}}])
    w.human("platform/legacy/kube-proxy-configmap.yaml", [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-proxy", "namespace": "kube-system",
                                                               "labels": {"app": "kube-proxy"}},
         "data": {"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
                                 "mode: iptables\nclusterCIDR: 10.244.0.0/16\n"}}])


def _platform_monitoring(g: Gen, w: TreeWriter, target: int) -> None:
    ctx = NsCtx("monitoring", 0, "helm", [], 0.0)
    docs, sources = rendered_chart(g, ctx, "kube-prometheus-stack", "86.1.0", 6, rule_groups=max(2, target // 90_000))
    w.raw("platform/kube-prometheus-stack/values.yaml", comment_block(g, 8) + values_yaml(g, {
        "prometheus": {"prometheusSpec": {"retention": "15d", "retentionSize": "9GB",
                                          "serviceMonitorSelectorNilUsesHelmValues": False}},
        "alertmanager": {"config": {"global": {"smtp_smarthost": "mailpit.mail.svc:1025"}}},
        "grafana": {"adminPassword": "", "persistence": {"enabled": True, "size": "2Gi"}}}))
    w.vendor("platform/kube-prometheus-stack/kube-prometheus-stack.yaml", docs, sources,
             comment_block(g, 6) + "#   helm template kube-prometheus-stack --version 86.1.0 -f values.yaml\n")


def _netpol(ns: str, name: str, spec: Obj) -> Obj:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _netpols(g: Gen, w: TreeWriter, ns: str, app: str, port: int, deny: bool) -> None:
    """platform/network-policies/<ns>/: default-deny (unless drifting), DNS egress, app ingress."""
    base = f"platform/network-policies/{ns}"
    if deny:
        w.human(f"{base}/00-default-deny.yaml",
                [_netpol(ns, "default-deny-all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})], 2)
    dns_to = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}]
    dns_ports = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    w.human(f"{base}/allow-dns.yaml", [_netpol(ns, "allow-dns-egress", {
        "podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": dns_to, "ports": dns_ports}]})], 2)
    w.human(f"{base}/allow-{app}-ingress.yaml", [_netpol(ns, f"allow-{app}-ingress", {
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": app}}, "policyTypes": ["Ingress"],
        "ingress": [{"ports": [{"protocol": "TCP", "port": port}]}]})])


def _anchored_cnp(g: Gen, name: str) -> str:
    """Hand-typed, homelab style: schema modeline, anchors/aliases and flow mappings."""
    return (f"---\n# yaml-language-server: $schema=https://raw.githubusercontent.com/datreeio/CRDs-catalog/main/"
            f"cilium.io/ciliumnetworkpolicy_v2.json\napiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\n"
            f"metadata:\n  name: &name {name}-egress\nspec:\n  endpointSelector:\n    matchLabels:\n"
            f"      app.kubernetes.io/name: *name\n  egress:\n    - toEndpoints:\n"
            f"        - matchLabels: {{ k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns }}\n"
            f"      toPorts:\n        - ports: [{{ port: \"53\", protocol: ANY }}]\n"
            f"    - toFQDNs: [{{ matchName: s3.internal.lan }}, {{ matchPattern: \"*.{g.pick(WORDS)}.svc\" }}]\n"
            f"  egressDeny:\n    - toCIDRSet:\n        - cidr: 10.0.0.0/8\n          except: [\"10.42.0.0/16\"]\n")


def _app_base(g: Gen, w: TreeWriter, ctx: NsCtx) -> tuple[list[Obj], list[Obj]]:
    """Namespace, workloads, Services and config of one app; returns workloads and Services."""
    name, base = ctx.name, f"apps/{ctx.name}/base"
    workloads: list[Obj] = []
    services: list[Obj] = []
    for i in range(g.between(1, 3)):
        arche = g.pick(ARCHETYPES)
        comp = arche[0] if i == 0 else f"{arche[0]}-{i}"
        labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": comp,
                  "app.kubernetes.io/part-of": name}
        spec = pod_spec(g, ctx, name, arche, name, f"{name}-config", f"{name}-secret")
        workloads.append({"apiVersion": "apps/v1", "kind": arche[4],
                          "metadata": {"name": f"{name}-{comp}", "labels": labels},
                          "spec": {"replicas": g.pick((1, 1, 2)), "selector": {"matchLabels": labels},
                                   "template": {"metadata": {"labels": labels}, "spec": spec}}})
        ports = [{"name": n, "port": p, "targetPort": n, "protocol": "TCP"} for n, p in arche[2]]
        services.append({"apiVersion": "v1", "kind": "Service",
                         "metadata": {"name": f"{name}-{comp}", "labels": labels},
                         "spec": {"selector": labels, "ports": ports}})
    port = services[0]["spec"]["ports"][0]["port"]
    features = "".join(f"  {g.pick(WORDS)}{j}: {g.pick(('true', 'false'))}\n" for j in range(g.between(3, 30)))
    w.human(f"{base}/namespace.yaml", [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": name, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}], 2)
    w.human(f"{base}/deployment.yaml", workloads, 4)
    w.human(f"{base}/service.yaml", services, 2)
    w.human(f"{base}/configmap.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config"},
                                        "data": {"LOG_LEVEL": "info", "app.yaml": f"server:\n  port: {port}\n"
                                                 f"  name: {name}\nfeatures:\n{features}"}}], 1)
    return workloads, services


def _app_exposure(g: Gen, w: TreeWriter, name: str, svc: Obj, idx: int) -> str | None:
    """How the app is reached: Gateway+HTTPRoute, a NodePort, a drifting LB, or not at all."""
    base, port, r = f"apps/{name}/base", svc["spec"]["ports"][0]["port"], g.rng.random()
    if r < 0.45:
        host = f"{name}.cluster.lan"
        w.human(f"{base}/gateway.yaml", [
            {"apiVersion": GW, "kind": "Gateway", "metadata": {"name": name, "annotations": {
                "cert-manager.io/cluster-issuer": "internal-ca"}}, "spec": {"gatewayClassName": "cilium", "listeners": [
                    {"name": "websecure", "protocol": "HTTPS", "port": 443, "hostname": host,
                     "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": f"{name}-tls"}]},
                     "allowedRoutes": {"namespaces": {"from": "Same"}}}]}},
            {"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": name}, "spec": {
                "parentRefs": [{"name": name, "sectionName": "websecure"}], "hostnames": [host],
                "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                           "backendRefs": [{"name": svc["metadata"]["name"], "port": port}]}]}}], 6)
        return "gateway.yaml"
    if r < 0.6:  # the per-UI NodePort escape hatch the corpus repos use
        ports = [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}]
        np = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-nodeport"},
              "spec": {"type": "NodePort", "selector": svc["spec"]["selector"], "ports": ports}}
        w.human(f"{base}/nodeport.yaml", [np], 8)
        return "nodeport.yaml"
    if r < 0.65:  # drift: a direct LoadBalancer bypassing the Gateway
        w.human(f"{base}/loadbalancer.yaml", [{"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": f"{name}-lb", "annotations": {"lbipam.cilium.io/ips": f"10.0.0.{240 + idx % 11}"}}, "spec": {
                "type": "LoadBalancer", "externalTrafficPolicy": g.pick(("Local", "Cluster")),
                "selector": svc["spec"]["selector"], "ports": [{"name": "tcp", "port": port}]}}], 3)
        return "loadbalancer.yaml"
    return None


def _app_overlays(g: Gen, w: TreeWriter, name: str, workload: Obj) -> None:
    for env in ("staging", "prod"):
        patch = f"- op: replace\n  path: /spec/replicas\n  value: {2 if env == 'prod' else 1}\n"
        w.human(f"apps/{name}/overlays/{env}/kustomization.yaml", [kustomization(
            ["../../base"], f"{name}-{env}" if env == "staging" else name,
            patches=[{"target": {"kind": workload["kind"], "name": workload["metadata"]["name"]}, "patch": patch}],
            images=[{"name": "ghcr.io/univ-lehavre/app", "newTag": f"v{g.between(1, 9)}.{g.between(0, 40)}.0"}])], 1)


def _app_chart(g: Gen, w: TreeWriter, ctx: NsCtx, port: int) -> None:
    """A Helm chart's values file and its committed `helm template` output."""
    name = ctx.name
    docs, sources = rendered_chart(g, ctx, name, f"{g.between(0, 9)}.{g.between(0, 30)}.{g.between(0, 9)}",
                                   g.between(2, 8))
    w.raw(f"apps/{name}/chart/values.yaml", comment_block(g, 3) + values_yaml(g, {
        "image": {"repository": f"ghcr.io/univ-lehavre/{name}", "tag": "", "pullPolicy": "IfNotPresent"},
        "replicaCount": 1, "service": {"type": "ClusterIP", "port": port},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "podSecurityContext": {"fsGroup": 1000}, "nodeSelector": {}, "tolerations": [], "affinity": {}}))
    w.vendor(f"apps/{name}/rendered/{name}.yaml", docs, sources)


def _app(g: Gen, w: TreeWriter, name: str, idx: int) -> str:
    """apps/<name>/ with base, overlays, optional chart; returns the path for clusters/prod."""
    ctx = NsCtx(name, 0, "kubectl-client-side-apply", [], 0.0)
    workloads, services = _app_base(g, w, ctx)
    files = ["namespace.yaml", "deployment.yaml", "service.yaml", "configmap.yaml"]
    exposure = _app_exposure(g, w, name, services[0], idx)
    if exposure:
        files.append(exposure)
    if g.chance(0.2):
        w.raw(f"apps/{name}/base/ciliumnetworkpolicy.yaml", _anchored_cnp(g, name), docs=1)
        files.append("ciliumnetworkpolicy.yaml")
    w.human(f"apps/{name}/base/kustomization.yaml", [kustomization(files, name, labels=[
        {"pairs": {"app.kubernetes.io/part-of": name}, "includeSelectors": False}])], 0)
    _app_overlays(g, w, name, workloads[0])
    port = services[0]["spec"]["ports"][0]["port"]
    if g.chance(0.35):
        _app_chart(g, w, ctx, port)
    _netpols(g, w, name, name, port, deny=not g.chance(0.05))
    return f"../../apps/{name}/overlays/prod"


def build_tree(out: Path, target_bytes: int, seed: int, force: bool = False) -> dict[str, Any]:
    if out.exists() and any(out.iterdir()) and not force:
        raise SystemExit(f"{out} exists and is not empty (use --force)")
    g = Gen(seed)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    w = TreeWriter(tmp, g)
    w.raw("README.md", "# platform\n\nGitOps sources of the cluster (Argo CD + Flux). Generated for benchmarks.\n")
    # Vendored bundles are most of the bytes in real platform repos (85% in the corpus tree).
    weights = {"gateway-api/standard-install.yaml": 0.14, "cilium/crds.yaml": 0.14,
               "cert-manager/cert-manager.crds.yaml": 0.09, "argo-cd/crds.yaml": 0.08}
    for key in BUNDLES:
        w.vendor(f"platform/crds/{key}", bundle_docs(g, key, int(target_bytes * weights[key])), None,
                 comment_block(g, 2) + "# This is an auto-generated file. DO NOT EDIT\n")
    _platform_cilium(g, w)
    _platform_legacy(g, w)
    _platform_monitoring(g, w, target_bytes)
    overlays: list[str] = []
    seen: set[str] = set()
    while w.bytes < target_bytes:
        word = g.pick(WORDS)
        name = word if word not in seen else f"{word}-{len(seen)}"
        seen.add(name)
        overlays.append(_app(g, w, name, len(overlays)))
    w.human("clusters/prod/kustomization.yaml", [kustomization(
        ["../../platform/cilium", "../../platform/kube-prometheus-stack", *overlays])], 2)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return {"objects": w.objects, "documents": w.documents, "files": w.files, "bytes": w.bytes,
            "apps": len(overlays), "requested_bytes": target_bytes}
