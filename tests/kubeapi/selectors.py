"""labelSelector and fieldSelector parsing, with the real server's semantics.

Label selectors support the full Kubernetes grammar: `k=v`, `k==v`, `k!=v`,
`k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (does not exist) and the
numeric `k>n` / `k<n`.  As on the real server, `!=` and `notin` also match
objects that lack the label.  Field selectors support `=`, `==` and `!=` on
`metadata.name`, `metadata.namespace` and the few extra fields the real
server indexes for some kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """A selector the real API server would reject with 400 BadRequest."""


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        # gt / lt: both sides must parse as integers, else no match.
        try:
            lhs, rhs = int(value or ""), int(self.values[0])
        except ValueError:
            return False
        return lhs > rhs if self.op == "gt" else lhs < rhs


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[LabelRequirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


_SPECIAL = "!=(),<> \t"


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in " \t":
            i += 1
        elif text.startswith("==", i) or text.startswith("!=", i):
            tokens.append(text[i:i + 2])
            i += 2
        elif c in "!=(),<>":
            tokens.append(c)
            i += 1
        else:
            j = i
            while j < len(text) and text[j] not in _SPECIAL:
                j += 1
            tokens.append(text[i:j])
            i = j
    return tokens


def _is_word(tok: str | None) -> bool:
    return tok is not None and tok not in ("!", "=", "==", "!=", "(", ")", ",", "<", ">")


def _fail(msg: str) -> SelectorError:
    return SelectorError(f"unable to parse requirement: {msg}")


class _Tokens:
    """A cursor over a label selector's tokens."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        tok = self.peek()
        self.pos += 1
        return tok

    @property
    def done(self) -> bool:
        return self.pos >= len(self.tokens)


def _value_set(toks: _Tokens, op: str) -> tuple[str, ...]:
    """`(a, b, c)` after `in` / `notin`."""
    if toks.peek() != "(":
        raise _fail(f"found '{toks.peek() or ''}', expected: '('")
    toks.take()
    values: list[str] = []
    while True:
        tok = toks.take()
        if tok is None:
            raise _fail("found '', expected: ',', ')' or identifier")
        if tok == ")":
            break
        if tok == ",":
            continue
        if not _is_word(tok):
            raise _fail(f"found '{tok}', expected: ',', ')' or identifier")
        values.append(tok)
    if not values and op == "in":
        raise _fail("for 'in', 'notin' operators, values set can't be empty")
    return tuple(values)


def _requirement(toks: _Tokens) -> LabelRequirement:
    """One requirement: `!key`, `key`, `key=v`, `key!=v`, `key>1`, `key in (a,b)`..."""
    if toks.peek() == "!":
        toks.take()
        key = toks.peek()
        if key is None or not _is_word(key):
            raise _fail(f"found '{key or ''}', expected: identifier")
        toks.take()
        return LabelRequirement(key, "!")
    key = toks.peek()
    if key is None or not _is_word(key):
        raise _fail(f"found '{key}', expected: !, identifier, or 'end of string'")
    toks.take()
    op = toks.peek()
    if op is None or op == ",":
        return LabelRequirement(key, "exists")
    toks.take()
    if op in ("=", "==", "!="):
        value = toks.take() if _is_word(toks.peek()) else ""
        return LabelRequirement(key, "!=" if op == "!=" else "=", (value or "",))
    if op in (">", "<"):
        value = toks.peek()
        if value is None or not _is_word(value) or not value.lstrip("-").isdigit():
            raise _fail(f"for 'gt', 'lt' operators, the value must be an integer, got '{value}'")
        toks.take()
        return LabelRequirement(key, "gt" if op == ">" else "lt", (value,))
    if op in ("in", "notin"):
        return LabelRequirement(key, op, _value_set(toks, op))
    raise _fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a `labelSelector` query value; raise SelectorError like the
    server's `unable to parse requirement` 400."""
    toks = _Tokens(_tokenize(text))
    reqs: list[LabelRequirement] = []
    while not toks.done:
        reqs.append(_requirement(toks))
        if not toks.done:
            if toks.peek() != ",":
                raise _fail(f"found '{toks.peek()}', expected: ',' or 'end of string'")
            toks.take()
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...]

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for r in self.requirements:
            equal = field_value(obj, r.field) == r.value
            if equal == r.negate:
                return False
        return True


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if text[i] == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(text[i])
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(text: str) -> str:
    return text.replace("\\,", ",").replace("\\=", "=").replace("\\\\", "\\")


def parse_field_selector(text: str) -> FieldSelector:
    reqs = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for op, negate in (("!=", True), ("==", False), ("=", False)):
            idx = part.find(op)
            if idx > 0:
                reqs.append(FieldRequirement(part[:idx].strip(), _unescape(part[idx + len(op):]), negate))
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(reqs))


# Fields the real server indexes beyond metadata.name / metadata.namespace,
# keyed by (group, plural).  Anything else is a 400 "field label not supported".
EXTRA_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "secrets"): ("type",),
    ("", "pods"): ("spec.nodeName", "spec.serviceAccountName", "status.phase", "status.podIP"),
    ("", "namespaces"): ("status.phase",),
    ("", "nodes"): ("spec.unschedulable",),
    # kubectl describe lists an object's events by these.
    ("", "events"): ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion",
                     "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                     "reportingComponent", "source", "type"),
}


def field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: object = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def check_fields(selector: FieldSelector, group: str, plural: str) -> None:
    allowed = ("metadata.name", "metadata.namespace", *EXTRA_FIELDS.get((group, plural), ()))
    for r in selector.requirements:
        if r.field not in allowed:
            raise SelectorError(f'field label not supported: {r.field}')
