"""The effective configuration of a run: each setting's value and where it came from.

Precedence, highest first: a command-line option (`flag --fail-on`), the
configuration file (`FILE:LINE`), the tool's default (`default`), or the
platform's built-in posture and exception list (`built-in`). The file itself
is chosen by `--config` (flag), `AUDIT_CONFIG` (env), or discovered. One rule:
an option replaces the key it sets, except `--skip-rule`, which adds to
`rules.skip` (skipping more is never a surprise; `audit config` shows both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.project_config import ProjectConfig, Value

BUILTIN = "built-in"
DEFAULT = "default"

# Every setting `audit config` shows, in the order of docs/config.md.
KEYS = ("config", "paths", "exclude", "clusters", "rules.only", "rules.skip", "severity", "failOn",
        "requireComplete", "notApplicable", "posture", "exceptions")


# The keys some commands have no use for, and why (docs/config.md, "Which commands use each key"); every
# other key applies to every auditing command: audit [scan], audit live, audit exposure, audit trace.
_LIVE = "audit live, audit exposure --live and audit trace --live, which read a cluster, not files"
_TRACE = ("audit trace, whose exit code is the chain's (0 whole, 1 a hop broken, 3 a hop unseen), not the "
          "findings' or the rules'")
NOT_USED_BY = {"paths": _LIVE, "exclude": _LIVE, "clusters": _LIVE, "severity": _TRACE, "failOn": _TRACE,
               "requireComplete": _TRACE, "notApplicable": _TRACE}


@dataclass(frozen=True)
class Setting:
    """One effective setting of a run, and where its value comes from."""

    key: str
    value: Any
    origin: str  # default | built-in | FILE:LINE | env AUDIT_CONFIG | flag --NAME | discovered: FILE


def _plain(value: Any) -> Any:
    """A value without its per-item origins (what the run uses)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    return value.value if isinstance(value, Value) else value


def resolve(project: ProjectConfig | None, flags: Mapping[str, tuple[Any, str]],
            defaults: Mapping[str, Setting]) -> dict[str, Setting]:
    """Each key of KEYS: the flag's value (with its option), else the file's, else the default given."""
    out: dict[str, Setting] = {}
    if project is not None:
        out["config"] = Setting("config", project.path, project.chosen_by)
    else:
        out["config"] = Setting("config", None, DEFAULT)
    for key in KEYS[1:]:
        in_file = project.get(key) if project is not None else None
        if key in flags:
            value, option = flags[key]
            if key == "rules.skip" and in_file is not None:  # --skip-rule adds to the file's list
                merged = tuple(dict.fromkeys([*in_file.value, *value]))
                out[key] = Setting(key, merged, f"{in_file.origin} + {option}")
                continue
            out[key] = Setting(key, value, option)
        elif in_file is not None:
            out[key] = Setting(key, in_file.value, in_file.origin)
        else:
            out[key] = defaults[key]
    return out


def value_of(settings: Mapping[str, Setting], key: str) -> Any:
    return _plain(settings[key].value)


def to_dict(settings: Mapping[str, Setting]) -> dict[str, Any]:
    """The effective configuration as `audit config -o json` prints it: key -> {value, from[, items]}."""
    out: dict[str, Any] = {}
    for key in KEYS:
        setting = settings[key]
        entry: dict[str, Any] = {"value": _json_value(setting.value), "from": setting.origin}
        items = _item_origins(setting.value)
        if items:
            entry["items"] = items
        if key in NOT_USED_BY:
            entry["notUsedBy"] = NOT_USED_BY[key]
        out[key] = entry
    return out


def _json_value(value: Any) -> Any:
    plain = _plain(value)
    if isinstance(plain, tuple):
        return [list(item) if isinstance(item, tuple) else item for item in plain]
    return plain


def _item_origins(value: Any) -> dict[str, str] | list[str] | None:
    """Where each item of a mapping or list was written, when the file says it per item."""
    if isinstance(value, dict) and value and all(isinstance(v, Value) for v in value.values()):
        return {key: item.origin for key, item in value.items()}
    if isinstance(value, tuple) and value and all(isinstance(v, Value) for v in value):
        return [item.origin for item in value]
    return None


def render_text(settings: Mapping[str, Setting]) -> str:
    """`key: value  (from ORIGIN)`, one line per setting, mapping items and list items indented below."""
    lines: list[str] = []
    for key in KEYS:
        setting = settings[key]
        value = setting.value
        if isinstance(value, dict) and value:
            lines.append(f"{key}:  (from {setting.origin})")
            for item_key, item in value.items():
                shown = item.value if isinstance(item, Value) else item
                origin = f"  (from {item.origin})" if isinstance(item, Value) else ""
                lines.append(f"  {item_key}: {_scalar(shown)}{origin}")
        elif isinstance(value, tuple) and value and any(isinstance(v, Value) for v in value):
            lines.append(f"{key}:  (from {setting.origin})")
            lines += [f"  - {_scalar(item.value)}  (from {item.origin})" for item in value if isinstance(item, Value)]
        else:
            lines.append(f"{key}: {_scalar(_json_value(value))}  (from {setting.origin})")
    lines.append("not used by every command:")
    for why in dict.fromkeys(NOT_USED_BY.values()):
        keys = ", ".join(key for key, reason in NOT_USED_BY.items() if reason == why)
        lines.append(f"  {keys}: not by {why}")
    return "\n".join(lines) + "\n"


def _scalar(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join("=".join(v) if isinstance(v, list) else str(v) for v in value) + "]"
    if isinstance(value, dict):
        return "(inline)" if value else "{}"
    return str(value)
