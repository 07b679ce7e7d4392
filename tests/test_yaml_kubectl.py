"""YAML as Kubernetes tools read it (issues 9.2 and 10.1): every value as kubectl sends it.

Each expectation below is pinned in the test, and, when kubectl is installed,
checked against kubectl itself: `kubectl label --local -f FILE x=y -o json`
decodes the file exactly as `kubectl apply` does (sigs.k8s.io/yaml on its
go-yaml v2 fork, then JSON into an unstructured object) and needs no server.
Without kubectl those comparisons skip, the pinned values still run.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from auditor.errors import InputError
from auditor.parsing.yaml_docs import YAMLInputError, iter_documents, load_config_document
from auditor.sources.files import read_paths

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
HEAD = "apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: t\n"


def kubectl_reads(tmp_path: Path, text: str) -> Any:
    """The object kubectl would send for a one-object manifest, or the error line it prints."""
    assert KUBECTL is not None
    path = tmp_path / "k.yaml"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run([KUBECTL, "label", "--local", "-f", str(path), "x=y", "-o", "json"], capture_output=True,
                          text=True, timeout=60, env={"KUBECONFIG": "/dev/null", "PATH": "/usr/bin"})
    if done.returncode != 0:
        return ("error", done.stderr.strip().splitlines()[-1])
    obj = json.loads(done.stdout)
    obj["metadata"].pop("labels", None)
    return obj


def auditor_reads(text: str) -> Any:
    (document,) = list(iter_documents(text))
    return document.data


# (plain scalar, what kubectl sends): resolution per gopkg.in/yaml.v2 resolve.go,
# numbers per k8s.io/apimachinery/pkg/util/json (integral and in int64 -> int).
SCALARS: list[tuple[str, Any]] = [
    ("=", "="),                       # PyYAML: tag:yaml.org,2002:value, which it cannot construct
    ("1:20", "1:20"),                 # YAML 1.1 sexagesimal 80; go-yaml has none
    ("1:20.5", "1:20.5"),
    ("0o17", 15), ("0O17", 15),       # YAML 1.2 octal (PyYAML: a string)
    ("017", 15),                      # YAML 1.1 octal, kept by go-yaml
    ("09", 9),                        # not octal: go-yaml falls back to a float, sent as 9
    ("0x_1F", 31), ("+0x1F", 31), ("0b101", 5), ("-0b11", -3), ("1_000", 1000), ("1__0", 10), ("-1_", -1),
    ("y", True), ("Y", True), ("n", False), ("N", False),  # PyYAML: strings
    ("yes", True), ("on", True), ("NO", False), ("OFF", False), ("True", True), ("tRUE", "tRUE"),
    ("null", None), ("Null", None), ("NULL", None), ("nULL", "nULL"), ("~", None),
    ("1e3", 1000), ("1e+3", 1000), ("1.5e3", 1500),  # PyYAML: strings (no dot, or unsigned exponent)
    ("1.0", 1), ("0.", 0), ("-0.0", 0), ("1.e2", 100), (".5", 0.5), ("+.5", 0.5), ("1.5", 1.5), ("1_0.5_0", 10.5),
    ("99999999999999999999", 1e20),  # beyond 64 bits: a float
    ("9223372036854775808", 9223372036854775808.0), ("-9223372036854775809", -9223372036854775809.0),
    ("18446744073709551616", 18446744073709551616.0),
    ("1e400", "1e400"), ("0x1p-2", "0x1p-2"), ("0b", "0b"), ("0x", "0x"), ("00", 0), ("-0", 0), ("+0", 0),
    ("2026-01-31", "2026-01-31"), ("2026-01-31T10:00:00Z", "2026-01-31T10:00:00Z"),
    ("2001-12-14 21:59:43.10 -5", "2001-12-14 21:59:43.10 -5"),
    ("<<", "<<"),                     # the merge key's spelling, as a value
    ("!!binary aGVsbG8=", "hello"),  # decoded, as kubectl sends it
    ("!!float 1", 1), ("!!int 017", 15), ("!!str 1", "1"), ("!!timestamp 2001-01-01", "2001-01-01"),
    ("!!set {a, b}", {"a": None, "b": None}), ("!!omap [{a: 1}, {b: 2}]", [{"a": 1}, {"b": 2}]),
    ("[!!null , 1]", [None, 1]),
]


@pytest.mark.parametrize("scalar, expected", SCALARS, ids=[s for s, _ in SCALARS])
def test_plain_scalars_are_what_kubectl_sends(scalar: str, expected: Any) -> None:
    value = auditor_reads(f"v: {scalar}\n")["v"]
    assert value == expected and type(value) is type(expected), (scalar, value)


@needs_kubectl
def test_the_scalar_table_is_what_kubectl_itself_sends(tmp_path: Path) -> None:
    spec = "".join(f"  k{index}: {scalar}\n" for index, (scalar, _) in enumerate(SCALARS))
    sent = kubectl_reads(tmp_path, HEAD + "spec:\n" + spec)
    assert not isinstance(sent, tuple), sent
    read = auditor_reads(HEAD + "spec:\n" + spec)["spec"]
    for index, (scalar, expected) in enumerate(SCALARS):
        value = sent["spec"][f"k{index}"]
        if isinstance(expected, float):  # kubectl prints 1e20 as 100000000000000000000: the same float
            value = float(value)
        assert value == expected, (scalar, value)
        assert read[f"k{index}"] == value, scalar


@pytest.mark.parametrize("scalar", [".inf", "-.inf", ".nan", "!!float .Inf"])
def test_infinity_and_nan_are_refused_as_kubectl_refuses_them(tmp_path: Path, scalar: str) -> None:
    with pytest.raises(YAMLInputError, match="not a number JSON can carry") as raised:
        auditor_reads(f"a: 1\nv: {scalar}\n")
    assert raised.value.line == 2
    if KUBECTL:
        assert "unsupported value" in kubectl_reads(tmp_path, HEAD + f"spec:\n  v: {scalar}\n")[1]


KEYS = "spec:\n  yes: a\n  80: b\n  1.5: c\n  false: d\n  0o17: e\n"


def test_keys_become_the_strings_kubectl_writes(tmp_path: Path) -> None:
    assert auditor_reads(HEAD + KEYS)["spec"] == {"true": "a", "80": "b", "1.5": "c", "false": "d", "15": "e"}
    if KUBECTL:
        assert kubectl_reads(tmp_path, HEAD + KEYS)["spec"] == {"true": "a", "80": "b", "1.5": "c", "false": "d",
                                                                  "15": "e"}


def test_keys_that_kubectl_reads_as_one_are_a_duplicate() -> None:
    with pytest.raises(YAMLInputError, match=r"duplicate key 'true': written 'on' here and 'y' at line 2") as raised:
        auditor_reads("spec:\n  y: 1\n  on: 2\n")
    assert raised.value.line == 3
    with pytest.raises(YAMLInputError, match="a null key"):
        auditor_reads("~: 1\n")


# --- merge keys (issue 10.1) -------------------------------------------------------------

MERGES: list[tuple[str, dict[str, Any]]] = [
    # The issue's case: within a list, the earlier mapping wins.
    ("spec: {<<: [{type: LoadBalancer}, {type: ClusterIP}]}", {"type": "LoadBalancer"}),
    ("a: &a {type: LoadBalancer}\nb: &b {type: ClusterIP}\nspec: {<<: [*a, *b]}", {"type": "LoadBalancer"}),
    ("a: &a {type: LoadBalancer}\nb: &b {type: ClusterIP}\nspec: {<<: [*b, *a]}", {"type": "ClusterIP"}),
    # Explicit keys after the merge win (the YAML merge spec, and go-yaml).
    ("spec:\n  <<: {type: LoadBalancer, port: 1}\n  type: NodePort", {"type": "NodePort", "port": 1}),
    # Nested merges: a merged mapping's own merge is resolved first, its explicit keys winning.
    ("a: &a {type: LoadBalancer, x: 1}\nb: &b {<<: *a, type: ClusterIP}\nspec: {<<: [*b]}",
     {"type": "ClusterIP", "x": 1}),
    ("a: &a {x: 1}\nb: &b {<<: *a, u: 2}\nc: &c {<<: [*b, {x: 3, z: 4}]}\nspec: {<<: *c, w: 5}",
     {"x": 1, "u": 2, "z": 4, "w": 5}),
    ("spec: {<<: []}", {}),
]


@pytest.mark.parametrize("text, expected", MERGES)
def test_merge_keys_as_kubectl_reads_them(tmp_path: Path, text: str, expected: dict[str, Any]) -> None:
    assert auditor_reads(text + "\n")["spec"] == expected
    if KUBECTL:
        manifest = HEAD + text.replace("spec:", "spec:", 1) + "\n"
        assert kubectl_reads(tmp_path, manifest)["spec"] == expected


@pytest.mark.parametrize("text, message, line", [
    # kubectl takes LoadBalancer (a later `<<` overrides), kustomize/Flux NodePort: never resolved silently.
    ("spec:\n  type: NodePort\n  <<: {type: LoadBalancer}\n",
     r"merge key overrides the explicit key 'type' \(line 2\): kubectl takes the merged value", 3),
    ("spec:\n  <<: {a: 1}\n  x: 2\n  <<: {b: 3}\n", r"duplicate merge key '<<' \(first at line 2\)", 4),
    ("spec: {<<: 1}\n", "merge key: expected a mapping or a list of mappings, found a scalar", 1),
    ("spec: {<<: [{a: 1}, 2]}\n", "merge key: expected a mapping to merge, found a scalar", 1),
    ("spec:\n  <<: {a: 1}\n  b: 1\n  b: 2\n", r"duplicate key 'b' \(first at line 3\)", 4),
])
def test_merge_keys_kubectl_and_kustomize_would_read_apart_are_refused(text: str, message: str, line: int) -> None:
    with pytest.raises(YAMLInputError, match=message) as raised:
        auditor_reads(text)
    assert raised.value.line == line


def test_a_merge_that_repeats_an_explicit_value_reads_alike_everywhere() -> None:
    """Both tools get the same ports: nothing to refuse."""
    data = auditor_reads("spec:\n  ports: [{port: 80}]\n  <<: {ports: [{port: 80}], type: ClusterIP}\n")
    assert data["spec"] == {"ports": [{"port": 80}], "type": "ClusterIP"}
    with pytest.raises(YAMLInputError, match="merge key overrides"):
        auditor_reads("spec:\n  ports: [{port: 80}]\n  <<: {ports: [{port: 443}]}\n")


@needs_kubectl
def test_the_refused_merge_really_reads_differently_in_kubectl(tmp_path: Path) -> None:
    """What the refusal above relies on: kubectl lets a later `<<` override an explicit key."""
    sent = kubectl_reads(tmp_path, HEAD + "spec:\n  type: NodePort\n  <<: {type: LoadBalancer}\n")
    assert sent["spec"] == {"type": "LoadBalancer"}


def test_a_merged_load_balancer_is_audited_as_one(tmp_path: Path) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
                    "spec: {<<: [{type: LoadBalancer}, {type: ClusterIP}], ports: [{port: 80}]}\n", encoding="utf-8")
    (service,) = read_paths([str(path)])
    assert service.spec["type"] == "LoadBalancer"


# --- anchors ----------------------------------------------------------------------------------------


def test_an_anchor_defined_again_serves_later_aliases() -> None:
    text = "a: &x 1\nb: *x\nc: &x 2\nd: *x\n---\ne: &y [1]\nf: &y {k: v}\ng: *y\n"
    assert [d.data for d in iter_documents(text)] == [{"a": 1, "b": 1, "c": 2, "d": 2},
                                                      {"e": [1], "f": {"k": "v"}, "g": {"k": "v"}}]


@needs_kubectl
def test_a_redefined_anchor_is_what_kubectl_reads(tmp_path: Path) -> None:
    text = HEAD + "spec:\n  a: &x 1\n  b: *x\n  c: &x 2\n  d: *x\n"
    assert kubectl_reads(tmp_path, text)["spec"] == auditor_reads(text)["spec"] == {"a": 1, "b": 1, "c": 2, "d": 2}


def test_redefined_anchors_keep_every_limit_and_deep_nesting() -> None:
    bomb = "a: &x 1\nb: &x [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"l{i}: &l{i} [{', '.join(['*x' if i == 0 else f'*l{i - 1}'] * 9)}]\n" for i in range(8))
    with pytest.raises(YAMLInputError, match="alias bomb"):
        list(iter_documents(bomb))
    with pytest.raises(YAMLInputError, match="recursive alias"):  # an anchor's own node refers to itself, as in go-yaml
        list(iter_documents("a: &x 1\nb: &x [*x]\n"))
    with pytest.raises(YAMLInputError, match="undefined alias"):
        list(iter_documents("a: &x 1\nb: &x 2\nc: *nope\n"))
    deep = "a: &x 1\nb: &x 2\nc: " + "[" * 900 + "*x" + "]" * 900 + "\n"
    (document,) = list(iter_documents(deep))
    value = document.data["c"]
    for _ in range(900):
        value = value[0]
    assert value == 2


def test_documents_before_a_redefined_anchor_are_read_once(tmp_path: Path) -> None:
    path = tmp_path / "multi.yaml"
    path.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\n"
                    "data: {x: &v one, w: &v two, z: *v}\n",
                    encoding="utf-8")
    namespace, config_map = read_paths([str(path)])
    assert namespace.source is not None and config_map.source is not None
    assert namespace.name == "a" and namespace.source.line == 1
    assert config_map.data == {"x": "one", "w": "two", "z": "two"} and config_map.source.line == 5


# --- tags and files that are not manifests ----------------------------------------------------------


@pytest.mark.parametrize("tag", ["!env_var RADARR_KEY", "!secret db_password", "!Ref MyBucket",
                                 "!!python/name:material.extensions.emoji.twemoji ''", "!!python/object:os.system {}"])
def test_local_tags_in_a_manifest_are_an_error_naming_tag_and_line(tmp_path: Path, tag: str) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: n}}\ndata:\n  key: {tag}\n",
                    encoding="utf-8")
    shown = tag.split()[0].replace("!!", "!!", 1)
    with pytest.raises(InputError, match=rf"cm.yaml:5: local tag {shown}") as raised:
        read_paths([str(path)])
    assert "\n" not in raised.value.message


def test_tool_configs_with_local_tags_are_skipped_and_counted(tmp_path: Path) -> None:
    (tmp_path / "recyclarr.yml").write_text(
        "sonarr:\n  main:\n    base_url: !env_var SONARR_URL\n    api_key: !secret k\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text("markdown_extensions:\n  - pymdownx.emoji:\n"
                                         "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n",
                                         encoding="utf-8")
    (tmp_path / "Taskfile.yaml").write_text("version: '3'\ntasks:\n  a: {cmd: echo, <<: 1}\n", encoding="utf-8")
    (tmp_path / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\n",
                                       encoding="utf-8")
    snapshot = read_paths([str(tmp_path)])
    assert [obj.name for obj in snapshot] == ["s"]
    reasons = sorted((d.source.path.rsplit("/", 1)[-1], d.reason) for d in snapshot.ignored)
    assert reasons == [
        ("Taskfile.yaml", "not a Kubernetes manifest: merge key: expected a mapping or a list of mappings, "
                          "found a scalar at line 3"),
        ("mkdocs.yml",
         "not a Kubernetes manifest: local tag !!python/name:material.extensions.emoji.twemoji at line 3"),
        ("recyclarr.yml", "not a Kubernetes manifest: local tag !env_var at line 3"),
    ]


def test_the_auditors_own_config_files_keep_yaml_1_1() -> None:
    """Exception lists and postures are the auditor's formats: their reading does not change under their users."""
    config = load_config_document("name: y\nwhen: 1:20\nmode: =\nports: [0o17]\n")
    assert config.data == {"name": "y", "when": 80, "mode": "=", "ports": ["0o17"]}
    with pytest.raises(YAMLInputError, match=r"about .* YAML nodes"):
        load_config_document("x:\n" + "- - - - - - - - - - a\n" * 300_000)


