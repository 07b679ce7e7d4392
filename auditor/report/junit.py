"""JUnit XML for CI: one testsuite per rule, one testcase per checked object or finding.

Test names are stable (`kind/namespace/name`, class name = rule id) so CI
history follows each object over time. The report agrees with the exit code,
so a green job never shows red tests and a red one names what failed it:

- a failure is a finding that fails the gate (failed, at or above
  `--fail-on`, and new when a baseline is applied); it carries the message,
  the remediation and `file:line`;
- a finding that does not fail the gate is skipped, saying why: excepted
  (with the exception's name and reason), below `--fail-on` (with its
  severity), or unchanged since the baseline;
- a rule in error is an error; a rule that could not run is an error when
  that fails the run (`--require-complete`, always with `audit live`) and
  skipped, with the reason, when it does not;
- what a partial verdict did not see is one more case of its rule's suite,
  `did not see: WHAT`, an error when that fails the run (`--require-complete`)
  and skipped, with why, when it does not; its suite's properties say
  `partial` and list it;
- a pass on input holding nothing the rule judges is one passing case whose
  output says what there was none of;
- an input problem (a file that could not be read) is an error case of the
  `(input)` suite, named after the file and line, its message the problem:
  it always fails the run (exit 3).

Every suite's properties name the posture and exception list the audit was
judged against (`built-in platform defaults`, or the file). The output
validates against the JUnit schema Jenkins' xUnit plugin uses
(tests/test_reports_junit.py checks it); junit-xml builds the elements, and
the `disabled` attribute it adds (not in that schema) is dropped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from junit_xml import TestCase, TestSuite

from auditor.duplicates import DuplicateObject
from auditor.engine import AuditResult, RuleResult
from auditor.model import Finding, FindingStatus, InputProblem, ObjectRef, RuleStatus
from auditor.report.sources import ConfigSources


def _case_name(ref: ObjectRef, cluster: str | None = None) -> str:
    return f"{cluster}: {ref.display}" if cluster else ref.display


def _not_failing(finding: Finding, result: AuditResult) -> str:
    """Why a finding that does not fail the gate does not: the skipped case's message."""
    if finding.status is FindingStatus.EXCEPTED and finding.exception is not None:
        return f"excepted by {finding.exception.name}: {finding.exception.reason}"
    severity = finding.severity.value if finding.severity else "error"
    if finding.severity is not None and finding.severity.rank < result.fail_on.rank:
        return f"{severity} below --fail-on {result.fail_on.value}: {finding.message}"
    return f"{severity}, unchanged since the baseline: {finding.message}"


def _finding_case(finding: Finding, rule: RuleResult, result: AuditResult, failing: set[int]) -> TestCase:
    # The location goes in the failure text: the schema Jenkins uses has no
    # file/line attributes on a testcase.
    case = TestCase(_case_name(finding.object, finding.cluster), classname=rule.id)
    if id(finding) not in failing:
        case.add_skipped_info(_not_failing(finding, result))
        return case
    details = [finding.message]
    if rule.rule is not None:
        details.append(f"remediation: {rule.rule.remediation}")
    if finding.source is not None:
        details.append(f"at: {finding.source}")
    severity = finding.severity.value if finding.severity else "error"
    case.add_failure_info(message=finding.message, output="\n".join(details), failure_type=severity)
    return case


