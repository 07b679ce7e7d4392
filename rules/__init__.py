"""Built-in rule plugins (installed as the `auditor_rules` package).

Registration is this explicit list, sorted by rule id: adding a rule means
adding its module here (the test suite checks the list is sorted and that
every module in this folder is registered). Modules are imported only when
rules are needed, so `audit --version` never pays for them.
"""

BUILTIN_RULES: tuple[str, ...] = (
    "auditor_rules.etp_local_under_l2:EtpLocalUnderL2",
    "auditor_rules.kube_proxy_leftover:KubeProxyLeftover",
    "auditor_rules.lb_pool_v2alpha1:LbPoolV2alpha1",
    "auditor_rules.lb_service_not_excepted:LbServiceNotExcepted",
    "auditor_rules.namespace_missing_default_deny:NamespaceMissingDefaultDeny",
    "auditor_rules.nodeport_service_not_excepted:NodePortServiceNotExcepted",
)
