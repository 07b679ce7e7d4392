"""Test PKI and kubeconfig files.

A fresh CA and a serving certificate (SAN 127.0.0.1, ::1 and localhost) are
made per server with the `cryptography` package.  ECDSA P-256 keeps key
generation well under a millisecond; Go's crypto/tls (kubectl) and OpenSSL
(the python client) both verify it.  The certificates carry the extensions Go
insists on: a CA with basicConstraints CA:TRUE + keyCertSign, and a leaf with
serverAuth EKU and a SAN (Go ignores the CN).
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class ServerPki:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_pki(hosts: Sequence[str] = ("127.0.0.1", "::1", "localhost")) -> ServerPki:
    now = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)  # tolerate clock skew
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kubeapi-test-ca")).issuer_name(_name("kubeapi-test-ca"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver")).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False,
                                     key_cert_sign=False, crl_sign=False,
                                     content_commitment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False,
                                     decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return ServerPki(
        ca_pem=ca_cert.public_bytes(pem),
        cert_pem=cert.public_bytes(pem),
        key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()),
    )


@dataclass(frozen=True)
class KubeconfigContext:
    """One context of a kubeconfig: a cluster (server URL + CA) and a
    bearer-token user.  Contexts that share a server share its cluster entry."""

    name: str
    server: str
    ca_pem: bytes
    token: str
    namespace: str | None = None
    user_name: str | None = None  # kubeconfig user entry name; default: "<context>-user"


def write_kubeconfig(path: str | os.PathLike[str], contexts: Sequence[KubeconfigContext],
                     current_context: str | None = None) -> Path:
    """Write a kubeconfig with `certificate-authority-data` clusters and
    `token` users; the first context is current unless told otherwise."""
    if not contexts:
        raise ValueError("a kubeconfig needs at least one context")
    clusters: dict[tuple[str, bytes], str] = {}
    cluster_entries, user_entries, context_entries = [], [], []
    seen_users: set[str] = set()
    for ctx in contexts:
        key = (ctx.server, ctx.ca_pem)
        if key not in clusters:
            cname = "kubeapi-test" if not clusters else f"kubeapi-test-{len(clusters)}"
            clusters[key] = cname
            cluster_entries.append({"name": cname, "cluster": {
                "server": ctx.server,
                "certificate-authority-data": base64.b64encode(ctx.ca_pem).decode(),
            }})
        uname = ctx.user_name or f"{ctx.name}-user"
        if uname not in seen_users:
            seen_users.add(uname)
            user_entries.append({"name": uname, "user": {"token": ctx.token}})
        entry: dict[str, Any] = {"cluster": clusters[key], "user": uname}
        if ctx.namespace:
            entry["namespace"] = ctx.namespace
        context_entries.append({"name": ctx.name, "context": entry})
    doc = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": cluster_entries, "users": user_entries, "contexts": context_entries,
        "current-context": current_context or contexts[0].name,
    }
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    os.chmod(out, 0o600)  # kubectl warns about group/world-readable configs
    return out
