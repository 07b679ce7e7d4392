"""GET requests to the API server, with our retries and bounds and nothing else's.

Every request goes through `Client.get_json`: one GET through the kubernetes
client's REST layer, whose answer is never preloaded (urllib3's
`preload_content=False`): the body is streamed here, counted as it arrives,
and parsed once with `json.loads` (the client's typed models cost about 1.5x
the raw JSON and are never built). Each attempt is bounded:

* in time: `timeout` (`--request-timeout`) is the most one attempt may take,
  from connecting to the last byte of the answer. urllib3's timeouts apply to
  each socket operation, so a server trickling a byte at a time would never
  trip them; a watchdog shuts the connection's socket down when the attempt's
  time is up, wherever it is blocked (connect, TLS, headers, body);
* in size: `max_response_bytes` (`--max-response-size`): a larger answer is
  refused from its `Content-Length`, or once that many bytes have arrived,
  without reading the rest;
* in shape: an answer nested deeper than `MAX_DEPTH` levels, or holding a
  lone UTF-16 surrogate (which is not text), is refused: nothing downstream
  has to cope with it.

Failures are retried a bounded number of times with exponential backoff and
jitter:

* 429 Too Many Requests (API Priority and Fairness): wait `Retry-After`
  seconds (capped), then retry;
* 500, 502, 503, 504 (503 also honours `Retry-After`);
* a dropped connection, a reset, a truncated body, a timeout.

urllib3's own retries are disabled on the configuration (`target._configure`),
so these are the only retries. Anything else (401, 403, 404, 410, TLS
verification, an answer too big or unusable) is not retried: the caller
decides what it means. Every server-written text quoted in a failure (a
`Status` message) is escaped and cut (`safe_text`).
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from auditor.sources.live.safe_text import clean, summary

JSON = "application/json"
STATUS_PHRASES = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    406: "Not Acceptable", 410: "Gone", 429: "Too Many Requests", 500: "Internal Server Error",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# Kubernetes objects nest a few dozen levels at most (a CRD's OpenAPI schema is
# among the deepest); past this an answer is refused rather than risking the
# recursion limits of whatever walks it later (rules, reports, the snapshot).
MAX_DEPTH = 100
_READ_CHUNK = 256 * 1024
# A lone surrogate can arrive as a JSON escape (`\ud800`) or as its UTF-8-like
# bytes (ED A0..BF xx), which `json.loads` decodes with "surrogatepass".
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# The bytes that are not brackets or quotes: what the depth pre-check deletes.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'{}[]"')
# ... and its first pass when the answer holds escapes: all but those, the backslashes, and every
# byte that can follow a backslash in a JSON escape (RFC 8259, section 7).
_NOT_STRUCTURE_OR_ESCAPE = bytes(b for b in range(256) if b not in b'{}[]"\\/bfnrtu')
_STRING = re.compile(rb'"[^"]*"')


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds of one request: retries (docs/live.md, "Retries"), time and size ("Limits")."""

    max_retries: int = 4  # retries after the first attempt
    backoff_base: float = 0.25  # seconds before the first retry; doubles each time
    backoff_cap: float = 8.0
    retry_after_cap: float = 30.0  # a server asking for longer is waited for this long
    timeout: float | None = 30.0  # the most one attempt may take, all of it (--request-timeout)
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES  # --max-response-size

    def backoff(self, attempt: int, rand: Callable[[], float]) -> float:
        """Delay before retry number `attempt` (1-based): exponential, capped, with jitter
        (uniform in [d/2, d]) so concurrent listers do not retry in lockstep."""
        delay = min(self.backoff_cap, self.backoff_base * 2.0 ** (attempt - 1))
        return delay / 2 + rand() * delay / 2


class ApiFailure(Exception):
    """A request that failed for good (after any retries)."""

    def __init__(self, path: str, status: int | None, detail: str, attempts: int = 1) -> None:
        super().__init__(detail)
        self.path = path
        self.status = status
        self.detail = detail
        self.attempts = attempts

    @property
    def status_text(self) -> str:
        if self.status is None:
            return "no answer"
        return f"HTTP {self.status} {STATUS_PHRASES.get(self.status, '')}".rstrip()

    def describe(self) -> str:
        tries = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.status_text}{tries}{detail}"


