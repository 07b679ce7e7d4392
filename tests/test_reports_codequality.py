"""GitLab Code Quality report: GitLab's documented fields, cross-checked with the JSON report of the same run.

GitLab reads an array of issues with `description`, `check_name`, `fingerprint`,
`severity` (info, minor, major, critical, blocker), `location.path` and
`location.lines.begin` (https://docs.gitlab.com/ci/testing/code_quality/#implement-a-custom-tool;
other Code Climate fields are ignored, a byte-order mark is refused).
`ISSUES_SCHEMA` states exactly that, and every report must validate.
"""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest

from auditor.report import codequality
from tests.ci_support import CI, audit_ci
from tests.conftest import audit_text, run_cli

ISSUES_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "additionalProperties": False,
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1, "not": {"pattern": "^/"}},
                    "lines": {"type": "object", "additionalProperties": False, "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1}}},
                },
            },
        },
    },
}
SEVERITY = {"error": "critical", "warning": "major", "info": "minor"}


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    run = audit_ci(tmp_path_factory.mktemp("codequality"), "mr", rules=None, formats=("codequality", "json"))
    assert run.cli.code == 1, run.cli.stderr
    return run


def test_valid_for_gitlab_and_one_issue_per_finding(ci_run) -> None:
    raw = ci_run.files["codequality"].read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf")  # GitLab refuses a byte-order mark
    issues = json.loads(raw)
    jsonschema.validate(issues, ISSUES_SCHEMA)
    findings = ci_run.json()["findings"]
    assert len(issues) == len(findings) > 0
    for issue, finding in zip(issues, findings, strict=True):
        obj = finding["object"]
        display = "/".join(part for part in (obj["kind"], obj["namespace"], obj["name"]) if part)
        assert issue["check_name"] == finding["rule"]
        assert issue["description"].startswith(f"{display}: {finding['message']}")
        assert issue["location"] == {"path": finding["file"], "lines": {"begin": finding["line"]}}
        assert (CI / issue["location"]["path"]).is_file()  # relative to the working directory (the repository)
        if finding["status"] == "excepted":
            assert issue["severity"] == "info"
            exception = finding["exception"]
            assert f"(excepted by {exception['name']}: {exception['reason']})" in issue["description"]
        else:
            assert issue["severity"] == SEVERITY[finding["severity"]]


def test_fingerprints_are_unique_and_follow_rule_and_object(ci_run, tmp_path) -> None:
    issues = json.loads(ci_run.text("codequality"))
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    main = audit_ci(tmp_path, "main", rules=None, formats=("codequality", "json"))
    def by_rule_and_object(found: list[dict]) -> dict[tuple[str, str], str]:
        return {(i["check_name"], i["description"].split(":")[0]): i["fingerprint"] for i in found}

    before, after = by_rule_and_object(json.loads(main.text("codequality"))), by_rule_and_object(issues)
    same = set(before) & set(after)
    assert same and all(before[key] == after[key] for key in same)  # other tree, other lines: same issue


def test_two_findings_of_one_rule_on_one_object_stay_two_issues(tmp_path) -> None:
    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
                                  "spec: {type: LoadBalancer}\n", rules=("lb-service-not-excepted",))
    (finding,) = result.findings
    result.findings = [finding, dataclasses.replace(finding, message="another")]
    issues = codequality.to_list(result, base=str(tmp_path))
    assert len({issue["fingerprint"] for issue in issues}) == 2


def test_standard_input_and_clusters_name_where_they_were_read(tmp_path) -> None:
    text = b"apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\nspec: {type: LoadBalancer}\n"
    run = run_cli("-", "-o", "codequality", "--rule", "lb-service-not-excepted", stdin=text, cwd=tmp_path)
    assert run.code == 1, run.stderr
    (issue,) = json.loads(run.stdout)
    jsonschema.validate([issue], ISSUES_SCHEMA)
    assert issue["location"] == {"path": "<stdin>", "lines": {"begin": 1}}
