"""Plain-scalar resolution and JSON conversion as kubectl does them.

kubectl reads YAML with sigs.k8s.io/yaml, which decodes with its fork of
go-yaml v2 (`sigs.k8s.io/yaml/goyaml.v2`, based on v2.4.0) and converts the
result to JSON before anything else sees it. So what reaches the API server is
go-yaml v2's reading of each plain scalar, passed through JSON:

- resolution: `gopkg.in/yaml.v2/resolve.go` `resolve()`; YAML 1.1 booleans
  including `y`/`n`, no sexagesimal numbers (`1:20` stays a string), Go's
  `strconv.ParseInt(s, 0, 64)` for integers after removing `_` (so `0o17`,
  `0b101`, `0x1F` and `017` are numbers), then `ParseUint`, then floats of the
  form `yamlStyleFloat` (`1e3` is a number; PyYAML reads it as a string);
  anything else is a string (`=`, `<<` as a value, `tRUE`, `0x1p-2`);
- timestamps: sigs.k8s.io/yaml keeps them as the text written;
- JSON: map keys become strings (`convertToJSONableObject`: bools as
  `true`/`false`, numbers in decimal, floats with `FormatFloat(f, 'g', -1,
  32)`, null keys refused); `.inf` and `.nan` are refused by `json.Marshal`;
- the API machinery then decodes the JSON into unstructured objects
  (`k8s.io/apimachinery/pkg/util/json`): a number that is integral and fits
  int64 is an integer, any other a float. `1.0` is therefore sent as `1`, and
  `99999999999999999999` as the float 1e20.

Verified against `kubectl label --local -f FILE x=y -o json` (kubectl 1.32,
no server needed): tests/test_yaml_kubectl.py runs every case through it when
kubectl is installed. kustomize and Flux read YAML with go-yaml v3 (kyaml),
which differs (YAML 1.2 booleans: `yes` is a string there); the auditor
follows kubectl for values, as the issue asks, and docs/input.md lists where
v3 differs.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from decimal import Decimal
from typing import Any

STR_TAG = "tag:yaml.org,2002:str"
NULL_TAG = "tag:yaml.org,2002:null"
BOOL_TAG = "tag:yaml.org,2002:bool"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
MERGE_TAG = "tag:yaml.org,2002:merge"

BOOLS: dict[str, bool] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
NULLS = frozenset(("", "~", "null", "Null", "NULL"))
SPECIAL_FLOATS: dict[str, float] = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_TABLE: dict[str, str] = {
    **dict.fromkeys(BOOLS, BOOL_TAG),
    **dict.fromkeys(NULLS, NULL_TAG),
    **dict.fromkeys(SPECIAL_FLOATS, FLOAT_TAG),
}
# go-yaml's resolveTable: only these first characters can start a non-string.
_HINT: dict[str, str] = {
    **dict.fromkeys("+-", "S"),
    **dict.fromkeys("0123456789", "D"),
    **dict.fromkeys("yYnNtTfFoO~", "M"),
    ".": ".",
}
FIRST_CHARACTERS = frozenset(_HINT)
# Go integer syntax accepted by strconv.ParseInt(s, 0, 64) once `_` are removed.
_GO_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
# The longest Go integer literal that can fit 64 bits: `-0b` and 64 binary digits.
_MAX_INT_TEXT = 67


def go_int(plain: str) -> int | None:
    """The integer strconv.ParseInt(plain, 0, 64), else ParseUint, would return (None: neither)."""
    if len(plain) > _MAX_INT_TEXT or not _GO_INT.fullmatch(plain):
        return None
    sign = -1 if plain[0] == "-" else 1
    body = plain[1:] if plain[0] in "+-" else plain
    prefix = body[:2].lower()
    if prefix == "0x":
        value = int(body[2:], 16)
    elif prefix == "0o":
        value = int(body[2:], 8)
    elif prefix == "0b":
        value = int(body[2:], 2)
    elif body.startswith("0"):
        value = int(body, 8)
    else:
        value = int(body)
    value *= sign
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    if plain[0] not in "+-" and value <= _UINT64_MAX:  # ParseUint takes no sign
        return value
    return None


def is_int_syntax(text: str) -> bool:
    """Whether `text` is written as a Go integer, whatever its size."""
    return _GO_INT.fullmatch(text.replace("_", "")) is not None


def go_float(plain: str) -> float | None:
    """A float of go-yaml's `yamlStyleFloat` form that ParseFloat accepts (not out of range)."""
    if not _YAML_STYLE_FLOAT.fullmatch(plain):
        return None
    value = float(plain)
    return None if math.isinf(value) else value


