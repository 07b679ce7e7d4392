"""Property-based robustness tests (issue 6): wrong types anywhere never crash the auditor.

Kubernetes-shaped objects are generated from realistic templates (every kind
the rules read: tests/fixtures/fuzz/templates.yaml, plus the examples of every
registered rule and the bundled cluster dumps, so rules added later are
covered without editing this file) and mutated: a field replaced by a value of
the wrong type (`spec: []`, `metadata: "x"`, labels as a list, ports as
strings, `null`, huge integers, unicode, deeply nested junk), deleted, or a
list turned into a mapping and back. They go through the real pipeline:

    loader (JSON List and multi-document YAML) -> every registered rule
    -> exception matcher (random schema-valid lists) -> every reporter

The properties: a run ends in a report or in a one-line `InputError`, never
an exception; no rule ends in `error` (a malformed field is absent, not a
crash); every report renders, encodes as UTF-8, and parses (JSON against
auditor/data/report.schema.json, JUnit as XML). One CLI-level test checks the
same through a subprocess: exit code in {0, 1, 2, 3}, no traceback.

Profiles (registered in tests/conftest.py): `ci` (default; deterministic, a
few dozen examples per test) and `long` (thousands):

    HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz.py -n 2
"""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from auditor import engine, exceptions_list, registry
from auditor.config_files import load_schema
from auditor.errors import InputError
from auditor.kinds import split_gk
from auditor.model import Finding, K8sObject, ObjectRef, RuleStatus, Severity, Source
from auditor.parsing import yaml_docs
from auditor.posture import Posture
from auditor.report import FORMATS, renderer
from auditor.sources.files import ReadLimits, read_paths
from auditor.testing import explain_examples
from tests.conftest import AS_OF, FIXTURES, run_cli

# --- what is registered at run time --------------------------------------------

RULE_SET = registry.load_rules(plugins=False)
RULE_IDS = sorted(RULE_SET.ids)
REPORT_VALIDATOR = jsonschema.Draft202012Validator(
    load_schema("report.schema.json"), format_checker=jsonschema.FormatChecker()
)
EXCEPTIONS_VALIDATOR = jsonschema.Draft202012Validator(
    load_schema("exceptions.schema.json"), format_checker=jsonschema.FormatChecker()
)


