"""kube-system as a Cilium 1.19 (kube-proxy-free, L2 announcements, Gateway API) cluster has it,
plus the optional leftover kube-proxy DaemonSet/ConfigMap that the auditor must flag."""

from __future__ import annotations

from synth_common import Gen, Obj, decorate, meta
from synth_config import root_ca_configmap, service_account
from synth_network import service
from synth_workloads import Node, NsCtx, daemonset, deployment

CILIUM_VERSION = "v1.19.1"
K8S_VERSION = "v1.33.4"


def cilium_config(k8s_qps: int = 50, burst: int = 100) -> dict[str, str]:
    """The `kube-system/cilium-config` data a Helm install with our values renders (trimmed to common keys)."""
    cfg = {
        "agent-not-ready-taint-key": "node.cilium.io/agent-not-ready", "arping-refresh-period": "30s",
        "auto-direct-node-routes": "true", "bpf-distributed-lru": "false", "bpf-events-drop-enabled": "true",
        "bpf-events-policy-verdict-enabled": "true", "bpf-events-trace-enabled": "true",
        "bpf-lb-acceleration": "disabled", "bpf-lb-algorithm-annotation": "false", "bpf-lb-external-clusterip": "false",
        "bpf-lb-map-max": "65536", "bpf-lb-mode-annotation": "false", "bpf-lb-sock": "false",
        "bpf-lb-source-range-all-types": "false", "bpf-map-dynamic-size-ratio": "0.0025", "bpf-policy-map-max": "16384",
        "bpf-policy-stats-map-max": "65536", "bpf-root": "/sys/fs/bpf", "cgroup-root": "/run/cilium/cgroupv2",
        "cilium-endpoint-gc-interval": "5m0s", "cluster-id": "0", "cluster-name": "atlas",
        "clustermesh-enable-endpoint-sync": "false", "clustermesh-enable-mcs-api": "false", "cni-exclusive": "true",
        "cni-log-file": "/var/run/cilium/cilium-cni.log", "custom-cni-conf": "false", "datapath-mode": "veth",
        "debug": "false", "default-lb-service-ipam": "lbipam", "direct-routing-skip-unreachable": "false",
        "dnsproxy-enable-transparent-mode": "true", "dnsproxy-socket-linger-timeout": "10",
        "egress-gateway-reconciliation-trigger-interval": "1s", "enable-auto-protect-node-port-range": "true",
        "enable-bgp-control-plane": "false", "enable-bpf-clock-probe": "false", "enable-bpf-masquerade": "true",
        "enable-endpoint-health-checking": "true", "enable-endpoint-lockdown-on-policy-overflow": "false",
        "enable-envoy-config": "true", "enable-gateway-api": "true", "enable-gateway-api-alpn": "false",
        "enable-gateway-api-app-protocol": "false", "enable-gateway-api-proxy-protocol": "false",
        "enable-gateway-api-secrets-sync": "true", "enable-health-check-loadbalancer-ip": "false",
        "enable-health-check-nodeport": "true", "enable-health-checking": "true", "enable-hubble": "true",
        "enable-internal-traffic-policy": "true", "enable-ipv4": "true", "enable-ipv4-big-tcp": "false",
        "enable-ipv4-masquerade": "true", "enable-ipv6": "false", "enable-ipv6-big-tcp": "false",
        "enable-ipv6-masquerade": "true", "enable-k8s-networkpolicy": "true", "enable-l2-announcements": "true",
        "enable-l2-neigh-discovery": "false", "enable-l7-proxy": "true", "enable-lb-ipam": "true",
        "enable-local-redirect-policy": "false", "enable-masquerade-to-route-source": "false",
        "enable-metrics": "true", "enable-node-selector-labels": "false", "enable-non-default-deny-policies": "true",
        "enable-policy": "default", "enable-policy-secrets-sync": "true", "enable-runtime-device-detection": "true",
        "enable-sctp": "false", "enable-source-ip-verification": "true", "enable-svc-source-range-check": "true",
        "enable-tcx": "true", "enable-vtep": "false", "enable-well-known-identities": "false",
        "enable-wireguard": "true", "enable-xt-socket-fallback": "true", "envoy-access-log-buffer-size": "4096",
        "envoy-base-id": "0", "envoy-config-retry-interval": "15s", "envoy-keep-cap-netbindservice": "false",
        "external-envoy-proxy": "true", "gateway-api-hostnetwork-enabled": "false",
        "gateway-api-secrets-namespace": "cilium-secrets", "gateway-api-service-externaltrafficpolicy": "Cluster",
        "gateway-api-xff-num-trusted-hops": "0", "health-check-icmp-failure-threshold": "3",
        "http-retry-count": "3", "hubble-disable-tls": "false", "hubble-export-file-max-backups": "5",
        "hubble-export-file-max-size-mb": "10", "hubble-listen-address": ":4244",
        "hubble-socket-path": "/var/run/cilium/hubble.sock",
        "hubble-tls-cert-file": "/var/lib/cilium/tls/hubble/server.crt",
        "hubble-tls-client-ca-files": "/var/lib/cilium/tls/hubble/client-ca.crt",
        "hubble-tls-key-file": "/var/lib/cilium/tls/hubble/server.key", "identity-allocation-mode": "crd",
        "identity-gc-interval": "15m0s", "identity-heartbeat-timeout": "30m0s", "identity-management-mode": "agent",
        "install-no-conntrack-iptables-rules": "false", "ipam": "kubernetes", "ipam-cilium-node-update-rate": "15s",
        "ipv4-native-routing-cidr": "10.42.0.0/16", "k8s-client-burst": str(burst), "k8s-client-qps": str(k8s_qps),
        "k8s-require-ipv4-pod-cidr": "true", "k8s-require-ipv6-pod-cidr": "false",
        "kube-proxy-replacement": "true", "kube-proxy-replacement-healthz-bind-address": "0.0.0.0:10256",
        "l2-announcements-lease-duration": "3s", "l2-announcements-renew-deadline": "1s",
        "l2-announcements-retry-period": "200ms", "max-connected-clusters": "255", "mesh-auth-enabled": "true",
        "mesh-auth-gc-interval": "5m0s", "mesh-auth-queue-size": "1024", "monitor-aggregation": "medium",
        "monitor-aggregation-flags": "all", "monitor-aggregation-interval": "5s", "nat-map-stats-entries": "32",
        "nat-map-stats-interval": "30s", "node-port-bind-protection": "true", "nodeport-addresses": "",
        "nodes-gc-interval": "5m0s", "operator-api-serve-addr": "127.0.0.1:9234",
        "operator-prometheus-serve-addr": ":9963", "policy-cidr-match-mode": "", "policy-default-local-cluster": "true",
        "policy-secrets-namespace": "cilium-secrets", "policy-secrets-only-from-secrets-namespace": "true",
        "preallocate-bpf-maps": "false", "procfs": "/host/proc", "prometheus-serve-addr": ":9962",
        "proxy-connect-timeout": "2", "proxy-idle-timeout-seconds": "60", "proxy-initial-fetch-timeout": "30",
        "proxy-max-concurrent-retries": "128", "proxy-max-connection-duration-seconds": "0",
        "proxy-max-requests-per-connection": "0", "proxy-xff-num-trusted-hops-egress": "0",
        "proxy-xff-num-trusted-hops-ingress": "0", "remove-cilium-node-taints": "true", "routing-mode": "native",
        "service-no-backend-response": "reject", "set-cilium-is-up-condition": "true",
        "set-cilium-node-taints": "true", "synchronize-k8s-nodes": "true",
        "tofqdns-dns-reject-response-code": "refused",
        "tofqdns-enable-dns-compression": "true", "tofqdns-endpoint-max-ip-per-hostname": "1000",
        "tofqdns-idle-connection-grace-period": "0s", "tofqdns-max-deferred-connection-deletes": "10000",
        "tofqdns-proxy-response-max-delay": "100ms", "tunnel-protocol": "vxlan", "unmanaged-pod-watcher-interval": "15",
        "vtep-cidr": "", "vtep-endpoint": "", "vtep-mac": "", "vtep-mask": "", "wireguard-persistent-keepalive": "0s",
        "write-cni-conf-when-ready": "/host/etc/cni/net.d/05-cilium.conflist",
    }
    return cfg


