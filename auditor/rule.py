"""What a rule plugin is: declarative metadata plus one `check` generator.

A rule yields `Finding`s about objects; it never prints, exits, or looks at
the exception list (the engine applies it to every rule alike). When the data
a rule needs is not in the snapshot it raises `NotRun` with the reason, so the
verdict says "could not tell" instead of "passed".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Iterator, Union

from auditor.model import Finding, K8sObject, ObjectRef, Severity, string_labels
from auditor.snapshot import CoverageState, Snapshot

if TYPE_CHECKING:  # imported for annotations only: keeps rule imports light
    from auditor.cilium.config import CiliumConfig
    from auditor.posture import Posture

# A requirement is one group-kind, or a tuple of group-kinds of which at least
# one must be known (e.g. any kind of network policy).
Requirement = Union[str, tuple[str, ...]]


@dataclass(frozen=True)
class Fact:
    """A checked fact a rule relies on, with the versions it holds for and its source.

    Shown in the generated rule reference (docs/rules.md), so an operator can
    see what the rule assumes about Cilium or Kubernetes, and re-check it when
    upgrading.
    """

    statement: str
    holds_for: str
    source: str


class NotRun(Exception):
    """Raised by a rule whose input does not show what it needs to judge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Rule:
    """Base class of every rule plugin. Subclasses set the metadata below."""

    id: ClassVar[str]
    severity: ClassVar[Severity]
    title: ClassVar[str]
    rationale: ClassVar[str]
    remediation: ClassVar[str]
    # Kinds that must be known for a verdict (else not-run, or error when a read failed).
    requires: ClassVar[tuple[Requirement, ...]] = ()
    # Further kinds the rule reads when they are there; the live reader lists them too.
    uses: ClassVar[tuple[str, ...]] = ()
    # Public sources for the facts the rationale relies on (URLs, issue ids).
    references: ClassVar[tuple[str, ...]] = ()
    # The Cilium/Kubernetes facts the rule encodes, with versions and sources.
    facts: ClassVar[tuple[Fact, ...]] = ()
    # Small YAML inputs: one that fails the rule and one that passes it. They
    # are shown by `audit explain` and in docs/rules.md, and the test suite
    # checks that they do what they claim.
    example_fail: ClassVar[str] = ""
    example_pass: ClassVar[str] = ""

    def check(self, snapshot: Snapshot, ctx: "RuleContext") -> Iterator[Finding]:
        raise NotImplementedError

    def finding(self, obj: K8sObject, message: str, severity: Severity | None = None) -> Finding:
        """A finding about `obj`, pointing at where it was read, carrying its labels (for exceptions)."""
        labels = tuple(sorted(string_labels(obj.labels).items()))
        return Finding(object=obj.ref, message=message, source=obj.source, severity=severity, labels=labels)

    def kinds_read(self) -> list[str]:
        kinds: set[str] = set(self.uses)
        for requirement in self.requires:
            kinds.update((requirement,) if isinstance(requirement, str) else requirement)
        return sorted(kinds)


@dataclass
class RuleContext:
    """What a rule may consult besides the snapshot. One per rule and run."""

    snapshot: Snapshot
    posture: "Posture"
    cilium: "CiliumConfig"
    examined_refs: list[ObjectRef] = field(default_factory=list)

    def examined(self, obj: K8sObject | ObjectRef) -> None:
        """Record that `obj` was checked (reporters list passing objects too)."""
        self.examined_refs.append(obj.ref if isinstance(obj, K8sObject) else obj)

    def known(self, gk: str) -> bool:
        return self.snapshot.coverage(gk).state.known


def cilium_config_kinds() -> tuple[str, ...]:
    """The kinds any of which shows the Cilium configuration (rules require them as one group)."""
    from auditor.cilium.config import CONFIG_KINDS  # the object model's, imported late: no cycle

    return CONFIG_KINDS


def unmet_requirement(snapshot: Snapshot, rule: Rule) -> tuple[CoverageState, str] | None:
    """Why `rule` cannot run on `snapshot`, or None when its data is there.

    A failed read of any kind the rule reads is an error (the rule might have
    reached another verdict with it); a requirement none of whose kinds is
    known makes the rule not-run.
    """
    for gk in rule.kinds_read():
        coverage = snapshot.coverage(gk)
        if coverage.state is CoverageState.FAILED:
            return CoverageState.FAILED, coverage.reason or f"reading {gk} failed"
    for requirement in rule.requires:
        alternatives = (requirement,) if isinstance(requirement, str) else requirement
        if snapshot.cilium_values and alternatives == cilium_config_kinds():
            continue  # "the Cilium configuration": a values file given beside the input shows it
        if not any(snapshot.coverage(gk).state.known for gk in alternatives):
            if len(alternatives) == 1:
                reason = snapshot.coverage(alternatives[0]).reason
            else:
                reason = f"the input holds none of {', '.join(alternatives)}"
            return CoverageState.MISSING, reason
    return None
