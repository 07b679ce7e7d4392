"""`KubeApiServer`: a TLS, token-authenticated, read-only Kubernetes API
server over a snapshot, running in background threads.

    with KubeApiServer(snapshot, cluster_role=role) as srv:
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        ...  # run kubectl / the python client against it
        assert [r.path for r in srv.requests] == [...]
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import socketserver
import ssl
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import HTTPServer
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .api import ApiCore
from .discovery import ServerVersion
from .faults import Fault, FaultPlan
from .handler import KubeApiHandler
from .rbac import RbacPolicy
from .resources import BUILTIN_RESOURCES, ResourceRegistry, ResourceType, resource_type_from_crd
from .store import ObjectStore, normalize_snapshot
from .tls import KubeconfigContext, make_pki, write_kubeconfig

DEFAULT_USER = "system:serviceaccount:audit:auditor"
DEFAULT_TOKEN = "kubeapi-test-token"


@dataclass(frozen=True)
class User:
    """An authenticated identity.  `policy=None` means unrestricted (as if
    bound to cluster-admin)."""

    name: str
    token: str
    policy: RbacPolicy | None = None


@dataclass(frozen=True)
class RequestRecord:
    method: str
    path: str
    query: Mapping[str, tuple[str, ...]]
    status: int
    user_agent: str
    accept: str
    user: str | None  # None when authentication failed
    faults: tuple[str, ...] = ()  # kinds of the faults that fired on it
    at: float = 0.0  # time.monotonic() when it was answered (recorded just before the answer is sent)
    received: float = 0.0  # time.monotonic() when its request line and headers had been read

    def param(self, name: str) -> str | None:
        vals = self.query.get(name)
        return vals[0] if vals else None


class RequestLog:
    """Append-only, thread-safe record of every request answered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []

    def record(self, method: str, path: str, query: Mapping[str, list[str]], status: int,
               user_agent: str, accept: str, user: str | None, faults: tuple[str, ...],
               received: float = 0.0) -> None:
        rec = RequestRecord(method, path, MappingProxyType({k: tuple(v) for k, v in query.items()}),
                            status, user_agent, accept, user, faults, time.monotonic(), received)
        with self._lock:
            self._records.append(rec)

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()


