"""JSON report text: `json.dumps(value, indent=2, ensure_ascii=False)`, byte for byte, at C speed.

The pure-Python encoder `json` falls back to whenever `indent` is set took ~0.5 s for the
13 MB report of a 100k-Service audit. orjson writes the same indented layout (two spaces,
`": "` between key and value, `[]` and `{}` for empty containers) in a tenth of that,
but may spell a scalar otherwise (floats: `1e16` for `1e+16`, `null` for NaN). So the
scalars are proven equal first: `json`'s own C encoder (compact, which it does at C speed)
and orjson's compact output must be the same bytes; then the layout is orjson's. Anything
orjson refuses (non-string keys, integers beyond 64 bits, lone surrogates) or spells
otherwise goes to `json.dumps` itself, which stays the definition (tests/test_json_text.py).
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; json alone gives the same text
    orjson = None  # type: ignore[assignment]

# Types orjson would write where `json` raises: handed to `default` (none), so orjson raises too.
_PASSTHROUGH = 0 if orjson is None else orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def dumps_indented(value: Any) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)`."""
    if orjson is not None:
        try:
            compact = orjson.dumps(value, option=_PASSTHROUGH)
            if compact == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"):
                return orjson.dumps(value, option=_PASSTHROUGH | orjson.OPT_INDENT_2).decode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError):  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(value, indent=2, ensure_ascii=False)
