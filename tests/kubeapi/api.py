"""Request interpretation and answers, independent of HTTP plumbing.

`parse_request_info` mirrors kube-apiserver's RequestInfoFactory (so RBAC
sees the same verb/namespace/resource/name the real server would), `negotiate`
does the Accept-header content negotiation, and `ApiCore.serve` produces the
body for an authorized GET.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import discovery
from .discovery import ServerVersion
from .resources import ResourceRegistry, ResourceType
from .selectors import SelectorError, check_fields, parse_field_selector, parse_label_selector
from .status import ApiError, bad_request, not_acceptable, not_found_object, not_found_path
from .store import ObjectStore, partial_metadata, render_item
from .tables import INCLUDE_OBJECT_VALUES, to_table

# Subresources of a namespace that are not "a resource inside the namespace".
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


def encode(doc: object) -> bytes:
    # Compact JSON with a trailing newline, as the API server's encoder writes.
    return (json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


@dataclass(frozen=True)
class RequestInfo:
    path: str
    is_resource: bool
    verb: str = "get"
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    legacy: bool = False  # under /api rather than /apis

    @property
    def qualified_resource(self) -> str | None:
        if not self.is_resource:
            return None
        return self.resource if not self.group else f"{self.resource}.{self.group}"


def _first(query: Mapping[str, list[str]], key: str) -> str | None:
    vals = query.get(key)
    return vals[0] if vals else None


def parse_request_info(path: str, query: Mapping[str, list[str]]) -> RequestInfo:
    parts = [p for p in path.strip("/").split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(path, False)
    legacy = parts[0] == "api"
    if legacy:
        if len(parts) < 3:
            return RequestInfo(path, False)
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return RequestInfo(path, False)
        group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    verb = "get"
    if not name:
        watch = (_first(query, "watch") or "").lower() in ("true", "1")
        verb = "watch" if watch else "list"
        # A list restricted to one name is authorized as that name, which is
        # how a resourceNames rule can allow `list` with a field selector.
        fs = _first(query, "fieldSelector")
        if fs:
            try:
                for req in parse_field_selector(fs).requirements:
                    if req.field == "metadata.name" and not req.negate:
                        name = req.value
            except SelectorError:
                pass
    return RequestInfo(path, True, verb, group, version, namespace, resource, name, subresource,
                       legacy)


@dataclass(frozen=True)
class MediaChoice:
    form: str  # "json", "table", "partial", "discovery"
    version: str = ""


def _parse_accept(accept: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for item in accept.split(","):
        item = item.strip()
        if not item:
            continue
        base, *params = [p.strip() for p in item.split(";")]
        kv = {}
        for p in params:
            if "=" in p:
                k, v = p.split("=", 1)
                kv[k.strip()] = v.strip().strip('"')
        out.append((base.lower(), kv))
    return out


def negotiate(accept: str | None, target: str, aggregated_ok: bool = True) -> MediaChoice | None:
    """Pick the first acceptable form for `target` ("list", "get", "discovery",
    "other").  Unknown media types (protobuf, yaml, cbor) are skipped the way
    a client that also lists application/json expects."""
    if not accept:
        return MediaChoice("json")
    for base, p in _parse_accept(accept):
        if base not in ("application/json", "*/*", "application/*"):
            continue
        as_ = p.get("as", "")
        if not as_:
            return MediaChoice("json")
        g, v = p.get("g", ""), p.get("v", "")
        if target in ("list", "get") and g == "meta.k8s.io" and v in ("v1", "v1beta1"):
            if as_ == "Table":
                return MediaChoice("table", v)
            if (as_, target) in (("PartialObjectMetadataList", "list"),
                                 ("PartialObjectMetadata", "get")):
                return MediaChoice("partial", v)
        if (target == "discovery" and aggregated_ok and as_ == "APIGroupDiscoveryList"
                and g == "apidiscovery.k8s.io" and v in discovery.AGGREGATED_VERSIONS):
            return MediaChoice("discovery", v)
    return None


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def _json(doc: object, content_type: str = "application/json") -> Response:
    return Response(200, encode(doc), content_type)


class ApiCore:
    def __init__(self, registry: ResourceRegistry, store: ObjectStore, version: ServerVersion,
                 aggregated_discovery: bool, clock: Callable[[], datetime],
                 server_address: Callable[[], str]):
        self.registry = registry
        self.store = store
        self.version = version
        self.aggregated_discovery = aggregated_discovery
        self.clock = clock
        self.server_address = server_address

    # -- non-resource paths -------------------------------------------------
    def serve_non_resource(self, path: str, accept: str | None) -> Response:
        parts = [p for p in path.strip("/").split("/") if p]
        if parts == ["version"]:
            return _json(self.version.body())
        if parts and parts[0] in ("healthz", "livez", "readyz") and len(parts) == 1:
            return Response(200, b"ok", "text/plain; charset=utf-8")
        if parts and parts[0] in ("api", "apis") and len(parts) == 1:
            choice = negotiate(accept, "discovery", self.aggregated_discovery)
            if choice is not None and choice.form == "discovery":
                doc = discovery.aggregated(self.registry, parts[0] == "api", choice.version)
                return _json(doc, discovery.aggregated_content_type(choice.version))
            if parts[0] == "api":
                return _json(discovery.api_versions(self.server_address()))
            return _json(discovery.api_group_list(self.registry))
        if parts[:2] == ["api", "v1"] and len(parts) == 2:
            return _json(discovery.resource_list(self.registry, "", "v1"))
        if parts and parts[0] == "apis" and len(parts) == 2:
            group_doc = discovery.api_group(self.registry, parts[1])
            if group_doc is None:
                raise not_found_path()
            return _json(group_doc)
        if parts and parts[0] == "apis" and len(parts) == 3:
            if not self.registry.has_group_version(parts[1], parts[2]):
                raise not_found_path()
            return _json(discovery.resource_list(self.registry, parts[1], parts[2]))
        raise not_found_path()

    # -- resource paths -----------------------------------------------------
    def resolve(self, info: RequestInfo) -> ResourceType:
        rtype = self.registry.lookup(info.group, info.version, info.resource)
        if rtype is None or (info.legacy != (info.group == "")):
            raise not_found_path()
        # /api/v1/namespaces/NAME is the namespace itself; any other
        # cluster-scoped resource under a namespace does not exist.
        if info.namespace and not rtype.namespaced and not (
                rtype.plural == "namespaces" and info.name == info.namespace and info.verb == "get"):
            raise not_found_path()
        if info.subresource and info.subresource not in rtype.subresources:
            raise not_found_path()
        return rtype

    def serve_resource(self, info: RequestInfo, rtype: ResourceType,
                       query: Mapping[str, list[str]], accept: str | None) -> Response:
        namespace = info.namespace if rtype.namespaced else ""
        if info.verb == "get":
            if "get" not in rtype.verbs:
                raise ApiError(405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource", {})
            return self._get(rtype, info.version, namespace, info.name, accept)
        if info.verb == "watch":
            # Watches are GETs on a real server; this snapshot server has no
            # change stream, so it says so instead of hanging the client.
            raise ApiError(405, "MethodNotAllowed", "watch is not supported by this test server", {})
        if "list" not in rtype.verbs:
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource", {})
        # An empty namespace is the cluster-wide list (`/api/v1/services`).
        namespace_filter = (info.namespace or None) if rtype.namespaced else None
        return self._list(rtype, info.version, namespace_filter, query, accept)

    def _get(self, rtype: ResourceType, version: str, namespace: str, name: str,
             accept: str | None) -> Response:
        choice = negotiate(accept, "get")
        if choice is None:
            raise not_acceptable(accept or "")
        obj = self.store.get(rtype, namespace, name)
        if obj is None:
            raise not_found_object(rtype, name)
        rendered = render_item(rtype, version, obj, in_list=False)
        if choice.form == "partial":
            return _json(partial_metadata(rendered, f"meta.k8s.io/{choice.version}"))
        if choice.form == "table":
            return _json(to_table(rtype, version, [rendered], "Metadata", self.clock(),
                                  choice.version))
        return _json(rendered)

    def _list(self, rtype: ResourceType, version: str, namespace: str | None,
              query: Mapping[str, list[str]], accept: str | None) -> Response:
        choice = negotiate(accept, "list")
        if choice is None:
            raise not_acceptable(accept or "")
        label_text, field_text = _first(query, "labelSelector"), _first(query, "fieldSelector")
        try:
            labels = parse_label_selector(label_text) if label_text else None
            fields = parse_field_selector(field_text) if field_text else None
            if fields is not None:
                check_fields(fields, rtype.group, rtype.plural)
        except SelectorError as exc:
            raise bad_request(str(exc)) from None
        limit_text = _first(query, "limit") or "0"
        try:
            limit = int(limit_text)
        except ValueError:
            raise bad_request(f'strconv.ParseInt: parsing "{limit_text}": invalid syntax') from None
        include = _first(query, "includeObject") or "Metadata"
        if include not in INCLUDE_OBJECT_VALUES:
            raise bad_request(f"includeObject: Unsupported value: \"{include}\"")
        page = self.store.list(rtype, namespace, labels, fields, limit, _first(query, "continue"))
        list_meta: dict[str, Any] = {"resourceVersion": page.resource_version}
        if page.continue_token:
            list_meta["continue"] = page.continue_token
        if page.remaining is not None:
            list_meta["remainingItemCount"] = page.remaining
        if choice.form == "table":
            rendered = [render_item(rtype, version, o, in_list=False) for o in page.items]
            return _json(to_table(rtype, version, rendered, include, self.clock(),
                                  choice.version, list_meta))
        if choice.form == "partial":
            api_version = f"meta.k8s.io/{choice.version}"
            items = [partial_metadata(o, api_version) for o in page.items]
            return _json({"kind": "PartialObjectMetadataList", "apiVersion": api_version,
                          "metadata": list_meta, "items": items})
        items = [render_item(rtype, version, o, in_list=True) for o in page.items]
        return _json({"kind": rtype.list_kind, "apiVersion": rtype.api_version(version),
                      "metadata": list_meta, "items": items})
