"""wireguard-disabled: pod traffic between nodes must be encrypted with WireGuard."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import CILIUM_CONFIGURATION, Fact, Finding, Rule, RuleContext, Severity, Snapshot, cilium_keys

KEY = cilium_keys.ENABLE_WIREGUARD
IPSEC_KEY = cilium_keys.ENABLE_IPSEC


class WireguardDisabled(Rule):
    id = "wireguard-disabled"
    severity = Severity.ERROR
    title = "Cilium transparent encryption with WireGuard is not enabled"
    rationale_fact = (
        "Cilium's transparent encryption with WireGuard encrypts pod traffic between nodes (UDP 51871). "
        "Helm encryption.enabled=true with encryption.type=wireguard renders enable-wireguard: \"true\" "
        "into cilium-config (Cilium 1.10+); absent, the key is off. encryption.type=ipsec renders "
        "enable-ipsec instead, the other encryption Cilium offers."
    )
    rationale_decision = (
        "The platform's hardening baseline encrypts pod traffic between nodes with WireGuard, so "
        "application traffic never crosses the nodes' shared LAN in clear: WireGuard off is an error, "
        "and IPsec in its place, another encryption than the one chosen, is reported too (the finding "
        "says so). Without the Cilium configuration in the input the verdict is not-run."
    )
    remediation = (
        "Set encryption.enabled=true and encryption.type=wireguard in the Cilium Helm values, "
        "roll out the agents, and check `cilium-dbg encrypt status` on a node."
    )
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (KEY, IPSEC_KEY)
    facts = (
        Fact(
            "Helm encryption.enabled=true + encryption.type=wireguard renders enable-wireguard: \"true\"; "
            "WireGuard uses UDP port 51871.",
            "Cilium 1.10+",
            "https://docs.cilium.io/en/stable/security/network/encryption-wireguard/",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/security/network/encryption-wireguard/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        setting = ctx.setting(KEY, unknown_because=f"whether WireGuard encryption is on ({KEY}) is unknown")
        ctx.examined(ctx.configuration_anchor(setting)[0])
        if setting is not None and setting.as_bool():
            return
        message = f"WireGuard encryption is off: {ctx.describe_setting(KEY, 'false')}"
        ipsec = ctx.concrete_setting(IPSEC_KEY)
        if ipsec is not None and ipsec.as_bool():
            message += f"; {IPSEC_KEY}=true: IPsec is used instead"
        yield ctx.configuration_finding(message, setting)
