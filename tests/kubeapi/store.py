"""The snapshot as an immutable object store: lookup, selectors, paging.

Objects are kept per (group, kind), sorted by (namespace, name) - the order
etcd's key space gives a real server - and never mutated after load.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .resources import ResourceType
from .selectors import FieldSelector, LabelSelector
from .status import bad_request


def split_api_version(api_version: str) -> tuple[str, str]:
    """"apps/v1" -> ("apps", "v1"); "v1" -> ("", "v1")."""
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


def normalize_snapshot(snapshot: object) -> list[dict[str, Any]]:
    """Accept what `kubectl get -o json` writes (a `List` with `items`), a
    plain list of object dicts, or a list mixing both; return deep copies."""
    if isinstance(snapshot, Mapping):
        if "items" in snapshot and str(snapshot.get("kind", "List")).endswith("List"):
            return normalize_snapshot(snapshot["items"])
        return [copy.deepcopy(dict(snapshot))]
    out: list[dict[str, Any]] = []
    for obj in snapshot or ():  # type: ignore[attr-defined]  # any iterable of objects
        out.extend(normalize_snapshot(obj))
    return out


@dataclass(frozen=True)
class ContinueToken:
    """The decoded form of our opaque continue token.  Shaped like the real
    etcd3 token (`{"v":"meta.k8s.io/v1","rv":N,"start":"key\\x00"}`, base64)
    so code that treats it as opaque sees a realistic value; `rv == -1` is the
    token a 410 hands out to continue at the latest revision."""

    rv: int
    start: str  # "namespace/name" (or "name") of the last item served

    def encode(self) -> str:
        raw = json.dumps({"v": "meta.k8s.io/v1", "rv": self.rv, "start": self.start + "\x00"},
                         separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> ContinueToken:
        try:
            padded = token + "=" * (-len(token) % 4)
            data = json.loads(base64.urlsafe_b64decode(padded.encode()))
            if data.get("v") != "meta.k8s.io/v1":
                raise ValueError(f"incorrect encoded start resourceVersion (version {data.get('v')})")
            rv, start = int(data["rv"]), str(data["start"])
        except (ValueError, KeyError, TypeError) as exc:
            raise bad_request(f"continue key is not valid: {exc}") from None
        if not start.endswith("\x00"):
            raise bad_request("continue key is not valid: start key is malformed")
        return cls(rv=rv, start=start[:-1])


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _key_str(key: tuple[str, str]) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


def _key_from_str(text: str) -> tuple[str, str]:
    if "/" in text:
        ns, name = text.split("/", 1)
        return ns, name
    return "", text


@dataclass(frozen=True)
class ListPage:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str | None
    remaining: int | None


class ObjectStore:
    def __init__(self, objects: Iterable[Mapping[str, Any]]):
        self._by_gk: dict[tuple[str, str], list[dict[str, Any]]] = {}
        max_rv = 0
        for obj in objects:
            api_version, kind = obj.get("apiVersion"), obj.get("kind")
            if not api_version or not kind:
                raise ValueError(f"snapshot object without apiVersion/kind: {_key(obj)}")
            group, _ = split_api_version(api_version)
            self._by_gk.setdefault((group, kind), []).append(dict(obj))
            rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
            if rv.isdigit():
                max_rv = max(max_rv, int(rv))
        for gk, objs in self._by_gk.items():
            objs.sort(key=_key)
            keys = [_key(o) for o in objs]
            dupes = {k for k in keys if keys.count(k) > 1}
            if dupes:
                raise ValueError(f"duplicate {gk[1]} objects in snapshot: {sorted(dupes)}")
        # A list's resourceVersion is the store's revision, which is at least
        # the newest object's resourceVersion.
        self.resource_version = str(max_rv + 1 if max_rv else 1)

    def objects_of(self, group: str, kind: str) -> list[dict[str, Any]]:
        return self._by_gk.get((group, kind), [])

    def kinds(self) -> list[tuple[str, str]]:
        return sorted(self._by_gk)

    def validate_scopes(self, rtype: ResourceType) -> None:
        """A namespaced object without a namespace (or a cluster-scoped one
        with one) is a broken snapshot; fail loudly rather than serve it."""
        for obj in self.objects_of(rtype.group, rtype.kind):
            ns, name = _key(obj)
            if rtype.namespaced and not ns:
                raise ValueError(f"{rtype.kind} {name!r} is namespaced but has no metadata.namespace")
            if not rtype.namespaced and ns:
                raise ValueError(f"{rtype.kind} {name!r} is cluster-scoped but has namespace {ns!r}")

    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        for obj in self.objects_of(rtype.group, rtype.kind):
            if _key(obj) == (namespace, name):
                return obj
        return None

    def list(self, rtype: ResourceType, namespace: str | None, labels: LabelSelector | None,
             fields: FieldSelector | None, limit: int, continue_token: str | None) -> ListPage:
        """One page of a list.  `limit <= 0` means no limit.  Paging is over
        the filtered sequence, so a page is never short while more matches
        exist (the real server may return short pages; clients must follow
        `continue` regardless, which they do)."""
        start_after: tuple[str, str] | None = None
        if continue_token:
            start_after = _key_from_str(ContinueToken.decode(continue_token).start)
        matched: list[dict[str, Any]] = []
        for obj in self.objects_of(rtype.group, rtype.kind):
            key = _key(obj)
            if namespace is not None and key[0] != namespace:
                continue
            if start_after is not None and key <= start_after:
                continue
            if labels is not None and not labels.matches((obj.get("metadata") or {}).get("labels")):
                continue
            if fields is not None and not fields.matches(obj):
                continue
            matched.append(obj)
        token = None
        remaining = None
        if limit > 0 and len(matched) > limit:
            rest = len(matched) - limit
            matched = matched[:limit]
            token = ContinueToken(int(self.resource_version), _key_str(_key(matched[-1]))).encode()
            # Like the real server, only count what is left when no selector
            # filtered the list (it cannot know the filtered remainder cheaply).
            if labels is None and fields is None:
                remaining = rest
        return ListPage(matched, self.resource_version, token, remaining)


def render_item(rtype: ResourceType, version: str, obj: Mapping[str, Any], in_list: bool) -> dict[str, Any]:
    """The object as the server encodes it at `version`.

    Built-in lists are typed on the real server, and the JSON encoder leaves
    each item's empty TypeMeta out: items of `/api/v1/services` carry no
    kind/apiVersion (kubectl fills them in on its side).  Custom resources are
    unstructured and keep kind/apiVersion in every item.  A CRD served at
    several versions with the `None` conversion strategy answers every object
    at the requested version by rewriting only `apiVersion`.
    """
    out = copy.deepcopy(dict(obj))
    if in_list and not rtype.from_crd:
        out.pop("kind", None)
        out.pop("apiVersion", None)
        return out
    rebuilt = {"apiVersion": rtype.api_version(version), "kind": rtype.kind}
    rebuilt.update((k, v) for k, v in out.items() if k not in ("apiVersion", "kind"))
    return rebuilt


def partial_metadata(obj: Mapping[str, Any], api_version: str = "meta.k8s.io/v1") -> dict[str, Any]:
    """`PartialObjectMetadata`: the object's metadata and nothing else - the
    way to read Secrets without ever receiving their payload."""
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version,
            "metadata": copy.deepcopy(dict(obj.get("metadata") or {}))}

