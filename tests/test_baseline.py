"""Baselines (`--baseline PREVIOUS.json`) and `audit diff OLD.json NEW.json`.

Identity is rule + object kind/namespace/name (+ cluster), never the message
or the apiVersion (auditor/baseline.py). Reports written here are validated
against auditor/data/report.schema.json; the diff's JSON output against the
schema below (its contract, documented in docs/pr-gate.md).
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor import baseline
from tests.ci_support import AS_OF_ARGS, CI, audit_ci, finding_keys, report_validator
from tests.conftest import run_cli

FINDING = {"type": "object", "required": ["rule", "severity", "status", "object", "message"]}
DIFF_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["diffVersion", "old", "new", "failOn", "summary", "findings", "exposures"],
    "properties": {
        "diffVersion": {"const": "1"},
        "old": {"type": "object", "required": ["file", "asOf"]},
        "new": {"type": "object", "required": ["file", "asOf"]},
        "failOn": {"enum": ["error", "warning", "info"]},
        "summary": {
            "type": "object",
            "additionalProperties": False,
            "required": ["new", "newFailing", "fixed", "unchanged", "unverified", "newWays", "removedWays",
                         "changedWays", "exitCode"],
            "properties": {k: {"type": "integer", "minimum": 0} for k in (
                "new", "newFailing", "fixed", "unchanged", "unverified", "newWays", "removedWays", "changedWays")}
            | {"exitCode": {"enum": [0, 1]}},
        },
        "findings": {
            "type": "object",
            "additionalProperties": False,
            "required": ["new", "fixed", "unchanged", "unverified"],
            "properties": {k: {"type": "array", "items": FINDING} for k in ("new", "fixed", "unchanged", "unverified")},
        },
        "exposures": {
            "type": "object",
            "additionalProperties": False,
            "required": ["compared", "new", "removed", "changed"],
            "properties": {"compared": {"type": "boolean"}, "reason": {"type": "string"},
                           "new": {"type": "array"}, "removed": {"type": "array"},
                           "changed": {"type": "array", "items": {"type": "object", "required": ["old", "new"]}}},
        },
    },
}


def entry(rule="lb-service-not-excepted", kind="Service", namespace="mail", name="smtp", status="failed",
          severity="error", message="type LoadBalancer exposes 25/TCP", api_version="v1", cluster=None) -> dict:
    out = {"rule": rule, "severity": severity, "status": status, "message": message,
           "object": {"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name}}
    if status == "excepted":
        out["exception"] = {"name": "x", "reason": "y"}
    if cluster:
        out["cluster"] = cluster
    return out


def report(*findings: dict, rules: dict[str, str] | None = None, fail_on: str = "error") -> dict:
    ids = rules or {f["rule"]: "failed" for f in findings} or {"lb-service-not-excepted": "passed"}
    return {
        "findings": list(findings),
        "rules": [{"id": rule, "status": status} for rule, status in ids.items()],
        "summary": {"failOn": fail_on},
        "target": {"mode": "offline", "inputs": []},
    }


def diff(old: dict, new: dict):
    return baseline.diff_reports(old, new)


# --- the comparison, on JSON report entries ---------------------------------------


def test_message_and_api_version_changes_keep_the_identity() -> None:
    old = report(entry(message="type LoadBalancer exposes 25/TCP", api_version="v1"))
    new = report(entry(message="type LoadBalancer exposes 25/TCP, 587/TCP on 192.168.10.241", api_version="v1beta1"))
    result = diff(old, new)
    assert (len(result.new), len(result.unchanged), result.fixed) == (0, 1, [])


def test_new_and_fixed() -> None:
    result = diff(report(entry(name="smtp")), report(entry(name="submission")))
    assert [e["object"]["name"] for e in result.new] == ["submission"]
    assert [e["object"]["name"] for e in result.fixed] == ["smtp"]


def test_same_object_other_rule_is_new() -> None:
    result = diff(report(entry(rule="lb-service-not-excepted")),
                  report(entry(rule="lb-service-not-excepted"), entry(rule="etp-local-under-l2")))
    assert [e["rule"] for e in result.new] == ["etp-local-under-l2"]


def test_namespace_is_part_of_the_identity_and_none_is_not_empty_confusion() -> None:
    result = diff(report(entry(kind="CiliumLoadBalancerIPPool", namespace=None, name="pool", rule="lb-pool-v2alpha1")),
                  report(entry(kind="CiliumLoadBalancerIPPool", namespace="x", name="pool", rule="lb-pool-v2alpha1")))
    assert len(result.new) == 1 and len(result.fixed) == 1


def test_a_failure_that_was_only_excepted_in_the_baseline_is_new() -> None:
    """An exception that expired (or was removed) since the baseline must fail the gate again."""
    result = diff(report(entry(status="excepted")), report(entry(status="failed")))
    assert len(result.new) == 1 and not result.unchanged and not result.fixed


def test_a_failure_excepted_since_is_unchanged() -> None:
    result = diff(report(entry(status="failed")), report(entry(status="excepted")))
    assert len(result.unchanged) == 1 and not result.new


def test_clusters_are_part_of_the_identity() -> None:
    old = report(entry(cluster="prod-a"))
    new = report(entry(cluster="prod-a"), entry(cluster="prod-b"))
    result = diff(old, new)
    assert [e["cluster"] for e in result.new] == ["prod-b"]


def test_findings_of_rules_without_verdict_are_unverified_not_fixed() -> None:
    old = report(entry(rule="namespace-missing-default-deny", kind="Namespace", namespace=None, name="mail"))
    new = report(rules={"namespace-missing-default-deny": "not-run"})
    result = diff(old, new)
    assert not result.fixed and len(result.unverified) == 1
    assert not diff(old, report(rules={"lb-service-not-excepted": "passed"})).fixed  # rule not selected at all


def test_findings_of_clusters_not_read_are_unverified() -> None:
    old = report(entry(cluster="prod-a"), entry(cluster="prod-b"))
    new = report(entry(cluster="prod-a"), rules={"lb-service-not-excepted": "failed"})
    new["target"]["clusters"] = [{"context": "prod-a"}]
    result = diff(old, new)
    assert [e["cluster"] for e in result.unverified] == ["prod-b"] and not result.fixed


KEYS = st.tuples(st.sampled_from(["lb-service-not-excepted", "etp-local-under-l2"]), st.sampled_from(["a", "b", "c"]),
                 st.sampled_from(["failed", "excepted"]), st.text(max_size=5))


@settings(max_examples=200, deadline=None)
@given(st.lists(KEYS, max_size=6), st.lists(KEYS, max_size=6))
def test_every_finding_lands_in_exactly_one_bucket(old_keys, new_keys) -> None:
    old = report(*[entry(rule=r, name=n, status=s, message=m) for r, n, s, m in old_keys],
                 rules={"lb-service-not-excepted": "failed", "etp-local-under-l2": "failed"})
    new = report(*[entry(rule=r, name=n, status=s, message=m) for r, n, s, m in new_keys],
                 rules={"lb-service-not-excepted": "failed", "etp-local-under-l2": "failed"})
    result = diff(old, new)
    assert len(result.new) + len(result.unchanged) == len(new["findings"])
    new_ids = {baseline.key_of_entry(e) for e in new["findings"]}
    gone = [e for e in old["findings"] if baseline.key_of_entry(e) not in new_ids]
    assert len(result.fixed) + len(result.unverified) == len(gone) and not result.unverified
    assert not diff(new, new).new and not diff(new, new).fixed  # a report compared with itself changes nothing


# --- --baseline on an audit ------------------------------------------------------


@pytest.fixture(scope="module")
def main_report(tmp_path_factory):
    run = audit_ci(tmp_path_factory.mktemp("main"), "main", formats=("json",))
    assert run.cli.code == 1, run.cli.stderr
    return run.files["json"]


def test_only_new_findings_fail_the_gate(main_report, tmp_path) -> None:
    run = audit_ci(tmp_path, "mr", formats=("json",), extra=("--baseline", str(main_report)))
    assert run.cli.code == 1
    result = run.json()
    assert not list(report_validator().iter_errors(result))
    new = {k for f in result["findings"] if f["baseline"] == "new" for k in finding_keys({"findings": [f]})}
    assert new == {("etp-local-under-l2", "Service/shop/payment-callback"),
                   ("lb-service-not-excepted", "Service/shop/payment-callback")}
    assert all(f["baseline"] in ("new", "unchanged") for f in result["findings"])
    assert result["summary"]["failing"] == 2 and result["summary"]["failed"] == 4
    assert finding_keys({"findings": result["baseline"]["fixed"]}) == {
        ("lb-pool-v2alpha1", "CiliumLoadBalancerIPPool/lan-pool"),
        ("lb-service-not-excepted", "Service/mail/smtp"),
    }
    assert result["baseline"]["file"] == str(main_report)
    # The edge Gateway's Service is sanctioned by the posture (exposure.mode gateway), not excepted (issue 12).
    assert (result["baseline"]["new"], result["baseline"]["unchanged"]) == (2, 3)


def test_known_drift_alone_passes_the_gate(main_report, tmp_path) -> None:
    run = audit_ci(tmp_path, "main", formats=("json",), extra=("--baseline", str(main_report)))
    assert run.cli.code == 0, run.cli.stdout
    result = run.json()
    assert result["summary"]["exitCode"] == 0 and result["summary"]["failing"] == 0 and result["summary"]["failed"] == 4
    assert {f["baseline"] for f in result["findings"]} == {"unchanged"}
    assert result["baseline"]["fixed"] == []


def test_text_report_marks_findings_and_lists_fixed_ones(main_report, tmp_path) -> None:
    run = audit_ci(tmp_path, "mr", formats=(), extra=("--baseline", str(main_report)), env={"COLUMNS": "200"})
    lines = run.cli.stdout.splitlines()
    assert any(line.lstrip().startswith("failed (new)") and "Service/shop/payment-callback" in line for line in lines)
    assert any(line.lstrip().startswith("failed (baseline)") and "Service/mail/mailpit-ui" in line for line in lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("Baseline "))
    assert "2 new, 3 unchanged, 2 fixed" in lines[start]
    fixed = {tuple(line.split()[1:3]) for line in lines[start + 1:start + 3]}
    assert fixed == {("lb-service-not-excepted", "Service/mail/smtp"), ("lb-pool-v2alpha1", "CiliumLoadBalancerIPPool/lan-pool")}
    assert lines[-1] == "Verdict: FAIL (2 new findings at or above error; exit 1)"


def test_baseline_can_be_the_report_being_rewritten(tmp_path) -> None:
    """`--baseline reports/audit.json --json reports/audit.json`: read first, then replaced."""
    path = tmp_path / "audit.json"
    common = ("main", "--exceptions", str(CI / "exceptions.yaml"), *AS_OF_ARGS)
    assert run_cli(*common, "--json", str(path), cwd=CI).code == 1
    again = run_cli(*common, "--baseline", str(path), "--json", str(path), cwd=CI)
    assert again.code == 0, again.stdout + again.stderr
    assert json.loads(path.read_text())["baseline"]["file"] == str(path)


@pytest.mark.parametrize("content, message", [
    (None, "cannot read baseline"),
    ("{", "baseline is not JSON"),
    ("[]", "baseline is not a valid audit JSON report"),
    ('{"reportVersion": "2"}', "baseline is not a valid audit JSON report"),
])
def test_an_unusable_baseline_stops_before_anything_is_written(tmp_path, content, message) -> None:
    path = tmp_path / "previous.json"
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out.json"
    result = run_cli("mr", "--baseline", str(path), "--json", str(out), cwd=CI)
    assert result.code == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr
    assert not out.exists() and result.stdout == ""


def test_a_report_from_another_tool_version_is_refused_with_its_field(tmp_path, main_report) -> None:
    data = json.loads(main_report.read_text())
    data["findings"][0]["status"] = "waived"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    result = run_cli("mr", "--baseline", str(path), cwd=CI)
    assert result.code == 2 and "findings[0].status" in result.stderr


# --- audit diff -------------------------------------------------------------------


@pytest.fixture(scope="module")
def mr_report(tmp_path_factory):
    run = audit_ci(tmp_path_factory.mktemp("mr"), "mr", formats=("json",))
    return run.files["json"]


def test_diff_json(main_report, mr_report) -> None:
    result = run_cli("diff", str(main_report), str(mr_report), "--format", "json")
    assert result.code == 1, result.stderr
    payload = json.loads(result.stdout)
    jsonschema.validate(payload, DIFF_SCHEMA)
    found = {bucket: finding_keys({"findings": payload["findings"][bucket]}) for bucket in payload["findings"]}
    assert found["new"] == {("etp-local-under-l2", "Service/shop/payment-callback"),
                            ("lb-service-not-excepted", "Service/shop/payment-callback")}
    assert found["fixed"] == {("lb-pool-v2alpha1", "CiliumLoadBalancerIPPool/lan-pool"),
                              ("lb-service-not-excepted", "Service/mail/smtp")}
    # The edge Gateway's Service is sanctioned by the posture (exposure.mode gateway), not excepted (issue 12).
    assert len(found["unchanged"]) == 3 and not found["unverified"]
    assert payload["summary"] == {"new": 2, "newFailing": 2, "fixed": 2, "unchanged": 3, "unverified": 0,
                                  "newWays": 2, "removedWays": 2, "changedWays": 0, "exitCode": 1}
    # Ways in: the MR adds the payment-callback LoadBalancer (its LB IP and node port) and removes SMTP's.
    ways = payload["exposures"]
    assert ways["compared"] is True and not ways["changed"]
    assert sorted((w["channel"], w["subject"]["object"]["name"]) for w in ways["new"]) == [
        ("load-balancer", "payment-callback"), ("node-port", "payment-callback")]
    assert sorted((w["channel"], w["subject"]["object"]["name"]) for w in ways["removed"]) == [
        ("load-balancer", "smtp"), ("node-port", "smtp")]


def test_diff_text_lists_each_finding_once(main_report, mr_report) -> None:
    result = run_cli("diff", str(main_report), str(mr_report))
    assert result.code == 1
    findings, _, ways = result.stdout.partition("\nWays in (")
    labels = [line.split()[0] for line in findings.splitlines() if line.startswith("  ")]
    # The edge Gateway's Service is sanctioned by the posture (exposure.mode gateway), not excepted (issue 12).
    assert sorted(labels) == sorted(["new"] * 2 + ["fixed"] * 2 + ["unchanged"] * 3)
    way_labels = [line.split()[0] for line in ways.splitlines() if line.startswith("  ")]
    assert sorted(way_labels) == ["new", "new", "removed", "removed"] and "2 new, 2 removed, 0 changed" in ways
    assert result.stdout.splitlines()[-1].startswith("Verdict: FAIL (2 new failing findings")


def test_diff_exits_0_when_nothing_new_fails(main_report, mr_report) -> None:
    assert run_cli("diff", str(main_report), str(main_report)).code == 0
    assert run_cli("diff", str(mr_report), str(mr_report)).code == 0
    back = run_cli("diff", str(mr_report), str(main_report))  # reverting the MR brings back the SMTP Service
    assert back.code == 1 and "1 new failing finding" in back.stdout


def test_diff_fail_on_threshold(tmp_path) -> None:
    old, new = report(), report(entry(rule="lb-pool-v2alpha1", severity="warning", kind="CiliumLoadBalancerIPPool",
                                      namespace=None, name="pool"))
    for data, name in ((old, "old.json"), (new, "new.json")):
        (tmp_path / name).write_text(json.dumps(_full_report(data)))
    assert run_cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json")).code == 0
    assert run_cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--fail-on", "warning").code == 1


def _full_report(partial: dict) -> dict:
    """A schema-valid report holding `partial`'s findings and rules."""
    findings = copy.deepcopy(partial["findings"])
    return {
        "reportVersion": "1",
        "tool": {"name": "cilium-exposure-auditor", "version": "0.1.0"},
        "asOf": "2026-11-29",
        "target": {"mode": "offline", "inputs": ["x.yaml"]},
        "summary": {"failed": len(findings), "failing": 0, "excepted": 0,
                    "failedBySeverity": {"error": 0, "warning": len(findings), "info": 0},
                    "rulesPassed": 0, "rulesFailed": 1, "rulesNotRun": 0, "rulesError": 0,
                    "complete": True, "failOn": partial["summary"]["failOn"], "exitCode": 0},
        "rules": [{"id": r["id"], "title": "t", "severity": "warning", "status": r["status"], "failed": 0,
                   "excepted": 0, "checked": 0} for r in partial["rules"]],
        "findings": findings,
        "exceptions": [],
        "coverage": [],
    }


