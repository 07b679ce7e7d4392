"""`audit live` and `audit snapshot` end to end: verdicts, snapshots, the target guard, fleets,
failing closed, and what must never appear in any output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT, CliResult, one_line_error
from tests.kubeapi import Fault, KubeApiServer, KubeconfigContext, write_kubeconfig
from tests.kubeapi.kubectl import find_kubectl
from tests.test_live_fixtures import (
    AS_OF,
    SECRET_B64,
    SECRET_VALUE,
    TOKEN,
    comparable,
    kubeconfig,
    live_json,
    run,
    run_subprocess,
    serve,
    statuses,
    validate_report,
)

DRIFTED_FILE = FIXTURES / "clusters" / "drifted.json"


def _one_line_error(result: CliResult) -> str:
    """A live read that cannot start: one error line, exit 3 (incomplete), as docs/live.md says."""
    return one_line_error(result, 3)


@pytest.fixture
def drifted() -> Iterator[KubeApiServer]:
    with serve("drifted") as server:
        yield server


@pytest.fixture
def clean() -> Iterator[KubeApiServer]:
    with serve("clean") as server:
        yield server




def _posture(tmp_path: Path, labels: dict[str, str]) -> str:
    path = tmp_path / "posture.yaml"
    path.write_text("clusters:\n" + "".join(f"  {label}: '{fp}'\n" for label, fp in labels.items()))
    return str(path)


# --- verdicts -----------------------------------------------------------------------------


def test_live_report_names_the_target_and_finds_the_drift(drifted: KubeApiServer, tmp_path: Path) -> None:
    code, report, _ = live_json(drifted, tmp_path)
    assert code == 1 and report["summary"]["complete"] is True and report["summary"]["exitCode"] == 1
    target = report["target"]
    assert target["mode"] == "live" and target["inputs"] == ["cluster:kubeapi-test"]
    cluster = target["cluster"]
    assert (cluster["context"], cluster["server"], cluster["version"]) == ("kubeapi-test", drifted.url, "v1.32.3")
    assert re.fullmatch(r"[0-9a-f]{12}", cluster["fingerprint"])
    failed = {(f["rule"], f["object"]["kind"], f["object"]["name"])
              for f in report["findings"] if f["status"] == "failed"}
    assert ("lb-service-not-excepted", "Service", "mailpit-smtp") in failed
    assert ("nodeport-service-not-excepted", "Service", "mlflow-nodeport") in failed
    assert ("kube-proxy-leftover", "DaemonSet", "kube-proxy") in failed
    # Live, the pool reads as v2 (the server converts); the CRD's storedVersions still shows v2alpha1.
    assert ("lb-pool-v2alpha1", "CustomResourceDefinition", "ciliumloadbalancerippools.cilium.io") in failed
    assert all(f["file"] == "cluster:kubeapi-test" and "line" not in f for f in report["findings"])
    coverage = {c["kind"]: c["state"] for c in report["coverage"]}
    assert coverage["IPAddressPool.metallb.io"] == "not-served" and coverage["Service"] == "listed"
    # A not-served kind is a legitimate pass.
    assert statuses(report)["metallb-leftover"] == "passed"
    text = run("live", "--kubeconfig", kubeconfig(drifted, tmp_path), *AS_OF)
    header = f"Audit of cluster kubeapi-test ({drifted.url}, Kubernetes v1.32.3, fingerprint {cluster['fingerprint']})"
    assert header in " ".join(text.stdout.split())
    assert "\r" not in text.stderr  # no progress line when stderr is not a terminal


def test_live_exit_0_on_a_clean_selection(clean: KubeApiServer, tmp_path: Path) -> None:
    code, report, _ = live_json(clean, tmp_path, "--rule", "lb-service-not-excepted", "--rule", "kube-proxy-leftover")
    assert code == 0 and statuses(report) == {"kube-proxy-leftover": "passed", "lb-service-not-excepted": "passed"}


def test_live_verdict_matches_the_offline_verdict_on_the_same_dump(drifted: KubeApiServer, tmp_path: Path) -> None:
    offline = run(str(DRIFTED_FILE), "--format", "json", *AS_OF)
    offline_report = json.loads(offline.stdout)
    _, live_report, _ = live_json(drifted, tmp_path)
    offline_status, live_status = statuses(offline_report), statuses(live_report)
    for rule, status in offline_status.items():
        if status in ("passed", "failed"):
            assert live_status[rule] == status, rule
        else:  # offline input could not tell; the live read can
            assert live_status[rule] in ("passed", "failed"), (rule, live_status[rule])

    def failing(report: dict[str, Any]) -> set[tuple[str, str, str | None, str, str]]:
        return {(f["rule"], f["object"]["kind"], f["object"]["namespace"], f["object"]["name"], f["status"])
                for f in report["findings"] if offline_status[f["rule"]] in ("passed", "failed")}

    # The only difference is the documented one: the API server converts the v2alpha1 pool to v2,
    # so live the deprecated version shows only in the CRD's storedVersions (both report that).
    only_offline = failing(offline_report) - failing(live_report)
    only_live = failing(live_report) - failing(offline_report)
    assert only_offline == {("lb-pool-v2alpha1", "CiliumLoadBalancerIPPool", None, "default-pool", "failed")}
    assert only_live == set()
    assert ("lb-pool-v2alpha1", "CustomResourceDefinition", None, "ciliumloadbalancerippools.cilium.io",
            "failed") in failing(live_report)


# --- snapshots ------------------------------------------------------------------------------


def test_snapshot_audit_equals_live_audit(drifted: KubeApiServer, tmp_path: Path) -> None:
    config = kubeconfig(drifted, tmp_path)
    dump = tmp_path / "dump.json"
    written = run("snapshot", "-o", str(dump), "--kubeconfig", config)
    assert written.code == 0, written.stderr
    assert written.stderr.startswith(f"audit: wrote {dump}: ") and "kinds not served" in written.stderr
    _, live_report, _ = live_json(drifted, tmp_path)
    offline = run(str(dump), "--format", "json", *AS_OF)
    snapshot_report = json.loads(offline.stdout)
    validate_report(snapshot_report)
    assert offline.code == 1
    assert comparable(snapshot_report) == comparable(live_report)
    assert snapshot_report["target"]["mode"] == "snapshot"
    assert snapshot_report["target"]["cluster"] == live_report["target"]["cluster"]
    assert all(f["file"] == str(dump) and f["line"] > 1 for f in snapshot_report["findings"])


def test_snapshot_header_redaction_and_mode(drifted: KubeApiServer, tmp_path: Path) -> None:
    dump = tmp_path / "out" / "dump.json"
    assert run("snapshot", "-o", str(dump), "--kubeconfig", kubeconfig(drifted, tmp_path)).code == 0
    assert (dump.stat().st_mode & 0o777) == 0o600
    assert not [p for p in dump.parent.iterdir() if p.name.startswith(".audit-")]  # no temporary left
    text = dump.read_text()
    document = json.loads(text)
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    header = document["auditSnapshot"]
    assert header["formatVersion"] == 1 and header["context"] == "kubeapi-test" and header["server"] == drifted.url
    assert header["serverVersion"] == "v1.32.3" and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", header["takenAt"])
    assert header["kinds"]["Service"]["state"] == "listed" and header["kinds"]["Service"]["count"] > 0
    assert header["kinds"]["IPAddressPool.metallb.io"]["state"] == "not-served"
    assert header["servedVersions"]["CiliumLoadBalancerIPPool.cilium.io"] == ["v2", "v2alpha1"]
    assert all("kind" in item and "apiVersion" in item for item in document["items"])
    secrets = [item for item in document["items"] if item["kind"] == "Secret"]
    assert secrets and all(set(s) == {"apiVersion", "kind", "metadata"} for s in secrets)
    last_applied = 'last-applied-configuration": "{\\"apiVersion\\": \\"v1\\", \\"kind\\": \\"Secret'
    for secret in (SECRET_VALUE, SECRET_B64, TOKEN, "password-for-db", last_applied):
        assert secret not in text
    assert {r.method for r in drifted.requests} == {"GET"}


def test_snapshot_of_a_forbidden_kind_is_written_and_exits_3(tmp_path: Path) -> None:
    from auditor import registry
    from auditor.sources.live import rbac

    role = rbac.cluster_role(registry.load_rules(plugins=False).rules)
    for rule in role["rules"]:
        rule["resources"] = [r for r in rule["resources"] if r != "networkpolicies"]
    with serve("drifted", cluster_role=role) as server:
        dump = tmp_path / "dump.json"
        result = run("snapshot", "-o", str(dump), "--kubeconfig", kubeconfig(server, tmp_path))
        assert result.code == 3
        assert ("NetworkPolicy.networking.k8s.io: list networkpolicies.networking.k8s.io failed: HTTP 403"
                in result.stderr)
        header = json.loads(dump.read_text())["auditSnapshot"]
        assert header["kinds"]["NetworkPolicy.networking.k8s.io"]["state"] == "failed"
        later = run(str(dump), "--format", "json", *AS_OF)
        assert later.code == 3  # still an error when audited later
        report = json.loads(later.stdout)
        assert statuses(report)["namespace-missing-default-deny"] == "error"


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_kubectl_reads_the_snapshot(drifted: KubeApiServer, tmp_path: Path, version: str) -> None:
    kubectl = find_kubectl(version)
    if kubectl is None:
        pytest.skip(f"kubectl {version} not installed")
    config = kubeconfig(drifted, tmp_path)
    dump = tmp_path / "dump.json"
    assert run("snapshot", "-o", str(dump), "--kubeconfig", config).code == 0
    items = json.loads(dump.read_text())["items"]
    # Client-side decoding of every object; kubectl still needs the server's discovery to map
    # kinds to resources (only GETs), and the test server has no OpenAPI to validate against.
    created = subprocess.run([str(kubectl), "--kubeconfig", config, "create", "--dry-run=client", "--validate=false",
                              "-o", "name", "-f", str(dump)], capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr
    assert len(created.stdout.splitlines()) == len(items)
    # ... and `kubectl get -f` finds every object of the snapshot on the cluster.
    got = subprocess.run([str(kubectl), "--kubeconfig", config, "get", "-f", str(dump), "-o", "name"],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert len(got.stdout.splitlines()) == len(items)
    assert {r.method for r in drifted.requests} == {"GET"}


# --- failing closed ----------------------------------------------------------------------------


def test_forbidden_resource_makes_its_rules_error_and_exits_3(tmp_path: Path) -> None:
    from auditor import registry
    from auditor.sources.live import rbac

    role = rbac.cluster_role(registry.load_rules(plugins=False).rules)
    for rule in role["rules"]:
        rule["resources"] = [r for r in rule["resources"] if r != "services"]
    with serve("drifted", cluster_role=role) as server:
        code, report, _ = live_json(server, tmp_path)
    assert code == 3 and report["summary"]["exitCode"] == 3
    rules = {r["id"]: r for r in report["rules"]}
    for rule_id in ("lb-service-not-excepted", "nodeport-service-not-excepted"):
        assert rules[rule_id]["status"] == "error"
        assert "list services failed: HTTP 403 Forbidden" in rules[rule_id]["reason"]
    assert rules["kube-proxy-leftover"]["status"] == "failed"  # what could be read is still judged


def test_persistent_500_exits_3(drifted: KubeApiServer, tmp_path: Path) -> None:
    drifted.faults.add(Fault.error(resource="namespaces", times=None))
    code, report, _ = live_json(drifted, tmp_path, "--max-retries", "1")
    assert code == 3
    reason = {r["id"]: r.get("reason", "") for r in report["rules"]}["namespace-missing-default-deny"]
    assert "list namespaces failed: HTTP 500 Internal Server Error after 2 attempts" in reason


def test_bad_kubeconfigs_are_one_line_exit_3(drifted: KubeApiServer, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("clusters: [\n")
    line = _one_line_error(run("live", "--kubeconfig", str(broken)))
    assert "not valid YAML" in line and str(broken) in line
    line = _one_line_error(run("live", "--kubeconfig", str(tmp_path / "absent")))
    assert "no such file" in line
    config = kubeconfig(drifted, tmp_path)
    line = _one_line_error(run("live", "--kubeconfig", config, "--context", "prod"))
    assert "no context named 'prod' (contexts: kubeapi-test)" in line
    line = _one_line_error(run("snapshot", "-o", str(tmp_path / "x.json"), "--kubeconfig", config, "--context", "prod"))
    assert "no context named 'prod'" in line and not (tmp_path / "x.json").exists()
    not_a_config = tmp_path / "list"
    not_a_config.write_text("- a\n- b\n")
    assert "not a kubeconfig" in _one_line_error(run("live", "--kubeconfig", str(not_a_config)))
    assert drifted.requests == []


def test_unreachable_server_wrong_token_and_wrong_ca_are_one_line_exit_3(drifted: KubeApiServer,
                                                                         tmp_path: Path) -> None:
    dead = write_kubeconfig(tmp_path / "dead", [KubeconfigContext("dead", "https://127.0.0.1:1", drifted.ca_pem, "t")])
    line = _one_line_error(run("live", "--kubeconfig", str(dead), "--max-retries", "0"))
    assert line.startswith("audit: error: cluster dead (https://127.0.0.1:1): unreachable: no answer: cannot connect")
    wrong = write_kubeconfig(tmp_path / "wrong", [KubeconfigContext("w", drifted.url, drifted.ca_pem, "not-the-token")])
    assert "credentials rejected (HTTP 401 Unauthorized)" in _one_line_error(run("live", "--kubeconfig", str(wrong)))
    with serve("clean") as other:
        mismatched = write_kubeconfig(tmp_path / "ca", [KubeconfigContext("x", drifted.url, other.ca_pem, TOKEN)])
        line = _one_line_error(run("live", "--kubeconfig", str(mismatched)))
    assert "TLS failure" in line and "CERTIFICATE_VERIFY_FAILED" in line


def test_no_kubeconfig_and_not_in_a_pod(tmp_path: Path) -> None:
    line = _one_line_error(run("live", env={"KUBECONFIG": str(tmp_path / "none"), "KUBERNETES_SERVICE_HOST": None}))
    assert "no kubeconfig found" in line and "not running in a pod" in line


# --- the target guard --------------------------------------------------------------------------


def test_target_guard(drifted: KubeApiServer, tmp_path: Path) -> None:
    config = kubeconfig(drifted, tmp_path)
    _, report, _ = live_json(drifted, tmp_path)
    fingerprint = report["target"]["cluster"]["fingerprint"]
    drifted.clear_requests()
    # The fingerprint itself...
    assert run("live", "--kubeconfig", config, "--expect-cluster", fingerprint, *AS_OF).code == 1
    # ... or a posture label for it; the label then shows in the reports.
    posture = _posture(tmp_path, {"lab-1": fingerprint, "prod": "0123456789ab"})
    code, labelled, _ = live_json(drifted, tmp_path, "--posture", posture, "--expect-cluster", "lab-1")
    assert code == 1 and labelled["target"]["cluster"]["label"] == "lab-1"
    text = run("live", "--kubeconfig", config, "--posture", posture, "--expect-cluster", "lab-1", *AS_OF)
    assert text.stdout.startswith(f"Audit of cluster lab-1 ({drifted.url}")
    # EXPECT_CLUSTER does the same from the environment.
    assert run("live", "--kubeconfig", config, *AS_OF, env={"EXPECT_CLUSTER": fingerprint}).code == 1
    drifted.clear_requests()
    # A mismatch refuses before a single request, naming both sides.
    for args, env in ((("--expect-cluster", "prod"), None), ((), {"EXPECT_CLUSTER": "prod"}),
                      (("--expect-cluster", "fedcba987654"), None)):
        line = _one_line_error(run("live", "--kubeconfig", config, "--posture", posture, *args, env=env))
        assert f"context kubeapi-test ({drifted.url}) is cluster fingerprint {fingerprint}, label lab-1" in line
        assert "not the expected" in line and ("'prod' (fingerprint 0123456789ab)" in line or "'fedcba987654'" in line)
    line = _one_line_error(run("snapshot", "-o", str(tmp_path / "s.json"), "--kubeconfig", config,
                               "--expect-cluster", "prod"))
    assert "refusing to audit" in line and not (tmp_path / "s.json").exists()
    assert drifted.requests == []
    # A snapshot audited later is named by the posture too.
    assert run("snapshot", "-o", str(tmp_path / "s.json"), "--kubeconfig", config, "--expect-cluster", "lab-1",
               "--posture", posture).code == 0
    later = json.loads(run(str(tmp_path / "s.json"), "--posture", posture, "--format", "json", *AS_OF).stdout)
    assert later["target"]["cluster"]["label"] == "lab-1"


# --- fleets --------------------------------------------------------------------------------------


def _fleet_config(tmp_path: Path, *servers_and_names: tuple[KubeApiServer, str]) -> str:
    contexts = [server.context(name) for server, name in servers_and_names]
    return str(write_kubeconfig(tmp_path / "fleet", contexts))


def test_fleet_audits_every_cluster_into_one_report(drifted: KubeApiServer, clean: KubeApiServer,
                                                    tmp_path: Path) -> None:
    config = _fleet_config(tmp_path, (drifted, "lab-a"), (clean, "lab-b"))
    single = {name: live_json(server, tmp_path / name, "--context", "kubeapi-test")[1]
              for server, name in ((drifted, "a"), (clean, "b"))}
    result = run("live", "--kubeconfig", config, "--context", "lab-a", "--context", "lab-b", "--format", "json", *AS_OF)
    report = json.loads(result.stdout)
    validate_report(report)
    assert result.code == 1
    target = report["target"]
    assert target["mode"] == "fleet" and target["inputs"] == ["cluster:lab-a", "cluster:lab-b"]
    assert [(c["context"], c["server"], c["exitCode"], c["complete"]) for c in target["clusters"]] == [
        ("lab-a", drifted.url, 1, True), ("lab-b", clean.url, 1, True)]
    assert {f["cluster"] for f in report["findings"]} == {"lab-a", "lab-b"}
    merged = comparable(report)["findings"]
    for name, part in (("lab-a", single["a"]), ("lab-b", single["b"])):
        mine = [{k: v for k, v in f.items() if k != "cluster"} for f in merged if f["cluster"] == name]
        assert mine == comparable(part)["findings"]
    # Finding counts add up; a rule's status is the worst across clusters.
    for key in ("failed", "failing", "excepted"):
        assert report["summary"][key] == single["a"]["summary"][key] + single["b"]["summary"][key]
    rank = ["passed", "failed", "not-run", "error"]
    for rule in report["rules"]:
        worst = max(statuses(single["a"])[rule["id"]], statuses(single["b"])[rule["id"]], key=rank.index)
        assert rule["status"] == worst
    exceptions = {e["name"]: e for e in report["exceptions"]}
    assert exceptions["kubernetes-dashboard"]["matched"] == sum(
        {e["name"]: e["matched"] for e in part["exceptions"]}["kubernetes-dashboard"] for part in single.values())
    # The fleet's ways in are each cluster's, tagged with it (issue 12).
    for name, part in (("lab-a", single["a"]), ("lab-b", single["b"])):
        assert len([e for e in report["exposures"] if e["cluster"] == name]) == len(part["exposures"])
    text = run("live", "--kubeconfig", config, "--all-contexts", *AS_OF)
    assert text.code == 1 and text.stdout.startswith("Audit of 2 clusters: lab-a (")
    # Each finding of the text report names its cluster before its object.
    shown = " ".join(text.stdout.split())
    for finding in report["findings"]:
        obj = finding["object"]
        display = "/".join(part for part in (obj["kind"], obj.get("namespace"), obj["name"]) if part)
        assert f"{finding['cluster']}: {display}" in shown, (finding["cluster"], display)


def test_fleet_with_an_unreachable_cluster_exits_3_but_audits_the_others(drifted: KubeApiServer,
                                                                         tmp_path: Path) -> None:
    contexts = [drifted.context("lab-a"), KubeconfigContext("gone", "https://127.0.0.1:1", drifted.ca_pem, TOKEN)]
    config = write_kubeconfig(tmp_path / "fleet", contexts)
    result = run("live", "--kubeconfig", str(config), "--all-contexts", "--max-retries", "0", "--format", "json",
                 *AS_OF)
    assert result.code == 3
    assert "audit: error: cluster gone (https://127.0.0.1:1): unreachable" in result.stderr
    report = json.loads(result.stdout)
    validate_report(report)
    clusters = {c["context"]: c for c in report["target"]["clusters"]}
    assert clusters["lab-a"]["exitCode"] == 1 and "error" not in clusters["lab-a"]
    assert clusters["gone"]["exitCode"] == 3 and "unreachable" in clusters["gone"]["error"]
    assert {f["cluster"] for f in report["findings"]} == {"lab-a"}  # lab-a's drift is all there
    assert {r["status"] for r in report["rules"]} == {"error"}
    assert all("gone: " in r["reason"] and "unreachable" in r["reason"] for r in report["rules"])
    assert report["summary"]["failed"] > 0 and report["summary"]["complete"] is False


def test_fleet_label_names_findings(drifted: KubeApiServer, clean: KubeApiServer, tmp_path: Path) -> None:
    config = _fleet_config(tmp_path, (drifted, "a"), (clean, "b"))
    fingerprints = {name: live_json(server, tmp_path / name)[1]["target"]["cluster"]["fingerprint"]
                    for server, name in ((drifted, "a"), (clean, "b"))}
    posture = _posture(tmp_path, {"lab": fingerprints["a"]})
    result = run("live", "--kubeconfig", config, "--all-contexts", "--posture", posture, "--format", "json", *AS_OF)
    report = json.loads(result.stdout)
    assert {f["cluster"] for f in report["findings"]} == {"lab", "b"}
    assert [c.get("label") for c in report["target"]["clusters"]] == ["lab", None]
    # The guard applies to every cluster of a fleet.
    line = _one_line_error(run("live", "--kubeconfig", config, "--all-contexts", "--posture", posture,
                               "--expect-cluster", "lab"))
    assert "context b " in line


# --- never a credential, never a Secret value -------------------------------------------------------


def test_no_token_or_secret_value_in_any_output(drifted: KubeApiServer, tmp_path: Path) -> None:
    config = kubeconfig(drifted, tmp_path)
    outputs = []
    files = {name: tmp_path / f"report.{name}" for name in ("json", "junit", "sarif", "markdown", "prometheus")}
    file_args = [arg for name, path in files.items() for arg in (f"--{name}", str(path))]
    for fmt in ("text", "json", "junit", "sarif", "markdown", "prometheus"):
        outputs.append(run("live", "--kubeconfig", config, "--format", fmt, *file_args, *AS_OF))
    outputs.append(run("snapshot", "-o", str(tmp_path / "dump.json"), "--kubeconfig", config))
    outputs.append(run("snapshot", "-o", "-", "--kubeconfig", config))
    drifted.faults.add(Fault.error(resource="secrets", times=None))
    outputs.append(run("live", "--kubeconfig", config, "--max-retries", "0", *AS_OF))
    wrong = write_kubeconfig(tmp_path / "wrong",
                             [KubeconfigContext("w", drifted.url, drifted.ca_pem, "wrong-" + TOKEN)])
    outputs.append(run("live", "--kubeconfig", str(wrong)))
    outputs.append(run("live", "--kubeconfig", config, "--expect-cluster", "nope"))
    texts = [r.stdout + r.stderr for r in outputs] + [p.read_text() for p in files.values()]
    texts.append((tmp_path / "dump.json").read_text())
    assert any("gateway-https-listener-tls" in t for t in texts)
    for text in texts:
        for secret in (TOKEN, SECRET_VALUE, SECRET_B64, "password-for-db-hunter2"):
            assert secret not in text


# --- read-only, imports, the real entry point -------------------------------------------------------


def test_every_request_is_a_get(drifted: KubeApiServer, tmp_path: Path) -> None:
    config = kubeconfig(drifted, tmp_path)
    run("live", "--kubeconfig", config, *AS_OF)
    run("snapshot", "-o", str(tmp_path / "d.json"), "--kubeconfig", config)
    assert len(drifted.requests) > 40
    assert {(r.method, r.status) for r in drifted.requests} == {("GET", 200)}


IMPORT_PROBE = """
import sys
from auditor.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="audit", standalone_mode=False)
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes."))
print("KUBERNETES:", len(loaded), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [
    ["--version"],
    [str(DRIFTED_FILE), "--format", "json"],
    ["scan", str(DRIFTED_FILE), "--format", "junit"],
    ["rules"],
    ["rbac"],
])
def test_offline_commands_never_import_kubernetes(args: list[str]) -> None:
    result = subprocess.run([sys.executable, "-c", IMPORT_PROBE, *args],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert "KUBERNETES: 0" in result.stderr, result.stderr


def test_live_imports_kubernetes_only_when_it_runs(drifted: KubeApiServer, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", IMPORT_PROBE, "live", "--kubeconfig", kubeconfig(drifted, tmp_path)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert "KUBERNETES: 0" not in result.stderr and "KUBERNETES:" in result.stderr


def test_the_installed_command(drifted: KubeApiServer, tmp_path: Path) -> None:
    config = kubeconfig(drifted, tmp_path)
    result = run_subprocess("live", "--kubeconfig", config, "--format", "json", *AS_OF)
    assert result.code == 1 and json.loads(result.stdout)["target"]["mode"] == "live"
    dead = write_kubeconfig(tmp_path / "dead", [KubeconfigContext("dead", "https://127.0.0.1:1", drifted.ca_pem, "t")])
    result = run_subprocess("live", "--kubeconfig", str(dead), "--max-retries", "0")
    one_line_error(result, 3)


IN_CLUSTER = """
import sys
from auditor.sources.live import target
target.SERVICE_ACCOUNT_DIR = sys.argv[1]
from auditor.cli import main
main(sys.argv[2:])
"""


def test_in_cluster_from_the_command_line(drifted: KubeApiServer, tmp_path: Path) -> None:
    """In a pod: no kubeconfig, KUBERNETES_SERVICE_HOST set, the service account's files.

    The client's in-cluster loader takes its file paths as arguments; the CLI reads
    them from `target.SERVICE_ACCOUNT_DIR`, pointed here at a fake account folder.
    """
    import hashlib

    account = tmp_path / "sa"
    account.mkdir()
    (account / "token").write_text(TOKEN)
    (account / "ca.crt").write_bytes(drifted.ca_pem)
    env = {**os.environ, "NO_COLOR": "1", "KUBECONFIG": str(tmp_path / "none"),
           "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(drifted.port)}
    env.pop("EXPECT_CLUSTER", None)
    result = subprocess.run([sys.executable, "-c", IN_CLUSTER, str(account), "live", "--format", "json", *AS_OF],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    assert result.returncode == 1, result.stderr
    cluster = json.loads(result.stdout)["target"]["cluster"]
    assert (cluster["context"], cluster["server"]) == ("in-cluster", drifted.url)
    # The CA is a file path in a pod: the fingerprint is the server URL's.
    assert cluster["fingerprint"] == hashlib.sha256(drifted.url.encode()).hexdigest()[:12]
    assert TOKEN not in result.stdout + result.stderr


def test_only_the_live_package_imports_kubernetes() -> None:
    pattern = re.compile(r"^\s*(import kubernetes|from kubernetes\b)", re.MULTILINE)
    offenders = []
    for folder in ("auditor", "rules"):
        for path in (ROOT / folder).rglob("*.py"):
            if pattern.search(path.read_text(encoding="utf-8")) and "sources/live" not in path.as_posix():
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
    # ... and within it, only the modules that talk to a cluster (rbac/dump/progress never do).
    for name in ("__init__.py", "rbac.py", "dump.py", "progress.py", "safe_text.py", "exec_plugin.py"):
        assert not pattern.search((ROOT / "auditor" / "sources" / "live" / name).read_text(encoding="utf-8")), name


def test_an_empty_snapshot_is_still_a_verdict(tmp_path: Path) -> None:
    """Nothing of what the selected rule reads exists (its CRD is not installed): the snapshot
    holds no object, only coverage, and auditing it still reaches the verdict."""
    from tests.test_live_fixtures import platform_crds, serve_items, served_items

    crds = [c for c in platform_crds() if c["spec"]["names"]["kind"] != "CiliumLoadBalancerIPPool"]
    items = [i for i in served_items("clean") if i["kind"] != "CiliumLoadBalancerIPPool"
             and i["metadata"]["name"] != "ciliumloadbalancerippools.cilium.io"]
    with serve_items(items, crds).start() as server:
        dump = tmp_path / "empty.json"
        assert run("snapshot", "-o", str(dump), "--kubeconfig", kubeconfig(server, tmp_path),
                   "--rule", "lb-pool-conflict").code == 0
    document = json.loads(dump.read_text())
    assert document["items"] == []
    assert document["auditSnapshot"]["kinds"]["CiliumLoadBalancerIPPool.cilium.io"]["state"] == "not-served"
    result = run(str(dump), "--rule", "lb-pool-conflict", "--format", "json", *AS_OF)
    assert result.code == 0, result.stderr
    assert statuses(json.loads(result.stdout)) == {"lb-pool-conflict": "passed"}
