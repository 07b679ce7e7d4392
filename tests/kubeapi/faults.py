"""Fault injection: a thread-safe plan of counted faults.

A `Fault` selects requests by resource (`"services"`,
`"ciliumloadbalancerippools.cilium.io"`), by a regular expression searched in
the URL path, by verb (`"list"`/`"get"`), by whether the request presents a
continue token (`continued`), or any combination; with no selector it
matches every request.  `times` is how many matching requests it
fires on (None = unlimited).  Kinds:

* `latency`   - sleep `latency` seconds, then answer normally (stacks with others);
* `gate`      - hold the request until `gate` (a threading.Event) is set, or
                `gate_timeout` passes, then answer normally: lets a test hold
                requests in flight deterministically (no sleeps);
* `throttle`  - 429 TooManyRequests with `Retry-After: retry_after`;
* `error`     - 500 InternalError;
* `drop`      - send the headers and part of the body, then close the socket;
* `expired`   - 410 Expired (the etcd "continue parameter is too old"
                answer); fires only on requests that present a continue token;

and the hostile answers of a broken server or proxy (all 200 unless said):

* `answer`    - this `body` instead of the real answer (a JSON document, or
                bytes sent as they are), with `status` and `content_type`;
* `rewrite`   - the real answer's JSON passed through `rewrite(document, n)`
                (n: how many times the fault fired before), e.g. a list whose
                `continue` never ends or repeats itself;
* `huge`      - a valid list of `huge_bytes` bytes (a `list_kind` of
                `api_version`), generated as it is sent, with a
                Content-Length or `chunked`;
* `trickle`   - the real answer, `trickle_bytes` at a time every
                `trickle_interval` seconds (the status line and headers too
                when `trickle_headers`), for at most `trickle_for` seconds,
                after which the connection is closed.

Every streaming fault stops as soon as the client goes away, so a client
that gives up ends it.

Latency and gate faults all apply; of the terminal faults the first matching one in
plan order fires.  Each firing is counted so tests can assert it happened.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .store import ContinueToken

KINDS = ("latency", "gate", "throttle", "error", "drop", "expired", "answer", "rewrite", "huge", "trickle")
_NON_TERMINAL = ("latency", "gate")


@dataclass
class Fault:
    kind: str
    resource: str | None = None
    path: str | None = None
    verb: str | None = None
    continued: bool | None = None  # only requests with (True) or without (False) a continue token
    times: int | None = 1
    latency: float = 0.05
    retry_after: int = 1
    message: str = "etcdserver: request timed out"
    drop_after_bytes: int | None = None  # default: half of the body
    gate: threading.Event | None = None
    gate_timeout: float = 10.0
    body: Any = None  # answer: a JSON document, or bytes
    status: int = 200
    content_type: str = "application/json"
    rewrite_with: Callable[[Any, int], Any] | None = None
    huge_bytes: int = 0
    list_kind: str = "ServiceList"
    api_version: str = "v1"
    chunked: bool = False
    trickle_bytes: int = 1
    trickle_interval: float = 0.1
    trickle_for: float = 20.0
    trickle_headers: bool = False
    fired: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {KINDS}")
        if self.kind == "gate" and self.gate is None:
            raise ValueError("a gate fault needs gate=threading.Event()")
        self._path_re = re.compile(self.path) if self.path else None

    # Convenience constructors read better in tests than kind strings.
    @classmethod
    def slow(cls, seconds: float = 0.05, **sel: Any) -> Fault:
        return cls("latency", latency=seconds, **sel)

    @classmethod
    def hold(cls, gate: threading.Event, timeout: float = 10.0, **sel: Any) -> Fault:
        return cls("gate", gate=gate, gate_timeout=timeout, **sel)

    @classmethod
    def throttle(cls, retry_after: int = 1, **sel: Any) -> Fault:
        return cls("throttle", retry_after=retry_after, **sel)

    @classmethod
    def error(cls, message: str = "etcdserver: request timed out", **sel: Any) -> Fault:
        return cls("error", message=message, **sel)

    @classmethod
    def drop(cls, after_bytes: int | None = None, **sel: Any) -> Fault:
        return cls("drop", drop_after_bytes=after_bytes, **sel)

    @classmethod
    def expired(cls, **sel: Any) -> Fault:
        return cls("expired", **sel)

    @classmethod
    def answer(cls, body: Any, status: int = 200, content_type: str = "application/json", **sel: Any) -> Fault:
        return cls("answer", body=body, status=status, content_type=content_type, **sel)

    @classmethod
    def rewrite(cls, rewrite: Callable[[Any, int], Any], **sel: Any) -> Fault:
        return cls("rewrite", rewrite_with=rewrite, **sel)

    @classmethod
    def endless_continue(cls, **sel: Any) -> Fault:
        """Every page says there is more, with a token never seen before (each a valid
        token that starts the list over, so the server keeps answering it)."""
        return cls.rewrite(lambda doc, n: _with_continue(doc, ContinueToken(1_000_000 + n, "").encode()), **sel)

    @classmethod
    def repeated_continue(cls, **sel: Any) -> Fault:
        """Every page says there is more, with the same token."""
        return cls.rewrite(lambda doc, n: _with_continue(doc, REPEATED_TOKEN), **sel)

    @classmethod
    def huge(cls, size: int, chunked: bool = False, list_kind: str = "ServiceList", api_version: str = "v1",
             **sel: Any) -> Fault:
        return cls("huge", huge_bytes=size, chunked=chunked, list_kind=list_kind, api_version=api_version, **sel)

    @classmethod
    def trickle(cls, every: float = 0.1, nbytes: int = 1, for_at_most: float = 20.0, headers: bool = False,
                **sel: Any) -> Fault:
        return cls("trickle", trickle_interval=every, trickle_bytes=nbytes, trickle_for=for_at_most,
                   trickle_headers=headers, **sel)

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.fired >= self.times

    def matches(self, path: str, resource: str | None, verb: str, has_continue: bool) -> bool:
        if self.resource is not None and self.resource != resource:
            return False
        if self._path_re is not None and not self._path_re.search(path):
            return False
        if self.verb is not None and self.verb != verb:
            return False
        if self.continued is not None and self.continued != has_continue:
            return False
        return not (self.kind == "expired" and not has_continue)


REPEATED_TOKEN = ContinueToken(1, "").encode()


def _with_continue(document: Any, token: str) -> Any:
    if isinstance(document, dict):
        metadata = dict(document.get("metadata") or {})
        metadata["continue"] = token
        metadata.pop("remainingItemCount", None)
        return {**document, "metadata": metadata}
    return document


# Faults that change the answer once it is computed (applied while sending it).
ANSWER_FAULTS = ("drop", "answer", "rewrite", "huge", "trickle")


@dataclass(frozen=True)
class FiredFaults:
    latency: float
    gates: tuple[tuple[threading.Event, float], ...]
    terminal: Fault | None
    names: tuple[str, ...]


class FaultPlan:
    def __init__(self, faults: Iterable[Fault] = ()):
        self._lock = threading.Lock()
        self._faults: list[Fault] = list(faults)

    def add(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def faults(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def pending(self) -> list[Fault]:
        """Faults that still have firings left."""
        with self._lock:
            return [f for f in self._faults if not f.exhausted]

    def take(self, path: str, resource: str | None, verb: str, has_continue: bool) -> FiredFaults:
        """Atomically pick (and count) the faults that fire for one request."""
        latency = 0.0
        gates: list[tuple[threading.Event, float]] = []
        terminal: Fault | None = None
        names: list[str] = []
        with self._lock:
            for f in self._faults:
                if f.exhausted or not f.matches(path, resource, verb, has_continue):
                    continue
                if f.kind in _NON_TERMINAL:
                    if f.kind == "latency":
                        latency += f.latency
                    else:
                        assert f.gate is not None
                        gates.append((f.gate, f.gate_timeout))
                elif terminal is not None:
                    continue
                else:
                    terminal = f
                f.fired += 1
                names.append(f.kind)
        return FiredFaults(latency, tuple(gates), terminal, tuple(names))
