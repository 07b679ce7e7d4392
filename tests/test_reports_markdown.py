"""Markdown summary: parsed into headings, GFM tables and <details> blocks, then checked.

The parser below follows the GitHub Flavored Markdown spec for the parts the
report uses (ATX headings, pipe tables whose cells split on unescaped `|`,
backslash escapes of ASCII punctuation, code spans, HTML blocks); it shares no
code with the reporter. Checks compare cell contents with the JSON report of
the same run, never the whole document with a string.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import pytest

from auditor.report import markdown
from tests.ci_support import audit_ci, finding_keys
from tests.conftest import audit_text

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # GFM: backslash before ASCII punctuation


@dataclass
class Table:
    heading: str
    headers: list[str]
    rows: list[list[str]]
    in_details: str | None = None

    def column(self, name: str) -> list[str]:
        index = self.headers.index(name)
        return [row[index] for row in self.rows]


@dataclass
class Document:
    headings: list[tuple[int, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # <summary> texts
    paragraphs: list[str] = field(default_factory=list)

    def table_after(self, heading: str) -> list[Table]:
        return [t for t in self.tables if t.heading == heading]


def split_row(line: str) -> list[str]:
    """Cells of a GFM table row: split on pipes not escaped by a backslash."""
    body = line.strip()
    assert body.startswith("|") and body.endswith("|") and not body.endswith("\\|"), line
    cells, current, escaped = [], "", False
    for char in body[1:-1]:
        if char == "|" and not escaped:
            cells.append(current.strip())
            current = ""
        else:
            current += char
        escaped = char == "\\" and not escaped
    cells.append(current.strip())
    return cells


def inline_text(cell: str) -> str:
    """The literal text a cell renders to (code spans unwrapped, escapes resolved, emphasis markers dropped)."""
    out, pos = "", 0
    for match in re.finditer(r"(?<!\\)(`+)(.+?)(?<!`)\1(?!`)", cell):
        out += _plain(cell[pos:match.start()])
        content = match.group(2).replace("\\|", "|")
        out += content[1:-1] if content.startswith(" ") and content.endswith(" ") and content.strip() else content
        pos = match.end()
    return out + _plain(cell[pos:])


def _plain(text: str) -> str:
    text = re.sub(r"(?<!\\)\*\*", "", text)
    return _ESCAPE.sub(r"\1", text)


def parse(text: str) -> Document:
    doc = Document()
    lines = text.split("\n")
    heading, details = "", None
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := re.match(r"^(#{1,6}) (.*)$", line):
            heading = inline_text(m.group(2))
            doc.headings.append((len(m.group(1)), heading))
        elif line.startswith("<summary>"):
            details = re.sub(r"</?summary>", "", line)
            doc.details.append(details)
        elif line == "</details>":
            details = None
        elif line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|(\s*:?-+:?\s*\|)+$", lines[i + 1]):
            headers = split_row(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                row = split_row(lines[i])
                assert len(row) == len(headers), f"row with {len(row)} cells under {len(headers)} headers: {lines[i]}"
                rows.append([inline_text(cell) for cell in row])
                i += 1
            doc.tables.append(Table(heading, [inline_text(h) for h in headers], rows, details))
            continue
        elif line.strip() and not line.startswith("<"):
            doc.paragraphs.append(inline_text(line))
        i += 1
    return doc


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    run = audit_ci(tmp_path_factory.mktemp("markdown"), "mr")
    assert run.cli.code == 1, run.cli.stderr
    return run


@pytest.fixture(scope="module")
def doc(ci_run) -> Document:
    return parse(ci_run.text("markdown"))


def test_verdict_and_counts_table(ci_run, doc) -> None:
    summary = ci_run.json()["summary"]
    assert doc.headings[0] == (2, "Cilium exposure audit")
    assert any(p.startswith("Verdict: FAIL") for p in doc.paragraphs)
    counts = dict(doc.tables[0].rows)
    assert counts["Failing (fails the gate)"] == str(summary["failing"])
    assert counts["Failed findings"] == str(summary["failed"])
    assert counts["Excepted findings"] == str(summary["excepted"])
    assert counts["Rules not run"] == str(summary["rulesNotRun"])
    assert counts["Rules in error"] == str(summary["rulesError"])


def test_failing_findings_by_rule_with_remediation(ci_run, doc) -> None:
    report = ci_run.json()
    shown = set()
    for table in doc.tables:
        if "Where" in table.headers and table.in_details is None:
            rule = table.heading.split(" ")[0]
            for row in table.rows:
                shown.add((rule, row[table.headers.index("Object")]))
    assert shown == finding_keys(report, "failed")
    for finding in report["findings"]:
        if finding["status"] == "failed":
            heading = next(t for t in doc.tables if t.heading.startswith(finding["rule"] + " "))
            assert finding["message"] in heading.column("Message")
            assert f"{finding['file']}:{finding['line']}" in heading.column("Where")
            assert f"Fix. {finding['remediation']}" in doc.paragraphs


def test_excepted_findings_are_folded(ci_run, doc) -> None:
    report = ci_run.json()
    (table,) = [t for t in doc.tables if t.in_details and "excepted" in t.in_details]
    expected = [(f["rule"], f["exception"]["name"], f["exception"]["reason"]) for f in report["findings"] if f["status"] == "excepted"]
    assert list(zip(table.column("Rule"), table.column("Exception"), table.column("Reason"))) == expected


def test_rules_without_verdict_with_reasons(ci_run, doc) -> None:
    report = ci_run.json()
    expected = [[r["id"], r["status"], r["reason"]] for r in report["rules"] if r["status"] in ("not-run", "error")]
    assert [table.rows for table in doc.table_after("Rules without a verdict")] == ([expected] if expected else [])
    assert any("legacy-ftp matched nothing" in p for p in doc.paragraphs)


def test_partial_verdicts_with_what_they_did_not_see(ci_run, doc) -> None:
    report = ci_run.json()
    expected = [[r["id"], r["status"], u["what"], u["reason"]] for r in report["rules"] for u in r.get("didNotSee", [])]
    assert expected, "kube-proxy-leftover sees no DaemonSet in the CI tree"
    (table,) = doc.table_after("Partial verdicts")
    assert table.rows == expected


def test_the_summary_names_whose_posture_and_exceptions(ci_run, doc) -> None:
    assert "Posture: built-in platform defaults; exceptions: " in "\n".join(doc.paragraphs)
    assert any("legacy-ftp matched nothing" in p and "exceptions.yaml:9" in p and "stale? remove it" in p
               for p in doc.paragraphs)


def test_unused_builtin_entries_are_not_stale_and_only_listed_when_verbose(tmp_path) -> None:
    from tests.ci_support import CI
    from tests.conftest import run_cli

    def markdown_of(*extra: str) -> str:
        result = run_cli(str(CI / "mr"), "--rule", "nodeport-service-not-excepted", "--format", "markdown", *extra,
                         cwd=tmp_path)
        assert result.code == 1, result.stderr
        return result.stdout

    normal, verbose = markdown_of(), markdown_of("-v")
    assert "Posture and exceptions: built-in platform defaults (1 entry)" in normal  # the bundled exceptions.yaml
    assert "### Exception list" not in normal and "stale" not in verbose
    assert "- `kubernetes-dashboard` matched nothing (part of the built-in platform defaults)" in verbose


def test_baseline_sections(tmp_path) -> None:
    before = audit_ci(tmp_path / "main", "main", formats=("json",))
    after = audit_ci(tmp_path / "mr", "mr", formats=("json", "markdown"), extra=("--baseline", str(before.files["json"])))
    report, doc = after.json(), parse(after.text("markdown"))
    states = {}
    for table in doc.tables:
        if "Baseline" in table.headers:
            rule = table.heading.split(" ")[0]
            states.update({(rule, obj): state for obj, state in zip(table.column("Object"), table.column("Baseline"))})
    expected = {(rule, obj): f["baseline"] for f in report["findings"] if f["status"] == "failed"
                for rule, obj in [next(iter(finding_keys({"findings": [f]})))]}
    assert states == expected
    (fixed,) = [t for t in doc.tables if t.in_details and "fixed" in t.in_details]
    assert set(zip(fixed.column("Rule"), fixed.column("Object"))) == finding_keys({"findings": report["baseline"]["fixed"]})
    counts = dict(doc.tables[0].rows)
    assert counts["New findings (baseline)"] == str(report["baseline"]["new"])


def test_hostile_values_cannot_break_the_table_or_inject_markup(tmp_path) -> None:
    result = audit_text(tmp_path, "apiVersion: v1\nkind: Service\nmetadata: {name: smtp, namespace: mail}\n"
                                  "spec: {type: LoadBalancer}\n", rules=("lb-service-not-excepted",))
    hostile = "a | b ` c ``d`` [x](https://evil.example) <script>alert(1)</script> @all $x$ **bold**\nnext line \x00"
    result.findings = [dataclasses.replace(f, message=hostile) for f in result.findings]
    for rule in result.rules:
        rule.findings = [dataclasses.replace(f, message=hostile) for f in rule.findings]
    text = markdown.render(result)
    text.encode("utf-8")
    assert "<script>" not in text and "](" not in text
    doc = parse(text)  # asserts every row has as many cells as its header
    (table,) = [t for t in doc.tables if "Message" in t.headers and t.in_details is None]
    assert table.column("Message") == [" ".join(hostile.replace("\x00", "\ufffd").split())]


def test_long_tables_are_cut_with_a_pointer_to_the_json_report(tmp_path) -> None:
    services = "---\n".join(
        f"apiVersion: v1\nkind: Service\nmetadata: {{name: s{i}, namespace: mail}}\nspec: {{type: NodePort}}\n"
        for i in range(markdown.MAX_ROWS + 5)
    )
    result = audit_text(tmp_path, services, rules=("nodeport-service-not-excepted",))
    doc = parse(markdown.render(result))
    (table,) = [t for t in doc.tables if "Where" in t.headers]
    assert len(table.rows) == markdown.MAX_ROWS
    assert "… and 5 more (see the JSON report)" in doc.paragraphs


def test_same_input_gives_the_same_bytes(tmp_path) -> None:
    first = audit_ci(tmp_path / "a", "mr", formats=("markdown",))
    second = audit_ci(tmp_path / "b", "mr", formats=("markdown",))
    assert first.text("markdown") == second.text("markdown")
