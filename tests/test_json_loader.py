"""The JSON fast path (issue 15): the same objects, lines, errors and reports as the exact path.

`load_json_bytes` splits a List at its item boundaries and parses each item
with orjson; `load_json` is the exact item-by-item decoder. Whatever the
input, the fast path either returns exactly what the exact path returns, or
steps aside (None) so the exact path answers; a duplicate key is an error on
both.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auditor import engine, exceptions_list, registry
from auditor.errors import InputError
from auditor.parsing import json_docs
from auditor.parsing.json_docs import JSONInputError, load_json, load_json_bytes
from auditor.posture import Posture
from auditor.report import FORMATS, renderer
from auditor.sources.files import ReadLimits, read_paths
from tests.conftest import AS_OF, FIXTURES, ROOT, run_cli

sys.path.insert(0, str(ROOT / "benchmarks"))

KEYS = st.one_of(st.sampled_from(["apiVersion", "kind", "metadata", "name", "spec", "a", "a\"", "a\\", "é", "", "x:y"]),
                 st.text(max_size=6))
LEAVES = st.one_of(
    st.none(), st.booleans(), st.text(max_size=12),
    st.sampled_from(['{"a": 1}', "x: y", "\\\":", "\u2028", "}\n{", "], [", "e+", "1E+5", "😀"]),
    st.integers(min_value=-(2**70), max_value=2**70),  # beyond 64 bits too: orjson would read a float
    st.floats(allow_nan=False, allow_infinity=False),
)
VALUES = st.recursive(LEAVES, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)), max_leaves=25)
ITEMS = st.lists(st.dictionaries(KEYS, VALUES, max_size=5), max_size=8)


def as_list(items: list[Any], indent: int, sort_keys: bool) -> bytes:
    document = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    return json.dumps(document, indent=indent, sort_keys=sort_keys, ensure_ascii=False).encode("utf-8")


@given(items=ITEMS, indent=st.sampled_from([2, 4]), sort_keys=st.booleans())
def test_fast_path_reads_what_the_exact_path_reads(items: list[Any], indent: int, sort_keys: bool) -> None:
    data = as_list(items, indent, sort_keys)
    exact = load_json(data.decode("utf-8"))
    fast = load_json_bytes(data)
    assert fast is not None  # an indented List is always the fast path's
    assert fast.data == exact.data and fast.line == exact.line and fast.item_lines == exact.item_lines
    assert json.dumps(fast.data, sort_keys=False) == json.dumps(exact.data, sort_keys=False)  # key order too


DUPLICATES = [
    '{"a": 1, "a": 2}',
    '{"a": 1, "b": {"c": 1, "c": 1}}',
    '{"x": [{"k": 1, "k": 2}]}',
    '{"a" : 1, "a": 2}',              # a space before the colon
    '{"a\\\\": 1, "a\\\\": 2}',        # keys ending in an escaped backslash
    '{"\\u0061": 1, "a": 2}',          # the same key spelled twice
    '{"s": "\\": \\": \\":", "a": 1, "a": 2}',  # quotes and colons inside strings
    '{"s": "\\u003a", "a": 1, "a": 2}',  # a colon spelled as an escape: orjson writes it back as `:`,
    '{"s": "x\\u003Ay", "a": 1, "a": 2}',  # which would make up for the colon of the dropped key
]


@pytest.mark.parametrize("item", DUPLICATES)
def test_duplicate_keys_inside_items_are_refused_with_their_line(item: str) -> None:
    # A kubectl-laid-out List whose second item holds `item` (written as is: json.dumps cannot repeat a key).
    data = as_list([{"first": 1}, {"dup": "@@", "z": 1}], 4, True).replace(b'"@@"', item.encode())
    with pytest.raises(JSONInputError, match="duplicate key") as fast:
        load_json_bytes(data)
    with pytest.raises(JSONInputError, match="duplicate key") as exact:
        load_json(data.decode("utf-8"))
    assert fast.value.line == exact.value.line == 7  # the item's first line


def test_duplicate_keys_around_the_items_are_refused() -> None:
    for data in (b'{\n    "kind": "List",\n    "items": [\n        {}\n    ],\n    "kind": "List"\n}',
                 b'{\n    "items": [\n        {}\n    ],\n    "metadata": {"a": 1, "a": 2}\n}'):
        assert load_json_bytes(data) is None  # the exact path names it
        with pytest.raises(JSONInputError, match="duplicate key"):
            load_json(data.decode())


@pytest.mark.parametrize("data", [
    b'{\n  "items": [\n    {"a": NaN}\n  ]\n}',
    b'{\n  "items": [\n    {"a": "\\ud800"}\n  ]\n}',
    b'{\n  "items": [\n    {"a": 123456789012345678901234567890}\n  ]\n}',
    b'{\n  "items": [\n    {"a": 1E400}\n  ]\n}',
    b'{\n  "items": [\n    {"a": "\xff"}\n  ]\n}',
    b'{\n  "items": [\n    {"a": [\n    },\n    {\n    ]}\n  ]\n}',   # hand-indented: a split that does not hold
    b'{"kind": "List", "items": [{"a": 1}, {"b": 2}]}',                # one line
    # a later key's array closing at the items' indentation: the split must not hold
    b'{\n  "items": [\n    {"a": 1}\n  ],\n  "more": [\n    {"b": 2}\n  ]\n}',
    b'{\n  "items": [\n    {"a": 1},\n    {"c": 3}\n  ],\n  "more": [\n    {"b": 2},\n    {"d": 4}\n  ]\n}',
    b'{\n  "items": [\n    {"a": 1}\n  ],\n  "more": [\n  ]\n}',
])
def test_unusual_input_is_left_to_the_exact_path(data: bytes) -> None:
    fast = load_json_bytes(data)
    try:
        exact: Any = load_json(data.decode("utf-8"))
    except (JSONInputError, UnicodeDecodeError) as error:
        exact = type(error)
    if fast is not None:
        assert not isinstance(exact, type) and fast.data == exact.data and fast.item_lines == exact.item_lines
    else:
        assert data.count(b"\n") == 0 or exact is not None


def test_one_line_lists_get_columns_and_indented_lists_do_not() -> None:
    one_line = '{"kind":"List","items":[{"a":1},{"b":2}, {"c":3}]}'
    assert load_json(one_line).item_columns == [25, 33, 42]
    assert load_json(as_list([{"a": 1}, {"b": 2}], 4, True).decode()).item_columns == []


SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}}


def test_one_line_json_findings_carry_a_column_in_every_report(tmp_path: Path) -> None:
    """`kubectl get -o json | jq -c`: every finding used to read `:1`."""
    other = {**SERVICE, "metadata": {"name": "api", "namespace": "shop"}}
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [SERVICE, other]}, separators=(",", ":"))
    path = tmp_path / "compact.json"
    path.write_text(text, encoding="utf-8")
    columns = [text.index('{"apiVersion"', 1) + 1, text.rindex('{"apiVersion"') + 1]
    report = json.loads(run_cli(str(path), "--format", "json", "--as-of", AS_OF.isoformat()).stdout)
    located = {(f["object"]["name"], f.get("line"), f.get("column")) for f in report["findings"] if f.get("file")}
    assert ("web", 1, columns[0]) in located and ("api", 1, columns[1]) in located
    sarif = json.loads(run_cli(str(path), "--format", "sarif", "--as-of", AS_OF.isoformat()).stdout)
    regions = [loc["physicalLocation"]["region"] for result in sarif["runs"][0]["results"]
               for loc in result["locations"] if "physicalLocation" in loc]
    assert {"startLine": 1, "startColumn": columns[0]} in regions
    text_report = run_cli(str(path), "--format", "text", "--as-of", AS_OF.isoformat()).stdout
    assert f"compact.json:1:{columns[1]}" in text_report


# --- byte-identical reports -------------------------------------------------------------------------


def _reports(paths: list[str], exact: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    with monkeypatch.context() as patch:
        if exact:
            patch.setattr("auditor.sources.files.load_json_bytes", lambda data, max_nodes=None: None)
        snapshot = read_paths(paths, limits=ReadLimits())
    result = engine.run(snapshot, registry.load_rules(plugins=False), exceptions_list.ExceptionList("(none)", []),
                        Posture(), as_of=AS_OF)
    # Prometheus carries the run's timestamp: every other format must match byte for byte.
    return {name: renderer(name)(result) for name in sorted(FORMATS) if name != "prometheus"}


def _synthetic_dump(tmp_path: Path) -> str:
    from synth import write_kubectl_list  # type: ignore[import-not-found]  # benchmarks/, on sys.path
    from synth_cluster import Drift, build_cluster  # type: ignore[import-not-found]

    path = tmp_path / "synth.json"
    write_kubectl_list(build_cluster(600, 7, Drift()), path)
    return str(path)


def test_reports_are_byte_identical_through_either_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every JSON fixture (and a synthetic kubectl dump): the same bytes in every report format."""
    inputs = sorted(str(p) for p in (FIXTURES / "clusters").glob("*.json"))
    inputs.append(_synthetic_dump(tmp_path))
    for path in inputs:
        fast_data = Path(path).read_bytes()
        assert load_json_bytes(fast_data) is not None, path  # the comparison exercises the fast path
        assert _reports([path], False, monkeypatch) == _reports([path], True, monkeypatch), path