def _templates() -> list[dict[str, Any]]:
    """Realistic objects: the fuzz templates, every rule's examples, the bundled dumps."""
    texts = [(FIXTURES / "fuzz" / "templates.yaml").read_text(encoding="utf-8")]
    for rule in RULE_SET.rules:
        texts += [text for text in explain_examples(rule) if text]
    docs: list[Any] = []
    for text in texts:
        docs.extend(d for d in yaml.safe_load_all(text) if d is not None)
    for dump in sorted((FIXTURES / "clusters").glob("*.json")):
        data = json.loads(dump.read_text(encoding="utf-8"))
        docs.extend(data.get("items", []) if isinstance(data, dict) else [])
    objects, seen = [], set()
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        key = json.dumps(doc, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            objects.append(doc)
    # A kind some rule reads but no template shows (a rule added since): a
    # generic object of it, so its rule still meets malformed ones. Add a
    # realistic template to tests/fixtures/fuzz/templates.yaml to go deeper.
    present = {K8sObject(o, Source("t")).gk for o in objects if K8sObject.identity_problem(o) is None}
    for gk in sorted({gk for rule in RULE_SET.rules for gk in rule.kinds_read()} - present):
        group, kind = split_gk(gk)
        objects.append({
            "apiVersion": f"{group}/v1" if group else "v1",
            "kind": kind,
            "metadata": {"name": "generic", "namespace": "app", "labels": {"app": "generic"}},
            "spec": {"selector": {"matchLabels": {"app": "generic"}}, "type": "LoadBalancer", "ports": [{"port": 80}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        })
    return objects


TEMPLATES = _templates()
# The objects most rules need before they judge anything (else they are not-run).
BASELINE = [
    t for t in TEMPLATES
    if (t.get("kind"), t.get("metadata", {}).get("name"))
    in {("ConfigMap", "cilium-config"), ("NetworkPolicy", "default-deny")}
]

# --- junk values -----------------------------------------------------------------

FIELD_NAMES = st.sampled_from([
    "spec", "status", "metadata", "data", "type", "ports", "port", "nodePort", "targetPort", "protocol", "selector",
    "matchLabels", "matchExpressions", "key", "operator", "values", "labels", "annotations", "namespace", "name",
    "hostNetwork", "hostPort", "containers", "image", "env", "value", "template", "listeners", "addresses",
    "blocks", "cidrs", "cidr", "start", "stop", "serviceSelector", "nodeSelector", "loadBalancerIPs", "externalIPs",
    "interfaces", "endpointSelector", "ingress", "egress", "policyTypes", "podSelector", "enableDefaultDeny",
    "specs", "parentRefs", "rules", "backendRefs", "hostnames", "gatewayClassName", "controllerName",
    "conditions", "storedVersions", "versions", "served", "storage", "deprecated", "items", "kind", "apiVersion",
    "values", "chart", "version", "externalTrafficPolicy", "loadBalancerClass", "loadBalancerIP", "clusterIP",
    "infrastructure", "managedFields", "ownerReferences", "finalizers", "advertisements", "service",
])
STRINGS = st.one_of(
    st.text(max_size=12),
    st.sampled_from([
        "", " ", "true", "false", "True", "yes", "null", "~", "LoadBalancer", "NodePort", "ClusterIP",
        "ExternalName", "Local", "Cluster", "*", "v2alpha1", "cilium.io/v2alpha1", "cilium.io/v2", "v1",
        "kube-system", "default", "app", "0", "-1", "80", "443/TCP", "http", "always", "never", "strict",
        "io.cilium/l2-announcer", "io.cilium/bgp-control-plane", "io.cilium/gateway-controller", "v1.5.0",
        "quay.io/cilium/cilium:v1.18.2", "image:", "@sha256:", "1.19", "10.0.0.0/8", "192.168.67.240",
        "192.168.67.250-192.168.67.240", "::1/128", "In", "NotIn", "Exists", "DoesNotExist", "Bogus",
        "k8s:io.kubernetes.pod.namespace", "\u202e", "\x00", "\x1b[31m", "\x7f", "\ufffe", "a\nb", "é",
        "💥", "\ufeff", "\u2028", "{}", "[]", "%s", "{0}", "<script>", "]]>", "&amp;", "😀" * 3,
    ]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([0, -1, 65535, 65536, 2**31, 2**63, -(2**63) - 1, 10**100, 2**1000, 10**4000]),
    st.floats(allow_nan=True, allow_infinity=True),
    STRINGS,
)
JUNK = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(FIELD_NAMES, st.text(max_size=6)), children, max_size=4),
    ),
    max_leaves=6,
)


def _nested(depth: int, leaf: Any, as_list: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


# Deep enough to trip a recursive walk, shallow enough for the YAML writer used here.
DEEP_JUNK = st.builds(_nested, st.integers(min_value=20, max_value=120), SCALARS, st.booleans())

# --- mutation ----------------------------------------------------------------------

_DELETE = object()
IDENTITY_PATHS = {("apiVersion",), ("kind",), ("metadata",), ("metadata", "name")}


def _swap(value: Any) -> Any:
    """A mapping as a list (of its values), a list as a mapping, a scalar as the other kind of scalar."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    if isinstance(value, str):
        return int(value) if value.isdigit() and len(value) < 20 else [value]
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    return {}


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every node of `value`, as a path of keys and indexes (the root is `()`)."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


# Templates are copied through JSON (C speed) and their node paths listed once.
_TEMPLATE_CACHE: dict[int, tuple[str, list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {}


def _template_parts(template: dict[str, Any]) -> tuple[str, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    key = id(template)
    if key not in _TEMPLATE_CACHE:
        text = json.dumps(template, default=str)
        paths = _paths(json.loads(text))  # keys as JSON has them (strings)
        _TEMPLATE_CACHE[key] = (
            text,
            [p for p in paths if p and p not in IDENTITY_PATHS],
            [p for p in paths if p in IDENTITY_PATHS],
        )
    return _TEMPLATE_CACHE[key]


_MISSING = object()


def _child(node: Any, step: Any) -> Any:
    if isinstance(node, dict) and isinstance(step, str) and step in node:
        return node[step]
    if isinstance(node, list) and isinstance(step, int) and step < len(node):
        return node[step]
    return _MISSING


def _replace(document: Any, path: tuple[Any, ...], make: Callable[[Any], Any]) -> Any:
    """`document` with the node at `path` replaced by `make(old)` (or removed for `_DELETE`)."""
    if not path:
        return make(document)
    parent = document
    for step in path[:-1]:
        parent = _child(parent, step)
        if parent is _MISSING:
            return document  # an earlier mutation removed the way there, or put a scalar on it
    last = path[-1]
    old = _child(parent, last)
    if old is _MISSING:
        return document
    new = make(old)
    if new is _DELETE:
        del parent[last]
    else:
        parent[last] = new
    return document


MUTATIONS = st.integers(min_value=0, max_value=7)


@st.composite
def mutated(draw: st.DrawFn, template: Any) -> Any:
    """`template` with a few nodes broken: replaced by junk, `null`, another type, deep junk,
    wrapped in a list, deleted, or given an extra field. Shrinks towards no change.

    Mutation sites are drawn from the template's node paths (a few draws per
    object, however large the template), so generation stays cheap.
    """
    if not isinstance(template, dict):
        return template
    text, paths, identity = _template_parts(template)
    document = json.loads(text)
    count = draw(st.integers(min_value=0, max_value=5))
    for _ in range(count):
        if identity and draw(st.integers(min_value=0, max_value=15)) == 15:
            path = draw(st.sampled_from(identity))  # rarely: the object is then skipped, not audited
        elif paths:
            path = draw(st.sampled_from(paths))
        else:
            break
        operation = draw(MUTATIONS)
        if operation == 0:
            junk = draw(JUNK)
            document = _replace(document, path, lambda old, junk=junk: junk)  # type: ignore[misc]
        elif operation == 1:
            document = _replace(document, path, lambda old: None)
        elif operation == 2:
            document = _replace(document, path, _swap)
        elif operation == 3:
            document = _replace(document, path, lambda old: _DELETE)
        elif operation == 4:
            deep = draw(DEEP_JUNK)
            document = _replace(document, path, lambda old, deep=deep: deep)  # type: ignore[misc]
        elif operation == 5:
            document = _replace(document, path, lambda old: [old])
        elif operation == 6:
            field, junk = draw(FIELD_NAMES), draw(JUNK)

            def add_field(old: Any, field: Any = field, junk: Any = junk) -> Any:
                if isinstance(old, dict):
                    old[field] = junk
                elif isinstance(old, list):
                    old.append(junk)
                return old

            document = _replace(document, path, add_field)
        else:
            scalar = draw(SCALARS)
            document = _replace(document, path, lambda old, scalar=scalar: scalar)  # type: ignore[misc]
    return document


@st.composite
def documents(draw: st.DrawFn, max_objects: int = 6) -> list[Any]:
    """Objects of a snapshot: mutated templates, sometimes the baseline, sometimes plain junk."""
    docs: list[Any] = []
    if draw(st.booleans()):
        docs.extend(draw(mutated(t)) for t in BASELINE)
    count = draw(st.integers(min_value=1, max_value=max_objects))
    for _ in range(count):
        kind = draw(st.integers(min_value=0, max_value=19))
        if kind == 19:
            docs.append(draw(JUNK))  # not an object at all
        elif kind == 18:  # a nested List
            item = draw(mutated(draw(st.sampled_from(TEMPLATES))))
            docs.append({"apiVersion": "v1", "kind": "List", "items": [item]})
        else:
            docs.append(draw(mutated(draw(st.sampled_from(TEMPLATES)))))
    return [d for d in docs if d is not _DELETE]


def to_json(docs: list[Any], ascii_only: bool) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, ensure_ascii=ascii_only, allow_nan=True)


def to_yaml(docs: list[Any], unicode_ok: bool) -> str:
    return yaml.dump_all(docs, Dumper=yaml.CSafeDumper, allow_unicode=unicode_ok, sort_keys=False)


@st.composite
def inputs(draw: st.DrawFn, max_objects: int = 6) -> tuple[str, str]:
    """(file suffix, text) of a JSON List or a multi-document YAML stream."""
    docs = draw(documents(max_objects))
    if draw(st.booleans()):
        return ".json", to_json(docs, draw(st.booleans()))
    return ".yaml", to_yaml(docs, draw(st.booleans()))


# --- exception lists (valid per schema) ----------------------------------------------

GLOBS = st.one_of(
    st.sampled_from([
        "*", "?*", "[a-z]*", "kube-*", "*-lb", "[!a]*", "[", "]", "[]", "[!]", "\\", "*.*", "app", "default",
        "kube-system", "database", "Service", "v1", "cilium.io/*", "*Pool", "web", "postgres-lb", "[[]", "**",
    ]),
    st.text(min_size=1, max_size=10),
)
ENTRY_NAMES = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?\Z")
MATCHES = st.fixed_dictionaries(
    {},
    optional={
        "kind": GLOBS,
        "apiVersion": GLOBS,
        "namespace": GLOBS,
        "name": GLOBS,
        "labels": st.dictionaries(
            st.one_of(st.sampled_from(["app", "lb", "app.kubernetes.io/name",
                                       "gateway.networking.k8s.io/gateway-name"]),
                      st.text(max_size=8)),
            GLOBS, min_size=1, max_size=3),
    },
).filter(bool)
ENTRIES = st.fixed_dictionaries(
    {
        "name": ENTRY_NAMES,
        "rules": st.lists(st.sampled_from(RULE_IDS), min_size=1, max_size=3, unique=True),
        "match": MATCHES,
        "reason": st.text(min_size=1, max_size=30),
    },
    optional={
        "expires": st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2100, 12, 31)).map(dt.date.isoformat),
        "owner": st.text(max_size=10),
        "ticket": st.text(max_size=10),
    },
)
EXCEPTION_DOCS = st.builds(
    lambda entries: {"exceptions": entries},
    st.lists(ENTRIES, max_size=5, unique_by=lambda e: e["name"]),
)
AS_OF_DATES = st.one_of(st.just(AS_OF), st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2100, 12, 31)))

# --- the checks ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="audit-fuzz-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def load_exceptions(workdir: Path, doc: dict[str, Any]) -> exceptions_list.ExceptionList:
    """Write `doc`, check it is schema-valid, and load it: a valid list always loads."""
    EXCEPTIONS_VALIDATOR.validate(doc)
    path = workdir / "exceptions.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    loaded = exceptions_list.load(str(path))
    loaded.check_rules(set(RULE_IDS))
    return loaded


def check_input_error(error: InputError, name: str) -> None:
    message = error.message
    assert "\n" not in message and "\r" not in message, repr(message)
    assert message.startswith(name), (name, message)
    assert "Traceback" not in message


def check_reports(result: engine.AuditResult) -> None:
    """Every registered reporter renders `result`; the output is UTF-8-encodable and parses."""
    for name in FORMATS:
        render = renderer(name)
        outputs = [render(result, color=False), render(result, color=True)] if name == "text" else [render(result)]
        for text in outputs:
            assert isinstance(text, str), name
            data = text.encode("utf-8")  # what standard output and the report file do
            if name == "json":
                REPORT_VALIDATOR.validate(json.loads(text))
            elif text.lstrip().startswith("<?xml") or name == "junit":
                ET.fromstring(data)
            elif text.lstrip().startswith(("{", "[")) and name != "text":
                json.loads(text)


def audit_through_pipeline(workdir: Path, suffix: str, text: str, exceptions: exceptions_list.ExceptionList,
                           as_of: dt.date = AS_OF, fail_on: Severity = Severity.ERROR,
                           require_complete: bool = False) -> engine.AuditResult | None:
    path = workdir / f"input{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        snapshot = read_paths([str(path)], limits=ReadLimits())
    except InputError as error:
        note(f"refused: {error.message}")
        check_input_error(error, str(path))
        return None
    result = engine.run(snapshot, RULE_SET, exceptions, Posture(), as_of=as_of, fail_on=fail_on,
                        require_complete=require_complete)
    crashed = {r.id: r.reason for r in result.rules if r.status is RuleStatus.ERROR}
    assert not crashed, f"rules crashed on malformed input (treat the field as absent): {crashed}"
    assert result.exit_code in (0, 1, 3)
    check_reports(result)
    return result


NO_EXCEPTIONS = exceptions_list.ExceptionList("(none)", [])


@given(data=inputs())
def test_mutated_objects_never_crash_loader_rules_or_reports(workdir: Path, data: tuple[str, str]) -> None:
    suffix, text = data
    audit_through_pipeline(workdir, suffix, text, NO_EXCEPTIONS)


@given(data=inputs(max_objects=5), exception_doc=EXCEPTION_DOCS, as_of=AS_OF_DATES,
       fail_on=st.sampled_from(list(Severity)), require_complete=st.booleans())
def test_random_exception_lists_apply_cleanly(workdir: Path, data: tuple[str, str], exception_doc: dict[str, Any],
                                              as_of: dt.date, fail_on: Severity, require_complete: bool) -> None:
    exceptions = load_exceptions(workdir, exception_doc)
    suffix, text = data
    result = audit_through_pipeline(workdir, suffix, text, exceptions, as_of, fail_on, require_complete)
    if result is None:
        return
    assert {u.entry.name for u in result.exceptions} == {e["name"] for e in exception_doc["exceptions"]}
    for finding in result.findings:
        if finding.exception is not None:
            assert finding.exception.name in {e["name"] for e in exception_doc["exceptions"]}


OBJECT_REFS = st.builds(
    ObjectRef,
    kind=st.one_of(st.sampled_from(["Service", "CiliumLoadBalancerIPPool", "Namespace"]), st.text(max_size=8)),
    namespace=st.one_of(st.none(), st.text(max_size=8)),
    name=st.text(min_size=1, max_size=8),
    api_version=st.one_of(st.sampled_from(["v1", "cilium.io/v2alpha1"]), st.text(max_size=8)),
)
LABELS = st.dictionaries(st.one_of(st.text(max_size=6), st.integers(), st.none()), st.one_of(st.text(max_size=6), JUNK),
                         max_size=4)


@given(exception_doc=EXCEPTION_DOCS,
       refs=st.lists(st.tuples(st.sampled_from(RULE_IDS), OBJECT_REFS, LABELS), max_size=8),
       as_of=AS_OF_DATES)
def test_exception_matcher_on_arbitrary_findings(workdir: Path, exception_doc: dict[str, Any], refs: list[Any],
                                                 as_of: dt.date) -> None:
    """The matcher alone: any finding, any labels (even of wrong types), any schema-valid list."""
    exceptions = load_exceptions(workdir, exception_doc)
    matcher = exceptions_list.ExceptionMatcher(exceptions, as_of)
    for rule_id, ref, labels in refs:
        finding = Finding(object=ref, message="m", source=Source("x.yaml", 1), rule=rule_id)
        entry = matcher.apply(finding, lambda _finding, labels=labels: labels)  # type: ignore[misc]
        if entry is not None:
            assert rule_id in entry.rules and not entry.expired(as_of)
    usage = matcher.usage(set(RULE_IDS))
    assert [u.entry.name for u in usage] == [e["name"] for e in exception_doc["exceptions"]]


# --- text-level fuzzing of the loaders ----------------------------------------------------

YAML_TOKENS = st.sampled_from([
    "a", "b", "key", "apiVersion: v1\n", "kind: Service\n", "metadata: {name: x}\n", "kind: List\n", "items:\n",
    "- ", "  ", "\n", ": ", ":", ",", "[", "]", "{", "}", "---\n", "...\n", "? ", "&a ", "*a", "&b", "*b ", "<<: ",
    "!!int ", "!!float ", "!!bool ", "!!str ", "!!seq ", "!!map ", "!!set ", "!!omap ", "!!pairs ", "!!binary ",
    "!!timestamp ", "!!null ", "!!python/object ", "!custom ", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "#c\n",
    "|\n", ">-\n", '"', "'", "\\", "\\u00e9", "\\ud800", "\\x00", "0x", "0b", "0o", "0", "1", "9", "1_0", ":30",
    "1e9", ".inf", ".nan", "-", "+", "yes", "no", "maybe", "~", "null", "2024-01-01", "2024-13-45", "\t", "\r",
    "\u2028", "\x85", "\ufeff", "é", "💥", "\x1b", "\x7f",
])
JSON_TOKENS = st.sampled_from([
    "{", "}", "[", "]", ",", ":", '"', '"a"', '"items"', '"kind"', '"List"', '"apiVersion"', '"v1"', '"metadata"',
    '{"name": "x"}', "null", "true", "false", "0", "-1", "1e400", "123456789012345678901234567890", "NaN",
    "Infinity", "-Infinity", '"\\ud800"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"', '"\\u0000"', '"\\x"', " ", "\n",
    "\t", "\ufeff", "é", "//", "/*", "'",
])


@st.composite
def token_soup(draw: st.DrawFn) -> tuple[str, str]:
    if draw(st.booleans()):
        return ".yaml", "".join(draw(st.lists(YAML_TOKENS, max_size=40)))
    return ".json", "".join(draw(st.lists(JSON_TOKENS, max_size=40)))


@st.composite
def corrupted(draw: st.DrawFn) -> tuple[str, str]:
    """A valid input with a few characters inserted, deleted or replaced."""
    suffix, text = draw(inputs(max_objects=3))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        position = draw(st.integers(min_value=0, max_value=len(text)))
        insert = draw(st.one_of(YAML_TOKENS, JSON_TOKENS, st.text(max_size=2)))
        cut = draw(st.integers(min_value=0, max_value=3))
        text = text[:position] + insert + text[position + cut:]
    return suffix, text


@given(data=st.one_of(token_soup(), corrupted()), suffix=st.sampled_from([None, ".yaml", ".json", ".yml", ".txt"]))
def test_arbitrary_text_is_read_or_refused_in_one_line(workdir: Path, data: tuple[str, str],
                                                        suffix: str | None) -> None:
    """Near-YAML/JSON text: a snapshot or one line naming the file; what loads audits without a crash."""
    default_suffix, text = data
    audit_through_pipeline(workdir, suffix or default_suffix, text, NO_EXCEPTIONS)


@given(data=st.binary(max_size=300), name=st.sampled_from(["input.yaml", "input.json", "-"]))
def test_arbitrary_bytes_are_read_or_refused_in_one_line(workdir: Path, data: bytes, name: str) -> None:
    if name == "-":
        stream, expected = io.BytesIO(data), "<stdin>"
        paths = ["-"]
    else:
        path = workdir / name
        path.write_bytes(data)
        stream, expected, paths = None, str(path), [str(path)]
    try:
        read_paths(paths, stdin=stream)
    except InputError as error:
        check_input_error(error, expected)


# --- alias bombs, however they are written ------------------------------------------------

BOMB_STYLES = st.sampled_from(["flow-json", "flow", "block", "merge"])


@st.composite
def alias_bombs(draw: st.DrawFn) -> str:
    """A billion-laughs document, anchors placed after every separator YAML allows."""
    depth = draw(st.integers(min_value=8, max_value=10))  # width ** depth: over a million nodes
    width = draw(st.integers(min_value=6, max_value=10))
    style = draw(BOMB_STYLES)
    sep = draw(st.sampled_from([": ", ":", ":\t", ":\n  "])) if style == "flow-json" else ": "
    if style == "block":
        lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
        lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, depth)]
        return "\n".join(lines) + "\n"
    if style == "merge":
        lines = ["b0: &b0 {k0: lol}"]
        for i in range(1, depth * 2 + 1):  # 2 ** 17 and more merged keys
            merged = ", ".join([f"*b{i - 1}"] * 2)
            lines.append(f"b{i}: &b{i} {{<<: [{merged}], k{i}: v}}")
        return "\n".join(lines) + "\n"
    quote = '"' if style == "flow-json" else ""

    def key(index: int) -> str:
        return f"{quote}l{index}{quote}"

    parts = [f"{key(0)}{sep}&l0 [{', '.join(['lol'] * width)}]"]
    parts += [f"{key(i)}{sep}&l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, depth)]
    return "{" + ", ".join(parts) + "}\n"


@given(text=alias_bombs())
def test_alias_bombs_are_refused_however_written(text: str) -> None:
    with pytest.raises(yaml_docs.YAMLInputError, match="alias"):
        list(yaml_docs.iter_documents(text))


ANCHOR_SOUP = st.lists(st.one_of(YAML_TOKENS,
                                 st.sampled_from(["&x", "&x ", "*x", ":&x", '"k":&x ', "'k':&x ", "\ufeff&x "])),
                       max_size=30).map("".join)


@given(text=ANCHOR_SOUP)
def test_anchor_precheck_never_misses_an_anchor_libyaml_sees(text: str) -> None:
    """The alias-expansion walk only runs when a regex sees an anchor: it must see every one libyaml sees."""
    events = []
    try:
        for event in yaml.parse(text, Loader=yaml_docs._BaseLoader):  # type: ignore[attr-defined]
            events.append(event)  # documents before a syntax error are still read
    except yaml.YAMLError:
        pass
    anchored = any(getattr(e, "anchor", None) for e in events if not isinstance(e, yaml.AliasEvent))
    if anchored:
        assert yaml_docs._ANCHOR.search(text), text


@pytest.mark.parametrize("text", [
    '{"a":&x [1, *x]}',                       # JSON-like key, anchor right after the colon
    '\ufeff&a [*a]',                          # anchor right after a byte-order mark
    '["k":&x [1], *x]',
])
def test_anchor_detection_regressions(text: str) -> None:
    """Anchors placed where the fast pre-check used to miss them (the expansion check was skipped)."""
    with pytest.raises(yaml_docs.YAMLInputError):
        list(yaml_docs.iter_documents(text, max_alias_expansion=0))


# --- merge keys (issue 10.1) -------------------------------------------------------------------
#
# A mapping is a list of entries: an explicit key, or a merge of base
# mappings (by alias or written inline). Bases may merge earlier bases.
# Every scalar value is unique, so "the same value" means "the same node".
# The model below is kubectl's reading (go-yaml v2: pairs applied in the
# order written, `<<: [a, b]` applied b then a); where kustomize/Flux
# (go-yaml v3: explicit keys always win) would read the mapping otherwise,
# the loader must refuse it.

MERGE_KEYS = st.sampled_from(["type", "a", "b", "c", "port"])


@st.composite
def merge_documents(draw: st.DrawFn) -> tuple[str, dict[str, Any] | None]:
    """(YAML text, the `spec` kubectl reads), or (text, None) when kubectl and kustomize read it apart."""
    counter = iter(range(10_000))
    bases: list[tuple[str, list[Any]]] = []  # (anchor, entries)

    def entries(known_bases: int) -> list[Any]:
        out: list[Any] = []
        used: set[str] = set()
        merged = False
        for _ in range(draw(st.integers(min_value=0, max_value=4))):
            if known_bases and not merged and draw(st.booleans()):
                refs = draw(st.lists(st.integers(min_value=0, max_value=known_bases - 1), min_size=1, max_size=3))
                sources: list[Any] = [("alias", ref) for ref in refs]
                if draw(st.booleans()):  # a mapping written inline in the merge
                    inline = [("key", key, f"v{next(counter)}")
                              for key in draw(st.lists(MERGE_KEYS, max_size=2, unique=True))]
                    sources.insert(draw(st.integers(min_value=0, max_value=len(sources))), ("inline", inline))
                out.append(("merge", sources, draw(st.booleans())))  # as a list, or a single mapping
                merged = True  # one `<<` per mapping: kustomize refuses a second
            else:
                free = [key for key in ("type", "a", "b", "c", "port") if key not in used]
                if not free:
                    break
                key = draw(st.sampled_from(free))
                used.add(key)
                out.append(("key", key, f"v{next(counter)}"))
        return out

    for index in range(draw(st.integers(min_value=1, max_value=4))):
        bases.append((f"b{index}", entries(index)))
    spec = entries(len(bases))

    def render(items: list[Any]) -> str:
        parts = []
        for entry in items:
            if entry[0] == "key":
                parts.append(f"{entry[1]}: {entry[2]}")
                continue
            sources, as_list = entry[1], entry[2]
            rendered = [f"*{bases[s][0]}" if kind == "alias" else "{" + render(s) + "}" for kind, s in sources]
            parts.append("<<: " + ("[" + ", ".join(rendered) + "]" if as_list or len(rendered) > 1 else rendered[0]))
        return ", ".join(parts)

    def flatten(items: list[Any]) -> tuple[dict[str, Any], bool]:
        """kubectl's reading of a mapping, and whether kustomize would read it otherwise."""
        result: dict[str, Any] = {}
        apart = False
        for entry in items:
            if entry[0] == "key":
                result[entry[1]] = entry[2]
                continue
            merged: dict[str, Any] = {}
            for kind, source in reversed(entry[1]):
                value, inner_apart = flatten(bases[source][1] if kind == "alias" else source)
                apart = apart or inner_apart
                merged.update(value)
            for key, value in merged.items():
                if key in result and result[key] != value:  # a merge after the key overrides it
                    apart = True
                result[key] = value
        return result, apart

    expected, apart = flatten(spec)
    # Every base is a value of the document too, read (and judged) on its own.
    apart = apart or any(flatten(items)[1] for _, items in bases)
    lines = [f"{name}: &{name} {{{render(items)}}}" for name, items in bases]
    lines.append(f"spec: {{{render(spec)}}}")
    return "\n".join(lines) + "\n", None if apart else expected


@given(case=merge_documents())
def test_merge_keys_read_as_kubectl_reads_them(case: tuple[str, dict[str, Any] | None]) -> None:
    text, expected = case
    note(text)
    if expected is None:
        with pytest.raises(yaml_docs.YAMLInputError, match="merge key overrides"):
            list(yaml_docs.iter_documents(text))
        return
    (document,) = list(yaml_docs.iter_documents(text))
    assert document.data["spec"] == expected


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@settings(max_examples=max(4, settings().max_examples // 5), deadline=None)
@given(case=merge_documents().filter(lambda case: case[1] is not None))
def test_merge_key_model_is_kubectls(case: tuple[str, dict[str, Any] | None]) -> None:
    """The model above against kubectl itself (`kubectl label --local` decodes as `kubectl apply` does)."""
    import subprocess

    text, expected = case
    note(text)
    assert KUBECTL is not None
    with tempfile.TemporaryDirectory(prefix="audit-merge-") as tmp:
        path = Path(tmp) / "thing.yaml"
        body = "".join(f"  {line}\n" for line in text.splitlines())
        path.write_text(f"apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: t\nspec:\n{body}",
                        encoding="utf-8")
        done = subprocess.run([KUBECTL, "label", "--local", "-f", str(path), "x=y", "-o", "json"], capture_output=True,
                              text=True, timeout=60, env={"KUBECONFIG": "/dev/null", "PATH": "/usr/bin"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["spec"]["spec"] == expected


@pytest.mark.parametrize("text, problem", [
    ("x: !!bool maybe\n", "invalid boolean"),
    ("x: !!int 0x\n", "invalid integer"),
    ('x: !!int ""\n', "invalid integer"),
    ("x: !!float abc\n", "invalid float"),
    # Issue 9.2: plain scalars now resolve as go-yaml does (kubectl reads a
    # 4,000-digit hex number or `1:1:1...` as a string), so only explicit
    # tags can still ask for an integer that cannot be one.
    ("x: !!int 0x" + "f" * 4000 + "\n", "integer too large"),
    ("x: !!int 0b" + "1" * 15_000 + "\n", "integer too large"),
    ("x: !!int " + "1" * 5000 + "\n", "integer too large"),
    ("x: !!int 1" + ":1" * 100_000 + "\n", "invalid integer"),  # sexagesimal: kubectl has none
])
def test_yaml_scalars_that_crashed_the_constructor(text: str, problem: str) -> None:
    with pytest.raises(yaml_docs.YAMLInputError, match=problem) as caught:
        list(yaml_docs.iter_documents(text))
    assert caught.value.line == 1


@pytest.mark.parametrize("text, problem", [
    ('{"a": "x\\ud800"}', "lone UTF-16 surrogate"),
    ('{"items": [{"a": "\\udc00"}]}', "lone UTF-16 surrogate"),
    ('{"\\ud800": 1}', "lone UTF-16 surrogate"),
    ('{"a": ' + "1" * 5000 + "}", "integer too large"),
    ('{"items": [' + "1" * 5000 + "]}", "integer too large"),
])
def test_json_values_that_could_not_be_written_out(text: str, problem: str) -> None:
    from auditor.parsing.json_docs import JSONInputError, load_json

    with pytest.raises(JSONInputError, match=problem):
        load_json(text)
    assert load_json('{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}').data == {"a": "😀", "b": "\\ud800"}


def test_junit_report_stays_well_formed_with_control_characters(workdir: Path) -> None:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a\u0001\u001b[31m\ufffe", "namespace": "b\u0000"},
         "spec": {"type": "NodePort", "ports": [{"port": 80}]}},
    ]})
    result = audit_through_pipeline(workdir, ".json", text, NO_EXCEPTIONS)
    assert result is not None and result.findings
    ET.fromstring(renderer("junit")(result).encode("utf-8"))


# --- the same through the command line ------------------------------------------------------

CLI_EXAMPLES = max(4, settings().max_examples // 10)
OPTION_SETS = st.fixed_dictionaries({
    "format": st.sampled_from(sorted(FORMATS)),
    "fail_on": st.sampled_from(["error", "warning", "info"]),
    "require_complete": st.booleans(),
    "files": st.booleans(),
    "stdin": st.booleans(),
    "exceptions": st.one_of(st.none(), EXCEPTION_DOCS),
})


@settings(max_examples=CLI_EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                            HealthCheck.large_base_example])
@given(data=st.one_of(inputs(max_objects=5), corrupted(), token_soup()), options=OPTION_SETS)
def test_cli_exit_codes_and_no_traceback(data: tuple[str, str], options: dict[str, Any]) -> None:
    suffix, text = data
    with tempfile.TemporaryDirectory(prefix="audit-fuzz-cli-") as tmp:
        tmp_path = Path(tmp)
        args = ["--format", options["format"], "--fail-on", options["fail_on"], "--as-of", AS_OF.isoformat()]
        if options["require_complete"]:
            args.append("--require-complete")
        reports = {"json": tmp_path / "out" / "audit.json", "junit": tmp_path / "out" / "audit.xml"}
        if options["files"]:
            args += ["--json", str(reports["json"]), "--junit", str(reports["junit"])]
        if options["exceptions"] is not None:
            exceptions_path = tmp_path / "exceptions.yaml"
            exceptions_path.write_text(yaml.safe_dump(options["exceptions"], allow_unicode=True), encoding="utf-8")
            args += ["--exceptions", str(exceptions_path)]
        data_bytes = text.encode("utf-8", errors="surrogatepass")
        if options["stdin"]:
            result = run_cli(*args, "-", stdin=data_bytes, cwd=tmp_path, timeout=60)
        else:
            path = tmp_path / f"input{suffix}"
            path.write_bytes(data_bytes)
            result = run_cli(*args, str(path), cwd=tmp_path, timeout=60)
        note(f"exit {result.code}; stderr: {result.stderr!r}")
        assert result.code in (0, 1, 2, 3), result
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
        if result.code == 2:
            assert result.stderr.count("\n") == 1 and result.stderr.startswith("audit: error: "), result.stderr
            assert not any(p.exists() for p in reports.values()), "nothing is written on an input error"
            assert result.stdout == ""
            return
        if result.code == 3:  # only a rule that could not run, with --require-complete: no rule crashed
            assert options["require_complete"], f"exit 3 without --require-complete (a rule crashed?):\n{result.stdout}"
        if options["format"] == "json":
            report = json.loads(result.stdout)
            REPORT_VALIDATOR.validate(report)
            assert report["summary"]["exitCode"] == result.code
            assert report["summary"]["rulesError"] == 0, [r for r in report["rules"] if r["status"] == "error"]
        if options["files"]:
            REPORT_VALIDATOR.validate(json.loads(reports["json"].read_text(encoding="utf-8")))
            ET.parse(reports["junit"])


# --- Helm values in a GitOps tree ------------------------------------------------------

def write_documents(root: Path, files: dict[str, Any]) -> Path:
    """Each file of `files` below `root`: its path -> a document, or a list of documents (one file, several)."""
    for name, documents in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump_all(documents if isinstance(documents, list) else [documents],
                                           allow_unicode=True, sort_keys=False), encoding="utf-8")
    return root


def audit_tree_through_pipeline(root: Path, what: str, audit_unreached: bool = False) -> engine.AuditResult:
    """`audit TREE` in process (read once, one audit per scope, merged): no rule in error, every report renders."""
    from auditor.fleet import audit_tree
    from auditor.sources.gitops.tree_read import read_tree

    tree = read_tree(str(root), input_problems=True, audit_unreached=audit_unreached)
    assert not tree.plain  # (a kustomization or an Argo CD Application makes each of these a GitOps tree)
    result = audit_tree(tree, lambda snapshot: engine.run(snapshot, RULE_SET, NO_EXCEPTIONS, Posture(), as_of=AS_OF))
    crashed = {r.id: r.reason for r in result.rules if r.status is RuleStatus.ERROR}
    assert not crashed, f"rules crashed on malformed {what} (treat the field as absent): {crashed}"
    assert result.exit_code in (0, 1, 3)
    check_reports(result)
    return result



# Keys the declared-Services walks (app-template's, Strimzi's) and the Cilium configuration look at, and
# values of every type.
VALUE_KEYS = st.sampled_from(["service", "main", "type", "serviceType", "ports", "http", "port", "nodePort",
                              "targetPort", "protocol", "enabled", "controllers", "listeners", "hubble", "ui",
                              "externalTrafficPolicy", "loadBalancerIP", "loadBalancerClass", "annotations",
                              "labels", "persistence", "name", "spec", "kubeProxyReplacement", "k8sServiceHost",
                              "k8sServicePort", "l2announcements", "encryption", "gatewayAPI", "hostNetwork",
                              "bgpControlPlane", "ipam", "mode", "operator", "image", "tag", "version"])
VALUE_SCALARS = st.one_of(st.sampled_from(["LoadBalancer", "NodePort", "ClusterIP", "loadbalancer", "nodeport",
                                           "Local", "TCP", "HTTP", "true", "wireguard", "kubernetes", "1.19.1"]),
                          st.integers(-5, 70_000), st.booleans(), st.none(), st.text(max_size=8))
HELM_VALUES = st.dictionaries(VALUE_KEYS, st.recursive(
    VALUE_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(VALUE_KEYS, inner, max_size=5)),
    max_leaves=25), max_size=5)


