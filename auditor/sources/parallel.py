"""A folder's files parsed by worker processes, as flake8's `--jobs` does (`audit --jobs`).

Parsing YAML is most of what `audit TREE` costs, and each file parses on its
own, so the files of a folder argument are read and parsed by forked workers
while this process turns their documents into objects, in the walk's order:
the output is the same bytes as a serial read.

Every limit is enforced as before: the file count by the walk (here), each
file's bytes, YAML nodes, alias expansion and JSON values by the worker's
parse, which is the serial reader's own code (`auditor.sources.files`). A
file's problem comes back with the documents parsed before it, so the
objects, the observer and the error are exactly what the serial read gives.
A worker sends its result pickled (about a tenth of the parse, measured in
docs/performance.md). Whatever a worker cannot vouch for (a file above
`PARALLEL_MAX_BYTES`, so a large dump is never held twice, or one that could
build more than `PARALLEL_MAX_NODES` nodes, so the workers add little to the
peak memory; an unexpected exception; a worker that died) is read again
here, serially, with the serial read's outcome.

The read stays serial with one CPU, below `PARALLEL_MIN_FILES` files (the
workers would cost more than they save), without `os.fork` (Windows: fork is
what makes a worker cheap, it inherits the loaded modules and the limits; no
`multiprocessing` pool, whose lost tasks would leave the read waiting), and
in a process running other threads (forking one is unsafe).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX (no fork either: the read is serial there)
    fcntl = None  # type: ignore[assignment]

from auditor.errors import InputError
from auditor.parsing.yaml_docs import may_exceed
from auditor.sources.files import OBSERVED_BYTES, ReadLimits, _Document, _documents, _read_file

if TYPE_CHECKING:
    from auditor.sources.files import _Walked

# Below this many files the workers' start-up (a fork each) outweighs what they save.
PARALLEL_MIN_FILES = 128
# A larger file is parsed by the main process: its result is not pickled and sent whole.
PARALLEL_MAX_BYTES = 1024 * 1024
# A file that could build more nodes is parsed by the main process: a worker's memory stays bounded
# (~700 bytes a YAML node at worst, docs/input.md "Limits"), so n workers add at most n times that
# to the serial read's peak. An ordinary 800 KB CRD bundle counts about 30,000.
PARALLEL_MAX_NODES = 100_000
# Files a worker is handed at a time (fewer round trips than one at a time, still balanced).
_CHUNK_FILES = 16

Entry = tuple[str, bool, "_Walked"]


@dataclass(slots=True)
class Parsed:
    """What a worker read of one file: its bytes (for the observer), documents, and problem if any."""

    data: bytes
    documents: list[_Document]
    error: tuple[str, str | None, int | None, str | None, str | None] | None  # InputError's parts

    def replay(self) -> Iterator[_Document]:
        """The documents as the serial parse yields them, then its error at the same point."""
        yield from self.documents
        if self.error is not None:
            message, path, line, problem, code = self.error
            raise InputError(message, path=path, line=line, problem=problem, code=code)


def worker_count(jobs: int) -> int:
    """The processes `jobs` asks for: 0 is the CPUs this process may run on."""
    if jobs > 0:
        return jobs
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# Set before the workers fork: they inherit them (the limits hold a callable, never pickled).
_WORKER_LIMITS = ReadLimits()
_WORKER_KEEPS_BYTES = False


def _parse_file(path: str) -> bytes | None:
    """In a worker: one folder file read and parsed, pickled; None to leave it to the main process."""
    try:
        if os.stat(path).st_size > PARALLEL_MAX_BYTES:
            return None
    except OSError:
        return None  # the main process says why it cannot be read
    documents: list[_Document] = []
    data = b""
    error = None
    try:
        holder = [_read_file(path, _WORKER_LIMITS, explicit=False)]
        if may_exceed(holder[0], PARALLEL_MAX_NODES):
            return None  # what a worker builds stays small, whatever the file holds
        if _WORKER_KEEPS_BYTES and len(holder[0]) <= OBSERVED_BYTES:
            data = holder[0]
        documents.extend(_documents(path, holder, _WORKER_LIMITS))
    except InputError as problem:
        error = (problem.message, problem.path, problem.line, problem.problem, problem.code)
    except Exception:  # anything else: the serial read gives its exact outcome
        return None
    # Sent as plain tuples, rebuilt by `Prefetch.next`: a pickled dataclass instance costs a class
    # lookup and a state dict each way (~30 % of the unpickling on ../shared/gitops).
    parts = [(d.data, d.line, d.item_lines, d.item_columns, d.problems) for d in documents]
    try:
        return pickle.dumps((data, parts, error), pickle.HIGHEST_PROTOCOL)
    except Exception:  # (nesting too deep to pickle, say): read it serially
        return None


class _Worker:
    """One forked worker: its process, the pipe it writes its chunks' results to, the last chunk it sent."""

    def __init__(self, pid: int, results: int) -> None:
        self.pid = pid
        self.results = results  # a descriptor, read unbuffered: `poll` then sees every byte not read yet
        self.last = -1  # chunks are claimed in increasing order: this worker holds none at or below it
        self.ended = False

    def frame(self) -> tuple[int, bytes] | None:
        """The next chunk this worker parsed and its results, or None: it ended (done, or killed)."""
        header = _read_exactly(self.results, _FRAME.size)
        if header is not None:
            index, size = _FRAME.unpack(header)
            body = _read_exactly(self.results, size)
            if body is not None:
                self.last = index
                return index, body
        self.ended = True
        return None