def test_the_collector_is_restored_and_what_was_read_frozen(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [SERVICE]}, indent=4), encoding="utf-8")
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    read_paths([str(path)])
    assert gc.isenabled() and gc.get_freeze_count() == frozen  # a library caller's collector sees everything
    read_paths([str(path)], freeze=True)
    assert gc.isenabled() and gc.get_freeze_count() > frozen  # the command line: read once, then frozen
    gc.unfreeze()
    gc.disable()
    try:
        read_paths([str(path)])
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_the_value_budget_is_checked_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "dense.json"
    path.write_text('{"kind": "List", "apiVersion": "v1", "items": [' + ",".join(["{}"] * 5000) + "]}",
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"dense.json: about 10,00\d JSON values .* over the 1,000-value limit"):
        read_paths([str(path)], limits=ReadLimits(max_json_nodes=1000))
    assert json_docs.estimated_json_nodes(b'{"a": [1, 2, {"b": 3}]}') >= 5


def test_checks_that_run_on_groups_of_items_still_find_the_one_item() -> None:
    """Items are checked 64 at a time: a duplicate key or a big number in the 150th is still found."""
    items: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"k": str(i)}}
        for i in range(200)]
    items[130]["data"]["n"] = "@@big"
    items[150]["data"]["d"] = "@@dup"
    data = as_list(items, 4, True)
    big = data.replace(b'"@@big"', b"123456789012345678901234567890").replace(b'"@@dup"', b"1")
    fast, exact = load_json_bytes(big), load_json(big.decode())
    assert fast is not None and fast.data == exact.data and fast.item_lines == exact.item_lines
    assert fast.data["items"][130]["data"]["n"] == 123456789012345678901234567890  # an int, as `json` reads it
    negative = data.replace(b'"@@big"', b"-9223372036854775809").replace(b'"@@dup"', b"1")
    assert load_json_bytes(negative).data == load_json(negative.decode()).data  # type: ignore[union-attr]
    assert load_json(negative.decode()).data["items"][130]["data"]["n"] == -9223372036854775809
    dup = data.replace(b'"@@big"', b"1").replace(b'"@@dup"', b'{"x": 1, "x": 2}')
    with pytest.raises(JSONInputError, match="duplicate key 'x'") as raised:
        load_json_bytes(dup)
    assert raised.value.line == exact.item_lines[150]


