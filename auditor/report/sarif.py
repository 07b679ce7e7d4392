"""SARIF 2.1.0 for code-scanning tools (GitHub code scanning, GitLab, IDE viewers).

One run. `tool.driver.rules` describes every selected rule (title, rationale,
remediation, default level, a link to its section of docs/rules.md); each
finding is a result with its rule, level, message, the object as a logical
location (always) and, for manifest input, the file and line as a physical
location relative to the working directory (`uriBaseId` `%SRCROOT%`, the
convention code-scanning uploaders resolve against the checkout).

- Excepted findings are results with an external, accepted suppression whose
  justification is the exception's reason: they stay visible, as everywhere.
- `partialFingerprints` hash the rule and the object (kind, namespace, name,
  cluster), never the message, so an alert follows the object across runs.
- The invocation records the exit code and `executionSuccessful: false` when
  the audit is incomplete (a rule did not run or failed); each such rule is a
  tool execution notification. Expired and unused exception entries are tool
  configuration notifications.
- With `--baseline`, each result carries `baselineState` (`new`/`unchanged`).

No timestamps and no absolute paths for files below the working directory:
the same input audited from the same directory gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import PurePosixPath, Path
from typing import Any
from urllib.parse import quote

from auditor import TOOL_NAME, __version__
from auditor.baseline import baseline_of
from auditor.engine import AuditResult, RuleResult
from auditor.exceptions_list import EntryStatus
from auditor.model import Finding, FindingStatus, RuleStatus, Severity

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/univ-lehavre/cilium-exposure-auditor"
RULES_DOC_URI = f"{INFORMATION_URI}/blob/main/docs/rules.md"
SRCROOT = "%SRCROOT%"
FINGERPRINT = "objectIdentity/v1"
STDIN_NAME = "<stdin>"

LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# GitHub code scanning ranks alerts of rules tagged `security` by this score
# (>= 7.0 high, >= 4.0 medium, else low).
SECURITY_SEVERITY = {Severity.ERROR: "7.5", Severity.WARNING: "5.0", Severity.INFO: "2.0"}

NOTIFICATIONS = [
    ("rule-not-run", "A rule could not run: the input does not show what it needs."),
    ("rule-error", "A rule reached no verdict: a read failed, the rule crashed, or a plugin failed to load."),
    ("exception-expired", "An exception-list entry expired: the findings it covered fail again."),
    ("exception-unused", "An exception-list entry matched nothing: it is stale."),
    ("posture-note", "A remark about the posture the audit was judged against."),
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


def _descriptor(rule_result: RuleResult) -> dict[str, Any]:
    level = LEVELS[rule_result.severity]
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
        "problem.severity": {"error": "error", "warning": "warning", "note": "recommendation"}[level],
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


def _result(finding: Finding, rule_index: dict[str, int], physical: bool, base: str, baseline) -> dict[str, Any]:
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
        "level": LEVELS[severity],
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
        out["baselineState"] = baseline.state(finding)
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


def to_dict(result: AuditResult, base: str | None = None) -> dict[str, Any]:
    base = base or os.getcwd()
    snapshot = result.snapshot
    baseline = baseline_of(result)
    rule_index: dict[str, int] = {}
    for index, rule_result in enumerate(result.rules):
        # A plugin whose id clashes with a rule's is an error entry under the same
        # id: findings belong to the rule that ran.
        known = rule_index.get(rule_result.id)
        if known is None or (rule_result.rule is not None and result.rules[known].rule is None):
            rule_index[rule_result.id] = index
    physical = snapshot.mode in ("offline", "snapshot")

    execution: list[dict[str, Any]] = []
    for index, rule_result in enumerate(result.rules):
        if rule_result.status is RuleStatus.ERROR:
            execution.append(_notification("rule-error", "error", f"{rule_result.id}: error: {rule_result.reason}",
                                           (rule_result.id, index)))
        elif rule_result.status is RuleStatus.NOT_RUN:
            level = "error" if result.require_complete else "warning"
            execution.append(_notification("rule-not-run", level, f"{rule_result.id}: not run: {rule_result.reason}",
                                           (rule_result.id, index)))
    configuration: list[dict[str, Any]] = []
    for usage in result.exceptions:
        if usage.status is EntryStatus.EXPIRED:
            configuration.append(_notification(
                "exception-expired", "warning",
                f"exception {usage.entry.name} expired on {usage.entry.expires} and no longer applies"
                f" (it would cover {usage.matched} finding{'s' if usage.matched != 1 else ''})",
            ))
        elif usage.status is EntryStatus.UNUSED:
            configuration.append(_notification("exception-unused", "note",
                                               f"exception {usage.entry.name} matched nothing (stale? remove it)"))
    for note in result.notes:
        configuration.append(_notification("posture-note", "note", note))

    invocation: dict[str, Any] = {
        "executionSuccessful": result.complete,
        "exitCode": result.exit_code,
        "toolExecutionNotifications": execution,
        "toolConfigurationNotifications": configuration,
        "properties": {
            "asOf": result.as_of.isoformat(),
            "failOn": result.fail_on.value,
            "requireComplete": result.require_complete,
        },
    }
    run_properties: dict[str, Any] = {"mode": snapshot.mode, "inputs": list(snapshot.inputs), "summary": result.summary()}
    if baseline is not None:
        run_properties["baseline"] = {"file": baseline.path, **baseline.counts()}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_descriptor(rule_result) for rule_result in result.rules],
                "notifications": [
                    {"id": name, "shortDescription": {"text": text}} for name, text in NOTIFICATIONS
                ],
            }
        },
        "invocations": [invocation],
        "results": [_result(f, rule_index, physical, base, baseline) for f in result.findings],
        "columnKind": "unicodeCodePoints",
        "properties": run_properties,
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


# Lone surrogates (a JSON input can hold "\\ud800") cannot be written as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def render(result: AuditResult) -> str:
    return _SURROGATE.sub("\ufffd", json.dumps(to_dict(result), indent=2, ensure_ascii=False)) + "\n"
