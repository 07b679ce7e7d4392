"""End-to-end: the installed command on realistic dumps, every exit code, every output."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from auditor.config_files import load_schema
from tests.conftest import FIXTURES, run_cli

DRIFTED = FIXTURES / "clusters" / "drifted.json"
CLEAN = FIXTURES / "clusters" / "clean.json"
POSTURE = FIXTURES / "clusters" / "bench-posture.yaml"
# The dumps come from the bench, where LB-IPAM + L2 is armed: audit them with its posture.
AS_OF = ("--as-of", "2026-11-29", "--posture", str(POSTURE))


def _json_report(*args: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(*args, "--format", "json", *AS_OF)
    assert "Traceback" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    validator = jsonschema.Draft202012Validator(load_schema("report.schema.json"),
                                                format_checker=jsonschema.FormatChecker())
    validator.validate(report)
    return result.code, report


def test_drifted_cluster_fails_with_exit_1_and_names_every_drift() -> None:
    code, report = _json_report(str(DRIFTED))
    assert code == 1
    failed = {(f["rule"], f["object"]["kind"], f["object"]["namespace"], f["object"]["name"])
              for f in report["findings"] if f["status"] == "failed"}
    assert failed == {
        ("etp-local-under-l2", "Service", "mail", "mailpit-smtp"),
        ("kube-proxy-leftover", "ConfigMap", "kube-system", "kube-proxy"),
        ("kube-proxy-leftover", "DaemonSet", "kube-system", "kube-proxy"),
        ("lb-pool-v2alpha1", "CiliumLoadBalancerIPPool", None, "default-pool"),
        ("lb-pool-v2alpha1", "CustomResourceDefinition", None, "ciliumloadbalancerippools.cilium.io"),
        ("lb-service-not-excepted", "Service", "mail", "mailpit-smtp"),
        ("namespace-missing-default-deny", "Namespace", None, "mail"),
        ("namespace-missing-default-deny", "Namespace", None, "monitoring"),
        ("nodeport-service-not-excepted", "Service", "mlflow", "mlflow-nodeport"),
    }
    excepted = {(f["object"]["name"], f["exception"]["name"]) for f in report["findings"] if f["status"] == "excepted"}
    # The edge Gateway's Service is sanctioned by the posture (exposure.mode gateway), no exception needed.
    assert excepted == {("kubernetes-dashboard-nodeport", "kubernetes-dashboard")}
    assert report["summary"]["complete"] is True
    statuses = {e["name"]: e["status"] for e in report["exceptions"]}
    assert statuses == {"kubernetes-dashboard": "used"}
    sanctioned = {(e["subject"]["object"]["name"], e["verdict"]["status"]) for e in report["exposures"]
                  if e["subject"]["object"]["name"] == "cilium-gateway-edge"}
    assert sanctioned == {("cilium-gateway-edge", "sanctioned")}


def test_findings_point_at_file_and_line() -> None:
    _, report = _json_report(str(DRIFTED))
    lines = DRIFTED.read_text(encoding="utf-8").splitlines()
    for finding in report["findings"]:
        assert finding["file"] == str(DRIFTED)
        # kubectl's JSON puts an item's opening brace on the reported line; its
        # identity follows within the object.
        assert lines[finding["line"] - 1].strip() == "{"


def test_clean_cluster_passes_with_exit_0_even_when_completeness_is_required() -> None:
    code, report = _json_report(str(CLEAN), "--require-complete")
    assert code == 0
    assert report["summary"]["failed"] == 0
    assert {r["status"] for r in report["rules"]} == {"passed"}


def test_fail_on_threshold() -> None:
    # Only the v2alpha1 pool (a warning) is selected: below the default threshold...
    assert run_cli(str(DRIFTED), "--rule", "lb-pool-v2alpha1", *AS_OF).code == 0
    # ...and failing once warnings count.
    assert run_cli(str(DRIFTED), "--rule", "lb-pool-v2alpha1", "--fail-on", "warning", *AS_OF).code == 1


def test_not_run_is_exit_3_only_with_require_complete(tmp_path: Path) -> None:
    services_only = tmp_path / "svc.json"
    report = json.loads(DRIFTED.read_text(encoding="utf-8"))
    report["items"] = [item for item in report["items"]
                       if item["kind"] == "Service" and item["spec"]["type"] == "ClusterIP"]
    services_only.write_text(json.dumps(report), encoding="utf-8")
    relaxed = run_cli(str(services_only), *AS_OF)
    assert relaxed.code == 0, relaxed.stdout
    not_run = " ".join(relaxed.stdout.split()).split("NOT RUN ", 1)[1].split(" (the input does not show")[0]
    assert "aws-vpc-cni-leftover" in not_run.split(", ")  # one line of ids: -v says why
    assert "Verdict: PASS on what could be checked" in " ".join(relaxed.stdout.split())
    verbose = run_cli(str(services_only), "-v", *AS_OF, env={"COLUMNS": "200"})
    assert "NOT RUN aws-vpc-cni-leftover: the input holds no DaemonSet.apps objects" in verbose.stdout.splitlines()
    strict = run_cli(str(services_only), "--require-complete", *AS_OF)
    assert strict.code == 3
    assert "INCOMPLETE" in strict.stdout
    assert "NOT RUN aws-vpc-cni-leftover: the input holds no DaemonSet.apps objects" in " ".join(strict.stdout.split())


def test_usage_errors_are_exit_2_one_line() -> None:
    for args in (["--rule", "no-such-rule", str(CLEAN)], ["--format", "yaml", str(CLEAN)],
                 ["--as-of", "yesterday", str(CLEAN)]):
        result = run_cli(*args)
        assert result.code == 2, (args, result)
        assert "Traceback" not in result.stderr
        assert result.stdout == ""


def test_missing_path_is_exit_2(tmp_path: Path) -> None:
    result = run_cli(str(tmp_path / "nope.json"))
    assert result.code == 2
    assert result.stderr.strip() == f"audit: error: {tmp_path / 'nope.json'}: no such file or folder"


def test_stdin_is_read_with_a_name() -> None:
    result = run_cli("-", "--format", "json", *AS_OF, stdin=DRIFTED.read_bytes())
    assert result.code == 1
    report = json.loads(result.stdout)
    assert report["target"]["inputs"] == ["<stdin>"]
    assert all(f["file"] == "<stdin>" for f in report["findings"])


def test_yaml_dump_gives_the_same_verdict_as_json(tmp_path: Path) -> None:
    import yaml

    as_yaml = tmp_path / "drifted.yaml"
    as_yaml.write_text(yaml.safe_dump(json.loads(DRIFTED.read_text(encoding="utf-8"))), encoding="utf-8")
    _, from_json = _json_report(str(DRIFTED))
    _, from_yaml = _json_report(str(as_yaml))
    def strip(report: dict[str, Any]) -> list[tuple[Any, ...]]:
        # Messages cite where cilium-config was read: the file and line differ by format.
        return [(f["rule"], f["status"], f["object"], re.sub(r"\([^()]*:\d+\)", "(where)", f["message"]))
                for f in report["findings"]]

    assert strip(from_json) == strip(from_yaml)


def test_output_files_are_written_and_stdout_matches(tmp_path: Path) -> None:
    json_path, junit_path = tmp_path / "out" / "audit.json", tmp_path / "out" / "audit.junit.xml"
    result = run_cli(str(DRIFTED), "--json", str(json_path), "--junit", str(junit_path), "--format", "json", *AS_OF)
    assert result.code == 1
    assert json_path.read_text(encoding="utf-8") == result.stdout
    assert junit_path.read_text(encoding="utf-8").startswith("<?xml")
    assert not list((tmp_path / "out").glob(".audit-*")), "no temporary file is left behind"


def test_bad_input_writes_no_report_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: x\n", encoding="utf-8")
    json_path = tmp_path / "audit.json"
    result = run_cli(str(broken), "--json", str(json_path))
    assert result.code == 2
    assert not json_path.exists()
    assert len(result.stderr.strip().splitlines()) == 1
    assert str(broken) in result.stderr


def test_same_input_same_bytes(tmp_path: Path) -> None:
    outputs = []
    for _ in range(2):
        for fmt in ("text", "json", "junit"):
            outputs.append(run_cli(str(DRIFTED), "--format", fmt, *AS_OF).stdout)
    assert outputs[:3] == outputs[3:]


def test_folder_input_reports_relative_files(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    (tree / "apps" / "mail").mkdir(parents=True)
    (tree / "apps" / "mail" / "service.yaml").write_text(
        "# smtp for the LAN\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: smtp\n  namespace: mail\n"
        "spec:\n  type: LoadBalancer\n  ports:\n    - port: 25\n", encoding="utf-8")
    (tree / "apps" / "mail" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [service.yaml]\n",
        encoding="utf-8")
    (tree / ".git").mkdir()
    (tree / ".git" / "junk.yaml").write_text("{{ not yaml", encoding="utf-8")
    result = run_cli("repo", "--format", "json", "--rule", "lb-service-not-excepted", *AS_OF, cwd=tmp_path)
    assert result.code == 1, result.stderr
    report = json.loads(result.stdout)
    (finding,) = report["findings"]
    assert (finding["file"], finding["line"]) == ("repo/apps/mail/service.yaml", 3)
    assert report["ignoredDocuments"] == 1  # the Kustomization


def test_rules_and_explain() -> None:
    listing = run_cli("rules", "--format", "json")
    assert listing.code == 0
    ids = [rule["id"] for rule in json.loads(listing.stdout)]
    assert ids == sorted(ids) and "etp-local-under-l2" in ids
    explained = run_cli("explain", "etp-local-under-l2")
    assert explained.code == 0
    assert "Why" in explained.stdout and "Fix" in explained.stdout
    assert "externalTrafficPolicy: Local" in explained.stdout
    assert run_cli("explain", "nope").code == 2


def test_version_and_help() -> None:
    from auditor import __version__

    assert run_cli("--version").stdout.splitlines()[0] == f"audit {__version__}"
    helped = run_cli("--help")
    assert helped.code == 0 and "Exit codes" in helped.stdout
    assert run_cli("scan", "--help").code == 0


def test_text_report_has_tables_summary_and_no_colour_with_no_color() -> None:
    result = run_cli(str(DRIFTED), *AS_OF)
    assert "\033[" not in result.stdout
    passed = sum(1 for line in run_cli("rules", "--format", "json").stdout.split('"id"')) - 1 - 6
    # One excepted finding since issue 12: the posture sanctions the edge Gateway's Service (no exception needed).
    assert f"9 findings failed, 1 excepted, {passed} rules passed, 0 rules not run" in result.stdout
    forced = run_cli(str(DRIFTED), "--color", *AS_OF)
    assert "\033[31m" in forced.stdout


@pytest.mark.parametrize("era", ["gateway-era", "loadbalancer-era"])
def test_platform_repository_audits_without_error(corpus: Path, era: str) -> None:
    result = run_cli(str(corpus / "univ-lehavre-cluster" / era), "--format", "json", *AS_OF)
    assert result.code in (0, 1, 3), result.stderr
    report = json.loads(result.stdout)
    assert not [r for r in report["rules"] if r["status"] == "error"], report["rules"]


def test_every_corpus_directory_audits_without_error(corpus: Path) -> None:
    folders = sorted({p.parent for p in corpus.rglob("*.yaml")})
    assert folders
    for folder in folders:
        result = run_cli(str(folder), "--format", "json", *AS_OF)
        assert result.code in (0, 1, 3), (folder, result.stderr)
        report = json.loads(result.stdout)
        assert not [r for r in report["rules"] if r["status"] == "error"], (folder, report["rules"])


def test_escape_sequences_from_the_input_reach_the_terminal_as_text(tmp_path: Path) -> None:
    """An object name can carry a terminal escape (clear screen, set title): printed as text."""
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "smtp\u001b]0;pwned\u0007\u001b[2J", "namespace": "mail"}, "spec": {"type": "LoadBalancer"}}),
        encoding="utf-8")
    for colour in ("--no-color", "--color"):
        result = run_cli(str(hostile), colour, "--rule", "lb-service-not-excepted", *AS_OF)
        assert result.code == 1
        assert "\u0007" not in result.stdout and "\u001b]" not in result.stdout and "\u001b[2J" not in result.stdout
        assert "\\x1b]0;pwned\\x07\\x1b[2J" in result.stdout.replace("\n", "")


# --- objects defined twice: visible in every report (issue 10, item 2) -------------------------

LB_EDGE = "apiVersion: v1\nkind: Service\nmetadata: {name: edge, namespace: app}\nspec: {type: LoadBalancer}\n"


def test_duplicate_identities_are_visible_in_every_format(tmp_path: Path, schemas: Path) -> None:
    import xml.etree.ElementTree as ET

    import xmlschema

    for folder in ("base", "overlay"):
        (tmp_path / "repo" / folder).mkdir(parents=True)
        (tmp_path / "repo" / folder / "svc.yaml").write_text(LB_EDGE, encoding="utf-8")
    args = ("repo", "--rule", "lb-service-not-excepted", "--as-of", "2026-11-29")
    outputs = {name: run_cli(*args, "--format", name, cwd=tmp_path)
               for name in ("text", "json", "junit", "sarif", "markdown")}
    # The two findings fail; the duplicate itself changes nothing.
    assert {result.code for result in outputs.values()} == {1}, outputs
    assert ("warning: Service/app/edge is defined 2 times in the input (repo/base/svc.yaml:1, repo/overlay/svc.yaml:1)"
            in " ".join(outputs["text"].stdout.split()))
    report = json.loads(outputs["json"].stdout)
    jsonschema.Draft202012Validator(load_schema("report.schema.json")).validate(report)
    assert report["duplicateObjects"] == [{
        "object": {"apiVersion": "v1", "kind": "Service", "namespace": "app", "name": "edge"},
        "definitions": [{"file": "repo/base/svc.yaml", "line": 1}, {"file": "repo/overlay/svc.yaml", "line": 1}],
    }]
    junit_path = tmp_path / "audit.xml"
    junit_path.write_text(outputs["junit"].stdout, encoding="utf-8")
    errors = list(xmlschema.XMLSchema(str(schemas / "jenkins-junit-10.xsd")).iter_errors(str(junit_path)))
    assert not errors, errors[:3]
    (case,) = [c for c in ET.fromstring(outputs["junit"].stdout).iter("testcase") if c.get("classname") == "(input)"]
    assert case.get("name") == "duplicate Service/app/edge"
    skipped = case.find("skipped")
    assert skipped is not None and "repo/base/svc.yaml:1, repo/overlay/svc.yaml:1" in skipped.get("message", "")
    sarif = json.loads(outputs["sarif"].stdout)
    sarif_schema = json.loads((schemas / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(sarif_schema).validate(sarif)
    (note,) = [n for n in sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
               if n["descriptor"]["id"] == "duplicate-object"]
    assert note["level"] == "warning"
    assert [loc["physicalLocation"]["artifactLocation"]["uri"] for loc in note["locations"]] == [
        "repo/base/svc.yaml", "repo/overlay/svc.yaml"]
    assert "### Objects defined more than once" in outputs["markdown"].stdout
    assert "| `Service/app/edge` | `repo/base/svc.yaml:1`, `repo/overlay/svc.yaml:1` |" in outputs["markdown"].stdout


def test_no_duplicates_no_trace_in_the_reports() -> None:
    text = run_cli(str(DRIFTED), *AS_OF).stdout
    assert "defined 2 times" not in text and "warning:" not in text
    assert json.loads(run_cli(str(DRIFTED), "--format", "json", *AS_OF).stdout)["duplicateObjects"] == []
    assert "(input)" not in run_cli(str(DRIFTED), "--format", "junit", *AS_OF).stdout


# --- fleet headings (issue 10, item 14) --------------------------------------------------------


def test_fleet_rule_with_failed_findings_is_headed_failed_when_another_cluster_errored(tmp_path: Path) -> None:
    from auditor import engine, exceptions_list, registry
    from auditor.engine import FleetCluster
    from auditor.fleet import merge_fleet
    from auditor.model import ClusterInfo
    from auditor.posture import Posture
    from auditor.report import renderer
    from auditor.snapshot import Coverage, CoverageState, Snapshot
    from auditor.sources.files import read_paths
    from tests.conftest import AS_OF as AS_OF_DATE

    (tmp_path / "svc.yaml").write_text(LB_EDGE, encoding="utf-8")
    rules = registry.select(registry.load_rules(plugins=False), ["lb-service-not-excepted"])
    none = exceptions_list.ExceptionList("(none)", [])
    lab = engine.run(read_paths([str(tmp_path / "svc.yaml")]), rules, none, Posture(), as_of=AS_OF_DATE)
    forbidden = Coverage(CoverageState.FAILED, "services: HTTP 403")
    unreadable = Snapshot.build([], mode="snapshot", listed={"Service": forbidden})
    prod = engine.run(unreadable, rules, none, Posture(), as_of=AS_OF_DATE)
    clusters = [FleetCluster("lab", ClusterInfo(context="lab"), lab.exit_code, lab.complete),
                FleetCluster("prod", ClusterInfo(context="prod"), prod.exit_code, prod.complete)]
    merged = merge_fleet([("lab", lab), ("prod", prod)], Snapshot.build([], mode="fleet"), clusters)
    assert merged.rules[0].status.value == "error"
    text = renderer("text")(merged)
    assert "FAILED lb-service-not-excepted (error)" in text and "EXCEPTED" not in text
    assert "  fix: Change the Service to type ClusterIP" in text
    assert "ERROR lb-service-not-excepted: prod: services: HTTP 403" in text


# --- zero rules (issue 10, item 10) ----------------------------------------------------------------


@pytest.mark.parametrize("command, extra", [
    ((), ()),
    ((), ("--require-complete",)),
    (("live",), ("--kubeconfig", "/nonexistent/kubeconfig")),  # refused before any cluster is contacted
], ids=["offline", "require-complete", "live"])
def test_selecting_no_rule_is_a_usage_error_not_a_pass(tmp_path: Path, command: tuple[str, ...],
                                                       extra: tuple[str, ...]) -> None:
    json_path = tmp_path / "audit.json"
    paths = () if command else (str(CLEAN),)
    result = run_cli(*command, *paths, "--rule", "lb-service-not-excepted", "--skip-rule", "lb-service-not-excepted",
                     "--json", str(json_path), *extra)
    assert result.code == 2, result
    assert result.stderr == ("audit: error: no rule selected: --rule/--skip-rule leave nothing to run "
                             "(see `audit rules`)\n")
    assert result.stdout == "" and not json_path.exists()


# --- hostile baselines (issue 10, item 11) ----------------------------------------------------------


def _baseline_with(tmp_path: Path, old: str, new: str) -> Path:
    report = run_cli(str(DRIFTED), "--format", "json", *AS_OF).stdout
    assert old in report
    path = tmp_path / "baseline.json"
    path.write_text(report.replace(old, new, 1), encoding="utf-8")
    return path


def test_baseline_with_a_five_thousand_digit_integer_is_refused_in_one_line(tmp_path: Path) -> None:
    path = _baseline_with(tmp_path, '"ignoredDocuments": 0', '"ignoredDocuments": ' + "9" * 5000)
    line = next(n for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "9" * 5000 in text)
    for args in ((str(DRIFTED), "--baseline", str(path), *AS_OF), ("diff", str(path), str(path))):
        result = run_cli(*args)
        assert result.code == 2, result
        assert result.stderr.endswith(f"{path}:{line}: baseline holds an integer too large to read (5,000 digits)\n"
                                      if args[0] != "diff" else
                                      f"{path}:{line}: report holds an integer too large to read (5,000 digits)\n")
        assert result.stdout == ""


@pytest.mark.parametrize("old, new, code", [('"asOf": "2026-11-29"', '"asOf": "2026-11-29\\ud800"', "\\ud800"),
                                            ('"name": "mailpit-smtp"', '"name": "mailpit\\udc00smtp"', "\\udc00")],
                         ids=["asOf", "object-name"])
def test_baseline_with_a_lone_surrogate_is_refused_in_one_line(tmp_path: Path, old: str, new: str, code: str) -> None:
    path = _baseline_with(tmp_path, old, new)
    line = next(n for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if code in text)
    for output in ("text", "json"):
        result = run_cli(str(DRIFTED), "--baseline", str(path), "--format", output, *AS_OF)
        assert result.code == 2, result
        assert result.stderr == (f"audit: error: {path}:{line}: baseline is not valid: a string holds a lone UTF-16 "
                                 f"surrogate {code}\n")
        assert result.stdout == ""


def _verdict_inputs(tmp_path: Path) -> dict[str, tuple[str, ...]]:
    services_only = tmp_path / "svc.json"
    report = json.loads(DRIFTED.read_text(encoding="utf-8"))
    report["items"] = [item for item in report["items"]
                       if item["kind"] == "Service" and item["spec"]["type"] == "ClusterIP"]
    services_only.write_text(json.dumps(report), encoding="utf-8")
    broken = tmp_path / "tree"
    broken.mkdir()
    (broken / "ok.json").write_text(CLEAN.read_text(encoding="utf-8"), encoding="utf-8")
    (broken / "bad.yaml").write_text("kind: Service\nmetadata: {name: [\n", encoding="utf-8")
    return {"pass": (str(CLEAN),), "fail": (str(DRIFTED),), "pass-on-what-was-checked": (str(services_only),),
            "incomplete": (str(broken),)}


@pytest.mark.parametrize("kind", ["pass", "fail", "pass-on-what-was-checked", "incomplete"])
def test_text_markdown_and_html_state_the_one_verdict_the_exit_code_is(tmp_path: Path, kind: str) -> None:
    """The verdict is decided once (`AuditResult.verdict`); each report words it, none decides it again."""
    words = {"pass": ("Verdict: PASS", "**Verdict: PASS**", '<p class="verdict pass">PASS</p>'),
             "fail": ("Verdict: FAIL (", "**Verdict: FAIL** —", '<p class="verdict fail">FAIL: '),
             "pass-on-what-was-checked": ("Verdict: PASS on what could be checked (",
                                          "**Verdict: PASS** on what could be checked —",
                                          '<p class="verdict pass">PASS on what could be checked: '),
             "incomplete": ("Verdict: INCOMPLETE (", "**Verdict: INCOMPLETE** —",
                            '<p class="verdict incomplete">INCOMPLETE: ')}[kind]
    codes = {"pass": 0, "fail": 1, "pass-on-what-was-checked": 0, "incomplete": 3}
    paths = _verdict_inputs(tmp_path)[kind]
    outputs = [run_cli(*paths, "--format", fmt, *AS_OF, env={"COLUMNS": "400"}) for fmt in ("text", "markdown", "html")]
    assert {output.code for output in outputs} == {codes[kind]}
    text, markdown, html = (output.stdout for output in outputs)
    verdict_line = next(line for line in text.splitlines() if line.startswith("Verdict:"))
    assert verdict_line.startswith(words[0]) and (kind != "pass" or verdict_line == "Verdict: PASS")
    assert words[1] in markdown and (kind != "pass" or "**Verdict: PASS**\n" in markdown)
    assert words[2] in html
