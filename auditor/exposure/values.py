"""Services declared inside Helm values and operator resources: exposure before anything is rendered.

On real GitOps repositories most LoadBalancer exposure is written as chart
values, not as Service objects (notes/facts.md section 5.3: 44 of 60 hits in
HelmRelease values). This module finds, in the values of every Flux
HelmRelease and Argo CD Application, and in the spec of operator resources,
each mapping that asks for a Service of type LoadBalancer or NodePort:

- the generic `service.type` (k8s-gateway, factorio, ingress-nginx's
  `controller.service.type`, the cilium chart's `hubble.ui.service.type`);
- `service.<name>.type`, as the bjw-s app-template chart writes it (section
  5.1: the most common form), also under a wrapper chart's alias
  (`app-template.service.<name>.type`); `services.<name>.type`;
- operator fields whose key names a service (`primaryService.type`,
  `listenersServiceTemplate.spec.type`, `serviceTemplate.spec.type`,
  `http.service.spec.type`) and a `serviceType:` key; Strimzi listeners
  (`type: loadbalancer|nodeport`, lower case).

The rule is deliberately structural: a `type` of LoadBalancer or NodePort
(exact spelling, as the API requires) in a mapping whose key, or whose
parent's key, names a service. Walked iteratively (values nest as deep as the
YAML loader allows), never into lists of unrelated objects twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from auditor import kinds
from auditor.cilium.helm_values import line_of
from auditor.exposure.services import EXPOSING_TYPES, ServicePort
from auditor.model import K8sObject, Source, as_list, as_mapping, as_str
from auditor.snapshot import ValuesFile

Path = tuple[str | int, ...]

# API groups whose objects are not operator resources declaring Services: the built-in
# groups, Cilium, Gateway API, GitOps controllers (their values are read as values),
# Envoy Gateway (its EnvoyProxy is a controller's configuration: auditor/exposure/gateway.py).
_NOT_OPERATOR_GROUPS = frozenset({
    "", "apps", "batch", "policy", "autoscaling", "networking.k8s.io", "discovery.k8s.io", "storage.k8s.io",
    "rbac.authorization.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io", "scheduling.k8s.io",
    "coordination.k8s.io", "node.k8s.io", "certificates.k8s.io", "apiregistration.k8s.io", "events.k8s.io",
    "cilium.io", "gateway.networking.k8s.io", "gateway.envoyproxy.io", "kustomize.config.k8s.io",
    "helm.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "argoproj.io",
    "notification.toolkit.fluxcd.io", "image.toolkit.fluxcd.io", "fluxcd.controlplane.io", "monitoring.coreos.com",
    "cert-manager.io", "metallb.io",
})
_MAX_NODES = 200_000  # per object: values larger than this are not walked further (hostile input)
_STRIMZI_TYPES = {"loadbalancer": "LoadBalancer", "nodeport": "NodePort"}


@dataclass(frozen=True, slots=True)
class DeclaredService:
    """One Service the values (or an operator resource) ask for."""

    owner: K8sObject
    path: Path  # the `type` key, from the object's root (`spec`, `values`, `service`, `main`, `type`)
    where: str  # the path as a finding names it: `spec.values.service.main.type`
    type: str
    namespace: str | None  # where it renders
    release: str  # the Helm release (or the operator resource) name
    external_traffic_policy: str | None
    etp_path: Path | None
    ports: tuple[ServicePort, ...]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    load_balancer_class: str | None
    load_balancer_ip: str | None
    via: str  # `Helm values`, `Helm values (spec.source.helm.values string)`, `operator resource`
    # Where the `type` is written when it is not in the owner's own file: a Helm values file of the
    # input that a HelmRelease reads through `valuesFrom` (a kustomize configMapGenerator's file).
    values_source: Source | None = None


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _names_service(key: str | int) -> bool:
    return isinstance(key, str) and "service" in key.lower()


def _is_service_spec(path: Path, mapping: Mapping[str, Any], strimzi: bool) -> str | None:
    """The Service type this mapping asks for, or None."""
    kind = mapping.get("type")
    if strimzi and isinstance(kind, str) and len(path) >= 2 and path[-2] == "listeners":
        return _STRIMZI_TYPES.get(kind)
    if kind in EXPOSING_TYPES and any(_names_service(key) for key in path[-2:]):
        return str(kind)
    service_type = mapping.get("serviceType")
    if service_type in EXPOSING_TYPES:
        return str(service_type)
    return None


def _walk(root: Any, base: Path, strimzi: bool = False) -> Iterator[tuple[Path, dict[str, Any], str]]:
    """(path, mapping, type) of every service-declaring mapping below `root` (at `base`)."""
    stack: list[tuple[Path, Any]] = [(base, root)]
    seen = 0
    while stack and seen < _MAX_NODES:
        path, node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            if node.get("enabled") is False:
                continue  # app-template `enabled: false`, and charts following the convention
            kind = _is_service_spec(path, node, strimzi)
            if kind is not None:
                key = "type" if node.get("type") is not None and "serviceType" not in node else "serviceType"
                yield (*path, key), node, kind
            for key, value in reversed(list(node.items())):
                if isinstance(key, str) and isinstance(value, (dict, list)):
                    stack.append(((*path, key), value))
        elif isinstance(node, list):
            for index in range(len(node) - 1, -1, -1):
                if isinstance(node[index], (dict, list)):
                    stack.append(((*path, index), node[index]))


_ANY_EXPOSING = frozenset({*EXPOSING_TYPES, *_STRIMZI_TYPES})
# How a values file's text must spell a Service type that asks for one (Strimzi's lower case included).
EXPOSING_WORDS = tuple(sorted(_ANY_EXPOSING))


def declares_service(values: Any) -> bool:
    """Whether `values` may ask for a LoadBalancer or NodePort Service: a mapping with such a `type` or
    `serviceType` anywhere (what `_walk` then judges by its keys). A cheaper walk than `_walk`, which
    builds every node's path: most values files hold no such mapping at all."""
    stack: list[Any] = [values]
    seen = 0
    while stack and seen < _MAX_NODES:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            # (a `type: {...}` is no Service type, and no member of a set either: it is unhashable)
            kind, service_type = node.get("type"), node.get("serviceType")
            if (isinstance(kind, str) and kind in _ANY_EXPOSING) or (
                    isinstance(service_type, str) and service_type in _ANY_EXPOSING):
                return True
            stack += [value for value in node.values() if isinstance(value, (dict, list))]
        elif isinstance(node, list):
            stack += [item for item in node if isinstance(item, (dict, list))]
    return seen >= _MAX_NODES  # too large to tell: walked in full


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _port(name: str, entry: Mapping[str, Any]) -> ServicePort | None:
    number = _int(entry.get("port"))
    if number is None:
        return None
    protocol = as_str(entry.get("protocol"), "TCP").upper() or "TCP"
    if protocol in ("HTTP", "HTTPS"):  # app-template's protocol names render as TCP
        protocol = "TCP"
    target = entry.get("targetPort")
    return ServicePort(
        name=as_str(entry.get("name")) or name,
        port=number,
        protocol=protocol,
        target=target if isinstance(target, (int, str)) and not isinstance(target, bool) else None,
        node_port=_int(entry.get("nodePort")),
    )


