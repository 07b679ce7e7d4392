"""l2-lease-timing: L2 announcement lease settings Cilium rewrites, or whose failover exceeds the posture."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from auditor.api import (
    CILIUM_CONFIGURATION,
    Fact,
    Finding,
    NotRun,
    Rule,
    RuleContext,
    Setting,
    Severity,
    Snapshot,
    cilium_keys,
)
from auditor_rules.l2._lease_timing import (
    DEFAULT_LEASE_NS,
    DEFAULT_RENEW_NS,
    DEFAULT_RETRY_NS,
    NS_PER_SECOND,
    Correction,
    LeaseTimings,
    client_go_refusal,
    effective_timings,
    failover_window_ns,
    go_duration,
    lease_record_seconds,
    seconds_text,
)

L2_KEY = cilium_keys.ENABLE_L2_ANNOUNCEMENTS
LEASE_KEY = cilium_keys.L2_LEASE_DURATION
RENEW_KEY = cilium_keys.L2_RENEW_DEADLINE
RETRY_KEY = cilium_keys.L2_RETRY_PERIOD
KEY_OF_FIELD = {"lease": LEASE_KEY, "renew": RENEW_KEY, "retry": RETRY_KEY}
WHAT = "cannot judge the L2 announcement lease timings"

L2_GUIDE = "https://docs.cilium.io/en/stable/network/l2-announcements/"
LEASE_TIMINGS_SOURCE = (
    "https://github.com/cilium/cilium/blob/21d690e1b2e70ec1f2ce60c4de01a251e60eea37/pkg/l2announcer/l2announcer.go"
)
CLIENT_GO_SOURCE = (
    "https://github.com/kubernetes/kubernetes/blob/0138c8288042f10a191f349be6178aa9f64fb294/"
    "staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go"
)


def duration_ns(setting: Setting) -> int | None:
    """A Go duration setting (`15s`, `500ms`, `-1s`, `0`) in nanoseconds; None when Go would not parse it."""
    text = setting.value.strip()
    sign = -1 if text.startswith("-") else 1
    unsigned = dataclasses.replace(setting, value=text[1:] if text[:1] in "+-" else text)
    seconds = unsigned.as_seconds()
    return None if seconds is None else sign * round(seconds * NS_PER_SECOND)


class L2LeaseTiming(Rule):
    id = "l2-lease-timing"
    severity = Severity.WARNING
    title = "L2 announcement lease timings Cilium rewrites, or whose failover is slower than the posture allows"
    rationale_fact = (
        "Each Service Cilium announces through L2 is a client-go leader election over a Lease, timed by "
        "l2-announcements-lease-duration, -renew-deadline and -retry-period (Helm l2announcements.leaseDuration, "
        "leaseRenewDeadline, leaseRetryPeriod; defaults 15s, 5s, 2s). client-go refuses timings unless lease > "
        "renew deadline > 1.2 x retry period, all positive, but Cilium never passes bad values on: its "
        "leaseTimings() logs a warning and rewrites them (lease below 1s becomes 1s; a non-positive renew "
        "deadline 1s and retry period 200ms; renew deadline := lease / 2 when not below the lease; retry "
        "period := renew deadline / 2 when the renew deadline is not above 1.2 x the retry period). So bad "
        "settings mean other timings than the ones written, not a broken election. Cilium's guide puts failover "
        "between lease - renew deadline and lease + renew deadline (10-20s by default); candidates wait for the "
        "whole seconds the Lease records."
    )
    rationale_decision = (
        "The settings the platform writes must be the ones the agent uses: when L2 announcements are on, "
        "settings Cilium rewrites are a warning that names the values it uses instead (replaying leaseTimings() "
        "exactly); timings client-go would still refuse after Cilium's rewrite (a renew deadline of 1ns leaves "
        "a zero retry period, and RunOrDie panics) are an error. When the posture sets l2.maxFailoverSeconds, "
        "the longest failover of the effective timings (whole-second lease + renew deadline) above it is a "
        "warning. A setting that is not a Go duration makes the rule not-run."
    )
    remediation = (
        "Set l2announcements.leaseDuration > leaseRenewDeadline > 1.2 x leaseRetryPeriod (for example "
        "3s / 1s / 200ms for a 2-4s failover), sized so that lease + renew deadline stays within "
        "l2.maxFailoverSeconds; shorter timings renew more often, so check l2-client-rate-limit too."
    )
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (L2_KEY, LEASE_KEY, RENEW_KEY, RETRY_KEY)
    posture_fields = ("l2.maxFailoverSeconds",)
    facts = (
        Fact(
            "l2-announcements-lease-duration, -renew-deadline, -retry-period (Helm l2announcements.leaseDuration, "
            "leaseRenewDeadline, leaseRetryPeriod, commented out in the chart's values) default to 15s, 5s, 2s.",
            "Cilium 1.14+",
            L2_GUIDE,
            also=("https://github.com/cilium/cilium/blob/002c6fff44159c64bdb86ebfb145157b33eb997f/"
                  "install/kubernetes/cilium/values.yaml.tmpl",),
        ),
        Fact(
            "client-go NewLeaderElector refuses leaseDuration <= renewDeadline, renewDeadline <= "
            "time.Duration(1.2 x retryPeriod) and any value below 1ns, in that order; RunOrDie panics on a "
            "refused configuration. The Lease records int(leaseDuration / 1s) seconds.",
            "client-go tools/leaderelection, read at kubernetes 0138c828",
            CLIENT_GO_SOURCE,
        ),
        Fact(
            "Cilium's leaseTimings() rewrites lease < 1s to 1s, renew < 1ns to 1s, retry < 1ns to 200ms, then "
            "renew := lease / 2 when lease <= renew, then retry := renew / 2 when renew <= 1.2 x retry, each with "
            "a warning in the agent log, before starting each Service's election.",
            "Cilium L2 announcer as read at cilium/cilium 21d690e1 and 00cfe9e8 (1.19 assumed the same)",
            LEASE_TIMINGS_SOURCE,
        ),
        Fact(
            "Failover takes between leaseDuration - leaseRenewDeadline and leaseDuration + leaseRenewDeadline "
            "(10-20s with the defaults, 2-4s with 3s/1s/200ms).",
            "Cilium 1.14+ (L2 announcements guide, Leases)",
            "https://github.com/cilium/cilium/blob/026740195c43504fcf9e1fd6b8c92754d45c0f5d/"
            "Documentation/network/l2-announcements.rst",
        ),
    )
    references = (L2_GUIDE, LEASE_TIMINGS_SOURCE)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        if not ctx.setting_enabled(L2_KEY, unknown_because=WHAT):
            ctx.examined_configuration(ctx.concrete_setting(L2_KEY))  # judged: L2 announcements off
            return
        settings = {field: ctx.setting(key, unknown_because=WHAT) for field, key in KEY_OF_FIELD.items()}
        configured = LeaseTimings(
            lease=self._nanoseconds(settings["lease"], LEASE_KEY, DEFAULT_LEASE_NS),
            renew=self._nanoseconds(settings["renew"], RENEW_KEY, DEFAULT_RENEW_NS),
            retry=self._nanoseconds(settings["retry"], RETRY_KEY, DEFAULT_RETRY_NS),
        )
        effective, corrections = effective_timings(configured)
        ctx.examined(ctx.configuration_anchor(next((s for s in settings.values() if s), None))[0])
        if corrections:
            yield self._rewritten(ctx, settings, configured, corrections, effective)
        refusal = client_go_refusal(effective)
        if refusal is not None:
            yield ctx.configuration_finding(
                f"even after Cilium's rewrite the lease timings ({_timings(effective)}) are refused by client-go "
                f"({refusal}): its RunOrDie panics, so the L2 leader elections cannot run",
                settings["renew"], Severity.ERROR,
            )
            return
        yield from self._failover(ctx, settings, effective)

    @staticmethod
    def _nanoseconds(setting: Setting | None, key: str, default: int) -> int:
        if setting is None:
            return default
        value = duration_ns(setting)
        if value is None:
            raise NotRun(
                f"{WHAT}: {key}={setting.value!r} ({setting.origin}) is not a Go duration (such as 15s or 500ms)"
            )
        return value

    @staticmethod
    def _rewritten(ctx: RuleContext, settings: dict[str, Setting | None], configured: LeaseTimings,
                   corrections: list[Correction], effective: LeaseTimings) -> Finding:
        reasons = "; ".join(
            f"{c.why}, so Cilium uses {KEY_OF_FIELD[c.field]}={go_duration(c.used_ns)}" for c in corrections
        )
        defaulted = [KEY_OF_FIELD[field] for field, setting in settings.items() if setting is None]
        defaults = f"; {', '.join(defaulted)} not set, so the default" if defaulted else ""
        cause = settings[corrections[0].field] or next((s for s in settings.values() if s), None)
        return ctx.configuration_finding(
            f"Cilium does not use the L2 lease timings as written ({_timings(configured)}{defaults}): {reasons}. "
            f"It logs a warning and runs the elections with {_timings(effective)} (client-go needs lease > renew "
            "deadline > 1.2 x retry period, all positive)",
            cause,
        )

    @staticmethod
    def _failover(ctx: RuleContext, settings: dict[str, Setting | None], effective: LeaseTimings) -> Iterator[Finding]:
        bound = ctx.posture.l2_max_failover_seconds
        if bound is None:
            return
        shortest, longest = failover_window_ns(effective)
        if longest <= bound * NS_PER_SECOND:
            return
        recorded = lease_record_seconds(effective.lease)
        truncated = (f" (the Lease records whole seconds: {recorded}s)"
                     if recorded * NS_PER_SECOND != effective.lease else "")
        yield ctx.configuration_finding(
            f"L2 failover can take up to {seconds_text(longest)} ({seconds_text(shortest)}-{seconds_text(longest)}: "
            f"lease {go_duration(effective.lease)}{truncated} -/+ renew deadline {go_duration(effective.renew)}, "
            f"Cilium's L2 guide), more than the posture's l2.maxFailoverSeconds {bound:g}",
            settings["lease"] or settings["renew"],
        )


def _timings(timings: LeaseTimings) -> str:
    return (f"lease {go_duration(timings.lease)}, renew deadline {go_duration(timings.renew)}, "
            f"retry period {go_duration(timings.retry)}")
