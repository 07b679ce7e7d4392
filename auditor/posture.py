"""The expected state of the platform, as data (docs/posture.md).

Defaults are the platform's design: exposure through the edge Gateway only,
the Gateway in hostNetwork, LB-IPAM + L2 not armed, the bench pool as the only
approved range, Cilium 1.19 with Gateway API v1.4.x. A posture file overrides
any of them; it is validated against `auditor/data/posture.schema.json`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase, translate
from typing import Any

from auditor.config_files import check_schema, load_validated, unknown_rule
from auditor.errors import ConfigError
from auditor.model import Severity
from auditor.parsing.yaml_docs import LocatedConfig

SCHEMA = "posture.schema.json"
DEFAULT_FILE = "audit-posture.yaml"
DEFAULT_EXCLUDED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
BENCH_POOL_RANGE = "192.168.67.240-192.168.67.250"
DEPRECATED_MODES = {"lb-ipam": "gateway", "hostport": "gateway"}
EXPOSURE_MODES = ("gateway", "l4", "none")
CONTRACT_SCHEMA = "exposure-contract.schema.json"
# How the platform's contract check names the NodePort Service of an exposed endpoint (ADR 0092).
DEFAULT_NODEPORT_NAME = "{service}-nodeport"


# The posture file's fields rules read, as rules declare them (`Rule.posture_fields`),
# and the Posture attribute holding each. The rest of the file (severity, clusters)
# is read by the engine and the live reader, not by rules.
FIELDS: dict[str, str] = {
    "exposure.mode": "exposure_mode",
    "exposure.allow": "exposure_allow",
    "exposure.infrastructure": "exposure_infrastructure",
    "exposure.edgeGateways": "edge_gateways",
    "exposure.gatewayHostNetwork": "gateway_host_network",
    "exposure.lbIpamL2": "lb_ipam_l2_armed",
    "exposure.approvedLbIpamRanges": "approved_lb_ipam_ranges",
    "l2.maxFailoverSeconds": "l2_max_failover_seconds",
    "defaultDeny.excludedNamespaces": "excluded_namespaces",
    "expected.ciliumVersionLine": "cilium_version_line",
    "expected.gatewayApiBundleVersion": "gateway_api_bundle_version",
}
_RULE_FACING = frozenset(FIELDS.values())


class UndeclaredRead(Exception):
    """A rule read a posture field or a Cilium setting it does not declare (a bug in the rule)."""


@dataclass(frozen=True, slots=True)
class ExposureEntry:
    """An entry of `exposure.allow` or `exposure.infrastructure`: the objects it names (globs) and why.

    It matches the object a way in belongs to: the Service of a NodePort, the
    workload (Deployment, DaemonSet, Pod...) of a hostPort or hostNetwork port.
    """

    name: str
    reason: str
    namespace: str = "*"
    kind: str = "*"
    origin: str = "platform default"  # where it was written: `audit-posture.yaml:12`, a contract file line

    def matches(self, kind: str, namespace: str | None, name: str) -> bool:
        return (fnmatchcase(kind, self.kind) and fnmatchcase(namespace or "", self.namespace)
                and fnmatchcase(name, self.name))

    def describe(self) -> str:
        """`kube-system/cilium (platform default)`."""
        what = f"{self.namespace}/{self.name}" if self.kind == "*" else f"{self.kind} {self.namespace}/{self.name}"
        return f"{what} ({self.origin})"


# The components whose host ports and hostNetwork ports are the platform itself, not an application's
# way in (exposure.infrastructure replaces the list). Matched against the workload's namespace and name.
DEFAULT_INFRASTRUCTURE: tuple[ExposureEntry, ...] = (
    ExposureEntry("cilium", "the Cilium agent runs in the host network by design (health, metrics, Hubble peer)",
                  namespace="kube-system"),
    ExposureEntry("cilium-envoy", "Cilium's Envoy DaemonSet serves the Gateway listeners from the host network",
                  namespace="kube-system"),
    ExposureEntry("cilium-operator", "the Cilium operator runs in the host network (health, metrics)",
                  namespace="kube-system"),
    ExposureEntry("*node-exporter", "a node exporter reads the node's own metrics from the host network"),
    ExposureEntry("kube-apiserver-*", "a control-plane static Pod of the node", namespace="kube-system", kind="Pod"),
    ExposureEntry("etcd-*", "a control-plane static Pod of the node", namespace="kube-system", kind="Pod"),
    ExposureEntry("kube-controller-manager-*", "a control-plane static Pod of the node", namespace="kube-system",
                  kind="Pod"),
    ExposureEntry("kube-scheduler-*", "a control-plane static Pod of the node", namespace="kube-system", kind="Pod"),
)


@dataclass
class Posture:
    """The expected state the rules judge against (docs/posture.md): data, never code."""

    # gateway (only the edge Gateway), l4 (NodePort and hostPort UIs on node IPs, named), none.
    exposure_mode: str = "gateway"
    # Mode l4: what may be exposed on node IPs (NodePort Services, hostPort and hostNetwork workloads),
    # from exposure.allow and the exposure contract file.
    exposure_allow: tuple[ExposureEntry, ...] = ()
    exposure_infrastructure: tuple[ExposureEntry, ...] = DEFAULT_INFRASTRUCTURE
    # Mode gateway: the Gateways that are the edge (`namespace/name` globs).
    edge_gateways: tuple[str, ...] = ("*/*",)
    gateway_host_network: bool = True
    lb_ipam_l2_armed: bool = False
    approved_lb_ipam_ranges: tuple[str, ...] = (BENCH_POOL_RANGE,)
    # The longest L2 announcement failover the platform accepts, in seconds; None: no bound.
    l2_max_failover_seconds: float | None = None
    excluded_namespaces: tuple[str, ...] = DEFAULT_EXCLUDED_NAMESPACES
    cilium_version_line: str = "1.19"
    gateway_api_bundle_version: str = "v1.4"
    severity_overrides: dict[str, Severity] = field(default_factory=dict)
    # Line of each `severity:` entry in the posture file, for errors about it.
    severity_lines: dict[str, int | None] = field(default_factory=dict)
    cluster_labels: dict[str, str] = field(default_factory=dict)
    path: str | None = None
    # Remarks about the posture itself (deprecated values), shown in reports.
    notes: list[str] = field(default_factory=list)

    def edge_gateway(self, namespace: str | None, name: str) -> str | None:
        """The exposure.edgeGateways pattern naming Gateway `namespace/name`, or None."""
        return next((p for p in self.edge_gateways if fnmatchcase(f"{namespace or ''}/{name}", p)), None)

    def namespace_excluded(self, namespace: str) -> bool:
        """Whether `namespace` matches a defaultDeny.excludedNamespaces glob (fnmatchcase)."""
        globs = _any_glob(tuple(self.excluded_namespaces))
        return globs is not None and globs.match(namespace) is not None

    def check_rules(self, known_rule_ids: Collection[str]) -> None:
        """Refuse `severity:` entries naming rules that do not exist (a typo would silently change nothing)."""
        for rule_id in self.severity_overrides:
            if rule_id not in known_rule_ids:
                line = self.severity_lines.get(rule_id)
                where = f"{self.path}:{line}" if line else str(self.path)
                raise ConfigError(f"{where}: posture: severity.{rule_id}: {unknown_rule(rule_id, known_rule_ids)}")

    def cluster_label(self, fingerprint: str | None) -> str | None:
        """The label `clusters:` gives a cluster fingerprint (the first in sorted order if several)."""
        labels = sorted(label for label, value in self.cluster_labels.items() if fingerprint and value == fingerprint)
        return labels[0] if labels else None


@functools.lru_cache(maxsize=64)
def _any_glob(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One expression matching what any of the globs matches, as `fnmatchcase` reads each (rules ask it
    once per object: a loop of fnmatchcase calls was most of namespace-missing-default-deny's time)."""
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns)) if patterns else None


