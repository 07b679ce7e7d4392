"""hostport-not-excepted: a container hostPort opens a port on the node's own addresses."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import AnyOf, Fact, Finding, Rule, RuleContext, Severity, Snapshot, exposure, kinds
from auditor_rules.exposure._channels import judge, mode_note

WORKLOADS = AnyOf(
    kinds.DEPLOYMENT, kinds.STATEFULSET, kinds.DAEMONSET, kinds.JOB, kinds.CRONJOB, kinds.POD, kinds.REPLICASET,
    kinds.REPLICATION_CONTROLLER, name="workloads (Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, Pods)",
)


def unnamed_note(ctx: RuleContext) -> str:
    return "; not named by exposure.allow" if ctx.posture.exposure_mode == "l4" else ""


def describe(ctx: RuleContext, subject: exposure.Subject, found: list[exposure.Entrance]) -> str:
    parts = []
    for entrance in found:
        where = entrance.address.display
        container = entrance.notes[0] if entrance.notes else ""
        parts.append(f"{entrance.port_display} on {where}" + (f" ({container})" if container else ""))
    extra = sorted({n for e in found for n in e.notes[1:]})
    return (f"hostPort {', '.join(parts)}" + (f"; {'; '.join(extra)}" if extra else "")
            + unnamed_note(ctx) + mode_note(ctx))


class HostPortNotExcepted(Rule):
    id = "hostport-not-excepted"
    severity = Severity.ERROR
    title = "Container hostPort not sanctioned by the posture or the exception list"
    nothing_to_check = "container hostPort"
    rationale_fact = (
        "A container port with hostPort is served on the node's own addresses (without hostIP, on "
        "every address Cilium uses for NodePort, and on 127.0.0.1): with kube-proxy replacement Cilium's "
        "eBPF load balancer maps it to the pod, outside any Gateway, its TLS and its routes. In Cilium "
        "1.19 the enable-host-port switch is gone: hostPort needs kube-proxy-replacement=true (or the "
        "portmap CNI chaining). Cilium does not bind a hostPort inside the NodePort range."
    )
    rationale_decision = (
        "exposure.mode gateway (default, ADR 0020) and none: a hostPort is drift unless excepted. "
        "exposure.mode l4 (ADR 0092): a hostPort the posture names (exposure.allow) is sanctioned. In every "
        "mode the infrastructure the posture lists (exposure.infrastructure: Cilium's agent and Envoy, node "
        "exporters, control-plane static Pods) is sanctioned. Deployments, StatefulSets, DaemonSets, Jobs, "
        "CronJobs, ReplicaSets and Pods are read, each pod template once (a Pod or ReplicaSet whose "
        "controller is in the input counts as that controller)."
    )
    remediation = (
        "Remove hostPort and publish the port through the edge Gateway (or, in mode l4, a NodePort Service "
        "the posture names), name the workload in exposure.allow (mode l4) or exposure.infrastructure, or add "
        "a named exception with its reason to exceptions.yaml."
    )
    requires = (WORKLOADS,)
    posture_fields = ("exposure.mode", "exposure.allow", "exposure.infrastructure")
    facts = (
        Fact(
            "A hostPort without hostIP is exposed on the node addresses used for NodePort and on 127.0.0.1; with "
            "hostIP only there. With kube-proxy replacement Cilium serves hostPort natively in eBPF",
            "Cilium 1.8+",
            "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/#container-hostport-support",
        ),
        Fact(
            "--enable-host-port, --enable-external-ips and --enable-node-port are removed: the features require "
            "kube-proxy-replacement=true",
            "Cilium 1.19",
            "https://github.com/cilium/cilium/pull/41277",
            also=("https://docs.cilium.io/en/stable/operations/upgrade/",),
        ),
    )
    references = ("https://kubernetes.io/docs/concepts/configuration/overview/#services",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        yield from judge(self, ctx, lambda subject, found: describe(ctx, subject, found))
