"""ghsa-5r23-prx4-mqg3: host firewall bypass with native routing + WireGuard + node encryption."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import CILIUM_CONFIGURATION, Fact, Finding, NotRun, Rule, RuleContext, Severity, Snapshot, cilium_keys

VERSION_KEY = cilium_keys.AGENT_VERSION
AFFECTED_FROM = (1, 18, 0)
FIXED_IN = (1, 18, 6)
CONDITIONS = (
    (cilium_keys.ENABLE_HOST_FIREWALL, "host firewall"),
    (cilium_keys.ROUTING_MODE, "native routing"),
    (cilium_keys.ENABLE_WIREGUARD, "WireGuard"),
    (cilium_keys.ENCRYPT_NODE, "node encryption"),
)


class GhsaHostFirewallBypass(Rule):
    id = "ghsa-5r23-prx4-mqg3"
    severity = Severity.ERROR
    title = "Cilium affected by GHSA-5r23-prx4-mqg3 (host policies not enforced)"
    rationale_fact = (
        "GHSA-5r23-prx4-mqg3 (CVE-2026-26963, CVSS 3.1 medium): on Cilium 1.18.0 through 1.18.5, when "
        "native routing (routing-mode: native), WireGuard (enable-wireguard) and node encryption "
        "(encrypt-node) are all enabled, host firewall policies wrongly allow traffic from pods on "
        "other nodes. It matters only with the host firewall on (enable-host-firewall), when host "
        "policies are relied on; all four are off by default. Fixed in 1.18.6; 1.19 is not listed as "
        "affected."
    )
    rationale_decision = (
        "The platform enables WireGuard and relies on host policies where the host firewall is on, so "
        "an affected version with all four settings on is an error. The version comes from the agent "
        "image tag; without it, or without the Cilium configuration, the verdict is not-run."
    )
    remediation = (
        "Upgrade Cilium to 1.18.6 or later (the platform's line is 1.19), or until then turn off "
        "node encryption (encryption.nodeEncryption=false) so host policies are enforced again."
    )
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (VERSION_KEY, *(key for key, _ in CONDITIONS))
    facts = (
        Fact(
            "Host policies wrongly allow traffic from pods on other nodes when native routing, WireGuard "
            "and node encryption are all enabled.",
            "Cilium 1.18.0 to 1.18.5; fixed in 1.18.6; 1.19 not affected",
            "https://github.com/cilium/cilium/security/advisories/GHSA-5r23-prx4-mqg3",
        ),
        Fact(
            "The options are enable-host-firewall, routing-mode (native|tunnel, default tunnel), "
            "enable-wireguard and encrypt-node.",
            "Cilium 1.14+",
            "https://docs.cilium.io/en/stable/cmdref/cilium-agent/",
        ),
    )
    references = (
        "https://github.com/advisories/GHSA-5r23-prx4-mqg3",
        "https://github.com/cilium/cilium/pull/42892",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        what = "whether GHSA-5r23-prx4-mqg3 applies is unknown"
        version_setting = ctx.setting(VERSION_KEY, unknown_because=what)
        version = version_setting.as_version() if version_setting is not None else None
        if version_setting is None or version is None:
            shown = "no agent image tag"
            if version_setting is not None:
                shown = f"agent image tag {version_setting.value!r} is not a version"
            raise NotRun(f"{what}: the Cilium version is unknown ({shown})")
        ctx.examined(ctx.configuration_anchor(version_setting)[0])
        if not AFFECTED_FROM <= version < FIXED_IN:
            return
        routing = ctx.setting(cilium_keys.ROUTING_MODE, unknown_because=what)
        enabled = (
            ctx.setting_enabled(cilium_keys.ENABLE_HOST_FIREWALL, unknown_because=what),
            routing is not None and routing.as_choice() == "native",
            ctx.setting_enabled(cilium_keys.ENABLE_WIREGUARD, unknown_because=what),
            ctx.setting_enabled(cilium_keys.ENCRYPT_NODE, unknown_because=what),
        )
        if not all(enabled):
            return
        on = ", ".join(label for _, label in CONDITIONS)
        yield ctx.configuration_finding(
            f"Cilium {version_setting.value} with {on} all enabled: host policies let through traffic from "
            "pods on other nodes (fixed in 1.18.6)",
            version_setting,
        )