def _values_trees(root: Path, inline: dict[str, Any], from_file: dict[str, Any], spec: dict[str, Any]) -> list[Path]:
    """Two trees: a kustomization deploying a HelmRelease and Cilium's (inline values, and a `valuesFrom`
    file its configMapGenerator makes), an Argo CD Application with Helm values (an object and a string)
    and a Strimzi Kafka; and an Application of an in-repo chart (its values.yaml, a `valueFiles` file, a
    values object), an entry point of its own."""
    release = {"interval": "1h",
               "valuesFrom": [{"kind": "ConfigMap", "name": "web-values", "valuesKey": "values.yaml"}]}
    trees = {
        "kustomized": {
            "helmrelease.yaml": {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                                 "metadata": {"name": "web"}, "spec": {**release, "values": inline, "chart": {"spec": {
                                     "chart": "web", "sourceRef": {"kind": "HelmRepository", "name": "charts"}}}}},
            "cilium.yaml": {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                            "metadata": {"name": "cilium"}, "spec": {**release, "values": inline, "chart": {"spec": {
                                "chart": "cilium", "version": "1.19.1",
                                "sourceRef": {"kind": "HelmRepository", "name": "cilium"}}}}},
            "application.yaml": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                                 "metadata": {"name": "shop", "namespace": "argocd"},
                                 "spec": {"project": "default", "destination": {"namespace": "shop"},
                                          "source": {"repoURL": "https://charts.example.com", "chart": "shop",
                                                     "helm": {"valuesObject": inline,
                                                              "values": yaml.safe_dump(from_file)}}}},
            "kafka.yaml": {"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "Kafka", "metadata": {"name": "bus"},
                           "spec": spec},
            "values.yaml": from_file,
            "kustomization.yaml": {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                                   "namespace": "web",
                                   "resources": ["helmrelease.yaml", "cilium.yaml", "application.yaml", "kafka.yaml"],
                                   "configMapGenerator": [{"name": "web-values", "files": ["values.yaml"]}]},
        },
        "chart": {
            "charts/shop/Chart.yaml": {"apiVersion": "v2", "name": "shop", "version": "1.0.0"},
            "charts/shop/values.yaml": from_file,
            "charts/shop/values-prod.yaml": inline,
            "apps/shop.yaml": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                               "metadata": {"name": "shop", "namespace": "argocd"},
                               "spec": {"project": "default", "destination": {"namespace": "shop"},
                                        "source": {"repoURL": "https://git.example.com/fleet", "path": "charts/shop",
                                                   "helm": {"valueFiles": ["values-prod.yaml"],
                                                            "valuesObject": spec}}}},
        },
    }
    return [write_documents(root / tree, files) for tree, files in trees.items()]