class TransportFailure(ApiFailure):
    """No (complete) HTTP answer: connection refused or dropped, timeout, TLS failure."""

    def __init__(self, path: str, detail: str, retryable: bool = True, attempts: int = 1) -> None:
        super().__init__(path, None, detail, attempts)
        self.retryable = retryable


class UnusableAnswer(ApiFailure):
    """A 2xx answer that cannot be used: too big, not JSON, too deep, not text, or not what was asked for."""

    def __init__(self, path: str, detail: str, attempts: int = 1) -> None:
        super().__init__(path, None, detail, attempts)

    @property
    def status_text(self) -> str:
        return "unusable answer"


@dataclass
class Answer:
    """An API server's answer: status, headers and the body's bytes."""

    status: int
    headers: Any
    body: bytes


def _status_message(body: bytes) -> str:
    """The `message` of a Kubernetes Status body, else the first line of the body; escaped."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return summary(body[:2000].decode("utf-8", "replace")) if body.strip() else ""
    if isinstance(document, dict) and isinstance(document.get("message"), str):
        return summary(document["message"], limit=500)
    return ""


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _describe_transport(error: BaseException) -> tuple[str, bool]:
    """A one-line reason for a transport error, and whether retrying may help."""
    import urllib3.exceptions as ux

    if isinstance(error, ux.NewConnectionError):
        reason = str(error).rsplit(":", 1)[-1].strip() or "cannot connect"
        return f"cannot connect ({clean(reason)})", True
    if isinstance(error, ux.ConnectTimeoutError):
        return "connect timed out", True
    if isinstance(error, ux.ReadTimeoutError):
        return "read timed out", True
    if isinstance(error, ux.SSLError):
        return f"TLS failure ({clean(str(error).splitlines()[0][:200])})", False
    if isinstance(error, ux.ProtocolError):
        text = str(error)
        if "IncompleteRead" in text or "Connection broken" in text:
            return "connection dropped mid-answer", True
        return "connection dropped", True
    if isinstance(error, ux.HTTPError):
        return f"{type(error).__name__}: {clean(str(error).splitlines()[0][:200])}", True
    if isinstance(error, OSError):
        return f"{type(error).__name__}: {clean(str(error.strerror or error))}", True
    return f"{type(error).__name__}", False


# --- the watchdog -------------------------------------------------------------------------


class _Deadline:
    """One attempt's time limit: when it passes, the attempt's socket is shut down,
    which wakes whatever read or write is blocked on it (connect, TLS, headers, body)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._connection: Any = None
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._started = 0.0

    def start(self) -> None:
        self._started = time.monotonic()
        self._timer.start()

    @property
    def passed(self) -> bool:
        """Whether the limit has passed, by the clock as well as by the timer: on a loaded machine the
        socket's own read timeout (the same number of seconds) can fire before the timer thread runs, and
        that failure is this limit too, not a different one."""
        return self.expired or time.monotonic() - self._started >= self.seconds

    def cancel(self) -> None:
        self._timer.cancel()

    def attach(self, connection: Any) -> None:
        with self._lock:
            self._connection = connection
            if self.expired:
                _shut_down(connection)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._connection is not None:
                _shut_down(self._connection)

    def expire(self) -> None:
        """End the attempt now (its client was closed), as if its time were up."""
        self._timer.cancel()
        self._expire()


def _shut_down(connection: Any) -> None:
    sock = getattr(connection, "sock", None)
    if sock is None:
        return
    with contextlib.suppress(OSError):
        # The plain socket's shutdown: safe from another thread, even under TLS.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


_current = threading.local()


def _attach(connection: Any) -> None:
    deadline = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.attach(connection)


def _notify_sent() -> None:
    """The running attempt's request is written: wake whoever waits for it (`Client.get`'s `sent`)."""
    sent = getattr(_current, "sent", None)
    if sent is not None:
        sent.set()