def _dot_float(text: str) -> float | None:
    if not _DOT_FLOAT.fullmatch(text):
        return None
    value = float(text)
    return None if math.isinf(value) else value


def resolve_plain(text: str) -> str:
    """The tag go-yaml v2 gives a plain (unquoted, untagged) scalar."""
    if not text:
        return NULL_TAG
    if text == "<<":
        # go-yaml's decoder takes a plain `<<` key as the merge key (isMerge); as a value it is the string.
        return MERGE_TAG
    hint = _HINT.get(text[0])
    if hint is None:
        return STR_TAG
    known = _TABLE.get(text)
    if known is not None:
        return known
    if hint == "M":
        return STR_TAG
    if hint == ".":
        return FLOAT_TAG if _dot_float(text) is not None else STR_TAG
    if _TIMESTAMP.match(text):  # dates and times stay the text written
        return STR_TAG
    plain = text.replace("_", "")
    number = go_int(plain)
    if number is not None:
        return INT_TAG if _INT64_MIN <= number <= _INT64_MAX else FLOAT_TAG
    return FLOAT_TAG if go_float(plain) is not None else STR_TAG


def parse_number(text: str) -> int | float | None:
    """The number a scalar resolved (or tagged) as int or float stands for, as kubectl sends it."""
    if text and text[0] == ".":
        dotted = _dot_float(text)
        return None if dotted is None else as_json_number(dotted)
    plain = text.replace("_", "")
    number = go_int(plain)
    if number is not None:
        return number if _INT64_MIN <= number <= _INT64_MAX else float(number)
    value = go_float(plain)
    return None if value is None else as_json_number(value)


def parse_int(text: str) -> int | float | None:
    """An explicit `!!int`: only what ParseInt/ParseUint accept (a uint64 beyond int64 is sent as a float)."""
    number = go_int(text.replace("_", ""))
    if number is None:
        return None
    return number if _INT64_MIN <= number <= _INT64_MAX else float(number)


def as_json_number(value: float) -> int | float:
    """What a float becomes once through JSON into an unstructured object.

    Go's encoder writes the shortest digits that round-trip, padded with
    zeros (`-9223372036854776000`); the API machinery's decoder then takes a
    number that is integral and fits int64 as an integer. So the integer is
    the one those digits spell, not the float's exact binary value.
    """
    if not value.is_integer():
        return value
    spelled = int(Decimal(repr(value)))
    return spelled if _INT64_MIN <= spelled <= _INT64_MAX else value


def _format_float32(value: float) -> str:
    """Go's strconv.FormatFloat(value, 'g', -1, 32): the shortest text that round-trips as float32."""
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    if math.isnan(value):
        return ".nan"
    single = struct.unpack("f", struct.pack("f", value))[0]
    for precision in range(1, 10):
        text = f"{single:.{precision}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            return text
    return f"{single:.9g}"  # pragma: no cover - 9 digits always round-trip a float32


def json_key(key: Any) -> str | None:
    """A constructed mapping key as sigs.k8s.io/yaml writes it in JSON (None: it refuses the key)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        try:
            return _format_float32(key)
        except OverflowError:  # beyond float32: Go prints +Inf
            return ".inf" if key > 0 else "-.inf"
    return None


def looks_like_timestamp(text: str) -> bool:
    return _TIMESTAMP.match(text) is not None


def decode_binary(text: str) -> str | None:
    """A `!!binary` scalar as kubectl sends it: the decoded bytes as a (UTF-8, invalid bytes replaced) string."""
    cleaned = text.replace("\n", "").replace("\r", "")  # what Go's base64 decoder skips
    try:
        data = base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data.decode("utf-8", errors="replace")
