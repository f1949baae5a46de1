"""Indexed sources read back: what is indexed (``list_sources``), one source's chunks, removal.

A file-backed source whose file or folder is not on disk now is listed as ``missing``; its
chunks come back once the path does (``indexing.refresh_sources``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ctxmode.core.errors import InvalidInput, NotFound, PathOutsideProject
from ctxmode.knowledge.contexts import absolute_path, normalize_path

if TYPE_CHECKING:
    from ctxmode.core.db import Database

SOURCE_KINDS = ("file", "url", "content", "sandbox", "import")


@dataclass(frozen=True)
class SourceInfo:
    """A row of ``sources`` with its chunk count; ``missing``: a file-backed source whose file
    or folder is not on disk now (it has no chunks until the path is back)."""

    id: int
    label: str
    kind: str
    location: str | None
    bytes: int
    chunks: int
    indexed_at: int
    fetched_at: int | None
    expires_at: int | None
    missing: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "kind": self.kind,
            "location": self.location,
            "bytes": self.bytes,
            "chunks": self.chunks,
            "indexed_at": self.indexed_at,
            "fetched_at": self.fetched_at,
            "expires_at": self.expires_at,
            "missing": self.missing,
        }


_SOURCE_SQL = (
    "SELECT s.id, s.label, s.kind, s.location, s.bytes, "
    "(SELECT COUNT(*) FROM chunks c WHERE c.source_id = s.id), s.indexed_at, s.fetched_at, "
    "s.expires_at FROM sources s"
)


def list_sources(store: Database, kind: str | None = None) -> list[SourceInfo]:
    """Indexed sources, most recently indexed first."""
    if kind is not None and kind not in SOURCE_KINDS:
        raise InvalidInput(f"unknown source kind {kind!r}; use one of: {', '.join(SOURCE_KINDS)}")
    where = " WHERE s.kind = ?" if kind else ""
    rows = store.conn.execute(
        _SOURCE_SQL + where + " ORDER BY s.indexed_at DESC, s.id DESC", (kind,) if kind else ()
    ).fetchall()
    return [_source_info(store, r) for r in rows]


def get_source(store: Database, label: str) -> SourceInfo:
    """The source with this label."""
    row = store.conn.execute(_SOURCE_SQL + " WHERE s.label = ?", (label,)).fetchone()
    if row is None:
        raise NotFound(f"no indexed source {label!r}; list them with `ctxmode sources`")
    return _source_info(store, row)


def _source_info(store: Database, row: Sequence[Any]) -> SourceInfo:
    info = SourceInfo(*row)
    if info.kind != "file" or info.location is None or location_exists(store, info.location):
        return info
    return replace(info, missing=True)


def location_exists(store: Database, location: str) -> bool:
    """Whether a file-backed source's file or folder is on disk, inside the project."""
    target = absolute_path(store, location)
    try:
        normalize_path(store, str(target))
        return target.exists()
    except (OSError, PathOutsideProject):
        return False


def source_chunks(store: Database, label: str) -> list[tuple[str, str]]:
    """(title, content) of a source's chunks in document order."""
    info = get_source(store, label)
    rows = store.conn.execute(
        "SELECT c.title, s.body FROM chunks c "
        "JOIN search_items s ON s.item_kind = 'chunk' AND s.ref_id = c.id "
        "WHERE c.source_id = ? ORDER BY IFNULL(c.path, ''), c.ordinal, c.id",
        (info.id,),
    ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def walked_files(store: Database, source_id: int) -> list[str] | None:
    """The files of folder source ``source_id`` as its last complete walk listed them, when no
    folder or .gitignore it saw has changed since (``files.walk_unchanged``); else ``None``
    (walk again). Stamps are dropped when an index starts and saved when a walk's files are
    all written, so a killed run never leaves a listing that misses files."""
    import json

    from ctxmode.search.files import walk_unchanged

    row = store.conn.execute(
        "SELECT stamps FROM source_walks WHERE source_id = ?", (source_id,)
    ).fetchone()
    if row is None or not walk_unchanged(json.loads(row[0])):
        return None
    sql = "SELECT path FROM source_files WHERE source_id = ? ORDER BY path"
    return [str(r[0]) for r in store.conn.execute(sql, (source_id,))]


def save_walk(store: Database, source_id: int, stamps: dict[str, int] | None) -> None:
    """Record (``stamps``) or drop (``None``) what a walk of folder source ``source_id`` saw."""
    import json

    with store.transaction() as conn:
        conn.execute("DELETE FROM source_walks WHERE source_id = ?", (source_id,))
        if stamps:
            conn.execute(
                "INSERT INTO source_walks(source_id, stamps) VALUES (?, ?)",
                (source_id, json.dumps(stamps, separators=(",", ":"))),
            )


def remove_source(store: Database, label: str) -> bool:
    """Delete a source and its chunks, a few files per transaction (a folder's thousands of
    chunks in one would hold the write lock for seconds); False when there was none."""
    from ctxmode.search.writer import drop_files

    row = store.conn.execute("SELECT id FROM sources WHERE label = ?", (label,)).fetchone()
    if row is None:
        return False
    paths = [
        r[0]
        for r in store.conn.execute(
            "SELECT DISTINCT path FROM chunks WHERE source_id = ? "
            "UNION SELECT path FROM source_files WHERE source_id = ?",
            (row[0], row[0]),
        )
    ]
    drop_files(store, int(row[0]), paths)
    with store.transaction() as conn:
        cur = conn.execute("DELETE FROM sources WHERE id = ?", (row[0],))
        return cur.rowcount > 0


__all__ = [
    "SOURCE_KINDS",
    "SourceInfo",
    "get_source",
    "list_sources",
    "remove_source",
    "save_walk",
    "source_chunks",
    "walked_files",
]
