"""Workload objects (Deployments, StatefulSets, DaemonSets, Pods) as the API server returns them.

Builders first make the user-written spec (what last-applied records), then clone it
and add the server-side defaults and status, because real dumps contain both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synth_common import Gen, Obj, clone, condition, decorate, meta, owner_ref, ts

# (role, image, ports, probe kind, workload kind)
Archetype = tuple[str, str, tuple[tuple[str, int], ...], str, str]
ARCHETYPES: tuple[Archetype, ...] = (
    ("web", "docker.io/nginxinc/nginx-unprivileged:1.27.3-alpine", (("http", 8080),), "http", "Deployment"),
    ("api", "ghcr.io/{org}/{app}-api:v{ver}", (("http", 8000), ("metrics", 9090)), "http", "Deployment"),
    ("worker", "ghcr.io/{org}/{app}-worker:v{ver}", (("metrics", 9090),), "exec", "Deployment"),
    ("frontend", "registry.internal.lan/{org}/{app}-ui:{ver}", (("http", 3000),), "http", "Deployment"),
    ("grpc", "ghcr.io/{org}/{app}-svc:v{ver}", (("grpc", 9000), ("metrics", 9090)), "grpc", "Deployment"),
    ("postgres", "ghcr.io/cloudnative-pg/postgresql:16.6-bookworm", (("postgresql", 5432),), "tcp", "StatefulSet"),
    ("redis", "docker.io/bitnami/redis:7.4.2-debian-12-r6", (("redis", 6379),), "tcp", "StatefulSet"),
    ("cache", "docker.io/library/memcached:1.6.34-alpine", (("memcache", 11211),), "tcp", "Deployment"),
)
ORGS = ("univ-lehavre", "atlas-data", "acme-corp", "platform-team", "research-it")


@dataclass
class Node:
    name: str
    ip: str
    index: int


@dataclass
class NsCtx:
    """Per-namespace choices that every object of the namespace must agree on."""

    name: str
    created: int
    manager: str  # kubectl-client-side-apply | argocd-controller | helm | kustomize-controller
    nodes: list[Node]
    p_managed_fields: float
    apps: list[str] = field(default_factory=list)


def mgmt_labels(ctx: NsCtx, app: str, role: str, version: str) -> Obj:
    labels: Obj = {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": f"{app}-{role}",
                   "app.kubernetes.io/component": role, "app.kubernetes.io/part-of": ctx.name,
                   "app.kubernetes.io/version": version}
    if ctx.manager == "helm":
        labels["app.kubernetes.io/managed-by"] = "Helm"
        labels["helm.sh/chart"] = f"{app}-{version.lstrip('v')}"
    elif ctx.manager == "kustomize-controller":
        labels["kustomize.toolkit.fluxcd.io/name"] = "apps"
        labels["kustomize.toolkit.fluxcd.io/namespace"] = "flux-system"
    return labels


def mgmt_annotations(ctx: NsCtx, group_kind: str, name: str) -> Obj:
    if ctx.manager == "helm":
        return {"meta.helm.sh/release-name": name.split("-")[0], "meta.helm.sh/release-namespace": ctx.name}
    if ctx.manager == "argocd-controller":
        return {"argocd.argoproj.io/tracking-id": f"{ctx.name}:{group_kind}:{ctx.name}/{name}"}
    return {}


def _probe(kind: str, port: tuple[str, int], path: str) -> Obj:
    if kind == "http":
        return {"httpGet": {"path": path, "port": port[0]}}
    if kind == "grpc":
        return {"grpc": {"port": port[1]}}
    if kind == "tcp":
        return {"tcpSocket": {"port": port[0]}}
    return {"exec": {"command": ["/bin/sh", "-c", "test -f /tmp/healthy"]}}


def container(g: Gen, name: str, image: str, ports: tuple[tuple[str, int], ...], probe: str,
              cm: str, secret: str) -> Obj:
    c: Obj = {"name": name, "image": image,
              "ports": [{"name": n, "containerPort": p} for n, p in ports],
              "env": [{"name": "LOG_LEVEL", "value": g.pick(("info", "debug", "warn"))},
                      {"name": "POD_NAMESPACE",
                       "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                      {"name": "DATABASE_PASSWORD",
                       "valueFrom": {"secretKeyRef": {"key": "password", "name": secret}}}],
              "envFrom": [{"configMapRef": {"name": cm}}],
              "resources": {"requests": {"cpu": g.pick(("50m", "100m", "250m", "500m")),
                                         "memory": g.pick(("64Mi", "128Mi", "256Mi", "512Mi"))},
                            "limits": {"memory": g.pick(("256Mi", "512Mi", "1Gi"))}},
              "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                  "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
              "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"},
                               {"name": "config", "mountPath": "/etc/app", "readOnly": True}]}
    if ports:
        c["livenessProbe"] = _probe(probe, ports[0], "/livez") | {"initialDelaySeconds": 10}
        c["readinessProbe"] = _probe(probe, ports[0], "/readyz") | {"periodSeconds": 5}
    return c


def pod_spec(g: Gen, ctx: NsCtx, app: str, arche: Archetype, sa: str, cm: str, secret: str) -> Obj:
    role, image_t, ports, probe, _ = arche
    ver = f"{g.between(0, 4)}.{g.between(0, 30)}.{g.between(0, 12)}"
    image = image_t.format(org=g.pick(ORGS), app=app, ver=ver)
    if g.chance(0.3):
        image += "@" + g.sha256()  # pinned by digest, as ADR-driven repos do
    spec: Obj = {"serviceAccountName": sa,
                 "securityContext": {"fsGroup": 1000, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
                 "containers": [container(g, role, image, ports, probe, cm, secret)],
                 "volumes": [{"name": "tmp", "emptyDir": {}}, {"name": "config", "configMap": {"name": cm}}]}
    if g.chance(0.25):
        spec["initContainers"] = [{"name": "wait-for-db", "image": "docker.io/library/busybox:1.37",
                                   "command": ["sh", "-c", f"until nc -z {app}-postgres 5432; do sleep 2; done"]}]
    if g.chance(0.2):
        spec["containers"].append(container(g, "oauth2-proxy", "quay.io/oauth2-proxy/oauth2-proxy:v7.8.1",
                                            (("proxy", 4180),), "http", cm, secret))
    if g.chance(0.4):
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}}}}]}}
    return spec


def _default_container(c: Obj) -> None:
    c.setdefault("imagePullPolicy", "IfNotPresent")
    c["terminationMessagePath"] = "/dev/termination-log"
    c["terminationMessagePolicy"] = "File"
    c.setdefault("resources", {})
    for p in c.get("ports", []):
        p["protocol"] = "TCP"
    for key in ("livenessProbe", "readinessProbe"):
        if key in c:
            pr = c[key]
            for k, v in (("failureThreshold", 3), ("periodSeconds", 10), ("successThreshold", 1),
                         ("timeoutSeconds", 1)):
                pr.setdefault(k, v)
            if "httpGet" in pr:
                pr["httpGet"]["scheme"] = "HTTP"
            if "grpc" in pr:
                pr["grpc"]["service"] = ""
    for e in c.get("env", []):
        if "fieldRef" in e.get("valueFrom", {}):
            e["valueFrom"]["fieldRef"]["apiVersion"] = "v1"


def defaulted_pod_spec(user: Obj) -> Obj:
    """Clone of a user PodSpec with what the API server's defaulting adds."""
    s: Obj = clone(user)
    for c in s["containers"] + s.get("initContainers", []):
        _default_container(c)
    for v in s.get("volumes", []):
        if "configMap" in v:
            v["configMap"]["defaultMode"] = 420
    s.update(dnsPolicy="ClusterFirst", restartPolicy="Always", schedulerName="default-scheduler",
             terminationGracePeriodSeconds=30, serviceAccount=s["serviceAccountName"])
    return s


