"""Index files, folders and raw content into searchable chunks (``sources`` + ``chunks``).

A *source* is the unit that was indexed: one file, one folder (many files), one piece of content,
one fetched URL or one sandbox output, named by a unique label. Invariants:
- a file-backed source is written in short transactions (``writer.TXN_TARGET_S`` each, a file's
  chunks and its recorded state together unless the file alone is larger), so other writers
  wait at most about that long and a killed run resumes where it stopped; content, fetched
  pages and sandbox output are replaced in one transaction (readers never see half);
- every stored title and chunk is redacted (``.env`` files have every value masked); paths
  resolve inside the project (symlinks out refused unless under ``allow_outside_paths``);
- folder walks honour ``.gitignore`` files (each one for its own subtree; a negation cannot
  re-include what a parent folder's file ignored), skip VCS/tool folders, binaries and files
  over ``MAX_FILE_BYTES``; text is read as UTF-8, UTF-16 with a BOM, or else a legacy
  single-byte encoding (``decode_text``). A file named explicitly is indexed even when ignored:
  the caller asked for it;
- file-backed sources remember each file's hash, mtime and size (``source_files``), so
  ``refresh_sources`` re-chunks only what changed and drops what disappeared.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctxmode.core.errors import InvalidInput
from ctxmode.knowledge.contexts import absolute_path, normalize_path
from ctxmode.search.files import Skipped, read_text, walk_files
from ctxmode.search.sources import SOURCE_KINDS, location_exists, save_walk, walked_files
from ctxmode.search.writer import (
    Batcher,
    FileState,
    Todo,
    drop_files,
    index_fresh_names,
    insert_rows,
)

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.core.db import Database
    from ctxmode.search.chunking import Piece
    from ctxmode.search.prepare import Prepared

#: Largest piece of raw content accepted by ``index_content`` (characters).
MAX_CONTENT_CHARS = 10_000_000


#: ``progress(done, total, path)`` is called after each file of a walk.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class IndexedSource:
    """What happened to one source."""

    label: str
    kind: str
    location: str | None
    #: "indexed" | "refreshed" | "unchanged" | "missing" (its file or folder is gone: its
    #: chunks are dropped, the source stays and is indexed again when the path is back)
    status: str
    files: int
    chunks: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "location": self.location,
            "status": self.status,
            "files": self.files,
            "chunks": self.chunks,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class IndexReport:
    """Summary of an indexing call: sources written and files left out."""

    sources: tuple[IndexedSource, ...] = ()
    skipped: tuple[Skipped, ...] = field(default_factory=tuple)
    #: Wall time of the call (seconds).
    seconds: float = 0.0

    @property
    def chunks(self) -> int:
        return sum(s.chunks for s in self.sources)

    @property
    def files(self) -> int:
        return sum(s.files for s in self.sources)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": [s.to_dict() for s in self.sources],
            "files": self.files,
            "chunks": self.chunks,
            "bytes": sum(s.bytes for s in self.sources),
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "seconds": round(self.seconds, 3),
        }


def _check_label(label: object) -> str:
    if not isinstance(label, str) or not label.strip():
        raise InvalidInput("source label must be a non-empty string, e.g. --source docs")
    text = label.strip()
    if len(text) > 300:
        raise InvalidInput("source label is longer than 300 characters; use a shorter name")
    return text


def _upsert_source(
    conn: sqlite3.Connection,
    label: str,
    kind: str,
    location: str | None,
    *,
    content_hash: str | None,
    mtime: float | None,
    size: int,
    now: int,
    fetched_at: int | None = None,
    expires_at: int | None = None,
) -> int:
    row = conn.execute("SELECT id FROM sources WHERE label = ?", (label,)).fetchone()
    if row:
        conn.execute(
            "UPDATE sources SET kind = ?, location = ?, content_hash = ?, mtime = ?, bytes = ?, "
            "fetched_at = ?, expires_at = ?, indexed_at = ? WHERE id = ?",
            (kind, location, content_hash, mtime, size, fetched_at, expires_at, now, row[0]),
        )
        return int(row[0])
    cur = conn.execute(
        "INSERT INTO sources(label, kind, location, content_hash, mtime, bytes, fetched_at, "
        "expires_at, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (label, kind, location, content_hash, mtime, size, fetched_at, expires_at, now),
    )
    return int(cur.lastrowid or 0)


def _aggregate_hash(states: Iterable[FileState]) -> str:
    joined = "\n".join(f"{s.path}\0{s.content_hash}" for s in sorted(states, key=lambda s: s.path))
    from ctxmode.search.prepare import sha256

    return sha256(joined.encode())


def _sync_files(
    store: Database,
    source_id: int,
    files: Sequence[str],
    skipped: list[Skipped],
    *,
    is_dir: bool,
    now: int,
    progress: Progress | None,
) -> tuple[list[FileState], bool]:
    """Bring ``source_id``'s chunks in line with ``files``; return their states and whether
    anything was written.

    A file whose size and mtime match its recorded state is not read; one whose bytes hash to
    the recorded hash only gets its new mtime; the others are chunked again. Recorded files no
    longer in ``files`` lose their chunks. Writes go through ``Batcher`` (short transactions).
    """
    known = {
        r[0]: (r[1], r[2], r[3])
        for r in store.conn.execute(
            "SELECT path, content_hash, mtime, bytes FROM source_files WHERE source_id = ?",
            (source_id,),
        )
    }
    batch, root = Batcher(store, source_id, now), str(store.root)
    states: list[FileState] = []
    todos: list[Todo] = []
    total, done = len(files), 0
    for rel in files:
        file_path = os.path.join(root, rel)  # strings: ~3 us a file, a Path ~25
        try:
            stat = os.stat(file_path)
        except OSError:
            _text, reason, _raw = read_text(absolute_path(store, rel))
            skipped.append(Skipped(rel, reason or "skipped"))
            done += 1
            continue
        old = known.get(rel)
        if old and old[1] == stat.st_mtime and old[2] == stat.st_size:
            states.append(FileState(rel, old[0], stat.st_mtime, stat.st_size))
            done += 1
            if progress is not None:
                progress(done, total, rel)
        else:
            todos.append(Todo(rel, stat.st_mtime, stat.st_size, old[0] if old else None))
    # Read, redact and chunk the others (in worker processes for a large folder), writing
    # each as it comes, in order. That code loads only when a file changed: a search
    # refreshes its sources first, and mostly finds nothing to do.
    for prepared in _prepared(root, is_dir, todos):
        done += 1
        if prepared.state is None:
            skipped.append(Skipped(prepared.rel, prepared.reason or "skipped"))
        else:
            states.append(prepared.state)
            if prepared.rows is None:
                batch.touch(prepared.state)
            else:
                batch.add(prepared.state, prepared.rows, prepared.names or [])
        if progress is not None:
            progress(done, total, prepared.rel)
    batch.flush()
    seen = {s.path for s in states}
    removed = [p for p in known if p not in seen]
    drop_files(store, source_id, removed)
    return states, bool(batch.written_files or removed)


def _prepared(root: str, is_dir: bool, todos: list[Todo]) -> Iterator[Prepared]:
    if not todos:
        return
    from ctxmode.search.prepare import Preparer

    yield from Preparer(root, is_dir, set()).run(todos)


def _finish_source(store: Database, source_id: int, states: Sequence[FileState], now: int) -> int:
    """Record a file-backed source's aggregate state; return its chunk count."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE sources SET content_hash = ?, mtime = ?, bytes = ?, indexed_at = ? "
            "WHERE id = ?",
            (
                _aggregate_hash(states),
                max((s.mtime for s in states), default=None),
                sum(s.size for s in states),
                now,
                source_id,
            ),
        )
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM chunks WHERE source_id = ?", (source_id,)
            ).fetchone()[0]
        )


