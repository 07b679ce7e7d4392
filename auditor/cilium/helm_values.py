"""Cilium Helm values, wherever GitOps input keeps them, mapped to cilium-config keys.

A plain values file (`audit --cilium-values FILE`), a Flux `HelmRelease` or an
Argo CD `Application` of the `cilium` chart: each becomes a `HelmValues`
(values, where they came from, the line of every key of a values file), and
`helm_settings` maps its values to the keys the chart renders into the
cilium-config ConfigMap and the agent DaemonSet: the single-value keys by the
table of auditor/cilium/keys.py, the derived ones (encryption, cluster-pool
CIDRs, policy enforcement, agent image) by `derived_settings`.
auditor.cilium.config merges them with the live objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor import kinds
from auditor.cilium import keys
from auditor.cilium.keys import CHART_NAME, VALUES_FILE_KIND, Rendering, helm_paths
from auditor.model import K8sObject, ObjectRef, Source, as_list, as_mapping, as_str, is_placeholder
from auditor.snapshot import Snapshot, ValuesFile
from auditor.versions import exact_release, image_tag_version

MAX_VALUES_BYTES = 16 * 1024 * 1024
# Argo CD `helm.values` strings are YAML inside an object; they get a small
# alias budget (they are not the manifest path).
_EMBEDDED_ALIAS_LIMIT = 10_000
# A key path inside Helm values (`("encryption", "type")`).
ValuesPath = tuple[str, ...]


def describe_object(obj: K8sObject) -> str:
    """`ConfigMap kube-system/cilium-config (dump.json:12)`."""
    where = f" ({obj.source})" if obj.source else ""
    return f"{obj.kind} {obj.namespace}/{obj.name}{where}" if obj.namespace else f"{obj.kind} {obj.name}{where}"


@dataclass
class HelmValues:
    """Cilium Helm values from one place: a values file, a HelmRelease or an Application."""

    values: dict[str, Any]
    origin: str  # `Helm values file values.yaml`, `HelmRelease kube-system/cilium (hr.yaml:3)`
    ref: ObjectRef
    source: Source | None
    # Where each leaf came from inside the object (`spec.values`, `spec.source.helm.valuesObject`);
    # empty for a values file.
    provenance: dict[ValuesPath, str] = field(default_factory=dict)
    default_label: str = ""
    # Line of every node of a values file, by key path (auditor.parsing.yaml_docs.NodeLines).
    lines: Mapping[ValuesPath, int] = field(default_factory=dict)
    chart_version: str | None = None
    # False when values come from elsewhere too (Flux valuesFrom, Argo CD
    # valueFiles): a key absent here may then be set there.
    complete: bool = True
    # Files of the input a HelmRelease's `valuesFrom` reads (kustomize configMapGenerator files the
    # GitOps reader maps), by the provenance label of their values (`valuesFrom[0]`).
    files: Mapping[str, ValuesFile] = field(default_factory=dict)

    def describe(self, path: ValuesPath) -> str:
        dotted = ".".join(str(part) for part in path)
        if self.ref.kind == VALUES_FILE_KIND:
            line = line_of(self.lines, path)
            where = f"{self.ref.name}:{line}" if line else self.ref.name
            return f"{dotted} in Helm values file {where}"
        label = self.provenance.get(path, self.default_label)
        layer = self.files.get(label)
        if layer is not None:
            line = line_of(layer.lines, path)
            where = f"{layer.source.path}:{line}" if line else layer.source.path
            return f"{dotted} in {where} ({label} of {self.origin}, from the {layer.origin})"
        return f"{label}.{dotted} of {self.origin}" if label else f"{dotted} of {self.origin}"

    def source_of(self, path: ValuesPath) -> Source | None:
        if self.ref.kind == VALUES_FILE_KIND:
            return Source(self.ref.name, line_of(self.lines, path) or 1)
        layer = self.files.get(self.provenance.get(path, ""))
        if layer is not None:
            return Source(layer.source.path, line_of(layer.lines, path) or layer.source.line)
        return self.source


def line_of(lines: Mapping[ValuesPath, int], path: ValuesPath) -> int | None:
    """The line of `path` in a values file, else of its deepest parent that has one."""
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


# --- Helm values -> cilium-config keys ----------------------------------------

# Paths whose key the chart renders as written, or only when truthy (keys.KEYS).
_AS_WRITTEN = helm_paths(Rendering.AS_WRITTEN)
_WHEN_TRUTHY = helm_paths(Rendering.WHEN_TRUTHY)

# (cilium-config key, value, the Helm path a finding about it points at)
HelmSetting = tuple[str, str, ValuesPath]


def _lookup(values: Mapping[str, Any], path: ValuesPath) -> tuple[bool, Any]:
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


def helm_settings(values: Mapping[str, Any]) -> Iterator[HelmSetting]:
    """(cilium-config key, value, Helm path) for every mapped value set in `values`."""
    for path, key in _AS_WRITTEN:
        present, raw = _lookup(values, path)
        text = _scalar(raw) if present else None
        if text is not None:
            yield key, text, path
    for path, key in _WHEN_TRUTHY:
        present, raw = _lookup(values, path)
        text = _scalar(raw) if present and _truthy(raw) else None
        if text is not None:
            yield key, text, path
    yield from derived_settings(values)


def derived_settings(values: Mapping[str, Any]) -> Iterator[HelmSetting]:
    """The keys the chart computes from several values, under conditions (Rendering.DERIVED)."""
    yield from _policy_enforcement(values)
    yield from _encryption(values)
    yield from _cluster_pool_cidrs(values)
    yield from _image_version(as_mapping(values.get("image")), keys.AGENT_VERSION, ("image",))
    yield from _image_version(
        as_mapping(as_mapping(values.get("operator")).get("image")), keys.OPERATOR_VERSION, ("operator", "image")
    )


def _policy_enforcement(values: Mapping[str, Any]) -> Iterator[HelmSetting]:
    # `enable-policy: "{{ lower .Values.policyEnforcementMode }}"`
    present, mode = _lookup(values, ("policyEnforcementMode",))
    if present and isinstance(mode, str):
        yield keys.ENABLE_POLICY, mode if is_placeholder(mode) else mode.lower(), ("policyEnforcementMode",)


def _encryption(values: Mapping[str, Any]) -> Iterator[HelmSetting]:
    """`enable-wireguard` / `enable-ipsec` ("{{ .Values.encryption.enabled }}") for encryption.type
    wireguard / ipsec, and `encrypt-node`, all only with encryption.enabled (cilium-configmap.yaml)."""
    encryption = as_mapping(values.get("encryption"))
    enabled, kind = encryption.get("enabled"), encryption.get("type")
    if not _truthy(enabled):
        return
    if isinstance(kind, str):
        if is_placeholder(kind) or (isinstance(enabled, str) and is_placeholder(enabled)):
            # The type the input leaves open decides which key: both stay unresolved.
            placeholder = kind if is_placeholder(kind) else str(enabled)
            yield keys.ENABLE_WIREGUARD, placeholder, ("encryption", "type")
            yield keys.ENABLE_IPSEC, placeholder, ("encryption", "type")
        elif kind in _ENCRYPTION_KEYS:
            yield _ENCRYPTION_KEYS[kind], _scalar(enabled) or "true", ("encryption", "enabled")
    node_encryption = encryption.get("nodeEncryption")
    if _truthy(node_encryption):
        text = _scalar(node_encryption)
        if text is not None:
            yield keys.ENCRYPT_NODE, text, ("encryption", "nodeEncryption")


_ENCRYPTION_KEYS = {"wireguard": keys.ENABLE_WIREGUARD, "ipsec": keys.ENABLE_IPSEC}


def _cluster_pool_cidrs(values: Mapping[str, Any]) -> Iterator[HelmSetting]:
    """The cluster-pool CIDR lists, space-joined, rendered only in cluster-pool IPAM (the chart's
    default mode); the IPv6 one only with ipv6.enabled (default false)."""
    _, ipam_mode = _lookup(values, ("ipam", "mode"))
    if not (ipam_mode in (None, "", "cluster-pool") or (isinstance(ipam_mode, str) and is_placeholder(ipam_mode))):
        return
    families = [(keys.CLUSTER_POOL_IPV4_CIDR, "clusterPoolIPv4PodCIDRList")]
    if _truthy(_lookup(values, ("ipv6", "enabled"))[1]):
        families.append((keys.CLUSTER_POOL_IPV6_CIDR, "clusterPoolIPv6PodCIDRList"))
    for key, name in families:
        path = ("ipam", "operator", name)
        present, cidrs = _lookup(values, path)
        if not present:
            continue
        if isinstance(cidrs, list):
            parts = [c for c in cidrs if isinstance(c, str) and c]
            if parts:
                yield key, " ".join(parts), path
        elif isinstance(cidrs, str) and cidrs:
            yield key, cidrs, path


def _image_version(image: Mapping[str, Any], key: str, at: ValuesPath) -> Iterator[HelmSetting]:
    """The version an image of the chart runs: the tag of `<image>.override` (which replaces the whole
    reference), else `<image>.tag`; neither set, the chart's own version (added by the caller)."""
    override, tag = image.get("override"), image.get("tag")
    if isinstance(override, str) and override:
        version = image_tag_version(override)
        if version:
            yield key, version, (*at, "override")
    elif isinstance(tag, str) and tag:
        yield key, tag[1:] if tag.startswith("v") else tag, (*at, "tag")


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
        problem = f"Cilium values file must be a mapping of Helm values, found {found}"
        raise InputError.at(path, located.line_of(()) or 1, problem)
    ref = ObjectRef(VALUES_FILE_KIND, None, path)
    return HelmValues(
        values=values, origin=f"Helm values file {path}", ref=ref, source=Source(path, 1), lines=located.lines
    )


