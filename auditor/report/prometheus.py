"""Prometheus text exposition format (0.0.4), for alerting on scheduled audits.

Write it where something exposes it: node-exporter's textfile collector, a
Pushgateway (`curl --data-binary @audit.prom .../metrics/job/cilium-exposure-audit`),
or any sidecar serving the file. Metrics (all gauges, prefix `cilium_exposure_audit_`):

- `findings_failed{rule,severity}`, `findings_failing{rule,severity}` (failed and
  at or above --fail-on, and new when a baseline is applied: what fails the
  gate) and `findings_excepted{rule,severity}` — a zero series for each rule's
  own severity, so a fixed rule reads 0 instead of disappearing;
- `rule_status{rule,status}` — 1 for the rule's verdict (passed, failed,
  not-run, error), 0 for the other three (a state set);
- `rule_partial{rule}` — 1 when the rule's verdict is on part of what it judges
  (it did not see the rest), else 0;
- `input_problems` — files of the input that could not be read (none of their
  objects was audited; any makes the run incomplete);
- `complete` (1 when every rule reached a full verdict and every file was read), `exit_code`, `objects`,
  `exceptions{status}` (the entries of an exception file: alert on `unused`
  to find stale ones), `exceptions_builtin{status}` (the entries of the
  built-in list, which the user cannot remove), `info{version}`,
  `config_info{posture,exceptions}` (whose configuration: "built-in platform
  defaults" or the file),
  `baseline_findings{state}` with a baseline;
- `last_run_timestamp_seconds` — when the report was rendered (Unix time;
  `SOURCE_DATE_EPOCH` overrides it). This one metric makes the format the only
  report that is not byte-for-byte reproducible from the same input.

Every series carries `cluster` when the audit names one (a live audit's
label or context, or a finding's cluster in a fleet audit).
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass

from auditor import __version__
from auditor.baseline import Baseline
from auditor.engine import AuditResult
from auditor.exceptions_list import EntryStatus
from auditor.model import Finding, FindingStatus, RuleStatus
from auditor.report.sources import ConfigSources

PREFIX = "cilium_exposure_audit_"


# Control characters and lone surrogates (a kubeconfig context name, a rule id
# from a plugin) become U+FFFD: the exposition stays UTF-8 and one sample a line.
_UNPRINTABLE = re.compile("[\x00-\x09\x0b-\x1f\x7f\ud800-\udfff]")


def _escape_label(value: str) -> str:
    value = _UNPRINTABLE.sub("\ufffd", value)
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


class _Exposition:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, help_text: str, samples: list[tuple[dict[str, str], float]]) -> None:
        full = PREFIX + name
        self.lines.append(f"# HELP {full} {_escape_help(help_text)}")
        self.lines.append(f"# TYPE {full} gauge")
        for labels, value in samples:
            if labels:
                rendered = ",".join(f'{key}="{_escape_label(str(val))}"' for key, val in labels.items())
                self.lines.append(f"{full}{{{rendered}}} {_number(value)}")
            else:
                self.lines.append(f"{full} {_number(value)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _now() -> float:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None:
        try:
            return float(int(epoch))
        except ValueError:
            pass
    return time.time()


def _default_cluster(result: AuditResult) -> str | None:
    cluster = result.snapshot.cluster
    if cluster is None:
        return None
    return cluster.label or cluster.context or None


# (rule, severity, cluster or ""): the labels of one finding-count series.
_SeriesKey = tuple[str, str, str]
_FINDING_FAMILIES = {
    "failed": "Failed (not excepted) findings of the last audit, by rule and severity.",
    "failing": "Failed findings that fail the gate (at or above --fail-on; new ones only with a baseline).",
    "excepted": "Findings excepted by a named entry of the exception list, by rule and severity.",
}


@dataclass(frozen=True)
class _Clusters:
    """Which `cluster` label the series carry."""

    default: str | None  # the audited cluster's label or context, for findings that name none
    all: list[str]  # every cluster the findings or the audit name
    status: str | None  # on the per-run series: the one cluster, or none in a fleet

    @classmethod
    def of(cls, result: AuditResult) -> _Clusters:
        default = _default_cluster(result)
        names = sorted({f.cluster for f in result.findings if f.cluster} | ({default} if default else set()))
        return cls(default, names, default if len(names) <= 1 else None)


def _with_cluster(labels: dict[str, str], cluster: str | None) -> dict[str, str]:
    return {**labels, "cluster": cluster} if cluster else labels


def _count_findings(result: AuditResult, clusters: _Clusters) -> tuple[set[_SeriesKey], dict[str, Counter[_SeriesKey]]]:
    """Every finding-count series (a zero one per rule's own severity and cluster) and the counts per family."""
    failing: set[Finding] = set(result.failing)
    counters: dict[str, Counter[_SeriesKey]] = {name: Counter() for name in _FINDING_FAMILIES}
    series: set[_SeriesKey] = set()
    for rule in result.rules:
        for cluster in clusters.all or [""]:
            series.add((rule.id, rule.severity.value, cluster))
        for finding in rule.findings:
            severity = (finding.severity or rule.severity).value
            key = (rule.id, severity, finding.cluster or clusters.default or "")
            series.add(key)
            if finding.status is FindingStatus.EXCEPTED:
                counters["excepted"][key] += 1
            else:
                counters["failed"][key] += 1
                if finding in failing:
                    counters["failing"][key] += 1
    return series, counters


def _finding_families(out: _Exposition, result: AuditResult, clusters: _Clusters) -> None:
    series, counters = _count_findings(result, clusters)
    for name, description in _FINDING_FAMILIES.items():
        out.family(
            f"findings_{name}",
            description,
            [
                (_with_cluster({"rule": rule, "severity": severity}, cluster or None),
                 counters[name][(rule, severity, cluster)])
                for rule, severity, cluster in sorted(series)
            ],
        )


def _rule_status_family(out: _Exposition, result: AuditResult, cluster: str | None) -> None:
    out.family(
        "rule_status",
        "Verdict of each rule in the last audit: 1 for its status, 0 for the others.",
        [
            (_with_cluster({"rule": rule.id, "status": status.value}, cluster), 1 if rule.status is status else 0)
            for rule in result.rules
            for status in RuleStatus
        ],
    )


def _run_families(out: _Exposition, result: AuditResult, cluster: str | None) -> None:
    base = _with_cluster({}, cluster)
    out.family("rule_partial", "1 when the rule's verdict is on part of what it judges (it did not see the rest).",
               [(_with_cluster({"rule": rule.id}, cluster), 1 if rule.partial else 0) for rule in result.rules])
    out.family("input_problems", "Files of the input that could not be read: none of their objects was audited.",
               [(base, len(result.input_problems))])
    out.family("complete", "1 when every selected rule reached a full verdict (passed or failed, not partial) and "
               "every file was read, else 0.", [(base, 1 if result.complete else 0)])
    out.family("exit_code", "Exit code of the last audit (0 pass, 1 failing findings, 3 incomplete).",
               [(base, result.exit_code)])
    out.family("objects", "Objects the last audit read.", [(base, len(result.snapshot))])


def _exceptions_family(out: _Exposition, result: AuditResult, cluster: str | None) -> None:
    """Entries of an exception file, and (apart) of the built-in list: only a file's unused entries are stale."""
    builtin = ConfigSources.of(result).exceptions_builtin
    usage = Counter(entry.status for entry in result.exceptions)
    for name, counted, description in (
        ("exceptions", not builtin, "Entries of the exception file by status (used, unused, expired, inactive); "
                                    "unused ones are stale."),
        ("exceptions_builtin", builtin, "Entries of the built-in exception list (the platform defaults) by status."),
    ):
        out.family(name, description, [(_with_cluster({"status": status.value}, cluster),
                                         usage[status] if counted else 0) for status in EntryStatus])


def _baseline_family(out: _Exposition, baseline: Baseline, cluster: str | None) -> None:
    counts = baseline.counts()
    by_state = {"new": counts.new, "unchanged": counts.unchanged, "fixed": counts.fixed,
                "unverified": counts.unverified}
    out.family(
        "baseline_findings",
        "Findings compared with the --baseline report: new, unchanged, fixed, unverified (rule reached no verdict).",
        [(_with_cluster({"state": state}, cluster), count) for state, count in by_state.items()],
    )


def _tool_families(out: _Exposition, result: AuditResult, cluster: str | None, now: float) -> None:
    out.family("info", "The auditor that produced these metrics.",
               [(_with_cluster({"version": __version__}, cluster), 1)])
    sources = ConfigSources.of(result)
    out.family("config_info", "The posture and exception list the audit was judged against (built-in or a file).",
               [(_with_cluster({"posture": sources.posture, "exceptions": sources.exceptions}, cluster), 1)])
    out.family(
        "last_run_timestamp_seconds",
        "Unix time the last audit's report was written (SOURCE_DATE_EPOCH overrides it).",
        [(_with_cluster({}, cluster), round(now, 3))],
    )


def render(result: AuditResult, now: float | None = None) -> str:
    out = _Exposition()
    clusters = _Clusters.of(result)
    _finding_families(out, result, clusters)
    _rule_status_family(out, result, clusters.status)
    _run_families(out, result, clusters.status)
    _exceptions_family(out, result, clusters.status)
    if result.baseline is not None:
        _baseline_family(out, result.baseline, clusters.status)
    _tool_families(out, result, clusters.status, _now() if now is None else now)
    return out.text()
