"""One effective Cilium configuration per input, with where each value came from.

Cilium's agent reads its settings from the `cilium-config` ConfigMap (in the
namespace Cilium is installed in, `kube-system` by default); the API server
address used when kube-proxy is replaced lands in the agent DaemonSet's
`KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT` environment. Rules ask
this module, never the raw objects, so every rule reads the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor import kinds
from auditor.model import K8sObject, as_list, as_mapping, as_str
from auditor.snapshot import Snapshot

CONFIG_MAP_NAME = "cilium-config"
AGENT_DAEMONSET_NAME = "cilium"
DEFAULT_NAMESPACE = "kube-system"


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective value and a human-readable note of where it came from."""

    value: str
    origin: str


@dataclass
class CiliumConfig:
    settings: dict[str, Setting] = field(default_factory=dict)
    # The objects/files the configuration was resolved from, for reports.
    origins: list[str] = field(default_factory=list)
    config_map: K8sObject | None = None
    agent: K8sObject | None = None
    # Whether the agent's settings themselves are known (a cilium-config
    # ConfigMap or Helm values were found): only then does an absent key mean
    # "Cilium's default" rather than "unknown".
    settings_known: bool = False

    @property
    def found(self) -> bool:
        """Whether the input shows any Cilium configuration at all."""
        return bool(self.origins)

    def get(self, key: str) -> Setting | None:
        return self.settings.get(key)

    def value(self, key: str) -> str | None:
        setting = self.settings.get(key)
        return setting.value if setting else None

    def flag(self, key: str) -> bool | None:
        """A boolean setting: True/False, or None when the input does not set it."""
        value = self.value(key)
        if value is None:
            return None
        return value.strip().lower() == "true"


def _describe(obj: K8sObject) -> str:
    """`ConfigMap kube-system/cilium-config (dump.json:12)`."""
    where = f" ({obj.source})" if obj.source else ""
    return f"{obj.kind} {obj.namespace}/{obj.name}{where}" if obj.namespace else f"{obj.kind} {obj.name}{where}"


def find_config_map(snapshot: Snapshot) -> K8sObject | None:
    """`cilium-config`, preferring kube-system when several namespaces have one."""
    candidates = [cm for cm in snapshot.of_kind(kinds.CONFIGMAP) if cm.name == CONFIG_MAP_NAME]
    if not candidates:
        return None
    candidates.sort(key=lambda cm: (cm.namespace != DEFAULT_NAMESPACE, cm.namespace or ""))
    return candidates[0]


def find_agent(snapshot: Snapshot, namespace: str | None) -> K8sObject | None:
    agents = [ds for ds in snapshot.of_kind(kinds.DAEMONSET) if ds.name == AGENT_DAEMONSET_NAME]
    agents.sort(key=lambda ds: (ds.namespace != (namespace or DEFAULT_NAMESPACE), ds.namespace or ""))
    return agents[0] if agents else None


def agent_container(daemonset: K8sObject) -> dict:
    """The `cilium-agent` container of the agent DaemonSet (or its first container)."""
    pod_spec = as_mapping(as_mapping(daemonset.spec.get("template")).get("spec"))
    containers = [c for c in as_list(pod_spec.get("containers")) if isinstance(c, dict)]
    for container in containers:
        if container.get("name") == "cilium-agent":
            return container
    return containers[0] if containers else {}


def image_version(image: str) -> str | None:
    """`quay.io/cilium/cilium:v1.19.1@sha256:...` -> `1.19.1`."""
    reference = image.split("@", 1)[0]
    name, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag:
        return None
    return tag[1:] if tag.startswith("v") else tag


def resolve(snapshot: Snapshot) -> CiliumConfig:
    config = CiliumConfig()
    config_map = find_config_map(snapshot)
    if config_map is not None:
        origin = _describe(config_map)
        config.config_map = config_map
        config.settings_known = True
        config.origins.append(origin)
        for key, value in config_map.data.items():
            if isinstance(key, str) and isinstance(value, str):
                config.settings[key] = Setting(value, origin)
    agent = find_agent(snapshot, config_map.namespace if config_map else None)
    if agent is not None:
        origin = _describe(agent)
        config.agent = agent
        config.origins.append(origin)
        container = agent_container(agent)
        version = image_version(as_str(container.get("image")))
        if version:
            config.settings.setdefault("agent-version", Setting(version, origin))
        for env in as_list(container.get("env")):
            env = as_mapping(env)
            name, value = env.get("name"), env.get("value")
            if name in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT") and isinstance(value, str):
                config.settings.setdefault(f"env.{name}", Setting(value, origin))
    return config
