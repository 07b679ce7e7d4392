"""JUnit XML for CI: one testsuite per rule, one testcase per checked object or finding.

Test names are stable (`kind/namespace/name`, class name = rule id) so CI
history follows each object over time. Failures carry the message and the
remediation, excepted findings are skipped with the reason, and rules that
could not run are errors. The output validates against the JUnit schema
Jenkins' xUnit plugin uses (tests/test_reports_junit.py checks it); junit-xml builds
the elements, and the `disabled` attribute it adds (not in that schema) is
dropped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from junit_xml import TestCase, TestSuite

from auditor.duplicates import DuplicateObject
from auditor.engine import AuditResult, RuleResult
from auditor.model import Finding, FindingStatus, ObjectRef, RuleStatus


def _case_name(ref: ObjectRef, cluster: str | None = None) -> str:
    return f"{cluster}: {ref.display}" if cluster else ref.display


def _finding_case(finding: Finding, rule: RuleResult) -> TestCase:
    # The location goes in the failure text: the schema Jenkins uses has no
    # file/line attributes on a testcase.
    case = TestCase(_case_name(finding.object, finding.cluster), classname=rule.id)
    if finding.status is FindingStatus.EXCEPTED and finding.exception is not None:
        case.add_skipped_info(f"excepted by {finding.exception.name}: {finding.exception.reason}")
        return case
    details = [finding.message]
    if rule.rule is not None:
        details.append(f"remediation: {rule.rule.remediation}")
    if finding.source is not None:
        details.append(f"at: {finding.source}")
    severity = finding.severity.value if finding.severity else "error"
    case.add_failure_info(message=finding.message, output="\n".join(details), failure_type=severity)
    return case


def _suite(rule: RuleResult) -> TestSuite:
    cases: list[TestCase] = []
    if rule.status in (RuleStatus.NOT_RUN, RuleStatus.ERROR):
        case = TestCase(rule.id, classname=rule.id)
        case.add_error_info(message=rule.reason, error_type=rule.status.value)
        cases.append(case)
        return TestSuite(rule.id, cases)
    flagged = set()
    for finding in rule.findings:
        flagged.add((finding.cluster, finding.object))
        cases.append(_finding_case(finding, rule))
    for ref in rule.examined:
        if (None, ref) not in flagged:
            cases.append(TestCase(_case_name(ref), classname=rule.id))
    if not cases:
        cases.append(TestCase(rule.id, classname=rule.id))
    cases.sort(key=lambda c: (c.name, c.classname))
    return TestSuite(rule.id, cases)


# Not a rule id (ids are kebab-case), so it never clashes with a rule's suite.
INPUT_SUITE = "(input)"


def _input_suite(duplicates: list[DuplicateObject]) -> TestSuite:
    """Objects defined more than once: skipped cases (shown, not failing: they do not change the exit code)."""
    cases = []
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


def render(result: AuditResult) -> str:
    root = ET.Element("testsuites", {"name": "cilium-exposure-audit"})
    totals = {"tests": 0, "failures": 0, "errors": 0}
    suites = [_suite(rule) for rule in result.rules]
    if result.duplicates:
        suites.append(_input_suite(result.duplicates))
    for test_suite in suites:
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
