"""The named exception list: which findings are accepted drift, and why.

Entries are indexed by rule, and their globs compiled once, so matching stays
cheap on clusters with many findings. Every entry reports what became of it:
used, unused (matched nothing: stale, remove it), expired (its date passed:
the findings fail again), or inactive (none of its rules ran).

Label matching looks at the labels of the object each finding is about
(`Finding.labels`), never at another object that happens to share its
identity: with a base and an overlay in two files, the labelled one must not
except the unlabelled one (issue 10).
"""

from __future__ import annotations

import datetime as dt
import enum
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import translate
from re import Pattern

from auditor.config_files import data_path, load_validated, unknown_rule
from auditor.errors import ConfigError
from auditor.model import AppliedException, Finding, K8sObject, group_kind, split_api_version, string_labels
from auditor.snapshot import Snapshot

SCHEMA = "exceptions.schema.json"
DEFAULT_FILE = "exceptions.yaml"

# The labels of a finding's own object; None when they cannot be told (label matches then fail).
LabelsOf = Callable[[Finding], Mapping[str, str] | None]


class EntryStatus(enum.Enum):
    USED = "used"
    UNUSED = "unused"
    EXPIRED = "expired"
    INACTIVE = "inactive"


def _glob(pattern: str) -> Pattern[str]:
    return re.compile(translate(pattern))


@dataclass
class ExceptionEntry:
    """One named exception: the rules it excepts, why, and the objects it matches."""

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
    # The file the entry was written in, when the list merges several (`.cilium-audit.yaml` `exceptions:`).
    path: str | None = None

    def matches(self, finding: Finding, labels: Mapping[str, str] | None) -> bool:
        """Whether the entry covers `finding`; `labels` None (unknown) never satisfies a label match."""
        ref = finding.object
        if self.kind is not None and not self.kind.match(ref.kind):
            return False
        if self.api_version is not None and not self.api_version.match(ref.api_version):
            return False
        if self.namespace is not None and not self.namespace.match(ref.namespace or ""):
            return False
        if self.object_name is not None and not self.object_name.match(ref.name):
            return False
        if self.labels and labels is None:
            return False
        for key, pattern in self.labels.items():
            value = labels.get(key) if labels is not None else None
            if not isinstance(value, str) or not pattern.match(value):
                return False
        return True

    def expired(self, as_of: dt.date) -> bool:
        return self.expires is not None and as_of > self.expires


@dataclass
class ExceptionUsage:
    """What became of an exception entry in an audit: used (on how many findings), unused, expired, inactive."""

    entry: ExceptionEntry
    status: EntryStatus
    matched: int


@dataclass
class ExceptionList:
    """The exception entries of one file, or of several merged in order."""

    path: str  # the file; `a.yaml, b.yaml` for a merged list (`load_merged`), whose entries name theirs
    entries: list[ExceptionEntry]
    paths: tuple[str, ...] = ()  # the files of a merged list, in order

    def check_rules(self, known_rule_ids: set[str]) -> None:
        """Refuse entries naming rules that do not exist (a typo would silently except nothing)."""
        for entry in self.entries:
            for rule_id in entry.rules:
                if rule_id not in known_rule_ids:
                    path = entry.path or self.path
                    where = f"{path}:{entry.line}" if entry.line else path
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

    def apply(self, finding: Finding, labels_of: LabelsOf) -> ExceptionEntry | None:
        """The first live entry (in file order) that excepts `finding`, if any.

        Expired entries that match are counted (reports say what expired
        exceptions would still cover) but never except anything. `labels_of`
        is asked only when an entry matches on labels.
        """
        candidates = self._by_rule.get(finding.rule)
        if not candidates:
            return None
        labels: Mapping[str, str] | None = None
        looked_up = False
        chosen: ExceptionEntry | None = None
        for entry in candidates:
            if entry.labels and not looked_up:
                labels, looked_up = labels_of(finding), True
            if entry.matches(finding, labels):
                self._matched[entry.name] += 1
                if chosen is None and not entry.expired(self.as_of):
                    chosen = entry
        return chosen

    def usage(self, rules_run: set[str], partial: frozenset[str] = frozenset()) -> list[ExceptionUsage]:
        """What became of each entry. `partial`: rules of `rules_run` whose verdict is on part of the input;
        an entry that only they read and that matched nothing may cover what they did not see: inactive,
        not unused (never "stale" on evidence the run did not have)."""
        report = []
        for entry in self.exceptions.entries:
            matched = self._matched[entry.name]
            if entry.expired(self.as_of):
                status = EntryStatus.EXPIRED
            elif not rules_run.intersection(entry.rules):
                status = EntryStatus.INACTIVE
            elif matched:
                status = EntryStatus.USED
            elif not (rules_run - partial).intersection(entry.rules):
                status = EntryStatus.INACTIVE
            else:
                status = EntryStatus.UNUSED
            report.append(ExceptionUsage(entry, status, matched))
        return report


def own_labels(snapshot: Snapshot) -> LabelsOf:
    """How to find the labels of the object each finding is about, in `snapshot`.

    A finding built with `Rule.finding` carries them. One built by hand
    (from an `ObjectRef` and a `Source`) does not: its object is then the one
    with its identity, or, when several objects share that identity, the one
    read where the finding points. When that still does not single one out,
    the labels are unknown and no label-matching entry excepts the finding:
    an exception never rests on another object's labels.
    """
    index: dict[tuple[str, str | None, str], list[K8sObject]] | None = None

    def labels_of(finding: Finding) -> Mapping[str, str] | None:
        nonlocal index
        if finding.labels is not None:
            return dict(finding.labels)
        if index is None:
            index = {}
            for obj in snapshot.objects:
                index.setdefault((obj.gk, obj.namespace, obj.name), []).append(obj)
        ref = finding.object
        group, _ = split_api_version(ref.api_version)
        candidates = index.get((group_kind(group, ref.kind), ref.namespace, ref.name), [])
        if not candidates:
            return {}  # no such object in the input (a namespace only implied by its objects): no labels
        if len(candidates) > 1:
            candidates = [obj for obj in candidates if obj.source == finding.source]
        if len(candidates) != 1:
            return None  # several objects, and the finding does not say which one
        return string_labels(candidates[0].labels)

    return labels_of


def applied(entry: ExceptionEntry) -> AppliedException:
    return AppliedException(entry.name, entry.reason)


def bundled_path() -> str:
    return data_path(DEFAULT_FILE)


def default_path() -> str:
    """`./exceptions.yaml` when there is one, else the list shipped with the auditor."""
    return DEFAULT_FILE if os.path.isfile(DEFAULT_FILE) else bundled_path()


def load_merged(paths: list[str]) -> ExceptionList:
    """The exception files `paths` as one list, in order: each entry keeps its own file and line, and an
    entry name used twice (in one file or across them) is an error naming both places."""
    entries: list[ExceptionEntry] = []
    first: dict[str, ExceptionEntry] = {}
    for path in paths:
        for entry in load(path).entries:
            entry.path = path
            if entry.name in first:
                seen = first[entry.name]
                raise ConfigError(f"{path}:{entry.line}: exception list: duplicate name {entry.name!r} "
                                  f"(also at {seen.path}:{seen.line})")
            first[entry.name] = entry
            entries.append(entry)
    return ExceptionList(", ".join(paths), entries, tuple(paths))


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
