"""The exposure model: every way traffic from outside the cluster reaches a pod (docs/exposure.md).

Built once per snapshot by the engine (`build`), handed to rules as
`ctx.exposures` and to reporters as `AuditResult.exposure_model` with each
entrance's verdict in `AuditResult.exposures`. Rules and plugins reach it
through `auditor.api.exposure`.

    model = build(snapshot, cilium_config, posture)
    for entrance in model.entrances:          # sorted by address, then port
        entrance.address, entrance.port, entrance.announcing, entrance.listener, entrance.route,
        entrance.backends, entrance.workloads, entrance.subject, entrance.rule
    model.for_subject(ref), model.by_hostname("argocd.cluster.lan"), model.service(ns, name),
    model.gateway(ns, name), model.routes            # attachment and the reasons a route attaches nowhere
    judge(model.entrances, posture, findings, rule_statuses)  # -> verdicts, after the rules ran
"""

from auditor.exposure.announce import describe as describe_announcing
from auditor.exposure.build import build
from auditor.exposure.gateway import (
    CILIUM_CONTROLLER,
    CILIUM_DEFAULT_CLASS,
    ENVOY_GATEWAY_CONTROLLER,
    GATEWAY_API_GROUP,
    class_controller,
    class_name,
    controller_of,
    gateway_class,
    listener_label,
    listeners,
    served_by_cilium,
)
from auditor.exposure.index import ExposureModel
from auditor.exposure.lines import KeyLines
from auditor.exposure.model import (
    Address,
    AddressKind,
    Announcement,
    AnnouncementKind,
    AnnouncementState,
    Announcing,
    Backend,
    BackendProblem,
    Channel,
    Declared,
    Detached,
    Detachment,
    Entrance,
    Evidence,
    GatewayView,
    JudgedEntrance,
    ListenerHop,
    RouteHop,
    RouteView,
    ServiceView,
    Subject,
    Verdict,
    VerdictKind,
    Workload,
)
from auditor.exposure.pools import (
    DEFAULT_LB_IPAM_KEY,
    IPS_ANNOTATION,
    LEGACY_IPS_ANNOTATION,
    LEGACY_SHARING_KEY_ANNOTATION,
    POOL_CONFLICT,
    REQUEST_SATISFIED,
    SHARING_KEY_ANNOTATION,
    Range,
    RangeIndex,
    lb_ipam_handles,
    lb_ipam_serves,
    parse_address,
    parse_cidr,
    parse_range_text,
    parse_start_stop,
    pool_blocks,
    pool_disabled,
    requested_addresses,
    requested_ips,
)
from auditor.exposure.rules import (
    EXPOSURE_RULES,
    EXTERNAL_IPS_RULE,
    HOSTNETWORK_RULE,
    HOSTPORT_RULE,
    LB_RULE,
    NODEPORT_RULE,
)
from auditor.exposure.selection import (
    BGP_ADVERTISEMENT_SERVICES,
    BGP_CLUSTER_CONFIG_NODES,
    BGP_PEER_CONFIG_ADVERTISEMENTS,
    FIELDS,
    L2_POLICY_NODES,
    L2_POLICY_SERVICES,
    LB_POOL_SERVICES,
    SERVICE_NAME_LABEL,
    SERVICE_NAMESPACE_LABEL,
    SERVICE_PODS,
    Absent,
    SelectorField,
    SelectorSet,
    selects,
    service_selector_labels,
)
from auditor.exposure.services import (
    BGP_LB_CLASS,
    CILIUM_LB_CLASSES,
    L2_LB_CLASS,
    ServicePort,
    exposed_ports,
    external_traffic_policy,
    handled_by_cilium_bgp,
    handled_by_cilium_l2,
    ingress_addresses,
    load_balancer_class,
    service_ports,
    service_type,
)
from auditor.exposure.settings import ExposureSettings, Switch
from auditor.exposure.verdicts import MODE_DECISIONS, Sanction, judge, sanction, unsanctioned

__all__ = [
    "BGP_ADVERTISEMENT_SERVICES", "BGP_CLUSTER_CONFIG_NODES", "BGP_LB_CLASS", "BGP_PEER_CONFIG_ADVERTISEMENTS",
    "CILIUM_CONTROLLER", "CILIUM_DEFAULT_CLASS", "CILIUM_LB_CLASSES", "DEFAULT_LB_IPAM_KEY",
    "ENVOY_GATEWAY_CONTROLLER", "EXPOSURE_RULES", "EXTERNAL_IPS_RULE", "FIELDS", "GATEWAY_API_GROUP",
    "HOSTNETWORK_RULE", "HOSTPORT_RULE", "IPS_ANNOTATION", "L2_LB_CLASS", "L2_POLICY_NODES", "L2_POLICY_SERVICES",
    "LB_POOL_SERVICES", "LB_RULE", "LEGACY_IPS_ANNOTATION", "LEGACY_SHARING_KEY_ANNOTATION", "MODE_DECISIONS",
    "NODEPORT_RULE", "POOL_CONFLICT", "REQUEST_SATISFIED", "SERVICE_NAMESPACE_LABEL", "SERVICE_NAME_LABEL",
    "SERVICE_PODS", "SHARING_KEY_ANNOTATION", "Absent", "Address", "AddressKind", "Announcement",
    "AnnouncementKind", "AnnouncementState", "Announcing", "Backend", "BackendProblem", "Channel", "Declared",
    "Detached", "Detachment", "Entrance", "Evidence",
    "ExposureModel", "ExposureSettings", "GatewayView", "JudgedEntrance", "KeyLines", "ListenerHop", "Range",
    "RangeIndex", "RouteHop", "RouteView", "Sanction", "SelectorField", "SelectorSet", "ServicePort", "ServiceView",
    "Subject", "Switch", "Verdict", "VerdictKind", "Workload", "build", "class_controller", "class_name",
    "controller_of", "describe_announcing", "exposed_ports", "external_traffic_policy", "gateway_class",
    "handled_by_cilium_bgp", "handled_by_cilium_l2", "ingress_addresses", "judge", "lb_ipam_handles",
    "lb_ipam_serves", "listener_label", "listeners", "load_balancer_class", "parse_address", "parse_cidr",
    "parse_range_text", "parse_start_stop", "pool_blocks", "pool_disabled", "requested_addresses", "requested_ips",
    "sanction", "selects", "served_by_cilium", "service_ports", "service_selector_labels", "service_type",
    "unsanctioned",
]
