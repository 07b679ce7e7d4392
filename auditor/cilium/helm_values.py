"""Cilium Helm values, wherever GitOps input keeps them, mapped to cilium-config keys.

A plain values file (`audit --cilium-values FILE`), a Flux `HelmRelease` or an
Argo CD `Application` of the `cilium` chart: each becomes a `HelmValues`
(values, where they came from, the line of every key of a values file), and
`helm_settings` maps its values to the keys the chart renders into the
cilium-config ConfigMap and the agent DaemonSet (docs/cilium-facts.md §8).
auditor.cilium.config merges them with the live objects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Iterator

from auditor.model import K8sObject, ObjectRef, Source, as_list, as_mapping, as_str
from auditor.snapshot import Snapshot

CHART_NAME = "cilium"
# GitOps objects that carry Cilium Helm values. Rules list them in `uses`, so
# a live read fetches them too.
HELM_RELEASE = "HelmRelease.helm.toolkit.fluxcd.io"
OCI_REPOSITORY = "OCIRepository.source.toolkit.fluxcd.io"
ARGO_APPLICATION = "Application.argoproj.io"
# Pseudo-kind naming a values file in findings (it is not a Kubernetes object).
VALUES_FILE_KIND = "HelmValues"
MAX_VALUES_BYTES = 16 * 1024 * 1024
# Argo CD `helm.values` strings are YAML inside an object; they get a small
# alias budget (they are not the manifest path).
_EMBEDDED_ALIAS_LIMIT = 10_000
_EXACT_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
ENV_HOST = "env.KUBERNETES_SERVICE_HOST"
ENV_PORT = "env.KUBERNETES_SERVICE_PORT"
AGENT_VERSION = "agent-version"
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}")


def is_placeholder(value: str) -> bool:
    """Whether `value` holds a substitution the input does not resolve (`${VAR}`)."""
    return _PLACEHOLDER.search(value) is not None


def describe_object(obj: K8sObject) -> str:
    """`ConfigMap kube-system/cilium-config (dump.json:12)`."""
    where = f" ({obj.source})" if obj.source else ""
    return f"{obj.kind} {obj.namespace}/{obj.name}{where}" if obj.namespace else f"{obj.kind} {obj.name}{where}"


def image_version(image: str) -> str | None:
    """`quay.io/cilium/cilium:v1.19.1@sha256:...` -> `1.19.1`."""
    reference = image.split("@", 1)[0]
    name, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag:
        return None
    return tag[1:] if tag.startswith("v") else tag


@dataclass
class HelmValues:
    """Cilium Helm values from one place: a values file, a HelmRelease or an Application."""

    values: dict
    origin: str  # `Helm values file values.yaml`, `HelmRelease kube-system/cilium (hr.yaml:3)`
    ref: ObjectRef
    source: Source | None
    # Where each leaf came from inside the object (`spec.values`, `spec.source.helm.valuesObject`);
    # empty for a values file.
    provenance: dict[tuple, str] = field(default_factory=dict)
    default_label: str = ""
    # Line of every node of a values file, by key path (auditor.parsing.yaml_docs.NodeLines).
    lines: Mapping[tuple, int] = field(default_factory=dict)
    chart_version: str | None = None
    # False when values come from elsewhere too (Flux valuesFrom, Argo CD
    # valueFiles): a key absent here may then be set there.
    complete: bool = True

    def describe(self, path: tuple) -> str:
        dotted = ".".join(str(part) for part in path)
        if self.ref.kind == VALUES_FILE_KIND:
            line = self._line(path)
            where = f"{self.ref.name}:{line}" if line else self.ref.name
            return f"{dotted} in Helm values file {where}"
        label = self.provenance.get(path, self.default_label)
        return f"{label}.{dotted} of {self.origin}" if label else f"{dotted} of {self.origin}"

    def _line(self, path: tuple) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def source_of(self, path: tuple) -> Source | None:
        if self.ref.kind == VALUES_FILE_KIND:
            return Source(self.ref.name, self._line(path) or 1)
        return self.source


# --- Helm values -> cilium-config keys ----------------------------------------

# Helm value path -> cilium-config key (docs/cilium-facts.md §8, and the chart's
# cilium-configmap.yaml / agent DaemonSet templates). Keys the chart renders
# only under a condition are handled in `helm_settings` below.
_SIMPLE_KEYS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("kubeProxyReplacement",), "kube-proxy-replacement"),
    (("l2announcements", "enabled"), "enable-l2-announcements"),
    (("l2announcements", "leaseDuration"), "l2-announcements-lease-duration"),
    (("l2announcements", "leaseRenewDeadline"), "l2-announcements-renew-deadline"),
    (("l2announcements", "leaseRetryPeriod"), "l2-announcements-retry-period"),
    (("gatewayAPI", "enabled"), "enable-gateway-api"),
    (("gatewayAPI", "hostNetwork", "enabled"), "gateway-api-hostnetwork-enabled"),
    (("hostFirewall", "enabled"), "enable-host-firewall"),
    (("routingMode",), "routing-mode"),
    (("ipam", "mode"), "ipam"),
    (("bgpControlPlane", "enabled"), "enable-bgp-control-plane"),
    (("cni", "chainingMode"), "cni-chaining-mode"),
    (("defaultLBServiceIPAM",), "default-lb-service-ipam"),
    # Pre-1.18 per-feature switches (used with the old `partial` replacement).
    (("nodePort", "enabled"), "enable-node-port"),
    (("hostPort", "enabled"), "enable-host-port"),
    (("externalIPs", "enabled"), "enable-external-ips"),
)
# Rendered only when truthy (`{{- with }}` / `{{- if }}` in the chart).
_TRUTHY_KEYS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("k8sClientRateLimit", "qps"), "k8s-client-qps"),
    (("k8sClientRateLimit", "burst"), "k8s-client-burst"),
    (("k8sServiceHost",), ENV_HOST),
    (("k8sServicePort",), ENV_PORT),
)


def _lookup(values: dict, path: tuple[str, ...]) -> tuple[bool, Any]:
    node: Any = values
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _scalar(value: Any) -> str | None:
    """A Helm scalar in the ConfigMap's spelling (`true`, `10`, `32.5`), or None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    return None


