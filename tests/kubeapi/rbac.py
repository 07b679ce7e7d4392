"""RBAC evaluation with the real authorizer's rule-matching semantics.

A policy is the set of rules of ClusterRoles (bound cluster-wide) plus, per
namespace, Roles/ClusterRoles bound by a RoleBinding there.  Matching follows
kube-apiserver's `RuleAllows`:

* apiGroups: exact group or `*`;
* resources: `*`, the exact `resource` or `resource/subresource`, or
  `*/subresource` (a bare `resource` does NOT grant its subresources);
* verbs: exact verb or `*`;
* resourceNames: empty means any; otherwise the request must name one of
  them, so a resourceNames rule never grants `list`;
* nonResourceURLs: exact path, `*`, or a `prefix*` wildcard.

Discovery and /version are always allowed (system:discovery and
system:public-info-viewer are bound to every authenticated user).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PolicyRule:
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_manifest(cls, rule: Mapping[str, Any]) -> PolicyRule:
        return cls(
            verbs=tuple(rule.get("verbs") or ()),
            api_groups=tuple(rule.get("apiGroups") or ()),
            resources=tuple(rule.get("resources") or ()),
            resource_names=tuple(rule.get("resourceNames") or ()),
            non_resource_urls=tuple(rule.get("nonResourceURLs") or ()),
        )

    def _verb_ok(self, verb: str) -> bool:
        return "*" in self.verbs or verb in self.verbs

    def allows_resource(self, verb: str, group: str, resource: str, subresource: str,
                        name: str) -> bool:
        if not self._verb_ok(verb):
            return False
        if "*" not in self.api_groups and group not in self.api_groups:
            return False
        combined = f"{resource}/{subresource}" if subresource else resource
        res_ok = False
        for r in self.resources:
            if r == "*" or r == combined or (subresource and r == f"*/{subresource}"):
                res_ok = True
                break
        if not res_ok:
            return False
        if self.resource_names:
            return bool(name) and name in self.resource_names
        return True

    def allows_path(self, verb: str, path: str) -> bool:
        if not self._verb_ok(verb):
            return False
        for pattern in self.non_resource_urls:
            if pattern == "*" or pattern == path:
                return True
            if pattern.endswith("*") and path.startswith(pattern[:-1]):
                return True
        return False


def rules_of(roles: Iterable[Mapping[str, Any]]) -> tuple[PolicyRule, ...]:
    """Rules of Role/ClusterRole manifests (aggregationRule is ignored: pass
    the aggregated rules explicitly, as the controller would have filled them)."""
    out: list[PolicyRule] = []
    for role in roles:
        kind = role.get("kind")
        if kind not in (None, "ClusterRole", "Role"):
            raise ValueError(f"expected a ClusterRole or Role manifest, got {kind!r}")
        out.extend(PolicyRule.from_manifest(r) for r in role.get("rules") or ())
    return tuple(out)


# Paths every authenticated user may GET on a real cluster.
ALWAYS_ALLOWED_PREFIXES = ("/api", "/apis", "/version", "/healthz", "/livez", "/readyz",
                           "/openapi")


def is_discovery_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in ALWAYS_ALLOWED_PREFIXES)


@dataclass(frozen=True)
class RbacPolicy:
    cluster_rules: tuple[PolicyRule, ...] = ()
    namespace_rules: Mapping[str, tuple[PolicyRule, ...]] = field(default_factory=dict)

    @classmethod
    def from_roles(cls, cluster_roles: Sequence[Mapping[str, Any]] = (),
                   namespace_roles: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> RbacPolicy:
        ns = {k: rules_of(v) for k, v in (namespace_roles or {}).items()}
        return cls(rules_of(cluster_roles), ns)

    def allows_resource(self, verb: str, group: str, resource: str, subresource: str,
                        namespace: str, name: str) -> bool:
        rules = self.cluster_rules + (self.namespace_rules.get(namespace, ()) if namespace else ())
        return any(r.allows_resource(verb, group, resource, subresource, name) for r in rules)

    def allows_path(self, verb: str, path: str) -> bool:
        if verb == "get" and is_discovery_path(path):
            return True
        return any(r.allows_path(verb, path) for r in self.cluster_rules)