def _file_source(store: Database, label: str, location: str, now: int) -> tuple[int, bool]:
    """The id of file-backed source ``label`` at ``location`` (created when new) and whether
    it is new. A source of that label with another kind or location is emptied first."""
    row = store.conn.execute(
        "SELECT id, kind, location FROM sources WHERE label = ?", (label,)
    ).fetchone()
    if row is not None and row[1] == "file" and row[2] == location:
        return int(row[0]), False
    if row is not None:
        paths = [
            r[0]
            for r in store.conn.execute(
                "SELECT DISTINCT path FROM chunks WHERE source_id = ?", (row[0],)
            )
        ]
        drop_files(store, int(row[0]), paths)
        with store.transaction() as conn:
            conn.execute("DELETE FROM source_files WHERE source_id = ?", (row[0],))
    with store.transaction() as conn:
        source_id = _upsert_source(
            conn, label, "file", location, content_hash=None, mtime=None, size=0, now=now
        )
    return source_id, row is None or row[1] != "file" or row[2] != location


def index_path(
    store: Database,
    path: str,
    source: str | None = None,
    progress: Progress | None = None,
    *,
    now: int | None = None,
) -> IndexReport:
    """Index a file or a folder as one source (label: ``source``, else the relative path).

    A folder's chunks are titled ``<file> > <heading>``; a single file's by its headings or
    definitions. Indexing the same label again replaces its previous chunks.
    """
    started = time.perf_counter()
    rel = normalize_path(store, path)
    target = absolute_path(store, rel)
    label = _check_label(source) if source is not None else ("project" if rel == "." else rel)
    ts = int(now if now is not None else time.time())
    seen: dict[str, int] = {}
    if target.is_dir():
        files, skipped = walk_files(store, rel, seen)
        is_dir = True
    elif target.is_file():
        text, reason, _raw = read_text(target)
        if text is None:
            raise InvalidInput(f"{rel} was not indexed: {reason or 'skipped'}")
        files, skipped, is_dir = [rel], [], False
    else:
        raise InvalidInput(f"{path!r} is neither a file nor a folder; check the path")
    source_id, is_new = _file_source(store, label, rel, ts)
    save_walk(store, source_id, None)
    states, wrote = _sync_files(
        store, source_id, files, skipped, is_dir=is_dir, now=ts, progress=progress
    )
    count = _finish_source(store, source_id, states, ts)
    index_fresh_names(store)
    save_walk(store, source_id, seen)
    status = "indexed" if is_new else "refreshed" if wrote else "unchanged"
    indexed = IndexedSource(
        label, "file", rel, status, len(states), count, sum(s.size for s in states)
    )
    return IndexReport((indexed,), tuple(skipped), time.perf_counter() - started)


