"""SARIF 2.1.0 for code-scanning tools (GitHub code scanning, GitLab, IDE viewers).

One run. `tool.driver.rules` describes every selected rule (title, rationale,
remediation, default level, a link to its section of docs/rules.md); each
finding is a result with its rule, level, message, the object as a logical
location (always) and, for manifest input, the file and line as a physical
location relative to the working directory (`uriBaseId` `%SRCROOT%`, the
convention code-scanning uploaders resolve against the checkout).

- Levels agree with the exit code: a result that fails the gate (failed, at
  or above `--fail-on`, new when a baseline is applied) is `error`; any other
  is `warning` (error and warning severities) or `note` (info). A rule's
  default level is `error` when its severity is at or above `--fail-on`.
- Excepted findings are results with an external, accepted suppression whose
  justification is the exception's reason: they stay visible, as everywhere.
- `partialFingerprints` hash the rule and the object (kind, namespace, name,
  cluster), never the message, so an alert follows the object across runs.
- The invocation records the exit code and `executionSuccessful: false` when
  the audit is incomplete (a rule did not run, failed or saw only part of what
  it judges; a file could not be read); each such rule is a tool execution
  notification (`rule-not-run`, `rule-error`, `rule-partial` listing what it
  did not see), and so is each input problem (`input-problem`, level error:
  it always makes the run incomplete), located at the file and line. Expired entries of the exception list, and
  unused entries of an exception file, are tool configuration notifications
  located at the entry (file and line); unused entries of the built-in list
  are listed only with `-v` (the user cannot remove them). The run's
  properties name the posture and exception list in force.
- With `--baseline`, each result carries `baselineState` (`new`/`unchanged`).

No timestamps and no absolute paths for files below the working directory:
the same input audited from the same directory gives the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from auditor import TOOL_NAME, __version__
from auditor.baseline import Baseline
from auditor.duplicates import DuplicateObject
from auditor.engine import AuditResult, RuleResult
from auditor.exceptions_list import EntryStatus, ExceptionUsage
from auditor.model import Finding, FindingStatus, InputProblem, RuleStatus, Severity
from auditor.report.json_report import namespace_origin_dict, repository_dict, scope_dict, sources_dict, summary_dict
from auditor.report.json_text import dumps_indented
from auditor.report.sources import BUILTIN, ConfigSources

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/univ-lehavre/cilium-exposure-auditor"
RULES_DOC_URI = f"{INFORMATION_URI}/blob/main/docs/rules.md"
SRCROOT = "%SRCROOT%"
FINGERPRINT = "objectIdentity/v1"
STDIN_NAME = "<stdin>"

LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# GitHub's own grading of a rule (its severity, whatever the gate).
PROBLEM_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "recommendation"}
# A result or rule below the gate: still visible, never `error` (code scanning fails checks on errors).
BELOW_GATE = {Severity.ERROR: "warning", Severity.WARNING: "warning", Severity.INFO: "note"}
# GitHub code scanning ranks alerts of rules tagged `security` by this score
# (>= 7.0 high, >= 4.0 medium, else low).
SECURITY_SEVERITY = {Severity.ERROR: "7.5", Severity.WARNING: "5.0", Severity.INFO: "2.0"}

NOTIFICATIONS = [
    ("rule-not-run", "A rule could not run: the input does not show what it needs."),
    ("rule-error", "A rule reached no verdict: a read failed, the rule crashed, or a plugin failed to load."),
    ("exception-expired", "An exception-list entry expired: the findings it covered fail again."),
    ("exception-unused", "An entry of an exception file matched nothing: it is stale."),
    ("posture-note", "A remark about the posture the audit was judged against."),
    ("duplicate-object", "An object is defined more than once in the input: each definition is audited."),
    # Last, so the indices above stay those of earlier reports.
    ("exception-builtin-unused", f"An entry of the built-in exception list ({BUILTIN}) matched nothing."),
    ("input-problem", "A file of the input could not be read: none of its objects was audited."),
    ("rule-partial", "A rule's verdict is on part of what it judges: the input did not show it the rest."),
    ("rule-not-applicable", "A rule could not run, and the configuration declares it not applicable to this input."),
]
_NOTIFICATION_INDEX = {name: index for index, (name, _) in enumerate(NOTIFICATIONS)}


def _builtin(rule_result: RuleResult) -> bool:
    return rule_result.rule is not None and type(rule_result.rule).__module__.startswith("auditor_rules.")


def _help_uri(rule_result: RuleResult) -> str | None:
    if _builtin(rule_result):
        return f"{RULES_DOC_URI}#{rule_result.id}"
    if rule_result.rule is not None and rule_result.rule.references:
        return rule_result.rule.references[0]
    return None


def _gate_level(severity: Severity, fails_gate: bool) -> str:
    return "error" if fails_gate else BELOW_GATE[severity]


def _descriptor(rule_result: RuleResult, fail_on: Severity) -> dict[str, Any]:
    level = _gate_level(rule_result.severity, rule_result.severity.rank >= fail_on.rank)
    descriptor: dict[str, Any] = {
        "id": rule_result.id,
        "name": "".join(part.capitalize() for part in rule_result.id.split("-")),
        "shortDescription": {"text": rule_result.title},
        "defaultConfiguration": {"level": level},
    }
    rule = rule_result.rule
    help_uri = _help_uri(rule_result)
    if rule is not None:
        descriptor["fullDescription"] = {"text": rule.rationale}
        markdown = [f"**{rule.title}**", "", rule.rationale, "", f"**Fix.** {rule.remediation}"]
        if rule.references:
            markdown += ["", "References:", ""] + [f"- <{reference}>" for reference in rule.references]
        if help_uri:
            markdown += ["", f"[Rule reference]({help_uri})"]
        descriptor["help"] = {"text": f"{rule.rationale}\n\nFix: {rule.remediation}", "markdown": "\n".join(markdown)}
    if help_uri:
        descriptor["helpUri"] = help_uri
    descriptor["properties"] = {
        "tags": ["security", "kubernetes", "cilium", "network-exposure"],
        "precision": "very-high",
        "problem.severity": PROBLEM_SEVERITY[rule_result.severity],
        "security-severity": SECURITY_SEVERITY[rule_result.severity],
    }
    return descriptor


def _fingerprint(finding: Finding) -> str:
    ref = finding.object
    identity = "\0".join([finding.rule, finding.cluster or "", ref.kind, ref.namespace or "", ref.name])
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()


def artifact_location(path: str, base: str) -> dict[str, str]:
    """`path` relative to `base` under `%SRCROOT%` when below it, else an absolute file URI."""
    absolute = os.path.abspath(path)
    base = os.path.abspath(base)
    try:
        inside = os.path.commonpath([absolute, base]) == base
    except ValueError:  # different drives
        inside = False
    if inside and absolute != base:
        relative = PurePosixPath(*Path(os.path.relpath(absolute, base)).parts)
        return {"uri": quote(str(relative), safe="/"), "uriBaseId": SRCROOT}
    return {"uri": Path(absolute).as_uri()}


def _display(finding: Finding) -> str:
    display = finding.object.display
    return f"{finding.cluster}: {display}" if finding.cluster else display


def _result(finding: Finding, rule_index: dict[str, int], physical: bool, base: str,
            baseline: Baseline | None, fails_gate: bool) -> dict[str, Any]:
    ref = finding.object
    severity = finding.severity or Severity.ERROR
    logical: dict[str, Any] = {
        "name": ref.name,
        "fullyQualifiedName": _display(finding),
        "kind": "resource",
        "properties": {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name},
    }
    if finding.cluster:
        logical["properties"]["cluster"] = finding.cluster
    if finding.namespace_from is not None:  # a GitOps tree: where the object's namespace comes from
        logical["properties"]["namespaceFrom"] = namespace_origin_dict(finding.namespace_from)
    location: dict[str, Any] = {}
    source = finding.source
    if physical and source is not None and source.path and source.path != STDIN_NAME:
        location["physicalLocation"] = {"artifactLocation": artifact_location(source.path, base)}
        if source.line:
            location["physicalLocation"]["region"] = {"startLine": source.line}
            if source.column:
                location["physicalLocation"]["region"]["startColumn"] = source.column
    location["logicalLocations"] = [logical]
    out: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index[finding.rule],
        "level": _gate_level(severity, fails_gate),
        "message": {"text": f"{_display(finding)}: {finding.message}"},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT: _fingerprint(finding)},
    }
    if finding.status is FindingStatus.EXCEPTED and finding.exception is not None:
        out["suppressions"] = [{
            "kind": "external",
            "status": "accepted",
            "justification": finding.exception.reason,
            "properties": {"exception": finding.exception.name},
        }]
    if baseline is not None:
        out["baselineState"] = baseline.state(finding).value
    return out


def _notification(descriptor: str, level: str, text: str, rule: tuple[str, int] | None = None) -> dict[str, Any]:
    note: dict[str, Any] = {
        "descriptor": {"id": descriptor, "index": _NOTIFICATION_INDEX[descriptor]},
        "level": level,
        "message": {"text": text},
    }
    if rule is not None:
        note["associatedRule"] = {"id": rule[0], "index": rule[1]}
    return note


def _duplicate_locations(duplicate: DuplicateObject, physical: bool, base: str) -> list[dict[str, Any]]:
    """Each definition of a duplicated object: the file and line, and the object as a logical location."""
    ref = duplicate.object
    logical = {"name": ref.name, "fullyQualifiedName": duplicate.display, "kind": "resource"}
    locations: list[dict[str, Any]] = []
    for source in duplicate.sources:
        location: dict[str, Any] = {}
        if physical and source is not None and source.path and source.path != STDIN_NAME:
            location["physicalLocation"] = {"artifactLocation": artifact_location(source.path, base)}
            if source.line:
                location["physicalLocation"]["region"] = {"startLine": source.line}
        location["logicalLocations"] = [logical]
        locations.append(location)
    return locations


def _problem_location(problem: InputProblem, physical: bool, base: str) -> dict[str, Any]:
    """The file (and line, column) of an input problem; standard input has no file to point at."""
    location: dict[str, Any] = {}
    if physical and problem.file and problem.file != STDIN_NAME:
        location["physicalLocation"] = {"artifactLocation": artifact_location(problem.file, base)}
        if problem.line:
            region: dict[str, int] = {"startLine": problem.line}
            if problem.column:
                region["startColumn"] = problem.column
            location["physicalLocation"]["region"] = region
    return location


def _rule_index(result: AuditResult) -> dict[str, int]:
    """Rule id -> index of its descriptor in `tool.driver.rules`."""
    rule_index: dict[str, int] = {}
    for index, rule_result in enumerate(result.rules):
        # A plugin whose id clashes with a rule's is an error entry under the same
        # id: findings belong to the rule that ran.
        known = rule_index.get(rule_result.id)
        if known is None or (rule_result.rule is not None and result.rules[known].rule is None):
            rule_index[rule_result.id] = index
    return rule_index


def _physical(result: AuditResult) -> bool:
    """Whether findings point at files (offline input and snapshots), not only at objects of a cluster."""
    return result.snapshot.mode in ("offline", "snapshot")


def _rule_notifications(result: AuditResult) -> list[dict[str, Any]]:
    """A rule that reached no verdict (an error, or a not-run: an error too under --require-complete), and
    one whose verdict is partial (a note, an error under --require-complete), with what it did not see."""
    execution: list[dict[str, Any]] = []
    for index, rule_result in enumerate(result.rules):
        rule = (rule_result.id, index)
        if rule_result.status is RuleStatus.ERROR:
            execution.append(_notification("rule-error", "error", f"{rule_result.id}: error: {rule_result.reason}",
                                           rule))
        elif rule_result.status is RuleStatus.NOT_RUN:
            level = "error" if result.require_complete else "warning"
            execution.append(_notification("rule-not-run", level, f"{rule_result.id}: not run: {rule_result.reason}",
                                           rule))
        elif rule_result.status is RuleStatus.NOT_APPLICABLE:
            execution.append(_notification("rule-not-applicable", "note",
                                           f"{rule_result.id}: {rule_result.reason}", rule))
        elif rule_result.partial:
            level = "error" if result.require_complete and rule_result.open_gap else "note"
            unseen = "; ".join(str(u) for u in rule_result.unseen)
            notification = _notification("rule-partial", level, f"{rule_result.id}: {rule_result.status.value} on "
                                         f"part of the input; did not see {unseen}", rule)
            notification["properties"] = {"didNotSee": [{"what": u.what, "reason": u.reason}
                                                        for u in rule_result.unseen]}
            execution.append(notification)
    return execution


def _execution_notifications(result: AuditResult, base: str) -> list[dict[str, Any]]:
    """The rules without a full verdict, every file that could not be read, and every object defined more
    than once in the input."""
    execution = _rule_notifications(result)
    for problem in result.input_problems:
        notification = _notification("input-problem", "error", f"{problem}: none of its objects is audited")
        location = _problem_location(problem, _physical(result), base)
        if location:
            notification["locations"] = [location]
        notification["properties"] = {"code": problem.code.value}
        execution.append(notification)
    for duplicate in result.duplicates:
        notification = _notification("duplicate-object", "warning",
                                     f"{duplicate.display} is defined {duplicate.count} times in the input")
        notification["locations"] = _duplicate_locations(duplicate, _physical(result), base)
        execution.append(notification)
    return execution


def _entry_notification(usage: ExceptionUsage, sources: ConfigSources, base: str) -> dict[str, Any] | None:
    """The notification about one exception entry, located at its line of the exception file; None if it has none."""
    entry = usage.entry
    if usage.status is EntryStatus.EXPIRED:
        note = _notification(
            "exception-expired", "warning",
            f"exception {entry.name} expired on {entry.expires} and no longer applies"
            f" (it would cover {usage.matched} finding{'s' if usage.matched != 1 else ''})",
        )
    elif usage.status is EntryStatus.UNUSED and not sources.exceptions_builtin:
        note = _notification("exception-unused", "note", f"exception {entry.name} matched nothing (stale? remove it)")
    elif usage.status is EntryStatus.UNUSED:
        note = _notification("exception-builtin-unused", "note",
                             f"built-in exception {entry.name} matched nothing (part of the {BUILTIN})")
    else:
        return None
    if sources.exceptions_file is not None:
        physical: dict[str, Any] = {"artifactLocation": artifact_location(entry.path or sources.exceptions_file, base)}
        if entry.line:
            physical["region"] = {"startLine": entry.line}
        note["locations"] = [{"physicalLocation": physical}]
    return note


def _configuration_notifications(result: AuditResult, base: str, verbose: bool) -> list[dict[str, Any]]:
    """Expired exception entries, unused ones (of the built-in list only when verbose), the posture's notes."""
    sources = ConfigSources.of(result)
    configuration: list[dict[str, Any]] = []
    for usage in result.exceptions:
        if sources.reported(usage, verbose):
            note = _entry_notification(usage, sources, base)
            if note is not None:
                configuration.append(note)
    for note_text in result.notes:
        configuration.append(_notification("posture-note", "note", note_text))
    return configuration