def _ports(spec: Mapping[str, Any]) -> tuple[ServicePort, ...]:
    """`ports` as a list (Kubernetes), a mapping (app-template `ports.<name>.port`), or a lone `port`."""
    raw = spec.get("ports")
    found: list[ServicePort | None] = []
    if isinstance(raw, list):
        found = [_port("", as_mapping(entry)) for entry in raw]
    elif isinstance(raw, dict):
        found = [_port(name, as_mapping(entry)) for name, entry in raw.items() if as_mapping(entry).get("enabled")
                 is not False]
    elif _int(spec.get("port")) is not None:
        found = [_port("", spec)]
    return tuple(port for port in found if port is not None)


def _strings(value: Any) -> dict[str, str]:
    return {k: v for k, v in as_mapping(value).items() if isinstance(k, str) and isinstance(v, str)}


def _declared(owner: K8sObject, path: Path, spec: dict[str, Any], kind: str, *, namespace: str | None,
              release: str, via: str, parent: Mapping[str, Any] | None) -> DeclaredService:
    # Service metadata sits beside the type (`primaryService.metadata`) or, for a `serviceTemplate.spec`,
    # beside that spec (`serviceTemplate.metadata`).
    meta = as_mapping(spec.get("metadata"))
    if not meta and parent is not None and path[-2] == "spec":
        meta = as_mapping(parent.get("metadata"))
    etp = spec.get("externalTrafficPolicy")
    return DeclaredService(
        owner=owner, path=path, where=dotted(path), type=kind, namespace=namespace, release=release,
        external_traffic_policy=etp if isinstance(etp, str) else None,
        etp_path=(*path[:-1], "externalTrafficPolicy") if isinstance(etp, str) else None,
        ports=_ports(spec),
        labels=_strings(spec.get("labels")) or _strings(meta.get("labels")),
        annotations=_strings(spec.get("annotations")) or _strings(meta.get("annotations")),
        load_balancer_class=as_str(spec.get("loadBalancerClass")) or None,
        load_balancer_ip=as_str(spec.get("loadBalancerIP")) or None,
        via=via,
    )


