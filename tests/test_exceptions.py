"""The named exception list: schema errors that point at the fault, matching, and entry statuses."""

from __future__ import annotations

import datetime as dt
import filecmp
import json
from pathlib import Path

import pytest

from auditor import exceptions_list
from auditor.engine import AuditResult
from auditor.errors import ConfigError
from auditor.model import Finding, ObjectRef, Source
from tests.conftest import FIXTURES, ROOT, audit_text, run_cli

DRIFTED = FIXTURES / "clusters" / "drifted.json"
LB_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: smtp
  namespace: mail
  labels: {tier: edge}
spec: {type: LoadBalancer, ports: [{port: 25}]}
"""


def _load(tmp_path: Path, text: str) -> exceptions_list.ExceptionList:
    path = tmp_path / "exceptions.yaml"
    path.write_text(text, encoding="utf-8")
    return exceptions_list.load(str(path))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("exceptions:\n  - name: dash\n    rules: [lb-service-not-excepted]\n    match: {namespace: x}\n",
         r":2: exception list: exceptions\[0\] \(dash\): 'reason' is a required property"),
        ("exceptions:\n  - name: dash\n    rules: [lb-service-not-excepted]\n    reason: r\n"
         "    match:\n      namspace: x\n",
         r":6: exception list: exceptions\[0\] \(dash\)\.match: "
         r"Additional properties are not allowed \('namspace' was unexpected\)"),
        ("exceptions:\n  - name: ok\n    rules: [lb-service-not-excepted]\n    reason: r\n    match: {name: a}\n"
         "  - name: late\n    rules: [lb-service-not-excepted]\n    reason: r\n    match: {name: b}\n"
         "    expires: 31/12/2026\n",
         r":10: exception list: exceptions\[1\] \(late\)\.expires: '31/12/2026' is not a 'date'"),
        ("exceptions:\n  - name: Bad_Name\n    rules: [x]\n    reason: r\n    match: {name: a}\n",
         r":2: exception list: exceptions\[0\] \(Bad_Name\)\.name: 'Bad_Name' does not match"),
        ("exception:\n  - name: a\n",
         r":1: exception list: \(top level\): Additional properties are not allowed \('exception' was unexpected\)"),
        ("exceptions:\n  - name: a\n    rules: [lb-service-not-excepted]\n    reason: r\n    match: {}\n",
         r":5: exception list: exceptions\[0\] \(a\)\.match: \{\} should be non-empty"),
        ("exceptions: [\n", r":2: exception list: invalid YAML"),
    ],
)
def test_schema_errors_name_file_line_entry_and_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as raised:
        _load(tmp_path, text)
    assert raised.value.message.startswith(str(tmp_path / "exceptions.yaml"))
    assert "\n" not in raised.value.message


def test_duplicate_names_and_unknown_rules_are_refused(tmp_path: Path) -> None:
    entry = "  - name: same\n    rules: [lb-service-not-excepted]\n    reason: r\n    match: {name: a}\n"
    with pytest.raises(ConfigError, match=r":6: .*duplicate name 'same'"):
        _load(tmp_path, "exceptions:\n" + entry + entry)
    typo = _load(tmp_path, "exceptions:\n  - name: typo\n    rules: [lb-service-not-exepted]\n    reason: r\n"
                           "    match: {name: a}\n")
    with pytest.raises(ConfigError, match=r":2: exception list: typo: unknown rule 'lb-service-not-exepted'"):
        typo.check_rules({"lb-service-not-excepted"})


def test_the_cli_reports_an_exception_file_error_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "exceptions.yaml"
    bad.write_text("exceptions:\n  - name: x\n    rules: [nope]\n    reason: r\n    match: {name: a}\n",
                   encoding="utf-8")
    result = run_cli(str(DRIFTED), "--exceptions", str(bad))
    assert result.code == 2
    assert result.stderr == f"audit: error: {bad}:2: exception list: x: unknown rule 'nope'\n"
    missing = run_cli(str(DRIFTED), "--exceptions", str(tmp_path / "none.yaml"))
    assert missing.code == 2 and "cannot read exception list" in missing.stderr


def test_label_globs_and_statuses(tmp_path: Path) -> None:
    exceptions = """\
exceptions:
  - name: edge-tier
    rules: [lb-service-not-excepted]
    match: {labels: {tier: "ed*"}}
    reason: Edge tier Services are reviewed separately.
  - name: stale
    rules: [lb-service-not-excepted]
    match: {namespace: gone}
    reason: Namespace deleted last year.
  - name: expired
    rules: [lb-service-not-excepted]
    match: {kind: Service}
    reason: Old blanket exception.
    expires: "2026-01-31"
  - name: other-rule
    rules: [nodeport-service-not-excepted]
    match: {kind: Service}
    reason: Not selected in this run.