def test_digests_uids_addresses_and_dates_keep_a_group_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The group checks delete most bytes before counting; what they keep must still tell apart the
    digits of what kubectl dumps are full of, or every group would be read item by item (2 s more
    on a 100k-object dump). A real 19-digit number still sends its group item by item."""
    import base64

    items = [{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"p{i}", "namespace": "apps", "uid": f"33cb59ef-15c0-4765-b51b-d20fda4bd{i:03x}",
                     "creationTimestamp": "2024-12-07T03:30:31Z", "resourceVersion": str(32466638 + i)},
        "spec": {"containers": [{"image": "registry.example/app@sha256:db8f0e32edef50031fce01e3042b03ca75a72686"
                                          "d6321d31c8acffcfa04d4d14", "ports": [{"containerPort": 8080}]}]},
        "status": {"podIP": f"10.244.{i % 250}.{i % 200}", "hostIP": "192.168.10.21",
                   "startTime": "2024-12-07T03:30:31.123456Z"},
        "data": {"config": base64.b64encode(f"user-{i}:password-{i * 7919}".encode()).decode()},
    } for i in range(300)]
    item_by_item: list[int] = []
    real_loads = json_docs._loads
    def counting(source: bytes, classes: bytes | None = None) -> Any:
        if b'"kind": "Pod"' in source:  # an item (the List's own keys are read this way too)
            item_by_item.append(1)
        return real_loads(source, classes)

    monkeypatch.setattr(json_docs, "_loads", counting)
    data = as_list(items, 4, True)
    fast = load_json_bytes(data)
    assert fast is not None and fast.data == load_json(data.decode()).data
    assert item_by_item == []
    big = data.replace(b'"resourceVersion": "32466738"', b'"resourceVersion": 12345678901234567890')
    assert big != data and load_json_bytes(big).data == load_json(big.decode()).data  # type: ignore[union-attr]
    assert 0 < len(item_by_item) <= json_docs._GROUP
