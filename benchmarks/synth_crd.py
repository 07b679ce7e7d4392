"""Vendored CRD bundles with large openAPIV3Schema documents (controller-gen shaped).

Real bundles (Gateway API, Cilium, cert-manager, Argo CD) are dominated by deeply nested
schemas with long wrapped descriptions and CEL validations; that is what makes them the
slowest part of a manifest tree to parse, so the generator reproduces that shape.
"""

from __future__ import annotations

import textwrap
from typing import Any

from synth_common import Gen

Obj = dict[str, Any]

_PARTS = (  # noqa: SIM905 - a word list reads better as prose
    "backend name port match header path query method filter request response redirect rewrite "
          "mirror timeout retry policy selector label expression target ref section listener address "
          "certificate issuer secret hostname protocol weight endpoint node pool block cidr interface "
          "service gateway route rule condition status reason message generation version").split()
_SENTENCES = (
    "{X} specifies the {y} that should be used when this rule is evaluated.",
    "When unspecified or empty, the implementation MUST default to the most restrictive behaviour.",
    "Support: Core for the {y} field, Extended for every other value.",
    "This field is immutable once set; changing it requires deleting and re-creating the resource.",
    "Implementations MAY choose to reject {y} values they do not understand with a clear condition.",
    "If the referent cannot be found, the {y} is considered invalid and the Accepted condition is False.",
    "Valid values are the DNS-1123 subdomain names, at most 253 characters long.",
    "{X} is a list of {y} entries; the first matching entry wins and later entries are ignored.",
    "Deprecated: use {y} instead. This field will be removed in a future API version.",
    "More info: https://gateway-api.sigs.k8s.io/reference/spec/#{y}",
    "Note that this setting only applies to traffic entering the cluster through a {y}.",
    "The controller sets this field; users SHOULD NOT set it and any value they set is overwritten.",
)
_CEL = (
    "self.all(l1, self.exists_one(l2, l1.name == l2.name))",
    "!has(self.port) || (self.port >= 1 && self.port <= 65535)",
    "self.type == 'RequestHeaderModifier' ? has(self.requestHeaderModifier) : !has(self.requestHeaderModifier)",
    "(has(self.group) ? self.group : '') == '' && self.kind == 'Service' ? has(self.port) : true",
    "size(self) <= 16 && self.all(h, !h.startsWith('*') || h.startsWith('*.'))",
)


def _name(g: Gen) -> str:
    a: str = g.pick(_PARTS)
    b: str = g.pick(_PARTS)
    suffix: str = g.pick(("s", "Ref", "Refs", "Selector", "")) if g.chance(0.4) else ""
    return a + b.capitalize() + suffix


def description(g: Gen, subject: str) -> str:
    text = " ".join(g.pick(_SENTENCES).format(X=subject[:1].upper() + subject[1:], y=g.pick(_PARTS))
                    for _ in range(g.between(1, 5)))
    wrapped = textwrap.wrap(text, 78, break_on_hyphens=False)
    if len(wrapped) > 3 and g.chance(0.5):  # controller-gen keeps the author's paragraph breaks
        wrapped.insert(2, "")
    return "\n".join(wrapped)


def schema(g: Gen, name: str, depth: int, budget: list[int]) -> Obj:
    """A property schema; `budget` (a 1-item list, mutated) caps the total number of nodes."""
    budget[0] -= 1
    node: Obj = {"description": description(g, name)}
    r = g.rng.random()
    if depth <= 0 or budget[0] <= 0 or r < 0.45:
        return node | _leaf(g)
    if r < 0.6:
        node |= {"items": schema(g, name + "Item", depth - 1, budget), "maxItems": g.pick((8, 16, 64)),
                 "type": "array"}
        if g.chance(0.5):
            node["x-kubernetes-list-type"] = g.pick(("atomic", "map", "set"))
        return node
    props = {}
    for _ in range(g.between(2, 9)):
        if budget[0] <= 0:
            break
        key = _name(g)
        props[key] = schema(g, key, depth - 1, budget)
    node |= {"properties": props, "type": "object"}
    if props and g.chance(0.5):
        node["required"] = sorted(props)[: g.between(1, min(3, len(props)))]
    if g.chance(0.2):
        node["x-kubernetes-validations"] = [{"message": f"{name} must be valid", "rule": g.pick(_CEL)}]
    return node


