"""Writing a source's chunks: short transactions, the search index written in bulk.

``Batcher`` collects changed files and writes them in transactions of about ``TXN_TARGET_S``
(a file's chunks and its recorded state together, unless the file alone is larger), so other
writers wait at most about that long and a killed run resumes where it stopped.
``insert_rows`` writes chunks with their ``search_items`` rows and, in bulk, their rows of
``search_fts``, ``search_cjk`` and the name vocabulary (``core.index_schema.m015_name_vocabulary``);
``index_fresh_names`` gives a run's new names their trigram rows at its end.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxmode.core import names

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.core.db import Database


@dataclass(frozen=True)
class FileState:
    path: str  # project-relative (absolute when allowed outside the project)
    content_hash: str
    mtime: float
    size: int


@dataclass(frozen=True)
class Todo:
    """A file to read (``search.prepare``): its path relative to the project, its stat and
    its recorded hash."""

    rel: str
    mtime: float
    size: int
    old_hash: str | None


@dataclass(frozen=True)
class Row:
    """A chunk ready to write (``search.prepare.rows_of``)."""

    path: str | None
    ordinal: int
    title: str
    content: str
    kind: str
    #: ``core.cjk.bigrams`` of the title and the content when the chunk holds CJK, else None
    bigrams: tuple[str, str] | None


#: Characters of each of the two previous chunks copied into a chunk's ``context`` column.
NEIGHBOUR_CHARS = 300


#: What a file costs a transaction beyond its rows (its delete, its state), in characters.
_FILE_CHARS = 1_000


def _chars(rows: Sequence[Row]) -> int:
    """The characters a file's ``rows`` write (their text and titles, a row's overhead and
    the file's)."""
    return _FILE_CHARS + sum(_row_chars(r) for r in rows)


def _row_chars(row: Row) -> int:
    return len(row.content) + len(row.title) + 200


def insert_rows(
    conn: sqlite3.Connection,
    source_id: int,
    rows: Sequence[Row],
    now: int,
    tails: dict[tuple[str | None, int], str] | None = None,
    names: Iterable[str] = (),
) -> int:
    """Write ``rows`` (in document order) as chunks of ``source_id``, and ``names`` into the
    vocabulary; return how many chunks.

    A chunk's text is stored once, in ``search_items.body``
    (``core.index_schema.m013_lean_chunks``): the ``chunks`` row keeps its place (source, file,
    ordinal, kind). Its ``context`` holds the last ``NEIGHBOUR_CHARS`` characters of the chunks
    at ``ordinal - 2`` and ``ordinal - 1`` of the same file, as ``m005`` defined it. Every
    table is written with one statement per batch, row ids given (the write lock is held, so
    none is taken meanwhile), and the items' ``search_fts`` and ``search_cjk`` rows too
    (``m015_name_vocabulary``: a trigger would flush FTS5 once per chunk). New names stay
    ``fresh`` until ``index_fresh_names``.
    """
    (label,) = conn.execute("SELECT label FROM sources WHERE id = ?", (source_id,)).fetchone()
    if tails is None:  # the ends of the chunks written so far (a file over several calls)
        tails = {}
    (chunk_id,) = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()
    (item_id,) = conn.execute("SELECT coalesce(max(id), 0) FROM search_items").fetchone()
    chunks: list[tuple[object, ...]] = []
    items: list[tuple[object, ...]] = []
    porter: list[tuple[int, str, str, str]] = []
    bigram: list[tuple[int, str, str]] = []
    for row in rows:
        chunk_id += 1
        item_id += 1
        before = tails.get((row.path, row.ordinal - 2), "")
        last = tails.get((row.path, row.ordinal - 1), "")
        context = f"{before} {last}".strip(" ")
        chunks.append((chunk_id, source_id, row.ordinal, row.title, row.kind, now, row.path))
        items.append((item_id, chunk_id, row.title, row.content, label, row.kind, now, context))
        porter.append((item_id, row.title, row.content, context))
        if row.bigrams is not None:
            bigram.append((item_id, *row.bigrams))
        tails[(row.path, row.ordinal)] = row.content[-NEIGHBOUR_CHARS:]
    conn.executemany(
        "INSERT INTO chunks(id, source_id, ordinal, title, content, kind, created_at, path) "
        "VALUES (?, ?, ?, ?, '', ?, ?, ?)",
        chunks,
    )
    conn.executemany(
        "INSERT INTO search_items(id, item_kind, ref_id, title, body, source, type, "
        "created_at, context) VALUES (?, 'chunk', ?, ?, ?, ?, ?, ?, ?)",
        items,
    )
    conn.executemany(
        "INSERT INTO search_fts(rowid, title, body, context) VALUES (?, ?, ?, ?)", porter
    )
    if bigram:
        conn.executemany("INSERT INTO search_cjk(rowid, title, body) VALUES (?, ?, ?)", bigram)
    conn.executemany("INSERT OR IGNORE INTO search_names(name) VALUES (?)", [(n,) for n in names])
    return len(porter)


