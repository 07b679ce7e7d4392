"""What `audit init` writes: a starter configuration that matches what the input shows (docs/config.md).

Two files: `.cilium-audit.yaml` (what to audit, the gate, the posture inline,
the rules not applicable here) and `.cilium-audit-exceptions.yaml` (one entry
per way in that is drift today, each with a `TODO:` reason and an expiry 30
days out, so nothing is accepted silently or forever). The exception list is
a file of its own because it is what changes most, has its own schema, and is
what reviewers read when a way in is added; the posture stays inline because
it is short and says what the repository is. Both files are hidden, so a
folder audit never reads them as manifests.

Everything here is pure: snapshots and an audit result in, YAML text out,
sorted, so the same input gives the same bytes.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from auditor import kinds
from auditor.cilium import config as cilium_config
from auditor.cilium import keys
from auditor.engine import AuditResult
from auditor.model import FindingStatus, RuleStatus, as_list
from auditor.snapshot import Snapshot
from auditor.versions import version_line

EXCEPTIONS_FILE = ".cilium-audit-exceptions.yaml"
EXPIRY_DAYS = 30


@dataclass(frozen=True)
class Observed:
    """What the input shows about the platform, the posture's evidence; `remarks` become comments."""

    posture: dict[str, Any]
    remarks: tuple[str, ...]


def _pool_ranges(snapshot: Snapshot) -> list[str]:
    ranges = []
    for pool in snapshot.of_kind(kinds.LB_IP_POOL):
        for block in as_list(pool.spec.get("blocks") or pool.spec.get("cidrs")):
            if isinstance(block, dict) and isinstance(block.get("cidr"), str):
                ranges.append(block["cidr"])
            elif isinstance(block, dict) and isinstance(block.get("start"), str):
                stop = block.get("stop") if isinstance(block.get("stop"), str) else block["start"]
                ranges.append(f"{block['start']}-{stop}")
    return ranges


def _switch(config: cilium_config.CiliumConfig, key: str) -> bool | None:
    setting = config.get(key)
    if setting is not None and setting.concrete:
        return setting.as_bool()
    return False if config.settings_known and setting is None else None


def observe(snapshots: Sequence[tuple[str, Snapshot]]) -> Observed:
    """The posture the snapshots (a repository's clusters, or one cluster) show, with what it rests on."""
    remarks: list[str] = []
    ranges: set[str] = set()
    lines: set[str] = set()
    host_network: set[bool] = set()
    gateways = l2_policies = bgp_objects = 0
    for _, snapshot in snapshots:
        config = cilium_config.resolve(snapshot, snapshot.cilium_values)
        ranges.update(_pool_ranges(snapshot))
        version = config.concrete_value(keys.AGENT_VERSION)
        line = version_line(version) if version else None
        if line is not None:
            lines.add(f"{line[0]}.{line[1]}")
        switch = _switch(config, keys.GATEWAY_API_HOST_NETWORK)
        if switch is not None:
            host_network.add(switch)
        gateways += len(snapshot.of_kind(kinds.GATEWAY))
        l2_policies += len(snapshot.of_kind(kinds.L2_ANNOUNCEMENT_POLICY))
        bgp_objects += len(snapshot.of_kind(kinds.BGP_ADVERTISEMENT, "CiliumBGPClusterConfig.cilium.io",
                                            "CiliumBGPPeeringPolicy.cilium.io"))
    exposure: dict[str, Any] = {"mode": "gateway"}
    remarks.append(f"exposure.mode gateway: {gateways} Gateway(s) in the input" if gateways else
                   "exposure.mode gateway: no Gateway in the input (the platform's default: the edge Gateway only)")
    if len(host_network) == 1:
        exposure["gatewayHostNetwork"] = host_network.pop()
    exposure["lbIpamL2"] = l2_policies > 0
    remarks.append(f"lbIpamL2: {l2_policies} CiliumL2AnnouncementPolicy object(s)")
    if bgp_objects:
        remarks.append(f"BGP: {bgp_objects} Cilium BGP object(s) announce LoadBalancer IPs (no posture key: "
                       "the L2 and LB-IPAM rules read them)")
    if ranges:
        exposure["approvedLbIpamRanges"] = sorted(ranges)
    else:
        remarks.append("approvedLbIpamRanges: no CiliumLoadBalancerIPPool in the input (the built-in range stays)")
    posture: dict[str, Any] = {"exposure": exposure}
    if lines:
        chosen = sorted(lines, key=lambda text: tuple(int(part) for part in text.split(".")))[-1]
        posture["expected"] = {"ciliumVersionLine": chosen}
        if len(lines) > 1:
            remarks.append(f"ciliumVersionLine {chosen}: the clusters run {', '.join(sorted(lines))}")
    else:
        remarks.append("ciliumVersionLine: the input shows no concrete Cilium version (the built-in line stays)")
    return Observed(posture, tuple(remarks))


