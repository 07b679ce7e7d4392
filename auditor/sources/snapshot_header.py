"""The header `audit snapshot` writes into its kubectl-compatible List.

A snapshot is a `kind: List` like `kubectl get -o json` writes, plus one
top-level key, `auditSnapshot`, that kubectl ignores. It records the target
(context, API server, Kubernetes version, fingerprint), when it was taken,
the served versions of the CRDs that matter, and the coverage of every kind
the reader listed (listed, not served, or failed with the reason). Auditing
the file later therefore reaches the verdict the live audit reached: a kind
that was listed empty is known-empty, a kind that was forbidden is still an
error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.errors import InputError
from auditor.model import ClusterInfo, IgnoredDocument, K8sObject
from auditor.snapshot import Coverage, CoverageState, Snapshot

HEADER_KEY = "auditSnapshot"
FORMAT_VERSION = 1
_STATES = {state.value: state for state in CoverageState if state is not CoverageState.PRESENT}


@dataclass
class SnapshotHeader:
    """The header of a snapshot file (`audit snapshot`): the cluster, when it was taken, and each kind's coverage."""

    path: str
    cluster: ClusterInfo
    taken_at: str | None = None
    kinds: dict[str, Coverage] = field(default_factory=dict)
    served_versions: dict[str, list[str]] = field(default_factory=dict)

    def snapshot(self, objects: list[K8sObject], *, inputs: list[str], ignored: list[IgnoredDocument]) -> Snapshot:
        return Snapshot.build(
            objects,
            mode="snapshot",
            inputs=inputs,
            ignored=ignored,
            cluster=self.cluster,
            listed=dict(self.kinds),
            served_versions=dict(self.served_versions),
        )


def _bad(path: str, problem: str) -> InputError:
    return InputError(f"{path}: snapshot header {HEADER_KEY}: {problem}")


def _optional_str(header: dict[str, Any], key: str, path: str) -> str | None:
    value = header.get(key)
    if value is not None and not isinstance(value, str):
        raise _bad(path, f"{key} must be a string")
    return value


def parse(document: dict[str, Any], path: str) -> SnapshotHeader | None:
    header = document.get(HEADER_KEY)
    if header is None:
        return None
    if not isinstance(header, dict):
        raise _bad(path, "must be a mapping")
    if header.get("formatVersion") != FORMAT_VERSION:
        found = header.get("formatVersion")
        raise _bad(path, f"unsupported formatVersion {found!r} (this auditor reads {FORMAT_VERSION})")
    cluster = ClusterInfo(
        context=_optional_str(header, "context", path),
        server=_optional_str(header, "server", path),
        version=_optional_str(header, "serverVersion", path),
        fingerprint=_optional_str(header, "fingerprint", path),
    )
    kinds: dict[str, Coverage] = {}
    raw_kinds = header.get("kinds", {})
    if not isinstance(raw_kinds, dict):
        raise _bad(path, "kinds must be a mapping")
    for gk, entry in raw_kinds.items():
        state = entry.get("state") if isinstance(entry, dict) else None
        if not isinstance(state, str) or state not in _STATES:  # a list or a mapping is not hashable
            raise _bad(path, f"kinds.{gk}: state must be one of {', '.join(sorted(_STATES))}")
        reason = entry.get("reason", "")
        kinds[str(gk)] = Coverage(_STATES[state], reason if isinstance(reason, str) else "")
    served: dict[str, list[str]] = {}
    raw_served = header.get("servedVersions", {})
    if not isinstance(raw_served, dict):
        raise _bad(path, "servedVersions must be a mapping")
    for gk, versions in raw_served.items():
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise _bad(path, f"servedVersions.{gk} must be a list of strings")
        served[str(gk)] = list(versions)
    return SnapshotHeader(path, cluster, _optional_str(header, "takenAt", path), kinds, served)


def render(
    cluster: ClusterInfo,
    taken_at: str,
    kinds: dict[str, Coverage],
    served_versions: dict[str, list[str]],
    counts: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The header mapping for a snapshot of what a live read saw."""
    counts = counts or {}
    rendered_kinds: dict[str, Any] = {}
    for gk in sorted(kinds):
        coverage = kinds[gk]
        entry: dict[str, Any] = {"state": coverage.state.value}
        if coverage.reason:
            entry["reason"] = coverage.reason
        if coverage.state is CoverageState.LISTED:
            entry["count"] = counts.get(gk, 0)
        rendered_kinds[gk] = entry
    return {
        "formatVersion": FORMAT_VERSION,
        "context": cluster.context,
        "server": cluster.server,
        "serverVersion": cluster.version,
        "fingerprint": cluster.fingerprint,
        "takenAt": taken_at,
        "kinds": rendered_kinds,
        "servedVersions": {gk: sorted(v) for gk, v in sorted(served_versions.items())},
    }