@given(inline=HELM_VALUES, from_file=HELM_VALUES, spec=HELM_VALUES)
def test_helm_values_of_any_shape_never_crash_a_tree_audit(workdir: Path, inline: dict[str, Any],
                                                           from_file: dict[str, Any], spec: dict[str, Any]) -> None:
    """Services declared in values are looked for in a release's own values, its `valuesFrom` files, an
    Application's Helm values and an operator's spec, with the file layers merged: a value of any type
    anywhere there is read or passed over, never a crash (a `type: {...}` once ended the run)."""
    for root in _values_trees(Path(tempfile.mkdtemp(dir=workdir)), inline, from_file, spec):
        audit_tree_through_pipeline(root, "values")


FIELD_VALUES = st.recursive(VALUE_SCALARS | st.sampled_from(["ConfigMap", "Secret", "web-values", "values.yaml",
                                                                "service.type", "a.b[0]"]),
                             lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.sampled_from(
                                                         ["kind", "name", "valuesKey", "targetPath", "optional",
                                                          "files", "literals", "behavior", "options"]),
                                                         inner, max_size=4)),
                             max_leaves=12)


@given(values_from=FIELD_VALUES, generator=FIELD_VALUES, values=HELM_VALUES)
def test_values_from_and_generators_of_any_shape_never_crash_a_tree_audit(
        workdir: Path, values_from: Any, generator: Any, values: dict[str, Any]) -> None:
    """A HelmRelease's `valuesFrom` and a kustomization's `configMapGenerator` of any shape (wrong types,
    missing names, a `targetPath` into the values, entries that are no mappings): the values files are
    linked when they can be and left out when not, and the audit, its rules and its reports never fail."""
    good = {"kind": "ConfigMap", "name": "web-values", "valuesKey": "values.yaml"}
    documents = {
        "helmrelease.yaml": {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                             "metadata": {"name": "web"},
                             "spec": {"interval": "1h", "chart": {"spec": {
                                 "chart": "web", "sourceRef": {"kind": "HelmRepository", "name": "charts"}}},
                                 "valuesFrom": [good, values_from] if isinstance(values_from, dict) else values_from}},
        "values.yaml": values,
        "kustomization.yaml": {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                               "namespace": "web", "resources": ["helmrelease.yaml"],
                               "configMapGenerator": [{"name": "web-values", "files": ["values.yaml"]}, generator]},
    }
    audit_tree_through_pipeline(write_documents(Path(tempfile.mkdtemp(dir=workdir)), documents),
                                "valuesFrom or generators")