class _DeclaredPosture(Posture):
    """A Posture whose rule-facing fields can only be read when the reading rule declared them."""

    def __getattribute__(self, name: str) -> Any:
        if name in _RULE_FACING and name not in object.__getattribute__(self, "_allowed"):
            reader = object.__getattribute__(self, "_reader")
            path = next(path for path, attribute in FIELDS.items() if attribute == name)
            raise UndeclaredRead(
                f"rule {reader} reads the posture field {path!r} without declaring it in posture_fields"
            )
        return object.__getattribute__(self, name)

    def __repr__(self) -> str:
        return f"<posture as rule {object.__getattribute__(self, '_reader')} may read it>"


def declared_view(posture: Posture, fields: Iterable[str], reader: str) -> Posture:
    """`posture` as rule `reader` may read it: its declared `fields` (posture file paths), nothing else
    of what FIELDS lists. Unknown paths raise ValueError."""
    fields = list(fields)
    unknown = [path for path in fields if path not in FIELDS]
    if unknown:
        raise ValueError(f"rule {reader} declares unknown posture field(s) {', '.join(unknown)}")
    values = {f.name: object.__getattribute__(posture, f.name) for f in dataclasses.fields(Posture)}
    view = _DeclaredPosture(**values)
    object.__setattr__(view, "_allowed", frozenset(FIELDS[path] for path in fields))
    object.__setattr__(view, "_reader", reader)
    return view


def default_path() -> str | None:
    return DEFAULT_FILE if os.path.isfile(DEFAULT_FILE) else None


def load(path: str | None) -> Posture:
    """The posture in `path`, or the defaults when `path` is None."""
    if path is None:
        return Posture()
    return from_config(load_validated(path, SCHEMA, "posture"), path)


def load_inline(config: LocatedConfig, path: str) -> Posture:
    """The posture written inline in the configuration file `path` (its `posture:` key), validated."""
    check_schema(config, path, SCHEMA, "config", prefix="posture")
    return from_config(config, path)