# --- HelmRelease (Flux) and Application (Argo CD) ------------------------------


def _is_cilium_chart(name: Any) -> bool:
    """`cilium`, or a path/URL ending in `/cilium` (GitRepository charts, OCI URLs)."""
    if not isinstance(name, str):
        return False
    tail: str = name.strip().rstrip("/").rsplit("/", 1)[-1].split(":", 1)[0]
    return tail == CHART_NAME


def _release_chart(snapshot: Snapshot, release: K8sObject) -> tuple[bool, str | None]:
    """Whether a HelmRelease installs the cilium chart, and the chart version when exact."""
    chart_spec = as_mapping(as_mapping(release.spec.get("chart")).get("spec"))
    if chart_spec:
        return _is_cilium_chart(chart_spec.get("chart")), exact_release(chart_spec.get("version"))
    chart_ref = as_mapping(release.spec.get("chartRef"))
    if not chart_ref:
        return False, None
    name = as_str(chart_ref.get("name"))
    namespace = as_str(chart_ref.get("namespace")) or release.namespace
    if chart_ref.get("kind") == "OCIRepository":
        repository = snapshot.get(kinds.OCI_REPOSITORY, namespace, name)
        if repository is not None:
            ref = as_mapping(repository.spec.get("ref"))
            return _is_cilium_chart(repository.spec.get("url")), exact_release(ref.get("tag") or ref.get("semver"))
    # The referenced source is not in the input: go by its name (`chartRef: {name: cilium}`).
    return name == CHART_NAME, None


