"""One effective Cilium configuration per input, with where each value came from.

Cilium's agent reads its settings from the `cilium-config` ConfigMap (in the
namespace Cilium is installed in, `kube-system` by default); the API server
address used when kube-proxy is replaced lands in the agent DaemonSet's
`KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT` environment. GitOps input
often holds neither, only the Helm values the chart renders them from: a
plain values file (`audit --cilium-values FILE`), a Flux `HelmRelease` or an
Argo CD `Application` of the `cilium` chart. Their values are mapped to the
same keys (docs/cilium-facts.md §8) so rules read one answer whatever the
input holds.

Precedence, per key: the ConfigMap (what the agent actually reads) and the
DaemonSet, then values files (the last one given wins, as with `helm -f`),
then HelmReleases and Applications in input order. Every source that set a
key is kept (`CiliumConfig.candidates`), not only the winner, and every source
read is listed in `CiliumConfig.origins`.

Rules ask this module, never the raw objects, so every rule reads the same
answer. Values may be Flux substitutions (`${VAR}`): they are kept as written
and marked not concrete, so a rule that needs the value treats it as unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from auditor import kinds
from auditor.cilium.helm_values import (  # noqa: F401  (re-exported: rules and the live reader use them from here)
    AGENT_VERSION,
    ARGO_APPLICATION,
    CHART_NAME,
    ENV_HOST,
    ENV_PORT,
    HELM_RELEASE,
    OCI_REPOSITORY,
    VALUES_FILE_KIND,
    HelmValues,
    describe_object,
    helm_settings,
    helm_sources,
    image_version,
    is_placeholder,
    read_values_file,
)
from auditor.model import K8sObject, ObjectRef, Source, as_list, as_mapping, as_str
from auditor.snapshot import Snapshot

CONFIG_MAP_NAME = "cilium-config"
AGENT_DAEMONSET_NAME = "cilium"
DEFAULT_NAMESPACE = "kube-system"

# Kinds any one of which can show the Cilium configuration (a values file given
# with --cilium-values can too, but it is not an object of the snapshot).
CONFIG_KINDS = (kinds.CONFIGMAP, kinds.DAEMONSET, HELM_RELEASE, ARGO_APPLICATION)
# Kinds whose presence the config resolution reads.
SOURCE_KINDS = (kinds.CONFIGMAP, kinds.DAEMONSET, HELM_RELEASE, ARGO_APPLICATION, OCI_REPOSITORY)


_VERSION_PREFIX = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """`v1.19.1` / `1.14.0-rc.0` / `1.19` -> (1, 19, 1) / (1, 14, 0) / (1, 19, 0)."""
    match = _VERSION_PREFIX.match(text.strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective value and a human-readable note of where it came from.

    `ref` and `source` name the object (or values file) that set it, so a
    rule can attach a finding to it; `concrete` is False for values the input
    leaves open (a `${VAR}` substitution, an env var read from elsewhere).
    """

    value: str
    origin: str
    ref: ObjectRef | None = None
    source: Source | None = None
    concrete: bool = True


def _setting(value: str, origin: str, ref: ObjectRef | None, source: Source | None) -> Setting:
    return Setting(value, origin, ref, source, concrete=not is_placeholder(value))


@dataclass
class CiliumConfig:
    settings: dict[str, Setting] = field(default_factory=dict)
    # The objects/files the configuration was resolved from, for reports.
    origins: list[str] = field(default_factory=list)
    config_map: K8sObject | None = None
    agent: K8sObject | None = None
    # Whether the agent's settings themselves are known (a cilium-config
    # ConfigMap or complete Helm values were found): only then does an absent
    # key mean "Cilium's default" rather than "unknown".
    settings_known: bool = False
    # Helm values sources read, highest precedence first.
    helm: list[HelmValues] = field(default_factory=list)
    # Every setting offered for a key, highest precedence first (the first is `settings[key]`).
    candidates: dict[str, list[Setting]] = field(default_factory=dict)
    # Where a finding about an absent key points: the highest-precedence settings source.
    anchor: tuple[ObjectRef, Source | None] | None = None
    # Remarks about sources that could not be read completely.
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """Whether the input shows any Cilium configuration at all."""
        return bool(self.origins)

    def get(self, key: str) -> Setting | None:
        return self.settings.get(key)

    def value(self, key: str) -> str | None:
        setting = self.settings.get(key)
        return setting.value if setting else None

    def concrete_value(self, key: str) -> str | None:
        """The value when it is set and concrete (not a `${VAR}` substitution)."""
        setting = self.settings.get(key)
        return setting.value if setting is not None and setting.concrete else None

    def flag(self, key: str) -> bool | None:
        """A boolean setting: True/False, or None when unset or not concrete."""
        setting = self.settings.get(key)
        if setting is None or not setting.concrete:
            return None
        return setting.value.strip().lower() == "true"

    def shadowed(self, key: str) -> list[Setting]:
        """Lower-precedence settings of `key` whose value differs from the effective one."""
        effective = self.settings.get(key)
        if effective is None:
            return []
        return [s for s in self.candidates.get(key, [])[1:] if s.value != effective.value]

    def version(self) -> tuple[int, int, int] | None:
        """The agent version when the input shows a concrete one."""
        value = self.concrete_value(AGENT_VERSION)
        return parse_version(value) if value else None

    def describe_sources(self) -> str:
        return "; ".join(self.origins) if self.origins else "no Cilium configuration"

    def _offer(self, key: str, setting: Setting) -> None:
        self.candidates.setdefault(key, []).append(setting)
        self.settings.setdefault(key, setting)

    def _anchor_at(self, ref: ObjectRef, source: Source | None) -> None:
        if self.anchor is None:
            self.anchor = (ref, source)