def test_numbers_stay_finite_and_printable() -> None:
    value = auditor_reads("v: 1" + "0" * 400 + "\n")["v"]
    assert value == "1" + "0" * 400  # beyond a float: a string, as for go-yaml
    assert auditor_reads("v: 1" + "0" * 300 + "\n")["v"] == float("1e300")
    assert not math.isinf(auditor_reads("v: 1e308\n")["v"])


# --- the public GitOps repositories -------------------------------------------------------------------

GITOPS = Path(__file__).resolve().parent.parent.parent / "shared" / "gitops"


@pytest.mark.skipif(not GITOPS.is_dir(), reason="../shared/gitops is not there")
@pytest.mark.parametrize("repo", sorted(p.name for p in GITOPS.iterdir() if p.is_dir()) if GITOPS.is_dir() else [])
def test_no_public_gitops_repository_stops_on_yaml(repo: str) -> None:
    """Issue 9.2's done-when: every file these repos' tools accept is read (or skipped as a tool's config)."""
    snapshot = read_paths([str(GITOPS / repo)])
    assert len(snapshot) > 0
    skipped = [d for d in snapshot.ignored if d.reason.startswith("not a Kubernetes manifest:")]
    for document in skipped:  # only tool configs: none of them is a manifest
        assert document.source.path.endswith(("recyclarr.yml", "mkdocs.yml")), document