#: Names given their trigram rows per transaction by ``index_fresh_names``.
NAMES_PER_TXN = 5_000


def index_fresh_names(store: Database) -> int:
    """Give the vocabulary's ``fresh`` names their rows in ``search_names_fts``, a few
    thousand per transaction; return how many.

    The indexer leaves a run's new names fresh and indexes them here at its end: one FTS5 write
    of thousands of names costs a fraction of one per chunk batch (a segment and its merges per
    commit). Until then search finds them by a scan of the fresh names
    (``search.lists.matching_names``); a run killed before this leaves them for the next.
    """
    fresh = "SELECT 1 FROM search_names WHERE fresh = 1 LIMIT 1"
    if store.conn.execute(fresh).fetchone() is None:
        return 0  # a read: no write lock taken after every indexed piece of content
    done = 0
    while True:
        with store.transaction() as conn:
            row = conn.execute(
                "SELECT max(id), count(*) FROM (SELECT id FROM search_names WHERE fresh = 1 "
                "ORDER BY id LIMIT ?)",
                (NAMES_PER_TXN,),
            ).fetchone()
            if not row[1]:
                return done
            bound = int(row[0])
            conn.execute(
                "INSERT INTO search_names_fts(rowid, name) SELECT id, name FROM search_names "
                "WHERE fresh = 1 AND id <= ?",
                (bound,),
            )
            conn.execute("UPDATE search_names SET fresh = 0 WHERE fresh = 1 AND id <= ?", (bound,))
            done += int(row[1])
        store.let_waiters_in()


# -- writing file-backed sources in short transactions ---------------------------------------

#: A batch of changed files is written in one transaction sized to take about this long
#: (seconds), so that a hook or a CLI write waiting for the lock waits about this long at most.
TXN_TARGET_S = 0.02
#: First batch size (characters of chunk text); later batches adapt to the measured rate.
_FIRST_BATCH_CHARS = 40_000
_MIN_BATCH_CHARS = 2_000
_MAX_BATCH_CHARS = 2_000_000
#: Rows deleted per transaction when a source's files are dropped.
_DELETE_BATCH = 50


class Batcher:
    """Collects changed files and writes them in transactions of about ``TXN_TARGET_S``.

    Each file's chunks and its ``source_files`` row commit together, so a run killed midway
    leaves every file either fully indexed with its state recorded or untouched: the next run
    skips the first kind by size and mtime and indexes the rest.
    """

    def __init__(self, store: Database, source_id: int, now: int) -> None:
        self.store = store
        self.source_id = source_id
        self.now = now
        self.pending: list[tuple[FileState, list[Row], list[str]]] = []
        self.touched: list[FileState] = []
        self.chars = 0
        self.budget = _FIRST_BATCH_CHARS
        self.rate: float | None = None
        self.written_files = 0

    def add(self, state: FileState, rows: list[Row], names: list[str]) -> None:
        """Write a changed file's ``rows`` (and the ``names`` they hold) with its state."""
        size = _chars(rows)
        if size > self.budget and len(rows) > 1:
            self._add_large(state, rows, names)
            return
        if self.pending and self.chars + size > self.budget:
            self.flush()  # the batch stays within its budget: hooks wait for one at most
        self.pending.append((state, rows, names))
        self.chars += size
        if self.chars >= self.budget:
            self.flush()

    def _add_large(self, state: FileState, rows: list[Row], names: list[str]) -> None:
        """A file larger than one transaction's budget, written over several: its old chunks
        go with the first, its state is recorded with the last. Killed midway, it is read
        again by the next run (its recorded state still differs), which replaces the part
        written; readers may see part of it meanwhile."""
        self.flush()
        tails: dict[tuple[str | None, int], str] = {}
        part: list[Row] = []
        size = 0
        first = True
        for index, row in enumerate(rows):
            part.append(row)
            size += _row_chars(row)
            last = index == len(rows) - 1
            if not last and size < self.budget:
                continue
            started = time.perf_counter()
            with self.store.transaction() as conn:
                if first:
                    conn.execute(
                        "DELETE FROM chunks WHERE source_id = ? AND path = ?",
                        (self.source_id, state.path),
                    )
                insert_rows(conn, self.source_id, part, self.now, tails, names if first else ())
                if last:
                    record_states(conn, self.source_id, [state])
            self.store.let_waiters_in()
            self._adapt(size, time.perf_counter() - started)
            part, size, first = [], 0, False
        self.written_files += 1

    def _adapt(self, chars: int, elapsed: float) -> None:
        """Size the next batch from the rate measured so far (characters per second, a
        moving average: one slow commit, an FTS5 merge, should not halve the next batch)."""
        if elapsed > 0:
            rate = chars / elapsed
            self.rate = rate if self.rate is None else 0.7 * self.rate + 0.3 * rate
            self.budget = int(
                min(_MAX_BATCH_CHARS, max(_MIN_BATCH_CHARS, self.rate * TXN_TARGET_S))
            )

    def touch(self, state: FileState) -> None:
        """Record a new mtime for a file whose content did not change."""
        self.touched.append(state)
        if len(self.touched) >= 500:
            self.flush()

    def flush(self) -> None:
        if not self.pending and not self.touched:
            return
        started = time.perf_counter()
        with self.store.transaction() as conn:
            conn.executemany(
                "DELETE FROM chunks WHERE source_id = ? AND path = ?",
                [(self.source_id, p[0].path) for p in self.pending],
            )
            insert_rows(
                conn,
                self.source_id,
                [row for p in self.pending for row in p[1]],
                self.now,
                names={name for p in self.pending for name in p[2]},
            )
            record_states(conn, self.source_id, [p[0] for p in self.pending] + self.touched)
        self.store.let_waiters_in()
        if self.pending:
            self._adapt(self.chars, time.perf_counter() - started)
        self.written_files += len(self.pending)
        self.pending, self.touched, self.chars = [], [], 0


