"""Markdown summary for CI job summaries and merge-request comments.

GitHub-flavoured Markdown (tables, `<details>`), which GitHub's job summary
($GITHUB_STEP_SUMMARY) and pull-request comments and GitLab's merge-request
notes all render: the verdict and counts first, then the failing findings
grouped by rule with the remediation, the excepted findings folded in a
`<details>` block, the files that could not be read (input problems), the
rules that could not run with their reasons, the partial verdicts with what
they did not see, and, with `--baseline`, what is new and what was fixed.

Every value that comes from the audited input or the exception list is
escaped (Markdown punctuation, `|`, HTML), so a hostile manifest cannot add
links, mentions or table cells to a comment.
"""

from __future__ import annotations

import re
from typing import Any

from auditor.baseline import UNCHANGED, Baseline
from auditor.engine import AuditResult, VerdictKind
from auditor.exceptions_list import EntryStatus
from auditor.model import Finding, FindingStatus, RuleStatus
from auditor.report import exposure_map, mermaid
from auditor.report import repository as tree_words
from auditor.report.diff import entry_display
from auditor.report.sources import BUILTIN, ConfigSources
from auditor.report.verdict import Templates, verdict_line
from auditor.repository import RemarkKind

# ASCII punctuation that can start Markdown or HTML syntax inline ($ is math on
# GitHub, @ a mention, & an entity); escaping it with a backslash is valid
# CommonMark and renders as the character itself.
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&@$])")


# Control characters and lone surrogates (hostile input) would garble a
# comment or fail to encode as UTF-8: each becomes U+FFFD.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def _flat(text: str) -> str:
    return " ".join(_UNPRINTABLE.sub("\ufffd", str(text)).split())


def escape(text: str) -> str:
    """`text` as literal Markdown inline content, on one line (safe in table cells)."""
    flat = _flat(text)
    return _SPECIAL.sub(r"\\\1", flat)


def code(text: str) -> str:
    """`text` as an inline code span (on one line, safe in table cells)."""
    flat = _flat(text).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


# GitHub refuses comments over 65,536 characters and job summaries over 1 MiB:
# long tables are cut, saying how many rows the JSON report has beyond.
MAX_ROWS = 100


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell or " " for cell in row) + " |" for row in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines += ["", f"… and {len(rows) - MAX_ROWS} more (see the JSON report)"]
    return lines


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _target(finding: Finding) -> str:
    display = finding.object.display
    return code(f"{finding.cluster}: {display}" if finding.cluster else display)


def _where(finding: Finding) -> str:
    where = code(str(finding.source)) if finding.source is not None else ""
    origin = finding.namespace_from  # a GitOps tree: the namespace a build gives the object, and where from
    if origin is not None and not origin.from_manifest:
        where += ("<br>" if where else "") + escape(origin.text)
    return where


def _repository_section(result: AuditResult) -> list[str]:
    """A GitOps tree: its clusters, what no cluster deploys, the namespace coverage, the layout's warnings."""
    repository = result.repository
    if repository is None:
        return []
    lines = [escape(tree_words.clusters_sentence(repository)), ""]
    unreached = tree_words.unreached_sentence(repository)
    items = [*tree_words.cluster_lines(repository), *([unreached] if unreached else [])]
    if items:
        lines += [*(f"- {escape(item)}" for item in items), ""]
    lines += [escape(tree_words.namespaces_sentence(repository)), ""]
    for kind in (RemarkKind.PROBLEM, RemarkKind.WARNING):
        for remark in repository.remarks_of(kind):
            lines += [f"**{kind.value.capitalize()}:** {escape(str(remark))}", ""]
    return lines


_VERDICTS: Templates = {
    VerdictKind.INCOMPLETE: "**Verdict: INCOMPLETE** — {reason} (exit 3)",
    VerdictKind.FAIL: "**Verdict: FAIL** — {failing} at or above `{fail_on}` (exit 1)",
    VerdictKind.PASS_ON_WHAT_WAS_CHECKED: ("**Verdict: PASS** on what could be checked — {reason} "
                                           "(`--require-complete` makes that fail)"),
    VerdictKind.PASS: "**Verdict: PASS**",
}


def _verdict(result: AuditResult) -> str:
    return verdict_line(result.verdict(), result.fail_on, _VERDICTS, _plural, escape)


def _target_line(result: AuditResult) -> str:
    snapshot = result.snapshot
    if snapshot.cluster is not None and snapshot.mode == "live":
        cluster = snapshot.cluster
        name = cluster.label or cluster.context or "?"
        return f"Cluster {code(name)} (Kubernetes {escape(cluster.version or '?')}), {_plural(len(snapshot), 'object')}"
    inputs = ", ".join(code(path) for path in snapshot.inputs) or "(no input)"
    return f"Input {inputs}: {_plural(len(snapshot), 'object')}"


