"""kpr-removed-flags: per-feature kube-proxy replacement switches left in the configuration."""

from __future__ import annotations

from typing import Iterator

from auditor.model import Finding, ObjectRef, Severity, Source
from auditor.rule import Fact, Rule, RuleContext
from auditor.snapshot import Snapshot
from auditor_rules._cilium_settings import CONFIG_KINDS, anchor, flag, require_settings, target_version

KPR_KEY = "kube-proxy-replacement"
FLAGS = ("enable-node-port", "enable-host-port", "enable-external-ips")
DEPRECATED = (1, 18)
REMOVED = (1, 19)
# Removal in 1.19 is confirmed for enable-node-port only (docs/cilium-facts.md §4.2, C3).
CONFIRMED_REMOVED = ("enable-node-port",)


class KprRemovedFlags(Rule):
    id = "kpr-removed-flags"
    severity = Severity.WARNING
    title = "Deprecated enable-node-port/host-port/external-ips switches still set"
    rationale = (
        "With kube-proxy replacement on, Cilium 1.18 enables NodePort, HostPort and externalIPs "
        "handling unconditionally and deprecates the per-feature switches enable-node-port, "
        "enable-host-port and enable-external-ips (cilium/cilium PR #39581). Their removal was "
        "scheduled for 1.19 (issue #39582, a 1.19 release blocker, closed by PR #41380). PR #41380's "
        "release note confirms that enable-node-port is gone in 1.19; the removal of the other two in "
        "1.19 is implied by the issue's closure but not confirmed by a release note, so for those the "
        "finding says \"deprecated, removal planned\". Either way, on the platform's Cilium 1.19 with "
        "kubeProxyReplacement=true these keys no longer configure anything: they are stale "
        "configuration that suggests a per-feature (pre-1.16 partial) setup. The rule judges against "
        "the agent version the input shows, else the posture's Cilium line; before 1.18 the switches "
        "are legitimate and not reported, and on 1.18 only alongside kube-proxy-replacement=true. The "
        "Helm values nodePort.enabled, hostPort.enabled and externalIPs.enabled count as the same keys."
    )
    remediation = (
        "Delete enable-node-port, enable-host-port and enable-external-ips from cilium-config (Helm: "
        "nodePort.enabled, hostPort.enabled, externalIPs.enabled) and rely on kubeProxyReplacement=true."
    )
    requires = (CONFIG_KINDS,)
    facts = (
        Fact(
            "enable-node-port, enable-host-port, enable-external-ips deprecated; always on with kube-proxy-replacement=true",
            "Cilium 1.18+",
            "cilium/cilium PR #39581",
        ),
        Fact("enable-node-port removed", "Cilium 1.19", "cilium/cilium PR #41380 (release note); issue #39582"),
        Fact(
            "enable-host-port and enable-external-ips removed (PARTIAL: implied by issue #39582's closure, no release note seen)",
            "Cilium 1.19 (unconfirmed)",
            "cilium/cilium issue #39582; PR #41380",
        ),
    )
    references = (
        "https://github.com/cilium/cilium/pull/39581",
        "https://github.com/cilium/cilium/issues/39582",
        "https://github.com/cilium/cilium/pull/41380",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        require_settings(ctx, "cannot read the kube-proxy replacement switches")
        version, version_why = target_version(ctx)
        ctx.examined(anchor(ctx)[0])
        if version[:2] < DEPRECATED:
            return
        if version[:2] < REMOVED and not flag(ctx, KPR_KEY, "cannot tell whether the switches are redundant"):
            return  # 1.18 without full replacement: the switches still mean something
        by_source: dict[tuple[ObjectRef, Source | None], list[str]] = {}
        for key in FLAGS:
            for setting in ctx.cilium.candidates.get(key, []):
                ref, source = anchor(ctx, setting)
                ctx.examined(ref)
                if version[:2] >= REMOVED and key in CONFIRMED_REMOVED:
                    state = "removed in Cilium 1.19"
                elif version[:2] >= REMOVED:
                    state = "deprecated since 1.18, removal planned for 1.19"
                else:
                    state = "deprecated since 1.18, always on with kube-proxy-replacement=true"
                by_source.setdefault((ref, source), []).append(f"{key}={setting.value!r} ({setting.origin}; {state})")
        for (ref, source), parts in by_source.items():
            yield Finding(
                object=ref,
                source=source,
                message=f"stale kube-proxy replacement switches for {version_why}: {'; '.join(parts)}",
            )
