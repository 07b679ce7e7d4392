"""`audit exposure`: every way in, one line each, through the real command, offline and live; and the ways in
`audit diff` compares."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, CliResult, run_cli
from tests.test_live_fixtures import kubeconfig, run, serve
from tests.test_trace_cli import TRACE, _role_without, validator

AS_OF = ("--as-of", "2026-11-29")
EXPOSURE = FIXTURES / "clusters" / "exposure.yaml"
WHOLE = tuple(str(TRACE / folder) for folder in ("common", "gateway", "app"))
SCHEMA = validator("exposures.schema.json")
ESC = "\x1b"


def exposure(*args: str, env: dict[str, str] | None = None) -> CliResult:
    return run_cli("exposure", *args, *AS_OF, env=env)


def as_json(result: CliResult) -> dict[str, Any]:
    assert "Traceback" not in result.stderr, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    SCHEMA.validate(data)
    assert data["summary"]["exitCode"] == result.code
    return data


def test_sanctioned_edge_only_exits_0_and_is_the_reports_exposures() -> None:
    result = exposure(*WHOLE, "-o", "json")
    assert result.code == 0, result.stdout
    data = as_json(result)
    report = json.loads(run_cli(*WHOLE, "-o", "json", *AS_OF).stdout)
    assert data["exposures"] == report["exposures"]  # the report's exposures section, reused
    assert data["summary"]["ways"] == 2 and data["summary"]["sanctioned"] == 2 and data["summary"]["drift"] == 0
    assert {r["id"] for r in data["rules"]} == {
        "lb-service-not-excepted", "nodeport-service-not-excepted", "service-external-ips",
        "hostport-not-excepted", "hostnetwork-pod-not-excepted"}


def _address_order(way: dict[str, Any]) -> tuple[int, int, int]:
    value = way["address"]["value"]
    if value:
        ip = ipaddress.ip_address(value)
        return (0, ip.version, int(ip))
    return (2 if way["address"]["kind"] == "node-ips" else 3, 0, 0)


def test_drift_exits_1_one_way_per_line_sorted_by_address_then_port() -> None:
    result = exposure(str(EXPOSURE), "-o", "json")
    assert result.code == 1
    ways = as_json(result)["exposures"]
    keys = [(_address_order(w), w["port"] if w["port"] is not None else 1 << 20) for w in ways]
    assert keys == sorted(keys)
    assert {w["verdict"]["status"] for w in ways} == {"sanctioned", "drift"}
    smtp = next(w for w in ways if w["channel"] == "load-balancer" and w["subject"]["object"]["name"] == "smtp")
    assert smtp["verdict"] == {"status": "drift", "rule": "lb-service-not-excepted",
                               "reason": "type LoadBalancer exposes 25/TCP"}


def test_text_is_a_table_on_wide_terminals_and_blocks_on_narrow_ones() -> None:
    wide = exposure(str(EXPOSURE), env={"COLUMNS": "260"})
    narrow = exposure(str(EXPOSURE), env={"COLUMNS": "80"})
    assert wide.code == narrow.code == 1
    lines = wide.stdout.splitlines()
    header = next(line for line in lines if line.startswith("  ADDRESS"))
    assert header.split() == ["ADDRESS", "PORT", "ANNOUNCED", "FORWARDED", "BY", "BACKEND", "VERDICT"]
    assert max(len(line) for line in lines) <= 260
    # One row per way in: the address starts a line once per way.
    count = as_json(exposure(str(EXPOSURE), "-o", "json"))["summary"]["ways"]
    rows = [line for line in lines if line.startswith("  ") and line[2:3] not in (" ", "-") and "ADDRESS" not in line]
    assert len(rows) == count
    assert all(len(line) <= 80 for line in narrow.stdout.splitlines() if " " in line.strip())
    assert "  verdict    drift (lb-service-not-excepted)" in narrow.stdout
    assert narrow.stdout.rstrip().endswith("Verdict: FAIL (11 ways in drift at or above error; exit 1)")


def test_quiet_lists_only_what_is_drift() -> None:
    quiet = exposure(str(EXPOSURE), "-q")
    assert quiet.code == 1 and "sanctioned by" not in quiet.stdout and "drift (" in quiet.stdout


def test_a_way_in_no_rule_judged_exits_3() -> None:
    result = exposure(str(EXPOSURE), "--rule", "lb-service-not-excepted", "-o", "json")
    assert result.code == 3
    data = as_json(result)
    assert "rule nodeport-service-not-excepted was not selected" in data["summary"]["notJudged"]
    text = exposure(str(EXPOSURE), "--rule", "lb-service-not-excepted")
    assert text.code == 3 and "Verdict: INCOMPLETE" in text.stdout


def test_a_rule_that_did_not_run_offline_fails_only_with_require_complete(tmp_path: Path) -> None:
    """A GitOps tree without workloads (Helm renders them): the hostPort rule cannot run, but no way in is
    left unjudged; as for audits, that fails the run only with --require-complete."""
    manifest = tmp_path / "edge.yaml"
    manifest.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
                        "spec: {type: ClusterIP, ports: [{port: 25}]}\n", encoding="utf-8")
    plain = as_json(exposure(str(manifest), "-o", "json"))
    assert plain["summary"]["exitCode"] == 0 and plain["summary"]["notJudged"] == []
    assert any(why.startswith("rule hostport-not-excepted is not-run") for why in plain["summary"]["notChecked"])
    assert "Verdict: PASS on what could be checked" in exposure(str(manifest)).stdout
    strict = as_json(exposure(str(manifest), "--require-complete", "-o", "json"))
    assert strict["summary"]["exitCode"] == 3 and strict["summary"]["notChecked"] == []


def test_fail_on_and_the_exception_list_decide_as_in_an_audit(tmp_path: Path) -> None:
    exceptions = tmp_path / "exceptions.yaml"
    exceptions.write_text("exceptions:\n" + "".join(
        f"  - name: all-{rule}\n    rules: [{rule}]\n    match: {{kind: '*'}}\n"
        "    reason: Lab cluster, open on purpose.\n"
        for rule in ("lb-service-not-excepted", "nodeport-service-not-excepted", "service-external-ips",
                     "hostport-not-excepted", "hostnetwork-pod-not-excepted")), encoding="utf-8")
    result = exposure(str(EXPOSURE), "--exceptions", str(exceptions), "-o", "json")
    assert result.code == 0, result.stdout
    ways = as_json(result)["exposures"]
    excepted = [w for w in ways if w["verdict"]["status"] == "excepted"]
    assert excepted and all(w["verdict"]["reason"] == "Lab cluster, open on purpose." for w in excepted)
    text = exposure(str(EXPOSURE), "--exceptions", str(exceptions), env={"COLUMNS": "80"})
    assert (f"excepted by all-lb-service-not-excepted ({exceptions}:2): Lab cluster, open on purpose."
            in " ".join(text.stdout.split()))


def test_formats_and_files(tmp_path: Path) -> None:
    out = tmp_path / "ways.json"
    result = exposure(str(EXPOSURE), "--json", str(out))
    assert result.code == 1 and result.stdout.startswith("Ways in of ")
    assert json.loads(out.read_text(encoding="utf-8"))["exposures"] == as_json(
        exposure(str(EXPOSURE), "-o", "json"))["exposures"]
    markdown = exposure(str(EXPOSURE), "-o", "markdown")
    assert markdown.code == 1 and markdown.stdout == run_cli(str(EXPOSURE), "-o", "markdown", *AS_OF).stdout
    junit = exposure(str(EXPOSURE), "-o", "junit")
    assert junit.code == 2 and "audit exposure writes text, json, markdown, html, not junit" in junit.stderr


def test_usage_errors() -> None:
    assert exposure().code == 2
    both = exposure(str(EXPOSURE), "--live")
    assert both.code == 2 and "not both" in both.stderr
    cluster_only = exposure(str(EXPOSURE), "--context", "lab")
    assert cluster_only.code == 2 and "--context: not without --live" in cluster_only.stderr
    missing = exposure(str(FIXTURES / "nowhere.yaml"))
    assert missing.code == 2 and "Traceback" not in missing.stderr


def test_hostile_names_are_shown_escaped(tmp_path: Path) -> None:
    manifest = tmp_path / "evil.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: \"evil\\e]0;owned\\a\\u202e\"\n  namespace: shop\n"
        "spec:\n  type: NodePort\n  ports: [{port: 80, nodePort: 30080}]\n", encoding="utf-8")
    result = exposure(str(manifest))
    assert result.code == 1  # drift (the hostPort/hostNetwork rules do not run: no workload, nothing unjudged)
    assert ESC not in result.stdout and "\u202e" not in result.stdout and chr(7) not in result.stdout
    assert "evil\\x1b]0;owned\\x07\\u202e" in result.stdout


# --- live ------------------------------------------------------------------------------------


def test_live_exposure_is_the_live_reports_exposures(tmp_path: Path) -> None:
    with serve("drifted") as server:
        config = kubeconfig(server, tmp_path)
        listed = run("exposure", "--live", "--kubeconfig", config, "-o", "json", *AS_OF)
        report = run("live", "--kubeconfig", config, "-o", "json", *AS_OF)
        assert {r.method for r in server.requests} == {"GET"}
    assert listed.code == 1, listed.stderr
    data = json.loads(listed.stdout)
    SCHEMA.validate(data)
    assert data["target"]["mode"] == "live"
    assert data["exposures"] == json.loads(report.stdout)["exposures"]


def test_live_a_kind_that_cannot_be_read_exits_3(tmp_path: Path) -> None:
    with serve("drifted", cluster_role=_role_without("services")) as server:
        result = run("exposure", "--live", "--kubeconfig", kubeconfig(server, tmp_path), *AS_OF)
    assert result.code == 3
    assert "lb-service-not-excepted is error" in " ".join(result.stdout.split())


# --- audit diff: ways in ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("diff")
    before, after = folder / "before.json", folder / "after.json"
    smtp = folder / "smtp.yaml"
    smtp.write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: smtp\n  namespace: mail\n  labels: {exposure: lan}\n"
        "  annotations: {lbipam.cilium.io/ips: 192.168.50.241}\nspec:\n  type: LoadBalancer\n"
        "  selector: {app: mailpit}\n  ports: [{name: smtp, port: 25, targetPort: 1025}]\n", encoding="utf-8")
    run_cli(*WHOLE, "--json", str(before), *AS_OF)
    run_cli(*WHOLE, str(smtp), "--json", str(after), *AS_OF)
    return before, after


def test_diff_lists_new_and_removed_ways_in(reports: tuple[Path, Path]) -> None:
    before, after = reports
    result = run_cli("diff", str(before), str(after), "-o", "json")
    ways = json.loads(result.stdout)["exposures"]
    assert ways["compared"] is True and not ways["removed"]
    new = {(w["channel"], w["subject"]["object"]["name"], w["port"]) for w in ways["new"]}
    assert new == {("load-balancer", "smtp", 25), ("node-port", "smtp", None)}
    assert json.loads(result.stdout)["summary"]["newWays"] == 2
    back = json.loads(run_cli("diff", str(after), str(before), "-o", "json").stdout)["exposures"]
    assert {(w["channel"], w["subject"]["object"]["name"], w["port"]) for w in back["removed"]} == new
    text = run_cli("diff", str(after), str(before)).stdout
    assert "  removed    192.168.50.241 25/TCP load-balancer Service/mail/smtp: drift (lb-service-not-excepted)" in text


def test_diff_says_when_a_report_has_no_ways_in(reports: tuple[Path, Path], tmp_path: Path) -> None:
    before, after = reports
    old = json.loads(before.read_text(encoding="utf-8"))
    old.pop("exposures")
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps(old), encoding="utf-8")
    ways = json.loads(run_cli("diff", str(legacy), str(after), "-o", "json").stdout)["exposures"]
    assert ways == {"compared": False, "reason": "OLD has no exposures (written before reports listed the ways in): "
                                                 "ways in not compared", "new": [], "removed": [], "changed": []}


def test_diff_reports_a_changed_verdict(reports: tuple[Path, Path], tmp_path: Path) -> None:
    _, after = reports
    edited = json.loads(after.read_text(encoding="utf-8"))
    for way in edited["exposures"]:
        if way["subject"]["object"]["name"] == "smtp":
            way["verdict"] = {"status": "excepted", "rule": way["rule"], "by": "mail-lb", "reason": "why"}
    older = tmp_path / "older.json"
    older.write_text(json.dumps(edited), encoding="utf-8")
    ways = json.loads(run_cli("diff", str(older), str(after), "-o", "json").stdout)["exposures"]
    assert {(c["old"]["verdict"]["status"], c["new"]["verdict"]["status"]) for c in ways["changed"]} == {
        ("excepted", "drift")}
