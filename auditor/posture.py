"""The expected state of the platform, as data (docs/posture.md).

Defaults are the platform's design: exposure through the edge Gateway only,
the Gateway in hostNetwork, LB-IPAM + L2 not armed, the bench pool as the only
approved range, Cilium 1.19 with Gateway API v1.4.x. A posture file overrides
any of them; it is validated against `auditor/data/posture.schema.json`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from auditor.config_files import load_validated, unknown_rule
from auditor.errors import ConfigError
from auditor.model import Severity

SCHEMA = "posture.schema.json"
DEFAULT_FILE = "audit-posture.yaml"
DEFAULT_EXCLUDED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
BENCH_POOL_RANGE = "192.168.67.240-192.168.67.250"
DEPRECATED_MODES = {"lb-ipam": "gateway", "hostport": "gateway"}


# The posture file's fields rules read, as rules declare them (`Rule.posture_fields`),
# and the Posture attribute holding each. The rest of the file (severity, clusters)
# is read by the engine and the live reader, not by rules.
FIELDS: dict[str, str] = {
    "exposure.mode": "exposure_mode",
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


@dataclass
class Posture:
    # TODO(issue 12): parsed, validated and documented, but no rule reads it yet: the exposure
    # model of issue 12 makes the exposure rules judge against it. Until then the meta-test
    # "every posture field is read by a rule" lists it as a known, named gap.
    exposure_mode: str = "gateway"
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

    def namespace_excluded(self, namespace: str) -> bool:
        return any(fnmatchcase(namespace, pattern) for pattern in self.excluded_namespaces)

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
    config = load_validated(path, SCHEMA, "posture")
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
