"""kube-proxy-leftover: kube-proxy objects left behind after Cilium replaced it."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    AnyOf,
    Fact,
    Finding,
    K8sObject,
    NotRun,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    cilium_keys,
    kinds,
)

KPR_KEY = cilium_keys.KUBE_PROXY_REPLACEMENT
# "strict" is the pre-1.16 spelling of full replacement (removed in 1.16, and
# flagged by its own rule); for leftovers it means the same thing as "true".
REPLACEMENT_ON = ("true", "strict")

# What kubeadm's kube-proxy addon phase creates (kubeadm
# cmd/kubeadm/app/phases/addons/proxy), with how much each one matters once
# Cilium replaces kube-proxy: the DaemonSet still programs iptables rules
# beside Cilium's eBPF datapath; the ConfigMap makes `kubeadm upgrade`
# reinstall kube-proxy; the RBAC objects are inert but should go with them.
LEFTOVERS: tuple[tuple[str, str | None, str, Severity | None, str], ...] = (
    (kinds.DAEMONSET, "kube-system", "kube-proxy", None, "kube-proxy still runs beside Cilium's eBPF replacement"),
    (kinds.CONFIGMAP, "kube-system", "kube-proxy", Severity.WARNING,
     "kubeadm upgrade reinstalls kube-proxy while this ConfigMap exists"),
    (kinds.SERVICE_ACCOUNT, "kube-system", "kube-proxy", Severity.INFO, "kube-proxy RBAC leftover"),
    (kinds.CLUSTER_ROLE_BINDING, None, "kubeadm:node-proxier", Severity.INFO, "kube-proxy RBAC leftover"),
    (kinds.ROLE, "kube-system", "kube-proxy", Severity.INFO, "kube-proxy RBAC leftover"),
    (kinds.ROLE_BINDING, "kube-system", "kube-proxy", Severity.INFO, "kube-proxy RBAC leftover"),
)


# What the verdict rests on: the DaemonSet and the ConfigMap (`requires`). The inert RBAC objects are
# reported when the input shows them (`uses`); not seeing them leaves the verdict whole.
JUDGED = (kinds.DAEMONSET, kinds.CONFIGMAP)


class KubeProxyLeftover(Rule):
    id = "kube-proxy-leftover"
    severity = Severity.ERROR
    title = "kube-proxy objects present while Cilium replaces kube-proxy"
    nothing_to_check = "kube-proxy object (DaemonSet, ConfigMap, RBAC objects) of kubeadm's kube-proxy addon"
    rationale_fact = (
        "kubeadm's kube-proxy addon creates DaemonSet, ConfigMap, ServiceAccount and Role/RoleBinding "
        "kube-proxy in kube-system and ClusterRoleBinding kubeadm:node-proxier. Once Cilium replaces "
        "kube-proxy, a kube-proxy DaemonSet left running programs its own iptables Service rules beside "
        "Cilium's datapath, so two implementations answer for the same Service IPs, and a kube-proxy "
        "ConfigMap left behind makes `kubeadm upgrade` reinstall kube-proxy. The RBAC objects are "
        "inert."
    )
    rationale_decision = (
        "The platform runs kubeProxyReplacement=true on a cluster bootstrapped without kube-proxy: the "
        "DaemonSet is an error, the ConfigMap a warning, the RBAC objects info. Whether replacement is "
        "on comes from the Cilium configuration (kube-proxy-replacement, or its Helm values); when the "
        "input does not show it, the rule does not guess. It judges the objects the input shows: an input "
        "without ConfigMaps (a GitOps tree, `kubectl get all`) still has its kube-proxy DaemonSet judged, "
        "and the verdict says it did not see the ConfigMap (partial)."
    )
    remediation = (
        "Delete the kube-proxy DaemonSet and ConfigMap in kube-system (then its ServiceAccount, "
        "Role, RoleBinding and the kubeadm:node-proxier ClusterRoleBinding) and flush the KUBE-* "
        "iptables chains on every node."
    )
    requires = (AnyOf(*JUDGED, name="the kube-proxy DaemonSet or ConfigMap"),)
    uses = (kinds.SERVICE_ACCOUNT, kinds.CLUSTER_ROLE_BINDING, kinds.ROLE, kinds.ROLE_BINDING)
    cilium_settings = (KPR_KEY,)
    references = (
        "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",
        "https://github.com/kubernetes/kubernetes/blob/master/cmd/kubeadm/app/phases/addons/proxy/proxy.go",
    )
    facts = (
        Fact(
            "kubeadm's kube-proxy addon creates DaemonSet, ConfigMap, ServiceAccount and Role/RoleBinding kube-proxy "
            "in kube-system and ClusterRoleBinding kubeadm:node-proxier",
            "kubeadm (all current releases)",
            "https://github.com/kubernetes/kubernetes/blob/master/cmd/kubeadm/app/phases/addons/proxy/proxy.go",
        ),
        Fact(
            "Replacing kube-proxy: skip the addon (kubeadm init --skip-phases=addon/kube-proxy) or delete the "
            "DaemonSet "
            "and ConfigMap (so kubeadm upgrade does not reinstall it) and flush the KUBE-* iptables rules",
            "Cilium 1.16+",
            "https://docs.cilium.io/en/stable/network/kubernetes/kubeproxy-free/",
        ),
        Fact(
            "kube-proxy-replacement takes true/false; strict/partial/disabled were removed",
            "Cilium 1.16+ (deprecated 1.14)",
            "https://github.com/cilium/cilium/pull/26577",
            also=("https://github.com/cilium/cilium/pull/31286",),
        ),
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        present: list[tuple[K8sObject, Severity | None, str]] = []
        for gk, namespace, name, severity, why in LEFTOVERS:
            obj = snapshot.get(gk, namespace, name)
            if obj is not None:
                present.append((obj, severity, why))
            elif gk in JUDGED:  # a leftover of a kind the input does not show may be there all the same
                ctx.did_not_see_kind(gk, f"{gk.partition('.')[0]} {namespace}/{name}")
        if not present:
            return
        shown = ", ".join(o.ref.display for o, _, _ in present)
        if not ctx.settings_known:
            raise NotRun(
                f"kube-proxy objects are present ({shown}) but the input does not show whether Cilium replaces "
                f"kube-proxy (no cilium-config ConfigMap or Helm values setting {KPR_KEY})"
            )
        setting = ctx.setting(KPR_KEY, unknown_because="kube-proxy objects are present")
        for obj, _, _ in present:
            ctx.examined(obj)
        if setting is None or setting.as_choice() not in REPLACEMENT_ON:
            return  # kube-proxy is still the Service proxy: nothing is left over
        for obj, severity, why in present:
            yield self.finding(obj, f"{why} ({KPR_KEY}={setting.value} from {setting.origin})", severity)
