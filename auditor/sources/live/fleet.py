"""Several clusters at once (`audit live --context A --context B`, `--all-contexts`).

Every cluster is read concurrently (each with its own client and thread
pool); `auditor.fleet` audits each on its own and merges the results
(semantics in docs/live.md). A cluster that cannot be
read at all (unreachable, credentials rejected) does not stop the others: it
contributes a snapshot in which every kind failed, so each of its rules is an
`error` naming it, and the run exits 3.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from auditor.errors import ClusterError
from auditor.snapshot import Snapshot
from auditor.sources.live.progress import Progress
from auditor.sources.live.reader import ReadOptions, ReadResult, failed_snapshot, read_cluster
from auditor.sources.live.target import Target


@dataclass
class ClusterRead:
    """One cluster of a fleet audit: its target, its snapshot, and why it could not be read, if it could not."""

    target: Target
    name: str  # how findings name the cluster: its label, else its context
    snapshot: Snapshot
    error: str | None = None
    result: ReadResult | None = None


def names_for(targets: list[Target]) -> list[str]:
    """Label or context per target; the context when two targets would share a label."""
    labels = [t.label for t in targets]
    return [t.label if t.label and labels.count(t.label) == 1 else t.context for t in targets]


def read_fleet(targets: list[Target], gks: list[str] | set[str], options: ReadOptions,
               progress: Progress | None = None) -> list[ClusterRead]:
    names = names_for(targets)
    with ThreadPoolExecutor(max_workers=max(1, len(targets)), thread_name_prefix="audit-cluster") as pool:
        futures = [pool.submit(read_cluster, target, gks, options, progress) for target in targets]
        reads = []
        for target, name, future in zip(targets, names, futures, strict=True):
            try:
                result = future.result()
                reads.append(ClusterRead(target, name, result.snapshot, result=result))
            except ClusterError as error:
                reads.append(ClusterRead(target, name, failed_snapshot(target, gks, error.message), error.message))
    return reads
