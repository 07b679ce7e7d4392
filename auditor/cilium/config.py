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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from auditor import kinds
from auditor.cilium import keys
from auditor.cilium.helm_values import HelmValues, describe_object, helm_settings, helm_sources
from auditor.model import K8sObject, ObjectRef, Source, as_list, as_mapping, as_str, is_placeholder
from auditor.snapshot import Snapshot
from auditor.versions import Version, image_tag_version, parse_version

# Where a finding about the configuration points: an object (or values file) and the line.
Anchor = tuple[ObjectRef, Source | None]

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


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

    def as_bool(self) -> bool:
        """The value as the rules read a boolean switch: "true" (any case, spaces around) is on,
        anything else off."""
        return self.as_choice() == "true"

    def as_choice(self) -> str:
        """The value of an enumerated setting (`Native`, ` strict `), compared case-insensitively."""
        return self.value.strip().lower()

    def as_number(self) -> float | None:
        """A number (`32.5`, `10`); None when the value is not a finite number."""
        try:
            value = float(self.value.strip())
        except ValueError:
            return None
        return value if value == value and value not in (float("inf"), float("-inf")) else None

    def as_seconds(self) -> float | None:
        """A Go duration (`5s`, `1m30s`, `500ms`, `0`) in seconds; None when malformed."""
        return parse_duration(self.value)

    def as_version(self) -> Version | None:
        """A version (`1.19.1`, `v1.18.0-rc.1`); None when the value is not one."""
        return parse_version(self.value)

    def describe(self, key: str) -> str:
        """`k8s-client-qps=50 (from k8sClientRateLimit.qps in Helm values file values.yaml:4)`."""
        return f"{key}={self.value} (from {self.origin})"


