"""Least privilege: the RESOURCES table, docs/rbac.yaml, and audits run with exactly that role."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from auditor import kinds, registry
from auditor.sources.live import rbac
from tests.conftest import ROOT
from tests.kubeapi import BUILTIN_RESOURCES
from tests.test_live_fixtures import AS_OF, kubeconfig, platform_crds, run, serve, statuses

HINT = "regenerate with: python -m auditor.sources.live.rbac --write"


def _rules(plugins: bool = True) -> list[rbac.ReadsKinds]:
    return list(registry.load_rules(plugins=plugins).rules)


def _generated_role() -> dict[str, Any]:
    docs = list(yaml.safe_load_all((ROOT / "docs" / "rbac.yaml").read_text(encoding="utf-8")))
    role: dict[str, Any] = next(doc for doc in docs if doc["kind"] == "ClusterRole")
    return role


def test_every_kind_a_rule_reads_has_a_resource() -> None:
    missing = sorted({gk for rule in _rules() for gk in rule.kinds_read()} - set(kinds.RESOURCES))
    assert not missing, f"add these to auditor.kinds.RESOURCES: {missing}"


def test_resources_table_is_consistent() -> None:
    by_kind = {(r.group, r.kind): r.plural for r in BUILTIN_RESOURCES}
    by_crd = {(c["spec"]["group"], c["spec"]["names"]["kind"]): c["spec"]["names"]["plural"] for c in platform_crds()}
    for gk, (group, plural) in kinds.RESOURCES.items():
        assert kinds.split_gk(gk)[0] == group, gk
        assert plural == plural.lower() and "." not in plural, gk
        known = by_kind.get((group, kinds.split_gk(gk)[1])) or by_crd.get((group, kinds.split_gk(gk)[1]))
        if known is not None:
            assert plural == known, gk


def test_docs_rbac_yaml_is_fresh() -> None:
    expected = rbac.render(rbac.builtin_rules(), extra=kinds.TRACE_KINDS)
    assert (ROOT / "docs" / "rbac.yaml").read_text(encoding="utf-8") == expected, HINT


def test_the_role_is_read_only_and_exact() -> None:
    role = _generated_role()
    granted: set[tuple[str, str, str]] = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}  # no resourceNames, no nonResourceURLs
        assert set(rule["verbs"]) <= {"get", "list"} and "*" not in rule["resources"] + rule["apiGroups"]
        assert not any("/" in resource for resource in rule["resources"])  # no subresources
        granted.update((group, resource, verb) for group in rule["apiGroups"] for resource in rule["resources"]
                       for verb in rule["verbs"])
    read = {gk for rule in _rules(plugins=False) for gk in rule.kinds_read()} | set(kinds.TRACE_KINDS)
    wanted = {(*kinds.RESOURCES[gk], "get" if gk == kinds.CRD else "list") for gk in read}
    assert granted == wanted
    docs = list(yaml.safe_load_all((ROOT / "docs" / "rbac.yaml").read_text(encoding="utf-8")))
    assert [d["kind"] for d in docs] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    binding = docs[2]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": docs[0]["metadata"]["name"],
                                    "namespace": docs[0]["metadata"]["namespace"]}]


def test_the_full_audit_runs_with_the_generated_role_and_nothing_more(tmp_path: Path) -> None:
    with serve("drifted", cluster_role=_generated_role()) as server:
        live = run("live", "--kubeconfig", kubeconfig(server, tmp_path), "--format", "json", *AS_OF)
        snapshot = run("snapshot", "-o", str(tmp_path / "dump.json"), "--kubeconfig", kubeconfig(server, tmp_path))
        assert {r.status for r in server.requests} == {200}  # never a 403
    report = json.loads(live.stdout)
    assert live.code in (0, 1) and report["summary"]["complete"] is True, live.stdout
    assert "error" not in statuses(report).values()
    assert snapshot.code == 0, snapshot.stderr


@pytest.mark.parametrize("resource, kind", [
    ("services", "Service"),
    ("secrets", "Secret"),
    ("customresourcedefinitions", "CustomResourceDefinition.apiextensions.k8s.io"),
    ("ciliumloadbalancerippools", "CiliumLoadBalancerIPPool.cilium.io"),
])
def test_one_resource_less_exits_3_naming_it(tmp_path: Path, resource: str, kind: str) -> None:
    role = _generated_role()
    for rule in role["rules"]:
        rule["resources"] = [r for r in rule["resources"] if r != resource]
    with serve("drifted", cluster_role=role) as server:
        result = run("live", "--kubeconfig", kubeconfig(server, tmp_path), "--format", "json", *AS_OF)
    assert result.code == 3
    report = json.loads(result.stdout)
    coverage = {c["kind"]: c for c in report["coverage"]}
    assert coverage[kind]["state"] == "failed"
    assert "HTTP 403 Forbidden" in coverage[kind]["reason"] and resource in coverage[kind]["reason"]
    errors = [r for r in report["rules"] if r["status"] == "error"]
    assert errors and all(resource in r["reason"] and "403" in r["reason"] for r in errors)
    readers = {rule.id for rule in _rules() if kind in rule.kinds_read()}
    assert {r["id"] for r in errors} == readers


def test_audit_rbac_command() -> None:
    full = run("rbac")
    assert full.code == 0 and full.stdout == rbac.render(rbac.builtin_rules(), command="audit rbac",
                                                         extra=kinds.TRACE_KINDS)
    assert "- endpointslices" in full.stdout and "- leases" in full.stdout  # what `audit trace --live` reads
    narrow = run("rbac", "--skip-rule", "gateway-https-listener-tls")
    assert narrow.code == 0 and "secrets" in full.stdout and "- secrets" not in narrow.stdout
    one = yaml.safe_load_all(run("rbac", "--rule", "lb-pool-v2alpha1", "--namespace", "ops").stdout)
    sa, role, _ = list(one)
    assert sa["metadata"]["namespace"] == "ops"
    assert role["rules"] == [
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get"]},
        {"apiGroups": ["cilium.io"], "resources": ["ciliumloadbalancerippools"], "verbs": ["list"]},
    ]
