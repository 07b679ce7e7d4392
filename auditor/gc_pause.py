"""The cyclic garbage collector paused while the auditor builds values that hold no reference cycles.

Parsing, resolving a GitOps tree, the exposure model, the findings and the reports
allocate millions of small dicts, lists and records and no cycles worth collecting;
with the collector on, its passes over them were more than half of reading a
100k-object dump and a quarter of auditing 10k Services (docs/performance.md).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """The collector off inside the block, and back as it was after it.

    With `freeze` (a process that ends with the run: the command line), what was built is
    first moved out of the collector's view (`gc.freeze`), so that no later pass, nor the
    interpreter's exit, walks it again. A long-lived caller leaves it off: frozen garbage is
    never freed.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if freeze:
                gc.freeze()
            gc.enable()