def _container_status(g: Gen, c: Obj, started: int, ready: bool = True) -> Obj:
    image = c["image"].split("@")[0]
    return {"containerID": "containerd://" + g.hexstr(64), "image": image,
            "imageID": image.split(":")[0] + "@" + g.sha256(), "lastState": {}, "name": c["name"],
            "ready": ready, "restartCount": g.pick((0, 0, 0, 0, 1, 2, 7)), "started": ready,
            "state": {"running": {"startedAt": ts(started)}},
            "resources": c.get("resources", {}),
            "volumeMounts": [_status_mount(m) for m in c.get("volumeMounts", [])]}


def _status_mount(m: Obj) -> Obj:
    s = {"mountPath": m["mountPath"], "name": m["name"]}
    if m.get("readOnly"):
        s |= {"readOnly": True, "recursiveReadOnly": "Disabled"}
    return s


def pod(g: Gen, ctx: NsCtx, name: str, template: Obj, owner: Obj, created: int, extra_labels: Obj,
        node: Node | None = None) -> Obj:
    """A running Pod materialised from a (defaulted) pod template."""
    node = node or g.pick(ctx.nodes)
    spec = clone(template["spec"])
    token_vol = "kube-api-access-" + g.k8s_suffix(5)
    spec.setdefault("volumes", []).append({"name": token_vol, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}}]}})
    for c in spec["containers"]:
        c.setdefault("volumeMounts", []).append({"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                                  "name": token_vol, "readOnly": True})
    spec.update(enableServiceLinks=True, nodeName=node.name, preemptionPolicy="PreemptLowerPriority", priority=0,
                tolerations=[{"effect": "NoExecute", "key": f"node.kubernetes.io/{k}", "operator": "Exists",
                              "tolerationSeconds": 300} for k in ("not-ready", "unreachable")])
    started = g.after(created, 40)
    pod_ip = f"10.42.{node.index}.{g.between(2, 254)}"
    status: Obj = {"conditions": [dict(condition(t, "True", started, "")) | {"lastProbeTime": None}
                             for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                       "PodScheduled")],
              "containerStatuses": [_container_status(g, c, started) for c in spec["containers"]],
              "hostIP": node.ip, "hostIPs": [{"ip": node.ip}], "phase": "Running", "podIP": pod_ip,
              "podIPs": [{"ip": pod_ip}], "qosClass": "Burstable", "startTime": ts(created)}
    for cond in status["conditions"]:
        del cond["reason"], cond["message"]
    labels = dict(template["metadata"].get("labels", {})) | extra_labels
    m = meta(g, name, ctx.name, created, labels=labels, annotations=template["metadata"].get("annotations"),
             owner=owner, generate_name=name.rsplit("-", 1)[0] + "-")
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": spec, "status": status}
    decorate(g, obj, created, "kubelet", {}, ctx.p_managed_fields * 0.5, status_manager="kubelet")
    return obj


def _selector(labels: Obj) -> Obj:
    # Apps select on name+component; system components on their historical single label.
    keys: tuple[str, ...] = ("app.kubernetes.io/name", "app.kubernetes.io/component")
    if not all(k in labels for k in keys):
        keys = tuple(k for k in ("k8s-app", "io.cilium/app", "name") if k in labels)[:1]
    return {"matchLabels": {k: labels[k] for k in keys}}


def _template(labels: Obj, spec: Obj, annotations: Obj | None = None) -> Obj:
    tm: Obj = {"creationTimestamp": None, "labels": labels}
    if annotations:
        tm["annotations"] = annotations
    return {"metadata": tm, "spec": spec}


def deployment(g: Gen, ctx: NsCtx, name: str, labels: Obj, user_pod: Obj, replicas: int, created: int) -> list[Obj]:
    """A Deployment and its running Pods (ReplicaSets are not part of the dumped mix)."""
    selector = _selector(labels)
    ann = {"checksum/config": g.hexstr(64)} if g.chance(0.5) else None
    user = {"replicas": replicas, "selector": selector, "template": _template(labels, user_pod, ann)}
    spec = clone(user)
    spec["template"]["spec"] = defaulted_pod_spec(user_pod)
    spec.update(progressDeadlineSeconds=600, revisionHistoryLimit=10,
                strategy={"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"})
    gen = g.between(1, 12)
    rs_hash = g.k8s_suffix(g.pick((9, 10)))
    updated = g.after(created, 200 * 86400)
    status = {"availableReplicas": replicas, "observedGeneration": gen, "readyReplicas": replicas,
              "replicas": replicas, "updatedReplicas": replicas,
              "conditions": [dict(condition("Available", "True", updated, "MinimumReplicasAvailable",
                                            "Deployment has minimum availability."), lastUpdateTime=ts(updated)),
                             dict(condition("Progressing", "True", created, "NewReplicaSetAvailable",
                                            f'ReplicaSet "{name}-{rs_hash}" has successfully progressed.'),
                                  lastUpdateTime=ts(updated))]}
    ann_d = mgmt_annotations(ctx, "apps/Deployment", name) | {"deployment.kubernetes.io/revision": str(gen)}
    m = meta(g, name, ctx.name, created, labels=labels, annotations=ann_d, generation=gen)
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m, "spec": spec, "status": status}
    decorate(g, d, created, ctx.manager, {"spec": user}, ctx.p_managed_fields, "kube-controller-manager")
    rs_owner = owner_ref("apps/v1", "ReplicaSet", f"{name}-{rs_hash}", g.uid())
    pods = [pod(g, ctx, f"{name}-{rs_hash}-{g.k8s_suffix()}", spec["template"], rs_owner, updated,
                {"pod-template-hash": rs_hash}) for _ in range(replicas)]
    return [d, *pods]


