"""Version strings and container image references, read the same way everywhere (pure functions).

Input can hold anything where a version is expected (`tag: 1.19`, a float in
YAML, `${VERSION}`), so every function takes any value and answers None when
it is not a version.
"""

from __future__ import annotations

import re

_VERSION_PREFIX = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
# One release (`1.16.3`, `v1.19.0-rc.1`), not a range (`1.16.x`, `>=1.16`).
_EXACT_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")

Version = tuple[int, int, int]


def parse_version(text: object) -> Version | None:
    """`v1.19.1`, `1.19.1-rc.2`, `1.19` -> (1, 19, 1) / (1, 19, 1) / (1, 19, 0); None when not a version.

    Pre-release suffixes are ignored: `1.18.0-rc.1` counts as 1.18.0, which errs
    on the side of reporting when an affected range starts at x.y.0.
    """
    if not isinstance(text, str):
        return None
    match = _VERSION_PREFIX.match(text.strip())
    if not match:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def version_line(text: object) -> tuple[int, int] | None:
    """`1.19` (a posture's line) -> (1, 19)."""
    parsed = parse_version(text)
    return (parsed[0], parsed[1]) if parsed else None


def exact_release(text: object) -> str | None:
    """`v1.16.3` -> `1.16.3`: a version naming one release; None for ranges (`1.16.x`) and non-versions."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not _EXACT_RELEASE.match(text):
        return None
    return text[1:] if text.startswith("v") else text


def image_tag_version(image: object) -> str | None:
    """`quay.io/cilium/operator-generic:v1.19.1@sha256:...` -> `1.19.1` (None without a tag)."""
    if not isinstance(image, str):
        return None
    reference = image.split("@", 1)[0]
    _, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag or not tag:
        return None  # no tag, or the colon of a registry port (`registry:5000/cilium`)
    return tag[1:] if tag.startswith("v") else tag


def image_name(image: object) -> str:
    """`quay.io/cilium/operator-generic:v1.19.1` -> `operator-generic`."""
    if not isinstance(image, str):
        return ""
    reference = image.split("@", 1)[0]
    return reference.rsplit("/", 1)[-1].split(":", 1)[0]
