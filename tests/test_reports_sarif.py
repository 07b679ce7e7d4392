"""SARIF 2.1.0 report: valid against the official OASIS schema, and what code scanning needs.

Every log is validated with jsonschema against /work/shared/schemas/sarif-schema-2.1.0.json
(skipped when ../shared is absent); the content checks read the parsed JSON
and cross-check it with the JSON report of the same run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import jsonschema
import pytest

from auditor import engine, registry
from auditor.model import ClusterInfo, Severity
from auditor.report import sarif
from tests.ci_support import CI, CORE_RULES, audit_ci
from tests.conftest import ROOT, audit_text, run_cli

LEVEL = {"error": "error", "warning": "warning", "info": "note"}


@pytest.fixture(scope="module")
def sarif_validator():
    path = ROOT.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"
    if not path.is_file():
        pytest.skip(f"official SARIF schema not present at {path}")
    schema = json.loads(path.read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def assert_valid(validator, log: dict) -> None:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    run = audit_ci(tmp_path_factory.mktemp("sarif"), "mr")
    assert run.cli.code == 1, run.cli.stderr
    return run


@pytest.fixture(scope="module")
def log(ci_run) -> dict:
    return json.loads(ci_run.text("sarif"))


def test_ci_log_is_valid_sarif(sarif_validator, log) -> None:
    assert_valid(sarif_validator, log)
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1


def test_every_registered_rule_gives_a_valid_log(sarif_validator, tmp_path) -> None:
    run = audit_ci(tmp_path, "mr", rules=None, formats=("sarif", "json"))
    assert run.cli.code in (1, 3), run.cli.stderr
    log = json.loads(run.text("sarif"))
    assert_valid(sarif_validator, log)
    assert [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]] == [r["id"] for r in run.json()["rules"]]


def test_driver_describes_each_rule_from_its_metadata(log) -> None:
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "cilium-exposure-auditor"
    assert driver["version"] and driver["informationUri"].startswith("https://")
    rules = registry.load_rules(plugins=False)
    assert [d["id"] for d in driver["rules"]] == list(CORE_RULES)
    rules_md = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for descriptor in driver["rules"]:
        rule = rules.by_id(descriptor["id"])
        assert descriptor["shortDescription"]["text"] == rule.title
        assert descriptor["fullDescription"]["text"] == rule.rationale
        assert rule.remediation in descriptor["help"]["text"]
        assert rule.remediation in descriptor["help"]["markdown"]
        assert descriptor["defaultConfiguration"]["level"] == LEVEL[rule.severity.value]
        page, _, anchor = descriptor["helpUri"].partition("#")
        assert page.endswith("/docs/rules.md") and anchor == rule.id
        assert f"\n## {anchor}\n" in rules_md  # the anchor exists in the rule reference


def test_results_match_the_json_report(ci_run, log) -> None:
    report = ci_run.json()
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert len(run["results"]) == len(report["findings"])
    for result, finding in zip(run["results"], report["findings"]):
        assert result["ruleId"] == finding["rule"] == rules[result["ruleIndex"]]["id"]
        fails_gate = finding["status"] == "failed" and finding["severity"] == "error"  # --fail-on error
        assert result["level"] == ("error" if fails_gate else {"error": "warning"}.get(finding["severity"],
                                                                                       LEVEL[finding["severity"]]))
        assert finding["message"] in result["message"]["text"]
        (location,) = result["locations"]
        (logical,) = location["logicalLocations"]
        obj = finding["object"]
        assert logical["fullyQualifiedName"] == "/".join(p for p in (obj["kind"], obj["namespace"], obj["name"]) if p)
        assert logical["properties"] == obj
        artifact = location["physicalLocation"]["artifactLocation"]
        assert artifact["uriBaseId"] == "%SRCROOT%"
        assert not artifact["uri"].startswith("/") and (CI / artifact["uri"]).is_file()
        assert Path(artifact["uri"]) == Path(finding["file"])
        assert location["physicalLocation"]["region"]["startLine"] == finding["line"]


def test_excepted_findings_are_suppressed_with_the_reason(ci_run, log) -> None:
    report = ci_run.json()
    results = log["runs"][0]["results"]
    excepted = [(r, f) for r, f in zip(results, report["findings"]) if f["status"] == "excepted"]
    assert excepted, "the CI fixture has excepted findings"
    for result, finding in excepted:
        (suppression,) = result["suppressions"]
        assert suppression["kind"] == "external"
        assert suppression["status"] == "accepted"
        assert suppression["justification"] == finding["exception"]["reason"]
    assert all("suppressions" not in r for r, f in zip(results, report["findings"]) if f["status"] == "failed")


def test_incomplete_audit_is_not_a_successful_execution(log) -> None:
    (invocation,) = log["runs"][0]["invocations"]
    # kube-proxy-leftover sees neither DaemonSets nor RBAC objects in the tree: a partial pass.
    assert invocation["executionSuccessful"] is False
    assert invocation["exitCode"] == 1
    (note,) = invocation["toolExecutionNotifications"]
    assert note["associatedRule"]["id"] == "kube-proxy-leftover"
    assert note["descriptor"]["id"] == "rule-partial"
    assert note["level"] == "note"
    assert "did not see DaemonSet kube-system/kube-proxy" in note["message"]["text"]
    assert [u["what"] for u in note["properties"]["didNotSee"]][0] == "DaemonSet kube-system/kube-proxy"
    descriptors = log["runs"][0]["tool"]["driver"]["notifications"]
    assert descriptors[note["descriptor"]["index"]]["id"] == "rule-partial"
    config = invocation["toolConfigurationNotifications"]
    (unused,) = [n for n in config if n["descriptor"]["id"] == "exception-unused"]
    assert "legacy-ftp" in unused["message"]["text"]
    (location,) = unused["locations"]  # at the entry, in the exception file
    assert location["physicalLocation"]["artifactLocation"]["uri"].endswith("exceptions.yaml")
    assert location["physicalLocation"]["region"]["startLine"] == 9  # legacy-ftp's line in the file
    assert log["runs"][0]["properties"]["sources"] == {
        "posture": {"builtin": True}, "exceptions": {"builtin": False, "file": str(CI / "exceptions.yaml")}}


def test_levels_agree_with_the_exit_code(sarif_validator, tmp_path) -> None:
    """`error` only for what fails the gate: a warning is `warning` in a green job, `error` under --fail-on warning."""
    def levels(*extra: str) -> tuple[int, dict[str, str], str]:
        run = audit_ci(tmp_path / str(len(extra)), "main", rules=("lb-pool-v2alpha1",), formats=("sarif",), extra=extra)
        log = json.loads(run.text("sarif"))
        assert_valid(sarif_validator, log)
        (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
        return run.cli.code, {r["ruleId"]: r["level"] for r in log["runs"][0]["results"]}, \
            rule["defaultConfiguration"]["level"]

    assert levels() == (0, {"lb-pool-v2alpha1": "warning"}, "warning")
    assert levels("--fail-on", "warning") == (1, {"lb-pool-v2alpha1": "error"}, "error")


def test_findings_a_baseline_holds_are_warnings(tmp_path) -> None:
    before = audit_ci(tmp_path / "main", "main", formats=("json",))
    after = audit_ci(tmp_path / "mr", "mr", formats=("sarif", "json"), extra=("--baseline", str(before.files["json"])))
    results = json.loads(after.text("sarif"))["runs"][0]["results"]
    for result, finding in zip(results, after.json()["findings"], strict=True):
        if finding["status"] == "failed" and finding["severity"] == "error":
            assert result["level"] == ("error" if finding["baseline"] == "new" else "warning"), finding


def test_unused_builtin_entries_are_listed_only_when_verbose(tmp_path) -> None:
    """The built-in list's entries cannot be removed by the user: no "stale" notification, a note only with -v."""
    def notifications(*extra: str) -> list[dict]:
        result = run_cli(str(CI / "mr"), "--rule", "nodeport-service-not-excepted", "--format", "sarif", *extra,
                         cwd=tmp_path)
        assert result.code == 1, result.stderr
        log = json.loads(result.stdout)
        assert log["runs"][0]["properties"]["sources"]["exceptions"] == {"builtin": True}
        return log["runs"][0]["invocations"][0]["toolConfigurationNotifications"]

    assert notifications() == []
    verbose = notifications("-v")
    assert {n["descriptor"]["id"] for n in verbose} == {"exception-builtin-unused"}
    assert all("stale" not in n["message"]["text"] and "locations" not in n for n in verbose)


