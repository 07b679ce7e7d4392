"""kpr-missing-api-endpoint: without kube-proxy the agent needs the API server's real address."""

from __future__ import annotations

from typing import Iterator

from auditor.cilium.config import ENV_HOST, ENV_PORT, agent_env_from
from auditor.model import Finding, ObjectRef, Severity
from auditor.rule import Fact, NotRun, Rule, RuleContext
from auditor.snapshot import Snapshot
from auditor_rules._cilium_settings import CONFIG_KINDS, flag, require_settings

KPR_KEY = "kube-proxy-replacement"
HELM_NAMES = {ENV_HOST: "k8sServiceHost", ENV_PORT: "k8sServicePort"}
ENV_NAMES = {ENV_HOST: "KUBERNETES_SERVICE_HOST", ENV_PORT: "KUBERNETES_SERVICE_PORT"}


def _set_on(ctx: RuleContext, key: str, ref: ObjectRef) -> bool:
    return any(setting.ref == ref for setting in ctx.cilium.candidates.get(key, []))


class KprMissingApiEndpoint(Rule):
    id = "kpr-missing-api-endpoint"
    severity = Severity.ERROR
    title = "kube-proxy replacement on but the agent is not given the API server address"
    rationale = (
        "Without kube-proxy, nothing implements the in-cluster `kubernetes` Service ClusterIP until "
        "Cilium itself is up, so the agent must reach the API server directly: the kubeproxy-free "
        "guide has Helm k8sServiceHost and k8sServicePort set (6443 on kubeadm). The chart does not "
        "put them in cilium-config: it renders them as KUBERNETES_SERVICE_HOST / "
        "KUBERNETES_SERVICE_PORT env entries of the cilium-agent container (agent DaemonSet "
        "template), each only when the value is set. Without them the agent falls back to the "
        "ClusterIP and port the kubelet injects, which is unreachable on a kube-proxy-free node "
        "(a missing port alone leaves the Service port, 443, instead of 6443). The platform runs "
        "kubeProxyReplacement=true, so the rule checks the agent DaemonSet's env when the input holds "
        "it, else the Helm values; with neither it does not guess."
    )
    remediation = (
        "Set Helm k8sServiceHost and k8sServicePort to the API server's address (a control-plane "
        "IP or a load-balanced VIP, port 6443 on kubeadm) and roll the cilium DaemonSet."
    )
    requires = (CONFIG_KINDS,)
    facts = (
        Fact(
            "Without kube-proxy the agent needs k8sServiceHost/k8sServicePort (the kubernetes ClusterIP is not reachable at start)",
            "all KPR versions",
            "Documentation/network/kubernetes/kubeproxy-free.rst",
        ),
        Fact(
            "k8sServiceHost/Port render env KUBERNETES_SERVICE_HOST/PORT on the cilium-agent container, not cilium-config keys",
            "Cilium chart (agent DaemonSet template)",
            "install/kubernetes/cilium/templates/cilium-agent/daemonset.yaml",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        require_settings(ctx, "cannot tell whether kube-proxy is replaced")
        if not flag(ctx, KPR_KEY, "cannot tell whether kube-proxy is replaced"):
            return  # kube-proxy still serves the kubernetes Service: nothing to check
        agent = ctx.cilium.agent
        if agent is not None:
            ctx.examined(agent)
            # The running DaemonSet decides: values set only in Helm sources have not reached it.
            missing = [key for key in (ENV_HOST, ENV_PORT) if not _set_on(ctx, key, agent.ref)]
            if missing and agent_env_from(agent):
                raise NotRun(
                    f"the cilium-agent container of {agent.ref.display} takes env from envFrom, which the input "
                    f"does not show; cannot tell whether it sets {', '.join(ENV_NAMES[k] for k in missing)}"
                )
            if missing:
                names = " and ".join(ENV_NAMES[key] for key in missing)
                yield self.finding(
                    agent,
                    f"{KPR_KEY}=true but the cilium-agent container has no {names} env: it cannot reach "
                    "the API server before Cilium serves the kubernetes Service",
                )
            return
        if not ctx.cilium.helm:
            raise NotRun(
                f"{KPR_KEY}=true, but the input holds neither the cilium agent DaemonSet nor Helm values, "
                "which carry the API server address (it is not a cilium-config key)"
            )
        missing = [key for key in (ENV_HOST, ENV_PORT) if ctx.cilium.get(key) is None]
        for helm in ctx.cilium.helm:
            ctx.examined(helm.ref)
        if not missing:
            return
        if not all(helm.complete for helm in ctx.cilium.helm):
            raise NotRun(
                f"the Helm values shown do not set {', '.join(HELM_NAMES[k] for k in missing)}, but they take "
                "values from elsewhere too (valuesFrom / valueFiles) that the input does not show"
            )
        names = " and ".join(HELM_NAMES[key] for key in missing)
        helm = next(h for h in ctx.cilium.helm if h.complete)
        yield Finding(
            object=helm.ref,
            source=helm.source_of(()),
            message=f"{KPR_KEY}=true but Helm {names} {'is' if len(missing) == 1 else 'are'} not set in "
            f"{'; '.join(h.origin for h in ctx.cilium.helm)}: the agent cannot reach the API server before "
            "Cilium serves the kubernetes Service",
        )