@dataclass(frozen=True)
class _PoolClasses:
    """The connection pool classes the client's pool manager is given (HTTP and HTTPS)."""

    http: type
    https: type


_pool_classes: _PoolClasses | None = None


def _watched_pool_classes() -> _PoolClasses:
    """urllib3 connection pools whose connections report to the running attempt's deadline."""
    global _pool_classes
    if _pool_classes is None:
        import urllib3.connection as uc
        import urllib3.connectionpool as up

        class WatchedHTTPConnection(uc.HTTPConnection):
            def connect(self) -> None:
                _attach(self)
                super().connect()

            def request(self, *args: Any, **kwargs: Any) -> None:
                _attach(self)
                super().request(*args, **kwargs)
                _notify_sent()

        class WatchedHTTPSConnection(uc.HTTPSConnection):
            def connect(self) -> None:
                _attach(self)
                super().connect()

            def request(self, *args: Any, **kwargs: Any) -> None:
                _attach(self)
                super().request(*args, **kwargs)
                _notify_sent()

        class WatchedHTTPConnectionPool(up.HTTPConnectionPool):
            ConnectionCls = WatchedHTTPConnection

        class WatchedHTTPSConnectionPool(up.HTTPSConnectionPool):
            ConnectionCls = WatchedHTTPSConnection

        _pool_classes = _PoolClasses(WatchedHTTPConnectionPool, WatchedHTTPSConnectionPool)
    return _pool_classes


# --- answers ---------------------------------------------------------------------------------


def _escapes_kept(body: bytes) -> bytes | None:
    """`body` without the bytes that are neither structure nor part of an escape (None: it has no escape).

    Every escape of valid JSON is a backslash and one of `"\\/bfnrtu` (`\\uXXXX` keeps its `u`),
    so each escape's two bytes stay side by side and its backslash begins it as in `body`:
    backslashes brought together by the deletion follow an even run (escaped backslashes, which
    pair up alike), never an odd one (whose escaped byte is kept between). Removing the `\\\\` and
    `\\"` pairs from this removes exactly those of `body`, over a fraction of its bytes
    (tests/test_live_depth_check.py).
    """
    return body.translate(None, _NOT_STRUCTURE_OR_ESCAPE) if b"\\" in body else None


