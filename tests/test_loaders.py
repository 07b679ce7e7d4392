"""Offline loaders: where each object came from, what is skipped, what is refused."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from auditor.errors import InputError
from auditor.parsing.json_docs import load_json
from auditor.parsing.yaml_docs import YAMLInputError, iter_documents
from auditor.snapshot import CoverageState
from auditor.sources.files import read_paths


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_kubectl_json_list_keeps_item_lines(tmp_path: Path) -> None:
    items = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}", "namespace": "ns"}, "spec": {}}
             for i in range(3)]
    text = json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}},
                      indent=4, sort_keys=True)
    snapshot = read_paths([_write(tmp_path, "dump.json", text)])
    lines = text.splitlines()
    for obj in snapshot:
        assert obj.source is not None and obj.source.line is not None
        line = obj.source.line
        assert lines[line - 1] == "        {"
        assert f'"name": "{obj.name}"' in "\n".join(lines[line - 1: line + 10])


def test_compact_json_and_nested_strings_do_not_confuse_item_lines() -> None:
    text = '{"kind":"List","apiVersion":"v1","metadata":{"note":"items: [ { } ]"},"items":[{"a":"}\\n{"},\n{"b":1}]}'
    document = load_json(text)
    assert document.item_lines == [1, 2]
    assert document.data["items"] == [{"a": "}\n{"}, {"b": 1}]


def test_yaml_documents_and_list_items_keep_lines() -> None:
    text = "# header\n---\napiVersion: v1\nkind: List\nitems:\n- kind: A\n  x: 1\n-   kind: B\n---\n---\nkind: C\n"
    documents = list(iter_documents(text))
    assert [d.line for d in documents] == [3, 11]
    assert documents[0].item_lines == [6, 8]


def test_typed_api_list_items_get_kind_and_api_version(tmp_path: Path) -> None:
    text = json.dumps({"kind": "ServiceList", "apiVersion": "v1", "metadata": {"resourceVersion": "42"},
                       "items": [{"metadata": {"name": "web", "namespace": "shop"}, "spec": {"type": "NodePort"}}]})
    (service,) = read_paths([_write(tmp_path, "raw.json", text)])
    assert (service.gk, service.api_version, service.namespace) == ("Service", "v1", "shop")


def test_non_kubernetes_documents_are_ignored_with_reasons(tmp_path: Path) -> None:
    path = _write(tmp_path, "mixed.yaml", (
        "replicaCount: 2\nservice:\n  type: LoadBalancer\n  externalTrafficPolicy: Local\n"  # Helm values
        "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n"
        "---\n- just\n- a list\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: real}\nspec: {type: ClusterIP}\n"
    ))
    snapshot = read_paths([path])
    assert [obj.name for obj in snapshot] == ["real"]
    assert [(d.source.line, d.reason) for d in snapshot.ignored] == [
        (1, "not a Kubernetes object (no apiVersion)"),
        (6, "not a Kubernetes object (no metadata)"),
        (10, "not a Kubernetes object (not a mapping)"),
    ]


def test_manifest_without_namespace_keeps_none(tmp_path: Path) -> None:
    (service,) = read_paths([_write(tmp_path, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")])
    assert service.namespace is None
    assert service.ref.display == "Service/s"


def test_moved_api_groups_are_indexed_under_todays_group(tmp_path: Path) -> None:
    (deployment,) = read_paths([_write(tmp_path, "old.yaml", (
        "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: d, namespace: n}\n"))])
    assert deployment.gk == "Deployment.apps"


def test_yaml_scalars_stay_as_kubernetes_reads_them(tmp_path: Path) -> None:
    # Issue 9.2 changed `blob`: kubectl decodes !!binary and sends the decoded text ("hello"), as the auditor now does.
    (obj,) = read_paths([_write(tmp_path, "cm.yaml", (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\n"
        "data: {date: 2026-01-31, stamp: 2026-01-31T10:00:00Z, blob: !!binary aGVsbG8=}\n"))])
    assert obj.data == {"date": "2026-01-31", "stamp": "2026-01-31T10:00:00Z", "blob": "hello"}


def test_merge_keys_may_be_overridden_but_explicit_duplicates_are_refused() -> None:
    merged = list(iter_documents("base: &b {a: 1, b: 2}\nderived:\n  <<: *b\n  b: 3\n"))
    assert merged[0].data["derived"] == {"a": 1, "b": 3}
    with pytest.raises(YAMLInputError, match=r"duplicate key 'type' \(first at line 3\)") as raised:
        list(iter_documents("kind: Service\nspec:\n  type: ClusterIP\n  type: LoadBalancer\n"))
    assert raised.value.line == 4


@pytest.mark.parametrize("name, text, message", [
    ("dup.json", '{"kind": "Service", "kind": "Pod"}', r"dup.json:1: duplicate key 'kind'"),
    # A manifest (issue 9.2: a duplicate key in a file that is not a manifest skips that document instead).
    ("dup.yaml", "apiVersion: v1\nkind: Service\nspec: {a: 1}\nmetadata: {name: x}\nspec: {a: 2}\n",
     r"dup.yaml:5: duplicate key 'spec' \(first at line 3\)"),
    ("bad.json", '{"items": [1, 2,]}', r"bad.json:1: invalid JSON: Expecting value"),
    ("bad.yaml", "a: [1, 2\nb: 3\n",
     r"bad.yaml:2: invalid YAML: while parsing a flow sequence did not find expected ',' or ']'"),
    ("tabs.yaml", "a:\n\t- b\n", r"tabs.yaml:2: invalid YAML"),
    ("empty.yaml", "\n# nothing\n", r"empty.yaml: empty \(no YAML or JSON document\)"),
    ("trailing.json", '{"a": 1} {"b": 2}', r"trailing.json:1: invalid JSON: extra data after the document"),
])
def test_malformed_files_are_one_line_input_errors(tmp_path: Path, name: str, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as raised:
        read_paths([_write(tmp_path, name, text)])
    assert "\n" not in raised.value.message


def test_list_with_non_object_items_is_read_around_them(tmp_path: Path) -> None:
    text = json.dumps({"kind": "List", "apiVersion": "v1", "items": [
        42, "text", None, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ok", "namespace": "n"}},
    ]}, indent=2)
    snapshot = read_paths([_write(tmp_path, "list.json", text)])
    assert [obj.name for obj in snapshot] == ["ok"]
    assert [d.reason for d in snapshot.ignored] == ["list item is not a Kubernetes object (not a mapping)"] * 3


def test_input_without_any_object_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no Kubernetes objects found \(1 documents ignored"):
        read_paths([_write(tmp_path, "values.yaml", "replicaCount: 1\n")])


def test_folder_walk_is_sorted_and_skips_hidden_folders_and_chart_templates(tmp_path: Path) -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: n}}\n"
    _write(tmp_path, "repo/b/svc.yaml", service.format(name="b"))
    _write(tmp_path, "repo/a/svc.yml", service.format(name="a"))
    _write(tmp_path, "repo/a/z.json",
           json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "z", "namespace": "n"}}))
    _write(tmp_path, "repo/.github/workflows/ci.yaml", "{{ broken")
    _write(tmp_path, "repo/chart/Chart.yaml", "apiVersion: v2\nname: chart\nversion: 1.0.0\n")
    _write(tmp_path, "repo/chart/templates/svc.yaml",
           "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\n")
    _write(tmp_path, "repo/README.md", "not read")
    snapshot = read_paths([str(tmp_path / "repo")])
    assert [obj.name for obj in snapshot] == ["a", "z", "b"]
    assert any("Helm chart templates" in d.reason for d in snapshot.ignored)


def test_stdin_once_only() -> None:
    text = b"apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"
    (namespace,) = read_paths(["-"], stdin=io.BytesIO(text))
    assert namespace.source is not None and namespace.source.path == "<stdin>"
    with pytest.raises(InputError, match="only once"):
        read_paths(["-", "-"], stdin=io.BytesIO(text))


def test_offline_coverage_present_versus_missing(tmp_path: Path) -> None:
    snapshot = read_paths([_write(tmp_path, "s.yaml",
                                  "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\n")])
    assert snapshot.coverage("Service").state is CoverageState.PRESENT
    missing = snapshot.coverage("NetworkPolicy.networking.k8s.io")
    assert missing.state is CoverageState.MISSING and "holds no NetworkPolicy" in missing.reason


def test_snapshot_header_carries_coverage_and_target(tmp_path: Path) -> None:
    document: dict[str, Any] = {
        "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
        "auditSnapshot": {
            "formatVersion": 1, "context": "bench", "server": "https://10.0.0.10:6443", "serverVersion": "v1.32.3",
            "fingerprint": "3f2a9c0d1b7e", "takenAt": "2026-11-29T10:00:00Z",
            "kinds": {"Service": {"state": "listed", "count": 1},
                      "CiliumL2AnnouncementPolicy.cilium.io": {"state": "not-served"},
                      "NetworkPolicy.networking.k8s.io": {"state": "failed", "reason": "403 Forbidden"}},
            "servedVersions": {"CiliumLoadBalancerIPPool.cilium.io": ["v2", "v2alpha1"]},
        },
        "items": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"}}],
    }
    snapshot = read_paths([_write(tmp_path, "snap.json", json.dumps(document))])
    assert snapshot.mode == "snapshot" and snapshot.cluster is not None
    assert snapshot.cluster.fingerprint == "3f2a9c0d1b7e"
    assert snapshot.coverage("CiliumL2AnnouncementPolicy.cilium.io").state is CoverageState.NOT_SERVED
    assert snapshot.coverage("NetworkPolicy.networking.k8s.io").reason == "403 Forbidden"
    assert snapshot.coverage("Pod").state is CoverageState.MISSING
    with pytest.raises(InputError, match="on its own"):
        read_paths([str(tmp_path / "snap.json"),
                    _write(tmp_path, "more.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")])
    document["auditSnapshot"]["formatVersion"] = 9
    with pytest.raises(InputError, match="unsupported formatVersion 9"):
        read_paths([_write(tmp_path, "snap9.json", json.dumps(document))])


def test_a_kind_that_is_not_a_kind_name_is_not_guessed_at(tmp_path: Path) -> None:
    """`kind: DaemonSet.apps` must not be indexed as the apps group's DaemonSet."""
    snapshot = read_paths([_write(tmp_path, "odd.yaml", (
        "apiVersion: v1\nkind: DaemonSet.apps\nmetadata: {name: kube-proxy, namespace: kube-system}\n---\n"
        "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\n"))])
    assert [obj.gk for obj in snapshot] == ["Service"]
    assert snapshot.ignored[0].reason == "not a Kubernetes object (kind 'DaemonSet.apps' is not a kind name)"