def _entry_name(parts: Iterable[str], taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")[:60].strip("-") or "way-in"
    name, counter = base, 2
    while name in taken:
        name, counter = f"{base}-{counter}", counter + 1
    taken.add(name)
    return name


def way_in_exceptions(result: AuditResult, as_of: dt.date) -> list[dict[str, Any]]:
    """One exception entry per way in that is drift in `result` (its object, every rule that flags it),
    with a `TODO:` reason and an expiry EXPIRY_DAYS after `as_of`; sorted by kind, namespace, name."""
    way_in_rules = {judged.entrance.rule for judged in result.exposures}
    by_object: dict[tuple[str, str, str], dict[str, str]] = {}
    for finding in result.findings:
        if finding.status is not FindingStatus.FAILED or finding.rule not in way_in_rules:
            continue
        ref = finding.object
        by_object.setdefault((ref.kind, ref.namespace or "", ref.name), {}).setdefault(finding.rule, finding.message)
    taken: set[str] = set()
    entries = []
    for (kind, namespace, name), rules in sorted(by_object.items()):
        match = {"kind": kind, **({"namespace": namespace} if namespace else {}), "name": name}
        first = rules[min(rules)]
        entries.append({
            "name": _entry_name((kind, namespace, name), taken),
            "rules": sorted(rules),
            "match": match,
            "reason": f"TODO: say why this way in is accepted, or remove it (audit init found: {first})",
            "expires": (as_of + dt.timedelta(days=EXPIRY_DAYS)).isoformat(),
        })
    return entries


NOTHING_RAN = ("no rule could run on this input (it holds none of what the rules read): nothing is declared "
               "not applicable and requireComplete is off, so the audit says 'not run' rather than a complete pass")


def not_applicable(result: AuditResult) -> dict[str, str]:
    """Every rule that could not run on this input, with why (its not-run reason), and every rule whose verdict
    is on part of it, with what it did not see (its verdict and findings still count: only the gap is
    declared), by rule id; nothing when no rule reached a verdict at all: declaring every rule away would turn
    "nothing checked" into a complete pass."""
    if not any(rule.status in (RuleStatus.PASSED, RuleStatus.FAILED) for rule in result.rules):
        return {}
    declared: dict[str, str] = {}
    for rule in sorted(result.rules, key=lambda r: r.id):
        if rule.status is RuleStatus.NOT_RUN:
            declared[rule.id] = rule.reason
        elif rule.partial:
            unseen = "; ".join(str(u) for u in rule.unseen)
            declared[rule.id] = f"judges only part of this input (its findings count): did not see {unseen}"
    return declared


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)


def config_text(header: Sequence[str], offline: bool, clusters: dict[str, str], observed: Observed,
                declared: dict[str, str], exceptions_file: str) -> str:
    """`.cilium-audit.yaml`: paths and clusters (offline), the gate, the rules not applicable, the posture."""
    body: dict[str, Any] = {}
    if offline:
        body["paths"] = ["."]
    if clusters:
        body["clusters"] = dict(sorted(clusters.items()))
    body["failOn"] = "error"
    nothing_ran = not declared and NOTHING_RAN in observed.remarks
    complete: dict[str, Any] = {"enabled": not nothing_ran}
    if declared:
        complete["notApplicable"] = declared
    body["requireComplete"] = complete
    body["posture"] = observed.posture
    body["exceptions"] = [exceptions_file]
    comments = [*header, "", "What audit init saw (the posture rests on it):",
                *(f"  {remark}" for remark in observed.remarks)]
    return "".join(f"# {line}".rstrip() + "\n" for line in comments) + _dump(body)


def exceptions_text(header: Sequence[str], entries: list[dict[str, Any]]) -> str:
    comments = [*header, "",
                "One entry per way in that is drift today: replace each TODO with the reason (or remove the",
                "entry and the way in); each expires in 30 days, when its finding fails again."]
    return "".join(f"# {line}".rstrip() + "\n" for line in comments) + _dump({"exceptions": entries})