def _leaf(g: Gen) -> Obj:
    t = g.pick(("string", "string", "string", "integer", "boolean"))
    if t == "integer":
        return {"format": "int32", "maximum": 65535, "minimum": 1, "type": "integer"}
    if t == "boolean":
        return {"type": "boolean"}
    leaf: Obj = {"type": "string"}
    if g.chance(0.3):
        leaf["enum"] = sorted({g.pick(_PARTS).capitalize() for _ in range(g.between(2, 6))})
    elif g.chance(0.4):
        leaf |= {"maxLength": 253, "minLength": 1,
                 "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}
    return leaf


def crd(g: Gen, group: str, kind: str, versions: list[str], nodes: int, scope: str = "Namespaced",
        labels: dict[str, str] | None = None) -> Obj:
    low = kind.lower()
    plural = low[:-1] + "ies" if low.endswith("y") else low + ("es" if low.endswith("s") else "s")
    vers = []
    for i, v in enumerate(versions):
        budget = [nodes // len(versions)]
        spec = schema(g, "spec", 7, budget)
        while budget[0] > 0:  # top up so every CRD reaches its intended size
            spec.setdefault("properties", {})[_name(g)] = schema(g, "extra", 6, budget)
            spec["type"] = "object"
        status = schema(g, "status", 4, [max(10, nodes // 20)])
        vers.append({
            "additionalPrinterColumns": [{"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}],
            "name": v,
            "schema": {"openAPIV3Schema": {
                "description": description(g, kind),
                "properties": {
                    "apiVersion": {"description": "APIVersion defines the versioned schema of this representation "
                                   "of an object.\nServers should convert recognized schemas to the latest internal "
                                   "value, and\nmay reject unrecognized values.", "type": "string"},
                    "kind": {"description": "Kind is a string value representing the REST resource this object "
                             "represents.", "type": "string"},
                    "metadata": {"type": "object"}, "spec": spec, "status": status},
                "required": ["spec"], "type": "object"}},
            "served": True, "storage": i == len(versions) - 1, "subresources": {"status": {}}})
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"annotations": {"controller-gen.kubebuilder.io/version": "v0.18.0"},
                         "labels": labels or {}, "name": f"{plural}.{group}"},
            "spec": {"group": group, "names": {"categories": [group.split(".")[0]], "kind": kind,
                                               "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
                     "scope": scope, "versions": vers}}


CLUSTER_SCOPED = {"GatewayClass", "CiliumClusterwideNetworkPolicy", "CiliumLoadBalancerIPPool",
                  "CiliumL2AnnouncementPolicy", "CiliumBGPClusterConfig", "CiliumNode", "ClusterIssuer"}
BUNDLES: dict[str, tuple[str, tuple[str, ...], list[str], dict[str, str]]] = {
    "gateway-api/standard-install.yaml": ("gateway.networking.k8s.io", (
        "GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute", "ReferenceGrant", "BackendTLSPolicy", "TLSRoute"),
        ["v1beta1", "v1"], {"gateway.networking.k8s.io/bundle-version": "v1.4.1",
                            "gateway.networking.k8s.io/channel": "standard"}),
    "cilium/crds.yaml": ("cilium.io", ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy",
                                       "CiliumLoadBalancerIPPool", "CiliumL2AnnouncementPolicy", "CiliumEnvoyConfig",
                                       "CiliumBGPClusterConfig", "CiliumNode"), ["v2alpha1", "v2"],
                         {"io.cilium.k8s.crd.schema.version": "1.32.0"}),
    "cert-manager/cert-manager.crds.yaml": ("cert-manager.io", ("Certificate", "CertificateRequest", "Issuer",
                                                                "ClusterIssuer"), ["v1"],
                                            {"app.kubernetes.io/name": "cert-manager", "app.kubernetes.io/version":
                                             "v1.19.1"}),
    "argo-cd/crds.yaml": ("argoproj.io", ("Application", "ApplicationSet", "AppProject"), ["v1alpha1"],
                          {"app.kubernetes.io/part-of": "argocd"}),
}


def bundle_docs(g: Gen, key: str, target_bytes: int) -> list[Obj]:
    """CRDs of one bundle sized to land near target_bytes.

    Bytes per schema node vary with depth and descriptions, so the estimate is re-calibrated
    from each emitted CRD (libyaml makes measuring cheap) instead of being a constant.
    """
    from synth_yaml import vendor_docs

    group, kinds, versions, labels = BUNDLES[key]
    per_node, left, out = 600.0, target_bytes, []
    for i, kind in enumerate(kinds):
        share = left / (len(kinds) - i) * g.rng.uniform(0.7, 1.3)
        doc = crd(g, group, kind, versions, max(20, int(share / per_node)),
                  "Cluster" if kind in CLUSTER_SCOPED else "Namespaced", labels)
        size = len(vendor_docs([doc]).encode())
        per_node = size / max(20, int(share / per_node))
        left -= size
        out.append(doc)
    return out