def _collect(owner: K8sObject, root: Any, base: Path, *, namespace: str | None, release: str, via: str,
             strimzi: bool = False) -> list[DeclaredService]:
    if not declares_service(root):
        # What `_walk` yields is a mapping whose `type` or `serviceType` is one `declares_service` looks
        # for, so nothing: most values and operator specs ask for no Service, and this walk is cheaper.
        return []
    found = []
    for path, spec, kind in _walk(root, base, strimzi):
        parent = _lookup(root, base, path[:-2]) if len(path) >= 3 else None
        found.append(_declared(owner, path, spec, kind, namespace=namespace, release=release, via=via,
                               parent=parent if isinstance(parent, dict) else None))
    return found


def _lookup(root: Any, base: Path, path: Path) -> Any:
    node = root
    for part in path[len(base):]:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
    return node


def release_name(release: K8sObject) -> str:
    """A Flux HelmRelease's Helm release name: spec.releaseName, else `<targetNamespace>-<name>` when a
    target namespace is set, else its name (helm-controller HelmReleaseSpec.releaseName doc)."""
    explicit = as_str(release.spec.get("releaseName"))
    if explicit:
        return explicit
    target = as_str(release.spec.get("targetNamespace"))
    return f"{target}-{release.name}" if target else release.name


def release_namespace(release: K8sObject) -> str | None:
    return as_str(release.spec.get("targetNamespace")) or release.namespace


def helm_release_services(release: K8sObject, layers: ValuesLayers | None = None) -> list[DeclaredService]:
    """Services a HelmRelease's values ask for: `spec.values`, merged with its `valuesFrom` files of the
    input (`layers`) as helm-controller merges them, each pointing where it is written.

    The files are merged only when some layer asks for a Service at all: merging copies every value,
    and most releases declare none (the merged values would not either)."""
    values = release.spec.get("values")
    found = _collect(release, values, ("spec", "values"), namespace=release_namespace(release),
                     release=release_name(release), via="Helm values") if isinstance(values, dict) else []
    if layers is None or (not found and not any(declares_service(layer) for layer in layers[0])):
        return found
    merged, provenance, files = layers[1]()
    found = _collect(release, merged, ("spec", "values"), namespace=release_namespace(release),
                     release=release_name(release), via="Helm values")
    return [_in_values_file(declared, provenance, files) for declared in found]


# (values, provenance label of each leaf, the values files by label): auditor.cilium.helm_values.
ReleaseValues = tuple[dict[str, Any], Mapping[tuple[str, ...], str], Mapping[str, ValuesFile]]
# A release's valuesFrom files (their values, in order) and how to merge them with spec.values.
ValuesLayers = tuple[tuple[Any, ...], Callable[[], ReleaseValues]]


def _in_values_file(declared: DeclaredService, provenance: Mapping[tuple[str, ...], str],
                    files: Mapping[str, ValuesFile]) -> DeclaredService:
    """`declared`, pointing at the values file its `type` comes from (unchanged when from spec.values)."""
    inside = tuple(str(part) for part in declared.path[2:])  # the path below `spec.values`
    label = None
    for depth in range(len(inside), 0, -1):  # the deepest written parent: lists are replaced whole
        label = provenance.get(inside[:depth])
        if label is not None:
            break
    layer = files.get(label) if label is not None else None
    if layer is None:
        return declared
    line = line_of(layer.lines, inside) or layer.source.line
    where = f"{dotted(declared.path[2:])} in {layer.source.path} ({label} of the HelmRelease)"
    return replace(declared, where=where, values_source=Source(layer.source.path, line),
                   via=f"Helm values ({layer.origin})")


