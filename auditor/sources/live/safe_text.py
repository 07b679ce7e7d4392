"""Text from a kubeconfig or an API server, made safe to print.

Context names, server URLs, API error messages and a credential plugin's
output are written by someone else. Before any of it reaches a message,
a report or standard error it goes through here:

* `printable`: control characters (C0, DEL, C1: what terminal escape
  sequences are made of, including the title-setting OSC ones) and the
  Unicode bidirectional overrides become visible `\\xNN` / `\\uNNNN` text, so
  a hostile string can neither move the cursor nor reorder what is shown;
* `redact_url`: the userinfo of a URL (`https://user:password@host`) is
  dropped, so a password in a kubeconfig's `server:` never leaves the
  process (it is dropped from the client's configuration too);
* `summary`: the first non-empty line, escaped and cut to a length, with the
  number of lines left out: how a plugin's or a server's free text is quoted.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, and the bidi embeddings/overrides/isolates
# (U+202A-U+202E, U+2066-U+2069) plus the implicit marks that can reorder text.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# scheme://userinfo@ anywhere in a text (a message quoting a URL). Greedy up to the last `@`
# before the path: a sloppy password may hold a raw `@` (`https://u:p@ss@host`).
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/?#\s]*)@")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control or bidi character spelled out (`\\x1b`, `\\u202e`)."""
    return _UNSAFE.sub(_escape, text)


def redact_url(text: str) -> str:
    """`text` without the userinfo (`user:password@`) of any URL in it."""
    return _USERINFO.sub(lambda match: match.group("scheme"), text)


def clean(text: str) -> str:
    """Both: what every message of the live package passes through."""
    return printable(redact_url(text))


def summary(text: str, limit: int = 200) -> str:
    """The first non-empty line of `text`, cleaned and cut to `limit` characters,
    saying how many further lines were left out."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    first = clean(lines[0])
    if len(first) > limit:
        first = first[:limit] + "..."
    more = len(lines) - 1
    return first + (f" (and {more} more line{'s' if more > 1 else ''})" if more else "")