def _maybe_deeper_than_half(body: bytes, limit: int, escapes: bytes | None = None) -> bool:
    """False when the (valid) JSON `body` surely nests at most `limit` levels, in C-speed passes.

    Escaped backslashes and quotes are removed (from `escapes`, `_escapes_kept(body)`, when
    given), then everything but brackets and quotes, then the strings (empty ones first, by a
    plain replace: two adjacent quotes are always an empty string or the end of one string and
    the start of the next, so removing them keeps every bracket inside or outside its string).
    What is left is the bracket structure alone. Each pass deleting the empty
    `{}` and `[]` pairs peels at least one and at most two levels, so a structure
    gone within `limit // 2` passes nests at most `limit` levels. Only what
    survives them (an answer more than `limit // 2` deep) pays for the exact walk.
    """
    if escapes is not None:
        body = escapes.replace(b"\\\\", b"").replace(b'\\"', b"")
    elif b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = body.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in structure:
        structure = _STRING.sub(b"", structure)
    for _ in range(limit // 2):
        if not structure:
            return False
        structure = structure.replace(b"{}", b"").replace(b"[]", b"")
    return bool(structure)


def _depth_problem(document: Any) -> str | None:
    """Why `document` is too deep to use, or None. Iterative: a hostile answer cannot exhaust the stack."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(value, dict):
            stack.extend((child, depth + 1) for child in value.values() if isinstance(child, (dict, list)))
        elif isinstance(value, list):
            stack.extend((child, depth + 1) for child in value if isinstance(child, (dict, list)))
    return None


def _surrogate_problem(document: Any) -> str | None:
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found = _SURROGATE.search(value)
            if found:
                return f"holds a lone UTF-16 surrogate (\\u{ord(found.group()):04x}), which is not text"
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def parse_answer(body: bytes, checked: bool = True) -> Any:
    """The JSON of a 2xx answer; `ValueError` when it is not JSON, `_Unusable` when it cannot be used.
    With `checked=False` the depth and text checks are left to the caller (`check_answer`)."""
    try:
        document = json.loads(body)
    except RecursionError:
        raise _Unusable(f"nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise _Unusable("not UTF-8 text") from None
    if checked:
        check_answer(body, document, "")
    return document


def check_answer(body: bytes, document: Any, path: str) -> None:
    """Refuse an answer nested deeper than `MAX_DEPTH` or holding a lone surrogate (`UnusableAnswer`)."""
    escapes = _escapes_kept(body)
    problem = _depth_problem(document) if _maybe_deeper_than_half(body, MAX_DEPTH, escapes) else None
    # Substring tests first (C speed; a `\\u` escape keeps its two bytes in `escapes`); the regex
    # and the walk only when one could be there.
    if problem is None and ((escapes is not None and b"\\u" in escapes) or b"\xed" in body) \
            and _MAYBE_SURROGATE.search(body):
        problem = _surrogate_problem(document)
    if problem is not None:
        raise _Unusable(problem) if not path else UnusableAnswer(path, problem)


class _Unusable(Exception):
    pass


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count // 1024} KiB"


class Client:
    """GETs against one API server. Thread-safe; one per target."""

    def __init__(self, configuration: Any, policy: RetryPolicy = RetryPolicy(),
                 sleep: Callable[[float], None] = time.sleep, rand: Callable[[], float] = random.random) -> None:
        from kubernetes.client import ApiClient

        self.api: Any = ApiClient(configuration)  # the client carries no annotations
        self.api.user_agent = getattr(configuration, "user_agent", None) or self.api.user_agent
        pools = _watched_pool_classes()
        manager = self.api.rest_client.pool_manager
        if set(getattr(manager, "pool_classes_by_scheme", {})) == {"http", "https"}:  # not a SOCKS proxy's
            manager.pool_classes_by_scheme = {"http": pools.http, "https": pools.https}
        self.policy = policy
        self._sleep = sleep
        self._rand = rand
        # Closed (`close`): no attempt starts, no backoff is waited out, and the attempts running are
        # cut short (their deadlines expired): a read that failed (a configuration error found while
        # its first lists were in flight, the cluster unreachable) does not wait for retries nobody reads.
        self._closed = threading.Event()
        self._running: set[_Deadline] = set()
        self._lock = threading.Lock()
        self.requests_made = 0

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            running = list(self._running)
        for deadline in running:
            deadline.expire()
        with contextlib.suppress(Exception):  # closing must never mask the audit's outcome
            self.api.rest_client.close()

    def _timeout(self) -> Any:
        if not self.policy.timeout:
            return None
        return (self.policy.timeout, self.policy.timeout)

    def _read_body(self, raw: Any, path: str) -> bytes:
        limit = self.policy.max_response_bytes
        declared = raw.headers.get("Content-Length") if raw.headers is not None else None
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise UnusableAnswer(path, f"{int(declared):,} bytes, over the {_size(limit)} limit "
                                       "(--max-response-size)")
        body = bytearray()
        while True:
            chunk = raw.read(_READ_CHUNK)
            if not chunk:
                return bytes(body)
            body += chunk
            if len(body) > limit:
                raise UnusableAnswer(path, f"over the {_size(limit)} limit (--max-response-size); "
                                           "the rest was not read")

    def _once(self, path: str, query: list[tuple[str, str]], accept: str,
              sent: threading.Event | None = None) -> Answer:
        from kubernetes.client.exceptions import ApiException

        method, url, headers, _, _ = self.api.param_serialize(
            "GET", path, query_params=list(query), header_params={"Accept": accept}, auth_settings=["BearerToken"],
        )
        if self._closed.is_set():
            raise TransportFailure(path, "not sent: the read was abandoned", retryable=False)
        with self._lock:
            self.requests_made += 1
        deadline = _Deadline(self.policy.timeout) if self.policy.timeout else None
        if deadline is not None:
            with self._lock:
                self._running.add(deadline)
        _current.deadline = deadline
        _current.sent = sent
        if deadline is not None:
            deadline.start()
        raw = None
        complete = False
        try:
            raw = self.api.rest_client.request(method, url, headers=headers,
                                               _request_timeout=self._timeout()).response
            body = self._read_body(raw, path)
            complete = True
            return Answer(raw.status, raw.headers, body)
        except UnusableAnswer:
            raise
        except ApiException as error:  # the REST layer wraps urllib3's SSLError as status 0
            if deadline is not None and deadline.passed:
                raise self._timed_out(path) from None
            raise TransportFailure(path, f"TLS failure ({clean(str(error.reason).splitlines()[-1][:200])})",
                                   retryable=False) from None
        except Exception as error:
            if deadline is not None and deadline.passed:
                raise self._timed_out(path) from None
            detail, retryable = _describe_transport(error)
            raise TransportFailure(path, detail, retryable) from None
        finally:
            _current.deadline = _current.sent = None
            if sent is not None:
                sent.set()  # not sent after all (it failed first): the waiter need not wait longer
            if deadline is not None:
                deadline.cancel()
                with self._lock:
                    self._running.discard(deadline)
            if raw is not None:
                self._finish(raw, complete)

    def _timed_out(self, path: str) -> TransportFailure:
        seconds = self.policy.timeout or 0
        return TransportFailure(path, f"no complete answer within {seconds:g}s (--request-timeout)")

    @staticmethod
    def _finish(raw: Any, complete: bool) -> None:
        """Give the connection back when the answer was read whole; else close it
        (a half-read answer leaves the connection unusable)."""
        try:
            if not complete:
                raw.close()
            raw.release_conn()
        except Exception:
            pass

    def _pause(self, seconds: float) -> None:
        """A backoff: the injected `sleep` (tests), else a wait that `close` cuts short."""
        if self._sleep is time.sleep:
            self._closed.wait(seconds)
        else:
            self._sleep(seconds)

    def get(self, path: str, query: list[tuple[str, str]] | None = None, accept: str = JSON,
            sent: threading.Event | None = None) -> Answer:
        """One GET with bounded retries; raises `ApiFailure` unless the answer is 2xx. `sent`, when
        given, is set once the first attempt's request is written (or has failed before it was)."""
        query = query or []
        attempt = 0
        while True:
            attempt += 1
            try:
                answer = self._once(path, query, accept, sent if attempt == 1 else None)
            except TransportFailure as failure:
                if not failure.retryable or attempt > self.policy.max_retries:
                    failure.attempts = attempt
                    raise
                self._pause(self.policy.backoff(attempt, self._rand))
                continue
            if 200 <= answer.status < 300:
                return answer
            if answer.status in RETRIED_STATUSES and attempt <= self.policy.max_retries:
                wait = _retry_after(answer.headers) if answer.status in (429, 503) else None
                if wait is not None:
                    self._pause(min(wait, self.policy.retry_after_cap))
                else:
                    self._pause(self.policy.backoff(attempt, self._rand))
                continue
            raise ApiFailure(path, answer.status, _status_message(answer.body), attempt)

    def get_json(self, path: str, query: list[tuple[str, str]] | None = None,
                 accept: str = JSON, checked: bool = True, first: Answer | None = None) -> tuple[Any, Answer]:
        """`get`, parsed. A 2xx body that is not JSON counts as a truncated answer and is retried;
        one that is JSON but unusable (too deep, not text) is not. `checked=False` leaves the
        depth and text checks to the caller (`check_answer`), to run them off the critical path.
        `first`: the answer of the first attempt, already fetched (`get`) by the caller."""
        attempts = 0
        while True:
            attempts += 1
            answer = first if first is not None and attempts == 1 else self.get(path, query, accept)
            try:
                return parse_answer(answer.body, checked), answer
            except _Unusable as problem:
                raise UnusableAnswer(path, str(problem), attempts) from None
            except ValueError:
                if attempts > self.policy.max_retries:
                    raise UnusableAnswer(path, "not valid JSON", attempts) from None
                self._pause(self.policy.backoff(attempts, self._rand))