def _host_vol(name: str, path: str, htype: str = "DirectoryOrCreate") -> Obj:
    return {"name": name, "hostPath": {"path": path, "type": htype}}


def _cilium_agent_pod(g: Gen) -> Obj:
    image = f"quay.io/cilium/cilium:{CILIUM_VERSION}@{g.sha256()}"
    env = [{"name": "K8S_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "CILIUM_K8S_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
           {"name": "GOMEMLIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1"}}},
           {"name": "KUBERNETES_SERVICE_HOST", "value": "10.0.0.10"},
           {"name": "KUBERNETES_SERVICE_PORT", "value": "6443"}]
    mounts = [{"name": n, "mountPath": p} for n, p in (
        ("bpf-maps", "/sys/fs/bpf"), ("cilium-run", "/var/run/cilium"), ("cilium-netns", "/var/run/cilium/netns"),
        ("etc-cni-netd", "/host/etc/cni/net.d"), ("clustermesh-secrets", "/var/lib/cilium/clustermesh"),
        ("lib-modules", "/lib/modules"), ("xtables-lock", "/run/xtables.lock"),
        ("hubble-tls", "/var/lib/cilium/tls/hubble"),
        ("tmp", "/tmp"))]
    probe = {"httpGet": {"host": "127.0.0.1", "path": "/healthz", "port": 9879,
                         "httpHeaders": [{"name": "brief", "value": "true"}]}}
    agent = {"name": "cilium-agent", "image": image, "command": ["cilium-agent"],
             "args": ["--config-dir=/tmp/cilium/config-map"], "env": env, "volumeMounts": mounts,
             "ports": [{"name": "peer-service", "containerPort": 4244, "hostPort": 4244},
                       {"name": "prometheus", "containerPort": 9962, "hostPort": 9962},
                       {"name": "envoy-metrics", "containerPort": 9964, "hostPort": 9964}],
             "livenessProbe": probe | {"failureThreshold": 10, "periodSeconds": 30},
             "readinessProbe": probe | {"failureThreshold": 3, "periodSeconds": 30},
             "startupProbe": probe | {"failureThreshold": 105, "periodSeconds": 2, "successThreshold": 1},
             "securityContext": {"capabilities": {"add": ["CHOWN", "KILL", "NET_ADMIN", "NET_RAW", "IPC_LOCK",
                                                          "SYS_MODULE", "SYS_ADMIN", "SYS_RESOURCE", "DAC_OVERRIDE",
                                                          "FOWNER", "SETGID", "SETUID"], "drop": ["ALL"]},
                                 "seLinuxOptions": {"level": "s0", "type": "spc_t"}}}
    inits = [{"name": n, "image": image, "command": cmd, "volumeMounts": mounts[:3]} for n, cmd in (
        ("config", ["cilium-dbg", "build-config"]),
        ("mount-cgroup", ["sh", "-ec", "cp /usr/bin/cilium-mount /hostbin"]),
        ("apply-sysctl-overwrites", ["sh", "-ec", "cp /usr/bin/cilium-sysctlfix /hostbin"]),
        ("mount-bpf-fs", ["/bin/bash", "-c", "--",
                          "mount | grep \"/sys/fs/bpf type bpf\" || mount -t bpf bpf /sys/fs/bpf"]),
        ("clean-cilium-state", ["/init-container.sh"]), ("install-cni-binaries", ["/install-plugin.sh"]))]
    vols = [_host_vol(v["name"], "/run/" + v["name"]) for v in mounts if v["name"] != "tmp"]
    vols.append({"name": "tmp", "emptyDir": {}})
    return {"serviceAccountName": "cilium", "automountServiceAccountToken": True, "hostNetwork": True,
            "priorityClassName": "system-node-critical", "containers": [agent], "initContainers": inits,
            "tolerations": [{"operator": "Exists"}], "volumes": vols,
            "nodeSelector": {"kubernetes.io/os": "linux"}, "restartPolicy": "Always"}