ARGO_KEYS = st.sampled_from(["source", "sources", "destination", "path", "repoURL", "chart", "helm", "valueFiles",
                             "values", "valuesObject", "parameters", "kustomize", "namespace", "server", "name",
                             "directory", "recurse", "generators", "git", "directories", "template", "spec",
                             "metadata", "goTemplate", "releaseName", "exclude"])
ARGO_VALUES = st.recursive(
    VALUE_SCALARS | st.sampled_from(["apps", "apps/*", "apps/web", "charts/shop", "{{path}}", "{{.path.basename}}",
                                     "in-cluster", "https://kubernetes.default.svc", "values.yaml"]),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(ARGO_KEYS, inner, max_size=4)),
    max_leaves=16)


@given(application=st.dictionaries(ARGO_KEYS, ARGO_VALUES, max_size=5),
       application_set=st.dictionaries(ARGO_KEYS, ARGO_VALUES, max_size=5))
def test_argo_cd_specs_of_any_shape_never_crash_a_tree_audit(workdir: Path, application: dict[str, Any],
                                                             application_set: dict[str, Any]) -> None:
    """An Argo CD Application and ApplicationSet whose specs hold anything (paths to folders, kustomize or
    chart sources, Helm sections, generators, templates, in wrong types): the tree's entry points are
    resolved or noted, and the audit, its rules and its reports never fail."""
    files: dict[str, Any] = {
        "argocd/app.yaml": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                            "metadata": {"name": "root", "namespace": "argocd"}, "spec": application},
        "argocd/appset.yaml": {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                               "metadata": {"name": "apps", "namespace": "argocd"}, "spec": application_set},
        "apps/web/deployment.yaml": {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "metadata": {"name": "web"}, "spec": {"template": {"spec": {}}}},
        "apps/web/kustomization.yaml": {"resources": ["deployment.yaml"], "namespace": "web"},
        "charts/shop/Chart.yaml": {"apiVersion": "v2", "name": "shop", "version": "1.0.0"},
        "charts/shop/values.yaml": {"service": {"type": "LoadBalancer"}},
    }
    audit_tree_through_pipeline(write_documents(Path(tempfile.mkdtemp(dir=workdir)), files), "Argo CD specs",
                                audit_unreached=True)


