"""kpr-not-enabled: Cilium must replace kube-proxy (kube-proxy-replacement "true")."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import CILIUM_CONFIGURATION, Fact, Finding, Rule, RuleContext, Severity, Snapshot, cilium_keys

KEY = cilium_keys.KUBE_PROXY_REPLACEMENT


def _others(ctx: RuleContext) -> str:
    shadowed = ctx.shadowed_settings(KEY)
    if not shadowed:
        return ""
    return "; lower-precedence sources say " + ", ".join(f"{s.value!r} ({s.origin})" for s in shadowed)


class KprNotEnabled(Rule):
    id = "kpr-not-enabled"
    severity = Severity.ERROR
    title = "Cilium does not replace kube-proxy (kube-proxy-replacement is not true)"
    rationale_fact = (
        "With kube-proxy replacement, Cilium's eBPF datapath implements Services, NodePorts and the "
        "LoadBalancer path; L2 announcements require it, and Cilium's Gateway API support needs it (or "
        "NodePort). Since Cilium 1.16 kube-proxy-replacement takes only \"true\" or \"false\", and the Helm "
        "chart's default is false, so an absent key means kube-proxy is not replaced."
    )
    rationale_decision = (
        "The platform runs kubeProxyReplacement=true on a kubeadm cluster bootstrapped without "
        "kube-proxy, so anything but true is an error. The rule reads the effective setting: "
        "cilium-config first, then Helm values (--cilium-values, a Flux HelmRelease or an Argo CD "
        "Application of the cilium chart). Values that are not true/false at all (strict, partial...) "
        "are left to kpr-removed-value."
    )
    remediation = (
        "Set Helm kubeProxyReplacement=true (cilium-config kube-proxy-replacement: \"true\") together "
        "with k8sServiceHost/k8sServicePort, roll the agents, then remove kube-proxy."
    )
    requires = (CILIUM_CONFIGURATION,)
    cilium_settings = (KEY,)
    facts = (
        Fact(
            "kube-proxy-replacement accepts only \"true\" or \"false\" (strict/partial/disabled removed)",
            "Cilium 1.16+",
            "https://github.com/cilium/cilium/pull/31286",
        ),
        Fact(
            "Helm kubeProxyReplacement defaults to false and renders cilium-config kube-proxy-replacement",
            "Cilium chart 1.16+",
            "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",
            also=("https://github.com/cilium/cilium/blob/002c6fff44159c64bdb86ebfb145157b33eb997f/install/kubernetes/cilium/templates/cilium-configmap.yaml",),
        ),
    )
    references = (
        "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",
        "https://github.com/cilium/cilium/pull/31286",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        setting = ctx.setting(KEY, unknown_because="cannot tell whether Cilium replaces kube-proxy")
        ctx.examined(ctx.configuration_anchor(setting)[0])
        if setting is not None and setting.as_choice() != "false":
            return  # on, or a value kpr-removed-value reports
        if setting is None:
            message = (f"{KEY} is not set in {ctx.describe_configuration()}: Cilium's default is false, "
                       "kube-proxy is not replaced")
        else:
            message = f"{KEY}=false (from {setting.origin}): kube-proxy is not replaced"
        yield ctx.configuration_finding(message + _others(ctx), setting)
