"""aws-vpc-cni-leftover: the AWS VPC CNI DaemonSet running beside Cilium without chaining."""

from __future__ import annotations

from typing import Iterator

from auditor import kinds
from auditor.model import Finding, Severity
from auditor.rule import Fact, Rule, RuleContext
from auditor.snapshot import Snapshot
from auditor_rules._cilium_settings import SOURCE_KINDS, concrete, describe, require_settings

CHAINING_KEY = "cni-chaining-mode"
AWS_CHAINING = "aws-cni"
NAMESPACE = "kube-system"
NAME = "aws-node"


class AwsVpcCniLeftover(Rule):
    id = "aws-vpc-cni-leftover"
    severity = Severity.ERROR
    title = "AWS VPC CNI DaemonSet aws-node present beside Cilium"
    rationale = (
        "The platform is bare-metal kubeadm with Cilium as the only CNI. The AWS VPC CNI's "
        "DaemonSet kube-system/aws-node is a second CNI plugin on every node; Cilium coexists "
        "with it only in chaining mode, cni-chaining-mode=aws-cni (Helm cni.chainingMode), "
        "where the AWS plugin sets up pod networking and Cilium runs behind it. Outside that "
        "mode it is a second CNI on every node whose agent and CNI configuration compete with "
        "Cilium's, and on bare metal it has no function at all. The rule needs the Cilium "
        "configuration to tell chaining from a leftover; without it the verdict is not-run."
    )
    remediation = (
        "Delete the aws-node DaemonSet in kube-system (and the AWS VPC CNI's configuration on "
        "the nodes), or, if chaining behind it is intended, set cni.chainingMode=aws-cni."
    )
    requires = (kinds.DAEMONSET,)
    uses = SOURCE_KINDS
    facts = (
        Fact(
            "cni-chaining-mode (Helm cni.chainingMode) set to aws-cni chains Cilium behind the AWS "
            "VPC CNI; the agent DaemonSet template special-cases that mode.",
            "Cilium chart (main branch, read for 1.19)",
            "https://docs.cilium.io/en/stable/installation/cni-chaining-aws-cni/",
        ),
        Fact(
            "The AWS VPC CNI runs as DaemonSet aws-node in kube-system.",
            "amazon-vpc-cni-k8s manifests",
            "https://github.com/aws/amazon-vpc-cni-k8s",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/installation/cni-chaining-aws-cni/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        daemonset = snapshot.get(kinds.DAEMONSET, NAMESPACE, NAME)
        if daemonset is None:
            return
        what = f"DaemonSet {NAMESPACE}/{NAME} is present; chaining ({CHAINING_KEY}) cannot be told from a leftover"
        require_settings(ctx, what)
        setting = concrete(ctx, CHAINING_KEY, what)
        ctx.examined(daemonset)
        if setting is not None and setting.value.strip() == AWS_CHAINING:
            return
        yield self.finding(
            daemonset,
            f"AWS VPC CNI runs beside Cilium without chaining: {describe(setting, CHAINING_KEY, 'none')}",
        )
