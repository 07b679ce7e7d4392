"""kpr-missing-api-endpoint: without kube-proxy the agent needs the API server's real address."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    CILIUM_CONFIGURATION,
    Fact,
    Finding,
    K8sObject,
    NotRun,
    ObjectRef,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    cilium_keys,
)

KPR_KEY = cilium_keys.KUBE_PROXY_REPLACEMENT
ENDPOINT_KEYS = (cilium_keys.ENV_HOST, cilium_keys.ENV_PORT)
HELM_NAMES = {key: cilium_keys.KEYS[key].helm_value for key in ENDPOINT_KEYS}
ENV_NAMES = cilium_keys.AGENT_ENV_NAMES


def _set_on(ctx: RuleContext, key: str, ref: ObjectRef) -> bool:
    return any(setting.ref == ref for setting in ctx.setting_sources(key))


class KprMissingApiEndpoint(Rule):
    id = "kpr-missing-api-endpoint"
    severity = Severity.ERROR
    title = "kube-proxy replacement on but the agent is not given the API server address"
    rationale_fact = (
        "Without kube-proxy, nothing implements the in-cluster `kubernetes` Service ClusterIP until "
        "Cilium itself is up, so the agent must reach the API server directly: Cilium's kube-proxy-free "
        "guide sets Helm k8sServiceHost and k8sServicePort (6443 on kubeadm). The chart renders them "
        "not into cilium-config but as KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT env entries of "
        "the cilium-agent container, each only when set. Without them the agent falls back to the "
        "ClusterIP and port the kubelet injects, unreachable on a kube-proxy-free node (a missing port "
        "alone leaves 443 instead of 6443)."
    )
    rationale_decision = (
        "The platform replaces kube-proxy (kubeProxyReplacement=true), so the rule checks, when "
        "replacement is on, the agent DaemonSet's env when the input holds it (what runs), else the "
        "Helm values; with neither it does not guess (not-run)."
    )
    remediation = (
        "Set Helm k8sServiceHost and k8sServicePort to the API server's address (a control-plane "
        "IP or a load-balanced VIP, port 6443 on kubeadm) and roll the cilium DaemonSet."
    )
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (KPR_KEY, *ENDPOINT_KEYS)
    facts = (
        Fact(
            "Without kube-proxy the agent needs k8sServiceHost/k8sServicePort (the kubernetes ClusterIP is not "
            "reachable at start)",
            "all KPR versions",
            "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",
        ),
        Fact(
            "k8sServiceHost/Port render env KUBERNETES_SERVICE_HOST/PORT on the cilium-agent container, not "
            "cilium-config keys",
            "Cilium chart (agent DaemonSet template)",
            "https://github.com/cilium/cilium/blob/main/install/kubernetes/cilium/templates/cilium-agent/daemonset.yaml",
        ),
    )
    references = ("https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",)

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        if not ctx.setting_enabled(KPR_KEY, unknown_because="cannot tell whether kube-proxy is replaced"):
            ctx.examined_configuration(ctx.concrete_setting(KPR_KEY))  # judged: replacement off
            return  # kube-proxy still serves the kubernetes Service: nothing to check
        agent = ctx.cilium_agent
        if agent is not None:
            yield from self._check_agent(ctx, agent)
        else:
            yield from self._check_helm_values(ctx)

    def _check_agent(self, ctx: RuleContext, agent: K8sObject) -> Iterator[Finding]:
        """The running DaemonSet decides: values set only in Helm sources have not reached it."""
        ctx.examined(agent)
        missing = [key for key in ENDPOINT_KEYS if not _set_on(ctx, key, agent.ref)]
        if missing and ctx.agent_takes_env_from_elsewhere():
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

    @staticmethod
    def _check_helm_values(ctx: RuleContext) -> Iterator[Finding]:
        sources = ctx.helm_values
        if not sources:
            raise NotRun(
                f"{KPR_KEY}=true, but the input holds neither the cilium agent DaemonSet nor Helm values, "
                "which carry the API server address (it is not a cilium-config key)"
            )
        missing = [key for key in ENDPOINT_KEYS if not ctx.setting_sources(key)]
        for helm in sources:
            ctx.examined(helm.ref)
        if not missing:
            return
        if not all(helm.complete for helm in sources):
            raise NotRun(
                f"the Helm values shown do not set {', '.join(HELM_NAMES[k] for k in missing)}, but they take "
                "values from elsewhere too (valuesFrom / valueFiles) that the input does not show"
            )
        names = " and ".join(HELM_NAMES[key] for key in missing)
        helm = next(h for h in sources if h.complete)
        yield Finding(
            object=helm.ref,
            source=helm.source_of(()),
            message=f"{KPR_KEY}=true but Helm {names} {'is' if len(missing) == 1 else 'are'} not set in "
            f"{'; '.join(h.origin for h in sources)}: the agent cannot reach the API server before "
            "Cilium serves the kubernetes Service",
        )
