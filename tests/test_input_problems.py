"""One bad file never hides the rest (issue 9 section 1): input problems, in every report format.

The fixture tree tests/fixtures/broken-tree/ is a small GitOps tree with one
broken manifest (apps/web/web.yaml: a valid LoadBalancer Service, then a
Deployment writing `image:` twice) among good ones, and two files that are not
Kubernetes manifests (mkdocs.yml with `!!python/name` tags, a Taskfile). Each
test runs the real command: the broken file is an input problem listed by
every format, none of its objects is used, every other file's findings are
all there, and the run exits 3; `--strict-input` stops at it (exit 2, one line).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from auditor import engine
from auditor.duplicates import find_duplicates
from auditor.exceptions_list import ExceptionList
from auditor.fleet import merge_fleet
from auditor.model import ProblemCode
from auditor.posture import Posture
from auditor.registry import load_rules
from auditor.report import render
from auditor.report.json_report import to_dict
from auditor.snapshot import Snapshot
from auditor.sources.files import ReadLimits, read_paths
from tests.ci_support import report_validator
from tests.conftest import FIXTURES, ROOT, SCHEMAS, run_cli

TREE = FIXTURES / "broken-tree"
TREE_REL = TREE.relative_to(ROOT).as_posix()
BROKEN = f"{TREE_REL}/apps/web/web.yaml"
PROBLEM = "duplicate key 'image' (first at line 26)"
AS_OF = ("--as-of", "2026-11-29")
FORMATS = ("json", "junit", "sarif", "markdown", "prometheus", "codequality", "html")


def _audit(tmp_path: Path, tree: str, *extra: str) -> tuple[int, str, str, dict[str, str]]:
    """Run the command on `tree` from the repository root, every format to a file: (code, stdout, stderr, files)."""
    files = {name: tmp_path / f"audit.{name}" for name in FORMATS}
    args = [arg for name, path in files.items() for arg in (f"--{name}", str(path))]
    result = run_cli(tree, *AS_OF, *args, *extra, env={"COLUMNS": "200", "SOURCE_DATE_EPOCH": "1764000000"})
    written = {name: path.read_text(encoding="utf-8") for name, path in files.items() if path.exists()}
    return result.code, result.stdout, result.stderr, written


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, str, dict[str, str]]:
    return _audit(tmp_path_factory.mktemp("broken"), TREE_REL)


def _finding_keys(report: dict) -> list[tuple[str, str, str | None, str, str]]:
    return sorted((f["rule"], f["object"]["kind"], f["object"]["namespace"], f["object"]["name"], f["message"])
                  for f in report["findings"])


def test_the_run_is_incomplete_and_every_good_file_is_audited(broken, tmp_path: Path) -> None:
    code, _, stderr, files = broken
    assert code == 3 and stderr == "", stderr
    report = json.loads(files["json"])
    # The same tree without the broken file: the same findings, to the byte of their messages.
    without = tmp_path / "tree"
    shutil.copytree(TREE, without)
    (without / "apps" / "web" / "web.yaml").unlink()
    reference_code, _, reference_stderr, reference = _audit(tmp_path / "out", str(without))
    assert reference_code == 1, reference_stderr
    expected = json.loads(reference["json"])
    assert _finding_keys(report) == _finding_keys(expected) and report["findings"]
    assert {r["id"]: r["status"] for r in report["rules"]} == {r["id"]: r["status"] for r in expected["rules"]}
    assert report["summary"]["exitCode"] == 3 and report["summary"]["complete"] is False
    assert expected["summary"]["inputProblems"] == 0 and expected["inputProblems"] == []


def test_json_lists_the_problem_and_validates(broken) -> None:
    report = json.loads(broken[3]["json"])
    assert report["inputProblems"] == [{"file": BROKEN, "line": 28, "code": "duplicate-key", "message": PROBLEM}]
    assert report["summary"]["inputProblems"] == 1
    errors = list(report_validator().iter_errors(report))
    assert not errors, [e.message for e in errors[:5]]


def test_objects_of_the_broken_file_are_never_half_used(broken) -> None:
    """Its first document is a valid LoadBalancer Service: no format may report it, or its namespace."""
    _, stdout, _, files = broken
    report = json.loads(files["json"])
    assert not [f for f in report["findings"] if f["object"]["namespace"] == "web" or f["object"]["name"] == "web"]
    assert not [e for e in report["exposures"] if e["subject"]["object"]["namespace"] == "web"]
    assert "Service/web/web" not in stdout and "Namespace/web" not in stdout
    for name in ("junit", "sarif", "markdown", "codequality", "html"):
        assert "Service/web/web" not in files[name], name
    assert report["ignoredDocuments"] == 2  # mkdocs.yml, Taskfile.yaml: skipped and counted, not problems


def test_text_lists_the_problem_first_and_counts_it(broken) -> None:
    stdout = broken[1]
    lines = stdout.splitlines()
    assert lines[0] == f"Audit of {TREE_REL}: 7 objects, 2 documents ignored"
    heading = next(index for index, line in enumerate(lines) if line.startswith("INPUT PROBLEMS"))
    assert heading < next(index for index, line in enumerate(lines) if line.startswith("FAILED"))
    assert lines[heading + 1] == f"  {BROKEN}:28: {PROBLEM} [duplicate-key]"
    assert lines[-2].endswith(", 1 input problem")
    assert lines[-1] == "Verdict: INCOMPLETE (1 input problem: files not audited; exit 3)"


def test_junit_has_an_error_case_in_the_input_suite(broken) -> None:
    root = ET.fromstring(broken[3]["junit"])
    (suite,) = [s for s in root.findall("testsuite") if s.get("name") == "(input)"]
    (case,) = suite.findall("testcase")
    assert case.get("name") == f"input problem {BROKEN}:28" and case.get("classname") == "(input)"
    error = case.find("error")
    assert error is not None and error.get("type") == "duplicate-key" and PROBLEM in error.get("message", "")
    assert suite.get("errors") == "1" and int(root.get("errors", "0")) >= 1
    schema_path = SCHEMAS / "jenkins-junit-10.xsd"
    if schema_path.is_file():  # the shared schemas may be absent: the rest still holds
        xmlschema = pytest.importorskip("xmlschema")
        errors = list(xmlschema.XMLSchema(str(schema_path)).iter_errors(broken[3]["junit"]))
        assert not errors, [str(e.reason) for e in errors[:5]]


def test_sarif_has_a_located_notification_with_its_own_descriptor(broken) -> None:
    log = json.loads(broken[3]["sarif"])
    (run,) = log["runs"]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 3
    (note,) = [n for n in invocation["toolExecutionNotifications"] if n["descriptor"]["id"] == "input-problem"]
    descriptors = run["tool"]["driver"]["notifications"]
    assert descriptors[note["descriptor"]["index"]]["id"] == "input-problem"
    assert note["level"] == "error" and PROBLEM in note["message"]["text"]
    assert note["locations"] == [{"physicalLocation": {
        "artifactLocation": {"uri": BROKEN, "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 28}}}]
    assert note["properties"] == {"code": "duplicate-key"}
    schema_path = ROOT.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"
    if schema_path.is_file():
        import jsonschema

        schema = json.loads(schema_path.read_text(encoding="utf-8"))
        errors = list(jsonschema.Draft4Validator(schema).iter_errors(log))
        assert not errors, [e.message for e in errors[:5]]


def test_markdown_has_a_section(broken) -> None:
    markdown = broken[3]["markdown"]
    assert "**Verdict: INCOMPLETE** — 1 input problem: files not audited (exit 3)" in markdown
    section = markdown.split("### Input problems", 1)[1].split("\n### ", 1)[0]
    assert f"| `{BROKEN}:28` | `duplicate-key` | duplicate key 'image' \\(first at line 26\\) |" in section
    assert "| Input problems | 1 |" in markdown


def test_code_quality_reports_a_blocker_at_the_line(broken) -> None:
    issues = json.loads(broken[3]["codequality"])
    (issue,) = [i for i in issues if i["check_name"] == "input-problem"]
    assert issue["severity"] == "blocker" and PROBLEM in issue["description"]
    assert issue["location"] == {"path": BROKEN, "lines": {"begin": 28}}
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_html_lists_it_in_its_input_problems_table(broken) -> None:
    page = broken[3]["html"]
    table = page.split('<table id="input-problems">', 1)[1].split("</table>", 1)[0]
    assert (f"<td><code>{BROKEN}:28</code></td><td>duplicate key &#x27;image&#x27; (first at line 26); none of the "
            "file&#x27;s objects was audited</td><td>file not read (duplicate-key)</td>") in table
    assert "INCOMPLETE: 1 input problem: files not audited (exit 3)" in page


def test_prometheus_counts_it(broken) -> None:
    metrics = broken[3]["prometheus"].splitlines()
    assert "cilium_exposure_audit_input_problems 1" in metrics
    assert "cilium_exposure_audit_complete 0" in metrics and "cilium_exposure_audit_exit_code 3" in metrics


def test_strict_input_stops_at_the_broken_file_with_one_line(tmp_path: Path) -> None:
    code, stdout, stderr, files = _audit(tmp_path, TREE_REL, "--strict-input")
    assert code == 2 and stdout == "" and files == {}
    assert stderr == f"audit: error: {BROKEN}:28: {PROBLEM}\n"


def test_a_broken_file_named_on_the_command_line_stops_the_run(tmp_path: Path) -> None:
    code, _, stderr, files = _audit(tmp_path, BROKEN)
    assert code == 2 and files == {} and stderr == f"audit: error: {BROKEN}:28: {PROBLEM}\n"


def test_the_same_bytes_every_run(broken, tmp_path: Path) -> None:
    again = _audit(tmp_path, TREE_REL)
    assert again[3] == broken[3] and again[1] == broken[1]


# --- the record: codes, and what makes one ------------------------------------------------------------

SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: ok, namespace: app}\nspec: {ports: [{port: 80}]}\n"
DEFECTS = [
    ("bad.yaml", b"apiVersion: v1\nkind: Service\nmetadata: {name: x\n", ProblemCode.INVALID_YAML, 4),
    ("bad.json", b'{"apiVersion": "v1", "kind": "Service",\n "metadata": {"name": }}\n', ProblemCode.INVALID_JSON, 2),
    ("bad.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nmetadata: {name: y}\n",
     ProblemCode.DUPLICATE_KEY, 4),
    ("bad.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  url: !env_var URL\n",
     ProblemCode.LOCAL_TAG, 5),
    ("bad.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: caf\xe9}\n", ProblemCode.NOT_TEXT, 3),
    ("bad.yaml", b"\xff\xfea\x00p\x00i\x00", ProblemCode.NOT_TEXT, None),
    ("bad.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: &a b, c: *a}\n",
     ProblemCode.TOO_LARGE, 1),  # the document is over the alias limit: its first line
]


@pytest.mark.parametrize("name, content, code, line", DEFECTS,
                         ids=[f"{code.value}-{index}" for index, (_, _, code, _) in enumerate(DEFECTS)])
def test_each_kind_of_defect_has_its_code(tmp_path: Path, name: str, content: bytes, code: ProblemCode,
                                          line: int | None) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.yaml").write_text(SERVICE, encoding="utf-8")
    (tmp_path / "tree" / name).write_bytes(content)
    limits = ReadLimits(max_alias_expansion=0)  # any alias is over the limit: the too-large case
    snapshot = read_paths([str(tmp_path / "tree")], limits=limits, input_problems=True)
    assert [obj.name for obj in snapshot] == ["ok"]
    (problem,) = snapshot.input_problems
    assert (problem.file, problem.code, problem.line) == (str(tmp_path / "tree" / name), code, line)
    assert problem.message and not problem.message.startswith(str(tmp_path))


def test_a_file_over_the_size_limit_is_a_problem_of_that_file(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.yaml").write_text(SERVICE, encoding="utf-8")
    (tmp_path / "tree" / "big.yaml").write_text(SERVICE + "#" * 500 + "\n", encoding="utf-8")
    snapshot = read_paths([str(tmp_path / "tree")], limits=ReadLimits(max_file_bytes=200), input_problems=True)
    (problem,) = snapshot.input_problems
    assert problem.code is ProblemCode.TOO_LARGE and "over the 200-byte limit" in problem.message


def test_input_whose_every_manifest_is_broken_is_still_reported(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "bad.yaml").write_text("apiVersion: v1\nkind: [\n", encoding="utf-8")
    result = run_cli(str(tmp_path / "tree"), "--format", "json", *AS_OF)
    assert result.code == 3 and result.stderr == ""
    report = json.loads(result.stdout)
    assert [p["code"] for p in report["inputProblems"]] == ["invalid-yaml"]
    assert {r["status"] for r in report["rules"]} == {"not-run"}


def _result(tmp_path: Path, name: str) -> engine.AuditResult:
    tree = tmp_path / name
    tree.mkdir()
    (tree / "svc.yaml").write_text(SERVICE, encoding="utf-8")
    (tree / "broken.yaml").write_text("apiVersion: v1\nkind: Service\nkind: Service\n", encoding="utf-8")
    snapshot = read_paths([str(tree)], input_problems=True)
    return engine.run(snapshot, load_rules(plugins=False), ExceptionList("(none)", []), Posture(),
                      as_of=dt.date(2026, 11, 29))


def test_a_fleet_tags_each_problem_with_its_cluster(tmp_path: Path) -> None:
    parts = [(name, _result(tmp_path, name)) for name in ("lab", "prod")]
    fleet = merge_fleet(parts, Snapshot.build([], mode="fleet"))
    assert [(p.cluster, Path(p.file).parent.name, p.code) for p in fleet.input_problems] == [
        ("lab", "lab", ProblemCode.DUPLICATE_KEY), ("prod", "prod", ProblemCode.DUPLICATE_KEY)]
    assert fleet.exit_code == 3
    entries = to_dict(fleet)["inputProblems"]
    assert [entry["cluster"] for entry in entries] == ["lab", "prod"]
    assert "lab: " in render("text", fleet) and "prod: " in render("text", fleet)


def test_a_remaining_duplicate_becomes_an_input_problem_with_one_call(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.yaml").write_text(SERVICE, encoding="utf-8")
    (tmp_path / "tree" / "b.yaml").write_text("# the same Service, copied\n" + SERVICE, encoding="utf-8")
    snapshot = read_paths([str(tmp_path / "tree")], input_problems=True)
    result = engine.run(snapshot, load_rules(plugins=False), ExceptionList("(none)", []), Posture(),
                        as_of=dt.date(2026, 11, 29))
    assert result.exit_code != 3 and not result.input_problems  # a duplicate alone does not change the exit code
    (duplicate,) = find_duplicates(snapshot.objects)
    promoted = replace(result, input_problems=result.input_problems + duplicate.input_problems())
    (problem,) = promoted.input_problems
    assert (Path(problem.file).name, problem.line, problem.code) == ("b.yaml", 2, ProblemCode.DUPLICATE_OBJECT)
    assert problem.message.startswith("defines Service/app/ok again (first defined at ")
    assert promoted.exit_code == 3 and to_dict(promoted)["inputProblems"][0]["code"] == "duplicate-object"
