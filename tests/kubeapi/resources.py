"""Resource types: the built-in table, CRD registration and version ordering.

A `ResourceType` is what one row of `kubectl api-resources -o wide` shows, plus
the printer columns a CRD declares.  The `ResourceRegistry` is the set of types
one fake API server serves; it answers "which type lives at this URL" and
"which groups/versions exist" for discovery.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The verbs the real API server advertises for a plain read/write resource.
# We advertise the real verbs even though this server only answers reads:
# kubectl decides what it may `get`/`list` from this field, and an auditor
# that inspects discovery must see what a real cluster shows.
STANDARD_VERBS: tuple[str, ...] = (
    "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
)
# Namespaces and Services are the built-ins without deletecollection.
NO_DELETECOLLECTION: tuple[str, ...] = (
    "create", "delete", "get", "list", "patch", "update", "watch",
)
# What a CRD's resources advertise (apiextensions-apiserver's fixed list,
# in its order).
CR_VERBS: tuple[str, ...] = (
    "delete", "deletecollection", "get", "list", "patch", "create", "update", "watch",
)
STATUS_VERBS: tuple[str, ...] = ("get", "patch", "update")


@dataclass(frozen=True)
class PrinterColumn:
    """One `additionalPrinterColumns` entry of a CRD version."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core (legacy) group
    versions: tuple[str, ...]  # served versions, in the server's preference order
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    categories: tuple[str, ...] = ()
    # Only subresources this server can answer are advertised ("status" is a
    # GET of the whole object); exec/log/scale etc. are deliberately absent.
    subresources: tuple[str, ...] = ()
    # (version, columns) pairs: CRD additionalPrinterColumns per version.
    printer_columns: tuple[tuple[str, tuple[PrinterColumn, ...]], ...] = ()
    from_crd: bool = False

    @property
    def qualified(self) -> str:
        """`services` or `ciliumloadbalancerippools.cilium.io`, as kubectl and
        the API server's error messages spell a group resource."""
        return self.plural if not self.group else f"{self.plural}.{self.group}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def api_version(self, version: str) -> str:
        return version if not self.group else f"{self.group}/{version}"

    def columns_for(self, version: str) -> tuple[PrinterColumn, ...]:
        for v, cols in self.printer_columns:
            if v == version:
                return cols
        return ()


def _b(group: str, version: str | tuple[str, ...], plural: str, kind: str, namespaced: bool,
       short: tuple[str, ...] = (), verbs: tuple[str, ...] = STANDARD_VERBS,
       categories: tuple[str, ...] = (), status: bool = True,
       singular: str | None = None) -> ResourceType:
    versions = (version,) if isinstance(version, str) else version
    return ResourceType(
        group=group, versions=versions, plural=plural,
        singular=singular if singular is not None else kind.lower(), kind=kind,
        namespaced=namespaced, short_names=short, verbs=verbs, categories=categories,
        subresources=("status",) if status else (),
    )


_ALL = ("all",)

