"""aws-vpc-cni-leftover: the AWS VPC CNI DaemonSet running beside Cilium without chaining."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import Fact, Finding, Rule, RuleContext, Severity, Snapshot, cilium_keys, kinds

CHAINING_KEY = cilium_keys.CNI_CHAINING_MODE
AWS_CHAINING = "aws-cni"
NAMESPACE = "kube-system"
NAME = "aws-node"


class AwsVpcCniLeftover(Rule):
    id = "aws-vpc-cni-leftover"
    severity = Severity.ERROR
    title = "AWS VPC CNI DaemonSet aws-node present beside Cilium"
    nothing_to_check = "aws-node DaemonSet of the AWS VPC CNI (kube-system/aws-node)"
    rationale_fact = (
        "The AWS VPC CNI runs as DaemonSet kube-system/aws-node, a CNI plugin on every node. Cilium "
        "coexists with it only in chaining mode, cni-chaining-mode=aws-cni (Helm cni.chainingMode), "
        "where the AWS plugin sets up pod networking and Cilium runs behind it; outside that mode its "
        "agent and CNI configuration compete with Cilium's."
    )
    rationale_decision = (
        "The platform is bare-metal kubeadm with Cilium as the only CNI, where aws-node has no function "
        "at all: present without chaining, it is an error. The rule needs the Cilium configuration to "
        "tell chaining from a leftover; without it the verdict is not-run."
    )
    remediation = (
        "Delete the aws-node DaemonSet in kube-system (and the AWS VPC CNI's configuration on "
        "the nodes), or, if chaining behind it is intended, set cni.chainingMode=aws-cni."
    )
    requires = (kinds.DAEMONSET,)
    cilium_settings = (CHAINING_KEY,)
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
        setting = ctx.setting(CHAINING_KEY, unknown_because=what)
        ctx.examined(daemonset)
        if setting is not None and setting.value.strip() == AWS_CHAINING:
            return
        yield self.finding(
            daemonset,
            f"AWS VPC CNI runs beside Cilium without chaining: {ctx.describe_setting(CHAINING_KEY, 'none')}",
        )
