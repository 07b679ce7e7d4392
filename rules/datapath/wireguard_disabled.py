"""wireguard-disabled: pod traffic between nodes must be encrypted with WireGuard."""

from __future__ import annotations

from typing import Iterator

from auditor.model import Finding, Severity
from auditor.rule import Fact, Rule, RuleContext
from auditor.snapshot import Snapshot
from auditor_rules._cilium_settings import (
    CONFIG_KINDS,
    SOURCE_KINDS,
    concrete,
    config_finding,
    describe,
    require_settings,
)

KEY = "enable-wireguard"
IPSEC_KEY = "enable-ipsec"


class WireguardDisabled(Rule):
    id = "wireguard-disabled"
    severity = Severity.ERROR
    title = "Cilium transparent encryption with WireGuard is not enabled"
    rationale = (
        "The platform's hardening baseline encrypts pod traffic between nodes with Cilium's "
        "WireGuard transparent encryption, so application traffic never crosses the nodes' "
        "shared LAN in clear. Helm encryption.enabled=true with "
        "encryption.type=wireguard renders enable-wireguard: \"true\" into cilium-config "
        "(Cilium 1.10+; the agent then uses UDP 51871 between nodes). Absent, the key is off. "
        "IPsec (enable-ipsec) is another encryption, not the one the platform chose, and is "
        "reported too. Without the Cilium configuration in the input the verdict is not-run."
    )
    remediation = (
        "Set encryption.enabled=true and encryption.type=wireguard in the Cilium Helm values, "
        "roll out the agents, and check `cilium-dbg encrypt status` on a node."
    )
    requires = (CONFIG_KINDS,)
    uses = SOURCE_KINDS
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
        what = f"whether WireGuard encryption is on ({KEY}) is unknown"
        require_settings(ctx, what)
        setting = concrete(ctx, KEY, what)
        finding = config_finding(ctx, setting, "")
        ctx.examined(finding.object)
        if setting is not None and setting.value.strip().lower() == "true":
            return
        message = f"WireGuard encryption is off: {describe(setting, KEY, 'false')}"
        if ctx.cilium.flag(IPSEC_KEY) is True:
            message += f"; {IPSEC_KEY}=true: IPsec is used instead"
        yield config_finding(ctx, setting, message)
