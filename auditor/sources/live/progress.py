"""A one-line progress display on standard error, only when it is a terminal."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    """Thread-safe counters of kinds listed and objects read, redrawn at most 10 times a second."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            try:
                enabled = self.stream.isatty()
            except (AttributeError, ValueError):
                enabled = False
        self.enabled = bool(enabled)
        self._lock = threading.Lock()
        self._kinds_total = 0
        self._kinds_done = 0
        self._objects = 0
        self._clusters: set[str] = set()
        self._last = 0.0
        self._drawn = False

    def plan(self, cluster: str, kinds: int) -> None:
        with self._lock:
            self._clusters.add(cluster)
            self._kinds_total += kinds
        self._draw()

    def objects(self, count: int) -> None:
        with self._lock:
            self._objects += count
        self._draw()

    def kind_done(self) -> None:
        with self._lock:
            self._kinds_done += 1
        self._draw(force=True)

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        with self._lock:
            now = time.monotonic()
            if not force and now - self._last < 0.1:
                return
            self._last = now
            clusters = f" on {len(self._clusters)} clusters" if len(self._clusters) > 1 else ""
            line = f"listing{clusters}: {self._kinds_done}/{self._kinds_total} kinds, {self._objects:,} objects"
            try:
                self.stream.write("\r\033[K" + line)
                self.stream.flush()
                self._drawn = True
            except (OSError, ValueError):
                self.enabled = False

    def close(self) -> None:
        if self.enabled and self._drawn:
            try:
                self.stream.write("\r\033[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
