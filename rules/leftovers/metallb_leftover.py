"""metallb-leftover: MetalLB objects left behind after Cilium LB-IPAM and L2 replaced it."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    AnyOf,
    Fact,
    Finding,
    K8sObject,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    as_mapping,
    image_name,
    kinds,
)

METALLB_GROUP = "metallb.io"
METALLB_NAMESPACE = "metallb-system"
# Kinds that make MetalLB hand out or announce addresses; the others
# (BFDProfile, Community, status kinds) only tune or report.
ACTIVE_KINDS = ("IPAddressPool", "L2Advertisement", "BGPAdvertisement", "BGPPeer")
# Service annotations only MetalLB reads (legacy and current prefixes).
ANNOTATION_PREFIXES = ("metallb.universe.tf/", "metallb.io/")
# How MetalLB workloads are recognised: native-manifest names in metallb-system,
# the chart's/manifests' labels, or the image (quay.io/metallb/speaker|controller).
COMPONENT_IMAGES = {"speaker": "speaker", "controller": "controller"}


def _metallb_component(workload: K8sObject) -> str | None:
    """`speaker` / `controller` when the DaemonSet or Deployment is MetalLB's."""
    labels = workload.labels
    is_metallb = labels.get("app") == "metallb" or labels.get("app.kubernetes.io/name") == "metallb"
    component = labels.get("component") or labels.get("app.kubernetes.io/component")
    pod_spec = as_mapping(as_mapping(workload.spec.get("template")).get("spec"))
    for container in as_list(pod_spec.get("containers")):
        image = as_mapping(container).get("image")
        if isinstance(image, str) and "/metallb/" in f"/{image.split('@', 1)[0]}":
            is_metallb = True
            component = component or COMPONENT_IMAGES.get(image_name(image))
    if workload.namespace == METALLB_NAMESPACE and workload.name in COMPONENT_IMAGES:
        is_metallb = True
        component = component or workload.name
    if not is_metallb:
        return None
    if isinstance(component, str) and component in COMPONENT_IMAGES:
        return component
    return "speaker" if workload.gk == kinds.DAEMONSET else "controller"


class MetallbLeftover(Rule):
    id = "metallb-leftover"
    severity = Severity.ERROR
    title = "MetalLB objects present beside Cilium LB-IPAM and L2 announcements"
    nothing_to_check = (
        "MetalLB object (a metallb.io kind, the metallb-system namespace, a speaker or "
        "controller, a MetalLB annotation)"
    )
    rationale_fact = (
        "MetalLB's controller assigns LoadBalancer addresses from its IPAddressPools and its speaker "
        "DaemonSet announces them (L2Advertisement, BGPAdvertisement). Cilium LB-IPAM allocates for "
        "every Service without a loadBalancerClass once a pool exists (Cilium 1.13+) and reads only its "
        "own annotations (lbipam.cilium.io/ips). With both installed, two IPAMs and two announcers "
        "compete for the same Services, and two components answer ARP for Service addresses on one LAN, "
        "so the IP-to-MAC mapping flaps."
    )
    rationale_decision = (
        "The platform's exposure is all-Cilium: LB-IPAM pools and Cilium's L2 announcer replaced "
        "MetalLB (ADR 0020). Active MetalLB objects (the speaker and controller workloads, "
        "IPAddressPool, L2Advertisement, BGPAdvertisement, BGPPeer) are errors; other metallb.io "
        "objects, the metallb-system namespace and MetalLB annotations on Services are warnings."
    )
    remediation = (
        "Uninstall MetalLB (its Helm release or manifests), delete the metallb.io objects and "
        "the metallb-system namespace, and move address requests on Services to "
        "lbipam.cilium.io/ips."
    )
    requires = (AnyOf(kinds.NAMESPACE, kinds.DAEMONSET, kinds.DEPLOYMENT, *kinds.METALLB_KINDS,
                      name="where MetalLB shows"),)
    uses = (kinds.SERVICE,)
    facts = (
        Fact(
            "MetalLB's API group is metallb.io (IPAddressPool, L2Advertisement, BGPAdvertisement, "
            "BFDProfile, Community); its native manifests run a speaker DaemonSet and a controller "
            "Deployment in metallb-system (the Helm chart names the DaemonSet metallb-speaker).",
            "MetalLB 0.13+",
            "https://metallb.universe.tf/apis/",
        ),
        Fact(
            "LB-IPAM is always on and allocates for Services with no loadBalancerClass once a pool exists.",
            "Cilium 1.13+",
            "https://docs.cilium.io/en/stable/network/lb-ipam/",
        ),
        Fact(
            "LB-IPAM reads the requested IPs from lbipam.cilium.io/ips (and the legacy io.cilium/lb-ipam-ips).",
            "Cilium 1.16+ (new prefix)",
            "https://github.com/cilium/cilium/pull/30169",
        ),
    )
    references = (
        "https://metallb.universe.tf/configuration/",
        "https://docs.cilium.io/en/stable/network/l2-announcements/",
        "https://docs.cilium.io/en/stable/network/lb-ipam/",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        # The metallb.io kinds the input holds, from the snapshot's index (not a pass over every object);
        # findings and examined objects are sorted by the engine, whatever the order here.
        metallb_kinds = [gk for gk in snapshot.kinds() if gk.partition(".")[2] == METALLB_GROUP]
        for obj in snapshot.of_kind(*metallb_kinds):
            ctx.examined(obj)
            active = obj.kind in ACTIVE_KINDS
            yield self.finding(
                obj,
                f"MetalLB {obj.kind} ({obj.api_version}): "
                + ("MetalLB still assigns or announces Service addresses from it" if active
                   else "MetalLB configuration left behind"),
                None if active else Severity.WARNING,
            )
        namespace = snapshot.get(kinds.NAMESPACE, None, METALLB_NAMESPACE)
        if namespace is not None:
            ctx.examined(namespace)
            yield self.finding(namespace, "MetalLB's namespace is still present", Severity.WARNING)
        for workload in snapshot.of_kind(kinds.DAEMONSET, kinds.DEPLOYMENT):
            component = _metallb_component(workload)
            if component is None:
                continue
            ctx.examined(workload)
            if component == "speaker":
                why = "MetalLB speaker: announces LoadBalancer addresses beside Cilium's L2 announcer"
            else:
                why = "MetalLB controller: assigns LoadBalancer addresses beside Cilium LB-IPAM"
            yield self.finding(workload, why)
        for service in snapshot.of_kind(kinds.SERVICE):
            if not service.annotations:
                continue
            keys = sorted(
                key for key in service.annotations
                if isinstance(key, str) and key.startswith(ANNOTATION_PREFIXES)
            )
            if keys:
                ctx.examined(service)
                yield self.finding(
                    service,
                    f"MetalLB annotation(s) {', '.join(keys)}: Cilium ignores them (LB-IPAM reads "
                    "lbipam.cilium.io/ips and lbipam.cilium.io/sharing-key)",
                    Severity.WARNING,
                )