def _read_exactly(descriptor: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left:
        part = os.read(descriptor, min(left, _PIPE_BYTES))
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


# What a pipe may hold ahead of the reader: a worker writing a chunk waits only once this is full. The
# default 64 KiB is less than a chunk's results (~100 KB for 16 GitOps files); 1 MiB is what Linux
# lets any user set. The chunk numbers are all written before the workers start: at most this many.
_PIPE_BYTES = 1024 * 1024
_TASK = struct.Struct("<I")
_FRAME = struct.Struct("<IQ")  # a chunk's results: its number, their length, then their pickle
_MAX_CHUNKS = 65_536 // _TASK.size  # what any pipe holds, should it refuse to be widened


def _widen(pipe: int) -> None:
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if set_size is not None:
        with contextlib.suppress(OSError):  # (a lower system limit: the pipe keeps its size)
            fcntl.fcntl(pipe, set_size, _PIPE_BYTES)


def _serve(tasks: int, output: int, chunks: list[list[str]]) -> None:
    """In a worker: chunks claimed one at a time (a pipe's read is atomic), each one's results one frame."""
    with os.fdopen(output, "wb") as stream:
        while True:
            claimed = os.read(tasks, _TASK.size)
            if len(claimed) != _TASK.size:
                return  # every chunk is claimed
            (index,) = _TASK.unpack(claimed)
            body = pickle.dumps([_parse_file(path) for path in chunks[index]], pickle.HIGHEST_PROTOCOL)
            stream.write(_FRAME.pack(index, len(body)) + body)
            stream.flush()


def _readable(pipes: list[int], timeout: int | None) -> set[int]:
    """The pipes with something to read (or whose writer has gone), after at most `timeout` ms."""
    poller = select.poll()  # (not select.select: that refuses descriptors from 1024 on)
    for pipe in pipes:
        poller.register(pipe, select.POLLIN)
    return {pipe for pipe, _ in poller.poll(timeout)}


class Prefetch:
    """The parsed folder files of a walk, in its order, from forked workers.

    The workers claim chunks of files from one queue (the next chunk goes to
    whichever worker is free: a tree's few large files do not leave one
    worker with most of the work) and this process takes the results back
    in order. It reads a worker's pipe only while that worker may still
    hold the chunk it needs next, so it keeps at most a chunk or so per
    worker it does not need yet; a worker then waits on its full pipe. A
    worker that ends early (killed, out of memory) leaves the chunks it
    claimed to this process: the read never waits for a result that cannot come.
    """

    def __init__(self, paths: list[str], limits: ReadLimits, keep_bytes: bool, workers: int) -> None:
        global _WORKER_LIMITS, _WORKER_KEEPS_BYTES
        _WORKER_LIMITS, _WORKER_KEEPS_BYTES = limits, keep_bytes
        size = max(_CHUNK_FILES, -(-len(paths) // _MAX_CHUNKS))
        self._chunks = [paths[i : i + size] for i in range(0, len(paths), size)]
        self._workers: list[_Worker] = []
        self._ready: dict[int, bytes] = {}
        self._pending: deque[bytes | None] = deque()
        self._taken = 0
        self._mine: set[int] = set()  # chunks this process claimed: read here, in their turn
        tasks, queue = os.pipe()
        self._tasks: int | None = tasks
        try:
            try:
                _widen(queue)
                os.write(queue, b"".join(_TASK.pack(index) for index in range(len(self._chunks))))
            finally:
                os.close(queue)  # (before the forks: a worker reading the empty queue sees its end)
            for _ in range(workers):
                self._start(tasks)
        except OSError:  # out of processes or pipes: chunks no worker returns are read here
            pass

    def _start(self, tasks: int) -> None:
        read_end, write_end = os.pipe()
        _widen(write_end)
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            raise
        if pid == 0:  # the worker: never returns into the caller's code (os._exit, no atexit, no flush)
            code = 1
            try:
                os.close(read_end)
                _serve(tasks, write_end, self._chunks)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self._workers.append(_Worker(pid, read_end))

    def next(self) -> Parsed | None:
        """The next folder file's parse, or None: read it here."""
        if not self._pending:
            self._pending.extend(self._chunk(self._taken))
            self._taken += 1
        result = self._pending.popleft()
        if result is None:
            return None
        data, parts, error = pickle.loads(result)  # (our own workers' bytes)
        return Parsed(data, [_Document(*part) for part in parts], error)

    def _chunk(self, index: int) -> list[bytes | None]:
        mine: list[bytes | None] = [None] * len(self._chunks[index])
        if index in self._mine:
            self._mine.discard(index)
            return mine
        may_claim = self._tasks is not None
        while index not in self._ready:
            # Only a worker that has not sent a later chunk can still hold this one.
            holders = [worker for worker in self._workers if not worker.ended and worker.last < index]
            if not holders:  # claimed by a worker that ended without it: read here
                return mine
            pipes = [worker.results for worker in holders]
            if may_claim and self._tasks is not None and not _readable(pipes, 0):
                # Nothing to take yet: claim a chunk for this process (one a wait), so that on a busy
                # machine it reads what the workers have not reached rather than wait for them.
                may_claim = False
                claimed = self._claim()
                if claimed == index:
                    return mine
                if claimed is not None:
                    self._mine.add(claimed)
                continue
            ready = _readable(pipes, None)
            for worker in holders:
                if worker.results in ready:
                    frame = worker.frame()
                    if frame is not None:
                        self._ready[frame[0]] = frame[1]
        results: list[bytes | None] = pickle.loads(self._ready.pop(index))
        return results

    def _claim(self) -> int | None:
        """The next chunk no worker has claimed (its files are read here), or None: all are claimed."""
        assert self._tasks is not None
        claimed = os.read(self._tasks, _TASK.size)  # (never blocks: the queue's writing end is closed)
        if len(claimed) == _TASK.size:
            index: int = _TASK.unpack(claimed)[0]
            return index
        os.close(self._tasks)
        self._tasks = None
        return None

    def close(self) -> None:
        if self._tasks is not None:
            os.close(self._tasks)
            self._tasks = None
        for worker in self._workers:
            os.close(worker.results)
            with contextlib.suppress(ProcessLookupError):  # (only a process of ours, never reaped yet)
                os.kill(worker.pid, signal.SIGKILL)  # done, or the read stopped: nothing left to wait for
            os.waitpid(worker.pid, 0)
        self._workers = []


def _walked(entries: Iterator[Entry]) -> tuple[list[Entry], InputError | None]:
    """The whole walk, and the error that stopped it (raised where the serial read would meet it)."""
    out: list[Entry] = []
    try:
        for entry in entries:
            out.append(entry)
    except InputError as error:
        return out, error
    return out, None


def _replayed(entries: list[Entry], failure: InputError | None) -> Iterator[Entry]:
    yield from entries
    if failure is not None:
        raise failure


def is_folder_file(entry: Entry) -> bool:
    _path, explicit, walked = entry
    return not explicit and walked is None


def prefetch(entries: Iterator[Entry], limits: ReadLimits,
             keep_bytes: bool) -> tuple[Iterator[Entry], Prefetch | None]:
    """The walk's entries, and the workers parsing its folder files, when parallel reading pays."""
    workers = worker_count(limits.jobs)
    if workers < 2 or not hasattr(os, "fork") or threading.active_count() > 1:
        return entries, None
    walked, failure = _walked(entries)
    files = [entry[0] for entry in walked if is_folder_file(entry)]
    if len(files) < PARALLEL_MIN_FILES:
        return _replayed(walked, failure), None
    return _replayed(walked, failure), Prefetch(files, limits, keep_bytes, workers)