def application_services(app: K8sObject, parse: Any, layers: ValuesLayers | None = None) -> list[DeclaredService]:
    """Services in an Argo CD Application's `helm.valuesObject` and `helm.values` (a YAML string,
    parsed with `parse(text) -> mapping | None`), merged with the values files of its in-repo chart
    (`layers`: the chart's values.yaml and `helm.valueFiles`) as Argo CD merges them, each pointing
    where it is written. As for HelmReleases, the files are merged only when something asks for a Service."""
    found: list[DeclaredService] = []
    namespace = as_str(as_mapping(app.spec.get("destination")).get("namespace")) or app.namespace
    sources: list[tuple[Path, Any]] = [(("spec", "source"), app.spec.get("source"))]
    sources += [(("spec", "sources", index), source) for index, source in enumerate(as_list(app.spec.get("sources")))]
    for base, source in sources:
        helm = as_mapping(as_mapping(source).get("helm"))
        if not helm:
            continue
        release = as_str(helm.get("releaseName")) or app.name
        values_object = helm.get("valuesObject")
        if isinstance(values_object, dict):
            found += _collect(app, values_object, (*base, "helm", "valuesObject"), namespace=namespace,
                              release=release, via="Helm values")
        text = helm.get("values")
        parsed = parse(text) if isinstance(text, str) and text.strip() else None
        if isinstance(parsed, dict):
            # Paths inside the string are reported after the key that holds it.
            found += _collect(app, parsed, (*base, "helm", "values"), namespace=namespace, release=release,
                              via="Helm values (a YAML string)")
    if layers is None or (not found and not any(declares_service(layer) for layer in layers[0])):
        return found
    chart = _chart_services(app, namespace, layers)
    # The chart's source is read merged; the others (other charts, rendered elsewhere) as before.
    return [d for d in found if d.path[:len(chart.key)] != chart.key] + chart.found


@dataclass(frozen=True, slots=True)
class _ChartServices:
    """The Services an Argo CD Application's in-repo chart values ask for, and the source they are rendered from."""

    key: Path  # the source the chart is rendered from (`spec.source`, `spec.sources[N]`)
    found: list[DeclaredService]


def _chart_services(app: K8sObject, namespace: str | None, layers: ValuesLayers) -> _ChartServices:
    """Services the merged values of an Application's in-repo chart ask for, each where its `type` is written:
    a values file (the key path as written there: `app-template.service.wireguard.type`), or the
    Application's own `helm` section."""
    merged, provenance, files = layers[1]()
    key: Path = next(iter(files.values())).source_key if files else ("spec", "source")
    helm = as_mapping(_lookup(app.raw, (), key)).get("helm")
    release = as_str(as_mapping(helm).get("releaseName")) or app.name
    base: Path = (*key, "helm", "values")
    found = []
    for declared in _collect(app, merged, base, namespace=namespace, release=release, via="Helm values"):
        inside = tuple(str(part) for part in declared.path[len(base):])
        label = next((provenance[inside[:depth]] for depth in range(len(inside), 0, -1)
                      if inside[:depth] in provenance), None)
        layer = files.get(label) if label is not None else None
        if layer is not None:
            line = line_of(layer.lines, inside) or layer.source.line
            declared = replace(declared, path=declared.path[len(base):], where=(
                f"{dotted(declared.path[len(base):])} in {layer.source.path} ({layer.origin})"),
                values_source=Source(layer.source.path, line),
                via=f"Helm values ({layer.label} of the Application's chart)")
        elif label is not None and label.endswith(".helm.valuesObject"):
            path = (*key, "helm", "valuesObject", *declared.path[len(base):])
            declared = replace(declared, path=path, where=dotted(path))
        elif label is not None and label.endswith(".helm.parameters"):
            declared = replace(declared, path=(*key, "helm", "parameters"),
                               where=f"{label} {dotted(declared.path[len(base):])}", via="Helm values (a parameter)")
        else:
            declared = replace(declared, via="Helm values (a YAML string)")
        found.append(declared)
    return _ChartServices(key, found)


def operator_services(obj: K8sObject) -> list[DeclaredService]:
    """Services an operator resource asks for in its spec (MariaDB, EMQX, CloudNativePG, ECK, Strimzi...)."""
    if obj.group in _NOT_OPERATOR_GROUPS or not isinstance(obj.raw.get("spec"), dict):
        return []
    return _collect(obj, obj.spec, ("spec",), namespace=obj.namespace, release=obj.name,
                    via=f"{obj.kind} resource", strimzi=obj.kind == "Kafka")


def declared_services(objects: list[K8sObject], parse: Any,
                      values_of: Callable[[K8sObject], ValuesLayers | None] | None = None) -> list[DeclaredService]:
    """Every Service declared in values or operator resources among `objects`, in input order.

    `values_of(owner)` gives a HelmRelease's `valuesFrom` files, or an Argo CD Application's in-repo
    chart values files, when the input holds some (None: the values in the object alone)."""
    found: list[DeclaredService] = []
    for obj in objects:
        if obj.gk == kinds.HELM_RELEASE:
            found += helm_release_services(obj, values_of(obj) if values_of is not None else None)
        elif obj.gk == kinds.ARGO_APPLICATION:
            found += application_services(obj, parse, values_of(obj) if values_of is not None else None)
        else:
            found += operator_services(obj)
    return found
