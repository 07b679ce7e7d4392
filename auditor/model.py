"""The object model every other layer builds on: Kubernetes objects as read,
references to them, where they came from, and the findings rules produce.

Objects keep the raw mapping they were read from (rules read fields the way
`kubectl get -o json` shows them) and a few normalised identity fields. Input
can be hostile or simply wrong (`spec: []`, `labels: "x"`), so the accessors
here return empty mappings instead of whatever wrong type was there: a rule
never has to guard a `.get` chain against a list.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

# API groups whose kinds moved: old manifests (extensions/v1beta1 Deployment,
# extensions/v1beta1 NetworkPolicy) still describe the same thing, so they are
# indexed under the group the kind lives in today.
_MOVED_KINDS: dict[tuple[str, str], str] = {
    ("extensions", "Deployment"): "apps",
    ("extensions", "DaemonSet"): "apps",
    ("extensions", "ReplicaSet"): "apps",
    ("extensions", "Ingress"): "networking.k8s.io",
    ("extensions", "NetworkPolicy"): "networking.k8s.io",
}


# Kinds are CamelCase identifiers (CRD names.kind validation): no dots, spaces or slashes.
_KIND_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` -> (`apps`, `v1`); `v1` -> (``, `v1`)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def group_kind(group: str, kind: str) -> str:
    """The key objects are indexed by: `Kind` for the core group, else `Kind.group`.

    The version is deliberately not part of it: a pool read as cilium.io/v2alpha1
    and one read as cilium.io/v2 are the same kind of object.
    """
    group = _MOVED_KINDS.get((group, kind), group)
    return f"{kind}.{group}" if group else kind


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class Severity(enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]

    @classmethod
    def highest_first(cls) -> tuple[Severity, ...]:
        """Every severity, the highest first: the order of CLI choices, schemas and report counts."""
        return tuple(sorted(cls, key=lambda severity: -severity.rank))

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls(text.lower())
        except ValueError:
            choices = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown severity {text!r} (choose from {choices})") from None


_SEVERITY_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


class FindingStatus(enum.Enum):
    FAILED = "failed"
    EXCEPTED = "excepted"


class RuleStatus(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_RUN = "not-run"
    ERROR = "error"
    # Could not run, and declared so for this input (`.cilium-audit.yaml` requireComplete.notApplicable):
    # no verdict, but not a gap in the audit either.
    NOT_APPLICABLE = "not-applicable"


class Source(NamedTuple):
    """Where an object was read: a file (and line), standard input, or a cluster.

    A named tuple (made in C, a third of a frozen dataclass's cost): every object read gets one.
    """

    path: str
    line: int | None = None
    # Set only where the line alone does not tell objects apart (one-line JSON, `jq -c`).
    column: int | None = None

    def __str__(self) -> str:
        if not self.line:
            return self.path
        return f"{self.path}:{self.line}:{self.column}" if self.column else f"{self.path}:{self.line}"


class ObjectRef(NamedTuple):
    """Identity of an object, as reports and exception entries name it.

    A named tuple (made, hashed and compared in C): every object of a snapshot gets one, and
    rules record each one they examine, which the engine dedupes (100k Services, several rules).
    Order refs by `sort_key` (a namespace may be None).
    """

    kind: str
    namespace: str | None
    name: str
    api_version: str = ""

    @property
    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.kind, self.namespace or "", self.name, self.api_version)

    @property
    def display(self) -> str:
        """`Service/ns/name`, or `Namespace/name` for objects without a namespace."""
        if self.namespace:
            return f"{self.kind}/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"


class K8sObject:
    """One Kubernetes object as read from input or from the API server.

    A snapshot's objects are read-only once built: `spec`, `labels` and `annotations`
    (asked hundreds of thousands of times on a large dump, by the exposure model and
    most rules) are read from `raw` once, here, and `ref` is made on first use.
    """

    __slots__ = ("_ref", "annotations", "api_version", "gk", "group", "kind", "labels", "name", "namespace", "raw",
                 "source", "spec", "version")

    def __init__(self, raw: dict[str, Any], source: Source | None = None) -> None:
        # Callers guarantee (see `from_mapping`) that identity fields are strings.
        self.raw = raw
        self.api_version: str = raw["apiVersion"]
        self.kind: str = raw["kind"]
        self.group, self.version = split_api_version(self.api_version)
        self.gk = group_kind(self.group, self.kind)
        meta = raw["metadata"]
        self.name: str = meta["name"]
        namespace = meta.get("namespace")
        self.namespace: str | None = namespace if isinstance(namespace, str) and namespace else None
        self.source = source
        # Wrong types (`spec: []`, `labels: "x"`) read as empty mappings, as the module docstring says.
        spec, labels, annotations = raw.get("spec"), meta.get("labels"), meta.get("annotations")
        self.spec: dict[str, Any] = spec if isinstance(spec, dict) else {}
        self.labels: dict[str, Any] = labels if isinstance(labels, dict) else {}
        self.annotations: dict[str, Any] = annotations if isinstance(annotations, dict) else {}
        self._ref: ObjectRef | None = None

    @staticmethod
    def identity_problem(raw: Any) -> str | None:
        """Why `raw` is not a Kubernetes object (None when it is one).

        Anything without string `apiVersion`, `kind` and `metadata.name` is not
        an object the auditor can name in a finding: Helm values, Kustomization
        files, CI configs. Such documents are skipped, never guessed at.
        """
        if not isinstance(raw, dict):
            return "not a mapping"
        for key in ("apiVersion", "kind"):
            value = raw.get(key)
            if not isinstance(value, str) or not value:
                return f"no {key}"
        if not _KIND_NAME.match(raw["kind"]):
            # `kind: DaemonSet.apps` would be indexed as the apps group's DaemonSet.
            return f"kind {raw['kind'][:60]!r} is not a kind name"
        meta = raw.get("metadata")
        if not isinstance(meta, dict):
            return "no metadata"
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return "no metadata.name"
        return None

    @property
    def metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = self.raw["metadata"]  # a mapping: `identity_problem` checked it
        return metadata

    @property
    def status(self) -> dict[str, Any]:
        return _mapping(self.raw.get("status"))

    @property
    def data(self) -> dict[str, Any]:
        """`data` of a ConfigMap (never read for Secrets)."""
        return _mapping(self.raw.get("data"))

    @property
    def ref(self) -> ObjectRef:
        ref = self._ref
        if ref is None:
            ref = self._ref = ObjectRef(self.kind, self.namespace, self.name, self.api_version)
        return ref

    @property
    def server_written(self) -> bool:
        """Whether the object was read from an API server (a `kubectl get` dump), not a manifest.

        The API server sets uid, resourceVersion and creationTimestamp on every
        object; manifests do not carry them. Rules that judge `status` use this
        to tell "the status is empty" from "this is a manifest, there is no status".
        """
        meta = self.raw["metadata"]
        return all(
            isinstance(meta.get(key), str) and meta.get(key) for key in ("uid", "resourceVersion", "creationTimestamp")
        )

    def __repr__(self) -> str:
        return f"<{self.api_version} {self.ref.display}>"


@dataclass(frozen=True, slots=True)
class NamespaceOrigin:
    """Where an object's namespace comes from when a GitOps build decides it (docs/gitops.md).

    kustomize `namespace:`, a Flux `targetNamespace` or an Argo CD destination
    may give an object a namespace its manifest does not say (or overrides
    the one it says); reports show it beside the object's file and line:
    `namespace media from apps/media/kustomization.yaml:3`. `reason` is how
    it was decided (`kustomize`, `flux-targetNamespace`, `argocd-destination`,
    `manifest`, `unset`...), `source` the line that decided it.
    """

    namespace: str | None
    reason: str
    source: Source | None
    text: str

    @property
    def from_manifest(self) -> bool:
        """The manifest's own `metadata.namespace`, which nothing overrides (nothing to add to its line)."""
        return self.reason == "manifest"


@dataclass(frozen=True, slots=True)
class AppliedException:
    """The exception-list entry that excepted a finding."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem with one object.

    Rules fill `object`, `message` and `source`; the engine stamps `rule` and
    `severity` (a rule may set `severity` itself when one check yields findings
    of different weight) and decides `status` from the exception list.

    `labels` are the string labels of the very object the finding is about
    (`Rule.finding` fills them): two objects can share one identity (a base and
    an overlay in two files), so exception entries matching on labels must see
    this object's, not those of whichever object the snapshot indexes under the
    name. None: not carried; the engine then resolves them, failing closed.
    """

    object: ObjectRef
    message: str
    source: Source | None = None
    rule: str = ""
    severity: Severity | None = None
    status: FindingStatus = FindingStatus.FAILED
    exception: AppliedException | None = None
    cluster: str | None = None
    labels: tuple[tuple[str, str], ...] | None = None
    # Set by the GitOps reader's audit (auditor.fleet.audit_tree) when a build decides the namespace.
    namespace_from: NamespaceOrigin | None = None

    @property
    def sort_key(self) -> tuple[str, str, str, str, str, str, str, int, int, str]:
        source = self.source
        return (
            self.cluster or "",
            self.rule,
            self.object.kind,
            self.object.namespace or "",
            self.object.name,
            self.object.api_version,
            source.path if source else "",
            (source.line or 0) if source else 0,
            (source.column or 0) if source else 0,
            self.message,
        )


def as_mapping(value: Any) -> dict[str, Any]:
    """`value` if it is a mapping, else an empty one (for nested spec fields)."""
    return _mapping(value)


def as_list(value: Any) -> list[Any]:
    """`value` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def as_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def conditions(obj: K8sObject) -> dict[str, dict[str, Any]]:
    """`status.conditions` by type (malformed entries skipped; the last one of a type wins)."""
    found: dict[str, dict[str, Any]] = {}
    for condition in as_list(obj.status.get("conditions")):
        condition = as_mapping(condition)
        kind = condition.get("type")
        if isinstance(kind, str):
            found[kind] = condition
    return found


def crd_served_versions(crd: K8sObject) -> list[str]:
    """The versions a CustomResourceDefinition serves (`spec.versions[].served: true`), in its order."""
    return [
        name
        for version in as_list(crd.spec.get("versions"))
        if as_mapping(version).get("served") is True and isinstance(name := as_mapping(version).get("name"), str)
    ]


# A Flux post-build substitution (`${CLUSTER_NAME}`) GitOps input leaves for later.
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}")


def is_placeholder(value: str) -> bool:
    """Whether `value` holds a substitution the input does not resolve (`${VAR}`)."""
    return _PLACEHOLDER.search(value) is not None


def string_labels(labels: object) -> dict[str, str]:
    """Only the string-to-string pairs of a label mapping (what selectors can match).

    Anything else (hostile input writes `labels: [app]`) has no labels a selector could match.
    """
    if type(labels) is dict and _ONLY_STR.issuperset(map(type, labels.values())) and \
            _ONLY_STR.issuperset(map(type, labels)):
        return dict(labels)  # the usual case, checked at C speed: every key and value a plain str
    if not isinstance(labels, Mapping):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


class ProblemCode(str, enum.Enum):
    """What kind of defect an input problem is (`code` in every report; docs/input.md lists them).

    A str enum so reports write it as its value. The codes are a contract:
    a new kind of defect gets a new code, an existing one never changes meaning.
    """

    UNREADABLE = "unreadable"  # the system refused it: permissions, a FIFO or device in a folder, a folder
    TOO_LARGE = "too-large"  # over a documented limit (--max-file-bytes, --max-yaml-nodes, aliases...)
    NOT_TEXT = "not-text"  # binary, UTF-16, not valid UTF-8
    INVALID_YAML = "invalid-yaml"  # YAML kubectl cannot read, or a value it refuses (`.inf`)
    INVALID_JSON = "invalid-json"
    DUPLICATE_KEY = "duplicate-key"  # a key twice in a mapping (or two kubectl reads as one, merge-key clashes)
    LOCAL_TAG = "local-tag"  # a tool's own tag (`!env_var`) in a Kubernetes manifest
    DUPLICATE_OBJECT = "duplicate-object"  # an object defined again that no GitOps layout explains

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class InputProblem:
    """A defect of one input file: it contributes none of its objects, and the run is incomplete.

    `message` says what is wrong for a person, without the file (reports put
    `file:line` before it). Made from a per-file read error
    (`auditor.sources.files`), or from any other defect a source or the
    engine finds in a file (`DuplicateObject.input_problems()`).
    """

    file: str
    message: str
    code: ProblemCode
    line: int | None = None
    column: int | None = None
    cluster: str | None = None  # the fleet member (or GitOps cluster) whose input it is in

    @property
    def source(self) -> Source:
        return Source(self.file, self.line, self.column)

    @property
    def where(self) -> str:
        """`file:line[:column]`, prefixed with the cluster in a fleet."""
        return f"{self.cluster}: {self.source}" if self.cluster else str(self.source)

    @property
    def sort_key(self) -> tuple[str, str, int, int, str]:
        return (self.cluster or "", self.file, self.line or 0, self.column or 0, self.message)

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


_ONLY_STR = frozenset({str})


@dataclass(slots=True)
class IgnoredDocument:
    """A document in the input that is not a Kubernetes object (and why)."""

    source: Source
    reason: str


@dataclass(slots=True)
class ClusterInfo:
    """What a live read (or a snapshot of one) knows about its target."""

    context: str | None = None
    server: str | None = None
    version: str | None = None
    fingerprint: str | None = None
    label: str | None = None
