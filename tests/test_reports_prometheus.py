"""Prometheus text format: parsed with prometheus_client's parser and cross-checked with the JSON report."""

from __future__ import annotations

import dataclasses
import time

import pytest

from auditor.model import ClusterInfo
from auditor.report import prometheus
from tests.ci_support import audit_ci
from tests.conftest import audit_text

parser = pytest.importorskip("prometheus_client.parser")
P = prometheus.PREFIX


def families(text: str) -> dict:
    parsed = {f.name: f for f in parser.text_string_to_metric_families(text)}
    assert all(f.type == "gauge" for f in parsed.values())
    return parsed


def samples(family) -> dict[tuple, float]:
    return {tuple(sorted(s.labels.items())): s.value for s in family.samples}


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    run = audit_ci(tmp_path_factory.mktemp("prometheus"), "mr", env={"SOURCE_DATE_EPOCH": "1795910400"})
    assert run.cli.code == 1, run.cli.stderr
    return run


@pytest.fixture(scope="module")
def metrics(ci_run) -> dict:
    return families(ci_run.text("prometheus"))


def test_expected_families(metrics) -> None:
    assert {f"{P}{name}" for name in (
        "findings_failed", "findings_failing", "findings_excepted", "rule_status", "complete", "exit_code",
        "objects", "exceptions", "exceptions_builtin", "info", "last_run_timestamp_seconds",
    )} <= set(metrics)


def test_finding_gauges_match_the_json_report(ci_run, metrics) -> None:
    report = ci_run.json()
    for status, name in (("failed", "findings_failed"), ("excepted", "findings_excepted")):
        expected: dict[tuple, int] = {}
        for rule in report["rules"]:
            expected[(("rule", rule["id"]), ("severity", rule["severity"]))] = 0
        for finding in report["findings"]:
            if finding["status"] == status:
                key = (("rule", finding["rule"]), ("severity", finding["severity"]))
                expected[key] = expected.get(key, 0) + 1
        assert samples(metrics[P + name]) == expected, name
    assert sum(samples(metrics[P + "findings_failing"]).values()) == report["summary"]["failing"]


def test_rule_status_is_a_state_set(ci_run, metrics) -> None:
    report = ci_run.json()
    by_rule: dict[str, dict[str, float]] = {}
    for sample in metrics[P + "rule_status"].samples:
        by_rule.setdefault(sample.labels["rule"], {})[sample.labels["status"]] = sample.value
    assert set(by_rule) == {r["id"] for r in report["rules"]}
    for rule in report["rules"]:
        states = by_rule[rule["id"]]
        assert set(states) == {"passed", "failed", "not-run", "error", "not-applicable"}
        assert states[rule["status"]] == 1 and sum(states.values()) == 1


def test_run_level_gauges(ci_run, metrics) -> None:
    report = ci_run.json()
    value = lambda name: metrics[P + name].samples[0].value  # noqa: E731
    assert value("complete") == (1 if report["summary"]["complete"] else 0) == 0
    assert value("exit_code") == report["summary"]["exitCode"] == 1
    assert value("last_run_timestamp_seconds") == 1795910400  # SOURCE_DATE_EPOCH
    by_status = {s.labels["status"]: s.value for s in metrics[P + "exceptions"].samples}
    for status in ("used", "unused", "expired", "inactive"):
        assert by_status[status] == sum(1 for e in report["exceptions"] if e["status"] == status)
    assert {s.value for s in metrics[P + "exceptions_builtin"].samples} == {0}  # the CI run uses a file


