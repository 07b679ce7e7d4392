"""HTTP plumbing: one handler per connection (HTTP/1.1 keep-alive over TLS).

Order of checks follows kube-apiserver's filter chain where it matters:
authentication (401) -> [read-only gate: non-GET is 405] -> fault injection
(APF sits here on a real server, so 429 precedes authorization) ->
authorization (403) -> routing (404) -> the answer.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import time
import traceback
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from . import status
from .api import RequestInfo, Response, encode, parse_request_info
from .faults import Fault
from .resources import ResourceType
from .store import ContinueToken

if TYPE_CHECKING:
    from .server import KubeApiServer, User

_MAX_DISCARD = 16 * 1024 * 1024


class KubeApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Go's transport expects
    timeout = 30  # idle keep-alive connections are closed after this

    _fired: tuple[str, ...] = ()
    _answer_fault: Fault | None = None

    @property
    def app(self) -> KubeApiServer:
        app: KubeApiServer = self.server.app  # type: ignore[attr-defined]
        return app

    def handle(self) -> None:
        # The TLS handshake runs here, in the connection's own thread, so a
        # slow or broken client can never stall the accept loop.
        try:
            self.connection.do_handshake()
        except (ssl.SSLError, OSError):
            return
        try:
            super().handle()
        except (ConnectionError, ssl.SSLError, TimeoutError):
            self.close_connection = True

    def version_string(self) -> str:
        return "kubeapi-test"

    def log_message(self, format: str, *args: object) -> None:
        pass  # the request log replaces stderr access logs

    # Every method funnels into one place; only GET/HEAD can succeed.
    def do_GET(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def _discard_body(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if length > _MAX_DISCARD:
            self.close_connection = True
        elif length > 0:
            self.rfile.read(length)

    def _authenticate(self) -> User:
        auth = self.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        user = self.app.user_for_token(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise status.unauthorized()
        return user

    def _authorize(self, user: User, info: RequestInfo) -> None:
        policy = user.policy
        if policy is None:
            return
        if not info.is_resource:
            if not policy.allows_path("get", info.path):
                raise status.forbidden_path(user.name, "get", info.path)
            return
        if not policy.allows_resource(info.verb, info.group, info.resource, info.subresource,
                                      info.namespace, info.name):
            rtype = self.app.registry.lookup(info.group, info.version, info.resource)
            if rtype is None:
                # Unknown resources are authorized (and denied) by name alone.
                rtype = ResourceType(info.group, (info.version,), info.resource, "", "", True)
            # The name is the request's (a list narrowed by a metadata.name
            # field selector has one too), exactly as the real message uses it.
            raise status.forbidden_resource(rtype, user.name, info.verb, info.subresource,
                                            info.namespace, info.name)

    def _apply_fault(self, info: RequestInfo, query: dict[str, Any]) -> None:
        """Sleep for latency faults and raise for 429/500/410; a drop is
        remembered on self and happens while sending the answer."""
        has_continue = bool(query.get("continue", [""])[0])
        fired = self.app.faults.take(info.path, info.qualified_resource, info.verb, has_continue)
        self._fired = fired.names
        if fired.latency:
            time.sleep(fired.latency)
        for gate, timeout in fired.gates:
            gate.wait(timeout)
        f = fired.terminal
        if f is None:
            return
        if f.kind == "throttle":
            raise status.too_many_requests(f.retry_after)
        if f.kind == "error":
            raise status.internal_error(f.message)
        if f.kind == "expired":
            old = ContinueToken.decode(query["continue"][0])
            raise status.expired_continue(ContinueToken(-1, old.start).encode())
        self._answer_fault = f  # drop, answer, rewrite, huge, trickle: applied to the answer

    def _handle(self) -> None:
        self.app.enter_request()
        try:
            self._handle_request()
        finally:
            self.app.leave_request()

    def _handle_request(self) -> None:
        received = time.monotonic()
        self._fired = ()
        self._answer_fault = None
        split = urlsplit(self.path)
        path = unquote(split.path) or "/"
        query = parse_qs(split.query, keep_blank_values=True)
        user_name: str | None = None
        if self.command not in ("GET", "HEAD"):
            # Consume the body whatever we answer, so the keep-alive
            # connection stays in sync for the client's next request.
            self._discard_body()
        try:
            user = self._authenticate()
            user_name = user.name
            if self.command not in ("GET", "HEAD"):
                raise status.method_not_allowed()
            info = parse_request_info(path, query)
            self._apply_fault(info, query)
            self._authorize(user, info)
            accept = self.headers.get("Accept")
            if info.is_resource:
                rtype = self.app.core.resolve(info)
                resp = self.app.core.serve_resource(info, rtype, query, accept)
            else:
                resp = self.app.core.serve_non_resource(path, accept)
        except status.ApiError as err:
            resp = Response(err.code, encode(err.body()), headers=err.headers)
        except Exception:  # a bug in the fake server must not look like a cluster answer
            self.app.record_error(traceback.format_exc())
            bug = status.internal_error("kubeapi test server bug; see server.errors")
            resp = Response(500, encode(bug.body()))
        fault = self._answer_fault
        if fault is not None and (fault.kind == "answer" or (fault.kind == "rewrite" and resp.status == 200)):
            resp = _changed_answer(resp, fault)
        # Record before answering: a client that has its answer must find
        # the request in the log (recording after would race with it).
        self.app.log.record(self.command, path, query, resp.status,
                            self.headers.get("User-Agent", ""), self.headers.get("Accept", ""),
                            user_name, self._fired, received)
        self._send(resp)

    def _headers(self, resp: Response, length: int | None) -> None:
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for k, v in resp.headers.items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")

    def _send(self, resp: Response) -> None:
        fault = self._answer_fault
        if fault is not None and fault.kind == "huge":
            self._send_huge(resp, fault)
            return
        self._headers(resp, len(resp.body))
        if fault is not None and fault.kind == "trickle":
            self._send_trickle(resp, fault)
            return
        self.end_headers()
        if self.command == "HEAD":
            return
        if fault is None or fault.kind != "drop":
            self.wfile.write(resp.body)
            return
        # Dropped mid-body: headers promise the full length, the peer gets a
        # prefix and then a TCP shutdown without TLS close_notify.
        cut = fault.drop_after_bytes
        cut = len(resp.body) // 2 if cut is None else min(cut, max(len(resp.body) - 1, 0))
        self.wfile.write(resp.body[:cut])
        self.wfile.flush()
        self._hang_up()

    def _hang_up(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.connection, socket.SHUT_RDWR)

    def _send_huge(self, resp: Response, fault: Fault) -> None:
        """A valid list of about `huge_bytes` bytes, generated while it is sent."""
        body = HugeList(fault.huge_bytes, fault.list_kind, fault.api_version)
        self._headers(Response(200, b""), None if fault.chunked else body.length)
        self.end_headers()
        for part in body.parts():
            if fault.chunked:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            else:
                self.wfile.write(part)
        if fault.chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _send_trickle(self, resp: Response, fault: Fault) -> None:
        """The answer (headers too, if asked) a few bytes at a time, for a bounded time."""
        head = b""
        if fault.trickle_headers:
            buffered: list[bytes] = getattr(self, "_headers_buffer", [])  # BaseHTTPRequestHandler's
            head = b"".join(buffered) + b"\r\n"
            buffered.clear()
        else:
            self.end_headers()
        data = head + resp.body
        stop = time.monotonic() + fault.trickle_for
        for start in range(0, len(data), max(1, fault.trickle_bytes)):
            if time.monotonic() > stop:
                self._hang_up()
                return
            self.wfile.write(data[start:start + fault.trickle_bytes])
            self.wfile.flush()
            time.sleep(fault.trickle_interval)


class HugeList:
    """`{"kind": LIST_KIND, ..., "items": [ ... ]}` of about `size` bytes, in parts."""

    PART_ITEMS = 256

    def __init__(self, size: int, list_kind: str, api_version: str) -> None:
        self.prefix = encode({"kind": list_kind, "apiVersion": api_version,
                              "metadata": {"resourceVersion": "1"}})[:-2] + b',"items":['
        self.suffix = b"]}\n"
        sample = self._item(0)
        self.count = max(1, (size - len(self.prefix) - len(self.suffix)) // (len(sample) + 1))
        self.length = len(self.prefix) + self.count * (len(sample) + 1) - 1 + len(self.suffix)

    @staticmethod
    def _item(index: int) -> bytes:
        return (b'{"metadata":{"name":"huge-%010d","namespace":"huge"},"spec":{"type":"ClusterIP",'
                b'"padding":"' % index + b"x" * 900 + b'"}}')

    def parts(self) -> Iterator[bytes]:
        yield self.prefix
        for first in range(0, self.count, self.PART_ITEMS):
            last = min(self.count, first + self.PART_ITEMS)
            yield b",".join(self._item(i) for i in range(first, last)) + (b"," if last < self.count else b"")
        yield self.suffix


def _changed_answer(resp: Response, fault: Fault) -> Response:
    if fault.kind == "answer":
        body = fault.body if isinstance(fault.body, bytes) else encode(fault.body)
        return Response(fault.status, body, fault.content_type)
    assert fault.rewrite_with is not None
    try:
        document = json.loads(resp.body)
    except ValueError:
        return resp
    return Response(resp.status, encode(fault.rewrite_with(document, fault.fired - 1)), resp.content_type,
                    resp.headers)
