"""cilium-config-changed-after-agents: cilium-config changed after agents started, not rolled out."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from auditor.api import (
    Fact,
    Finding,
    K8sObject,
    NotRun,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    as_mapping,
    as_str,
    cilium_keys,
    kinds,
)

CONFIG_MAP_NAME = cilium_keys.CONFIG_MAP_NAME

AGENT_LABEL = ("k8s-app", "cilium")
DATA_FIELDS = ("f:data", "f:binaryData")


def _timestamp(value: object) -> dt.datetime | None:
    """An RFC 3339 timestamp (`2026-06-01T10:00:00Z`), always timezone-aware; None when unreadable."""
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, str) and value:
        try:
            parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


def _last_data_change(config_map: K8sObject) -> tuple[dt.datetime, str] | None:
    """When the ConfigMap's data last changed (managedFields), and by which manager.

    Entries whose fieldsV1 shows they own no data field (label or annotation
    writes) are skipped; entries without fieldsV1 count, as they may.
    """
    latest: tuple[dt.datetime, str] | None = None
    for entry in as_list(config_map.metadata.get("managedFields")):
        entry = as_mapping(entry)
        when = _timestamp(entry.get("time"))
        if when is None:
            continue
        fields = entry.get("fieldsV1")
        if isinstance(fields, dict) and not any(key in fields for key in DATA_FIELDS):
            continue
        who = as_str(entry.get("manager")) or "an unnamed manager"
        operation = as_str(entry.get("operation"))
        who = f"{who} ({operation})" if operation else who
        if latest is None or when > latest[0]:
            latest = (when, who)
    return latest


class CiliumConfigChangedAfterAgents(Rule):
    id = "cilium-config-changed-after-agents"
    severity = Severity.WARNING
    title = "cilium-config changed after Cilium agents started"
    rationale_fact = (
        "Cilium agents read cilium-config when they start: a change made with `cilium config set` does "
        "not affect running agents until they restart, Helm upgrades restart them only with "
        "rollOutCiliumPods=true, and many options need an agent restart (Cilium's ConfigMap drift "
        "detection counts the keys not yet applied). When the ConfigMap's data was written after an "
        "agent Pod started, that agent may still run the previous configuration, so what cilium-config "
        "says is not necessarily what the datapath does."
    )
    rationale_decision = (
        "The audit judges Cilium by its configuration, so a configuration the agents have not loaded is "
        "reported (warning). The write time is the latest metadata.managedFields entry touching data; "
        "agent Pods are those labelled k8s-app=cilium, started at status.startTime. Both exist only as "
        "the API server returns objects (a live read, a snapshot or a kubectl dump): manifests give "
        "not-run."
    )
    remediation = (
        "Restart the agents so they load the current configuration (kubectl -n kube-system "
        "rollout restart daemonset/cilium), and set rollOutCiliumPods=true in the Helm values."
    )
    requires = (kinds.CONFIGMAP, kinds.POD)
    facts = (
        Fact(
            "Changes to cilium-config made with `cilium config set` do not affect running pods; they must be "
            "restarted. Helm upgrades restart agents gradually only with rollOutCiliumPods=true.",
            "Cilium docs (Configuration, stable)",
            "https://docs.cilium.io/en/stable/configuration/",
        ),
        Fact(
            "Many Cilium options need an agent restart; the drift checker exposes the number of keys not "
            "yet applied as cilium_drift_checker_config_delta.",
            "Cilium docs (ConfigMap drift detection, stable)",
            "https://docs.cilium.io/en/stable/configuration/configmap-drift-detection/",
        ),
    )
    references = (
        "https://docs.cilium.io/en/stable/configuration/",
        "https://docs.cilium.io/en/stable/configuration/configmap-drift-detection/",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        config_map = ctx.cilium_config_map
        if config_map is None:
            raise NotRun(f"no {CONFIG_MAP_NAME} ConfigMap in the input")
        if not snapshot.read_from_cluster(config_map):
            raise NotRun(
                "manifests carry no write times or Pod start times; audit a live cluster, a snapshot or a kubectl dump"
            )
        agents = []
        for pod in snapshot.of_kind(kinds.POD):
            if pod.labels.get(AGENT_LABEL[0]) != AGENT_LABEL[1] or not snapshot.read_from_cluster(pod):
                continue
            if config_map.namespace and pod.namespace != config_map.namespace:
                continue
            started = _timestamp(pod.status.get("startTime"))
            if started is not None:
                agents.append((started, pod))
        if not agents:
            raise NotRun(
                f"no started Cilium agent Pods (label {AGENT_LABEL[0]}={AGENT_LABEL[1]}, status.startTime) "
                f"in namespace {config_map.namespace or '(none)'}"
            )
        changed = _last_data_change(config_map)
        if changed is None:
            created = _timestamp(config_map.metadata.get("creationTimestamp"))
            if created is None:
                raise NotRun(f"{CONFIG_MAP_NAME} has no managedFields or creationTimestamp: when it changed is unknown")
            changed = (created, "its creation")
            oldest_start = min(started for started, _ in agents)
            if created <= oldest_start:
                raise NotRun(
                    f"{CONFIG_MAP_NAME} has no managedFields timestamps (created before the agents started); "
                    "later changes cannot be told"
                )
        ctx.examined(config_map)
        when, who = changed
        stale = sorted((started, pod.name) for started, pod in agents if started < when)
        if not stale:
            return
        oldest_start, oldest = stale[0]
        yield self.finding(
            config_map,
            f"data last written {when.isoformat()} by {who}, after {len(stale)} of {len(agents)} Cilium agent "
            f"Pod(s) started (oldest: {oldest} at {oldest_start.isoformat()}): they may run the previous configuration",
        )
