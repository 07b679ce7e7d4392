"""The HTML report: one self-contained page (`--format html`, `--html FILE`).

It loads nothing: the style sheet and the small script are inline, the
exposure map is inline SVG drawn by `auditor.report.svg_map`, and a
Content-Security-Policy forbids every fetch (auditor/report/html_assets.py).
It reads without JavaScript: every row is shown, the filter form hidden; with
JavaScript the findings can be filtered by rule, severity, namespace and
cluster.

Sections: the verdict and counts, the map of the ways in, the failed
findings, the excepted findings with their reasons, every way in with its
verdict, the rules, the input problems, the posture and exception list in
force, and the baseline comparison when there is one.

Everything from the input, the posture and the exception list is
HTML-escaped; the only links are to the page's own sections. No timestamp
but the report's as-of date: the same result gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from auditor.baseline import UNCHANGED, Baseline
from auditor.engine import AuditResult, RuleResult, VerdictKind
from auditor.exposure import JudgedEntrance
from auditor.model import Finding, FindingStatus, RuleStatus
from auditor.report import exposure_map, svg_map
from auditor.report.html_assets import CONTENT_SECURITY_POLICY, SCRIPT, STYLE
from auditor.report.sources import BUILTIN, ConfigSources
from auditor.report.svg_map import escape
from auditor.report.verdict import Templates, verdict_line

NO_NAMESPACE = "(none)"  # the filter value of cluster-scoped objects


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def _code(value: object) -> str:
    return f"<code>{escape(value)}</code>"


def _table(headers: Sequence[str], rows: Iterable[str], attributes: str = "") -> list[str]:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return [f"<table{attributes}>", f"<thead><tr>{head}</tr></thead>", "<tbody>", *rows, "</tbody>", "</table>"]


def _row(cells: Iterable[str], attributes: str = "") -> str:
    return f"<tr{attributes}>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


# --- header ------------------------------------------------------------------------------------------


_VERDICTS: Templates = {
    VerdictKind.INCOMPLETE: '<p class="verdict incomplete">INCOMPLETE: {reason} (exit 3)</p>',
    VerdictKind.FAIL: '<p class="verdict fail">FAIL: {failing} at or above {fail_on} (exit 1)</p>',
    VerdictKind.PASS_ON_WHAT_WAS_CHECKED: '<p class="verdict pass">PASS on what could be checked: {reason}</p>',
    VerdictKind.PASS: '<p class="verdict pass">PASS</p>',
}


def _verdict(result: AuditResult) -> str:
    return verdict_line(result.verdict(), result.fail_on, _VERDICTS, _plural, escape)


def _target(result: AuditResult) -> str:
    snapshot = result.snapshot
    if result.fleet:
        names = ", ".join(_code(m.name) for m in result.fleet)
        return f"<p>Fleet of {len(result.fleet)} clusters: {names}</p>"
    if snapshot.cluster is not None and snapshot.mode == "live":
        cluster = snapshot.cluster
        name = cluster.label or cluster.context or "?"
        return (f"<p>Cluster {_code(name)} ({escape(cluster.server or '?')}, Kubernetes "
                f"{escape(cluster.version or '?')}): {_plural(len(snapshot), 'object')}</p>")
    inputs = ", ".join(_code(path) for path in snapshot.inputs) or "(no input)"
    ignored = f", {_plural(len(snapshot.ignored), 'document')} skipped" if snapshot.ignored else ""
    return f"<p>Input {inputs}: {_plural(len(snapshot), 'object')}{ignored}</p>"


def _counts(result: AuditResult) -> str:
    summary = result.summary()
    items = [("failing (fails the gate)", summary.failing), ("failed findings", summary.failed),
             ("excepted", summary.excepted), ("ways in", len(result.exposures)),
             ("rules passed", summary.rules_passed), ("rules failed", summary.rules_failed),
             ("rules not run", summary.rules_not_run), ("rules in error", summary.rules_error),
             ("rules partial", summary.rules_partial), ("input problems", summary.input_problems)]
    listed = "".join(f"<li><b>{count:,}</b> {escape(name)}</li>" for name, count in items)
    return f'<ul class="counts">{listed}</ul>'


def _nav(sections: Sequence[tuple[str, str]]) -> str:
    return "<nav>" + "".join(f'<a href="#{anchor}">{escape(title)}</a>' for anchor, title in sections) + "</nav>"


# --- the map -----------------------------------------------------------------------------------------


def _legend() -> str:
    items = [("drift", "drift: its rule reports it"), ("excepted", "excepted by a named entry"),
             ("sanctioned", "sanctioned by the posture"), ("unjudged", "not judged (rule not run)"),
             ("folded", "folded namespace")]
    return '<ul class="legend">' + "".join(f'<li><span class="swatch {cls}"></span>{escape(text)}</li>'
                                           for cls, text in items) + "</ul>"


def _map_section(result: AuditResult) -> list[str]:
    lines = ['<h2 id="map">Ways in</h2>']
    if not result.exposures:
        return [*lines, "<p>No way in from outside the cluster in this input.</p>"]
    drawn = exposure_map.build(result.exposures, svg_map.CAP)
    counts = exposure_map.describe_counts(drawn.counts)
    lines.append(f"<p>{_plural(drawn.ways, 'way')} in from outside the cluster ({escape(counts)}): the LAN reaches "
                 "an address (through its announcement), a port on it leads to a Gateway listener and route, or "
                 "straight to a Service or workload. Each box is as red as the worst way in through it.</p>")
    if drawn.folding.nodes:
        lines.append(f"<p>Large map: {escape(drawn.folding.sentence)} (at most {svg_map.CAP} nodes); "
                     '<a href="#exposures">the table below</a> lists every way in.</p>')
    return [*lines, _legend(), '<div class="map">', svg_map.render(drawn, "Exposure map: the ways in"), "</div>"]


# --- findings ----------------------------------------------------------------------------------------


def _filter_values(finding: Finding) -> dict[str, str]:
    return {"rule": finding.rule, "severity": finding.severity.value if finding.severity else "",
            "namespace": finding.object.namespace or NO_NAMESPACE, "cluster": finding.cluster or ""}


def _data(values: dict[str, str], css: str = "") -> str:
    classes = f' class="{escape(css)}"' if css else ""
    return classes + "".join(f' data-{name}="{escape(value)}"' for name, value in values.items())


def _where(finding: Finding) -> str:
    return _code(finding.source) if finding.source is not None else ""


def _object(finding: Finding) -> str:
    display = finding.object.display
    return _code(f"{finding.cluster}: {display}" if finding.cluster else display)


def _filters(findings: Sequence[Finding], fleet: bool) -> list[str]:
    """The filter form, hidden until the script shows it (so without JavaScript nothing is filtered)."""
    names = ["rule", "severity", "namespace", *(["cluster"] if fleet else [])]
    out = ['<form id="filters" class="filters" hidden>']
    for name in names:
        values = sorted({_filter_values(f)[name] for f in findings})
        options = "".join(f'<option value="{escape(v)}">{escape(v or "(none)")}</option>' for v in values)
        out.append(f'<label>{name} <select name="{name}"><option value="">all</option>{options}</select></label>')
    out += ['<button type="button" id="filter-clear">show all</button>',
            '<span id="filter-status" class="muted" role="status"></span>', "</form>"]
    return out


def _failed_section(result: AuditResult) -> list[str]:
    failed = [f for f in result.findings if f.status is FindingStatus.FAILED]
    lines = ['<h2 id="findings">Failed findings</h2>']
    if result.findings:
        lines += _filters(result.findings, bool(result.fleet))
    if not failed:
        return [*lines, "<p>None.</p>"]
    remediation = {r.id: r.rule.remediation for r in result.rules if r.rule is not None}
    baseline = result.baseline
    headers = ["Rule", "Severity", "Object", "Message", "Where", "Fix", *(["Baseline"] if baseline else [])]
    rows = []
    for finding in failed:
        severity = finding.severity.value if finding.severity else ""
        cells = [_code(finding.rule), escape(severity), _object(finding), escape(finding.message), _where(finding),
                 escape(remediation.get(finding.rule, ""))]
        if baseline is not None:
            cells.append("unchanged" if baseline.state(finding) is UNCHANGED else "<b>new</b>")
        rows.append(_row(cells, _data(_filter_values(finding), severity)))
    return [*lines, *_table(headers, rows, ' id="failed-findings" data-filtered')]


def _excepted_section(result: AuditResult) -> list[str]:
    excepted = [f for f in result.findings if f.status is FindingStatus.EXCEPTED]
    lines = ['<h2 id="excepted">Excepted findings</h2>',
             "<p>Accepted drift: each is named in the exception list, with its reason.</p>"]
    if not excepted:
        return [*lines, "<p>None.</p>"]
    rows = [_row([_code(f.rule), _object(f), escape(f.message), _code(f.exception.name) if f.exception else "",
                  escape(f.exception.reason) if f.exception else "", _where(f)],
                 _data(_filter_values(f), "excepted")) for f in excepted]
    return [*lines, *_table(["Rule", "Object", "Message", "Exception", "Reason", "Where"], rows,
                            ' id="excepted-findings" data-filtered')]


# --- exposures ---------------------------------------------------------------------------------------


def _hops(judged: JudgedEntrance) -> str:
    entrance = judged.entrance
    parts = []
    if entrance.listener is not None:
        listener = entrance.listener
        gateway = listener.gateway
        parts.append(f"listener {_code(f'{gateway.namespace}/{gateway.name}' if gateway.namespace else gateway.name)} "
                     f"{escape(listener.name)} ({escape(listener.protocol)} {listener.port})")
    if entrance.route is not None:
        route = entrance.route
        note = "" if route.forwards else f' <span class="muted">forwards nothing: {escape(route.why)}</span>'
        name = f"{route.ref.namespace}/{route.ref.name}" if route.ref.namespace else route.ref.name
        parts.append(f"{escape(route.kind)} {_code(name)}{note}")
    return "<br>".join(parts)


def _refs(refs: Iterable[str]) -> str:
    return "<br>".join(_code(ref) for ref in refs)


def _verdict_cell(judged: JudgedEntrance) -> str:
    verdict = judged.verdict
    kind = verdict.kind.value
    detail = {"sanctioned": f"{verdict.by}: {verdict.reason}", "excepted": f"{verdict.by}: {verdict.reason}",
              "drift": f"{verdict.rule}: {verdict.reason}", "unjudged": verdict.reason}[kind]
    return f'<span class="status {kind}">{kind}</span><br>{escape(detail)}'


def _exposure_row(judged: JudgedEntrance) -> str:
    entrance = judged.entrance
    address = entrance.address.display
    where = f"{judged.cluster}: {address}" if judged.cluster else address
    announced = exposure_map.announcement_label(entrance) or entrance.announcing.state.value
    cells = [_code(where), escape(exposure_map.port_label(entrance)), escape(entrance.channel.value),
             escape(announced), _hops(judged), _refs(b.service.display for b in entrance.backends),
             _refs(w.ref.display for w in entrance.workloads), _code(entrance.subject.ref.display),
             _verdict_cell(judged)]
    return _row(cells, f' class="{judged.verdict.kind.value}"')


def _exposures_section(result: AuditResult) -> list[str]:
    lines = ['<h2 id="exposures">Every way in</h2>',
             "<p>By address, then port (the JSON report's <code>exposures</code>).</p>"]
    if not result.exposures:
        return [*lines, "<p>None.</p>"]
    headers = ["Address", "Port", "Channel", "Announced", "Listener, route", "Services", "Workloads", "Subject",
               "Verdict"]
    return [*lines, *_table(headers, (_exposure_row(j) for j in result.exposures), ' id="exposure-table"')]


# --- rules, input problems, sources, baseline ---------------------------------------------------------


def _rule_note(rule: RuleResult) -> str:
    """The title, or why there is no verdict; a partial verdict adds what the rule did not see."""
    text = escape(rule.reason or rule.title)
    if rule.partial:
        text += "".join(f"<br>did not see: {escape(str(unseen))}" for unseen in rule.unseen)
    return text


def _rules_section(result: AuditResult) -> list[str]:
    rows = [_row([_code(r.id), escape(r.severity.value), f'<span class="status {r.status.value}">'
                  f"{escape(r.status.value)}{' (partial)' if r.partial else ''}</span>", str(r.failed_count),
                  str(r.excepted_count), str(len(r.examined)), _rule_note(r)],
                 ' class="error"' if r.status is RuleStatus.ERROR else "")
            for r in result.rules]
    return ['<h2 id="rules">Rules</h2>',
            *_table(["Rule", "Severity", "Status", "Failed", "Excepted", "Checked", "Title, or why no verdict"],
                    rows, ' id="rule-table"')]


@dataclass(frozen=True)
class InputProblem:
    """One problem of the input, as the input-problems table lists it."""

    where: str  # file:line ("" when unknown)
    what: str
    kind: str


# Each source lists the input problems of one kind the result holds. A new kind the result
# carries (a per-file list of problems) is one more function here.
ProblemSource = Callable[[AuditResult], Iterable[InputProblem]]


def _file_problems(result: AuditResult) -> Iterable[InputProblem]:
    """Files that could not be read: none of their objects was audited (the run is incomplete)."""
    for problem in result.input_problems:
        yield InputProblem(problem.where, f"{problem.message}; none of the file's objects was audited",
                           f"file not read ({problem.code.value})")


def _duplicate_problems(result: AuditResult) -> Iterable[InputProblem]:
    for duplicate in result.duplicates:
        cluster = f"{duplicate.cluster}: " if duplicate.cluster else ""
        for source, what in duplicate.problems():
            yield InputProblem(str(source) if source else "", cluster + what, "object defined more than once")


INPUT_PROBLEMS: tuple[ProblemSource, ...] = (_file_problems, _duplicate_problems)


def _input_section(result: AuditResult, sources: Sequence[ProblemSource] = INPUT_PROBLEMS) -> list[str]:
    problems = [problem for source in sources for problem in source(result)]
    lines = ['<h2 id="input">Input problems</h2>']
    if problems:
        rows = [_row([_code(p.where) if p.where else "", escape(p.what), escape(p.kind)]) for p in problems]
        lines += ["<p>What the input got wrong, by file and line. A file that could not be read contributes none "
                  "of its objects, and the audit is incomplete (exit 3). An object defined more than once is audited "
                  "in each definition; a rule looking it up by name sees only the first.</p>",
                  *_table(["Where", "Problem", "Kind"], rows, ' id="input-problems"')]
    else:
        lines.append("<p>None.</p>")
    ignored = result.snapshot.ignored
    if ignored:
        rows = [_row([_code(doc.source), escape(doc.reason)]) for doc in ignored]
        lines += ["<details>", f"<summary>{_plural(len(ignored), 'document')} skipped: not Kubernetes objects"
                               "</summary>", *_table(["Where", "Why"], rows), "</details>"]
    return lines


def _sources_section(result: AuditResult) -> list[str]:
    sources = ConfigSources.of(result)
    posture = _code(sources.posture_file) if sources.posture_file else escape(BUILTIN)
    exceptions = _code(sources.exceptions_file) if sources.exceptions_file else escape(BUILTIN)
    lines = ['<h2 id="sources">Posture and exceptions</h2>', f"<p>Posture: {posture}.</p>",
             f"<p>Exception list: {exceptions} ({_plural(len(result.exceptions), 'entry')}), judged as of "
             f"{escape(result.as_of.isoformat())}.</p>"]
    rows = [_row([_code(u.entry.name), _refs(u.entry.rules), escape(u.status.value), str(u.matched),
                  escape(u.entry.expires.isoformat() if u.entry.expires else ""), escape(u.entry.reason),
                  _code(sources.entry_location(u.entry))]) for u in result.exceptions]
    if rows:
        lines += _table(["Entry", "Rules", "Status", "Matched", "Expires", "Reason", "Where"], rows,
                        ' id="exception-entries"')
    return lines


def _baseline_section(baseline: Baseline) -> list[str]:
    counts = baseline.counts()
    as_of = baseline.as_of if baseline.as_of is not None else "?"
    lines = ['<h2 id="baseline">Compared with the baseline</h2>',
             f"<p>Baseline {_code(baseline.path)} of {escape(as_of)}: <b>{counts.new} new</b>, "
             f"{counts.unchanged} unchanged, {counts.fixed} fixed, {counts.unverified} not rechecked.</p>"]
    rows = [_row([_code(e.get("rule", "")), escape(e.get("message", ""))]) for e in baseline.comparison.fixed]
    if rows:
        lines += ["<p>Fixed since the baseline:</p>", *_table(["Rule", "Message (in the baseline)"], rows)]
    return lines


# --- the page ----------------------------------------------------------------------------------------

_SECTIONS = (("map", "Ways in"), ("findings", "Failed findings"), ("excepted", "Excepted"),
             ("exposures", "Every way in"), ("rules", "Rules"), ("input", "Input problems"),
             ("sources", "Posture and exceptions"))


def _head(title: str) -> list[str]:
    return ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title>", f"<style>{STYLE}</style>", "</head>"]


def render(result: AuditResult, verbose: bool = False) -> str:
    """The report. `verbose` is accepted as for Markdown; the page always lists every exception entry."""
    del verbose
    body = ["<body>", "<header>", "<h1>Cilium exposure audit</h1>", _verdict(result), _target(result),
            f"<p>{escape(ConfigSources.of(result).sentence())}</p>", _counts(result), _nav(_SECTIONS), "</header>",
            "<main>", *_map_section(result), *_failed_section(result), *_excepted_section(result),
            *_exposures_section(result), *_rules_section(result), *_input_section(result),
            *_sources_section(result)]
    if result.baseline is not None:
        body += _baseline_section(result.baseline)
    body += [f"<p class='muted'>Note: {escape(note)}</p>" for note in result.notes]
    colophon = f"cilium-exposure-auditor, fail-on {result.fail_on.value}, exceptions as of {result.as_of.isoformat()}"
    body += ["</main>", f"<footer>{escape(colophon)}</footer>", f"<script>{SCRIPT}</script>", "</body>", "</html>"]
    return "\n".join([*_head("Cilium exposure audit"), *body]) + "\n"