# --- the live objects: ConfigMap and agent DaemonSet -------------------------


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


def _describe_value_from(value_from: dict) -> str:
    for kind in ("configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef"):
        ref = as_mapping(value_from.get(kind))
        if ref:
            name = as_str(ref.get("name"))
            key = as_str(ref.get("key")) or as_str(ref.get("fieldPath")) or as_str(ref.get("resource"))
            return f"(valueFrom {kind} {name}{'/' if name and key else ''}{key})"
    return "(valueFrom)"


def _read_config_map(config: CiliumConfig, config_map: K8sObject) -> None:
    origin = describe_object(config_map)
    config.config_map = config_map
    config.settings_known = True
    config.origins.append(origin)
    config._anchor_at(config_map.ref, config_map.source)
    for key, value in config_map.data.items():
        if isinstance(key, str) and isinstance(value, str):
            config._offer(key, _setting(value, origin, config_map.ref, config_map.source))


def _read_agent(config: CiliumConfig, agent: K8sObject) -> None:
    origin = describe_object(agent)
    config.agent = agent
    config.origins.append(origin)
    container = agent_container(agent)
    version = image_version(as_str(container.get("image")))
    if version:
        config._offer(AGENT_VERSION, _setting(version, origin, agent.ref, agent.source))
    for env in as_list(container.get("env")):
        env = as_mapping(env)
        name = env.get("name")
        if name not in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
            continue
        value, value_from = env.get("value"), env.get("valueFrom")
        if isinstance(value, str):
            config._offer(f"env.{name}", _setting(value, origin, agent.ref, agent.source))
        elif isinstance(value_from, dict):
            config._offer(
                f"env.{name}", Setting(_describe_value_from(value_from), origin, agent.ref, agent.source, concrete=False)
            )


def agent_env_from(agent: K8sObject) -> bool:
    """Whether the agent container takes environment from `envFrom` (values the input does not show)."""
    return bool(as_list(agent_container(agent).get("envFrom")))


def _apply_helm(config: CiliumConfig, helm: HelmValues) -> None:
    """Offer `helm`'s settings (after every higher-precedence source)."""
    config.helm.append(helm)
    if helm.complete:
        config.settings_known = True
        config._anchor_at(helm.ref, helm.source_of(()))
    else:
        config.notes.append(f"{helm.origin}: takes values from elsewhere too (not read), so absent keys are unknown")
    seen: set[str] = set()
    for key, value, path in helm_settings(helm.values):
        seen.add(key)
        config._offer(key, _setting(value, helm.describe(path), helm.ref, helm.source_of(path)))
    if AGENT_VERSION not in seen and helm.chart_version:
        # The chart's default image tag is the chart's own version.
        config._offer(
            AGENT_VERSION,
            _setting(helm.chart_version, f"chart version of {helm.origin}", helm.ref, helm.source),
        )


# --- resolution ------------------------------------------------------------------


def resolve(snapshot: Snapshot, values_files: list[HelmValues] | tuple[HelmValues, ...] | None = None) -> CiliumConfig:
    """The effective configuration of `snapshot`, plus `values_files` (default: the snapshot's own,
    given with `audit scan --cilium-values`)."""
    if values_files is None:
        values_files = snapshot.cilium_values
    config = CiliumConfig()
    config_map = find_config_map(snapshot)
    if config_map is not None:
        _read_config_map(config, config_map)
    agent = find_agent(snapshot, config_map.namespace if config_map else None)
    if agent is not None:
        _read_agent(config, agent)
    # Later files win, as with `helm -f a.yaml -f b.yaml`.
    for values_file in reversed(list(values_files)):
        _apply_helm(config, values_file)
    config.origins.extend(values_file.origin for values_file in values_files)
    for helm in helm_sources(snapshot, config.notes):
        _apply_helm(config, helm)
        if helm.origin not in config.origins:
            config.origins.append(helm.origin)
    return config
