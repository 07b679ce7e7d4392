"""kpr-removed-flags: per-feature kube-proxy replacement switches left in the configuration."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    CILIUM_CONFIGURATION,
    Fact,
    Finding,
    ObjectRef,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    Source,
    Version,
    cilium_keys,
)

KPR_KEY = cilium_keys.KUBE_PROXY_REPLACEMENT
FLAGS = (cilium_keys.ENABLE_NODE_PORT, cilium_keys.ENABLE_HOST_PORT, cilium_keys.ENABLE_EXTERNAL_IPS)
DEPRECATED = (1, 18)
REMOVED = (1, 19)
# Removal in 1.19 is confirmed for enable-node-port only (docs/cilium-facts.md §4.2, C3).
CONFIRMED_REMOVED = ("enable-node-port",)


class KprRemovedFlags(Rule):
    id = "kpr-removed-flags"
    severity = Severity.WARNING
    title = "Deprecated enable-node-port/host-port/external-ips switches still set"
    rationale_fact = (
        "With kube-proxy replacement on, Cilium 1.18 enables NodePort, HostPort and externalIPs "
        "handling unconditionally and deprecates the per-feature switches enable-node-port, "
        "enable-host-port and enable-external-ips; their removal was a 1.19 release blocker. PR "
        "#41380's release note confirms enable-node-port is gone in 1.19; PR #41277 removed the other "
        "two on the main branch, but no release note was seen, so for those the finding says "
        "\"deprecated, removal planned\". On 1.19 these keys configure nothing; before 1.18 they are "
        "legitimate. The Helm values nodePort.enabled, hostPort.enabled and externalIPs.enabled render "
        "the same keys."
    )
    rationale_decision = (
        "The platform runs Cilium 1.19 with kubeProxyReplacement=true, where the switches are stale "
        "configuration suggesting a per-feature (pre-1.16 partial) setup: a warning. The rule judges "
        "against the agent version the input shows, else the posture's Cilium line; on 1.18 it reports "
        "them only alongside kube-proxy-replacement=true."
    )
    remediation = (
        "Delete enable-node-port, enable-host-port and enable-external-ips from cilium-config (Helm: "
        "nodePort.enabled, hostPort.enabled, externalIPs.enabled) and rely on kubeProxyReplacement=true."
    )
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (KPR_KEY, *FLAGS, cilium_keys.AGENT_VERSION)
    posture_fields = ("expected.ciliumVersionLine",)
    facts = (
        Fact(
            "enable-node-port, enable-host-port, enable-external-ips deprecated; always on with "
            "kube-proxy-replacement=true",
            "Cilium 1.18+",
            "https://github.com/cilium/cilium/pull/39581",
        ),
        Fact(
            "enable-node-port removed (release note of PR #41380)",
            "Cilium 1.19",
            "https://github.com/cilium/cilium/pull/41380",
            also=("https://github.com/cilium/cilium/issues/39582",),
        ),
        Fact(
            "enable-host-port and enable-external-ips removed by PR #41277 on the main branch (merged August 2025, "
            "before PR #41380); PARTIAL: no release note naming the release was seen",
            "Cilium 1.19 (unconfirmed)",
            "https://github.com/cilium/cilium/pull/41277",
            also=("https://github.com/cilium/cilium/issues/39582",),
        ),
    )
    references = (
        "https://github.com/cilium/cilium/pull/39581",
        "https://github.com/cilium/cilium/issues/39582",
        "https://github.com/cilium/cilium/pull/41380",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        what = "cannot read the kube-proxy replacement switches"
        ctx.require_settings(unknown_because=what)
        version, version_why = ctx.target_cilium_version()
        ctx.examined(ctx.configuration_anchor()[0])
        if version[:2] < DEPRECATED:
            return
        if version[:2] < REMOVED and not ctx.setting_enabled(
            KPR_KEY, unknown_because="cannot tell whether the switches are redundant"
        ):
            return  # 1.18 without full replacement: the switches still mean something
        by_source: dict[tuple[ObjectRef, Source | None], list[str]] = {}
        for key in FLAGS:
            for setting in ctx.setting_sources(key):
                where = ctx.configuration_anchor(setting)
                ctx.examined(where[0])
                by_source.setdefault(where, []).append(
                    f"{key}={setting.value!r} ({setting.origin}; {_state(key, version)})"
                )
        for (ref, source), parts in by_source.items():
            yield Finding(
                object=ref,
                source=source,
                message=f"stale kube-proxy replacement switches for {version_why}: {'; '.join(parts)}",
            )


def _state(key: str, version: Version) -> str:
    if version[:2] >= REMOVED and key in CONFIRMED_REMOVED:
        return "removed in Cilium 1.19"
    if version[:2] >= REMOVED:
        return "deprecated since 1.18, removal planned for 1.19"
    return "deprecated since 1.18, always on with kube-proxy-replacement=true"