def _truthy(value: Any) -> bool:
    """Go template truthiness, with substitutions counted as (possibly) set."""
    if isinstance(value, str):
        return value != ""
    return bool(value) if isinstance(value, (bool, int, float, list, dict)) else False


def helm_settings(values: dict) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(cilium-config key, value, Helm path) for every mapped value set in `values`."""
    for path, key in _SIMPLE_KEYS:
        present, raw = _lookup(values, path)
        text = _scalar(raw) if present else None
        if text is not None:
            yield key, text, path
    for path, key in _TRUTHY_KEYS:
        present, raw = _lookup(values, path)
        text = _scalar(raw) if present and _truthy(raw) else None
        if text is not None:
            yield key, text, path
    present, mode = _lookup(values, ("policyEnforcementMode",))
    if present and isinstance(mode, str):
        yield "enable-policy", mode if is_placeholder(mode) else mode.lower(), ("policyEnforcementMode",)
    # Encryption: `enable-wireguard` only with encryption.enabled and type wireguard;
    # `encrypt-node` only with encryption enabled (cilium-configmap.yaml).
    encryption = as_mapping(values.get("encryption"))
    enabled, kind = encryption.get("enabled"), encryption.get("type")
    if _truthy(enabled) and isinstance(kind, str):
        if is_placeholder(kind) or (isinstance(enabled, str) and is_placeholder(enabled)):
            placeholder = kind if is_placeholder(kind) else enabled
            yield "enable-wireguard", placeholder, ("encryption", "type")
        elif kind == "wireguard":
            yield "enable-wireguard", _scalar(enabled) or "true", ("encryption", "enabled")
    node_encryption = encryption.get("nodeEncryption")
    if _truthy(enabled) and _truthy(node_encryption):
        text = _scalar(node_encryption)
        if text is not None:
            yield "encrypt-node", text, ("encryption", "nodeEncryption")
    # The cluster-pool CIDRs are rendered only in cluster-pool IPAM (the chart's default mode).
    _, ipam_mode = _lookup(values, ("ipam", "mode"))
    if ipam_mode in (None, "", "cluster-pool") or (isinstance(ipam_mode, str) and is_placeholder(ipam_mode)):
        path = ("ipam", "operator", "clusterPoolIPv4PodCIDRList")
        present, cidrs = _lookup(values, path)
        if present:
            if isinstance(cidrs, list):
                parts = [c for c in cidrs if isinstance(c, str) and c]
                if parts:
                    yield "cluster-pool-ipv4-cidr", " ".join(parts), path
            elif isinstance(cidrs, str) and cidrs:
                yield "cluster-pool-ipv4-cidr", cidrs, path
    # The agent image tag is the version that runs (`image.override` replaces the whole reference).
    image = as_mapping(values.get("image"))
    override, tag = image.get("override"), image.get("tag")
    if isinstance(override, str) and override:
        version = image_version(override)
        if version:
            yield AGENT_VERSION, version, ("image", "override")
    elif isinstance(tag, str) and tag:
        yield AGENT_VERSION, tag[1:] if tag.startswith("v") else tag, ("image", "tag")


def _exact_version(text: Any) -> str | None:
    """A chart version that names one release (`1.16.3`), not a range (`1.16.x`, `>=1.16`)."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    return (text[1:] if text.startswith("v") else text) if _EXACT_VERSION.match(text) else None