def _simple_pod(name: str, image: str, sa: str, ports: list[tuple[str, int]], args: list[str]) -> Obj:
    c = {"name": name, "image": image, "args": args, "ports": [{"name": n, "containerPort": p} for n, p in ports],
         "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
         "livenessProbe": {"httpGet": {"path": "/healthz", "port": ports[0][1]}, "initialDelaySeconds": 60}}
    return {"serviceAccountName": sa, "priorityClassName": "system-cluster-critical", "containers": [c],
            "nodeSelector": {"kubernetes.io/os": "linux"}}


def _kube_proxy(g: Gen, ctx: NsCtx) -> list[Obj]:
    """Drift: kube-proxy left behind after moving to kube-proxy-replacement."""
    conf = ("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n"
            "clusterCIDR: 10.42.0.0/16\nclientConnection:\n  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf\n"
            "bindAddress: 0.0.0.0\nconntrack:\n  maxPerCore: null\nmetricsBindAddress: \"\"\n")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"config.conf": conf, "kubeconfig.conf": "apiVersion: v1\n"},
          "metadata": meta(g, "kube-proxy", "kube-system", g.past(500, 600), labels={"app": "kube-proxy"},
                           annotations={"kubeadm.kubernetes.io/component-config.hash": g.sha256()})}
    spec = {"serviceAccountName": "kube-proxy", "hostNetwork": True, "priorityClassName": "system-node-critical",
            "containers": [{"name": "kube-proxy", "image": f"registry.k8s.io/kube-proxy:{K8S_VERSION}",
                            "command": ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf",
                                        "--hostname-override=$(NODE_NAME)"],
                            "securityContext": {"privileged": True}}],
            "tolerations": [{"operator": "Exists"}]}
    return [cm, *daemonset(g, ctx, "kube-proxy", {"k8s-app": "kube-proxy"}, spec, g.past(500, 600)),
            service_account(g, ctx, "kube-proxy")]