"""
    result = audit_text(tmp_path, LB_SERVICE, exceptions=exceptions, rules=("lb-service-not-excepted",))
    (finding,) = result.findings
    assert finding.status.value == "excepted" and finding.exception.name == "edge-tier"
    statuses = {usage.entry.name: (usage.status.value, usage.matched) for usage in result.exceptions}
    assert statuses == {
        "edge-tier": ("used", 1),
        "stale": ("unused", 0),
        "expired": ("expired", 1),
        "other-rule": ("inactive", 0),
    }


def test_expiry_day_is_inclusive(tmp_path: Path) -> None:
    exceptions = ("exceptions:\n  - name: until\n    rules: [lb-service-not-excepted]\n    match: {name: smtp}\n"
                  "    reason: r\n    expires: '2026-11-29'\n")
    on_the_day = audit_text(tmp_path, LB_SERVICE, exceptions=exceptions, as_of=dt.date(2026, 11, 29))
    day_after = audit_text(tmp_path, LB_SERVICE, exceptions=exceptions, as_of=dt.date(2026, 11, 30))
    def status(result: AuditResult) -> str:
        return {f.rule: f.status.value for f in result.findings}["lb-service-not-excepted"]

    assert status(on_the_day) == "excepted"
    assert status(day_after) == "failed"


def test_expired_and_unused_entries_are_reported_in_text_and_json(tmp_path: Path) -> None:
    path = tmp_path / "exceptions.yaml"
    path.write_text(
        "exceptions:\n  - name: old-mail\n    rules: [lb-service-not-excepted]\n    match: {namespace: mail}\n"
        "    reason: r\n    expires: '2026-06-30'\n  - name: nothing\n    rules: [lb-service-not-excepted]\n"
        "    match: {namespace: nowhere}\n    reason: r\n", encoding="utf-8")
    text = run_cli(str(DRIFTED), "--exceptions", str(path), "--as-of", "2026-11-29")
    shown = " ".join(text.stdout.split())  # wrapped to the width of the report
    assert "exception old-mail expired on 2026-06-30 and no longer applies; it would cover 1 finding" in shown
    assert "exception nothing matched nothing" in shown
    report = json.loads(run_cli(str(DRIFTED), "--exceptions", str(path), "--as-of", "2026-11-29",
                                "--format", "json").stdout)
    assert {e["name"]: e["status"] for e in report["exceptions"]} == {"old-mail": "expired", "nothing": "unused"}


def test_default_is_the_local_file_else_the_bundled_one(tmp_path: Path) -> None:
    bundled = run_cli(str(DRIFTED), "--format", "json", "--as-of", "2026-11-29", cwd=tmp_path)
    assert {e["name"] for e in json.loads(bundled.stdout)["exceptions"]} == {"kubernetes-dashboard"}
    (tmp_path / "exceptions.yaml").write_text(
        "exceptions:\n  - name: local-only\n    rules: [lb-service-not-excepted]\n    match: {namespace: mail}\n"
        "    reason: r\n",
        encoding="utf-8")
    local = run_cli(str(DRIFTED), "--format", "json", "--as-of", "2026-11-29", cwd=tmp_path)
    report = json.loads(local.stdout)
    assert [e["name"] for e in report["exceptions"]] == ["local-only"]
    assert report["exceptionsFile"] == "exceptions.yaml"


def test_bundled_list_is_the_repository_file_and_valid() -> None:
    bundled = Path(exceptions_list.bundled_path())
    assert filecmp.cmp(bundled, ROOT / "exceptions.yaml", shallow=False)
    loaded = exceptions_list.load(str(bundled))
    # gateway-services left the bundled list with issue 12: the posture sanctions the edge Gateway's Services.
    assert [entry.name for entry in loaded.entries] == ["kubernetes-dashboard"]
    for entry in loaded.entries:
        assert set(entry.rules) == {"lb-service-not-excepted", "nodeport-service-not-excepted"}


# --- two objects with one identity (issue 10, item 2) ----------------------------------------

GATEWAY_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: edge
  namespace: app
  labels: {gateway.networking.k8s.io/gateway-name: main}
spec: {type: LoadBalancer, ports: [{port: 443}]}
"""
UNLABELLED_SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: edge, namespace: app}
spec: {type: LoadBalancer, ports: [{port: 443}]}
"""


@pytest.mark.parametrize("base, overlay",
                         [(GATEWAY_SERVICE, UNLABELLED_SERVICE), (UNLABELLED_SERVICE, GATEWAY_SERVICE)],
                         ids=["labelled-base", "labelled-overlay"])
def test_a_namesakes_labels_never_except_an_object(tmp_path: Path, base: str, overlay: str) -> None:
    """A base and an overlay in two files: only the Gateway's own Service is excepted by `gateway-services`."""
    for folder, text in (("base", base), ("overlay", overlay)):
        (tmp_path / "repo" / folder).mkdir(parents=True)
        (tmp_path / "repo" / folder / "svc.yaml").write_text(text, encoding="utf-8")
    # The entry the bundled list held until issue 12 (the posture now sanctions an edge Gateway's Service,
    # but these Services belong to no Gateway of the input).
    (tmp_path / "exceptions.yaml").write_text(
        "exceptions:\n  - name: gateway-services\n    rules: [lb-service-not-excepted]\n"
        "    match: {kind: Service, labels: {gateway.networking.k8s.io/gateway-name: '*'}}\n    reason: r\n",
        encoding="utf-8")
    result = run_cli("repo", "--rule", "lb-service-not-excepted", "--format", "json", "--as-of", "2026-11-29",
                     cwd=tmp_path)
    assert result.code == 1, result.stdout
    report = json.loads(result.stdout)
    statuses = {f["file"]: f["status"] for f in report["findings"]}
    labelled = "repo/base/svc.yaml" if base is GATEWAY_SERVICE else "repo/overlay/svc.yaml"
    unlabelled = "repo/overlay/svc.yaml" if base is GATEWAY_SERVICE else "repo/base/svc.yaml"
    assert statuses == {labelled: "excepted", unlabelled: "failed"}
    (duplicate,) = report["duplicateObjects"]
    assert duplicate["object"]["name"] == "edge"
    assert [d["file"] for d in duplicate["definitions"]] == ["repo/base/svc.yaml", "repo/overlay/svc.yaml"]


