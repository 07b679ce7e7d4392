"""The runner that checks a rule against its case files (public: for plugin authors too).

A case file (`cases/<rule-id>.yaml` beside the rule's module, format in
rules/CASES.md, schema `auditor/data/case.schema.json`) holds a rule's pass
and fail cases: input manifests and the verdict expected of the rule. It is
also the one home of the rule's examples: the case tagged `explain: fail` and
the one tagged `explain: pass` are what `audit explain` and docs/rules.md
show.

    from auditor.testing import assert_case, load_case_file

    for case in load_case_file("cases/acme-lb-service-owner.yaml").cases:
        assert_case(case, rule=LbServiceOwner)   # raises CaseMismatch with a diff

A case runs in this process through the real loader (the input is written to
a temporary `input.yaml`) and the real engine, with only the case's rule
selected, the platform's default posture unless the case gives one, no
exception list unless it gives one, and exception expiry judged as of
`CASE_AS_OF` so a case never depends on the day it runs. Loading is light
(no engine, no rules); jsonschema is imported when a case file is validated.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The case-file model is re-exported: plugin authors import everything from here.
from auditor.cases import (
    CASE_AS_OF,
    INPUT_NAME,
    Case,
    CaseFile,
    Expectation,
    ExpectedFinding,
    ExpectedUnseen,
    case_file_path,
    explain_examples,
    load_case_file,
)

if TYPE_CHECKING:  # the runner's imports are made when a case runs
    from auditor.engine import RuleResult
    from auditor.model import Finding
    from auditor.rule import Rule

__all__ = [
    "CASE_AS_OF", "INPUT_NAME", "Case", "CaseFile", "CaseMismatch", "Expectation", "ExpectedFinding", "ExpectedUnseen",
    "assert_case",
    "case_file_path", "compare", "explain_examples", "iter_cases", "load_case_file", "run_case",
]


class CaseMismatch(AssertionError):
    """A case whose rule did not reach the expected verdict; the message is a readable diff."""


def _rule_instance(case: Case, rule: type[Rule] | Rule | None) -> Rule:
    from auditor.registry import load_rules, metadata_problems

    if rule is None:
        found = load_rules().by_id(case.rule)
        if found is None:
            raise ValueError(f"{case.where}: no rule {case.rule!r} is installed (pass rule= to run_case)")
        return found
    rule_class = rule if isinstance(rule, type) else type(rule)
    problems = metadata_problems(rule_class)
    if problems:
        raise ValueError(f"{rule_class.__name__}: {'; '.join(problems)}")
    if rule_class.id != case.rule:
        raise ValueError(f"{case.where}: the case is about {case.rule!r}, not {rule_class.id!r}")
    return rule if not isinstance(rule, type) else rule()


@functools.cache
def _installed_rule_ids() -> frozenset[str]:
    from auditor.registry import load_rules

    return frozenset(load_rules().ids)


def run_case(case: Case, rule: type[Rule] | Rule | None = None, *, as_of: dt.date = CASE_AS_OF) -> RuleResult:
    """Audit the case's input with the real loader and engine, only its rule selected: that rule's result.

    `rule` is the rule class (or instance) under test; by default the
    installed rule with the case's id (built-in or plugin). The posture and
    exception list the case gives are checked like a run's: naming a rule
    that is neither installed nor the one under test is an error.
    """
    from auditor import engine, exceptions_list
    from auditor import posture as posture_module
    from auditor.registry import RuleSet
    from auditor.snapshot import Coverage, CoverageState, Snapshot
    from auditor.sources.files import read_paths

    under_test = _rule_instance(case, rule)
    with tempfile.TemporaryDirectory(prefix="audit-case-") as work:
        folder = Path(work)
        tree = folder / "tree"
        tree.mkdir()
        input_path = tree / INPUT_NAME
        input_path.write_text(case.input, encoding="utf-8")
        snapshot = read_paths([str(tree if case.tree else input_path)])
        if case.coverage is not None:
            listed = {gk: Coverage(CoverageState(state), f"{gk}: {state} (case)")
                      for gk, state in case.coverage.items()}
            snapshot = Snapshot.build(snapshot.objects, mode="snapshot", inputs=snapshot.inputs, listed=listed)
        exception_list = exceptions_list.ExceptionList("(none)", [])
        known = _installed_rule_ids() | {under_test.id}
        if case.exceptions is not None:
            (folder / "exceptions.yaml").write_text(case.exceptions, encoding="utf-8")
            exception_list = exceptions_list.load(str(folder / "exceptions.yaml"))
            exception_list.check_rules(set(known))
        posture = posture_module.Posture()
        if case.posture is not None:
            (folder / "posture.yaml").write_text(case.posture, encoding="utf-8")
            posture = posture_module.load(str(folder / "posture.yaml"))
            posture.check_rules(known)
        result = engine.run(snapshot, RuleSet([under_test], []), exception_list, posture, as_of=as_of)
    (rule_result,) = result.rules
    return rule_result


# --- comparing ----------------------------------------------------------------------------


def _matches(pattern: str | None, text: str) -> bool:
    return pattern is None or re.search(pattern, text) is not None


def _expected_view(expect: Expectation) -> dict[str, Any]:
    """The expectation as the case file writes it (the left side of the diff)."""
    view: dict[str, Any] = {"status": expect.status}
    if expect.reason is not None:
        view["reason"] = expect.reason
    if expect.checked is not None:
        view["checked"] = expect.checked
    view["findings"] = [_finding_view(wanted) for wanted in expect.findings]
    view["didNotSee"] = [_unseen_view(wanted) for wanted in expect.did_not_see]
    return view


def _unseen_view(wanted: ExpectedUnseen) -> dict[str, Any]:
    return {"what": wanted.what, **({"reason": wanted.reason} if wanted.reason is not None else {})}


def _finding_view(wanted: ExpectedFinding) -> dict[str, Any]:
    view: dict[str, Any] = {"object": wanted.object, "status": wanted.status}
    if wanted.severity is not None:
        view["severity"] = wanted.severity
    if wanted.message is not None:
        view["message"] = wanted.message
    if wanted.line is not None:
        view["line"] = wanted.line
    return view


def _actual_finding_view(actual: Finding, wanted: ExpectedFinding | None) -> dict[str, Any]:
    """`actual` in the terms of the finding expected in its place: that finding's keys, as `actual` has them.

    A message the expected expression matches is shown as the expression, so
    the diff shows only what differs; a finding where none (or another
    object) was expected is shown whole.
    """
    severity = actual.severity.value if actual.severity else None
    line = actual.source.line if actual.source is not None else None
    view: dict[str, Any] = {"object": actual.object.display, "status": actual.status.value}
    if wanted is None or wanted.object != actual.object.display:
        return {**view, "severity": severity, "message": actual.message, "line": line}
    if wanted.severity is not None:
        view["severity"] = severity
    if wanted.message is not None:
        view["message"] = wanted.message if _matches(wanted.message, actual.message) else actual.message
    if wanted.line is not None:
        view["line"] = line
    return view


def _actual_view(expect: Expectation, result: RuleResult) -> dict[str, Any]:
    """The result in the case's terms (the right side of the diff): what the case asks about, as it is."""
    view: dict[str, Any] = {"status": result.status.value}
    if expect.reason is not None:
        view["reason"] = expect.reason if _matches(expect.reason, result.reason) else result.reason
    if expect.checked is not None:
        view["checked"] = len(result.examined)
    wanted = list(expect.findings)
    view["findings"] = [_actual_finding_view(finding, wanted[index] if index < len(wanted) else None)
                        for index, finding in enumerate(result.findings)]
    expected_unseen = list(expect.did_not_see)
    view["didNotSee"] = [_actual_unseen_view(unseen.what, unseen.reason,
                                             expected_unseen[index] if index < len(expected_unseen) else None)
                         for index, unseen in enumerate(result.unseen)]
    return view


