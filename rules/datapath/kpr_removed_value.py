"""kpr-removed-value: kube-proxy-replacement set to a value Cilium no longer accepts."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import CILIUM_CONFIGURATION, Fact, Finding, Rule, RuleContext, Setting, Severity, Snapshot, cilium_keys

KEY = cilium_keys.KUBE_PROXY_REPLACEMENT
# value -> (deprecated in, removed in, what to use instead) (docs/cilium-facts.md §4.1, C2)
REMOVED: dict[str, tuple[tuple[int, int], tuple[int, int], str]] = {
    "probe": ((1, 12), (1, 13), "\"true\" when the kernel supports full replacement, else \"false\""),
    "strict": ((1, 14), (1, 16), "\"true\""),
    "partial": ((1, 14), (1, 16), "\"true\" (per-feature replacement no longer exists)"),
    "disabled": ((1, 14), (1, 16), "\"false\""),
}
BOOLEANS_SINCE = (1, 14)


def _text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


class KprRemovedValue(Rule):
    id = "kpr-removed-value"
    severity = Severity.ERROR
    title = "kube-proxy-replacement uses a value Cilium no longer accepts"
    rationale_fact = (
        "Cilium 1.14 replaced the kube-proxy-replacement modes strict, partial and disabled by the "
        "booleans true and false and deprecated the old values; Cilium 1.16 removed them from the agent "
        "and the Helm chart. probe went earlier: deprecated in 1.12, removed in 1.13. A manifest or "
        "values file still saying strict cannot be rendered or started as intended on a release that "
        "removed it."
    )
    rationale_decision = (
        "The platform runs Cilium 1.19, so the rule judges against the agent version the input shows "
        "(image tag or chart version), else the posture's Cilium line: a value removed in that version "
        "is an error, one only deprecated there a warning, any other value that is not true/false "
        "invalid. Every source that sets the key is checked, not only the one in effect: a HelmRelease "
        "still saying strict behind a correct ConfigMap breaks its next reconciliation."
    )
    remediation = (
        "Replace the value with \"true\" (strict, partial) or \"false\" (disabled) in the Helm values "
        "(kubeProxyReplacement) or cilium-config, and re-check what partial enabled feature by feature."
    )
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (KEY, cilium_keys.AGENT_VERSION)
    posture_fields = ("expected.ciliumVersionLine",)
    facts = (
        Fact("probe deprecated, then removed from the agent", "deprecated 1.12, removed 1.13", "https://github.com/cilium/cilium/pull/22083"),
        Fact(
            "strict, partial, disabled deprecated in favour of true/false",
            "deprecated 1.14",
            "https://github.com/cilium/cilium/pull/26577",
        ),
        Fact(
            "strict, partial, disabled (and probe) removed from the agent and Helm chart",
            "removed 1.16 (merged March 2024)",
            "https://github.com/cilium/cilium/pull/31286",
        ),
    )
    references = (
        "https://github.com/cilium/cilium/pull/26577",
        "https://github.com/cilium/cilium/pull/31286",
        "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        ctx.setting(KEY, unknown_because="cannot read kube-proxy-replacement")
        version, version_why = ctx.target_cilium_version()
        # Every source that sets it, not only the winner: a stale HelmRelease breaks the next sync.
        sources = ctx.setting_sources(KEY)
        if not sources:
            ctx.examined_configuration()  # judged: not set, Cilium's default
        for setting in sources:
            if setting.ref is not None:
                ctx.examined(setting.ref)
            if setting.concrete:
                yield from self._judge(ctx, setting, version[:2], version_why)

    @staticmethod
    def _judge(ctx: RuleContext, setting: Setting, line: tuple[int, ...], version_why: str) -> Iterator[Finding]:
        value = setting.as_choice()
        if value in ("true", "false"):
            return
        where = f"{KEY}={setting.value!r} (from {setting.origin})"
        if value in REMOVED:
            deprecated, removed, instead = REMOVED[value]
            if line >= removed:
                yield ctx.configuration_finding(
                    f"{where}: removed in Cilium {_text(removed)}, no longer accepted by {version_why}; use {instead}",
                    setting,
                )
            elif line >= deprecated:
                yield ctx.configuration_finding(
                    f"{where}: deprecated since Cilium {_text(deprecated)} and removed in {_text(removed)} "
                    f"({version_why}); use {instead}",
                    setting,
                    Severity.WARNING,
                )
        elif line >= BOOLEANS_SINCE:
            yield ctx.configuration_finding(f"{where}: not a value Cilium accepts (\"true\" or \"false\")", setting)