def record_states(conn: sqlite3.Connection, source_id: int, states: Sequence[FileState]) -> None:
    conn.executemany(
        "INSERT INTO source_files(source_id, path, content_hash, mtime, bytes) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT(source_id, path) DO UPDATE SET "
        "content_hash = excluded.content_hash, mtime = excluded.mtime, bytes = excluded.bytes",
        [(source_id, s.path, s.content_hash, s.mtime, s.size) for s in states],
    )


def drop_files(store: Database, source_id: int, paths: Sequence[str]) -> None:
    """Delete the chunks and recorded state of ``paths``, a few files per transaction."""
    for start in range(0, len(paths), _DELETE_BATCH):
        part = paths[start : start + _DELETE_BATCH]
        with store.transaction() as conn:
            for rel in part:
                conn.execute(
                    "DELETE FROM chunks WHERE source_id = ? AND path IS ?", (source_id, rel)
                )
                conn.execute(
                    "DELETE FROM source_files WHERE source_id = ? AND path = ?", (source_id, rel)
                )
        store.let_waiters_in()


#: Names deleted per transaction by ``prune_names``; chunks read per slice.
_PRUNE_BATCH = 2_000
_SCAN_SLICE = 5_000


def _live_names(conn: sqlite3.Connection, above: int, seen: set[str]) -> set[str]:
    """The names of the chunks whose item id is over ``above`` (``seen``: words judged)."""
    live: set[str] = set()
    low = above
    while True:
        rows = conn.execute(
            "SELECT id, title, body FROM search_items WHERE item_kind = 'chunk' AND id > ? "
            "ORDER BY id LIMIT ?",
            (low, _SCAN_SLICE),
        ).fetchall()
        if not rows:
            return live
        live.update(names.new_names((f"{r[1]}\n{r[2]}" for r in rows), seen))
        low = int(rows[-1][0])


def prune_names(store: Database, *, dry_run: bool = False) -> int:
    """Delete the vocabulary's names that no chunk holds any more (files edited or removed
    since they were indexed); return how many (would be) deleted.

    The names the chunks hold are read outside any transaction; each deleting transaction
    first takes in the names of chunks written meanwhile, so a name a new chunk holds stays.
    """
    conn = store.conn
    (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM search_items").fetchone()
    seen: set[str] = set()
    live = _live_names(conn, 0, seen)
    stale = [
        (int(r[0]), str(r[1]))
        for r in conn.execute("SELECT id, name FROM search_names ORDER BY id")
        if str(r[1]) not in live
    ]
    if dry_run:
        return len(stale)
    done = 0
    for start in range(0, len(stale), _PRUNE_BATCH):
        with store.transaction() as tx:
            (now_top,) = tx.execute("SELECT coalesce(max(id), 0) FROM search_items").fetchone()
            if now_top != top:
                live |= _live_names(tx, top, seen)
                top = now_top
            part = [(i,) for i, name in stale[start : start + _PRUNE_BATCH] if name not in live]
            tx.executemany("DELETE FROM search_names WHERE id = ?", part)
            done += len(part)
        store.let_waiters_in()
    return done
