"""Objects defined more than once in one scope: reported, never silently first-wins.

One scope is what one `Snapshot` holds (an offline input, a cluster, one
cluster of a fleet). In it, a Kubernetes object's identity is its group-kind,
namespace and name (the key the API server keeps unique, without the
version). Two definitions of one identity (a base and an overlay copied into
two files, one manifest given twice) are both audited, each finding judged
on its own object's labels; but which one a cluster ends up with is not
something the input says, and a rule that looks an object up by name sees
only one of them. So every report lists them.

Designed for what comes next:

- A source that knows how definitions combine (the GitOps reader: kustomize
  bases, overlays and patches) resolves them *before* building the snapshot
  of a scope, so legitimate overlays never reach this module; whatever still
  shares an identity in a scope is a real ambiguity.
- Each later definition is one problem of the file it is in
  (`DuplicateObject.problems()`); `DuplicateObject.input_problems()` makes
  them input problems (code `duplicate-object`), so a source that decides a
  duplicate is a defect of the input adds it to the report's list of input
  problems with one call: `result.input_problems += duplicate.input_problems()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter

from auditor.model import InputProblem, K8sObject, ObjectRef, ProblemCode, Source

Identity = tuple[str, str | None, str]  # (group-kind, namespace, name): Snapshot's index key


@dataclass(frozen=True, slots=True)
class DuplicateObject:
    """One identity defined more than once in one scope, with every definition in input order."""

    object: ObjectRef  # as the first definition names it
    sources: tuple[Source | None, ...]
    cluster: str | None = None  # the fleet member whose scope it is in

    @property
    def count(self) -> int:
        return len(self.sources)

    @property
    def display(self) -> str:
        return f"{self.cluster}: {self.object.display}" if self.cluster else self.object.display

    def problems(self) -> Iterator[tuple[Source | None, str]]:
        """Each definition after the first, as (where, what): one input problem of that file."""
        first = self.sources[0]
        where_first = str(first) if first is not None else "elsewhere in the input"
        for source in self.sources[1:]:
            yield source, f"defines {self.object.display} again (first defined at {where_first})"


    def input_problems(self) -> list[InputProblem]:
        """Each definition after the first as an input problem of its file (one without a file is left out:
        there is no file to point at)."""
        return [
            InputProblem(file=source.path, message=message, code=ProblemCode.DUPLICATE_OBJECT, line=source.line,
                         column=source.column, cluster=self.cluster)
            for source, message in self.problems()
            if source is not None
        ]


_IDENTITY = attrgetter("gk", "namespace", "name")


def identity(obj: K8sObject) -> Identity:
    return (obj.gk, obj.namespace, obj.name)


def find_duplicates(objects: Iterable[K8sObject]) -> list[DuplicateObject]:
    """Every identity `objects` define more than once, sorted by identity (deterministic output)."""
    objects = list(objects)
    identities = list(map(_IDENTITY, objects))  # identity(), at C speed: once per object
    if len(set(identities)) == len(identities):
        return []  # the usual case, told at C speed
    by_identity: dict[Identity, list[K8sObject]] = {}
    for obj, key in zip(objects, identities, strict=True):
        by_identity.setdefault(key, []).append(obj)
    duplicates = [
        DuplicateObject(definitions[0].ref, tuple(obj.source for obj in definitions))
        for definitions in by_identity.values()
        if len(definitions) > 1
    ]
    duplicates.sort(key=lambda duplicate: duplicate.object.sort_key)
    return duplicates
