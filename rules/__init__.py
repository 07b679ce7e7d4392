"""Built-in rule plugins (installed as the `auditor_rules` package).

Registration is this explicit list, sorted by rule id: adding a rule means
adding its module here (the test suite checks the list is sorted and that
every module in this folder is registered). Modules are imported only when
rules are needed, so `audit --version` never pays for them.
"""

# The layers the rules guard, in the order of the platform's chain (the
# sub-packages of this package; `audit rules --by-layer` lists them so).
LAYERS: tuple[str, ...] = ("datapath", "lbipam", "l2", "gateway", "policy", "exposure", "leftovers")

BUILTIN_RULES: tuple[str, ...] = (
    "auditor_rules.leftovers.aws_vpc_cni_leftover:AwsVpcCniLeftover",
    "auditor_rules.datapath.cilium_config_changed_after_agents:CiliumConfigChangedAfterAgents",
    "auditor_rules.datapath.cilium_version_skew:CiliumVersionSkew",
    "auditor_rules.l2.etp_local_under_l2:EtpLocalUnderL2",
    "auditor_rules.gateway.gateway_api_crd_bundle:GatewayApiCrdBundle",
    "auditor_rules.gateway.gateway_api_disabled:GatewayApiDisabled",
    "auditor_rules.gateway.gateway_class_not_cilium:GatewayClassNotCilium",
    "auditor_rules.gateway.gateway_host_network_mismatch:GatewayHostNetworkMismatch",
    "auditor_rules.gateway.gateway_https_listener_tls:GatewayHttpsListenerTls",
    "auditor_rules.gateway.gateway_not_programmed:GatewayNotProgrammed",
    "auditor_rules.gateway.gateway_route_backend_missing:GatewayRouteBackendMissing",
    "auditor_rules.gateway.gateway_route_not_attached:GatewayRouteNotAttached",
    "auditor_rules.policy.ghsa_5r23_prx4_mqg3:GhsaHostFirewallBypass",
    "auditor_rules.exposure.hostnetwork_pod_not_excepted:HostNetworkPodNotExcepted",
    "auditor_rules.exposure.hostport_not_excepted:HostPortNotExcepted",
    "auditor_rules.exposure.hubble_ui_exposed:HubbleUiExposed",
    "auditor_rules.leftovers.ingress_nginx_leftover:IngressNginxLeftover",
    "auditor_rules.datapath.kpr_missing_api_endpoint:KprMissingApiEndpoint",
    "auditor_rules.datapath.kpr_not_enabled:KprNotEnabled",
    "auditor_rules.datapath.kpr_removed_flags:KprRemovedFlags",
    "auditor_rules.datapath.kpr_removed_value:KprRemovedValue",
    "auditor_rules.leftovers.kube_proxy_leftover:KubeProxyLeftover",
    "auditor_rules.l2.l2_client_rate_limit:L2ClientRateLimit",
    "auditor_rules.l2.l2_lease_timing:L2LeaseTiming",
    "auditor_rules.l2.l2_policy_while_disabled:L2PolicyWhileDisabled",
    "auditor_rules.l2.l2_policy_wrong_version:L2PolicyWrongVersion",
    "auditor_rules.l2.l2_service_unannounced:L2ServiceUnannounced",
    "auditor_rules.lbipam.lb_ip_outside_pools:LbIpOutsidePools",
    "auditor_rules.lbipam.lb_ipam_legacy_annotation:LbIpamLegacyAnnotation",
    "auditor_rules.lbipam.lb_pool_conflict:LbPoolConflict",
    "auditor_rules.lbipam.lb_pool_not_armed:LbPoolNotArmed",
    "auditor_rules.lbipam.lb_pool_overlap:LbPoolOverlap",
    "auditor_rules.lbipam.lb_pool_unapproved_range:LbPoolUnapprovedRange",
    "auditor_rules.lbipam.lb_pool_v2alpha1:LbPoolV2alpha1",
    "auditor_rules.lbipam.lb_service_no_ingress_ip:LbServiceNoIngressIp",
    "auditor_rules.exposure.lb_service_not_excepted:LbServiceNotExcepted",
    "auditor_rules.leftovers.metallb_leftover:MetallbLeftover",
    "auditor_rules.policy.namespace_missing_default_deny:NamespaceMissingDefaultDeny",
    "auditor_rules.exposure.nodeport_service_not_excepted:NodePortServiceNotExcepted",
    "auditor_rules.policy.policy_allows_all:PolicyAllowsAll",
    "auditor_rules.exposure.service_external_ips:ServiceExternalIps",
    "auditor_rules.datapath.wireguard_disabled:WireguardDisabled",
)
