"""`helm template` output: many small objects per chart, plus PrometheusRule-heavy monitoring charts."""

from __future__ import annotations

from typing import Any

from synth_common import Gen
from synth_workloads import ARCHETYPES, NsCtx, pod_spec

Obj = dict[str, Any]

_METRICS = ("http_requests_total", "process_resident_memory_bytes", "kube_pod_container_status_restarts_total",
            "container_cpu_usage_seconds_total", "node_filesystem_avail_bytes", "apiserver_request_total",
            "cilium_drop_count_total", "cilium_policy_l7_denied_total", "kube_deployment_status_replicas_available")


def helm_labels(chart: str, version: str, name: str, component: str = "") -> Obj:
    labels = {"helm.sh/chart": f"{chart}-{version}", "app.kubernetes.io/name": chart,
              "app.kubernetes.io/instance": name, "app.kubernetes.io/version": f'{version}',
              "app.kubernetes.io/managed-by": "Helm"}
    if component:
        labels["app.kubernetes.io/component"] = component
    return labels


def _rbac(chart: str, name: str, ns: str, labels: Obj) -> list[tuple[str, Obj]]:
    rules = [{"apiGroups": [""], "resources": ["pods", "services", "endpoints", "configmaps"],
              "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
              "verbs": ["get", "create", "update", "patch"]}]
    subj = [{"kind": "ServiceAccount", "name": name, "namespace": ns}]
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    m = {"name": name, "labels": labels}
    return [("clusterrole.yaml", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                  "metadata": m, "rules": rules}),
            ("clusterrolebinding.yaml", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                                         "metadata": m, "roleRef": ref, "subjects": subj})]


def _prometheus_rule(g: Gen, name: str, ns: str, labels: Obj, n_groups: int) -> Obj:
    groups = []
    for i in range(n_groups):
        rules = []
        for j in range(g.between(4, 14)):
            metric = g.pick(_METRICS)
            expr = (f"# Without max_over_time, failed scrapes could create false negatives.\n"
                    f"sum by (namespace, pod) (rate({metric}{{job=\"{name}\",namespace=\"{ns}\"}}[5m]))\n"
                    f"  / ignoring (instance) group_left\n"
                    f"sum by (namespace) (rate({metric}[5m])) > {g.pick((0.5, 0.8, 0.95, 1))}")
            rules.append({"alert": f"{metric.title().replace('_', '')}{i}{j}",
                          "annotations": {"description": f"{{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}} "
                                          f"{g.words(g.between(8, 20))}.",
                                          "runbook_url": f"https://runbooks.prometheus-operator.dev/runbooks/{name}/{j}",
                                          "summary": g.words(g.between(4, 9)).capitalize() + "."},
                          "expr": expr, "for": g.pick(("5m", "10m", "15m", "1h")),
                          "labels": {"severity": g.pick(("warning", "critical", "info"))}})
        groups.append({"name": f"{name}.rules.{i}", "rules": rules})
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": f"{name}-rules", "namespace": ns, "labels": labels}, "spec": {"groups": groups}}


def _config_blob(g: Gen, chart: str, lines: int) -> str:
    out = [f"# {chart} configuration rendered by Helm", "server:", "  http_listen_port: 3100", "limits:"]
    out += [f"  {g.pick(('max', 'min', 'per'))}_{g.pick(('query', 'stream', 'tenant'))}_{i}: {g.between(1, 9999)}"
            for i in range(lines)]
    return "\n".join(out) + "\n"


def rendered_chart(g: Gen, ctx: NsCtx, chart: str, version: str, workloads: int,
                   rule_groups: int = 0) -> tuple[list[Obj], list[str]]:
    """Documents and their `# Source:` paths, in the order `helm template` prints them."""
    ns, name = ctx.name, chart
    labels = helm_labels(chart, version, name)
    docs: list[tuple[str, Obj]] = [
        ("serviceaccount.yaml", {"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": True,
                                 "metadata": {"name": name, "namespace": ns, "labels": labels}}),
        ("secret.yaml", {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                         "metadata": {"name": f"{name}-auth", "namespace": ns, "labels": labels},
                         "data": {"password": g.b64(24), "admin-user": g.b64(8)}}),
        ("configmap.yaml", {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": f"{name}-config", "namespace": ns, "labels": labels},
                            "data": {"config.yaml": _config_blob(g, chart, g.between(20, 200))}}),
        *_rbac(chart, name, ns, labels)]
    for i in range(workloads):
        arche = g.pick(ARCHETYPES)
        comp = f"{arche[0]}{i}" if i else arche[0]
        cl = helm_labels(chart, version, name, comp)
        sel = {"app.kubernetes.io/name": chart, "app.kubernetes.io/instance": name,
               "app.kubernetes.io/component": comp}
        spec = pod_spec(g, ctx, chart, arche, name, f"{name}-config", f"{name}-auth")
        kind = arche[4]
        wl: Obj = {"replicas": g.pick((1, 2, 3)), "selector": {"matchLabels": sel},
                   "template": {"metadata": {"labels": cl, "annotations": {"checksum/config": g.hexstr(64)}},
                                "spec": spec}}
        if kind == "StatefulSet":
            wl["serviceName"] = f"{name}-{comp}-headless"
        docs.append((f"{comp}/{kind.lower()}.yaml", {"apiVersion": "apps/v1", "kind": kind,
                                                     "metadata": {"name": f"{name}-{comp}", "namespace": ns,
                                                                  "labels": cl}, "spec": wl}))
        ports = [{"name": n, "port": p, "targetPort": n, "protocol": "TCP"} for n, p in arche[2]]
        docs.append((f"{comp}/service.yaml", {"apiVersion": "v1", "kind": "Service",
                                              "metadata": {"name": f"{name}-{comp}", "namespace": ns, "labels": cl},
                                              "spec": {"type": "ClusterIP", "ports": ports, "selector": sel}}))
        if g.chance(0.5):
            docs.append((f"{comp}/pdb.yaml", {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                              "metadata": {"name": f"{name}-{comp}", "namespace": ns, "labels": cl},
                                              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": sel}}}))
        if g.chance(0.5):
            docs.append((f"{comp}/servicemonitor.yaml", {
                "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
                "metadata": {"name": f"{name}-{comp}", "namespace": ns, "labels": cl},
                "spec": {"endpoints": [{"port": "metrics", "interval": "30s", "scrapeTimeout": "10s"}],
                         "selector": {"matchLabels": sel}}}))
    if rule_groups:  # the monitoring stack: node-exporter DaemonSet and its alerting rules
        ne = helm_labels("prometheus-node-exporter", "4.47.0", name)
        spec = pod_spec(g, ctx, "node-exporter", ("node-exporter", "quay.io/prometheus/node-exporter:v1.9.1",
                                                  (("http-metrics", 9100),), "http", "DaemonSet"),
                        f"{name}-prometheus-node-exporter", f"{name}-config", f"{name}-auth")
        spec |= {"hostNetwork": True, "hostPID": True, "tolerations": [{"effect": "NoSchedule", "operator": "Exists"}]}
        docs.append(("prometheus-node-exporter/daemonset.yaml", {
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": f"{name}-prometheus-node-exporter", "namespace": ns, "labels": ne},
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "prometheus-node-exporter"}},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                     "template": {"metadata": {"labels": ne}, "spec": spec}}}))
        docs.append(("prometheusrule.yaml", _prometheus_rule(g, name, ns, labels, rule_groups)))
    return [d for _, d in docs], [f"{chart}/templates/{src}" for src, _ in docs]