_HELM_ANN = {"meta.helm.sh/release-name": "cilium", "meta.helm.sh/release-namespace": "kube-system"}
_CORE_SAS = ("default", "attachdetach-controller", "bootstrap-signer", "certificate-controller",
             "clusterrole-aggregation-controller", "cronjob-controller", "daemon-set-controller",
             "deployment-controller", "endpoint-controller", "endpointslice-controller", "generic-garbage-collector",
             "job-controller", "namespace-controller", "node-controller", "replicaset-controller",
             "service-account-controller", "statefulset-controller")
_COREFILE = (".:53 {\n    errors\n    health {\n       lameduck 5s\n    }\n    ready\n"
             "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n       pods insecure\n"
             "       fallthrough in-addr.arpa ip6.arpa\n       ttl 30\n    }\n    prometheus :9153\n"
             "    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n    cache 30\n"
             "    loop\n    reload\n    loadbalance\n}\n")


def _cilium_labels(name: str) -> Obj:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "cilium",
            "app.kubernetes.io/managed-by": "Helm"}


def _cilium(g: Gen, ctx: NsCtx) -> list[Obj]:
    """The Helm release: cilium-config, agent and envoy DaemonSets, operator, hubble-relay, CA."""
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "data": cilium_config(),
           "metadata": meta(g, "cilium-config", "kube-system", g.past(300, 400), annotations=_HELM_ANN,
                            labels={"app.kubernetes.io/managed-by": "Helm"})}
    decorate(g, cfg, ctx.created, "helm", {"data": cfg["data"]}, ctx.p_managed_fields)
    out = [cfg, *daemonset(g, ctx, "cilium", {"k8s-app": "cilium"} | _cilium_labels("cilium-agent"),
                           _cilium_agent_pod(g), g.past(300, 400))]
    envoy = _simple_pod("cilium-envoy", f"quay.io/cilium/cilium-envoy:v1.35.3-{g.hexstr(10)}", "cilium-envoy",
                        [("envoy-metrics", 9964)], ["--config-path", "/var/run/cilium/envoy/bootstrap-config.json"])
    out += daemonset(g, ctx, "cilium-envoy", {"k8s-app": "cilium-envoy"} | _cilium_labels("cilium-envoy"), envoy,
                     g.past(300, 400))
    op = _simple_pod("cilium-operator", f"quay.io/cilium/operator-generic:{CILIUM_VERSION}@{g.sha256()}",
                     "cilium-operator", [("prometheus", 9963)],
                     ["--config-dir=/tmp/cilium/config-map", "--debug=false"])
    out += deployment(g, ctx, "cilium-operator", {"io.cilium/app": "operator", "name": "cilium-operator"}
                      | _cilium_labels("cilium-operator"), op, 2, g.past(300, 400))
    relay = _simple_pod("hubble-relay", f"quay.io/cilium/hubble-relay:{CILIUM_VERSION}", "hubble-relay",
                        [("grpc", 4245)], ["serve"])
    out += deployment(g, ctx, "hubble-relay", {"k8s-app": "hubble-relay"} | _cilium_labels("hubble-relay"), relay, 1,
                      g.past(300, 400))
    for name, port in (("hubble-peer", 443), ("hubble-relay", 80)):
        sel = "cilium" if name == "hubble-peer" else name  # hubble-peer fronts the agents themselves
        out.append(service(g, ctx, name, {"k8s-app": name}, [("https" if port == 443 else "grpc", port)],
                           selector={"k8s-app": sel}))
    out += [service_account(g, ctx, sa) for sa in ("cilium", "cilium-envoy", "cilium-operator", "hubble-relay")]
    out.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "data": {"ca.crt": g.b64(1100), "ca.key": g.b64(1700)},
                "metadata": meta(g, "cilium-ca", "kube-system", g.past(300, 400), annotations=_HELM_ANN)})
    return out


