"""How far a policy rule's CIDR peers reach outside the cluster, judged against the private ranges (pure).

Under Cilium, CIDR rules (and NetworkPolicy ipBlocks, translated to CIDR rules)
never match Cilium-managed endpoints or node IPs: they only select peers that
have no endpoint identity, i.e. everything outside the cluster. So
`0.0.0.0/0` means Cilium's entity `world` ("everything outside the cluster"),
which includes the LAN and every other private network the nodes can route
to, and excepting the pod or Service CIDRs changes nothing. What narrows a
whole-space rule is excepting the private ranges: with all of them excepted,
what is left is the public internet.

A rule is classified per address family from the union of its CIDR peers
(each `cidr` minus its `except` list), as integer intervals:

- `Reach.WORLD`: every private range of the family is wholly reachable;
- `Reach.PARTIAL`: part of the private space is excepted, part is still reachable;
- `Reach.INTERNET`: no private address is reachable, "the internet only".

"Private" is RFC 1918 for IPv4 and RFC 4193 unique local addresses (fc00::/7)
for IPv6. Other non-public ranges (RFC 6598 shared address space 100.64.0.0/10,
used by CGNAT and Tailscale; link-local 169.254.0.0/16 and fe80::/10) do not
change the class but are named when they stay reachable. A LAN numbered from
public space (IPv6 global unicast) is indistinguishable from the internet here.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

Interval = tuple[int, int]  # first and last address, inclusive

# The private (LAN) ranges of each family: excepting all of them leaves the internet.
PRIVATE_RANGES: dict[int, tuple[str, ...]] = {
    4: ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
    6: ("fc00::/7",),
}
# Further non-public ranges, named in messages when a rule still reaches them.
OTHER_NON_PUBLIC: dict[int, tuple[tuple[str, str], ...]] = {
    4: (("100.64.0.0/10", "shared address space: CGNAT, Tailscale"), ("169.254.0.0/16", "link-local")),
    6: (("fe80::/10", "link-local"),),
}
_BITS = {4: 32, 6: 128}


class Reach(enum.IntEnum):
    """How much of the address space a rule opens, narrowest first (the order is the breadth)."""

    INTERNET = 1
    PARTIAL = 2
    WORLD = 3
    ANYWHERE = 4


def network(text: object) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """A CIDR (host bits allowed, as Cilium's parser accepts `10.1.2.3/8`), or None when it is not one."""
    if not isinstance(text, str) or "/" not in text:
        return None
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None


def _interval(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> Interval:
    return int(net.network_address), int(net.broadcast_address)


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, non-overlapping, adjacent intervals joined."""
    out: list[Interval] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def subtract(interval: Interval, holes: list[Interval]) -> list[Interval]:
    """`interval` minus the merged `holes`."""
    start, end = interval
    out: list[Interval] = []
    for hole_start, hole_end in holes:
        if hole_end < start or hole_start > end:
            continue
        if hole_start > start:
            out.append((start, hole_start - 1))
        start = max(start, hole_end + 1)
        if start > end:
            return out
    out.append((start, end))
    return out


def covered(span: Interval, reachable: list[Interval]) -> int:
    """How many addresses of `span` the merged `reachable` intervals contain."""
    total = 0
    for start, end in reachable:
        low, high = max(start, span[0]), min(end, span[1])
        if low <= high:
            total += high - low + 1
    return total


@dataclass
class FamilyReach:
    """The peers of one rule in one address family."""

    family: int
    whole_space: bool = False  # a 0.0.0.0/0 (::/0) CIDR or a world entity: the rule opens this family
    intervals: list[Interval] = field(default_factory=list)

    def reachable(self) -> list[Interval]:
        return merge(self.intervals)

    def reach(self) -> Reach:
        reachable = self.reachable()
        shares = [_share(text, reachable) for text in PRIVATE_RANGES[self.family]]
        if all(share == "none" for share in shares):
            return Reach.INTERNET
        if all(share == "all" for share in shares):
            return Reach.WORLD
        return Reach.PARTIAL

    def private_still_reachable(self) -> list[str]:
        """`172.16.0.0/12`, `10.0.0.0/8 (in part)`: the private ranges the rule still reaches."""
        reachable = self.reachable()
        out = []
        for text in PRIVATE_RANGES[self.family]:
            share = _share(text, reachable)
            if share != "none":
                out.append(text if share == "all" else f"{text} (in part)")
        return out

    def other_still_reachable(self) -> list[str]:
        reachable = self.reachable()
        return [f"{text} ({what})" for text, what in OTHER_NON_PUBLIC[self.family]
                if _share(text, reachable) != "none"]

    def describe(self) -> str:
        """What the family's peers reach, for a finding (the peers themselves, excepts included, are shown
        beside it)."""
        reach = self.reach()
        if reach is Reach.WORLD:
            return "everything outside the cluster, LAN included"
        if reach is Reach.PARTIAL:
            return ("everything outside the cluster, part of the private ranges excepted; still reachable: "
                    f"{', '.join(self.private_still_reachable())}")
        others = self.other_still_reachable()
        return "the internet only (every private range excepted" + (
            f"; still reachable: {', '.join(others)})" if others else ")")


def _share(text: str, reachable: list[Interval]) -> str:
    """"all", "part" or "none": how much of the range `text` the reachable intervals contain."""
    span = _SPANS[text]
    count = covered(span, reachable)
    return "none" if count == 0 else "all" if count == span[1] - span[0] + 1 else "part"


_SPANS: dict[str, Interval] = {
    text: _interval(ipaddress.ip_network(text))
    for family in (4, 6)
    for text in (*PRIVATE_RANGES[family], *(other for other, _ in OTHER_NON_PUBLIC[family]))
}


@dataclass
class RuleReach:
    """The peers outside the cluster of one policy rule (or Cilium rule entry)."""

    anywhere: bool = False  # no peer restriction at all, or the entity `all`
    families: dict[int, FamilyReach] = field(default_factory=dict)

    def family(self, version: int) -> FamilyReach:
        return self.families.setdefault(version, FamilyReach(version))

    def add_world(self, versions: Iterable[int] = (4, 6)) -> None:
        """A world entity: every address of the family, outside the cluster."""
        for version in versions:
            reach = self.family(version)
            reach.whole_space = True
            reach.intervals.append((0, 2 ** _BITS[version] - 1))

    def add_cidr(self, cidr: object, excepts: Iterable[object] = ()) -> str | None:
        """Add a CIDR peer with its except list; the CIDR as written, or None when it is not one.

        An except entry that is not a CIDR of the same family is ignored, which can only
        make the rule reach more (never hide an opening).
        """
        net = network(cidr)
        if net is None:
            return None
        reach = self.family(net.version)
        holes = merge(_interval(e) for e in (network(x) for x in excepts) if e is not None and e.version == net.version)
        reach.intervals.extend(subtract(_interval(net), holes))
        if net.prefixlen == 0:
            reach.whole_space = True
        return str(cidr).strip()

    def opened(self) -> Reach | None:
        """The broadest reach of the rule, or None when it opens no family as a whole."""
        if self.anywhere:
            return Reach.ANYWHERE
        reaches = [reach.reach() for reach in self.families.values() if reach.whole_space]
        return max(reaches) if reaches else None

    def describe(self) -> str:
        if self.anywhere:
            return "every peer, in the cluster and outside"
        opened = [reach for _, reach in sorted(self.families.items()) if reach.whole_space]
        texts = [reach.describe() for reach in opened]
        if len(set(texts)) == 1:
            return texts[0]
        return "; ".join(f"IPv{reach.family}: {text}" for reach, text in zip(opened, texts, strict=True))
