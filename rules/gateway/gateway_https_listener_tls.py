"""gateway-https-listener-tls: HTTPS listeners must terminate TLS with a certificate that exists."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from auditor.api import (
    CoverageState,
    Fact,
    Finding,
    K8sObject,
    NotRun,
    Rule,
    RuleContext,
    Severity,
    Snapshot,
    as_list,
    as_str,
    is_placeholder,
    kinds,
)
from auditor_rules.gateway._gateway_api import cert_manager_issuer, listener_label, listeners

TERMINATE = "Terminate"


def _certificate_secrets(snapshot: Snapshot) -> set[tuple[str | None, str]]:
    """(namespace, secretName) of every cert-manager Certificate: Secrets that will exist."""
    out = set()
    for certificate in snapshot.of_kind(kinds.CERT_MANAGER_CERTIFICATE):
        name = certificate.spec.get("secretName")
        if isinstance(name, str) and name:
            out.add((certificate.namespace, name))
    return out


def _secret_listing_authoritative(snapshot: Snapshot) -> bool:
    """Whether a Secret absent from the input is absent from the cluster.

    Only a live read (or a snapshot of one) lists Secrets. Offline manifests
    keep them out of Git on purpose (sealed/SOPS/external secrets, `kubectl
    create secret`), so the presence of some Secrets says nothing of the others.
    """
    coverage = snapshot.coverage(kinds.SECRET).state
    return coverage in (CoverageState.LISTED, CoverageState.NOT_SERVED) and snapshot.mode.from_cluster


class GatewayHttpsListenerTls(Rule):
    id = "gateway-https-listener-tls"
    severity = Severity.ERROR
    title = "HTTPS Gateway listener without TLS termination or without its certificate"
    nothing_to_check = "HTTPS or TLS listener"
    rationale_fact = (
        "In Gateway API an HTTPS listener requires a tls block; mode Terminate (the default) requires "
        "at least one certificateRef, and Passthrough is meant for TLS listeners, not HTTPS. A listener "
        "whose certificate Secret does not exist is invalid (ResolvedRefs False, reason "
        "InvalidCertificateRef). cert-manager's gateway-shim creates one Certificate per referenced "
        "Secret for a Gateway annotated cert-manager.io/cluster-issuer or cert-manager.io/issuer, for "
        "listeners with a hostname, mode Terminate and a same-namespace Secret ref; a cert-manager "
        "Certificate with that secretName creates it too."
    )
    rationale_decision = (
        "TLS ends at the edge Gateway with certificates from the platform's internal CA through "
        "cert-manager (ADR 0003/0021): an HTTPS listener without termination, or whose Secret nothing "
        "creates, is an error. Secrets are read as metadata only and are authoritative only from a live "
        "read or snapshot: offline, a Secret absent from Git is unverified, and the verdict is not-run "
        "when that is all that is left to judge."
    )
    remediation = (
        "Give the HTTPS listener tls.mode Terminate and a certificateRefs entry, and annotate "
        "the Gateway with cert-manager.io/cluster-issuer (listener hostname set) or create the "
        "referenced Secret."
    )
    requires = (kinds.GATEWAY,)
    uses = (kinds.SECRET, kinds.CERT_MANAGER_CERTIFICATE)
    facts = (
        Fact(
            "The tls field is required for HTTPS and TLS listeners; mode defaults to Terminate, which "
            "requires at least one certificateRef; Passthrough does not terminate TLS.",
            "Gateway API v1 (v1.0+)",
            "https://gateway-api.sigs.k8s.io/reference/spec/#gatewaytlsconfig",
        ),
        Fact(
            "cert-manager's gateway-shim creates a Certificate named after each referenced Secret for "
            "Gateways annotated cert-manager.io/issuer or cert-manager.io/cluster-issuer, skipping "
            "listeners without hostname, with mode Passthrough, or with a cross-namespace or non-Secret ref.",
            "cert-manager 1.15+ (Gateway support beta)",
            "https://cert-manager.io/docs/usage/gateway/",
        ),
    )
    references = (
        "https://gateway-api.sigs.k8s.io/guides/tls/",
        "https://cert-manager.io/docs/usage/gateway/",
    )

    def check(self, snapshot: Snapshot, ctx: RuleContext) -> Iterator[Finding]:
        checker = ListenerTlsChecker(snapshot)
        findings: list[Finding] = []
        unverified: list[str] = []
        verified = 0  # HTTPS listeners judged in full
        for gateway in snapshot.of_kind(kinds.GATEWAY):
            ctx.examined(gateway)
            for index, listener in listeners(gateway):
                verdict = checker.check(gateway, index, listener)
                if verdict is None:
                    continue
                findings += [self.finding(gateway, f"listener {verdict.label}: {text}") for text in verdict.problems]
                unverified += [f"{gateway.ref.display} listener {verdict.label}: {text}" for text in verdict.unverified]
                verified += not verdict.unverified
        if unverified and not findings and not verified:
            raise NotRun(
                "Secrets are not listed by offline input, so these certificate Secrets cannot be checked "
                f"(no cert-manager annotation or Certificate creates them): {'; '.join(unverified[:5])}"
                + (f"; and {len(unverified) - 5} more" if len(unverified) > 5 else "")
            )
        for text in unverified:  # the verdict is on the other listeners
            ctx.did_not_see(f"the certificate Secret of {text.split(': ', 1)[0]}",
                            f"{text.split(': ', 1)[1]}; Secrets are not listed by offline input")
        yield from findings


@dataclass(frozen=True)
class ListenerTls:
    """What the rule finds about one HTTPS listener (`audit trace` shows it as the certificate hop)."""

    label: str  # `websecure (HTTPS:443)`
    problems: tuple[str, ...]  # verified: each is a finding
    unverified: tuple[str, ...]  # what the input cannot confirm (a Secret offline input does not list)
    secrets: tuple[str, ...]  # `namespace/name` of every certificate Secret it names


class ListenerTlsChecker:
    """The rule's judgement of HTTPS listeners, for one snapshot (the rule and `audit trace` share it)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.authoritative = _secret_listing_authoritative(snapshot)
        self.issued = _certificate_secrets(snapshot)

    def check(self, gateway: K8sObject, index: int, listener: dict[str, Any]) -> ListenerTls | None:
        """The verdict on `listener` (position `index` of `gateway`), None when it is not HTTPS."""
        if as_str(listener.get("protocol")).upper() != "HTTPS":
            return None
        label = listener_label(listener, index)
        problem, refs = _listener_problem(listener)
        if problem:
            return ListenerTls(label, (problem,), (), ())
        issuer = cert_manager_issuer(gateway)
        problems: list[str] = []
        unverified: list[str] = []
        secrets = []
        for ref in refs:
            namespace = as_str(ref.get("namespace")) or gateway.namespace
            secrets.append(f"{namespace}/{as_str(ref.get('name'))}" if namespace else as_str(ref.get("name")))
            missing = _missing_secret(self.snapshot, gateway, listener, ref, issuer, self.issued, self.authoritative)
            if missing is not None:
                (problems if missing[1] else unverified).append(missing[0])
        return ListenerTls(label, tuple(problems), tuple(unverified), tuple(secrets))


