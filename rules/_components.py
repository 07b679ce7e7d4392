"""Cilium component images and versions, for the rules that compare them (pure functions).

Settings themselves are read through `ctx.cilium` and rules/_cilium_settings.py;
this module only parses image references and version strings, tolerating any
wrong type the input may hold.
"""

from __future__ import annotations

import re

from auditor.model import K8sObject
from auditor.rule import RuleContext

DEFAULT_NAMESPACE = "kube-system"
CONFIG_MAP_NAME = "cilium-config"

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: object) -> tuple[int, int, int] | None:
    """`v1.19.1`, `1.19.1-rc.2`, `1.19` -> (1, 19, 1) / (1, 19, 1) / (1, 19, 0); None when not a version.

    Pre-release suffixes are ignored: `1.18.0-rc.1` counts as 1.18.0, which errs
    on the side of reporting when an affected range starts at x.y.0.
    """
    if not isinstance(text, str):
        return None
    match = _VERSION.match(text.strip())
    if not match:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def version_line(text: object) -> tuple[int, int] | None:
    """`1.19` (the posture's line) -> (1, 19)."""
    parsed = parse_version(text)
    return (parsed[0], parsed[1]) if parsed else None


def image_tag_version(image: object) -> str | None:
    """`quay.io/cilium/operator-generic:v1.19.1@sha256:...` -> `1.19.1` (None without a tag)."""
    if not isinstance(image, str):
        return None
    reference = image.split("@", 1)[0]
    _, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag or not tag:
        return None
    return tag[1:] if tag.startswith("v") else tag


def image_name(image: object) -> str:
    """`quay.io/cilium/operator-generic:v1.19.1` -> `operator-generic`."""
    if not isinstance(image, str):
        return ""
    reference = image.split("@", 1)[0]
    return reference.rsplit("/", 1)[-1].split(":", 1)[0]


def cilium_namespace(ctx: RuleContext) -> str:
    """The namespace Cilium runs in: cilium-config's or the agent's, else kube-system."""
    for attribute in ("config_map", "agent"):
        obj = getattr(ctx.cilium, attribute, None)
        if isinstance(obj, K8sObject) and obj.namespace:
            return obj.namespace
    return DEFAULT_NAMESPACE