def test_unknown_labels_satisfy_no_label_match(tmp_path: Path) -> None:
    """When the labels of a finding's object cannot be told, label entries do not match; others still do."""
    exceptions = _load(tmp_path, "exceptions:\n"
                       "  - name: by-label\n    rules: [lb-service-not-excepted]\n    match: {labels: {tier: '*'}}\n"
                       "    reason: r\n"
                       "  - name: by-name\n    rules: [lb-service-not-excepted]\n    match: {name: smtp}\n"
                       "    reason: r\n")
    matcher = exceptions_list.ExceptionMatcher(exceptions, dt.date(2026, 11, 29))
    finding = Finding(ObjectRef("Service", "mail", "smtp", "v1"), "m", Source("a.yaml", 1),
                      rule="lb-service-not-excepted")
    by_label = matcher.apply(finding, lambda _finding: {"tier": "edge"})
    assert by_label is not None and by_label.name == "by-label"
    entry = matcher.apply(finding, lambda _finding: None)
    assert entry is not None and entry.name == "by-name"
    other = Finding(ObjectRef("Service", "mail", "web", "v1"), "m", Source("a.yaml", 9), rule="lb-service-not-excepted")
    assert matcher.apply(other, lambda _finding: None) is None


# --- schema patterns are anchored for real (issue 10, item 10) ----------------------------------

# Strings some pattern of the auditor's schemas accepts (each pattern must accept at least one).
PATTERN_SAMPLES = ["dash", "lb-service-not-excepted", "192.168.67.240-192.168.67.250", "10.0.0.0/24", "fd00::/64",
                   "1.19", "v1.4", "production", "prod_west.1", "3f2a9c0d1b7e"]


def _schema_patterns() -> list[tuple[str, str]]:
    from auditor.config_files import load_schema

    found: list[tuple[str, str]] = []
    for name in sorted(p.name for p in (ROOT / "auditor" / "data").glob("*.schema.json")):
        stack = [load_schema(name)]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("pattern"), str):
                    found.append((name, node["pattern"]))
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    return found


@pytest.mark.parametrize("schema, pattern", _schema_patterns())
def test_schema_patterns_refuse_a_trailing_newline_in_python_and_ecma_262(schema: str, pattern: str) -> None:
    """JSON Schema `pattern` is ECMA-262 (json-schema.org/draft/2020-12/json-schema-validation, 6.3.3), where `$`
    is the end of the string; jsonschema uses Python's re.search, where `$` also matches before a final newline
    (JSON-Schema-Test-Suite, optional/ecmascript-regex.json). Both engines must agree, and refuse "x\\n"."""
    import re

    import regress

    ecma = regress.Regex(pattern)
    accepted = [sample for sample in PATTERN_SAMPLES if ecma.find(sample) is not None]
    assert accepted, f"{schema}: no sample matches {pattern!r}: add one"
    for sample in PATTERN_SAMPLES:
        assert (re.search(pattern, sample) is not None) == (sample in accepted), (pattern, sample)
    for sample in accepted:
        for suffix in ("\n", "\r\n", "\n\n", " "):
            assert ecma.find(sample + suffix) is None, (pattern, sample + suffix)
            assert re.search(pattern, sample + suffix) is None, (pattern, sample + suffix)


def test_a_name_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r":2: exception list: exceptions\[0\] .*\.name: 'dash\\n' does not match"):
        _load(tmp_path, 'exceptions:\n  - name: "dash\\n"\n    rules: [lb-service-not-excepted]\n    reason: r\n'
                        "    match: {name: a}\n")
    with pytest.raises(ConfigError, match=r"rules\[0\]: 'lb-service-not-excepted\\n' does not match"):
        _load(tmp_path, 'exceptions:\n  - name: dash\n    rules: ["lb-service-not-excepted\\n"]\n    reason: r\n'
                        "    match: {name: a}\n")


def test_a_posture_value_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    from auditor import posture

    path = tmp_path / "posture.yaml"
    path.write_text('expected: {ciliumVersionLine: "1.19\\n"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"expected\.ciliumVersionLine: '1\.19\\n' does not match"):
        posture.load(str(path))
    path.write_text('clusters: {"prod\\n": 3f2a9c0d1b7e}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"does not match"):
        posture.load(str(path))
