"""Preparing files for the index away from the store: read, hash, redact, chunk, analyse.

What a file becomes in the index depends on its bytes alone, so this work runs outside any
transaction and, for a large folder, in worker processes (``Preparer``) while the indexing
process writes what they return: on a 2,950-file repository the Python work (redaction,
chunking, CJK bigrams, names) was about two thirds of the indexing time, all of it serial
with SQLite's. A worker returns, per file, its state (hash, mtime, size), its chunks as
``writer.Row`` (bigrams computed) and the names it holds that this worker had not seen; results
come back in the order the files were given, a bounded number ahead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ctxmode.core import cjk, config, names
from ctxmode.core.redact import redact, redact_env_file
from ctxmode.search.chunking import Piece, chunk_document
from ctxmode.search.files import is_env_file, read_text
from ctxmode.search.writer import FileState, Row, Todo

if TYPE_CHECKING:
    from concurrent.futures import Future


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def redact_piece(piece: Piece, *, content_redacted: bool = False) -> Piece:
    """The piece with its title and content redacted.

    ``content_redacted`` says the whole text was redacted before chunking (which also catches
    a secret that a chunk boundary would cut): then only the title, which chunking composes
    from several parts, is redacted again.
    """
    content = piece.content if content_redacted else redact(piece.content)
    return Piece(redact(piece.title), content, piece.kind)


def rows_of(path: str | None, pieces: Sequence[Piece]) -> list[Row]:
    """The non-blank ``pieces`` as rows (ordinals count every piece), with their bigrams."""
    rows = []
    for ordinal, p in enumerate(pieces):
        if not p.content.strip():
            continue
        grams = None
        if cjk.has_cjk(p.title, p.content):
            grams = (cjk.bigrams(p.title), cjk.bigrams(p.content))
        rows.append(Row(path, ordinal, p.title, p.content, p.kind, grams))
    return rows


def names_of(rows: Iterable[Row], seen: set[str]) -> list[str]:
    """The names (``core.names``) of ``rows`` whose words are not in ``seen`` (which grows):
    what the vocabulary may not hold yet."""
    # One text (words never span the newline that joins them): one regex call per file.
    return names.new_names(["\n".join(f"{r.title}\n{r.content}" for r in rows)], seen)


@dataclass(frozen=True)
class Prepared:
    """A file as the index will hold it."""

    rel: str
    #: None when the file was skipped (then ``reason`` says why)
    state: FileState | None
    reason: str | None = None
    #: None when its content hashes to the recorded hash (nothing to write but its mtime)
    rows: list[Row] | None = None
    names: list[str] | None = None


def prepare_file(root: str, todo: Todo, is_dir: bool, seen: set[str]) -> Prepared:
    """Read, hash and (when its content changed) redact and chunk one file."""
    path = Path(todo.rel) if os.path.isabs(todo.rel) else Path(root, todo.rel)
    text, reason, raw = read_text(path)
    if text is None:
        return Prepared(todo.rel, None, reason or "skipped")
    state = FileState(todo.rel, sha256(raw), todo.mtime, len(raw))
    if todo.old_hash == state.content_hash:
        return Prepared(todo.rel, state)
    rel = todo.rel
    text = redact_env_file(text) if is_env_file(rel) else redact(text)
    pieces = chunk_document(text, rel, base_title=rel if is_dir else "")
    rows = rows_of(rel, [redact_piece(p, content_redacted=True) for p in pieces])
    return Prepared(rel, state, None, rows, names_of(rows, seen))


#: Words a worker process has judged (``names_of``): its own, for the files it was given.
_WORKER_SEEN: set[str] = set()


def _end_with_parent() -> None:
    """Worker initialiser: yield the CPU to the indexing process (which holds the write lock
    while it writes, and hooks wait for that) and to everything else, and exit as soon as the
    process that started this one is gone (a ``kill -9`` of the index leaves workers blocked
    on their queue otherwise)."""
    import threading
    import time

    with contextlib.suppress(AttributeError, OSError):  # no nice(2) here
        os.nice(WORKER_NICENESS)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, name="ctxmode-parent-watch", daemon=True).start()


def _prepare_many(root: str, todos: list[Todo], is_dir: bool) -> list[Prepared]:
    return [prepare_file(root, t, is_dir, _WORKER_SEEN) for t in todos]


#: Below this much to read, files are prepared in the indexing process (a worker process
#: costs ~0.1-0.2 s to start).
POOL_MIN_BYTES = 4_000_000
POOL_MIN_FILES = 64
#: A task sent to a worker: files up to about this many bytes (one at least).
_TASK_BYTES = 256_000
_TASK_FILES = 32
#: Added to a worker's niceness (the indexing CLI already runs at +10).
WORKER_NICENESS = 9
#: Tasks in flight per worker: how far preparation may run ahead of the writes.
_AHEAD = 4


class Preparer:
    """Prepares ``Todo`` files in order, in this process or in worker processes.

    Workers are used when there is enough to read (``POOL_MIN_BYTES``, ``POOL_MIN_FILES``) and
    ``core.config.index_workers`` allows any (``CTXMODE_INDEX_WORKERS``; by default one per
    core but one, at most four; set, it applies whatever the size). They are started from a
    fork server (a clean process: forking the indexing process itself could copy a lock a
    thread holds) and end with the run.
    """

    def __init__(self, root: str, is_dir: bool, seen: set[str]) -> None:
        self.root = root
        self.is_dir = is_dir
        self.seen = seen

    def run(self, todos: Sequence[Todo]) -> Iterator[Prepared]:
        workers, forced = config.index_workers()
        small = sum(t.size for t in todos) < POOL_MIN_BYTES or len(todos) < POOL_MIN_FILES
        if workers == 0 or (small and not forced):
            yield from self._here(todos)
            return
        yield from self._pooled(todos, workers)

    def _pooled(self, todos: Sequence[Todo], workers: int) -> Iterator[Prepared]:
        """``todos`` prepared by ``workers`` processes, in order; what they could not do (no
        working multiprocessing here, a worker killed) is prepared in this process."""
        try:
            import multiprocessing
            import threading
            from concurrent.futures import ProcessPoolExecutor
            from concurrent.futures.process import BrokenProcessPool

            # A single-threaded process forks (nothing re-imported: the CLI); one with threads
            # (a server) starts its workers from a fork server, which imports the main module.
            methods = multiprocessing.get_all_start_methods()
            method = "fork" if threading.active_count() == 1 and "fork" in methods else None
            if method is None and "forkserver" in methods:
                method = "forkserver"
            pool = ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context(method),
                initializer=_end_with_parent,
            )
        except (ImportError, OSError, NotImplementedError):
            yield from self._here(todos)  # e.g. no sem_open on this platform
            return
        pending: deque[tuple[list[Todo], Future[list[Prepared]]]] = deque()
        tasks = _tasks(todos)
        sending: list[Todo] = []
        try:
            for task in tasks:
                sending = task
                pending.append((task, pool.submit(_prepare_many, self.root, task, self.is_dir)))
                sending = []
                while len(pending) >= workers * _AHEAD:
                    done = pending[0][1].result()  # a task leaves the queue once returned
                    pending.popleft()
                    yield from done
            while pending:
                done = pending[0][1].result()
                pending.popleft()
                yield from done
        except (BrokenProcessPool, OSError):
            # A worker died (killed, or a main module that starts an index when imported) or
            # none could start: the files not yet returned are prepared here, in order.
            left = [t for task, _ in pending for t in task] + sending
            pending.clear()
            yield from self._here(left)
            yield from self._here(t for task in tasks for t in task)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _here(self, todos: Iterable[Todo]) -> Iterator[Prepared]:
        for todo in todos:
            yield prepare_file(self.root, todo, self.is_dir, self.seen)


def _tasks(todos: Sequence[Todo]) -> Iterator[list[Todo]]:
    task: list[Todo] = []
    size = 0
    for todo in todos:
        task.append(todo)
        size += todo.size
        if size >= _TASK_BYTES or len(task) >= _TASK_FILES:
            yield task
            task, size = [], 0
    if task:
        yield task
