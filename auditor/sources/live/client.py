"""GET requests to the API server, with our retries and nothing else's.

Every request goes through `Client.get_json`: one GET, the body read whole and
parsed once with `json.loads` (the kubernetes client's typed models cost about
1.5x the raw JSON and are never built). Failures are retried a bounded number
of times with exponential backoff and jitter:

* 429 Too Many Requests (API Priority and Fairness): wait `Retry-After`
  seconds (capped), then retry;
* 500, 502, 503, 504 (503 also honours `Retry-After`);
* a dropped connection, a reset, a truncated body, a timeout.

urllib3's own retries are disabled on the configuration (`target._configure`),
so these are the only retries. Anything else (401, 403, 404, 410, TLS
verification) is not retried: the caller decides what it means.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

JSON = "application/json"
STATUS_PHRASES = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    406: "Not Acceptable", 410: "Gone", 429: "Too Many Requests", 500: "Internal Server Error",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds of the retry loop (docs/live.md, "Retries")."""

    max_retries: int = 4  # retries after the first attempt
    backoff_base: float = 0.25  # seconds before the first retry; doubles each time
    backoff_cap: float = 8.0
    retry_after_cap: float = 30.0  # a server asking for longer is waited for this long
    timeout: float | None = 30.0  # connect and read timeout of one attempt (--request-timeout)

    def backoff(self, attempt: int, rand: Callable[[], float]) -> float:
        """Delay before retry number `attempt` (1-based): exponential, capped, with jitter
        (uniform in [d/2, d]) so concurrent listers do not retry in lockstep."""
        delay = min(self.backoff_cap, self.backoff_base * (2 ** (attempt - 1)))
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
    """No HTTP answer: connection refused or dropped, timeout, TLS failure."""

    def __init__(self, path: str, detail: str, retryable: bool = True, attempts: int = 1) -> None:
        super().__init__(path, None, detail, attempts)
        self.retryable = retryable


@dataclass
class Answer:
    status: int
    headers: Any
    body: bytes


def _status_message(body: bytes) -> str:
    """The `message` of a Kubernetes Status body, else a short prefix of the body."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body[:200].decode("utf-8", "replace").strip()
        return text.splitlines()[0] if text else ""
    if isinstance(document, dict) and isinstance(document.get("message"), str):
        return document["message"][:500]
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
        return f"cannot connect ({reason})", True
    if isinstance(error, ux.ConnectTimeoutError):
        return "connect timed out", True
    if isinstance(error, ux.ReadTimeoutError):
        return "read timed out", True
    if isinstance(error, ux.SSLError):
        return f"TLS failure ({str(error).splitlines()[0][:200]})", False
    if isinstance(error, ux.ProtocolError):
        text = str(error)
        if "IncompleteRead" in text or "Connection broken" in text:
            return "connection dropped mid-answer", True
        return "connection dropped", True
    if isinstance(error, ux.HTTPError):
        return f"{type(error).__name__}: {str(error).splitlines()[0][:200]}", True
    if isinstance(error, OSError):
        return f"{type(error).__name__}: {error.strerror or error}", True
    return f"{type(error).__name__}", False


class Client:
    """GETs against one API server. Thread-safe; one per target."""

    def __init__(self, configuration: Any, policy: RetryPolicy = RetryPolicy(),
                 sleep: Callable[[float], None] = time.sleep, rand: Callable[[], float] = random.random) -> None:
        from kubernetes.client import ApiClient

        self.api = ApiClient(configuration)
        self.api.user_agent = getattr(configuration, "user_agent", None) or self.api.user_agent
        self.policy = policy
        self._sleep = sleep
        self._rand = rand
        self._lock = threading.Lock()
        self.requests_made = 0

    def close(self) -> None:
        try:
            self.api.rest_client.close()
        except Exception:  # closing must never mask the audit's outcome
            pass

    def _timeout(self) -> Any:
        if not self.policy.timeout:
            return None
        return (self.policy.timeout, self.policy.timeout)

    def _once(self, path: str, query: list[tuple[str, str]], accept: str) -> Answer:
        from kubernetes.client.exceptions import ApiException

        method, url, headers, _, _ = self.api.param_serialize(
            "GET", path, query_params=list(query), header_params={"Accept": accept}, auth_settings=["BearerToken"],
        )
        with self._lock:
            self.requests_made += 1
        response = None
        try:
            response = self.api.rest_client.request(method, url, headers=headers, _request_timeout=self._timeout())
            raw = response.response
            body = raw.data  # the whole body, or an error if the connection drops mid-way
            try:
                raw.release_conn()
            except Exception:
                pass
            return Answer(raw.status, raw.headers, body or b"")
        except ApiException as error:  # the REST layer wraps urllib3's SSLError as status 0
            raise TransportFailure(path, f"TLS failure ({str(error.reason).splitlines()[-1][:200]})", retryable=False) from None
        except Exception as error:
            if response is not None:
                try:
                    response.response.close()
                except Exception:
                    pass
            detail, retryable = _describe_transport(error)
            raise TransportFailure(path, detail, retryable) from None

    def get(self, path: str, query: list[tuple[str, str]] | None = None, accept: str = JSON) -> Answer:
        """One GET with bounded retries; raises `ApiFailure` unless the answer is 2xx."""
        query = query or []
        attempt = 0
        while True:
            attempt += 1
            try:
                answer = self._once(path, query, accept)
            except TransportFailure as failure:
                if not failure.retryable or attempt > self.policy.max_retries:
                    failure.attempts = attempt
                    raise
                self._sleep(self.policy.backoff(attempt, self._rand))
                continue
            if 200 <= answer.status < 300:
                return answer
            if answer.status in RETRIED_STATUSES and attempt <= self.policy.max_retries:
                wait = _retry_after(answer.headers) if answer.status in (429, 503) else None
                if wait is not None:
                    self._sleep(min(wait, self.policy.retry_after_cap))
                else:
                    self._sleep(self.policy.backoff(attempt, self._rand))
                continue
            raise ApiFailure(path, answer.status, _status_message(answer.body), attempt)

    def get_json(self, path: str, query: list[tuple[str, str]] | None = None,
                 accept: str = JSON) -> tuple[Any, Answer]:
        """`get`, parsed. A 2xx body that is not JSON counts as a truncated answer and is retried."""
        attempts = 0
        while True:
            attempts += 1
            answer = self.get(path, query, accept)
            try:
                return json.loads(answer.body), answer
            except (ValueError, UnicodeDecodeError):
                if attempts > self.policy.max_retries:
                    raise TransportFailure(path, "the answer is not valid JSON", attempts=attempts) from None
                self._sleep(self.policy.backoff(attempts, self._rand))