def _listener_problem(listener: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    tls = listener.get("tls")
    if not isinstance(tls, dict):
        return "no tls block: an HTTPS listener must terminate TLS (tls.mode Terminate with certificateRefs)", []
    mode = tls.get("mode", TERMINATE)
    if mode != TERMINATE:
        return f"tls.mode is {mode!r}: an HTTPS listener terminates TLS at the Gateway (mode Terminate)", []
    refs = [ref for ref in as_list(tls.get("certificateRefs")) if isinstance(ref, dict)]
    if not refs:
        return "tls.mode Terminate without certificateRefs: the listener has no certificate to serve", []
    return None, refs


def _missing_secret(
    snapshot: Snapshot,
    gateway: K8sObject,
    listener: dict[str, Any],
    ref: dict[str, Any],
    issuer: str | None,
    issued: set[tuple[str | None, str]],
    authoritative: bool,
) -> tuple[str, bool] | None:
    """Why the referenced Secret may be missing, and whether that is verified; None when it is fine."""
    kind = as_str(ref.get("kind"), "Secret") or "Secret"
    group = as_str(ref.get("group"), "")
    if kind != "Secret" or group not in ("", "core"):
        return None  # implementation-specific certificate kinds: not judged here
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        return "a certificateRef has no name", True
    namespace = as_str(ref.get("namespace")) or gateway.namespace
    where = f"{namespace}/{name}" if namespace else name
    if snapshot.get(kinds.SECRET, namespace, name) is not None:
        return None
    if (namespace, name) in issued:
        return None
    if issuer is not None:
        skipped = []
        if not as_str(listener.get("hostname")):
            skipped.append("the listener has no hostname")
        if namespace != gateway.namespace:
            skipped.append("the Secret is in another namespace")
        if not skipped:
            return None  # cert-manager's gateway-shim creates it
        text = f"Secret {where} is not present and {issuer} will not create it ({'; '.join(skipped)})"
    else:
        text = f"Secret {where} is not present and no cert-manager annotation or Certificate creates it"
    if is_placeholder(name):
        # A Flux substitution: the real name is not in the input.
        return f"Secret name {where} is a substitution the input does not resolve", False
    return text, authoritative
