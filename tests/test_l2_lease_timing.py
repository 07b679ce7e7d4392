"""The L2 lease arithmetic of l2-lease-timing (Cilium's leaseTimings(), client-go's checks) and its posture field.

The rule's behaviour on input is in rules/l2/cases/l2-lease-timing.yaml; this
file pins the pure functions on values the case file does not reach, and the
posture field's validation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import posture
from auditor.errors import ConfigError
from auditor_rules.l2._lease_timing import (
    LeaseTimings,
    client_go_refusal,
    effective_timings,
    failover_window_ns,
    go_duration,
)

S = 1_000_000_000
MS = 1_000_000


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        # Defaults: nothing to rewrite.
        (LeaseTimings(15 * S, 5 * S, 2 * S), LeaseTimings(15 * S, 5 * S, 2 * S)),
        # 1s is accepted (the check is `< 1s`), renew then halved to 500ms, retry to 250ms.
        (LeaseTimings(1 * S, 5 * S, 2 * S), LeaseTimings(1 * S, 500 * MS, 250 * MS)),
        # renew 2.4s against retry 2s: 2.4s <= Duration(1.2 * 2s) = 2.4s, so retry := 1.2s.
        (LeaseTimings(15 * S, 2400 * MS, 2 * S), LeaseTimings(15 * S, 2400 * MS, 1200 * MS)),
        # One nanosecond above 1.2 x retry is enough.
        (LeaseTimings(15 * S, 2400 * MS + 1, 2 * S), LeaseTimings(15 * S, 2400 * MS + 1, 2 * S)),
        # Integer division of an odd lease (in ns).
        (LeaseTimings(3 * S + 1, 4 * S, 200 * MS), LeaseTimings(3 * S + 1, 1500 * MS, 200 * MS)),
        # Everything non-positive: 1s (lease), 1s (renew) -> 500ms (lease/2), 200ms (retry).
        (LeaseTimings(0, -S, 0), LeaseTimings(1 * S, 500 * MS, 200 * MS)),
    ],
)
def test_effective_timings_replay_cilium(configured: LeaseTimings, expected: LeaseTimings) -> None:
    effective, corrections = effective_timings(configured)
    assert effective == expected
    assert bool(corrections) == (configured != expected)
    assert client_go_refusal(effective) is None


def test_client_go_refusals_in_its_order() -> None:
    assert client_go_refusal(LeaseTimings(5 * S, 5 * S, 2 * S)) == "leaseDuration must be greater than renewDeadline"
    assert client_go_refusal(LeaseTimings(15 * S, 2400 * MS, 2 * S)) == (
        "renewDeadline must be greater than retryPeriod*JitterFactor"
    )
    assert client_go_refusal(LeaseTimings(3 * S, 1, 0)) == "retryPeriod must be greater than zero"


def test_failover_window_counts_the_lease_in_whole_seconds() -> None:
    assert failover_window_ns(LeaseTimings(15 * S, 5 * S, 2 * S)) == (10 * S, 20 * S)
    assert failover_window_ns(LeaseTimings(3 * S, 1 * S, 200 * MS)) == (2 * S, 4 * S)
    assert failover_window_ns(LeaseTimings(2500 * MS, 1 * S, 200 * MS)) == (1 * S, 3 * S)


@pytest.mark.parametrize(
    ("ns", "text"),
    [(0, "0s"), (15 * S, "15s"), (2500 * MS, "2.5s"), (500 * MS, "500ms"), (1, "1ns"), (1500, "1.5µs"),
     (90 * S, "1m30s"), (3600 * S, "1h0m0s"), (-S, "-1s"), (1200 * MS, "1.2s")],
)
def test_go_duration_writes_like_go(ns: int, text: str) -> None:
    assert go_duration(ns) == text


def test_posture_max_failover_is_a_positive_number(tmp_path: Path) -> None:
    path = tmp_path / "posture.yaml"
    path.write_text("l2: {maxFailoverSeconds: 4.5}\n", encoding="utf-8")
    assert posture.load(str(path)).l2_max_failover_seconds == 4.5
    assert posture.Posture().l2_max_failover_seconds is None
    for bad in ("0", "true", '"10s"', "-1"):
        path.write_text(f"l2: {{maxFailoverSeconds: {bad}}}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=r"posture.*l2\.maxFailoverSeconds"):
            posture.load(str(path))
