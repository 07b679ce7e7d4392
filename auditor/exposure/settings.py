"""What the exposure model reads of the Cilium configuration and the posture, each with where it comes from.

A switch is on, off, or unknown (None): unknown when the input shows no
complete Cilium configuration and does not set the key, or sets it to a value
it does not resolve (`${VAR}`). The model never turns "unknown" into "off":
an announcement it cannot establish is `unknown`, and the rules reading it
say not-run.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.cilium import keys
from auditor.cilium.config import CiliumConfig
from auditor.exposure.gateway import CiliumGatewaySettings
from auditor.posture import Posture
from auditor.versions import Version, parse_version

_FALLBACK: Version = (1, 19, 0)


@dataclass(frozen=True, slots=True)
class Switch:
    """A Cilium feature as the configuration leaves it: on, off, or unknown (None), and where that comes from."""

    on: bool | None
    why: str


@dataclass(frozen=True, slots=True)
class ExposureSettings:
    """What of the effective Cilium configuration decides which ways in exist (L2, BGP, LB-IPAM, Gateway API,
    version)."""

    l2: Switch
    bgp: Switch
    default_lb_ipam: str | None
    gateway: CiliumGatewaySettings
    version: Version
    version_why: str
    settings_known: bool


def switch(config: CiliumConfig, key: str) -> Switch:
    if config.ambiguous is not None:
        return Switch(None, config.ambiguous)
    setting = config.get(key)
    if setting is not None:
        if not setting.concrete:
            return Switch(None, f"{key} is {setting.value!r} ({setting.origin}), a value the input does not resolve")
        return Switch(setting.as_bool(), setting.describe(key))
    if config.settings_known:
        return Switch(False, f"{key} not set (default off; {config.describe_sources()})")
    return Switch(None, f"the input shows no Cilium configuration setting {key}")


def _host_network(config: CiliumConfig, posture: Posture) -> tuple[bool, str]:
    """The Gateway's hostNetwork mode: the configuration when it shows it, else the posture's expectation."""
    key = keys.GATEWAY_API_HOST_NETWORK
    setting = config.get(key)
    if setting is not None and setting.concrete:
        return setting.as_bool(), setting.describe(key)
    if config.settings_known and setting is None:
        return False, f"{key} not set (default off)"
    expected = bool(posture.gateway_host_network)
    return expected, f"posture gatewayHostNetwork={str(expected).lower()} (the input does not show {key})"


def _version(config: CiliumConfig, posture: Posture) -> tuple[Version, str]:
    setting = config.get(keys.AGENT_VERSION)
    version = setting.as_version() if setting is not None and setting.concrete else None
    if setting is not None and version is not None:
        return version, f"Cilium {setting.value} ({setting.origin})"
    line = posture.cilium_version_line
    return parse_version(line) or _FALLBACK, f"Cilium {line} (posture ciliumVersionLine)"


def resolve_settings(config: CiliumConfig, posture: Posture) -> ExposureSettings:
    host_network, host_network_why = _host_network(config, posture)
    version, version_why = _version(config, posture)
    etp_setting = config.get(keys.GATEWAY_API_SERVICE_ETP)
    if etp_setting is not None and etp_setting.concrete:
        etp, etp_why = etp_setting.value.strip() or "Cluster", etp_setting.describe(keys.GATEWAY_API_SERVICE_ETP)
    else:
        etp, etp_why = "Cluster", f"{keys.GATEWAY_API_SERVICE_ETP} not set (default Cluster)"
    ipam = config.get(keys.DEFAULT_LB_SERVICE_IPAM)
    return ExposureSettings(
        l2=switch(config, keys.ENABLE_L2_ANNOUNCEMENTS),
        bgp=switch(config, keys.ENABLE_BGP_CONTROL_PLANE),
        default_lb_ipam=ipam.value if ipam is not None and ipam.concrete else None,
        gateway=CiliumGatewaySettings(host_network, host_network_why, etp, etp_why, version, version_why),
        version=version,
        version_why=version_why,
        settings_known=config.settings_known,
    )