def _sources_line(result: AuditResult) -> str:
    sources = ConfigSources.of(result)
    count = sources.exception_entries
    entries = f"{count} entr{'y' if count == 1 else 'ies'}"
    if sources.posture_file is None and sources.exceptions_file is None:
        return f"Posture and exceptions: {BUILTIN} ({entries})"
    posture = code(sources.posture_file) if sources.posture_file else BUILTIN
    exceptions = code(sources.exceptions_file) if sources.exceptions_file else BUILTIN
    return f"Posture: {posture}; exceptions: {exceptions} ({entries})"


def _map_section(result: AuditResult) -> list[str]:
    """The ways in as a Mermaid flowchart (GitHub and GitLab draw it), folded past `mermaid.CAP` nodes."""
    if not result.exposures:
        return []
    drawn = exposure_map.build(result.exposures, mermaid.CAP)
    counts = ", ".join(f"**{count} {kind.value}**" if kind.value == "drift" else f"{count} {kind.value}"
                       for kind, count in drawn.counts)
    lines = ["", "### Ways in", "",
             f"{_plural(drawn.ways, 'way')} in from outside the cluster: {counts} "
             "(red: drift, amber: excepted, green: sanctioned by the posture, grey: not judged)."]
    if drawn.folding.nodes:
        lines += ["", f"Large map: {escape(drawn.folding.sentence)} to stay under {mermaid.CAP} nodes; "
                      "the JSON report lists every way in."]
    return [*lines, "", "```mermaid", *mermaid.flowchart(drawn), "```"]


def _failed_section(result: AuditResult, baseline: Baseline | None) -> list[str]:
    lines: list[str] = []
    for rule_result in result.rules:
        failed = [f for f in rule_result.findings if f.status is FindingStatus.FAILED]
        if not failed:
            continue
        lines += ["", f"#### {code(rule_result.id)} ({rule_result.severity.value}): {escape(rule_result.title)}", ""]
        headers = ["Object", "Severity", "Message", "Where"]
        if baseline is not None:
            headers.append("Baseline")
        rows = []
        for finding in failed:
            severity = finding.severity.value if finding.severity else ""
            row = [_target(finding), severity, escape(finding.message), _where(finding)]
            if baseline is not None:
                row.append("unchanged" if baseline.state(finding) is UNCHANGED else "**new**")
            rows.append(row)
        lines += _table(headers, rows)
        if rule_result.rule is not None:
            lines += ["", f"**Fix.** {escape(rule_result.rule.remediation)}"]
    if lines:
        lines = ["", "### Failed findings", *lines]
    return lines


def _excepted_section(result: AuditResult) -> list[str]:
    excepted = [f for f in result.findings if f.status is FindingStatus.EXCEPTED]
    if not excepted:
        return []
    rows = [
        [code(f.rule), _target(f), escape(f.message),
         code(f.exception.name) if f.exception else "", escape(f.exception.reason) if f.exception else ""]
        for f in excepted
    ]
    return [
        "",
        "<details>",
        f"<summary>{_plural(len(excepted), 'excepted finding')} "
        "(accepted drift, named in the exception list)</summary>",
        "",
        *_table(["Rule", "Object", "Message", "Exception", "Reason"], rows),
        "",
        "</details>",
    ]


def _unfinished_section(result: AuditResult) -> list[str]:
    unfinished = [r for r in result.rules
                  if r.status in (RuleStatus.NOT_RUN, RuleStatus.ERROR, RuleStatus.NOT_APPLICABLE)]
    if not unfinished:
        return []
    rows = [[code(r.id), r.status.value, escape(r.reason)] for r in unfinished]
    return ["", "### Rules without a verdict", "", *_table(["Rule", "Status", "Reason"], rows)]


def _input_problems_section(result: AuditResult) -> list[str]:
    if not result.input_problems:
        return []
    rows = [[code(p.where), code(p.code.value), escape(p.message)] for p in result.input_problems]
    return ["", "### Input problems", "",
            "These files could not be read: none of their objects was audited, and the run is incomplete.", "",
            *_table(["Where", "Code", "Problem"], rows)]


def _partial_section(result: AuditResult) -> list[str]:
    rows = [[code(r.id), r.status.value, escape(u.what),
             escape(f"{u.reason}; {u.declared}" if u.declared else u.reason)] for r in result.rules if r.partial
            for u in r.unseen]
    if not rows:
        return []
    return ["", "### Partial verdicts", "", "Each verdict is on what the rule could see; it did not see:", "",
            *_table(["Rule", "Verdict", "Did not see", "Why"], rows)]


