"""Rule case files: a rule's pass and fail cases, and the home of its examples.

A case file (`cases/<rule-id>.yaml` beside the rule's module, format in
rules/CASES.md, schema `auditor/data/case.schema.json`) holds a rule's pass
and fail cases: input manifests and the verdict expected of the rule. The
case tagged `explain: fail` and the one tagged `explain: pass` are what
`audit explain` and docs/rules.md show. Loading is light (no engine, no
rules); the runner that checks a rule against its cases is `auditor.testing`.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from auditor.config_files import load_validated
from auditor.errors import ConfigError

if TYPE_CHECKING:
    from auditor.rule import Rule

SCHEMA = "case.schema.json"
CASES_DIR = "cases"
# Exception expiry in cases is judged as of this day, whatever the day the tests run.
CASE_AS_OF = dt.date(2026, 11, 29)
INPUT_NAME = "input.yaml"

Example = Literal["fail", "pass"]
# The verdict an `explain` example must reach.
_EXAMPLE_STATUS: dict[str, str] = {"fail": "failed", "pass": "passed"}


@dataclass(frozen=True)
class ExpectedFinding:
    """A finding a case expects: its object, and what else the case pins of it."""

    object: str  # Kind/namespace/name, or Kind/name
    status: str = "failed"
    severity: str | None = None
    message: str | None = None  # a regular expression, searched in the message
    line: int | None = None


@dataclass(frozen=True)
class ExpectedUnseen:
    """What a partial verdict did not see (`RuleContext.did_not_see`)."""

    what: str  # a regular expression, searched in what was not seen
    reason: str | None = None  # a regular expression, searched in why


@dataclass(frozen=True)
class Expectation:
    """What a case expects of its rule: the status, and the findings and unseen data that come with it."""

    status: str  # passed | failed | not-run | error
    reason: str | None = None  # a regular expression, searched in the reason (not-run, error, nothing to check)
    checked: int | None = None
    findings: tuple[ExpectedFinding, ...] = ()
    did_not_see: tuple[ExpectedUnseen, ...] = ()  # exactly these, in order: none means a full verdict


@dataclass(frozen=True)
class Case:
    """One case of a rule's case file: its input, the exceptions it is audited with, and what it expects."""

    rule: str
    name: str
    input: str
    expect: Expectation
    path: str  # the case file
    line: int | None = None  # where the case starts in it
    explain: Example | None = None
    exceptions: str | None = None
    posture: str | None = None
    coverage: Mapping[str, str] | None = None  # group-kind -> listed | not-served | present | missing | failed
    tree: bool = False  # read the input as a folder holding input.yaml (a GitOps tree), not as the file itself

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    @property
    def id(self) -> str:
        return f"{self.rule}::{self.name}"


@dataclass(frozen=True)
class CaseFile:
    """A rule's case file (rules/<layer>/cases/<rule-id>.yaml): its cases in file order."""

    rule: str
    path: str
    cases: tuple[Case, ...]

    def example(self, kind: Example) -> Case | None:
        """The case tagged `explain: fail` or `explain: pass`, if any."""
        return next((case for case in self.cases if case.explain == kind), None)


def _finding(raw: Mapping[str, Any]) -> ExpectedFinding:
    return ExpectedFinding(object=raw["object"].strip(), status=raw.get("status", "failed"),
                           severity=raw.get("severity"), message=raw.get("message"), line=raw.get("line"))


def load_case_file(path: str | Path) -> CaseFile:
    """The case file at `path`, valid against the case schema, or a one-line ConfigError naming file and line.

    Beyond the schema: the file is named after its rule, case names are
    unique, at most one case per file is each `explain` example, and an
    example reaches the verdict it illustrates from its input alone.
    """
    path = str(path)
    config = load_validated(path, SCHEMA, "rule case file")

    def fail(where: tuple[str | int, ...], problem: str) -> ConfigError:
        line = config.line_of(where)
        return ConfigError(f"{path}:{line}: rule case file: {problem}" if line else
                           f"{path}: rule case file: {problem}")

    rule_id = config.data["rule"]
    if Path(path).stem != rule_id:
        raise fail(("rule",), f"the file of rule {rule_id!r} must be named {rule_id}.yaml")
    cases: list[Case] = []
    examples: dict[str, str] = {}
    for index, raw in enumerate(config.data["cases"]):
        name = raw["name"]
        if any(case.name == name for case in cases):
            raise fail(("cases", index, "name"), f"cases[{index}]: duplicate case name {name!r}")
        expect = raw["expect"]
        explain = raw.get("explain")
        if explain is not None:
            if explain in examples:
                raise fail(("cases", index, "explain"),
                           f"{name}: case {examples[explain]!r} is already the explain: {explain} example")
            examples[explain] = name
            if expect["status"] != _EXAMPLE_STATUS[explain]:
                raise fail(("cases", index, "explain"),
                           f"{name}: an explain: {explain} example must expect status {_EXAMPLE_STATUS[explain]}")
            extra = [key for key in ("posture", "exceptions", "coverage", "tree") if key in raw]
            if extra:
                raise fail(("cases", index, extra[0]),
                           f"{name}: an explain example is shown as its input alone: it cannot have {extra[0]}")
        cases.append(Case(
            rule=rule_id,
            name=name,
            input=raw["input"],
            expect=Expectation(status=expect["status"], reason=expect.get("reason"), checked=expect.get("checked"),
                               findings=tuple(_finding(f) for f in expect.get("findings", [])),
                               did_not_see=tuple(ExpectedUnseen(u["what"], u.get("reason"))
                                                 for u in expect.get("didNotSee", []))),
            path=path,
            line=config.line_of(("cases", index)),
            explain=explain,
            exceptions=raw.get("exceptions"),
            posture=raw.get("posture"),
            coverage=raw.get("coverage"),
            tree=bool(raw.get("tree", False)),
        ))
    return CaseFile(rule_id, path, tuple(cases))


def case_file_path(rule: type[Rule] | Rule) -> Path | None:
    """Where `rule`'s case file is: `cases/<rule-id>.yaml` in the package of the rule's module (None if absent)."""
    rule_class = rule if isinstance(rule, type) else type(rule)
    package = rule_class.__module__.rpartition(".")[0]
    if package:
        candidate = resources.files(package).joinpath(CASES_DIR).joinpath(f"{rule_class.id}.yaml")
    else:  # a top-level module: the cases folder beside it
        module_file = getattr(sys.modules.get(rule_class.__module__), "__file__", None)
        if module_file is None:
            return None
        candidate = Path(module_file).parent / CASES_DIR / f"{rule_class.id}.yaml"
    path = Path(str(candidate))
    return path if path.is_file() else None


def explain_examples(rule: type[Rule] | Rule) -> tuple[str | None, str | None]:
    """The inputs of `rule`'s `explain: fail` and `explain: pass` cases (None where there is none)."""
    path = case_file_path(rule)
    if path is None:
        return None, None
    cases = load_case_file(path)
    failing, passing = cases.example("fail"), cases.example("pass")
    return (failing.input if failing else None), (passing.input if passing else None)
