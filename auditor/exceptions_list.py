"""The named exception list: which findings are accepted drift, and why.

Entries are indexed by rule, and their globs compiled once, so matching stays
cheap on clusters with many findings. Every entry reports what became of it:
used, unused (matched nothing: stale, remove it), expired (its date passed:
the findings fail again), or inactive (none of its rules ran).
"""

from __future__ import annotations

import datetime as dt
import enum
import os
import re
from dataclasses import dataclass, field
from fnmatch import translate
from importlib import resources
from typing import Callable, Pattern

from auditor.config_files import load_validated, unknown_rule
from auditor.errors import ConfigError
from auditor.model import AppliedException, Finding

SCHEMA = "exceptions.schema.json"
DEFAULT_FILE = "exceptions.yaml"


class EntryStatus(enum.Enum):
    USED = "used"
    UNUSED = "unused"
    EXPIRED = "expired"
    INACTIVE = "inactive"


def _glob(pattern: str) -> Pattern[str]:
    return re.compile(translate(pattern))


@dataclass
class ExceptionEntry:
    name: str
    rules: tuple[str, ...]
    reason: str
    kind: Pattern[str] | None = None
    api_version: Pattern[str] | None = None
    namespace: Pattern[str] | None = None
    object_name: Pattern[str] | None = None
    labels: dict[str, Pattern[str]] = field(default_factory=dict)
    expires: dt.date | None = None
    owner: str | None = None
    ticket: str | None = None
    line: int | None = None

    def matches(self, finding: Finding, labels: dict) -> bool:
        ref = finding.object
        if self.kind is not None and not self.kind.match(ref.kind):
            return False
        if self.api_version is not None and not self.api_version.match(ref.api_version):
            return False
        if self.namespace is not None and not self.namespace.match(ref.namespace or ""):
            return False
        if self.object_name is not None and not self.object_name.match(ref.name):
            return False
        for key, pattern in self.labels.items():
            value = labels.get(key)
            if not isinstance(value, str) or not pattern.match(value):
                return False
        return True

    def expired(self, as_of: dt.date) -> bool:
        return self.expires is not None and as_of > self.expires


@dataclass
class ExceptionUsage:
    entry: ExceptionEntry
    status: EntryStatus
    matched: int


@dataclass
class ExceptionList:
    path: str
    entries: list[ExceptionEntry]

    def check_rules(self, known_rule_ids: set[str]) -> None:
        """Refuse entries naming rules that do not exist (a typo would silently except nothing)."""
        for entry in self.entries:
            for rule_id in entry.rules:
                if rule_id not in known_rule_ids:
                    where = f"{self.path}:{entry.line}" if entry.line else self.path
                    raise ConfigError(f"{where}: exception list: {entry.name}: {unknown_rule(rule_id, known_rule_ids)}")


class ExceptionMatcher:
    """Applies an exception list to findings and counts what each entry matched."""

    def __init__(self, exceptions: ExceptionList, as_of: dt.date) -> None:
        self.exceptions = exceptions
        self.as_of = as_of
        self._by_rule: dict[str, list[ExceptionEntry]] = {}
        for entry in exceptions.entries:
            for rule_id in entry.rules:
                self._by_rule.setdefault(rule_id, []).append(entry)
        self._matched: dict[str, int] = {entry.name: 0 for entry in exceptions.entries}

    def apply(self, finding: Finding, labels_of: Callable[[Finding], dict]) -> ExceptionEntry | None:
        """The first live entry (in file order) that excepts `finding`, if any.

        Expired entries that match are counted (reports say what expired
        exceptions would still cover) but never except anything.
        """
        candidates = self._by_rule.get(finding.rule)
        if not candidates:
            return None
        labels: dict | None = None
        chosen: ExceptionEntry | None = None
        for entry in candidates:
            if entry.labels and labels is None:
                labels = labels_of(finding)
            if entry.matches(finding, labels or {}):
                self._matched[entry.name] += 1
                if chosen is None and not entry.expired(self.as_of):
                    chosen = entry
        return chosen

    def usage(self, rules_run: set[str]) -> list[ExceptionUsage]:
        report = []
        for entry in self.exceptions.entries:
            matched = self._matched[entry.name]
            if entry.expired(self.as_of):
                status = EntryStatus.EXPIRED
            elif not rules_run.intersection(entry.rules):
                status = EntryStatus.INACTIVE
            elif matched:
                status = EntryStatus.USED
            else:
                status = EntryStatus.UNUSED
            report.append(ExceptionUsage(entry, status, matched))
        return report


def applied(entry: ExceptionEntry) -> AppliedException:
    return AppliedException(entry.name, entry.reason)


def bundled_path() -> str:
    return str(resources.files("auditor.data").joinpath(DEFAULT_FILE))


def default_path() -> str:
    """`./exceptions.yaml` when there is one, else the list shipped with the auditor."""
    return DEFAULT_FILE if os.path.isfile(DEFAULT_FILE) else bundled_path()


def load(path: str) -> ExceptionList:
    config = load_validated(path, SCHEMA, "exception list")
    entries: list[ExceptionEntry] = []
    seen: set[str] = set()
    for index, raw in enumerate(config.data["exceptions"]):
        line = config.line_of(("exceptions", index))
        if raw["name"] in seen:
            raise ConfigError(f"{path}:{line}: exception list: exceptions[{index}]: duplicate name {raw['name']!r}")
        seen.add(raw["name"])
        match = raw["match"]
        expires = raw.get("expires")
        entries.append(
            ExceptionEntry(
                name=raw["name"],
                rules=tuple(raw["rules"]),
                reason=raw["reason"].strip(),
                kind=_glob(match["kind"]) if "kind" in match else None,
                api_version=_glob(match["apiVersion"]) if "apiVersion" in match else None,
                namespace=_glob(match["namespace"]) if "namespace" in match else None,
                object_name=_glob(match["name"]) if "name" in match else None,
                labels={key: _glob(value) for key, value in match.get("labels", {}).items()},
                expires=dt.date.fromisoformat(expires) if expires else None,
                owner=raw.get("owner"),
                ticket=raw.get("ticket"),
                line=line,
            )
        )
    return ExceptionList(path, entries)