FLUX_KEYS = st.sampled_from(["path", "targetNamespace", "sourceRef", "kind", "name", "namespace", "postBuild",
                             "substitute", "components", "dependsOn", "chart", "spec", "chartRef", "version",
                             "url", "ref", "tag", "semver", "interval", "prune", "releaseName", "install",
                             "storageNamespace", "driftDetection"])
FLUX_VALUES = st.recursive(
    VALUE_SCALARS | st.sampled_from(["./apps", "./clusters/x", "flux-system", "GitRepository", "OCIRepository",
                                     "HelmRepository", "cilium", "oci://ghcr.io/example/cilium", "1.19.1", "web"]),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(FLUX_KEYS, inner, max_size=4)),
    max_leaves=16)
FLUX_SPECS = st.dictionaries(FLUX_KEYS, FLUX_VALUES, max_size=5)


@given(sync=FLUX_SPECS, release=FLUX_SPECS, repository=FLUX_SPECS)
def test_flux_specs_of_any_shape_never_crash_a_tree_audit(workdir: Path, sync: dict[str, Any],
                                                          release: dict[str, Any], repository: dict[str, Any]) -> None:
    """Flux's own objects holding anything: the cluster's Kustomization (path, source, target namespace,
    substitutions), a HelmRelease's chart and chartRef (the Cilium chart is recognised by them) and the
    OCIRepository it may name. The tree's clusters are resolved or noted, and the audit, its rules and its
    reports never fail."""
    files: dict[str, Any] = {
        "clusters/x/flux-system/gotk-sync.yaml": [
            {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
             "metadata": {"name": "flux-system", "namespace": "flux-system"},
             "spec": {"interval": "1m", "url": "ssh://git@example.com/fleet", "ref": {"branch": "main"}}},
            {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
             "metadata": {"name": "flux-system", "namespace": "flux-system"}, "spec": sync}],
        "clusters/x/flux-system/kustomization.yaml": [{"resources": ["gotk-sync.yaml"]}],
        "apps/kustomization.yaml": [{"resources": ["release.yaml", "repository.yaml"], "namespace": "kube-system"}],
        "apps/release.yaml": [{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                               "metadata": {"name": "cilium"},
                               "spec": {**release, "values": {"kubeProxyReplacement": True}}}],
        "apps/repository.yaml": [{"apiVersion": "source.toolkit.fluxcd.io/v1beta2", "kind": "OCIRepository",
                                  "metadata": {"name": "cilium"}, "spec": repository}],
    }
    audit_tree_through_pipeline(write_documents(Path(tempfile.mkdtemp(dir=workdir)), files), "Flux specs",
                                audit_unreached=True)