def _merge(
    target: dict[str, Any], layer: Any, label: str, provenance: dict[ValuesPath, str], prefix: ValuesPath = ()
) -> None:
    """Helm's merge: maps merge recursively, anything else replaces, null deletes.

    Walked with an explicit stack, not recursion: values nested as deep as
    libyaml allows (1,000 levels) must not exhaust Python's recursion limit.
    """
    stack: list[tuple[dict[str, Any], Any, ValuesPath]] = [(target, layer, prefix)]
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


def _parse_embedded_values(text: str) -> tuple[dict[str, Any] | None, str | None]:
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


def _set_parameter(
    target: dict[str, Any], name: str, value: Any, label: str, provenance: dict[ValuesPath, str]
) -> bool:
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


def _application_sources(app: K8sObject) -> list[tuple[str, dict[str, Any]]]:
    sources: list[tuple[str, dict[str, Any]]] = []
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
        values: dict[str, Any] = {}
        provenance: dict[ValuesPath, str] = {}
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
                chart_version=exact_release(source.get("targetRevision")),
                complete=complete,
            )
        )
    return found


def merged_release_values(snapshot: Snapshot, release: K8sObject) -> tuple[dict[str, Any], dict[ValuesPath, str],
                                                                            dict[str, ValuesFile], bool]:
    """A HelmRelease's values as helm-controller merges them, and whether the input holds all of them.

    `valuesFrom` entries in order, a later one overriding an earlier one, then
    `spec.values` on top (https://fluxcd.io/flux/components/helm/helmreleases/#values-overrides).
    An entry the input holds is a file the GitOps reader mapped to it
    (`Snapshot.values_files`); any other entry (a Secret, a ConfigMap kept
    elsewhere, a `targetPath` value) leaves the values incomplete. Returns
    (values, provenance label of each leaf, the files by label, complete).
    """
    if release.gk == kinds.ARGO_APPLICATION:
        return merged_application_values(snapshot, release)
    values: dict[str, Any] = {}
    provenance: dict[ValuesPath, str] = {}
    files: dict[str, ValuesFile] = {}
    read: set[int] = set()
    for layer in snapshot.values_files(release):
        if layer.target_path is not None or not isinstance(layer.values, dict):
            continue  # a single value at a path, or not Helm values: not read as values
        label = f"valuesFrom[{layer.index}]"
        _merge(values, layer.values, label, provenance)
        files[label] = layer
        read.add(layer.index)
    _merge(values, release.spec.get("values"), "spec.values", provenance)
    wanted = range(len(as_list(release.spec.get("valuesFrom"))))
    return values, provenance, files, all(index in read for index in wanted)


