"""Kubernetes label selectors (`matchLabels` + `matchExpressions`), as pure functions.

Malformed selectors (wrong types anywhere) select nothing rather than
everything: a broken selector must not make a rule think a policy covers a
namespace it does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Cilium endpoint selectors may prefix keys with the label source (`k8s:app`,
# `any:app`); the prefix does not change which pods match in a cluster.
_CILIUM_SOURCES = ("k8s:", "any:", "container:", "reserved:")


def strip_source(key: str) -> str:
    for prefix in _CILIUM_SOURCES:
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def is_empty_selector(selector: Any) -> bool:
    """`{}` (or only empty matchLabels/matchExpressions): selects everything."""
    if not isinstance(selector, dict):
        return False
    labels = selector.get("matchLabels")
    expressions = selector.get("matchExpressions")
    if set(selector) - {"matchLabels", "matchExpressions"}:
        return False
    return (labels is None or labels == {}) and (expressions is None or expressions == [])


def _expression_matches(expression: Any, labels: Mapping[str, str]) -> bool:
    if not isinstance(expression, dict):
        return False
    key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values")
    if not isinstance(key, str) or not isinstance(operator, str):
        return False
    key = strip_source(key)
    values = values if isinstance(values, list) else []
    # The API server (and Cilium's slim copy of apimachinery) rejects In/NotIn with no values and
    # Exists/DoesNotExist with some ("values set can't be empty", cilium/cilium#23280): such a
    # selector is invalid, and an invalid selector selects nothing.
    if (operator in ("In", "NotIn")) != bool(values):
        return False
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        # NotIn matches an object without the key (apimachinery Requirement.Matches): the
        # `NotIn [never-used-value]` idiom selects everything (docs/cilium-facts, facts X11).
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # unknown operator: the API server would reject the object


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """Whether a label selector selects an object with `labels`."""
    if not isinstance(selector, dict):
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(expressions, list):
        return False
    for key, value in match_labels.items():
        if not isinstance(key, str) or labels.get(strip_source(key)) != value:
            return False
    return all(_expression_matches(expression, labels) for expression in expressions)