def test_complete_audit_is_a_successful_execution(sarif_validator, tmp_path) -> None:
    run = audit_ci(tmp_path, "mr", rules=("lb-service-not-excepted",), formats=("sarif",))
    log = json.loads(run.text("sarif"))
    assert_valid(sarif_validator, log)
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    assert invocation["toolExecutionNotifications"] == []


def test_rule_errors_and_broken_plugins_are_error_notifications(sarif_validator, tmp_path) -> None:
    result = audit_text(
        tmp_path,
        "apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\nspec: {type: LoadBalancer}\n",
        coverage={"Service": "listed", "NetworkPolicy.networking.k8s.io": "failed"},
        rules=("lb-service-not-excepted", "namespace-missing-default-deny"),
    )
    broken = registry.BrokenPlugin("acme-broken", "plugin acme_rules:Broken failed to load: ImportError: boom")
    result = dataclasses.replace(
        result, rules=result.rules + [engine.RuleResult("acme-broken", "(plugin failed to load)", Severity.ERROR,
                                                         engine.RuleStatus.ERROR, broken.reason)]
    )
    log = sarif.to_dict(result, base=str(tmp_path))
    assert_valid(sarif_validator, log)
    run = log["runs"][0]
    notes = {n["associatedRule"]["id"]: n for n in run["invocations"][0]["toolExecutionNotifications"]}
    assert set(notes) == {"namespace-missing-default-deny", "acme-broken"}
    assert all(n["level"] == "error" and n["descriptor"]["id"] == "rule-error" for n in notes.values())
    assert "ImportError: boom" in notes["acme-broken"]["message"]["text"]
    rules = run["tool"]["driver"]["rules"]
    assert rules[notes["acme-broken"]["associatedRule"]["index"]]["id"] == "acme-broken"
    assert run["invocations"][0]["executionSuccessful"] is False


