"""The L2 announcement lease timings as Cilium's agent applies them (pure functions, in nanoseconds).

Cilium runs one client-go leader election per announced Service with the
agent's three lease settings. client-go refuses timings that break its
invariants (`NewLeaderElector`, in this order: lease duration > renew deadline,
renew deadline > JitterFactor (1.2) x retry period, each at least 1ns;
`RunOrDie` panics on a refused configuration). Cilium never hands it bad
values as configured: `leaseTimings()` in pkg/l2announcer/l2announcer.go logs
a warning and rewrites them first, in this order (read at cilium/cilium
21d690e1 and 00cfe9e8):

1. lease duration < 1s          -> 1s
2. renew deadline < 1ns         -> 1s
3. retry period < 1ns           -> 200ms
4. lease duration <= renew      -> renew := lease / 2   ("a 2/1 ratio")
5. renew <= 1.2 x retry period  -> retry := renew / 2

`effective_timings` replays exactly that, on Go's integer nanoseconds
(`time.Duration(1.2 * float64(retry))` truncates towards zero, `/ 2` is
integer division), so the values a finding quotes are the ones the agent uses.
"""

from __future__ import annotations

from dataclasses import dataclass

NS_PER_SECOND = 1_000_000_000
NS_PER_MILLISECOND = 1_000_000
# client-go tools/leaderelection JitterFactor.
JITTER_FACTOR = 1.2

# Agent flag defaults (l2-announcements-lease-duration / -renew-deadline / -retry-period).
DEFAULT_LEASE_NS = 15 * NS_PER_SECOND
DEFAULT_RENEW_NS = 5 * NS_PER_SECOND
DEFAULT_RETRY_NS = 2 * NS_PER_SECOND

_MIN_LEASE_NS = NS_PER_SECOND
_RENEW_FALLBACK_NS = NS_PER_SECOND
_RETRY_FALLBACK_NS = 200 * NS_PER_MILLISECOND


@dataclass(frozen=True)
class LeaseTimings:
    """The three lease settings, in nanoseconds (Go time.Duration)."""

    lease: int
    renew: int
    retry: int


@dataclass(frozen=True)
class Correction:
    """One rewrite `leaseTimings()` makes: which setting, why, and the value used instead."""

    field: str  # "lease", "renew" or "retry"
    why: str
    used_ns: int


def jittered(retry_ns: int) -> int:
    """`time.Duration(JitterFactor * float64(retry))`: the product truncated towards zero."""
    return int(JITTER_FACTOR * float(retry_ns))


def effective_timings(configured: LeaseTimings) -> tuple[LeaseTimings, list[Correction]]:
    """The timings Cilium's `leaseTimings()` passes to client-go, and each rewrite it made on the way."""
    lease, renew, retry = configured.lease, configured.renew, configured.retry
    corrections: list[Correction] = []
    if lease < _MIN_LEASE_NS:
        corrections.append(Correction("lease", f"lease duration {go_duration(lease)} is below 1s", _MIN_LEASE_NS))
        lease = _MIN_LEASE_NS
    if renew < 1:
        why = f"renew deadline {go_duration(renew)} is not positive"
        corrections.append(Correction("renew", why, _RENEW_FALLBACK_NS))
        renew = _RENEW_FALLBACK_NS
    if retry < 1:
        why = f"retry period {go_duration(retry)} is not positive"
        corrections.append(Correction("retry", why, _RETRY_FALLBACK_NS))
        retry = _RETRY_FALLBACK_NS
    if lease <= renew:
        why = f"lease duration {go_duration(lease)} is not greater than the renew deadline {go_duration(renew)}"
        renew = lease // 2
        corrections.append(Correction("renew", why, renew))
    if renew <= jittered(retry):
        why = (f"renew deadline {go_duration(renew)} is not greater than {JITTER_FACTOR:g} x the retry period "
               f"{go_duration(retry)} ({go_duration(jittered(retry))})")
        retry = renew // 2
        corrections.append(Correction("retry", why, retry))
    return LeaseTimings(lease, renew, retry), corrections


def client_go_refusal(timings: LeaseTimings) -> str | None:
    """Why client-go's `NewLeaderElector` refuses these timings (its checks, in its order), or None."""
    if timings.lease <= timings.renew:
        return "leaseDuration must be greater than renewDeadline"
    if timings.renew <= jittered(timings.retry):
        return "renewDeadline must be greater than retryPeriod*JitterFactor"
    for name, value in (("leaseDuration", timings.lease), ("renewDeadline", timings.renew),
                        ("retryPeriod", timings.retry)):
        if value < 1:
            return f"{name} must be greater than zero"
    return None


def lease_record_seconds(lease_ns: int) -> int:
    """The Lease object's `leaseDurationSeconds`: client-go stores `int(LeaseDuration / time.Second)`,
    and a candidate takes over only once the record has not changed for that many whole seconds."""
    return lease_ns // NS_PER_SECOND


def failover_window_ns(timings: LeaseTimings) -> tuple[int, int]:
    """(shortest, longest) failover: lease - renew deadline and lease + renew deadline (Cilium's L2
    announcements guide, "Leases"), with the lease as the whole seconds the Lease object records."""
    lease = lease_record_seconds(timings.lease) * NS_PER_SECOND
    return max(0, lease - timings.renew), lease + timings.renew


def go_duration(ns: int) -> str:
    """A duration the way Go's time.Duration.String() writes it: `15s`, `7.5s`, `500ms`, `1m30s`, `-2s`."""
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < NS_PER_SECOND:
        for unit, size in (("ms", NS_PER_MILLISECOND), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return f"{sign}{_decimal(ns, size)}{unit}"
    hours, rest = divmod(ns, 3600 * NS_PER_SECOND)
    minutes, rest = divmod(rest, 60 * NS_PER_SECOND)
    seconds = f"{_decimal(rest, NS_PER_SECOND)}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return f"{sign}{seconds}"


def seconds_text(ns: int) -> str:
    """`20s`, `2.5s`: a failover time in seconds for messages."""
    return f"{_decimal(ns, NS_PER_SECOND)}s"


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(fraction).rjust(digits, '0').rstrip('0')}"