# --- every fixture reads as it did (issue 15: reports stay byte-identical) ----------------------------

ROOT = Path(__file__).resolve().parent.parent


class _TodaysReading(yaml.CSafeLoader):
    """The reading before go-yaml's rules: YAML 1.1 by PyYAML, timestamps and binary kept as text."""


def _as_text(loader: yaml.CSafeLoader, node: yaml.ScalarNode) -> str:
    return str(node.value)


_TodaysReading.add_constructor("tag:yaml.org,2002:timestamp", _as_text)
_TodaysReading.add_constructor("tag:yaml.org,2002:binary", _as_text)


def _fixture_texts() -> list[tuple[str, str]]:
    texts = []
    for path in sorted([*(ROOT / "tests" / "fixtures").rglob("*.yaml"), *(ROOT / "rules").rglob("*.yaml")]):
        text = path.read_text(encoding="utf-8")
        texts.append((str(path.relative_to(ROOT)), text))
        if path.parent.name == "cases":  # rule case files: every case's input is a manifest stream
            for case in (yaml.safe_load(text) or {}).get("cases", []):
                if isinstance(case, dict) and isinstance(case.get("input"), str):
                    texts.append((f"{path.relative_to(ROOT)}:{case.get('name')}", case["input"]))
    return texts


# Rule cases whose inputs write `namespace: n`, `namespace: y` or `x: y` unquoted, which
# kubectl reads as booleans (and the auditor now too); their expected outcomes do not
# depend on it (tests/test_rule_cases.py). Quoting them is the case files' owners' call.
READ_AS_KUBECTL_READS = {
    "rules/exposure/cases/service-external-ips.yaml:no-services-in-input-is-not-run",
    "rules/l2/cases/l2-client-rate-limit.yaml:pre-1-17-defaults-are-lower",
    "rules/l2/cases/l2-client-rate-limit.yaml:helm-rate-limit-is-read",
    "rules/l2/cases/l2-service-unannounced.yaml:other-load-balancer-class-is-not-ciliums",
    "rules/l2/cases/l2-service-unannounced.yaml:class-less-services-handed-to-node-ipam-are-skipped",
    "rules/lbipam/cases/lb-ipam-legacy-annotation.yaml:nothing-to-read-is-not-run",
    "rules/leftovers/cases/ingress-nginx-leftover.yaml:hostile-types-do-not-crash",
}


def test_every_fixture_reads_as_it_did_before_the_go_yaml_rules() -> None:
    """Fixtures and rule cases read exactly as before, but for the spellings listed above."""
    texts = _fixture_texts()
    assert len(texts) > 100
    differ = set()
    for name, text in texts:
        try:
            before = [d for d in yaml.load_all(text, Loader=_TodaysReading) if d is not None]
        except yaml.YAMLError:  # a fixture broken on purpose: it stays refused
            with pytest.raises(YAMLInputError):
                list(iter_documents(text, collect_problems=True))
            continue
        now = [d.data for d in iter_documents(text, collect_problems=True)]
        if json.dumps(now, default=str) != json.dumps(before, default=str):
            differ.add(name)
    assert differ == {name for name in READ_AS_KUBECTL_READS if name in dict(texts)}
