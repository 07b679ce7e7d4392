"""The snapshot file `audit snapshot` writes: a kubectl-compatible List plus a header.

It holds exactly what `audit live` reads (every object of every kind the
selected rules read, each with its kind and apiVersion, laid out as
`kubectl get -o json` prints: sorted keys, 4-space indent) plus the
`auditSnapshot` header (`auditor/sources/snapshot_header.py`): context, API
server, Kubernetes version, fingerprint, time, the coverage of every kind and
the served versions. Auditing the file later (`audit dump.json`) reaches the
verdict the live audit reached then.

Redaction: Secrets are metadata only (read that way; re-checked here), and
no credential is ever part of a snapshot (none is in the objects read). The
file is written atomically (a temporary file in the same folder, fsync,
rename) and is readable by its owner only (0600): it is a copy of cluster
state.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from auditor import kinds
from auditor.atomic import write_atomically
from auditor.snapshot import Snapshot
from auditor.sources import snapshot_header
from auditor.sources.live.reader import redact_secret

_ITEM_INDENT = "\n" + " " * 8


def _safe(raw: dict[str, Any], gk: str) -> dict[str, Any]:
    if gk == kinds.SECRET:
        metadata = raw.get("metadata")
        return {"apiVersion": raw.get("apiVersion", "v1"), "kind": "Secret",
                "metadata": redact_secret(metadata) if isinstance(metadata, dict) else {}}
    return raw


def _json(value: object) -> str:
    return json.dumps(value, indent=4, sort_keys=True, ensure_ascii=False)


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def render(snapshot: Snapshot, taken_at: str, counts: dict[str, int] | None = None) -> Iterator[str]:
    """The file's text, in chunks (one per object), so a big cluster is never one string."""
    if snapshot.cluster is None:
        raise ValueError("a snapshot needs the cluster it was read from")
    if counts is None:
        counts = {}
        for obj in snapshot.objects:
            counts[obj.gk] = counts.get(obj.gk, 0) + 1
    header = snapshot_header.render(snapshot.cluster, taken_at, snapshot.listed, snapshot.served_versions, counts)
    yield '{\n    "apiVersion": "v1",\n    "auditSnapshot": '
    yield _json(header).replace("\n", "\n    ")
    yield ',\n    "items": ['
    for index, obj in enumerate(snapshot.objects):
        yield ("," if index else "") + _ITEM_INDENT + _json(_safe(obj.raw, obj.gk)).replace("\n", _ITEM_INDENT)
    yield ('\n    ],\n' if snapshot.objects else '],\n')
    yield '    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n'


def _write_chunks(stream: TextIO, chunks: Iterator[str]) -> None:
    for chunk in chunks:
        stream.write(chunk)


def write(path: str, snapshot: Snapshot, taken_at: str, counts: dict[str, int] | None = None) -> None:
    """Write the snapshot to `path` atomically (or to standard output for `-`)."""
    chunks = render(snapshot, taken_at, counts)
    if path == "-":
        _write_chunks(sys.stdout, chunks)
        sys.stdout.flush()
        return
    # Mode 0600: a snapshot holds the cluster's objects (redacted, but still not for everyone).
    write_atomically(path, chunks, mode=0o600, what="snapshot")