def test_fingerprints_follow_rule_and_object_not_message(tmp_path) -> None:
    def fingerprints(ports: str, name: str = "smtp") -> dict:
        result = audit_text(
            tmp_path,
            f"apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: mail}}\n"
            f"spec: {{type: LoadBalancer, ports: [{ports}]}}\n",
            rules=("lb-service-not-excepted",),
        )
        (res,) = sarif.to_dict(result, base=str(tmp_path))["runs"][0]["results"]
        return res

    first, second = fingerprints("{port: 25}"), fingerprints("{port: 587}, {port: 465}")
    assert first["message"] != second["message"]
    assert first["partialFingerprints"] == second["partialFingerprints"]
    assert fingerprints("{port: 25}", name="submission")["partialFingerprints"] != first["partialFingerprints"]


def test_cluster_findings_name_the_cluster(sarif_validator, tmp_path) -> None:
    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
                                  "spec: {type: NodePort}\n", rules=("nodeport-service-not-excepted",))
    result.findings = [dataclasses.replace(f, cluster="prod-west") for f in result.findings]
    for rule in result.rules:
        rule.findings = [dataclasses.replace(f, cluster="prod-west") for f in rule.findings]
    log = sarif.to_dict(result, base=str(tmp_path))
    assert_valid(sarif_validator, log)
    (res,) = log["runs"][0]["results"]
    logical = res["locations"][0]["logicalLocations"][0]
    assert logical["fullyQualifiedName"] == "prod-west: Service/mail/smtp"
    assert logical["properties"]["cluster"] == "prod-west"


