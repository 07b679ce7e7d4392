"""l2-client-rate-limit: the agent's API client budget must cover L2 lease renewals."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    Fact,
    Finding,
    K8sObject,
    NotRun,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    cilium_keys,
    kinds,
)
from auditor_rules.exposure._services import (
    SelectorSet,
    handled_by_cilium_l2,
    l2_external_ip_selectors,
    l2_lb_selectors,
    selector_labels,
    service_type,
)

L2_KEY = cilium_keys.ENABLE_L2_ANNOUNCEMENTS
QPS_KEY = cilium_keys.K8S_CLIENT_QPS
BURST_KEY = cilium_keys.K8S_CLIENT_BURST
RENEW_KEY = cilium_keys.L2_RENEW_DEADLINE
DEFAULT_RENEW = "5s"
DEFAULT_RENEW_SECONDS = 5.0
# Agent client defaults: 10/20 since 1.17 (5/10 before, 10/20 on Kubernetes >= 1.27 from 1.15).
DEFAULTS_SINCE = (1, 17)
DEFAULT_QPS, DEFAULT_BURST = 10.0, 20.0
OLD_DEFAULT_QPS, OLD_DEFAULT_BURST = 5.0, 10.0


def announced(service: K8sObject, lb_selects: SelectorSet, external_selects: SelectorSet) -> bool:
    """Whether some L2 policy announces an address of this Service (one lease per Service)."""
    if not handled_by_cilium_l2(service):
        return False
    is_lb = service_type(service) == "LoadBalancer"
    has_external = bool(as_list(service.spec.get("externalIPs")))
    if not (is_lb and lb_selects) and not (has_external and external_selects):
        return False
    labels = selector_labels(service)
    return (is_lb and lb_selects.matches(labels)) or (has_external and external_selects.matches(labels))


def _number(ctx: RuleContext, key: str, default: float, what: str) -> float:
    setting = ctx.setting(key, unknown_because=what)
    if setting is None:
        return default
    value = setting.as_number()
    if value is None:
        raise NotRun(f"{what}: {key}={setting.value!r} ({setting.origin}) is not a number")
    return value


def _format(value: float) -> str:
    return f"{value:g}"


class L2ClientRateLimit(Rule):
    id = "l2-client-rate-limit"
    severity = Severity.WARNING
    title = "Agent API client rate limit too low for the L2-announced Services"
    rationale_fact = (
        "With L2 announcements each announced Service is a Lease the elected agent renews through the "
        "Kubernetes API at least once per renew deadline (l2-announcements-renew-deadline, default 5s). "
        "Cilium's L2 guide sizes the agent client as QPS = announced Services / renew deadline, burst "
        "slightly above, and warns the default budget is quickly exhausted: renewals queue behind the "
        "rate limiter, leases expire and IPs fail over or go unanswered. The guide quotes 5 QPS / burst "
        "10; the agent's defaults are 10 / 20 since Cilium 1.17 (the operator's own 100 / 200 do not "
        "renew leases)."
    )
    rationale_decision = (
        "When the platform arms L2 announcements, their leases must not starve: the rule counts the "
        "Services an L2 policy announces (LoadBalancer IPs, or externalIPs when the policy says so), "
        "divides by the effective renew deadline and compares with the effective k8s-client-qps and "
        "k8s-client-burst (explicit or default), and warns when they fall short. It applies only when "
        "L2 announcements are on."
    )
    remediation = (
        "Raise Helm k8sClientRateLimit.qps (cilium-config k8s-client-qps) to at least announced "
        "Services / renew deadline and k8sClientRateLimit.burst a little above it, or lengthen "
        "l2announcements.leaseRenewDeadline."
    )
    requires = (kinds.SERVICE,)
    uses = (kinds.L2_ANNOUNCEMENT_POLICY,)
    cilium_settings = (L2_KEY, QPS_KEY, BURST_KEY, RENEW_KEY, cilium_keys.AGENT_VERSION)
    posture_fields = ("expected.ciliumVersionLine",)
    facts = (
        Fact(
            "Client QPS sizing: announced Services / lease renew deadline; burst slightly higher",
            "Cilium 1.14+ (L2 announcements guide)",
            "https://docs.cilium.io/en/stable/network/l2-announcements/",
            also=("https://github.com/cilium/cilium/pull/26711",),
        ),
        Fact("Lease renew deadline default 5s (l2-announcements-renew-deadline)", "Cilium 1.14+", "https://docs.cilium.io/en/stable/network/l2-announcements/"),
        Fact(
            "Agent k8s-client-qps / k8s-client-burst default to 10 / 20 (the guide's 5 / 10 is stale)",
            "Cilium 1.17+ (1.15+ on Kubernetes >= 1.27)",
            "https://github.com/cilium/cilium/pull/29445",
            also=("https://github.com/cilium/cilium/pull/33821",),
        ),
    )
    references = (
        "https://docs.cilium.io/en/stable/network/l2-announcements/",
        "https://github.com/cilium/cilium/pull/33821",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        what = "cannot size the agent's API client for L2 announcements"
        if not ctx.setting_enabled(L2_KEY, unknown_because=what):
            ctx.examined_configuration(ctx.concrete_setting(L2_KEY))  # judged: L2 announcements off
            return
        if not ctx.known(kinds.L2_ANNOUNCEMENT_POLICY):
            raise NotRun(f"L2 announcements are on, but the input holds no CiliumL2AnnouncementPolicy objects: {what}")
        policies = snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY)
        lb_selects, external_selects = l2_lb_selectors(policies), l2_external_ip_selectors(policies)
        services = [s for s in snapshot.of_kind(kinds.SERVICE) if announced(s, lb_selects, external_selects)]
        renew_setting = ctx.setting(RENEW_KEY, unknown_because=what)
        renew = DEFAULT_RENEW_SECONDS
        if renew_setting is not None:
            parsed = renew_setting.as_seconds()
            if parsed is None or parsed <= 0:
                raise NotRun(
                    f"{what}: {RENEW_KEY}={renew_setting.value!r} ({renew_setting.origin}) is not a positive duration"
                )
            renew = parsed
        version, _ = ctx.target_cilium_version()
        current = version[:2] >= DEFAULTS_SINCE
        defaults = (DEFAULT_QPS, DEFAULT_BURST) if current else (OLD_DEFAULT_QPS, OLD_DEFAULT_BURST)
        qps = _number(ctx, QPS_KEY, defaults[0], what)
        burst = _number(ctx, BURST_KEY, defaults[1], what)
        qps_setting = ctx.concrete_setting(QPS_KEY)
        ctx.examined(ctx.configuration_anchor(qps_setting)[0])
        needed = len(services) / renew
        if qps >= needed and burst >= needed:
            return
        deadline = renew_setting.value if renew_setting else f"{DEFAULT_RENEW} (default)"
        yield ctx.configuration_finding(
            f"{len(services)} Service(s) announced through L2 with a {deadline} lease renew deadline need about "
            f"{_format(needed)} QPS (Services / renew deadline), but "
            f"{ctx.describe_setting(QPS_KEY, _format(defaults[0]))} and "
            f"{ctx.describe_setting(BURST_KEY, _format(defaults[1]))}",
            qps_setting,
        )