def from_config(config: LocatedConfig, path: str) -> Posture:
    """The posture a valid posture document says; `path` is where it was written (origins, the contract)."""
    data = config.data or {}
    posture = Posture(path=path)
    exposure = data.get("exposure", {})
    mode = exposure.get("mode", posture.exposure_mode)
    if mode in DEPRECATED_MODES:
        posture.notes.append(
            f"{path}: exposure.mode {mode!r} is a deprecated alias of {DEPRECATED_MODES[mode]!r}"
        )
        mode = DEPRECATED_MODES[mode]
    posture.exposure_mode = mode
    posture.gateway_host_network = exposure.get("gatewayHostNetwork", posture.gateway_host_network)
    posture.lb_ipam_l2_armed = exposure.get("lbIpamL2", posture.lb_ipam_l2_armed)
    if "approvedLbIpamRanges" in exposure:
        posture.approved_lb_ipam_ranges = tuple(exposure["approvedLbIpamRanges"])
    l2 = data.get("l2", {})
    if "maxFailoverSeconds" in l2:
        posture.l2_max_failover_seconds = float(l2["maxFailoverSeconds"])
    _load_exposure_lists(posture, config, exposure, path)
    default_deny = data.get("defaultDeny", {})
    if "excludedNamespaces" in default_deny:
        posture.excluded_namespaces = tuple(default_deny["excludedNamespaces"])
    expected = data.get("expected", {})
    posture.cilium_version_line = expected.get("ciliumVersionLine", posture.cilium_version_line)
    posture.gateway_api_bundle_version = expected.get("gatewayApiBundleVersion", posture.gateway_api_bundle_version)
    posture.severity_overrides = {rule: Severity(level) for rule, level in data.get("severity", {}).items()}
    posture.severity_lines = {rule: config.line_of(("severity", rule)) for rule in posture.severity_overrides}
    posture.cluster_labels = dict(data.get("clusters", {}))
    return posture


def _entries(config: Any, exposure: dict[str, Any], key: str, path: str) -> tuple[ExposureEntry, ...]:
    entries = []
    for index, raw in enumerate(exposure.get(key, [])):
        line = config.line_of(("exposure", key, index))
        entries.append(ExposureEntry(
            name=raw["name"], reason=raw.get("reason", "listed in the posture"), namespace=raw.get("namespace", "*"),
            kind=raw.get("kind", "*"), origin=f"{path}:{line}" if line else path,
        ))
    return tuple(entries)


def _load_exposure_lists(posture: Posture, config: Any, exposure: dict[str, Any], path: str) -> None:
    """exposure.allow (+ the contract file's endpoints), exposure.infrastructure, exposure.edgeGateways."""
    allow = list(_entries(config, exposure, "allow", path))
    contract = exposure.get("contract")
    if contract is not None:
        line = config.line_of(("exposure", "contract", "file"))
        allow += contract_entries(path, line, contract["file"], contract.get("nodePortName", DEFAULT_NODEPORT_NAME))
    posture.exposure_allow = tuple(allow)
    if "infrastructure" in exposure:
        posture.exposure_infrastructure = _entries(config, exposure, "infrastructure", path)
    if "edgeGateways" in exposure:
        posture.edge_gateways = tuple(exposure["edgeGateways"])
    if allow and posture.exposure_mode != "l4":
        posture.notes.append(
            f"{path}: exposure.allow and exposure.contract are read in exposure.mode l4 only "
            f"(the mode is {posture.exposure_mode}): use the exception list to accept other exposure"
        )


def contract_entries(posture_path: str, line: int | None, file: str, pattern: str) -> list[ExposureEntry]:
    """The NodePort Services the platform's exposure contract sanctions: `pattern` (`{service}-nodeport`)
    for each `endpoints[]` entry with `exposed: true`, in its namespace. `file` is relative to the posture."""
    where = f"{posture_path}:{line}" if line else posture_path
    if "{service}" not in pattern:
        raise ConfigError(f"{where}: posture: exposure.contract.nodePortName: {pattern!r} does not contain {{service}}")
    contract_path = os.path.join(os.path.dirname(os.path.abspath(posture_path)), file)
    if not os.path.isfile(contract_path):
        raise ConfigError(f"{where}: posture: exposure.contract.file: {file} is not a file "
                          f"(resolved to {contract_path})")
    config = load_validated(contract_path, CONTRACT_SCHEMA, "exposure contract")
    data = config.data or {}
    entries = []
    for index, endpoint in enumerate(data.get("endpoints", [])):
        if endpoint.get("exposed") is not True:
            continue
        endpoint_line = config.line_of(("endpoints", index))
        entries.append(ExposureEntry(
            name=pattern.replace("{service}", endpoint["service"]),
            reason=f"endpoint {endpoint['service']} is exposed in the contract",
            namespace=endpoint["namespace"], kind="Service",
            origin=f"{file}:{endpoint_line}" if endpoint_line else file,
        ))
    return entries
