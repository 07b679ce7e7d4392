"""`audit TREE`'s read: the folder walked and parsed once, then split per scope (`audit_scopes`).

This module is all that runs before the reader's workers start, so it imports
only the reader and the collector: the resolution and the split (the layout,
kustomize, Flux, Argo CD, the scopes and the repository view; ~15 ms) are
imported while the workers parse, rather than before they are forked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from auditor.errors import InputError
from auditor.gc_pause import collector_paused
from auditor.sources.files import ReadLimits, read_paths
from auditor.sources.gitops.collect import TreeCollector

if TYPE_CHECKING:
    from auditor.sources.gitops.audit_scopes import TreeRead
    from auditor.sources.gitops.layout import ClusterSpec


def read_tree(path: str, *, limits: ReadLimits | None = None, clusters: Sequence[ClusterSpec] = (),
              audit_unreached: bool = False, allow_no_objects: bool = False, input_problems: bool = False,
              freeze: bool = False, on_file_error: Callable[[str, InputError], None] | None = None,
              meanwhile: Callable[[], object] | None = None) -> TreeRead:
    """Read the folder `path` once and split it per scope (`audit_scopes`' docstring).

    `input_problems`, `meanwhile` as for `read_paths`: a file that cannot be read is an input problem of
    the read, and of every scope (which cluster its objects would be in is not known)."""
    collector = TreeCollector(path)

    def during_the_read() -> None:
        if meanwhile is not None:
            meanwhile()
        # The resolution's and the split's modules, imported while the workers of a parallel read
        # parse: nothing the reader itself needs.
        from auditor.sources.gitops import audit_scopes, layout  # noqa: F401  (imported for their cost)

    snapshot = read_paths([path], limits=limits or ReadLimits(), allow_no_objects=allow_no_objects, freeze=freeze,
                          on_file_error=on_file_error, input_problems=input_problems, observer=collector,
                          meanwhile=during_the_read)
    from auditor.sources.gitops.audit_scopes import split_tree

    # Resolving and splitting allocate many small values and free none in cycles: a collection would walk
    # every parsed document each time (the reader pauses the collector for the same reason).
    # With `freeze` (the command line), what they build lives as long as the run, as what was read does:
    # it leaves the collector's view too, so the rules' collections never walk it.
    with collector_paused(freeze):
        return split_tree(path, snapshot, collector, clusters, audit_unreached)