def _duplicates_section(result: AuditResult) -> list[str]:
    if not result.duplicates:
        return []
    rows = [[code(d.display), ", ".join(code(str(s)) if s else "?" for s in d.sources)] for d in result.duplicates]
    return ["", "### Objects defined more than once", "",
            "Each definition is audited; a rule looking an object up by name sees only the first.", "",
            *_table(["Object", "Definitions"], rows)]


def _exceptions_section(result: AuditResult, verbose: bool) -> list[str]:
    """Expired entries, and unused ones: stale in a file, merely unused (and only when verbose) if built in."""
    sources = ConfigSources.of(result)
    items = []
    for usage in result.exceptions:
        if not sources.reported(usage, verbose):
            continue
        where = code(sources.entry_location(usage.entry))
        if usage.status is EntryStatus.EXPIRED:
            items.append(f"- {code(usage.entry.name)} expired on {usage.entry.expires} and no longer applies"
                         f" ({_plural(usage.matched, 'finding')} it would cover; {where})")
        elif sources.exceptions_builtin:
            items.append(f"- {code(usage.entry.name)} matched nothing (part of the {BUILTIN})")
        else:
            items.append(f"- {code(usage.entry.name)} matched nothing ({where}: stale? remove it)")
    return ["", "### Exception list", "", *items] if items else []


def _entry_target(entry: dict[str, Any]) -> str:
    return code(entry_display(entry))


def _baseline_section(baseline: Baseline) -> list[str]:
    counts = baseline.counts()
    lines = [
        "",
        "### Compared with the baseline",
        "",
        f"Baseline {code(baseline.path)} of {escape(baseline.as_of if baseline.as_of is not None else '?')}: "
        f"**{counts.new} new**, {counts.unchanged} unchanged, {counts.fixed} fixed"
        + (f", {counts.unverified} not rechecked" if counts.unverified else ""),
    ]
    if baseline.comparison.fixed:
        rows = [[code(e["rule"]), _entry_target(e), escape(e.get("message", ""))] for e in baseline.comparison.fixed]
        lines += ["", "<details>", f"<summary>{_plural(counts.fixed, 'fixed finding')}</summary>", "",
                  *_table(["Rule", "Object", "Message (in the baseline)"], rows), "", "</details>"]
    if baseline.comparison.unverified:
        rows = [[code(e["rule"]), _entry_target(e)] for e in baseline.comparison.unverified]
        lines += ["", "<details>",
                  f"<summary>{_plural(counts.unverified, 'finding')} not rechecked "
                  "(the rule reached no verdict)</summary>",
                  "", *_table(["Rule", "Object"], rows), "", "</details>"]
    return lines


def render(result: AuditResult, verbose: bool = False) -> str:
    summary = result.summary()
    baseline = result.baseline
    lines = [
        "## Cilium exposure audit",
        "",
        _verdict(result),
        "",
        _target_line(result),
        "",
        *_repository_section(result),
        _sources_line(result),
        "",
    ]
    counts = [
        ["Failing (fails the gate)", str(summary.failing)],
        ["Failed findings", str(summary.failed)],
        ["Excepted findings", str(summary.excepted)],
        ["Rules passed", str(summary.rules_passed)],
        ["Rules failed", str(summary.rules_failed)],
        ["Rules not run", str(summary.rules_not_run)],
        ["Rules in error", str(summary.rules_error)],
        ["Rules partial", str(summary.rules_partial)],
        ["Input problems", str(summary.input_problems)],
    ]
    if summary.rules_not_applicable:  # declared in the configuration file (docs/config.md)
        counts.insert(6, ["Rules not applicable", str(summary.rules_not_applicable)])
    if baseline is not None:
        baseline_counts = baseline.counts()
        counts[1:1] = [["New findings (baseline)", str(baseline_counts.new)],
                       ["Fixed findings (baseline)", str(baseline_counts.fixed)]]
    lines += _table(["", "Count"], counts)
    lines += _input_problems_section(result)
    lines += _map_section(result)
    lines += _failed_section(result, baseline)
    lines += _excepted_section(result)
    lines += _unfinished_section(result)
    lines += _partial_section(result)
    if baseline is not None:
        lines += _baseline_section(baseline)
    lines += _duplicates_section(result)
    lines += _exceptions_section(result, verbose)
    passed = [code(r.id) + (" (partial)" if r.partial else " (nothing to check)" if r.nothing_checked else "")
              for r in result.rules if r.status is RuleStatus.PASSED]
    if passed:
        lines += ["", f"Passed: {', '.join(passed)}"]
    for note in result.notes:
        lines += ["", f"Note: {escape(note)}"]
    colophon = f"cilium-exposure-auditor, fail-on {result.fail_on.value}, exceptions as of {result.as_of.isoformat()}"
    lines += ["", f"<sub>{escape(colophon)}</sub>"]
    return "\n".join(lines) + "\n"
