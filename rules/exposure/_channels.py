"""What the exposure rules share: reading their ways in from the exposure model and wording findings.

Each exposure rule judges the entrances of the model whose `rule` is its id
(`ctx.exposures.for_rule(id)`): the posture sanctions some
(`exposure.sanction`, through the rule's declared view of the posture), and
the rule reports the rest, one finding per subject (the Service, the
workload, the Gateway, or the HelmRelease at the line of the values that
declare a Service). No rule rebuilds the chain itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from auditor.api import Finding, NotRun, Rule, RuleContext, exposure

# What each mode adds to a finding's message (the decision it encodes, docs/posture.md).
_MODE_NOTES = {
    "l4": "exposure.mode l4 sanctions only the NodePort Services and hostPorts it names",
    "none": "exposure.mode none: nothing may be reachable from outside the cluster",
}


def mode_note(ctx: RuleContext) -> str:
    """`; exposure.mode none: ...` for the modes other than the default, else ""."""
    note = _MODE_NOTES.get(ctx.posture.exposure_mode)
    return f"; {note}" if note else ""


def subjects(entrances: Sequence[exposure.Entrance]) -> dict[exposure.Subject, list[exposure.Entrance]]:
    """The entrances grouped by subject, in model order (one finding per subject)."""
    grouped: dict[exposure.Subject, list[exposure.Entrance]] = {}
    for entrance in entrances:
        grouped.setdefault(entrance.subject, []).append(entrance)
    return grouped


def judge(rule: Rule, ctx: RuleContext, describe: Callable[[exposure.Subject, list[exposure.Entrance]], str], *,
          needs: Sequence[tuple[str, str]] = ()) -> Iterator[Finding]:
    """Findings about the subjects of the rule's ways in that the posture does not sanction.

    `needs`: (kind, what it stands for) that must be known for "none" to be a
    verdict; when one is not and nothing is reported, the rule is not-run;
    when the rule reports drift all the same, it did not see them (partial).
    """
    entrances = ctx.exposures.for_rule(rule.id)
    grouped = subjects(entrances)
    drift: dict[exposure.Subject, list[exposure.Entrance]] = {}
    for subject, found in grouped.items():
        ctx.examined(subject.ref)
        unsanctioned = [e for e in found if exposure.sanction(e, ctx.posture) is None]
        if unsanctioned:
            drift[subject] = unsanctioned
    missing = [what for gk, what in needs if not ctx.known(gk)]
    if missing and not drift:
        raise NotRun(f"the input holds no {' and no '.join(missing)}")
    for what in missing:
        ctx.did_not_see(what, f"the input holds no {what}")
    for subject, found in drift.items():
        yield rule.finding_about(subject, describe(subject, found))


def ports_text(entrances: Sequence[exposure.Entrance]) -> str:
    """`443/TCP, 80/TCP` of distinct ports, in order."""
    return ", ".join(dict.fromkeys(e.port_display for e in entrances))


def declared_suffix(subject: exposure.Subject) -> str:
    if subject.declared is exposure.Declared.HELM_VALUES:
        return ": declared in values; the rendered Service is what a live audit sees"
    return ""