# Kubernetes 1.32's built-ins that an exposure auditor may plausibly read.
# Order is the order discovery lists them in (legacy group first, then the
# named groups in the real server's group priority order).
BUILTIN_RESOURCES: tuple[ResourceType, ...] = (
    _b("", "v1", "configmaps", "ConfigMap", True, ("cm",), status=False),
    _b("", "v1", "endpoints", "Endpoints", True, ("ep",), status=False, singular="endpoints"),
    _b("", "v1", "events", "Event", True, ("ev",), status=False),
    _b("", "v1", "limitranges", "LimitRange", True, ("limits",), status=False),
    _b("", "v1", "namespaces", "Namespace", False, ("ns",), verbs=NO_DELETECOLLECTION),
    _b("", "v1", "nodes", "Node", False, ("no",)),
    _b("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",)),
    _b("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",)),
    _b("", "v1", "pods", "Pod", True, ("po",), categories=_ALL),
    _b("", "v1", "podtemplates", "PodTemplate", True, status=False),
    _b("", "v1", "replicationcontrollers", "ReplicationController", True, ("rc",), categories=_ALL),
    _b("", "v1", "resourcequotas", "ResourceQuota", True, ("quota",)),
    _b("", "v1", "secrets", "Secret", True, status=False),
    _b("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",), status=False),
    _b("", "v1", "services", "Service", True, ("svc",), verbs=NO_DELETECOLLECTION, categories=_ALL),
    _b("apiregistration.k8s.io", "v1", "apiservices", "APIService", False, categories=("api-extensions",)),
    _b("apps", "v1", "controllerrevisions", "ControllerRevision", True, status=False),
    _b("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), categories=_ALL),
    _b("apps", "v1", "deployments", "Deployment", True, ("deploy",), categories=_ALL),
    _b("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), categories=_ALL),
    _b("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), categories=_ALL),
    _b("events.k8s.io", "v1", "events", "Event", True, ("ev",), status=False),
    _b("autoscaling", ("v2", "v1"), "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
       ("hpa",), categories=_ALL),
    _b("batch", "v1", "cronjobs", "CronJob", True, ("cj",), categories=_ALL),
    _b("batch", "v1", "jobs", "Job", True, categories=_ALL),
    _b("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False, status=False),
    _b("networking.k8s.io", "v1", "ingresses", "Ingress", True, ("ing",)),
    _b("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",), status=False),
    _b("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",)),
    _b("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, status=False),
    _b("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, status=False),
    _b("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, status=False),
    _b("rbac.authorization.k8s.io", "v1", "roles", "Role", True, status=False),
    _b("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",), status=False),
    _b("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
       "MutatingWebhookConfiguration", False, categories=("api-extensions",), status=False),
    _b("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration", False, categories=("api-extensions",), status=False),
    _b("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
       ("crd", "crds"), categories=("api-extensions",)),
    _b("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",), status=False),
    _b("coordination.k8s.io", "v1", "leases", "Lease", True, status=False),
    _b("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True, status=False),
)


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key giving Kubernetes' version preference: GA before beta before
    alpha, higher numbers first, non-conforming names last alphabetically.
    (`sorted(vs, key=version_priority)` puts the preferred version first.)"""
    m = _VERSION_RE.match(version)
    if not m:
        return (3, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, "")


def _printer_columns(version: Mapping[str, Any]) -> tuple[PrinterColumn, ...]:
    cols = []
    for c in version.get("additionalPrinterColumns") or ():
        cols.append(PrinterColumn(
            name=c["name"], type=c.get("type", "string"), json_path=c["jsonPath"],
            description=c.get("description", ""), priority=int(c.get("priority", 0)),
            format=c.get("format", ""),
        ))
    return tuple(cols)


def resource_type_from_crd(crd: Mapping[str, Any]) -> ResourceType | None:
    """Build the served type of an apiextensions.k8s.io/v1 CRD manifest.

    Returns None when no version is served (the real server then serves
    nothing for that CRD).  Served versions are ordered by Kubernetes version
    priority, which is also how the apiextensions server orders discovery.
    """
    spec = crd["spec"]
    names = spec["names"]
    versions = list(spec.get("versions") or ())
    if not versions and spec.get("version"):
        # apiextensions.k8s.io/v1beta1 (clusters before 1.22): one version,
        # printer columns at spec level with a `JSONPath` key.
        cols = [{**c, "jsonPath": c.get("jsonPath") or c.get("JSONPath", "")}
                for c in spec.get("additionalPrinterColumns") or ()]
        versions = [{"name": spec["version"], "served": True, "storage": True,
                     "subresources": spec.get("subresources") or {},
                     "additionalPrinterColumns": cols}]
    served = [v for v in versions if v.get("served", True)]
    if not served:
        return None
    served.sort(key=lambda v: version_priority(v["name"]))
    subresources: set[str] = set()
    for v in served:
        subresources.update((v.get("subresources") or {}).keys())
    return ResourceType(
        group=spec["group"],
        versions=tuple(v["name"] for v in served),
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        kind=names["kind"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        verbs=CR_VERBS,
        categories=tuple(names.get("categories") or ()),
        # `scale` is not served by this read-only server, so only status.
        subresources=("status",) if "status" in subresources else (),
        printer_columns=tuple((v["name"], _printer_columns(v)) for v in served),
        from_crd=True,
    )


class ResourceRegistry:
    """The set of resource types one server serves, indexed for routing."""

    def __init__(self, types: Iterable[ResourceType]):
        self._types: list[ResourceType] = []
        self._by_url: dict[tuple[str, str, str], ResourceType] = {}
        for t in types:
            self.add(t)

    def add(self, rtype: ResourceType) -> None:
        for v in rtype.versions:
            key = (rtype.group, v, rtype.plural)
            if key in self._by_url:
                raise ValueError(f"resource {rtype.qualified} version {v} registered twice")
        for v in rtype.versions:
            self._by_url[(rtype.group, v, rtype.plural)] = rtype
        self._types.append(rtype)

    @property
    def types(self) -> Sequence[ResourceType]:
        return tuple(self._types)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_url.get((group, version, plural))

    def for_kind(self, group: str, kind: str) -> ResourceType | None:
        for t in self._types:
            if t.group == group and t.kind == kind:
                return t
        return None

    def groups(self) -> list[tuple[str, list[str]]]:
        """[(group, [versions preferred first])] in discovery order: built-in
        groups in table order, then CRD groups alphabetically (the real
        server sorts CRD groups after built-ins)."""
        order: list[str] = []
        versions: dict[str, set[str]] = {}
        builtin_groups = [t.group for t in self._types if not t.from_crd]
        crd_groups = sorted({t.group for t in self._types if t.from_crd} - set(builtin_groups))
        for g in builtin_groups + crd_groups:
            if g not in versions:
                order.append(g)
                versions[g] = set()
        for t in self._types:
            versions[t.group].update(t.versions)
        return [(g, sorted(versions[g], key=version_priority)) for g in order]

    def types_in(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self._types if t.group == group and version in t.versions]

    def has_group_version(self, group: str, version: str) -> bool:
        return any(t.group == group and version in t.versions for t in self._types)
