"""Facts about Gateway API objects that several rules share (pure functions).

Fields are read the way `kubectl get -o json` shows them and every nested
value goes through as_list/as_mapping/as_str: a hostile `listeners: "x"` must
not crash a rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.api import K8sObject, RuleContext, Setting, cilium_keys, exposure, parse_version

# GatewayClass controllerName of Cilium's Gateway API implementation, and the
# class name its Helm chart creates (docs/cilium-facts.md §5.3).
CILIUM_CONTROLLER = exposure.CILIUM_CONTROLLER
CILIUM_DEFAULT_CLASS = exposure.CILIUM_DEFAULT_CLASS
GATEWAY_API_GROUP = exposure.GATEWAY_API_GROUP

ENABLE_KEY = cilium_keys.ENABLE_GATEWAY_API
HOST_NETWORK_KEY = cilium_keys.GATEWAY_API_HOST_NETWORK

# Annotations that make cert-manager's gateway-shim create the Secrets a
# Gateway's listeners reference (cert-manager docs, "Annotated Gateway resource").
CERT_MANAGER_ISSUER_ANNOTATIONS = ("cert-manager.io/cluster-issuer", "cert-manager.io/issuer")

# The first Cilium release whose operator fills in Gateway addresses in
# hostNetwork mode (the fix for cilium/cilium#42786, PR #46350): the v1.19.6
# source already has it (quoted in cilium/cilium#47456). Whether 1.19.5 or an
# earlier 1.19.x has it is not confirmed.
HOST_NETWORK_ADDRESS_FIX = (1, 19, 6)


# Reading Gateways and their classes belongs to the exposure model (auditor/exposure/gateway.py):
# the names the gateway rules use, re-exported.
class_name = exposure.class_name
class_controller = exposure.class_controller
gateway_class = exposure.gateway_class
served_by_cilium = exposure.served_by_cilium
listeners = exposure.listeners
listener_label = exposure.listener_label


def cert_manager_issuer(gateway: K8sObject) -> str | None:
    """`cert-manager.io/cluster-issuer=internal-ca` when the Gateway asks cert-manager for certificates."""
    for key in CERT_MANAGER_ISSUER_ANNOTATIONS:
        value = gateway.annotations.get(key)
        if isinstance(value, str) and value:
            return f"{key}={value}"
    return None


@dataclass(frozen=True)
class HostNetworkMode:
    """Cilium's Gateway mode as the input's Cilium configuration sets it."""

    enabled: bool
    why: str  # `gateway-api-hostnetwork-enabled=true (from ...)`, or "not set (default off)"
    setting: Setting | None  # the setting in effect; None when the key is absent (Cilium's default)


def configured_host_network(ctx: RuleContext) -> HostNetworkMode | None:
    """The Gateway mode the Cilium configuration sets, or None when the input does not show it.

    Absent from a known configuration, the key is off (Helm's gatewayAPI.hostNetwork.enabled
    defaults to false). A `${VAR}` value counts as not shown.
    """
    setting = ctx.concrete_setting(HOST_NETWORK_KEY)
    if setting is not None:
        why = f"{HOST_NETWORK_KEY}={setting.value} (from {setting.origin})"
        return HostNetworkMode(setting.as_bool(), why, setting)
    if ctx.settings_known and not ctx.setting_sources(HOST_NETWORK_KEY):
        return HostNetworkMode(False, f"{HOST_NETWORK_KEY} is not set in the Cilium configuration (default off)", None)
    return None


def host_network_mode(ctx: RuleContext) -> tuple[bool, str]:
    """Whether the Gateway runs in hostNetwork mode, and where that comes from.

    The Cilium configuration decides what Cilium does when the input shows it;
    otherwise the posture's expectation (gatewayHostNetwork, default true) stands
    in. When both are known and disagree, the reason says so: the posture is the
    expectation, and gateway-host-network-mismatch reports the difference.
    """
    expected = bool(ctx.posture.gateway_host_network)
    configured = configured_host_network(ctx)
    if configured is None:
        shown = f"(the input does not show {HOST_NETWORK_KEY})"
        return expected, f"posture gatewayHostNetwork={str(expected).lower()} {shown}"
    if configured.enabled != expected:
        return configured.enabled, (
            f"{configured.why}, although the posture expects gatewayHostNetwork={str(expected).lower()} "
            "(gateway-host-network-mismatch)"
        )
    return configured.enabled, configured.why


def bundle_version(text: object) -> tuple[int, ...] | None:
    """`v1.4.1` -> (1, 4, 1); `v1.4` -> (1, 4)."""
    if not isinstance(text, str):
        return None
    parsed = parse_version(text)
    if parsed is None:
        return None
    # Keep only the components written: `v1.4` is a line, `v1.4.0` a release.
    written = text.strip().lstrip("v").split("-", 1)[0].split(".")
    return parsed[: max(2, min(3, len(written)))]
