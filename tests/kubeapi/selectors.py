"""labelSelector and fieldSelector parsing, with the real server's semantics.

Label selectors support the full Kubernetes grammar: `k=v`, `k==v`, `k!=v`,
`k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k` (does not exist) and the
numeric `k>n` / `k<n`.  As on the real server, `!=` and `notin` also match
objects that lack the label.  Field selectors support `=`, `==` and `!=` on
`metadata.name`, `metadata.namespace` and the few extra fields the real
server indexes for some kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


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


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a `labelSelector` query value; raise SelectorError like the
    server's `unable to parse requirement` 400."""
    toks = _tokenize(text)
    pos = 0
    reqs: list[LabelRequirement] = []

    def peek() -> str | None:
        return toks[pos] if pos < len(toks) else None

    def fail(msg: str) -> SelectorError:
        return SelectorError(f"unable to parse requirement: {msg}")

    while pos < len(toks):
        if peek() == "!":
            pos += 1
            key = peek()
            if not _is_word(key):
                raise fail(f"found '{key or ''}', expected: identifier")
            pos += 1
            reqs.append(LabelRequirement(key, "!"))
        else:
            key = peek()
            if not _is_word(key):
                raise fail(f"found '{key}', expected: !, identifier, or 'end of string'")
            pos += 1
            op = peek()
            if op is None or op == ",":
                reqs.append(LabelRequirement(key, "exists"))
            elif op in ("=", "==", "!="):
                pos += 1
                value = ""
                if _is_word(peek()):
                    value = toks[pos]
                    pos += 1
                reqs.append(LabelRequirement(key, "!=" if op == "!=" else "=", (value,)))
            elif op in (">", "<"):
                pos += 1
                value = peek()
                if not _is_word(value) or not value.lstrip("-").isdigit():
                    raise fail(f"for 'gt', 'lt' operators, the value must be an integer, got '{value}'")
                pos += 1
                reqs.append(LabelRequirement(key, "gt" if op == ">" else "lt", (value,)))
            elif op in ("in", "notin"):
                pos += 1
                if peek() != "(":
                    raise fail(f"found '{peek() or ''}', expected: '('")
                pos += 1
                values: list[str] = []
                while True:
                    tok = peek()
                    if tok is None:
                        raise fail("found '', expected: ',', ')' or identifier")
                    if tok == ")":
                        pos += 1
                        break
                    if tok == ",":
                        pos += 1
                        continue
                    if not _is_word(tok):
                        raise fail(f"found '{tok}', expected: ',', ')' or identifier")
                    values.append(tok)
                    pos += 1
                if not values and op == "in":
                    raise fail("for 'in', 'notin' operators, values set can't be empty")
                reqs.append(LabelRequirement(key, op, tuple(values)))
            else:
                raise fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        if pos < len(toks):
            if toks[pos] != ",":
                raise fail(f"found '{toks[pos]}', expected: ',' or 'end of string'")
            pos += 1
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...]

    def matches(self, obj: Mapping) -> bool:
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


def field_value(obj: Mapping, path: str) -> str:
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
    allowed = ("metadata.name", "metadata.namespace") + EXTRA_FIELDS.get((group, plural), ())
    for r in selector.requirements:
        if r.field not in allowed:
            raise SelectorError(f'field label not supported: {r.field}')