def _actual_unseen_view(what: str, reason: str, wanted: ExpectedUnseen | None) -> dict[str, Any]:
    """What was not seen, in the terms of the entry expected in its place (a matching expression shown as itself)."""
    if wanted is None:
        return {"what": what, "reason": reason}
    view: dict[str, Any] = {"what": wanted.what if _matches(wanted.what, what) else what}
    if wanted.reason is not None:
        view["reason"] = wanted.reason if _matches(wanted.reason, reason) else reason
    return view


def _lines(view: Mapping[str, Any]) -> list[str]:
    import yaml

    text = yaml.safe_dump(dict(view), sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=False)
    return text.splitlines(keepends=True)


def compare(case: Case, result: RuleResult) -> str | None:
    """None when `result` is what `case` expects; else a readable diff (expected against actual)."""
    expected, actual = _expected_view(case.expect), _actual_view(case.expect, result)
    if not expected["didNotSee"] and not actual["didNotSee"]:  # a full verdict, as expected: not worth a line
        del expected["didNotSee"], actual["didNotSee"]
    if expected == actual:
        return None
    left, right = _lines(expected), _lines(actual)
    diff = "".join(difflib.unified_diff(left, right, "expected", "actual", n=max(len(left), len(right))))
    context = []
    if result.reason and case.expect.reason is None:
        context.append(f"reason: {result.reason}")
    return f"case {case.id} ({case.where}) does not match:\n{diff}" + "".join(f"{line}\n" for line in context)


def assert_case(case: Case, rule: type[Rule] | Rule | None = None, *, as_of: dt.date = CASE_AS_OF) -> RuleResult:
    """Run `case` and raise `CaseMismatch` with the diff unless its rule reached the expected verdict."""
    result = run_case(case, rule, as_of=as_of)
    problem = compare(case, result)
    if problem is not None:
        raise CaseMismatch(problem)
    return result


def iter_cases(paths: list[Path]) -> Iterator[Case]:
    """Every case of the case files at `paths`, in order (for pytest parametrisation)."""
    for path in paths:
        yield from load_case_file(path).cases