class _ThreadingTLSServer(socketserver.ThreadingMixIn, HTTPServer):
    """Thread per connection, with every connection thread and socket tracked
    so `close()` can end keep-alive connections and join their threads."""

    daemon_threads = True
    block_on_close = False  # we join our own threads in close_connections()
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: KubeApiServer, ctx: ssl.SSLContext):
        self.app = app
        self._ssl_ctx = ctx
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._conn_threads: set[threading.Thread] = set()
        self._counter = itertools.count(1)
        super().__init__(address, KubeApiHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN (a DNS lookup that
        # can stall without a network); we do not need it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def get_request(self) -> tuple[socket.socket, object]:
        sock, addr = self.socket.accept()
        # Headers and body go out as separate writes; without NODELAY, Nagle
        # plus the client's delayed ACK adds ~40 ms to every response.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self._ssl_ctx.wrap_socket(sock, server_side=True,
                                         do_handshake_on_connect=False), addr

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        t = threading.Thread(target=self._serve_connection, args=(request, client_address),
                             name=f"kubeapi-conn-{self.server_port}-{next(self._counter)}",
                             daemon=True)
        with self._lock:
            self._conns.add(request)
            self._conn_threads.add(t)
        t.start()

    def _serve_connection(self, request: socket.socket, client_address: object) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self._lock:
                self._conns.discard(request)
                self._conn_threads.discard(threading.current_thread())

    def handle_error(self, request: object, client_address: object) -> None:
        self.app.record_error(traceback.format_exc())

    def close_connections(self, timeout: float) -> list[str]:
        """Shut every open connection down and join its thread; return the
        names of threads that did not finish (should be none)."""
        with self._lock:
            conns, threads = list(self._conns), list(self._conn_threads)
        for c in conns:
            # Plain TCP shutdown: wakes a thread blocked reading the next
            # keep-alive request without touching its TLS state.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(c, socket.SHUT_RDWR)
        for t in threads:
            t.join(timeout)
        return [t.name for t in threads if t.is_alive()]


def _established(crd: Mapping[str, Any]) -> bool:
    """A CRD is served once Established; a hand-written CRD without status
    counts as established, one whose Established condition is not True
    (e.g. a names conflict) does not."""
    for cond in (crd.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Established":
            return bool(cond.get("status") == "True")
    return True


def _crd_registrations(objects: Iterable[Mapping[str, Any]]) -> list[ResourceType]:
    out = []
    for obj in objects:
        if obj.get("kind") == "CustomResourceDefinition" and _established(obj) and \
                str(obj.get("apiVersion", "")).startswith("apiextensions.k8s.io/"):
            rtype = resource_type_from_crd(obj)
            if rtype is not None:
                out.append(rtype)
    return out


class KubeApiServer:
    """A read-only Kubernetes API server over `snapshot`.

    snapshot: object dicts as `kubectl get -o json` writes them (a `List`,
        a list of objects, or lists of both).  CRDs in it register their kinds.
    extra_crds: CRD manifests to register as well; they are also served as
        CustomResourceDefinition objects, exactly as if they were in the
        snapshot (a real cluster that serves a kind always has its CRD).
    extra_resources: further `ResourceType`s (e.g. an aggregated API) served
        without any CRD object.
    git_version: what /version reports.
    token / user / cluster_role / namespace_roles: the default identity, its
        bearer token, and its RBAC (None = unrestricted).  `cluster_role` is
        a ClusterRole manifest or a list of them, bound cluster-wide;
        `namespace_roles` maps a namespace to Role/ClusterRole manifests
        bound there by RoleBindings.
    users: further `User`s accepted alongside the default one.
    faults: initial `Fault`s; more can be added with `server.faults.add()`.
    aggregated_discovery: answer apidiscovery.k8s.io/v2 (and v2beta1) to
        clients that ask; False forces legacy discovery.
    clock: "now" for Table ages.
    """

    def __init__(self, snapshot: object = (), *, extra_crds: Sequence[Mapping[str, Any]] = (),
                 extra_resources: Sequence[ResourceType] = (), git_version: str = "v1.32.3",
                 token: str = DEFAULT_TOKEN, user: str = DEFAULT_USER,
                 cluster_role: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
                 namespace_roles: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                 users: Sequence[User] = (), faults: Iterable[Fault] = (),
                 aggregated_discovery: bool = True,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 host: str = "127.0.0.1"):
        objects = normalize_snapshot(snapshot) + normalize_snapshot(list(extra_crds))
        self.store = ObjectStore(objects)
        self.registry = ResourceRegistry(list(BUILTIN_RESOURCES) + _crd_registrations(objects)
                                         + list(extra_resources))
        for rtype in self.registry.types:
            self.store.validate_scopes(rtype)
        policy = None
        if cluster_role is not None or namespace_roles is not None:
            roles = [cluster_role] if isinstance(cluster_role, Mapping) else list(cluster_role or ())
            policy = RbacPolicy.from_roles(roles, namespace_roles)
        self.default_user = User(user, token, policy)
        self._users = {u.token: u for u in (self.default_user, *users)}
        if len(self._users) != 1 + len(users):
            raise ValueError("every user needs a distinct token")
        self.faults = FaultPlan(faults)
        self.log = RequestLog()
        self.errors: list[str] = []
        self._state_lock = threading.Lock()
        self._in_flight = 0
        self.peak_in_flight = 0  # most requests ever being handled at once
        self._host = host
        self.core = ApiCore(self.registry, self.store, ServerVersion(git_version),
                            aggregated_discovery, clock, lambda: f"{self._host}:{self.port}")
        self._httpd: _ThreadingTLSServer | None = None
        self._thread: threading.Thread | None = None
        self.pki = make_pki()

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> KubeApiServer:
        if self._httpd is not None:
            return self
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        # load_cert_chain only reads files; they are not needed afterwards.
        with tempfile.TemporaryDirectory(prefix="kubeapi-") as tmp:
            cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
            cert.write_bytes(self.pki.cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(self.pki.key_pem)
            ctx.load_cert_chain(cert, key)
        # No h2: Go clients then speak HTTP/1.1, which is all we implement.
        ctx.set_alpn_protocols(["http/1.1"])
        self._httpd = _ThreadingTLSServer((self._host, 0), self, ctx)
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name=f"kubeapi-serve-{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()  # stops accepting; returns once serve_forever exits
        stuck = httpd.close_connections(timeout)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout)
        if stuck:
            raise RuntimeError(f"kubeapi server threads did not stop: {stuck}")

    def __enter__(self) -> KubeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- addresses and credentials -----------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return self._httpd.server_port

    @property
    def url(self) -> str:
        return f"https://{self._host}:{self.port}"

    @property
    def ca_pem(self) -> bytes:
        return self.pki.ca_pem

    def user_for_token(self, token: str) -> User | None:
        return self._users.get(token) if token else None

    def context(self, name: str = "kubeapi-test", user: User | None = None,
                namespace: str | None = None) -> KubeconfigContext:
        u = user or self.default_user
        return KubeconfigContext(name=name, server=self.url, ca_pem=self.ca_pem, token=u.token,
                                 namespace=namespace, user_name=f"{name}-user")

    def write_kubeconfig(self, path: str | os.PathLike[str],
                         contexts: Sequence[KubeconfigContext] | None = None,
                         current_context: str | None = None,
                         namespace: str | None = None) -> Path:
        """Write a kubeconfig for this server: by default one context
        "kubeapi-test" for the default user; pass `contexts` (see `context()`)
        for several."""
        return write_kubeconfig(path, contexts or [self.context(namespace=namespace)],
                                current_context)

    # -- observation --------------------------------------------------------
    @property
    def requests(self) -> list[RequestRecord]:
        return self.log.snapshot()

    def clear_requests(self) -> None:
        self.log.clear()

    @property
    def in_flight(self) -> int:
        with self._state_lock:
            return self._in_flight

    def enter_request(self) -> None:
        with self._state_lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)

    def leave_request(self) -> None:
        with self._state_lock:
            self._in_flight -= 1

    def record_error(self, text: str) -> None:
        with self._state_lock:
            self.errors.append(text)
