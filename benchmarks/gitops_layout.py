#!/usr/bin/env python3
"""Cost of resolving a GitOps tree's layout, against reading and auditing the same files.

Writes a synthetic multi-cluster Flux tree (default 5,000 files: several
clusters bootstrapped with `flux bootstrap`, a shared infrastructure base,
namespace folders with one Flux Kustomization per app, components,
configMapGenerator-fed HelmReleases), then times in this process, alternating,
median of N runs:

- read:     the offline reader on the tree (`auditor.sources.files.read_paths`)
- audit:    read + every built-in rule (`engine.run`) on the files as one
            snapshot: the audit of the same files without the layout
- tree:     what `audit TREE` reads: one read that keeps the parse
            (`read_tree`: the reader with its observer, the layout resolved
            from that parse, objects split per cluster)
- layout:   `tree`, then every rule on each cluster's snapshot and the merge
            (`auditor.fleet.audit_tree`): what `audit TREE` costs
- parse:    the layout's own parse of the tree (`read_tree_files`), for reference
- resolve:  `resolve_layout` on that parse: kustomize builds, Flux, clusters

and prints the ratios of their CPU times. The issue's target: the resolution adds at most 25 %
to the audit of the same files, `(tree - read) / audit`, measured in the same
run. `(layout - audit) / audit` is the whole difference: it also holds the
rules' work on what the layout shows them (objects in their namespaces,
Cilium values from generated ConfigMaps), which the plain audit cannot see;
the last lines count what each audit judged. `resolve / audit` is
`resolve_layout` alone; `(parse + resolve) / audit` what a second parse
would have cost on top.

    .venv/bin/python benchmarks/gitops_layout.py [--files 5000] [--clusters 4] [--reps 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from auditor.sources.files import read_paths
from auditor.sources.gitops import read_tree_files, resolve_layout

APP_FILES = 7  # ks.yaml + app/{kustomization, helmrelease, deployment, service, networkpolicy, configmap}


# Files as large as the shared repositories' (750-1,100 bytes on average): an app-template
# HelmRelease with its values, a Deployment with probes, resources and a security context.
HELM_RELEASE = """\
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {app}
spec:
  interval: 1h
  chartRef:
    kind: OCIRepository
    name: app-template
  install:
    remediation:
      retries: -1
  upgrade:
    cleanupOnFail: true
    remediation:
      retries: 3
  valuesFrom:
    - kind: ConfigMap
      name: {app}-values
  values:
    controllers:
      {app}:
        annotations:
          reloader.stakater.com/auto: "true"
        containers:
          app:
            image:
              repository: ghcr.io/example/{app}
              tag: 1.0.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
            env:
              TZ: Europe/Helsinki
              {app}__PORT: &port 8080
            probes:
              liveness: &probes
                enabled: true
                custom: true
                spec:
                  httpGet:
                    path: /healthz
                    port: *port
                  initialDelaySeconds: 0
                  periodSeconds: 10
                  timeoutSeconds: 1
                  failureThreshold: 3
              readiness: *probes
            securityContext:
              allowPrivilegeEscalation: false
              readOnlyRootFilesystem: true
              capabilities: {{drop: ["ALL"]}}
            resources:
              requests:
                cpu: 10m
              limits:
                memory: 512Mi
    service:
      app:
        controller: {app}
        ports:
          http:
            port: *port
    route:
      app:
        hostnames: ["{{{{ .Release.Name }}}}.example.com"]
        parentRefs:
          - name: internal
            namespace: network
            sectionName: https
"""
DEPLOYMENT = """\
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {app}-worker
  labels:
    app.kubernetes.io/name: {app}-worker
    app.kubernetes.io/part-of: {app}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: {app}-worker
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {app}-worker
    spec:
      securityContext:
        runAsNonRoot: true
        runAsUser: 65534
        fsGroup: 65534
      containers:
        - name: worker
          image: ghcr.io/example/{app}-worker:1.0.0
          args: ["--queue", "{app}", "--concurrency", "4"]
          ports:
            - name: metrics
              containerPort: 9090
          readinessProbe:
            httpGet: {{path: /ready, port: metrics}}
          resources:
            requests: {{cpu: 10m, memory: 64Mi}}
            limits: {{memory: 256Mi}}
"""
NETWORK_POLICY = """\
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata:
  name: {app}
spec:
  endpointSelector:
    matchLabels:
      app.kubernetes.io/name: {app}
  ingress:
    - fromEndpoints:
        - matchLabels:
            io.kubernetes.pod.namespace: network
            app.kubernetes.io/name: envoy
      toPorts:
        - ports:
            - port: "8080"
              protocol: TCP
  egress:
    - toEndpoints:
        - matchLabels:
            io.kubernetes.pod.namespace: kube-system
            k8s-app: kube-dns
      toPorts:
        - ports:
            - port: "53"
              protocol: ANY
          rules:
            dns:
              - matchPattern: "*"