KUSTOMIZATION_KEYS = ("namespace", "resources", "bases", "components", "patches", "patchesStrategicMerge",
                      "patchesJson6902", "configMapGenerator", "secretGenerator", "generatorOptions", "namePrefix",
                      "nameSuffix", "commonLabels", "labels", "commonAnnotations", "images", "replicas",
                      "replacements", "helmCharts", "crds", "openapi", "sortOptions", "kind", "apiVersion")
KUSTOMIZE_VALUES = st.recursive(
    VALUE_SCALARS | st.sampled_from(["base", "../base", "cm.yaml", "svc.yaml", "web", "app", "component"]),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(
        st.sampled_from(["path", "name", "files", "literals", "behavior", "target", "kind", "patch", "options",
                         "pairs", "includeSelectors", "newTag", "count", "namespace"]), inner, max_size=4)),
    max_leaves=16)


@given(overlay=st.fixed_dictionaries({}, optional=dict.fromkeys(KUSTOMIZATION_KEYS, KUSTOMIZE_VALUES)),
       component=st.fixed_dictionaries({}, optional=dict.fromkeys(KUSTOMIZATION_KEYS, KUSTOMIZE_VALUES)))
def test_kustomizations_of_any_shape_never_crash_a_tree_audit(workdir: Path, overlay: dict[str, Any],
                                                              component: dict[str, Any]) -> None:
    """An overlay and a component whose fields hold anything (resources, namespaces, generators, patches,
    prefixes, labels of wrong types), over a base with a Service and a Namespace: the builds are resolved or
    noted, objects placed with the namespace they get, and the audit, its rules and its reports never fail."""
    files: dict[str, Any] = {
        "base/kustomization.yaml": {"resources": ["svc.yaml", "ns.yaml"]},
        "base/svc.yaml": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                          "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}},
        "base/ns.yaml": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}},
        "component/kustomization.yaml": {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component",
                                         **component},
        "overlay/kustomization.yaml": {"resources": ["../base"], "components": ["../component"], **overlay},
        "overlay/cm.yaml": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}},
    }
    audit_tree_through_pipeline(write_documents(Path(tempfile.mkdtemp(dir=workdir)), files), "kustomizations",
                                audit_unreached=True)