@pytest.mark.parametrize("content", [None, "not json", '{"reportVersion": "1"}', "[1, 2]"])
def test_diff_refuses_unreadable_or_invalid_reports_in_one_line(tmp_path, mr_report, content) -> None:
    path = tmp_path / "old.json"
    if content is not None:
        path.write_text(content)
    for args in ((str(path), str(mr_report)), (str(mr_report), str(path))):
        result = run_cli("diff", *args)
        assert result.code == 2 and result.stdout == ""
        assert result.stderr.startswith(f"audit: error: {path}") and result.stderr.count("\n") == 1


def test_fleet_audit_verifies_only_the_clusters_it_read(tmp_path) -> None:
    """A baseline finding about a cluster whose read failed is unverified; another cluster's gone finding is fixed."""
    import dataclasses

    from auditor.engine import FleetCluster
    from auditor.model import ClusterInfo
    from tests.conftest import audit_text

    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
                                  "spec: {type: LoadBalancer}\n", rules=("lb-service-not-excepted",))
    (finding,) = result.findings
    tagged = dataclasses.replace(finding, cluster="prod-a")
    result.findings = [tagged]
    result.rules[0].findings = [tagged]
    result.snapshot = dataclasses.replace(result.snapshot, mode="fleet")
    result.fleet = [
        FleetCluster("prod-a", ClusterInfo(context="ctx-a", label="prod-a"), exit_code=1, complete=True),
        FleetCluster("prod-b", ClusterInfo(context="ctx-b", label="prod-b"), exit_code=3, complete=False,
                     error="connection refused"),
    ]
    previous = report(entry(cluster="prod-a"), entry(cluster="prod-a", name="submission"), entry(cluster="prod-b"))
    applied = result.with_baseline(previous, "previous.json")
    assert applied.baseline is not None
    comparison = applied.baseline.comparison
    assert [e["object"]["name"] for e in comparison.fixed] == ["submission"]
    assert [e["cluster"] for e in comparison.unverified] == ["prod-b"]
    assert applied.baseline.state(tagged) is baseline.UNCHANGED and applied.failing == [] and applied.exit_code == 0