"""
VALUES = """\
# Helm values merged into the HelmRelease through valuesFrom
defaultPodOptions:
  automountServiceAccountToken: false
  enableServiceLinks: false
  securityContext:
    runAsNonRoot: true
    runAsUser: 1000
    runAsGroup: 1000
    fsGroup: 1000
    fsGroupChangePolicy: OnRootMismatch
persistence:
  config:
    existingClaim: {app}
    globalMounts:
      - path: /config
  tmp:
    type: emptyDir
    medium: Memory
    sizeLimit: 128Mi
serviceMonitor:
  app:
    serviceName: {app}
    endpoints:
      - port: http
        scheme: http
        path: /metrics
        interval: 1m
        scrapeTimeout: 10s
"""


def _w(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def write_tree(root: Path, files: int, clusters: int) -> int:
    """A tree of about `files` files; returns the number written."""
    per_cluster = max(-(-(files - 6) // clusters) - 5, APP_FILES * 2)  # 6 shared files, 5 per cluster
    namespaces = max(per_cluster // (APP_FILES * 7 + 2), 1)
    apps_per_cluster = max(-(-(per_cluster - 2 * namespaces) // APP_FILES), 1)
    _w(root, "infrastructure/controllers/kustomization.yaml",
       "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: kube-system\n"
       "resources: [cilium.yaml, pool.yaml]\nconfigMapGenerator:\n  - name: cilium-values\n"
       "    files: [values.yaml=cilium-values.yaml]\ngeneratorOptions: {disableNameSuffixHash: true}\n")
    _w(root, "infrastructure/controllers/cilium.yaml",
       "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: cilium\nspec:\n"
       "  chart: {spec: {chart: cilium, version: 1.19.1, sourceRef: {kind: HelmRepository, name: cilium}}}\n"
       "  valuesFrom:\n    - kind: ConfigMap\n      name: cilium-values\n")
    _w(root, "infrastructure/controllers/cilium-values.yaml", "kubeProxyReplacement: true\nl2announcements:\n"
       "  enabled: true\n")
    _w(root, "infrastructure/controllers/pool.yaml", "apiVersion: cilium.io/v2\nkind: CiliumLoadBalancerIPPool\n"
       "metadata:\n  name: pool\nspec:\n  blocks:\n    - cidr: 10.0.0.0/28\n")
    _w(root, "components/common/kustomization.yaml",
       "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [pdb.yaml]\n")
    _w(root, "components/common/pdb.yaml", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n"
       "  name: ${APP}\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      app: ${APP}\n")
    count = 6
    for c in range(clusters):
        cluster = f"cluster-{c}"
        _w(root, f"clusters/{cluster}/flux-system/gotk-sync.yaml",
           "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n"
           "  namespace: flux-system\nspec:\n  interval: 1m\n  ref: {branch: main}\n"
           "  url: ssh://git@github.com/example/fleet\n---\n"
           "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n"
           f"  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/{cluster}\n  prune: true\n"
           "  sourceRef: {kind: GitRepository, name: flux-system}\n")
        _w(root, f"clusters/{cluster}/flux-system/kustomization.yaml", "resources: [gotk-sync.yaml]\n")
        for name, path in (("infrastructure", "./infrastructure/controllers"), ("apps", f"./apps/{cluster}")):
            _w(root, f"clusters/{cluster}/{name}.yaml",
               "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
               f"  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: {path}\n"
               "  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n")
        namespace_dirs = [f"ns-{n}" for n in range(namespaces)]
        _w(root, f"apps/{cluster}/kustomization.yaml", "resources:\n" + "".join(f"  - {d}\n" for d in namespace_dirs))
        count += 5
        for index, ns in enumerate(namespace_dirs):
            apps = [f"app-{a}" for a in range(index, apps_per_cluster, namespaces)]
            _w(root, f"apps/{cluster}/{ns}/kustomization.yaml", f"namespace: {ns}\nresources:\n  - namespace.yaml\n"
               + "".join(f"  - {a}/ks.yaml\n" for a in apps))
            _w(root, f"apps/{cluster}/{ns}/namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: _\n")
            count += 2
            for app in apps:
                base = f"apps/{cluster}/{ns}/{app}"
                _w(root, f"{base}/ks.yaml",
                   "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
                   f"  name: {ns}-{app}\nspec:\n  interval: 1h\n  path: ./{base}/app\n  targetNamespace: {ns}\n"
                   "  components: [../../../../../components/common]\n"
                   f"  postBuild:\n    substitute:\n      APP: {app}\n"
                   "  sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n")
                _w(root, f"{base}/app/kustomization.yaml",
                   "resources: [helmrelease.yaml, deployment.yaml, service.yaml, networkpolicy.yaml]\n"
                   f"configMapGenerator:\n  - name: {app}-values\n    files: [values.yaml=configmap.yaml]\n")
                _w(root, f"{base}/app/helmrelease.yaml", HELM_RELEASE.format(app=app))
                _w(root, f"{base}/app/deployment.yaml", DEPLOYMENT.format(app=app))
                _w(root, f"{base}/app/service.yaml",
                   f"apiVersion: v1\nkind: Service\nmetadata:\n  name: {app}\nspec:\n  type: ClusterIP\n"
                   f"  selector: {{app: {app}}}\n  ports: [{{port: 80, targetPort: 8080}}]\n")
                _w(root, f"{base}/app/networkpolicy.yaml", NETWORK_POLICY.format(app=app))
                _w(root, f"{base}/app/configmap.yaml", VALUES.format(app=app))
                count += APP_FILES
    return count


def _audits(tree: str) -> tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any]]:
    """(the files audited as one snapshot, the files audited as `audit TREE` does: per cluster, merged)."""
    from auditor import engine, exceptions_list, posture, registry
    from auditor.fleet import audit_tree
    from auditor.sources.gitops.tree_read import read_tree

    rules = registry.load_rules(plugins=False)
    exceptions = exceptions_list.ExceptionList("(none)", [])
    expected = posture.Posture()

    def evaluate(snapshot: Any) -> Any:
        return engine.run(snapshot, rules, exceptions, expected, as_of=dt.date(2026, 1, 1))

    # As the command line reads (`freeze`: what was read leaves the cyclic collector's view for the
    # rest of the run); the loop below gives it back after each step (gc.unfreeze), so nothing leaks.
    def plain() -> Any:
        return evaluate(read_paths([tree], freeze=True))

    def layout_read() -> Any:
        return read_tree(tree, freeze=True)

    def layout() -> Any:
        return audit_tree(read_tree(tree, freeze=True), evaluate)

    return plain, layout_read, layout


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--keep", help="write the tree here and keep it")
    args = parser.parse_args(argv)
    temporary = args.keep is None
    root = Path(tempfile.mkdtemp(prefix="gitops-bench-")) if temporary else Path(args.keep)
    try:
        written = write_tree(root, args.files, args.clusters)
        tree = str(root)
        plain, layout_read, with_layout = _audits(tree)
        steps: dict[str, Callable[[], Any]] = {"read": lambda: read_paths([tree], freeze=True), "audit": plain,
                                               "tree": layout_read, "layout": with_layout}
        steps["parse"] = lambda: read_tree_files(tree)
        parsed = read_tree_files(tree)
        steps["resolve"] = lambda: resolve_layout(parsed)
        layout = resolve_layout(parsed)
        samples: dict[str, list[float]] = {name: [] for name in steps}
        cpu_samples: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(args.reps):
            for name, step in steps.items():
                gc.collect()
                start, cpu_start = time.perf_counter(), time.process_time()
                step()
                samples[name].append(time.perf_counter() - start)
                cpu_samples[name].append(time.process_time() - cpu_start)
                gc.unfreeze()
        # CPU time of this (single-threaded) process: what the steps cost, less disturbed than wall
        # time by other jobs on the machine. The ratios are computed from it; wall time is shown too.
        walls = {name: _median(values) for name, values in samples.items()}
        times = {name: _median(values) for name, values in cpu_samples.items()}
        placed = sum(len(p) for p in layout.placements.values())
        print(f"tree: {written:,} files, {args.clusters} clusters, {len(layout.placements):,} objects, "
              f"{placed:,} placements; clusters found: {', '.join(c.name for c in layout.clusters)}")
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        print(f"median of {args.reps} runs (1-minute load {load:.2f} on {os.cpu_count()} CPUs), CPU and wall time:")
        for name, value in times.items():
            print(f"  {name:8} {value * 1000:9.1f} ms CPU {walls[name] * 1000:9.1f} ms wall")
        base = times["audit"]
        resolution = (times["tree"] - times["read"]) / base
        added = (times["layout"] - base) / base
        plain_result, layout_result = plain(), with_layout()
        gc.unfreeze()
        print(f"resolve / audit           = {times['resolve'] / base:.1%}   (resolve_layout alone)")
        print(f"(parse + resolve) / audit = {(times['parse'] + times['resolve']) / base:.1%}   "
              "(what parsing the tree a second time would cost)")
        print(f"(tree - read) / audit     = {resolution:.1%}   (the resolution as audit TREE runs it: the "
              "reader's parse reused, layout, objects split per cluster; target: at most 25 %)")
        print(f"(layout - audit) / audit  = {added:.1%}   (the whole audit: the rules also judge what the "
              "layout shows them)")
        for name, result in (("audit", plain_result), ("layout", layout_result)):
            judged = sum(len(r.examined) for r in result.rules)
            print(f"  {name:6}: {judged:,} objects judged by the rules, {len(result.findings):,} findings, "
                  f"{sum(1 for r in result.rules if r.status.value == 'not-run')} rules not run")
        return 0
    finally:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