def _core(g: Gen, ctx: NsCtx) -> list[Obj]:
    """What kubeadm and the usual add-ons put in kube-system: CoreDNS, metrics-server, controller SAs."""
    dns = _simple_pod("coredns", "registry.k8s.io/coredns/coredns:v1.12.0", "coredns", [("dns", 53), ("metrics", 9153)],
                      ["-conf", "/etc/coredns/Corefile"])
    out = deployment(g, ctx, "coredns", {"k8s-app": "kube-dns"}, dns, 2, g.past(600, 700))
    ms = _simple_pod("metrics-server", "registry.k8s.io/metrics-server/metrics-server:v0.8.0", "metrics-server",
                     [("https", 10250)], ["--cert-dir=/tmp", "--secure-port=10250", "--kubelet-use-node-status-port"])
    out += deployment(g, ctx, "metrics-server", {"k8s-app": "metrics-server"}, ms, 1, g.past(300, 400))
    kube_dns = service(g, ctx, "kube-dns", {"k8s-app": "kube-dns"}, [("dns", 53), ("dns-tcp", 53), ("metrics", 9153)],
                       selector={"k8s-app": "kube-dns"})
    kube_dns["spec"].update(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"])
    out += [kube_dns, service(g, ctx, "metrics-server", {"k8s-app": "metrics-server"}, [("https", 443)],
                              selector={"k8s-app": "metrics-server"})]
    out += [service_account(g, ctx, sa) for sa in ("coredns", "metrics-server", *_CORE_SAS)]
    out += [root_ca_configmap(g, ctx), {"apiVersion": "v1", "kind": "ConfigMap", "data": {"Corefile": _COREFILE},
                                        "metadata": meta(g, "coredns", "kube-system", g.past(600, 700))}]
    return out


def kube_system(g: Gen, nodes: list[Node], with_kube_proxy: bool, p_mf: float) -> list[Obj]:
    ctx = NsCtx("kube-system", g.past(600, 700), "helm", nodes, p_mf, apps=["cilium"])
    return _cilium(g, ctx) + _core(g, ctx) + (_kube_proxy(g, ctx) if with_kube_proxy else [])


def make_nodes(n: int) -> list[Node]:
    cps = 1 if n < 10 else 3
    return [Node(f"cp-{i + 1:02d}" if i < cps else f"worker-{i - cps + 1:02d}", f"10.0.0.{11 + i}", i)
            for i in range(n)]