def index_content(
    store: Database,
    content: str,
    source: str,
    kind: str = "content",
    *,
    fmt: str | None = None,
    location: str | None = None,
    fetched_at: int | None = None,
    expires_at: int | None = None,
    now: int | None = None,
) -> IndexReport:
    """Index a piece of text as source ``source`` (replacing a previous one of that label).

    ``fmt`` forces "markdown", "json", "code" or "text"; by default the content is sniffed.
    """
    label = _check_label(source)
    if kind not in SOURCE_KINDS:
        raise InvalidInput(f"unknown source kind {kind!r}; use one of: {', '.join(SOURCE_KINDS)}")
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content to index must be a non-empty string")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"content is {len(content)} characters, over the {MAX_CONTENT_CHARS} limit; "
            "split it or write it to a file and index the file"
        )
    raw = content.encode("utf-8", errors="replace")
    from ctxmode.core.redact import redact
    from ctxmode.search.chunking import chunk_as, chunk_content
    from ctxmode.search.prepare import sha256

    clean = redact(content)
    pieces = chunk_as(clean, fmt) if fmt else chunk_content(clean)
    return index_pieces(
        store,
        pieces,
        label,
        kind,
        redacted=True,
        size=len(raw),
        content_hash=sha256(raw),
        location=location,
        fetched_at=fetched_at,
        expires_at=expires_at,
        now=now,
    )


def index_pieces(
    store: Database,
    pieces: Sequence[Piece],
    source: str,
    kind: str,
    *,
    size: int,
    redacted: bool = False,
    content_hash: str | None = None,
    location: str | None = None,
    fetched_at: int | None = None,
    expires_at: int | None = None,
    now: int | None = None,
) -> IndexReport:
    """Store already chunked pieces as source ``source``, replacing a previous one.

    Pieces are redacted here unless ``redacted`` says their text was redacted as a whole
    before chunking (titles are redacted again either way).
    """
    label = _check_label(source)
    if kind not in SOURCE_KINDS:
        raise InvalidInput(f"unknown source kind {kind!r}; use one of: {', '.join(SOURCE_KINDS)}")
    from ctxmode.search.prepare import names_of, redact_piece, rows_of

    rows = rows_of(None, [redact_piece(p, content_redacted=redacted) for p in pieces])
    ts = int(now if now is not None else time.time())
    with store.transaction() as conn:
        source_id = _upsert_source(
            conn,
            label,
            kind,
            location,
            content_hash=content_hash,
            mtime=None,
            size=size,
            now=ts,
            fetched_at=fetched_at,
            expires_at=expires_at,
        )
        conn.execute("DELETE FROM chunks WHERE source_id = ?", (source_id,))
        conn.execute("DELETE FROM source_files WHERE source_id = ?", (source_id,))
        count = insert_rows(conn, source_id, rows, ts, names=names_of(rows, set()))
    index_fresh_names(store)
    return IndexReport((IndexedSource(label, kind, location, "indexed", 0, count, size),))


