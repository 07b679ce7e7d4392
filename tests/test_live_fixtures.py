"""Shared helpers for the live tests: the lead's dumps served by the test API server.

`served_items(name)` is tests/fixtures/clusters/<name>.json plus a Secret
whose payload, last-applied annotation and managedFields must never be read.
`platform_crds` are the CRDs a Cilium 1.19 cluster serves; those the dump
already holds are served from the dump. `run(...)` runs the real CLI in this process (stdout, stderr,
exit code as `main` gives them), `run_subprocess(...)` in a fresh one.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, CliResult, run_cli
from tests.kubeapi import KubeApiServer, make_crd

AS_OF = ("--as-of", "2026-11-29")
SECRET_VALUE = "hunter2-Sup3r-s3cret-value"
SECRET_B64 = "aHVudGVyMi1TdXAzci1zM2NyZXQtdmFsdWU="  # base64 of SECRET_VALUE
TOKEN = "kubeapi-test-token"  # tests.kubeapi.DEFAULT_TOKEN
GATEWAY_BUNDLE = "v1.4.1"
Json = dict[str, Any]  # a decoded JSON object: a Kubernetes object, a report


def _gateway_crd(kind: str, plural: str, scope: str = "Namespaced",
                 versions: tuple[str, ...] = ("v1",)) -> Json:
    crd = make_crd("gateway.networking.k8s.io", kind, plural, list(versions), scope=scope)
    crd["metadata"]["annotations"] = {"gateway.networking.k8s.io/bundle-version": GATEWAY_BUNDLE}
    return crd


def platform_crds(pool_stored_versions: tuple[str, ...] = ("v2alpha1", "v2")) -> list[Json]:
    """The CRDs of a Cilium 1.19 cluster with the Gateway API v1.4 bundle."""
    return [
        make_crd("cilium.io", "CiliumLoadBalancerIPPool", "ciliumloadbalancerippools", ["v2", "v2alpha1"],
                 storage="v2", scope="Cluster", stored_versions=list(pool_stored_versions)),
        make_crd("cilium.io", "CiliumL2AnnouncementPolicy", "ciliuml2announcementpolicies", ["v2alpha1"],
                 scope="Cluster", singular="ciliuml2announcementpolicy"),
        make_crd("cilium.io", "CiliumNetworkPolicy", "ciliumnetworkpolicies", ["v2"]),
        make_crd("cilium.io", "CiliumClusterwideNetworkPolicy", "ciliumclusterwidenetworkpolicies", ["v2"],
                 scope="Cluster"),
        make_crd("cilium.io", "CiliumBGPAdvertisement", "ciliumbgpadvertisements", ["v2"], scope="Cluster"),
        # A big Cilium CRD no rule reads: the reader must not fetch it.
        make_crd("cilium.io", "CiliumEndpoint", "ciliumendpoints", ["v2"]),
        _gateway_crd("GatewayClass", "gatewayclasses", "Cluster"),
        _gateway_crd("Gateway", "gateways"),
        _gateway_crd("HTTPRoute", "httproutes"),
        _gateway_crd("GRPCRoute", "grpcroutes"),
        _gateway_crd("ReferenceGrant", "referencegrants", versions=("v1beta1",)),
    ]


def leaky_secret() -> Json:
    """A Secret whose every channel of leakage is filled: data, last-applied, managedFields key names."""
    last_applied = json.dumps({"apiVersion": "v1", "kind": "Secret",
                               "metadata": {"name": "db-creds", "namespace": "mail"},
                               "stringData": {"password": SECRET_VALUE}})
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "db-creds", "namespace": "mail", "uid": "0c0c0c0c-0000-4000-8000-000000000003",
                     "resourceVersion": "109002", "creationTimestamp": "2026-06-04T09:12:31Z",
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied,
                                     "team": "mail"},
                     "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubectl",
                                        "fieldsV1": {"f:data": {"f:password-for-db-hunter2": {}}},
                                        "operation": "Update", "time": "2026-06-04T09:12:31Z"}]},
        "data": {"password": SECRET_B64},
    }


def fixture_items(name: str) -> list[Json]:
    items: list[Json] = json.loads((FIXTURES / "clusters" / f"{name}.json").read_text(encoding="utf-8"))["items"]
    return items


def served_items(name: str) -> list[Json]:
    return [*copy.deepcopy(fixture_items(name)), leaky_secret()]


def serve_items(items: list[Json], crds: list[Json], **kwargs: Any) -> KubeApiServer:
    """A server for `items` that also serves `crds`, except those the items already hold."""
    present = {item["metadata"]["name"] for item in items if item["kind"] == "CustomResourceDefinition"}
    return KubeApiServer(items, extra_crds=[c for c in crds if c["metadata"]["name"] not in present], **kwargs)


def serve(name: str = "drifted", *, crds: list[Json] | None = None, **kwargs: Any) -> KubeApiServer:
    """A started server for fixture `name` (close it, or use it as a context manager).

    The dumps hold the CRDs the rules read; the other ones a Cilium cluster
    serves are added from `platform_crds` (or from `crds`).
    """
    stored = ("v2alpha1", "v2") if name == "drifted" else ("v2",)
    return serve_items(served_items(name), platform_crds(stored) if crds is None else crds, **kwargs).start()


def kubeconfig(server: KubeApiServer, tmp_path: Path, name: str = "kubeconfig", **kwargs: Any) -> str:
    return str(server.write_kubeconfig(tmp_path / name, **kwargs))


@contextlib.contextmanager
def _environment(env: Mapping[str, str | None]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in env}
    try:
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run(*args: str, env: Mapping[str, str | None] | None = None, cwd: Path | None = None) -> CliResult:
    """The real CLI (`auditor.cli.main`) in this process: exit code, stdout, stderr."""
    from auditor.cli import main

    out, err = io.StringIO(), io.StringIO()
    base = {"NO_COLOR": "1", "AUDIT_DEBUG": None, "EXPECT_CLUSTER": None, "KUBECONFIG": None}
    previous = os.getcwd()
    with _environment({**base, **(env or {})}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if cwd is not None:
                os.chdir(cwd)
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        finally:
            os.chdir(previous)
    return CliResult(code, out.getvalue(), err.getvalue())


def run_subprocess(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                   timeout: float = 120) -> CliResult:
    return run_cli(*args, env={"KUBECONFIG": "", "EXPECT_CLUSTER": "", **(env or {})}, cwd=cwd, timeout=timeout)


def live_json(server: KubeApiServer, tmp_path: Path, *args: str,
              env: Mapping[str, str | None] | None = None) -> tuple[int, Json, CliResult]:
    result = run("live", "--kubeconfig", kubeconfig(server, tmp_path), "--format", "json", *AS_OF, *args, env=env)
    assert "Traceback" not in result.stderr, result.stderr
    try:
        report: Json = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"no JSON report (exit {result.code}): {result.stderr}")
    validate_report(report)
    return result.code, report, result


def validate_report(report: Json) -> None:
    from auditor.config_files import load_schema

    jsonschema: Any = importlib.import_module("jsonschema")  # no stubs installed

    jsonschema.Draft202012Validator(load_schema("report.schema.json"),
                                    format_checker=jsonschema.FormatChecker()).validate(report)


def comparable(report: Json) -> Json:
    """A JSON report without what legitimately differs between a live audit and its snapshot:
    the target, the date, and where objects were read (`cluster:CONTEXT` or `FILE:LINE`, also
    when a message quotes it, e.g. the cilium-config a setting came from)."""
    import re

    out = copy.deepcopy(report)
    out.pop("target", None)
    out.pop("asOf", None)
    where = {f.get("file") for f in report["findings"]} - {None}
    pattern = re.compile("|".join(re.escape(w) + r"(?::\d+)?" for w in sorted(where))) if where else None
    for finding in out["findings"]:
        finding.pop("file", None)
        finding.pop("line", None)
        if pattern is not None:
            finding["message"] = pattern.sub("<source>", finding["message"])
    # The exposure model's ways in name where each piece was read, at every level.
    stack: list = list(out.get("exposures", []))
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            node.pop("file", None)
            node.pop("line", None)
            for key, value in node.items():
                if isinstance(value, str) and pattern is not None:
                    node[key] = pattern.sub("<source>", value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                if isinstance(value, str) and pattern is not None:
                    node[index] = pattern.sub("<source>", value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
    return out


def statuses(report: Json) -> dict[str, str]:
    return {rule["id"]: rule["status"] for rule in report["rules"]}


def python() -> str:
    return sys.executable