def _suite(rule: RuleResult, result: AuditResult, failing: set[int]) -> TestSuite:
    cases: list[TestCase] = []
    if rule.status is RuleStatus.ERROR or (rule.status is RuleStatus.NOT_RUN and result.require_complete):
        case = TestCase(rule.id, classname=rule.id)
        case.add_error_info(message=rule.reason, error_type=rule.status.value)
        cases.append(case)
        return TestSuite(rule.id, cases)
    if rule.status is RuleStatus.NOT_APPLICABLE:  # declared so for this input: no verdict, never a failure
        case = TestCase(rule.id, classname=rule.id)
        case.add_skipped_info(rule.reason)
        return TestSuite(rule.id, [case])
    if rule.status is RuleStatus.NOT_RUN:  # no verdict, and the run does not require one
        case = TestCase(rule.id, classname=rule.id)
        case.add_skipped_info(f"not run: {rule.reason}")
        return TestSuite(rule.id, [case])
    flagged = set()
    for finding in rule.findings:
        flagged.add((finding.cluster, finding.object))
        cases.append(_finding_case(finding, rule, result, failing))
    for ref in rule.examined:
        if (None, ref) not in flagged:
            cases.append(TestCase(_case_name(ref), classname=rule.id))
    for unseen in rule.unseen:
        case = TestCase(f"did not see: {unseen.what}", classname=rule.id)
        if result.require_complete and not unseen.declared:
            case.add_error_info(message=unseen.reason, error_type="partial")
        else:
            declared = f"; {unseen.declared}" if unseen.declared else ""
            case.add_skipped_info(f"partial verdict: {unseen.reason}{declared}")
        cases.append(case)
    if not cases:
        cases.append(TestCase(rule.id, classname=rule.id, stdout=rule.reason or None))
    cases.sort(key=lambda c: (c.name, c.classname))
    return TestSuite(rule.id, cases)


# Not a rule id (ids are kebab-case), so it never clashes with a rule's suite.
INPUT_SUITE = "(input)"


def _input_suite(problems: list[InputProblem], duplicates: list[DuplicateObject]) -> TestSuite:
    """Files that could not be read: error cases (they make the run incomplete). Objects defined more than
    once: skipped cases (shown, not failing: they do not change the exit code)."""
    cases = []
    for problem in problems:
        # The place is in the name and the text: the schema Jenkins uses has no file/line on a testcase.
        case = TestCase(f"input problem {problem.where}", classname=INPUT_SUITE)
        case.add_error_info(message=f"{problem.message} (none of the file's objects is audited)",
                            output=str(problem), error_type=problem.code.value)
        cases.append(case)
    for duplicate in duplicates:
        case = TestCase(f"duplicate {duplicate.display}", classname=INPUT_SUITE)
        where = ", ".join(str(source) if source else "(unknown place)" for source in duplicate.sources)
        case.add_skipped_info(f"defined {duplicate.count} times in the input: {where}; each definition is audited")
        cases.append(case)
    return TestSuite(INPUT_SUITE, cases)


# Characters XML 1.0 cannot carry, even escaped (control characters, lone
# surrogates, U+FFFE/U+FFFF). Offline input can put them in object names and
# messages; they are replaced so the report stays well-formed.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_safe(text: str | None) -> str | None:
    return _NOT_XML.sub("\ufffd", text) if text else text


def _sanitize(element: ET.Element) -> None:
    for node in element.iter():
        node.text, node.tail = _xml_safe(node.text), _xml_safe(node.tail)
        for key, value in node.attrib.items():
            node.attrib[key] = _xml_safe(value)  # type: ignore[assignment]


def _sources(result: AuditResult) -> dict[str, str]:
    """Each suite's properties: the posture and exception list the audit was judged against."""
    sources = ConfigSources.of(result)
    return {"posture": sources.posture, "exceptions": sources.exceptions}


def render(result: AuditResult) -> str:
    root = ET.Element("testsuites", {"name": "cilium-exposure-audit"})
    totals = {"tests": 0, "failures": 0, "errors": 0}
    failing = {id(finding) for finding in result.failing}
    suites = [_suite(rule, result, failing) for rule in result.rules]
    if result.duplicates or result.input_problems:
        suites.append(_input_suite(result.input_problems, result.duplicates))
    partial = {rule.id: rule for rule in result.rules if rule.partial}
    for test_suite in suites:
        test_suite.properties = _sources(result)
        if test_suite.name in partial:  # the verdict is on part of what the rule judges
            unseen = partial[test_suite.name].unseen
            test_suite.properties.update({"partial": "true", "didNotSee": "; ".join(str(u) for u in unseen)})
        suite = test_suite.build_xml_doc()
        suite.attrib.pop("disabled", None)
        suite.attrib.pop("time", None)  # no timings: the same input gives the same bytes
        for case in suite.iter("testcase"):
            case.attrib.pop("time", None)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    _sanitize(root)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