def parse_duration(text: str) -> float | None:
    """A Go duration (`5s`, `1m30s`, `500ms`) in seconds; None when malformed."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0 if text == "0" else None
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    return total if position == len(text) and position > 0 else None


def _setting(value: str, origin: str, ref: ObjectRef | None, source: Source | None) -> Setting:
    return Setting(value, origin, ref, source, concrete=not is_placeholder(value))


@dataclass
class CiliumConfig:
    """The effective configuration: for every key, the setting that wins and every source that offered one."""

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
    anchor: Anchor | None = None
    # Remarks about sources that could not be read completely.
    notes: list[str] = field(default_factory=list)
    # Two different configurations in one scope (two cilium-config ConfigMaps, two releases of the
    # cilium chart with different values): which one the agent runs with is not in the input, so no
    # setting is resolved and every rule reading one is not-run with this reason (`ambiguity`).
    ambiguous: str | None = None

    @property
    def found(self) -> bool:
        """Whether the input shows any Cilium configuration at all."""
        return bool(self.origins)

    @property
    def namespace(self) -> str:
        """The namespace Cilium runs in: cilium-config's or the agent's, else kube-system."""
        for obj in (self.config_map, self.agent):
            if obj is not None and obj.namespace:
                return obj.namespace
        return keys.DEFAULT_NAMESPACE

    def get(self, key: str) -> Setting | None:
        return self.settings.get(key)

    def value(self, key: str) -> str | None:
        setting = self.settings.get(key)
        return setting.value if setting else None

    def concrete_value(self, key: str) -> str | None:
        """The value when it is set and concrete (not a `${VAR}` substitution)."""
        setting = self.settings.get(key)
        return setting.value if setting is not None and setting.concrete else None

    def sources_of(self, key: str) -> list[Setting]:
        """Every setting offered for `key`, highest precedence first (the first one is in effect)."""
        return list(self.candidates.get(key, ()))

    def shadowed(self, key: str) -> list[Setting]:
        """Lower-precedence settings of `key` whose value differs from the effective one."""
        effective = self.settings.get(key)
        if effective is None:
            return []
        return [s for s in self.candidates.get(key, [])[1:] if s.value != effective.value]

    def version(self) -> Version | None:
        """The agent version when the input shows a concrete one."""
        return parse_version(self.concrete_value(keys.AGENT_VERSION))

    def anchor_of(self, setting: Setting | None = None) -> Anchor | None:
        """Where a finding about `setting` points: its source, else the main configuration source."""
        if setting is not None and setting.ref is not None:
            return setting.ref, setting.source
        if self.anchor is not None:
            return self.anchor
        if self.agent is not None:
            return self.agent.ref, self.agent.source
        return None

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
    """`cilium-config`, preferring kube-system when several namespaces have one (see `choose_config_map`)."""
    candidates = [cm for cm in snapshot.of_kind(kinds.CONFIGMAP) if cm.name == keys.CONFIG_MAP_NAME]
    if not candidates:
        return None
    candidates.sort(key=lambda cm: (cm.namespace != keys.DEFAULT_NAMESPACE, cm.namespace or ""))
    return candidates[0]


def choose_config_map(snapshot: Snapshot) -> tuple[K8sObject | None, str | None]:
    """The `cilium-config` the agent reads, or (None, why it cannot be told) when the input holds several.

    Copies with the same data are one configuration. Otherwise the agent's
    own namespace decides, when the input holds the agent DaemonSet: it
    mounts `cilium-config` as a volume, and a Pod can only use a ConfigMap of
    its own namespace (https://kubernetes.io/docs/concepts/configuration/configmap/,
    "The Pod and the ConfigMap must be in the same namespace"). Anything else
    is two configurations that the input does not settle (issue 9: never first-wins).
    """
    candidates = [cm for cm in snapshot.of_kind(kinds.CONFIGMAP) if cm.name == keys.CONFIG_MAP_NAME]
    first = find_config_map(snapshot)
    if len(candidates) < 2 or len({_data_key(cm.data) for cm in candidates}) == 1:
        return first, None
    agents = {ds.namespace for ds in snapshot.of_kind(kinds.DAEMONSET) if ds.name == keys.AGENT_DAEMONSET_NAME}
    if len(agents) == 1:
        own = [cm for cm in candidates if cm.namespace in agents]
        if len({_data_key(cm.data) for cm in own}) == 1:
            return own[0], None
    listed = ", ".join(describe_object(cm) for cm in candidates)
    return None, (f"two Cilium configurations in one scope: {len(candidates)} cilium-config ConfigMaps with "
                  f"different data ({listed}); which one the agent reads is not in the input")


def _data_key(data: dict[str, Any]) -> str:
    return repr(sorted((str(k), repr(v)) for k, v in data.items()))


def find_agent(snapshot: Snapshot, namespace: str | None) -> K8sObject | None:
    agents = [ds for ds in snapshot.of_kind(kinds.DAEMONSET) if ds.name == keys.AGENT_DAEMONSET_NAME]
    agents.sort(key=lambda ds: (ds.namespace != (namespace or keys.DEFAULT_NAMESPACE), ds.namespace or ""))
    return agents[0] if agents else None


def agent_container(daemonset: K8sObject) -> dict[str, Any]:
    """The `cilium-agent` container of the agent DaemonSet (or its first container)."""
    pod_spec = as_mapping(as_mapping(daemonset.spec.get("template")).get("spec"))
    containers = [c for c in as_list(pod_spec.get("containers")) if isinstance(c, dict)]
    for container in containers:
        if container.get("name") == keys.AGENT_CONTAINER_NAME:
            return container
    return containers[0] if containers else {}


def agent_env_from(agent: K8sObject) -> bool:
    """Whether the agent container takes environment from `envFrom` (values the input does not show)."""
    return bool(as_list(agent_container(agent).get("envFrom")))


def _describe_value_from(value_from: dict[str, Any]) -> str:
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
    version = image_tag_version(container.get("image"))
    if version:
        config._offer(keys.AGENT_VERSION, _setting(version, origin, agent.ref, agent.source))
    env_keys = {name: key for key, name in keys.AGENT_ENV_NAMES.items()}
    for env in as_list(container.get("env")):
        env = as_mapping(env)
        key = env_keys.get(as_str(env.get("name")))
        if key is None:
            continue
        value, value_from = env.get("value"), env.get("valueFrom")
        if isinstance(value, str):
            config._offer(key, _setting(value, origin, agent.ref, agent.source))
        elif isinstance(value_from, dict):
            unresolved = Setting(_describe_value_from(value_from), origin, agent.ref, agent.source, concrete=False)
            config._offer(key, unresolved)


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
    for key in (keys.AGENT_VERSION, keys.OPERATOR_VERSION):
        if key not in seen and helm.chart_version:
            # The chart's default image tags are the chart's own version.
            config._offer(key, _setting(helm.chart_version, f"chart version of {helm.origin}", helm.ref, helm.source))


# --- resolution ------------------------------------------------------------------


def resolve(snapshot: Snapshot, values_files: Iterable[HelmValues] | None = None) -> CiliumConfig:
    """The effective configuration of `snapshot`, plus `values_files` (default: the snapshot's own,
    given with `audit scan --cilium-values`)."""
    files: list[HelmValues] = list(snapshot.cilium_values if values_files is None else values_files)
    config = CiliumConfig()
    config_map, ambiguity = choose_config_map(snapshot)
    releases = helm_sources(snapshot, config.notes)
    ambiguity = ambiguity or releases_ambiguity(releases)
    if ambiguity is not None:
        config_maps = [describe_object(cm) for cm in snapshot.of_kind(kinds.CONFIGMAP)
                       if cm.name == keys.CONFIG_MAP_NAME]
        return CiliumConfig(origins=[*config_maps, *(r.origin for r in releases)], notes=[ambiguity],
                            ambiguous=ambiguity)
    if config_map is not None:
        _read_config_map(config, config_map)
    agent = find_agent(snapshot, config_map.namespace if config_map else None)
    if agent is not None:
        _read_agent(config, agent)
    # Later files win, as with `helm -f a.yaml -f b.yaml`.
    for values_file in reversed(files):
        _apply_helm(config, values_file)
    config.origins.extend(values_file.origin for values_file in files)
    for helm in releases:
        _apply_helm(config, helm)
        if helm.origin not in config.origins:
            config.origins.append(helm.origin)
    return config


def releases_ambiguity(releases: list[HelmValues]) -> str | None:
    """Why several releases of the cilium chart in one scope are not one configuration (None when they are).

    A cluster runs one Cilium: a second Helm release of the chart renders the
    same cluster-wide objects (ClusterRoles, the cilium-config of its
    namespace, CRDs), and Helm refuses to install over resources another
    release owns ("invalid ownership metadata", helm/helm pkg/action/validate.go
    existingResourceConflict), so which one configures the agent depends on
    which was applied first: not in the input. Releases with the same values
    and chart version are one configuration, whatever deploys them.
    """
    if len(releases) < 2:
        return None
    if len({(repr(sorted(_flat(r.values))), r.chart_version) for r in releases}) == 1:
        return None
    listed = ", ".join(r.origin for r in releases)
    return (f"two Cilium configurations in one scope: {len(releases)} releases of the cilium chart with different "
            f"values ({listed}); which one configures the agent is not in the input")


def _flat(values: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [("", values)]
    while stack:  # iterative: values may nest as deep as the YAML loader allows
        prefix, node = stack.pop()
        if isinstance(node, dict):
            stack.extend((f"{prefix}.{key}", value) for key, value in node.items())
        else:
            out.append((prefix, repr(node)))
    return out

