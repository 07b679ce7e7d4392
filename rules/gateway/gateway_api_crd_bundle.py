"""gateway-api-crd-bundle: the installed Gateway API CRDs must be the bundle Cilium supports."""

from __future__ import annotations

from collections.abc import Iterator

from auditor.api import (
    Fact,
    Finding,
    K8sObject,
    NotRun,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    crd_served_versions,
    kinds,
    version_line,
)
from auditor_rules.gateway._gateway_api import GATEWAY_API_GROUP, bundle_version

BUNDLE_ANNOTATION = "gateway.networking.k8s.io/bundle-version"
TLSROUTE_CRD = f"tlsroutes.{GATEWAY_API_GROUP}"
# Gateway API v1.5 stopped serving TLSRoute v1alpha2 in its standard bundle;
# the Cilium 1.19 operator still watches that version and its Gateway API
# controller fails to start (cilium/cilium#44920, #45139).
BREAKING_FOR_119 = (1, 5)


def _is_gateway_api_crd(crd: K8sObject) -> bool:
    group = crd.spec.get("group")
    if isinstance(group, str):
        return group == GATEWAY_API_GROUP
    return crd.name.endswith(f".{GATEWAY_API_GROUP}")


def _text(version: tuple[int, ...]) -> str:
    return "v" + ".".join(str(part) for part in version)


class GatewayApiCrdBundle(Rule):
    id = "gateway-api-crd-bundle"
    severity = Severity.ERROR
    title = "Gateway API CRDs not from the bundle the Cilium version line supports"
    nothing_to_check = "Gateway API CRD (gateway.networking.k8s.io)"
    rationale_fact = (
        "Cilium's Gateway API controller is built against one Gateway API release: Cilium 1.19 targets "
        "v1.4.0. A newer bundle can break it: Gateway API v1.5 promoted TLSRoute to v1 and stopped "
        "serving v1alpha2 in the standard bundle, and the 1.19 operator, which still watches TLSRoute "
        "v1alpha2, then fails to start its Gateway API controller (reported on 1.19.1 and 1.19.2 with "
        "v1.5.0/v1.5.1). Each CRD of the gateway.networking.k8s.io group carries its bundle in the "
        "gateway.networking.k8s.io/bundle-version annotation."
    )
    rationale_decision = (
        "The platform pins the bundle its Cilium line supports (posture "
        "expected.gatewayApiBundleVersion, default v1.4). A newer bundle than the posture's is an "
        "error; an older one, or a CRD without the annotation, a warning; on the 1.19 line a TLSRoute "
        "CRD that no longer serves v1alpha2 is an error whatever its annotation says. Offline input "
        "without any Gateway API CRD gives not-run: the CRDs are usually installed apart from the "
        "platform manifests."
    )
    remediation = (
        "Install the Gateway API CRDs of the posture's line (v1.4.x for Cilium 1.19) with "
        "server-side apply, or upgrade Cilium to a release that supports the newer bundle and "
        "update the posture."
    )
    requires = (kinds.CRD,)
    posture_fields = ("expected.gatewayApiBundleVersion", "expected.ciliumVersionLine")
    facts = (
        Fact("Cilium 1.19 targets Gateway API v1.4.0.", "Cilium 1.19", "https://github.com/cilium/cilium/pull/41936"),
        Fact(
            "With Gateway API v1.5.x CRDs (TLSRoute v1alpha2 no longer served) the Cilium 1.19 operator "
            "fails to start its Gateway API controller (\"no matches for kind TLSRoute in version v1alpha2\").",
            "Cilium 1.19.1, 1.19.2 (later 1.19.x unconfirmed)",
            "https://github.com/cilium/cilium/issues/45139",
        ),
        Fact(
            "Gateway API CRDs carry the annotation gateway.networking.k8s.io/bundle-version: vX.Y.Z.",
            "Gateway API bundles",
            "https://github.com/kubernetes-sigs/gateway-api",
        ),
    )
    references = (
        "https://github.com/cilium/cilium/issues/44920",
        "https://github.com/cilium/cilium/issues/45139",
        "https://gateway-api.sigs.k8s.io/guides/#installing-gateway-api",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        crds = [crd for crd in snapshot.of_kind(kinds.CRD) if _is_gateway_api_crd(crd)]
        if not crds:
            if not snapshot.mode.from_cluster:
                raise NotRun(
                    f"the input holds no Gateway API CRDs ({GATEWAY_API_GROUP}); they are usually installed "
                    "apart from the platform manifests"
                )
            return  # listed: Gateway API is not installed, there is no bundle to judge
        expected_text = ctx.posture.gateway_api_bundle_version
        expected = bundle_version(expected_text)
        if expected is None:
            raise NotRun(f"the posture's gatewayApiBundleVersion {expected_text!r} is not a version")
        on_119 = version_line(ctx.posture.cilium_version_line) == (1, 19)
        for crd in crds:
            ctx.examined(crd)
            problems: list[tuple[Severity, str]] = []
            annotation = crd.annotations.get(BUNDLE_ANNOTATION)
            found = bundle_version(annotation)
            if annotation is None:
                problems.append((Severity.WARNING, f"no {BUNDLE_ANNOTATION} annotation: its bundle cannot be told"))
            elif found is None:
                problems.append((Severity.WARNING, f"{BUNDLE_ANNOTATION}={annotation!r} is not a version"))
            elif found[: len(expected)] != expected:
                if found[: len(expected)] > expected:
                    text = f"bundle {annotation}, newer than the posture's {expected_text}"
                    if on_119 and found[:2] >= BREAKING_FOR_119:
                        text += (
                            ": Cilium 1.19's operator fails to start its Gateway API controller with v1.5+ "
                            "CRDs (cilium/cilium#44920, #45139)"
                        )
                    problems.append((Severity.ERROR, text))
                else:
                    problems.append((
                        Severity.WARNING,
                        f"bundle {annotation}, older than the posture's {expected_text} "
                        f"(Cilium {ctx.posture.cilium_version_line} targets {_text(expected)})",
                    ))
            if on_119 and crd.name == TLSROUTE_CRD:
                served = crd_served_versions(crd)
                if served and "v1alpha2" not in served:
                    problems.append((
                        Severity.ERROR,
                        f"TLSRoute serves {', '.join(served)} but not v1alpha2, which the Cilium 1.19 operator "
                        "watches: its Gateway API controller does not start",
                    ))
            if problems:
                severity = max((s for s, _ in problems), key=lambda s: s.rank)
                yield self.finding(crd, "; ".join(text for _, text in problems), severity)