def merged_application_values(snapshot: Snapshot, app: K8sObject) -> tuple[dict[str, Any], dict[ValuesPath, str],
                                                                          dict[str, ValuesFile], bool]:
    """An Argo CD Application's values for its in-repo chart, as Argo CD renders it: the chart's values.yaml,
    `helm.valueFiles` in order, then `helm.values`, `helm.valuesObject`, `helm.parameters` of that source
    ("Order of precedence is parameters > valuesObject > values > valueFiles > helm repository values.yaml",
    https://argo-cd.readthedocs.io/en/release-3.4/user-guide/helm/). The files are those the GitOps reader
    found for it (`Snapshot.values_files`), of the first source they belong to. Returns (values, provenance
    label of each leaf, the files by label, complete: every string of values was read)."""
    values: dict[str, Any] = {}
    provenance: dict[ValuesPath, str] = {}
    files: dict[str, ValuesFile] = {}
    layers = snapshot.values_files(app)
    key = layers[0].source_key if layers else ("spec", "source")
    for layer in layers:
        if layer.source_key == key and isinstance(layer.values, dict):
            _merge(values, layer.values, layer.label, provenance)
            files[layer.label] = layer
    where = "".join(f"[{part}]" if isinstance(part, int) else (f".{part}" if i else part) for i, part in enumerate(key))
    source: Any = app.raw
    for part in key:
        source = (source[part] if isinstance(source, list) and isinstance(part, int) and 0 <= part < len(source)
                  else as_mapping(source).get(part) if isinstance(part, str) else None)
    helm = as_mapping(as_mapping(source).get("helm"))
    complete = True
    text = helm.get("values")
    if isinstance(text, str) and text.strip():
        parsed, _ = _parse_embedded_values(text)
        complete = parsed is not None
        _merge(values, parsed, f"{where}.helm.values", provenance)
    _merge(values, helm.get("valuesObject"), f"{where}.helm.valuesObject", provenance)
    for parameter in as_list(helm.get("parameters")):
        parameter = as_mapping(parameter)
        name = as_str(parameter.get("name"))
        complete = _set_parameter(values, name, parameter.get("value"), f"{where}.helm.parameters",
                                  provenance) and complete
    return values, provenance, files, complete


def release_values(snapshot: Snapshot, release: K8sObject, version: str | None) -> HelmValues:
    values, provenance, files, complete = merged_release_values(snapshot, release)
    return HelmValues(values=values, origin=describe_object(release), ref=release.ref, source=release.source,
                      provenance=provenance, default_label="spec.values", chart_version=version, complete=complete,
                      files=files)


def helm_sources(snapshot: Snapshot, notes: list[str] | None = None) -> list[HelmValues]:
    """Cilium Helm values held by HelmReleases and Applications, in input order."""
    notes = notes if notes is not None else []
    found: list[HelmValues] = []
    for release in snapshot.of_kind(kinds.HELM_RELEASE):
        is_cilium, version = _release_chart(snapshot, release)
        if is_cilium:
            found.append(release_values(snapshot, release, version))
    for app in snapshot.of_kind(kinds.ARGO_APPLICATION):
        found.extend(_application_values(app, notes))
    return found
