"""gateway-not-programmed: a Gateway whose Programmed condition is not True."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    Fact,
    Finding,
    NotRun,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_str,
    cilium_keys,
    conditions,
    kinds,
)
from auditor_rules.gateway._gateway_api import (
    HOST_NETWORK_ADDRESS_FIX,
    HOST_NETWORK_KEY,
    host_network_mode,
    served_by_cilium,
)

PROGRAMMED = "Programmed"
# The reason Cilium's operator sets while it waits for an address; in
# hostNetwork mode no address ever came before the fix (cilium/cilium#42786,
# #45485: "Gateway waiting for address").
ADDRESS_NOT_ASSIGNED = "AddressNotAssigned"


class GatewayNotProgrammed(Rule):
    id = "gateway-not-programmed"
    severity = Severity.ERROR
    title = "Gateway whose Programmed condition is not True"
    nothing_to_check = "Gateway meant for Cilium"
    rationale_fact = (
        "A Gateway reports Programmed=True once its controller has configured the data plane for it "
        "(Gateway API v1); anything else usually means the listeners published through it are not "
        "served. In hostNetwork mode (cilium-config gateway-api-hostnetwork-enabled) Cilium creates no "
        "LoadBalancer Service for the Gateway, and from 1.18.3 on its operator never filled in the "
        "Gateway's address: Programmed=False, reason AddressNotAssigned, while Envoy served traffic "
        "(cilium/cilium#42786). PR #46350 fills the address from node IPs; the v1.19.6 source has it, "
        "earlier 1.19.x releases are not confirmed."
    )
    rationale_decision = (
        "The platform runs Cilium's Gateway in hostNetwork mode (posture gatewayHostNetwork when the "
        "input does not show the setting), so for a Cilium Gateway with reason AddressNotAssigned on an "
        "agent older than 1.19.6 (or of unknown version) the finding is info only: gate on real L7 "
        "reachability instead. Other reasons (Invalid, NoResources, AddressNotUsable...) are errors. "
        "Status exists only in objects read from a cluster: Gateways of a live read, a snapshot or a "
        "kubectl dump are judged; manifests without status give not-run."
    )
    remediation = (
        "Read the Gateway's status conditions (kubectl describe gateway) and the operator's "
        "logs, and fix what they report; in hostNetwork mode with AddressNotAssigned, check "
        "that the listeners answer on the node addresses and upgrade Cilium to a release with "
        "the #42786 fix."
    )
    requires = (kinds.GATEWAY,)
    uses = (kinds.GATEWAY_CLASS,)
    cilium_settings = (HOST_NETWORK_KEY, cilium_keys.AGENT_VERSION)
    posture_fields = ("exposure.gatewayHostNetwork",)
    facts = (
        Fact(
            "In hostNetwork mode Cilium's Gateway stays Programmed=False (AddressNotAssigned, \"Gateway "
            "waiting for address\") although traffic flows.",
            "reported from Cilium 1.18.3 (issue #42786 version field: >=1.18.3 <1.19.0); fixed by PR #46350",
            "https://github.com/cilium/cilium/issues/42786",
        ),
        Fact(
            "The v1.19.6 operator fills a hostNetwork Gateway's addresses from node IPs and sets Programmed=True.",
            "Cilium 1.19.6 (earlier 1.19.x unconfirmed)",
            "https://github.com/cilium/cilium/issues/47456",
        ),
        Fact(
            "Host network mode disables the LoadBalancer Service mode; Helm gatewayAPI.hostNetwork.enabled "
            "renders gateway-api-hostnetwork-enabled.",
            "Cilium 1.16+",
            "https://docs.cilium.io/en/stable/network/servicemesh/gateway-api/gateway-api/#host-network-mode",
        ),
    )
    references = (
        "https://github.com/cilium/cilium/issues/42786",
        "https://github.com/cilium/cilium/pull/46350",
        "https://gateway-api.sigs.k8s.io/reference/spec/#gatewayconditiontype",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        everything = snapshot.of_kind(kinds.GATEWAY)
        gateways = [g for g in everything if snapshot.read_from_cluster(g)]
        if everything and not gateways:
            raise NotRun(
                f"{len(everything)} Gateway(s) in offline manifests, none with status.conditions: audit a live "
                "cluster, a snapshot or a kubectl dump to read the Programmed condition"
            )
        host_network, host_network_why = host_network_mode(ctx)
        agent_version = ctx.agent_version()
        version_text = agent_version.value if agent_version is not None else None
        version = agent_version.as_version() if agent_version is not None else None
        fixed = version is not None and version >= HOST_NETWORK_ADDRESS_FIX
        for gateway in gateways:
            ctx.examined(gateway)
            condition = conditions(gateway).get(PROGRAMMED)
            if condition is None:
                yield self.finding(gateway, "no Programmed condition in status: no controller has reconciled it")
                continue
            status = as_str(condition.get("status"))
            if status == "True":
                continue
            reason = as_str(condition.get("reason")) or "(no reason)"
            message = as_str(condition.get("message"))
            text = f"Programmed={status or '(empty)'}, reason {reason}" + (f": {message}" if message else "")
            known_bug = (
                host_network
                and reason == ADDRESS_NOT_ASSIGNED
                and served_by_cilium(snapshot, gateway) is not False
                and not fixed
            )
            if known_bug:
                on = f"Cilium {version_text}" if version_text else "an unknown Cilium version"
                yield self.finding(
                    gateway,
                    f"{text} (hostNetwork mode: {host_network_why}; {on} has cilium/cilium#42786, which "
                    "reports this while traffic flows): gate on real L7 reachability of the listeners instead",
                    Severity.INFO,
                )
                continue
            if host_network and reason == ADDRESS_NOT_ASSIGNED and fixed:
                text += f" (Cilium {version_text} has the #42786 fix, so this is not that known bug)"
            yield self.finding(gateway, text)
