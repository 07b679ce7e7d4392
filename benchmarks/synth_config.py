"""Namespaces, ServiceAccounts, ConfigMaps and Secrets with realistic payload sizes."""

from __future__ import annotations

import base64
import gzip

from synth_common import Gen, Obj, compact, decorate, meta
from synth_workloads import NsCtx, mgmt_annotations

# One cluster CA, shared by every namespace's kube-root-ca.crt (as in a real cluster).
_CA_CACHE: dict[int, str] = {}


def cluster_ca(g: Gen) -> str:
    if g.seed not in _CA_CACHE:
        _CA_CACHE[g.seed] = g.pem("CERTIFICATE", 780)
    return _CA_CACHE[g.seed]


def namespace(g: Gen, ctx: NsCtx, extra_labels: Obj | None = None) -> Obj:
    labels = {"kubernetes.io/metadata.name": ctx.name} | (extra_labels or {})
    if g.chance(0.4):
        labels |= {"pod-security.kubernetes.io/enforce": g.pick(("restricted", "baseline")),
                   "pod-security.kubernetes.io/enforce-version": "latest"}
    m = meta(g, ctx.name, None, ctx.created, labels=labels, annotations=mgmt_annotations(ctx, "/Namespace", ctx.name))
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": m, "spec": {"finalizers": ["kubernetes"]},
           "status": {"phase": "Active"}}
    decorate(g, obj, ctx.created, ctx.manager, {}, ctx.p_managed_fields)
    return obj


def service_account(g: Gen, ctx: NsCtx, name: str, labels: Obj | None = None) -> Obj:
    m = meta(g, name, ctx.name, g.after(ctx.created, 3600), labels=labels)
    obj: Obj = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": m}
    if labels:  # the per-namespace `default` SA is created by the controller, not applied
        decorate(g, obj, ctx.created, ctx.manager, {}, ctx.p_managed_fields)
    if g.chance(0.1):
        obj["imagePullSecrets"] = [{"name": "registry-credentials"}]
    return obj


def root_ca_configmap(g: Gen, ctx: NsCtx) -> Obj:
    m = meta(g, "kube-root-ca.crt", ctx.name, g.after(ctx.created, 5),
             annotations={"kubernetes.io/description": "Contains a CA bundle that can be used to verify the "
                          "kube-apiserver when using internal endpoints such as the internal service IP or "
                          "kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
                          "clusters."})
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"ca.crt": cluster_ca(g)}}


def _app_properties(g: Gen, app: str, ns: str) -> str:
    lines = [f"# {app} runtime configuration", "server.port=8080", "server.shutdown=graceful",
             f"spring.application.name={app}", "management.endpoints.web.exposure.include=health,info,prometheus",
             f"app.upstream.url=http://{app}-api.{ns}.svc.cluster.local:8000"]
    for i in range(g.between(5, 40)):
        lines.append(f"app.feature.{g.pick(('cache', 'export', 'audit', 'sso', 'batch'))}{i}.enabled="
                     f"{g.pick(('true', 'false'))}")
    return "\n".join(lines) + "\n"


def app_configmap(g: Gen, ctx: NsCtx, name: str, labels: Obj, app: str) -> Obj:
    data = {"LOG_FORMAT": "json", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://tempo.monitoring.svc:4317",
            "APP_ENV": g.pick(("production", "staging")), "application.properties": _app_properties(g, app, ctx.name)}
    if g.chance(0.3):
        data["nginx.conf"] = ("server {\n  listen 8080;\n  location / {\n    proxy_pass http://127.0.0.1:8000;\n"
                              "    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n  }\n}\n")
    m = meta(g, name, ctx.name, g.after(ctx.created, 30 * 86400), labels=labels,
             annotations=mgmt_annotations(ctx, "/ConfigMap", name))
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": data}
    decorate(g, obj, ctx.created, ctx.manager, {"data": data}, ctx.p_managed_fields)
    return obj


