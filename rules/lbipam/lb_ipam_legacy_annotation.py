"""lb-ipam-legacy-annotation: the io.cilium/lb-ipam-* spelling of LB-IPAM annotations."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import AnyOf, Fact, Finding, Rule, RuleContext, Severity, Snapshot, as_mapping, kinds
from auditor_rules.lbipam._pools import (
    IPS_ANNOTATION,
    LEGACY_IPS_ANNOTATION,
    LEGACY_SHARING_KEY_ANNOTATION,
    SHARING_KEY_ANNOTATION,
)

LEGACY = {LEGACY_IPS_ANNOTATION: IPS_ANNOTATION, LEGACY_SHARING_KEY_ANNOTATION: SHARING_KEY_ANNOTATION}


class LbIpamLegacyAnnotation(Rule):
    id = "lb-ipam-legacy-annotation"
    severity = Severity.INFO
    title = "LB-IPAM annotation in the older io.cilium/lb-ipam-* spelling"
    nothing_to_check = "Service or Gateway with a legacy LB-IPAM annotation"
    rationale_fact = (
        "Cilium added the lbipam.cilium.io/ips and lbipam.cilium.io/sharing-key annotations as aliases "
        "of io.cilium/lb-ipam-ips and io.cilium/lb-ipam-sharing-key (in use from 1.16). LB-IPAM still "
        "reads both keys on Services and the old one is not formally deprecated there; when both are "
        "set the new one wins. On a Gateway, io.cilium/lb-ipam-ips in spec.infrastructure.annotations "
        "makes Cilium log a DEPRECATED warning: spec.addresses is the supported way to ask for an "
        "address."
    )
    rationale_decision = (
        "The platform writes one spelling, so the older one on a Service is a consistency note (info), "
        "with the values when both keys disagree; on a Gateway it is a warning."
    )
    remediation = (
        "Rename the annotation to lbipam.cilium.io/ips (or lbipam.cilium.io/sharing-key); on a "
        "Gateway, request the address with spec.addresses instead."
    )
    requires = (AnyOf(kinds.SERVICE, kinds.GATEWAY, name="Services or Gateways"),)
    facts = (
        Fact(
            "lbipam.cilium.io/* is the new prefix; LB-IPAM reads both spellings; no formal deprecation for Services",
            "new prefix 1.16+",
            "https://github.com/cilium/cilium/pull/30169",
        ),
        Fact(
            "A Gateway setting io.cilium/lb-ipam-ips via spec.infrastructure.annotations logs DEPRECATED; use "
            "spec.addresses",
            "Cilium gateway controller (release not pinned)",
            "https://github.com/cilium/cilium/pull/35536",
        ),
    )
    references = (
        "https://github.com/cilium/cilium/pull/30169",
        "https://docs.cilium.io/en/stable/network/lb-ipam/",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        legacy_keys = frozenset(LEGACY)
        for service in snapshot.of_kind(kinds.SERVICE):
            annotations = service.annotations
            if legacy_keys.isdisjoint(annotations):  # asked of every Service: one C call for nearly all
                continue
            legacy = [key for key in LEGACY if key in annotations]
            if not legacy:
                continue
            ctx.examined(service)
            parts = []
            for key in legacy:
                new = LEGACY[key]
                text = f"{key}: prefer {new}"
                if new in annotations and annotations.get(new) != annotations.get(key):
                    text += f" ({new} is also set, to {annotations.get(new)!r}, and wins)"
                parts.append(text)
            yield self.finding(service, "; ".join(parts))
        for gateway in snapshot.of_kind(kinds.GATEWAY):
            infrastructure = as_mapping(gateway.spec.get("infrastructure"))
            annotations = as_mapping(infrastructure.get("annotations"))
            if LEGACY_IPS_ANNOTATION in annotations:
                ctx.examined(gateway)
                yield self.finding(
                    gateway,
                    f"spec.infrastructure.annotations sets {LEGACY_IPS_ANNOTATION}: Cilium logs it as DEPRECATED for "
                    f"Gateways; "
                    "request the address with spec.addresses",
                    Severity.WARNING,
                )
