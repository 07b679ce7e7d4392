"""Reading the effective Cilium configuration from rules: NotRun, values, anchors (pure helpers).

Rules get the configuration from `ctx.cilium` (auditor/cilium/config.py); these
helpers turn "the input does not show it" into a `NotRun` with the reason,
parse the few value types rules compare (durations, numbers, versions), and
attach findings to the object or values file a setting came from.
"""

from __future__ import annotations

import re

# CONFIG_KINDS / SOURCE_KINDS are re-exported: rules list them in `requires` / `uses`.
from auditor.cilium.config import CONFIG_KINDS, SOURCE_KINDS, Setting, parse_version  # noqa: F401
from auditor.model import Finding, ObjectRef, Severity, Source
from auditor.rule import NotRun, RuleContext

NO_CONFIG = (
    "the input shows no Cilium configuration (no cilium-config ConfigMap, no HelmRelease or Argo CD "
    "Application of the cilium chart with all its values, no --cilium-values file)"
)


def require_settings(ctx: RuleContext, what: str) -> None:
    """Raise `NotRun` unless the agent's settings are known (absent keys then mean defaults)."""
    if not ctx.cilium.settings_known:
        notes = f"; {'; '.join(ctx.cilium.notes)}" if ctx.cilium.notes else ""
        raise NotRun(f"{what}: {NO_CONFIG}{notes}")


def concrete(ctx: RuleContext, key: str, what: str) -> Setting | None:
    """The setting of `key` (None when absent); `NotRun` when its value is a substitution."""
    setting = ctx.cilium.get(key)
    if setting is not None and not setting.concrete:
        raise NotRun(f"{what}: {key} is {setting.value!r} ({setting.origin}), a value the input does not resolve")
    return setting


def flag(ctx: RuleContext, key: str, what: str) -> bool:
    """A boolean setting with Cilium's default (off) when absent; `NotRun` when not concrete."""
    setting = concrete(ctx, key, what)
    return setting is not None and setting.value.strip().lower() == "true"


def describe(setting: Setting | None, key: str, default: str) -> str:
    """`k8s-client-qps=50 (from ...)` or `k8s-client-qps not set (default 10)`."""
    if setting is None:
        return f"{key} not set (default {default})"
    return f"{key}={setting.value} (from {setting.origin})"


def anchor(ctx: RuleContext, setting: Setting | None = None) -> tuple[ObjectRef, Source | None]:
    """Where a finding about a setting points: its source, else the main configuration source."""
    if setting is not None and setting.ref is not None:
        return setting.ref, setting.source
    if ctx.cilium.anchor is not None:
        return ctx.cilium.anchor
    if ctx.cilium.agent is not None:
        return ctx.cilium.agent.ref, ctx.cilium.agent.source
    raise NotRun(NO_CONFIG)


def config_finding(ctx: RuleContext, setting: Setting | None, message: str, severity: Severity | None = None) -> Finding:
    ref, source = anchor(ctx, setting)
    return Finding(object=ref, message=message, source=source, severity=severity)


def target_version(ctx: RuleContext) -> tuple[tuple[int, int, int], str]:
    """The Cilium version to judge against: the agent's when shown, else the posture's line."""
    setting = ctx.cilium.get("agent-version")
    if setting is not None and setting.concrete:
        version = parse_version(setting.value)
        if version is not None:
            return version, f"Cilium {setting.value} ({setting.origin})"
    line = ctx.posture.cilium_version_line
    version = parse_version(line) or (1, 19, 0)
    return version, f"Cilium {line} (posture ciliumVersionLine; the input shows no agent version)"


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float | None:
    """A Go duration (`5s`, `1m30s`, `500ms`) in seconds; None when malformed."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0 if text == "0" else None
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    return total if position == len(text) and position > 0 else None


def parse_number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None