def statefulset(g: Gen, ctx: NsCtx, name: str, labels: Obj, user_pod: Obj, replicas: int, created: int) -> list[Obj]:
    selector = _selector(labels)
    storage = {"requests": {"storage": g.pick(("1Gi", "10Gi", "50Gi"))}}
    vct = [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": storage,
                                                   "storageClassName": "rook-ceph-block-replicated"}}]
    user = {"replicas": replicas, "selector": selector, "serviceName": f"{name}-headless",
            "template": _template(labels, user_pod), "volumeClaimTemplates": vct}
    spec = clone(user)
    spec["template"]["spec"] = defaulted_pod_spec(user_pod)
    for v in spec["volumeClaimTemplates"]:
        v["apiVersion"], v["kind"] = "v1", "PersistentVolumeClaim"
        v["spec"]["volumeMode"] = "Filesystem"
        v["status"] = {"phase": "Pending"}
    spec.update(persistentVolumeClaimRetentionPolicy={"whenDeleted": "Retain", "whenScaled": "Retain"},
                podManagementPolicy="OrderedReady", revisionHistoryLimit=10,
                updateStrategy={"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"})
    gen, rev = g.between(1, 6), f"{name}-{g.k8s_suffix(10)}"
    status = {"availableReplicas": replicas, "collisionCount": 0, "currentReplicas": replicas, "currentRevision": rev,
              "observedGeneration": gen, "readyReplicas": replicas, "replicas": replicas, "updateRevision": rev,
              "updatedReplicas": replicas}
    m = meta(g, name, ctx.name, created, labels=labels,
             annotations=mgmt_annotations(ctx, "apps/StatefulSet", name), generation=gen)
    s = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": m, "spec": spec, "status": status}
    decorate(g, s, created, ctx.manager, {"spec": user}, ctx.p_managed_fields, "kube-controller-manager")
    owner = owner_ref("apps/v1", "StatefulSet", name, m["uid"])
    return [s, *[pod(g, ctx, f"{name}-{i}", spec["template"], owner, g.after(created, 3600),
                     {"apps.kubernetes.io/pod-index": str(i), "controller-revision-hash": rev,
                      "statefulset.kubernetes.io/pod-name": f"{name}-{i}"}) for i in range(replicas)]]