def _invocation(result: AuditResult, base: str, verbose: bool) -> dict[str, Any]:
    return {
        "executionSuccessful": result.complete,
        "exitCode": result.exit_code,
        "toolExecutionNotifications": _execution_notifications(result, base),
        "toolConfigurationNotifications": _configuration_notifications(result, base, verbose),
        "properties": {
            "asOf": result.as_of.isoformat(),
            "failOn": result.fail_on.value,
            "requireComplete": result.require_complete,
        },
    }


def _driver(result: AuditResult) -> dict[str, Any]:
    return {
        "name": TOOL_NAME,
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [_descriptor(rule_result, result.fail_on) for rule_result in result.rules],
        "notifications": [{"id": name, "shortDescription": {"text": text}} for name, text in NOTIFICATIONS],
    }


def _run_properties(result: AuditResult) -> dict[str, Any]:
    snapshot = result.snapshot
    properties: dict[str, Any] = {"mode": snapshot.mode, "inputs": list(snapshot.inputs),
                                  "summary": summary_dict(result.summary()), "sources": sources_dict(result)}
    if result.repository is not None:  # a GitOps tree: its clusters and how it was read, as in the JSON report
        members = {member.name: member for member in result.fleet}
        properties["clusters"] = [scope_dict(s, members.get(s.name)) for s in result.repository.scopes]
        properties["repository"] = repository_dict(result.repository)
    baseline = result.baseline
    if baseline is not None:
        counts = baseline.counts()
        properties["baseline"] = {"file": baseline.path, "new": counts.new, "unchanged": counts.unchanged,
                                  "fixed": counts.fixed, "unverified": counts.unverified}
    return properties


def to_dict(result: AuditResult, base: str | None = None, verbose: bool = False) -> dict[str, Any]:
    base = base or os.getcwd()
    rule_index = _rule_index(result)
    physical = _physical(result)
    failing = {id(finding) for finding in result.failing}
    run: dict[str, Any] = {
        "tool": {"driver": _driver(result)},
        "invocations": [_invocation(result, base, verbose)],
        "results": [_result(f, rule_index, physical, base, result.baseline, id(f) in failing)
                    for f in result.findings],
        "columnKind": "unicodeCodePoints",
        "properties": _run_properties(result),
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


# Lone surrogates (a JSON input can hold "\\ud800") cannot be written as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def render(result: AuditResult, verbose: bool = False) -> str:
    return _SURROGATE.sub("\ufffd", dumps_indented(to_dict(result, verbose=verbose))) + "\n"
