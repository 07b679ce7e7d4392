"""The least-privilege RBAC `audit live` needs, generated from the rules.

    python -m auditor.sources.live.rbac            # print it
    python -m auditor.sources.live.rbac --write    # regenerate docs/rbac.yaml
    audit rbac [--rule ID] [--skip-rule ID]        # the same, for the rules you run

The ClusterRole grants `list` on exactly the resources of the kinds the rules
read (`Rule.kinds_read()`, mapped by the static `auditor.kinds.RESOURCES`
table) and `get` on CustomResourceDefinitions, which the reader fetches by
name. The role for every rule also lists what `audit trace --live` reads
besides (`kinds.TRACE_KINDS`: EndpointSlices and Leases). Nothing else: no
watch, no write, no subresource. Discovery and /version need no grant (every authenticated user has system:discovery and
system:public-info-viewer).

This module imports neither the kubernetes client nor anything that talks
to a cluster.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from auditor import kinds
from auditor.rule import Rule, kinds_read_by

DEFAULT_NAME = "cilium-exposure-auditor"
DEFAULT_NAMESPACE = "cilium-exposure-auditor"
DOC_PATH = Path(__file__).resolve().parents[3] / "docs" / "rbac.yaml"
# Kinds read with `get` by name rather than listed (reader.py).
GET_BY_NAME = frozenset({kinds.CRD})


class UnknownKinds(ValueError):
    pass


def kinds_read(rules: Iterable[Rule], extra: Iterable[str] = ()) -> list[str]:
    return sorted({*kinds_read_by(rules), *extra})


def policy_rules(rules: Iterable[Rule], extra: Iterable[str] = ()) -> list[dict[str, Any]]:
    """ClusterRole rules: one per (API group, verbs), resources sorted; `extra`: kinds read besides the rules'."""
    rules = list(rules)
    gks = kinds_read(rules, extra)
    unknown = [gk for gk in gks if gk not in kinds.RESOURCES]
    if unknown:
        raise UnknownKinds(f"no resource known for {', '.join(unknown)}: add it to auditor.kinds.RESOURCES")
    grouped: dict[tuple[str, str], set[str]] = {}
    for gk in gks:
        group, plural = kinds.RESOURCES[gk]
        verb = "get" if gk in GET_BY_NAME else "list"
        grouped.setdefault((group, verb), set()).add(plural)
    return [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": [verb]}
        for (group, verb), plurals in sorted(grouped.items())
    ]


def manifests(rules: Iterable[Rule], name: str = DEFAULT_NAME,
              namespace: str = DEFAULT_NAMESPACE, extra: Iterable[str] = ()) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": DEFAULT_NAME}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": name, "namespace": namespace, "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": name, "labels": labels}, "rules": policy_rules(rules, extra)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
    ]


def cluster_role(rules: Iterable[Rule], name: str = DEFAULT_NAME, extra: Iterable[str] = ()) -> dict[str, Any]:
    return manifests(rules, name, extra=extra)[1]


def render(rules: Iterable[Rule], name: str = DEFAULT_NAME, namespace: str = DEFAULT_NAMESPACE,
           command: str = "python -m auditor.sources.live.rbac --write", extra: Iterable[str] = ()) -> str:
    """The manifests as YAML; `extra`: kinds read besides the rules' (`kinds.TRACE_KINDS` for `audit trace`)."""
    rules = list(rules)
    extra = tuple(extra)
    secret_readers = sorted(rule.id for rule in rules if kinds.SECRET in rule.kinds_read())
    header = [
        "# Least-privilege RBAC for cilium-exposure-auditor (`audit live`, `audit snapshot`).",
        f"# Generated from the rules' declared kinds by `{command}`",
        "# (or `audit rbac`); do not edit by hand (tests/test_live_rbac.py checks it is fresh).",
        "#",
        "# Read-only: `list` on exactly the resources the rules read, `get` on",
        "# CustomResourceDefinitions (read by name, see docs/live.md). Discovery and /version",
        "# need no grant (system:discovery, system:public-info-viewer).",
    ]
    if extra:
        header += [
            "#",
            "# `audit trace --live` also lists " + ", ".join(kinds.RESOURCES[gk][1] for gk in extra) + " (which pods",
            "# back a Service, which node holds its L2 announcement lease); `audit rbac --rule ID` leaves",
            "# them out.",
        ]
    if secret_readers:
        header += [
            "#",
            "# Secrets: the auditor lists them metadata-only (PartialObjectMetadataList) and never",
            "# receives their payload, but RBAC cannot say \"metadata only\": this grant would let",
            "# the token read Secret data. Only " + ", ".join(secret_readers) + " read(s) Secrets; to",
            "# withhold the grant, generate the role with `audit rbac --skip-rule ID` and run",
            "# `audit live --skip-rule ID` alike.",
        ]
    docs = [yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=100)
            for doc in manifests(rules, name, namespace, extra)]
    return "\n".join(header) + "\n---\n" + "---\n".join(docs)


def builtin_rules() -> list[Rule]:
    from auditor import registry

    return list(registry.load_rules(plugins=False).rules)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Print (or --write to docs/rbac.yaml) the auditor's least-privilege RBAC.")
    parser.add_argument("--write", action="store_true", help=f"write {DOC_PATH}")
    args = parser.parse_args(argv)
    text = render(builtin_rules(), extra=kinds.TRACE_KINDS)
    if args.write:
        DOC_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {DOC_PATH}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