# --- values files (--cilium-values) --------------------------------------------


def read_values_file(path: str) -> HelmValues:
    """A plain Cilium Helm values file; `InputError` (one line, file and line) when it cannot be read."""
    from auditor.config_files import read_small_file
    from auditor.errors import InputError
    from auditor.parsing.yaml_docs import YAMLInputError, load_config_document

    text = read_small_file(path, "Cilium values file", MAX_VALUES_BYTES, InputError)
    try:
        located = load_config_document(text)
    except YAMLInputError as error:
        raise InputError.at(path, error.line, f"Cilium values file: {error.problem}") from None
    values = located.data
    if values is None:
        values = {}
    if not isinstance(values, dict):
        found = "a list" if isinstance(values, list) else f"a {type(values).__name__}"
        raise InputError.at(path, located.line_of(()) or 1, f"Cilium values file must be a mapping of Helm values, found {found}")
    ref = ObjectRef(VALUES_FILE_KIND, None, path)
    return HelmValues(values=values, origin=f"Helm values file {path}", ref=ref, source=Source(path, 1), lines=located.lines)


# --- HelmRelease (Flux) and Application (Argo CD) ------------------------------


def _is_cilium_chart(name: Any) -> bool:
    """`cilium`, or a path/URL ending in `/cilium` (GitRepository charts, OCI URLs)."""
    if not isinstance(name, str):
        return False
    name = name.strip().rstrip("/")
    tail = name.rsplit("/", 1)[-1].split(":", 1)[0]
    return tail == CHART_NAME


def _release_chart(snapshot: Snapshot, release: K8sObject) -> tuple[bool, str | None]:
    """Whether a HelmRelease installs the cilium chart, and the chart version when exact."""
    chart_spec = as_mapping(as_mapping(release.spec.get("chart")).get("spec"))
    if chart_spec:
        return _is_cilium_chart(chart_spec.get("chart")), _exact_version(chart_spec.get("version"))
    chart_ref = as_mapping(release.spec.get("chartRef"))
    if not chart_ref:
        return False, None
    name = as_str(chart_ref.get("name"))
    namespace = as_str(chart_ref.get("namespace")) or release.namespace
    if chart_ref.get("kind") == "OCIRepository":
        repository = snapshot.get(OCI_REPOSITORY, namespace, name)
        if repository is not None:
            ref = as_mapping(repository.spec.get("ref"))
            return _is_cilium_chart(repository.spec.get("url")), _exact_version(ref.get("tag") or ref.get("semver"))
    # The referenced source is not in the input: go by its name (`chartRef: {name: cilium}`).
    return name == CHART_NAME, None


def _merge(target: dict, layer: Any, label: str, provenance: dict[tuple, str], prefix: tuple = ()) -> None:
    """Helm's merge: maps merge recursively, anything else replaces, null deletes.

    Walked with an explicit stack, not recursion: values nested as deep as
    libyaml allows (1,000 levels) must not exhaust Python's recursion limit.
    """
    stack: list[tuple[dict, Any, tuple]] = [(target, layer, prefix)]
    while stack:
        into, source, at = stack.pop()
        if not isinstance(source, dict):
            continue
        for key, value in source.items():
            if not isinstance(key, str):
                continue
            path = (*at, key)
            if value is None:
                into.pop(key, None)
                for known in [p for p in provenance if p[: len(path)] == path]:
                    del provenance[known]
                continue
            if isinstance(value, dict):
                if not isinstance(into.get(key), dict):
                    into[key] = {}
                stack.append((into[key], value, path))
                continue
            into[key] = value
            provenance[path] = label