# --- the configuration files of any shape ----------------------------------------------

def _config_documents(keys: list[str], scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Documents built from a file's own keys (so they reach past its first schema check) holding anything."""
    return st.dictionaries(st.sampled_from(keys), st.recursive(
        scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                         st.dictionaries(st.sampled_from(keys), inner, max_size=4)),
        max_leaves=14), max_size=4)


CONFIG_SCALARS = VALUE_SCALARS | st.sampled_from(
    ["gateway", "l4", "none", "*/*", "web", "Service", "lb-service-not-excepted", "2026-12-31", "1.19", "error",
     "warning", "192.168.1.200-192.168.1.220", "v1", "app=web", "posture.yaml", "exceptions.yaml"])
CONFIG_FILES = {
    "--posture": _config_documents(
        ["exposure", "mode", "allow", "contract", "file", "edgeGateways", "gatewayHostNetwork", "lbIpamL2",
         "approvedLbIpamRanges", "expected", "ciliumVersionLine", "gatewayApiBundleVersion", "clusters", "defaultDeny",
         "excludedNamespaces", "infrastructure", "kind", "l2", "maxFailoverSeconds", "name", "namespace",
         "nodePortName", "reason", "severity"], CONFIG_SCALARS),
    "--exceptions": _config_documents(
        ["exceptions", "name", "rules", "reason", "match", "kind", "apiVersion", "namespace", "labels", "expires",
         "owner", "ticket"], CONFIG_SCALARS),
    "--config": _config_documents(
        ["paths", "clusters", "exclude", "exceptions", "posture", "failOn", "requireComplete", "notApplicable",
         "rules", "only", "skip", "enabled", "severity", "exposure", "mode"], CONFIG_SCALARS),
    "--cilium-values": HELM_VALUES,
}


@settings(max_examples=CLI_EXAMPLES)
@given(data=st.data(), flag=st.sampled_from(sorted(CONFIG_FILES)))
def test_configuration_files_of_any_shape_are_used_or_refused_in_one_line(workdir: Path, data: st.DataObject,
                                                                           flag: str) -> None:
    """A posture, an exception list, a configuration file or Cilium's Helm values holding anything (their own
    keys, values of any type): the audit runs with it, or stops with one `audit: error:` line naming the
    file; never a traceback or an internal error, whichever part of the file is odd."""
    from tests.test_live_fixtures import run

    path = Path(tempfile.mkdtemp(dir=workdir)) / "file.yaml"
    path.write_text(yaml.safe_dump(data.draw(CONFIG_FILES[flag]), allow_unicode=True), encoding="utf-8")
    result = run(str(FIXTURES / "clusters" / "drifted.json"), flag, str(path), "--format", "json",
                 "--as-of", AS_OF.isoformat())
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    if result.code == 2:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("audit: error: "), result.stderr
        assert str(path.parent) in result.stderr, result.stderr  # the file, or one it names (beside it)
    else:
        assert result.code in (0, 1, 3), result.stderr
        REPORT_VALIDATOR.validate(json.loads(result.stdout))


def test_every_kind_a_rule_reads_has_a_template() -> None:
    """A rule reading a kind no template has would never meet a malformed object of it."""
    present = {K8sObject(t, Source("t")).gk for t in TEMPLATES if K8sObject.identity_problem(t) is None}
    read = {gk for rule in RULE_SET.rules for gk in rule.kinds_read()}
    assert read <= present, sorted(read - present)


@pytest.mark.parametrize("state", ["[]", "{a: 1}", "listed-ish", "null"])
def test_snapshot_header_with_a_malformed_state_is_refused(workdir: Path, state: str) -> None:
    """Found by the fuzzer: `state: []` crashed the header parser (unhashable in a dict lookup)."""
    path = workdir / "snapshot.yaml"
    path.write_text(f"apiVersion: v1\nkind: List\nauditSnapshot:\n  formatVersion: 1\n  kinds:\n"
                    f"    \"Service\\nx\":\n      state: {state}\nitems: []\n", encoding="utf-8")
    message = r"snapshot header auditSnapshot: kinds\.Service\\nx: state must be one of"
    with pytest.raises(InputError, match=message) as caught:
        read_paths([str(path)])
    check_input_error(caught.value, str(path))
