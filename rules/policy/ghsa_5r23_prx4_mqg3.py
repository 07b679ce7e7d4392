"""ghsa-5r23-prx4-mqg3: host firewall bypass with native routing + WireGuard + node encryption."""

from __future__ import annotations

from typing import Iterator

from auditor.model import Finding, Severity
from auditor.rule import Fact, NotRun, Rule, RuleContext
from auditor.snapshot import Snapshot
from auditor_rules._cilium_settings import CONFIG_KINDS, SOURCE_KINDS, concrete, config_finding, flag, require_settings
from auditor_rules._components import parse_version

VERSION_KEY = "agent-version"
AFFECTED_FROM = (1, 18, 0)
FIXED_IN = (1, 18, 6)
CONDITIONS = (
    ("enable-host-firewall", "host firewall"),
    ("routing-mode", "native routing"),
    ("enable-wireguard", "WireGuard"),
    ("encrypt-node", "node encryption"),
)


class GhsaHostFirewallBypass(Rule):
    id = "ghsa-5r23-prx4-mqg3"
    severity = Severity.ERROR
    title = "Cilium affected by GHSA-5r23-prx4-mqg3 (host policies not enforced)"
    rationale = (
        "GHSA-5r23-prx4-mqg3 (CVE-2026-26963, CVSS 3.1 medium): on Cilium 1.18.0 through 1.18.5, "
        "when native routing (routing-mode: native), WireGuard (enable-wireguard) and node "
        "encryption (encrypt-node) are all enabled, host firewall policies wrongly allow "
        "traffic from pods on other nodes. It matters only with the host firewall on "
        "(enable-host-firewall), i.e. when host policies are relied on; all four are off by "
        "default. Fixed in 1.18.6; 1.19 is not listed as affected. The platform enables "
        "WireGuard, so the other three settings decide. The version comes from the agent "
        "image tag; without it, or without the Cilium configuration, the verdict is not-run."
    )
    remediation = (
        "Upgrade Cilium to 1.18.6 or later (the platform's line is 1.19), or until then turn off "
        "node encryption (encryption.nodeEncryption=false) so host policies are enforced again."
    )
    requires = (CONFIG_KINDS,)
    uses = SOURCE_KINDS
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
        require_settings(ctx, what)
        version_setting = concrete(ctx, VERSION_KEY, what)
        version = parse_version(version_setting.value) if version_setting is not None else None
        if version is None:
            shown = (
                f"agent image tag {version_setting.value!r} is not a version" if version_setting else "no agent image tag"
            )
            raise NotRun(f"{what}: the Cilium version is unknown ({shown})")
        ctx.examined(config_finding(ctx, version_setting, "").object)
        if not AFFECTED_FROM <= version < FIXED_IN:
            return
        routing = concrete(ctx, "routing-mode", what)
        enabled = (
            flag(ctx, "enable-host-firewall", what),
            routing is not None and routing.value.strip().lower() == "native",
            flag(ctx, "enable-wireguard", what),
            flag(ctx, "encrypt-node", what),
        )
        if not all(enabled):
            return
        on = ", ".join(label for _, label in CONDITIONS)
        yield config_finding(
            ctx,
            version_setting,
            f"Cilium {version_setting.value} with {on} all enabled: host policies let through traffic from "
            "pods on other nodes (fixed in 1.18.6)",
        )