def _parse_embedded_values(text: str) -> tuple[dict | None, str | None]:
    """An Argo CD `helm.values` string as a mapping, or (None, why)."""
    from auditor.parsing.yaml_docs import YAMLInputError, iter_documents

    try:
        documents = list(iter_documents(text, max_alias_expansion=_EMBEDDED_ALIAS_LIMIT))
    except YAMLInputError as error:
        where = f" (line {error.line} of the string)" if error.line else ""
        return None, f"{error.problem}{where}"
    if not documents:
        return {}, None
    if len(documents) > 1 or not isinstance(documents[0].data, dict):
        return None, "not one mapping of Helm values"
    return documents[0].data, None


def _set_parameter(target: dict, name: str, value: Any, label: str, provenance: dict[tuple, str]) -> bool:
    """Apply one `helm.parameters` entry (`--set name=value`); only plain dotted names."""
    if not name or any(c in name for c in "[]\\,") or not isinstance(value, str):
        return False
    path = tuple(name.split("."))
    node = target
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[path[-1]] = value
    provenance[path] = label
    return True


def _application_sources(app: K8sObject) -> list[tuple[str, dict]]:
    sources: list[tuple[str, dict]] = []
    single = app.spec.get("source")
    if isinstance(single, dict):
        sources.append(("spec.source", single))
    for index, source in enumerate(as_list(app.spec.get("sources"))):
        if isinstance(source, dict):
            sources.append((f"spec.sources[{index}]", source))
    return sources


def _application_values(app: K8sObject, notes: list[str]) -> list[HelmValues]:
    found = []
    for where, source in _application_sources(app):
        if not _is_cilium_chart(source.get("chart")):
            continue
        helm = as_mapping(source.get("helm"))
        origin = describe_object(app)
        values: dict = {}
        provenance: dict[tuple, str] = {}
        complete = not as_list(helm.get("valueFiles")) and not as_list(helm.get("fileParameters"))
        # Argo CD precedence: parameters > valuesObject > values > valueFiles > chart defaults.
        text = helm.get("values")
        if isinstance(text, str) and text.strip():
            parsed, problem = _parse_embedded_values(text)
            if parsed is None:
                notes.append(f"{where}.helm.values of {origin}: unreadable ({problem}); ignored")
                complete = False
            else:
                _merge(values, parsed, f"{where}.helm.values", provenance)
        _merge(values, helm.get("valuesObject"), f"{where}.helm.valuesObject", provenance)
        for parameter in as_list(helm.get("parameters")):
            parameter = as_mapping(parameter)
            name = as_str(parameter.get("name"))
            label = f"{where}.helm.parameters"
            if name and not _set_parameter(values, name, parameter.get("value"), label, provenance):
                notes.append(f"{label} {name!r} of {origin}: not a plain dotted name; ignored")
                complete = False
        found.append(
            HelmValues(
                values=values,
                origin=origin,
                ref=app.ref,
                source=app.source,
                provenance=provenance,
                chart_version=_exact_version(source.get("targetRevision")),
                complete=complete,
            )
        )
    return found


def helm_sources(snapshot: Snapshot, notes: list[str] | None = None) -> list[HelmValues]:
    """Cilium Helm values held by HelmReleases and Applications, in input order."""
    notes = notes if notes is not None else []
    found: list[HelmValues] = []
    for release in snapshot.of_kind(HELM_RELEASE):
        is_cilium, version = _release_chart(snapshot, release)
        if not is_cilium:
            continue
        values: dict = {}
        provenance: dict[tuple, str] = {}
        _merge(values, release.spec.get("values"), "spec.values", provenance)
        found.append(
            HelmValues(
                values=values,
                origin=describe_object(release),
                ref=release.ref,
                source=release.source,
                provenance=provenance,
                default_label="spec.values",
                chart_version=version,
                complete=not as_list(release.spec.get("valuesFrom")),
            )
        )
    for app in snapshot.of_kind(ARGO_APPLICATION):
        found.extend(_application_values(app, notes))
    return found
