"""auditor/report/json_text.py: the JSON reports are `json.dumps(indent=2, ensure_ascii=False)`, byte for byte."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.report import json_text

orjson = pytest.importorskip("orjson")

# Every scalar a report could hold, and the ones orjson spells otherwise or refuses.
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text() | st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x3000))
    | st.sampled_from(["", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "\ufeff", "\ud800", "\"\\/", "é😀"])
)
KEYS = st.text() | st.sampled_from(["", "\n", "\ud800", "a\"b"]) | st.integers(-5, 5) | st.booleans() | st.none()
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.tuples(children, children)
    | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=25,
)


def expected(value: Any) -> str | type[BaseException]:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as error:
        return type(error)


def actual(value: Any) -> str | type[BaseException]:
    try:
        return json_text.dumps_indented(value)
    except (TypeError, ValueError, RecursionError) as error:
        return type(error)


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_same_text_as_json_dumps(value: Any) -> None:
    assert actual(value) == expected(value)


@pytest.mark.parametrize("value", [
    {"n": 1e16}, {"n": 1e-7}, {"n": math.nan}, {"n": -math.inf}, {"big": 2**64}, {"big": -(2**63) - 1},
    {1: "int key"}, {None: "none key"}, {"s": "\ud800"}, [], {}, [[], {}, [{}]], "top", 0, None,
])
def test_values_orjson_spells_otherwise(value: Any) -> None:
    assert actual(value) == expected(value)


def test_types_json_refuses_are_still_refused() -> None:
    import dataclasses
    import datetime as dt

    @dataclasses.dataclass
    class Point:
        x: int

    for value in ({"when": dt.date(2026, 1, 1)}, {"p": Point(1)}, {"s": {1, 2}}):
        with pytest.raises(TypeError):
            json_text.dumps_indented(value)


def test_a_report_shaped_value_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strings, ints, bools and None only (what the reports hold): orjson's layout, json's pure-Python
    indenting encoder never called."""
    value = {"rule": "lb-service-not-excepted", "line": 12, "column": None, "ok": True,
             "findings": [{"message": "exposes 443/TCP\tfrom \"edge\" \u2028 é", "object": {}}, []]}
    want = json.dumps(value, indent=2, ensure_ascii=False)
    real_dumps = json.dumps

    def compact_only(obj: Any, **kwargs: Any) -> str:
        assert kwargs.get("indent") is None, "the pure-Python encoder was used"
        return real_dumps(obj, **kwargs)

    monkeypatch.setattr(json_text.json, "dumps", compact_only)
    assert json_text.dumps_indented(value) == want