def test_stdin_and_live_findings_have_only_logical_locations(sarif_validator, tmp_path) -> None:
    text = b"apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\nspec: {type: LoadBalancer}\n"
    run = run_cli("-", "--format", "sarif", "--rule", "lb-service-not-excepted", stdin=text, cwd=tmp_path)
    assert run.code == 1, run.stderr
    log = json.loads(run.stdout)
    assert_valid(sarif_validator, log)
    (location,) = log["runs"][0]["results"][0]["locations"]
    assert set(location) == {"logicalLocations"}

    (tmp_path / "svc.yaml").write_bytes(text)
    result = audit_text(tmp_path, text.decode(), rules=("lb-service-not-excepted",))
    result.snapshot = dataclasses.replace(result.snapshot, mode="live", cluster=ClusterInfo(context="prod"))
    (res,) = sarif.to_dict(result, base=str(tmp_path))["runs"][0]["results"]
    assert set(res["locations"][0]) == {"logicalLocations"}


def test_files_outside_the_working_directory_get_absolute_uris(tmp_path) -> None:
    outside, inside = tmp_path / "outside", tmp_path / "work dir"
    outside.mkdir(), inside.mkdir()
    manifest = outside / "svc.yaml"
    manifest.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\nspec: {type: LoadBalancer}\n")
    (inside / "sub").mkdir()
    spaced = inside / "sub" / "my svc.yaml"
    spaced.write_text(manifest.read_text())
    assert sarif.artifact_location(str(manifest), str(inside)) == {"uri": manifest.as_uri()}
    assert sarif.artifact_location(str(spaced), str(inside)) == {"uri": "sub/my%20svc.yaml", "uriBaseId": "%SRCROOT%"}
    assert sarif.artifact_location(os.path.relpath(spaced), str(inside))["uri"] == "sub/my%20svc.yaml"


def test_baseline_state_is_set_with_a_baseline(sarif_validator, tmp_path) -> None:
    before = audit_ci(tmp_path / "main", "main", formats=("json",))
    after = audit_ci(tmp_path / "mr", "mr", formats=("sarif", "json"), extra=("--baseline", str(before.files["json"])))
    log = json.loads(after.text("sarif"))
    assert_valid(sarif_validator, log)
    report = after.json()
    states = [r["baselineState"] for r in log["runs"][0]["results"]]
    assert states == [f["baseline"] for f in report["findings"]]
    assert log["runs"][0]["invocations"][0]["exitCode"] == report["summary"]["exitCode"] == after.cli.code


def test_same_input_gives_the_same_bytes(tmp_path) -> None:
    first = audit_ci(tmp_path / "a", "mr", formats=("sarif",))
    second = audit_ci(tmp_path / "b", "mr", formats=("sarif",))
    assert first.text("sarif") == second.text("sarif")


def test_hostile_strings_stay_valid_utf8_json(sarif_validator, tmp_path) -> None:
    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
                                  "spec: {type: LoadBalancer}\n", rules=("lb-service-not-excepted",))
    hostile = "\ud800 \x00\x1b[31m</script> \"quoted\" \\ back"
    result.findings = [dataclasses.replace(f, message=hostile) for f in result.findings]
    text = sarif.render(result)
    text.encode("utf-8")
    log = json.loads(text)
    assert_valid(sarif_validator, log)
    assert re.search("\ufffd \x00\x1b\\[31m</script> \"quoted\" \\\\ back$", log["runs"][0]["results"][0]["message"]["text"])