def test_builtin_entries_are_counted_apart_so_stale_alerts_mean_your_file(tmp_path) -> None:
    """With the built-in list, `exceptions{status="unused"}` stays 0: only a file's unused entries are stale."""
    from tests.ci_support import CI
    from tests.conftest import run_cli

    result = run_cli(str(CI / "mr"), "--rule", "nodeport-service-not-excepted", "--format", "prometheus",
                     cwd=tmp_path)
    assert result.code == 1, result.stderr
    parsed = families(result.stdout)
    assert {s.labels["status"]: s.value for s in parsed[P + "exceptions"].samples}["unused"] == 0
    assert {s.labels["status"]: s.value for s in parsed[P + "exceptions_builtin"].samples}["unused"] == 1
    (config,) = parsed[P + "config_info"].samples
    assert config.labels == {"posture": "built-in platform defaults", "exceptions": "built-in platform defaults"}


def test_timestamp_is_the_time_of_the_run(tmp_path) -> None:
    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: b}\n",
                        rules=("lb-service-not-excepted",))
    before = time.time()
    parsed = families(prometheus.render(result))
    stamp = parsed[P + "last_run_timestamp_seconds"].samples[0].value
    assert before - 1 <= stamp <= time.time() + 1
    assert families(prometheus.render(result))[P + "complete"].samples[0].value == 1


def test_cluster_label_and_hostile_label_values(tmp_path) -> None:
    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
                                  "spec: {type: NodePort}\n", rules=("nodeport-service-not-excepted",))
    hostile = 'prod "west"\\\nline\x00'
    result.snapshot = dataclasses.replace(result.snapshot, mode="live", cluster=ClusterInfo(context=hostile))
    text = prometheus.render(result, now=1.5)
    text.encode("utf-8")
    parsed = families(text)
    expected_cluster = hostile.replace("\x00", "\ufffd")
    for family in parsed.values():
        for sample in family.samples:
            assert sample.labels.get("cluster") == expected_cluster, (family.name, sample)
    assert samples(parsed[P + "findings_failed"]) == {
        (("cluster", expected_cluster), ("rule", "nodeport-service-not-excepted"), ("severity", "error")): 1
    }
    assert parsed[P + "last_run_timestamp_seconds"].samples[0].value == 1.5


def test_fleet_findings_are_split_by_cluster(tmp_path) -> None:
    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
                                  "spec: {type: NodePort}\n", rules=("nodeport-service-not-excepted",))
    (finding,) = result.findings
    fleet = [dataclasses.replace(finding, cluster=name) for name in ("a", "b", "b")]
    result.findings = fleet
    result.rules[0].findings = fleet
    parsed = families(prometheus.render(result))
    counts = {s.labels["cluster"]: s.value for s in parsed[P + "findings_failed"].samples}
    assert counts == {"a": 1, "b": 2}


def test_baseline_gauges(tmp_path) -> None:
    before = audit_ci(tmp_path / "main", "main", formats=("json",))
    after = audit_ci(tmp_path / "mr", "mr", formats=("json", "prometheus"), extra=("--baseline", str(before.files["json"])))
    report = after.json()
    parsed = families(after.text("prometheus"))
    states = {s.labels["state"]: s.value for s in parsed[P + "baseline_findings"].samples}
    assert states == {"new": report["baseline"]["new"], "unchanged": report["baseline"]["unchanged"],
                      "fixed": len(report["baseline"]["fixed"]), "unverified": len(report["baseline"]["unverified"])}
    assert sum(samples(parsed[P + "findings_failing"]).values()) == report["summary"]["failing"] == 2


def test_only_the_timestamp_differs_between_runs(tmp_path) -> None:
    first = audit_ci(tmp_path / "a", "mr", formats=("prometheus",), env={"SOURCE_DATE_EPOCH": "1"})
    second = audit_ci(tmp_path / "b", "mr", formats=("prometheus",), env={"SOURCE_DATE_EPOCH": "2"})
    strip = lambda text: [l for l in text.splitlines() if not l.startswith(P + "last_run_timestamp_seconds ")]  # noqa: E731,E741
    assert strip(first.text("prometheus")) == strip(second.text("prometheus"))
    assert first.text("prometheus") != second.text("prometheus")