# --- issue 10.12: a snapshot is a snapshot only as the input itself ----------------------------------

def _snapshot_document() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
        "auditSnapshot": {"formatVersion": 1, "context": "prod", "fingerprint": "3f2a9c0d1b7e",
                          "kinds": {"NetworkPolicy.networking.k8s.io": {"state": "listed", "count": 0}}},
        "items": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"}}],
    }


def test_a_snapshot_inside_a_folder_is_an_ordinary_list(tmp_path: Path) -> None:
    _write(tmp_path, "repo/snap.json", json.dumps(_snapshot_document()))
    _write(tmp_path, "repo/more.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
    snapshot = read_paths([str(tmp_path / "repo")])
    assert snapshot.mode == "offline" and snapshot.cluster is None
    assert sorted(obj.name for obj in snapshot) == ["s", "shop"]
    # The folder says nothing of what the cluster listed: a missing kind stays missing.
    assert snapshot.coverage("NetworkPolicy.networking.k8s.io").state is CoverageState.MISSING
    # Not even a malformed header can stop the folder: it is not read as one.
    document = _snapshot_document()
    document["auditSnapshot"]["formatVersion"] = 9
    _write(tmp_path, "repo/snap.json", json.dumps(document))
    assert len(read_paths([str(tmp_path / "repo")])) == 2


def test_a_snapshot_named_as_the_input_is_still_one(tmp_path: Path) -> None:
    snapshot = read_paths([_write(tmp_path, "snap.json", json.dumps(_snapshot_document()))])
    assert snapshot.mode == "snapshot" and snapshot.cluster is not None
    assert snapshot.cluster.fingerprint == "3f2a9c0d1b7e"
    assert snapshot.coverage("NetworkPolicy.networking.k8s.io").state is CoverageState.LISTED


# --- issue 10.13: generateName --------------------------------------------------------------------------

GENERATED = ("apiVersion: v1\nkind: Service\nmetadata: {generateName: web-, namespace: shop}\n"
             "spec: {type: LoadBalancer, ports: [{port: 80}]}\n")


def test_generate_name_objects_are_audited_under_a_stable_name(tmp_path: Path) -> None:
    """`kubectl create -f` completes the name: the LoadBalancer exists, so it is audited."""
    (service,) = read_paths([_write(tmp_path, "a/svc.yaml", GENERATED)])
    assert service.name.startswith("web-<generated-") and service.name.endswith(">") and len(service.name) == 24
    assert service.spec["type"] == "LoadBalancer" and service.metadata["name"] == service.name
    again = read_paths([_write(tmp_path, "b/copy.yaml", "# moved\n" + GENERATED)])
    assert [obj.name for obj in again] == [service.name]  # the same object, wherever it is written
    other = read_paths([_write(tmp_path, "c/other.yaml", GENERATED.replace("port: 80", "port: 443"))])
    assert [obj.name for obj in other] != [service.name]  # two such objects are told apart


def test_generate_name_load_balancer_is_a_finding(tmp_path: Path) -> None:
    from tests.conftest import AS_OF, run_cli

    path = _write(tmp_path, "svc.yaml", GENERATED)
    report = json.loads(run_cli(path, "--format", "json", "--as-of", AS_OF.isoformat()).stdout)
    names = {f["object"]["name"] for f in report["findings"]}
    assert any(name.startswith("web-<generated-") for name in names), report["findings"]


def test_an_empty_generate_name_is_still_not_an_object(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no Kubernetes objects found"):
        read_paths([_write(tmp_path, "svc.yaml", GENERATED.replace("generateName: web-", "generateName: ''"))])


# --- one seam for per-file errors, and templates that are not YAML yet ---------------------------------


def test_per_file_errors_can_be_collected_and_a_broken_file_gives_nothing(tmp_path: Path) -> None:
    _write(tmp_path, "repo/a.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    # A good first document, then a broken one: none of the file's objects may be used.
    _write(tmp_path, "repo/b.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n---\nkind: [\n")
    with pytest.raises(InputError, match=r"b.yaml:6: invalid YAML"):
        read_paths([str(tmp_path / "repo")])
    problems: list[tuple[str, str]] = []
    snapshot = read_paths([str(tmp_path / "repo")], on_file_error=lambda path, error: problems.append(
        (Path(path).name, error.message)))
    assert [obj.name for obj in snapshot] == ["a"]
    assert [name for name, _ in problems] == ["b.yaml"] and "invalid YAML" in problems[0][1]
    with pytest.raises(InputError):  # a file named on the command line that is broken always stops the run
        read_paths([str(tmp_path / "repo" / "b.yaml")], on_file_error=lambda path, error: None)


def test_ansible_role_templates_are_skipped_like_chart_templates(tmp_path: Path) -> None:
    _write(tmp_path, "repo/roles/cilium/tasks/main.yml", "- name: apply\n  command: kubectl apply -f x\n")
    _write(tmp_path, "repo/roles/cilium/templates/pool.yaml", "spec:\n  blocks:\n    {% for c in cidrs %}\n")
    _write(tmp_path, "repo/svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\n")
    snapshot = read_paths([str(tmp_path / "repo")])
    assert [obj.name for obj in snapshot] == ["s"]
    assert any(d.reason.startswith("Ansible role templates") for d in snapshot.ignored)


@pytest.mark.parametrize("measured", [0, 4, 10, 25])
def test_a_file_is_read_whole_whatever_size_it_was_measured_at(tmp_path: Path, measured: int) -> None:
    """A regular file is read in one call of the size measured; one that grew or shrank since
    (or a short read, or a /proc file that says 0) is read on to its end, within the limit."""
    from auditor.sources import files

    path = tmp_path / "grown.yaml"
    path.write_bytes(b"kind: A\nx: 1\n" * 2)  # 26 bytes
    with open(path, "rb", buffering=0) as stream:
        assert files._read_bytes(stream, str(path), 1000, measured) == path.read_bytes()
    with open(path, "rb", buffering=0) as stream, pytest.raises(InputError, match="larger than the 20-byte limit"):
        files._read_bytes(stream, str(path), 20, measured)


def test_a_small_text_is_not_counted_against_the_node_budget_only_when_it_cannot_exceed_it() -> None:
    """`may_exceed` skips the count for texts of at most (budget - 1) / 2 characters: no mark counts more
    than 2, so its answer must always be the count's (a mark weighing more would break this)."""
    import random

    from auditor.parsing.yaml_docs import estimated_nodes, may_exceed

    rng = random.Random(15)
    marks = [":", "\n", ",", "[", "{", "- ", "? ", "-\t", "?\t", "\t", " ", "x", "é"]
    for _ in range(3000):
        text = "".join(rng.choice(marks) for _ in range(rng.randint(0, 30)))
        for data in (text, text.encode()):
            for budget in (0, 1, len(data), 2 * len(data), 2 * len(data) + 1, estimated_nodes(data)):
                assert may_exceed(data, budget) == (estimated_nodes(data) > budget), (data, budget)