def daemonset(g: Gen, ctx: NsCtx, name: str, labels: Obj, user_pod: Obj, created: int) -> list[Obj]:
    """A DaemonSet with one Pod per node."""
    n = len(ctx.nodes)
    user = {"selector": _selector(labels),
            "template": _template(labels, user_pod)}
    spec = clone(user)
    spec["template"]["spec"] = defaulted_pod_spec(user_pod)
    spec.update(revisionHistoryLimit=10,
                updateStrategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "type": "RollingUpdate"})
    gen = g.between(1, 9)
    status = {"currentNumberScheduled": n, "desiredNumberScheduled": n, "numberAvailable": n, "numberMisscheduled": 0,
              "numberReady": n, "observedGeneration": gen, "updatedNumberScheduled": n}
    ann = {"deprecated.daemonset.template.generation": str(gen)} | mgmt_annotations(ctx, "apps/DaemonSet", name)
    m = meta(g, name, ctx.name, created, labels=labels, annotations=ann, generation=gen)
    d = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": m, "spec": spec, "status": status}
    decorate(g, d, created, ctx.manager, {"spec": user}, ctx.p_managed_fields, "kube-controller-manager")
    owner = owner_ref("apps/v1", "DaemonSet", name, m["uid"])
    rev = g.k8s_suffix(10)
    return [d, *[pod(g, ctx, f"{name}-{g.k8s_suffix()}", spec["template"], owner, g.after(created, 86400),
                     {"controller-revision-hash": rev, "pod-template-generation": str(gen)}, node=node)
                 for node in ctx.nodes]]