def _secret(g: Gen, ctx: NsCtx, name: str, stype: str, data: Obj, labels: Obj | None = None,
            annotations: Obj | None = None, manager: str = "") -> Obj:
    m = meta(g, name, ctx.name, g.after(ctx.created, 60 * 86400), labels=labels, annotations=annotations)
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": m, "type": stype, "data": data}
    decorate(g, obj, ctx.created, manager or ctx.manager, {"type": stype}, ctx.p_managed_fields)
    return obj


def opaque_secret(g: Gen, ctx: NsCtx, name: str, labels: Obj) -> Obj:
    data = {k: g.b64(g.between(12, 48)) for k in ("username", "password", "url")}
    return _secret(g, ctx, name, "Opaque", data, labels, mgmt_annotations(ctx, "/Secret", name))


def tls_secret(g: Gen, ctx: NsCtx, name: str, dns_name: str) -> Obj:
    """A cert-manager issued TLS Secret (PEM cert chain + key, base64 once more)."""
    chain = g.pem("CERTIFICATE", 1100) + g.pem("CERTIFICATE", 900)
    data = {"ca.crt": base64.b64encode(cluster_ca(g).encode()).decode(),
            "tls.crt": base64.b64encode(chain.encode()).decode(),
            "tls.key": base64.b64encode(g.pem("RSA PRIVATE KEY", 1190).encode()).decode()}
    ann = {"cert-manager.io/alt-names": dns_name, "cert-manager.io/certificate-name": name.removesuffix("-tls"),
           "cert-manager.io/common-name": dns_name, "cert-manager.io/ip-sans": "", "cert-manager.io/issuer-group":
           "cert-manager.io", "cert-manager.io/issuer-kind": "ClusterIssuer", "cert-manager.io/issuer-name":
           "internal-ca", "cert-manager.io/uri-sans": ""}
    labels = {"controller.cert-manager.io/fao": "true"}
    return _secret(g, ctx, name, "kubernetes.io/tls", data, labels, ann, manager="cert-manager-certificates-issuing")


def helm_release_secret(g: Gen, ctx: NsCtx, release: str, version: int) -> Obj:
    """`sh.helm.release.v1.*`: base64(gzip(json)), stored base64 again — the heaviest Secrets in real dumps."""
    manifest = "\n---\n".join(f"# Source: {release}/templates/{g.pick(('deployment', 'service', 'cm'))}.yaml\n"
                              f"{g.words(g.between(40, 400))}" for _ in range(g.between(3, 12)))
    blob = gzip.compress(compact({"name": release, "version": version, "manifest": manifest}).encode(), mtime=0)
    inner = base64.b64encode(blob).decode()
    labels = {"name": release, "owner": "helm", "status": "deployed" if g.chance(0.9) else "superseded",
              "version": str(version), "modifiedAt": str(g.past(1, 300))}
    data = {"release": base64.b64encode(inner.encode()).decode()}
    return _secret(g, ctx, f"sh.helm.release.v1.{release}.v{version}", "helm.sh/release.v1", data, labels,
                   manager="helm")


def dockerconfig_secret(g: Gen, ctx: NsCtx) -> Obj:
    auth = base64.b64encode(f"robot$pull:{g.hexstr(32)}".encode()).decode()
    cfg = f'{{"auths":{{"registry.internal.lan":{{"auth":"{auth}"}}}}}}'
    data = {".dockerconfigjson": base64.b64encode(cfg.encode()).decode()}
    return _secret(g, ctx, "registry-credentials", "kubernetes.io/dockerconfigjson", data)


def filler(g: Gen, ctx: NsCtx, i: int) -> Obj:
    """Objects used to land exactly on the requested count: the long tail real clusters have."""
    r = g.rng.random()
    if r < 0.35:
        return helm_release_secret(g, ctx, g.pick(ctx.apps or ["app"]), i + 1)
    if r < 0.55:
        return tls_secret(g, ctx, f"extra-{i}-tls", f"extra-{i}.{ctx.name}.cluster.lan")
    labels = {"app.kubernetes.io/part-of": ctx.name, "app.kubernetes.io/component": "config"}
    return app_configmap(g, ctx, f"{ctx.name}-extra-config-{i}", labels, g.pick(ctx.apps or ["app"]))