# -- refresh ---------------------------------------------------------------------------------


def _refresh_one(
    store: Database, source_id: int, label: str, location: str, now: int
) -> tuple[IndexedSource, list[Skipped]]:
    target = absolute_path(store, location)
    if not location_exists(store, location):
        # Kept, emptied: a folder gone with a branch switch is indexed again when it is back
        # (its files all look new then); `ctxmode sources --rm` deletes a source for good.
        paths = [
            r[0]
            for r in store.conn.execute(
                "SELECT path FROM source_files WHERE source_id = ?", (source_id,)
            )
        ]
        if paths:
            drop_files(store, source_id, paths)
            with store.transaction() as conn:
                conn.execute("DELETE FROM chunks WHERE source_id = ?", (source_id,))
                conn.execute(
                    "UPDATE sources SET content_hash = NULL, mtime = NULL, bytes = 0, "
                    "indexed_at = ? WHERE id = ?",
                    (now, source_id),
                )
        return IndexedSource(label, "file", location, "missing", 0, 0, 0), []
    is_dir = target.is_dir()
    skipped: list[Skipped] = []
    seen: dict[str, int] = {}
    listed = walked_files(store, source_id) if is_dir else [location]
    if listed is None:
        listed, skipped = walk_files(store, location, seen)
    states, wrote = _sync_files(
        store, source_id, listed, skipped, is_dir=is_dir, now=now, progress=None
    )
    if seen:
        save_walk(store, source_id, seen)
    size = sum(s.size for s in states)
    if not wrote:
        count = store.conn.execute(
            "SELECT COUNT(*) FROM chunks WHERE source_id = ?", (source_id,)
        ).fetchone()[0]
        return IndexedSource(label, "file", location, "unchanged", len(states), count, size), []
    count = _finish_source(store, source_id, states, now)
    index_fresh_names(store)
    return IndexedSource(label, "file", location, "refreshed", len(states), count, size), skipped


def refresh_sources(
    store: Database, labels: Sequence[str] | None = None, *, now: int | None = None
) -> IndexReport:
    """Bring file-backed sources up to date with the files on disk.

    Files whose mtime and size are unchanged are not read; changed ones are re-chunked (alone,
    not the whole folder); deleted files lose their chunks; a source whose file or folder is gone
    loses its chunks but stays listed, and is indexed again once the path exists again.
    Cheap when nothing changed: one ``stat`` per file and no write.
    """
    ts = int(now if now is not None else time.time())
    sql = "SELECT id, label, location FROM sources WHERE kind = 'file' AND location IS NOT NULL"
    params: list[Any] = []
    if labels:
        sql += f" AND label IN ({', '.join('?' for _ in labels)})"
        params.extend(labels)
    results: list[IndexedSource] = []
    skipped: list[Skipped] = []
    for source_id, label, location in store.conn.execute(sql + " ORDER BY id", params).fetchall():
        done, skip = _refresh_one(store, int(source_id), str(label), str(location), ts)
        results.append(done)
        skipped.extend(skip)
    return IndexReport(tuple(results), tuple(skipped))


#: ``refresh_due`` refreshes a store's file-backed sources at most this often (seconds): a
#: long-lived server searching many times a second pays one ``stat`` per indexed file once
#: per interval, not per query (~47 ms for 2,400 files, measured by hand).
REFRESH_EVERY_S = 2.0
_LAST_REFRESH: weakref.WeakKeyDictionary[Database, float] = weakref.WeakKeyDictionary()


def refresh_due(store: Database, every_s: float = REFRESH_EVERY_S) -> IndexReport | None:
    """``refresh_sources`` unless it ran on this ``store`` less than ``every_s`` seconds ago
    (then ``None``). ``Store.search`` calls it first (every face searches so), so edited files are
    searched as they are; a server that keeps one store open pays for it once per interval."""
    now = time.monotonic()
    last = _LAST_REFRESH.get(store)
    if last is not None and now - last < every_s:
        return None
    report = refresh_sources(store)
    _LAST_REFRESH[store] = time.monotonic()
    return report


__all__ = [
    "IndexReport",
    "IndexedSource",
    "index_content",
    "index_path",
    "index_pieces",
    "refresh_sources",
]
