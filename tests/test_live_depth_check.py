"""The depth pre-check of live answers (auditor/sources/live/client.py) removes the escapes from a
fraction of the answer's bytes (`_escapes_kept`): the bracket structure it finds must be exactly
the one found by removing them from the whole answer, for any JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.sources.live import client

# Strings rich in what matters here: backslashes, quotes, brackets, escape letters, surrogates.
_TEXT = st.text(alphabet=st.sampled_from(list('\\"{}[]/bfnrtuaz09 \n\t\b\f\r\x00\u00e9\u2028\ud800\U0001f600')),
                max_size=12)
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=30,
)


def _structure_from_the_whole(body: bytes) -> bytes:
    """The structure as the check found it before: escapes removed from every byte of the answer."""
    if b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    return body.translate(None, client._NOT_STRUCTURE)


def _structure_from_the_kept(body: bytes) -> bytes:
    escapes = client._escapes_kept(body)
    if escapes is not None:
        body = escapes.replace(b"\\\\", b"").replace(b'\\"', b"")
    return body.translate(None, client._NOT_STRUCTURE)


@settings(max_examples=400, deadline=None)
@given(_JSON, st.booleans())
def test_the_kept_bytes_give_the_structure_of_the_whole_answer(value: Any, ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert _structure_from_the_kept(body) == _structure_from_the_whole(body)


def test_runs_of_backslashes_brought_together_pair_up_as_before() -> None:
    # Escaped backslashes around bytes the first pass deletes, then an escaped quote.
    body = json.dumps(["\\a\\", "\\x\\\\\"y", "\\\u00e9\\\"", "{\\}", "\\u"]).encode()
    assert _structure_from_the_kept(body) == _structure_from_the_whole(body)
    assert not client._maybe_deeper_than_half(body, 2, client._escapes_kept(body))
    solidus = b'["\\/", {"k\\/": "\\/\\"\\/"}]'  # `\/`, which JSON allows and json.dumps never writes
    assert json.loads(solidus) == ["/", {"k/": '/"/'}]
    assert _structure_from_the_kept(solidus) == _structure_from_the_whole(solidus)


def test_a_deep_answer_is_still_refused() -> None:
    deep = ("[" * 60 + '"a\\\\\\"b"' + "]" * 60).encode()
    client.check_answer(deep, json.loads(deep), "/api/v1/services")  # 60 levels: within the limit
    deeper = ("[" * 120 + '"a\\\\\\"b"' + "]" * 120).encode()
    with pytest.raises(client.UnusableAnswer, match="nested deeper than 100 levels"):
        client.check_answer(deeper, json.loads(deeper), "/api/v1/services")
