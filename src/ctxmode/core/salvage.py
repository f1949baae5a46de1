"""Salvage a damaged store: every readable row copied into a fresh file, the rest set aside.

Contexts, tasks, links, files, sessions, events, snapshots and the other tables are the user's
data; the search index (``search_items`` and its FTS5 tables) is derived from them. So a store
whose file is damaged (a bad index page, a truncated file, pages overwritten) is copied table by
table, row by row, into a new store, whose triggers build a fresh search index; the damaged file
is then moved aside under ``<name>.bad-<time>`` (``db.quarantine``) and the new one takes its
place (``db.salvage`` opens the new store; this module only reads and copies). Reads go in
rowid order, a batch at a time; when a batch hits a damaged page, the rows after it are probed
one rowid at a time, so one bad page costs only the rows it held.

Document chunks of file-backed sources are not copied: their source rows are, with no recorded
file state, so the next refresh (any search, or ``ctxmode index``) indexes the files again. Chunks
of other sources (fetched pages, sandbox output, content) are copied with their text.

Standard library only: the hook path calls it when a statement reports damage.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

#: Rows read per statement.
_BATCH = 256
#: With no readable highest rowid, probing past a damaged page stops this far after it.
_PROBE_LIMIT = 20_000
#: Tables the new store builds itself or that are derived (never copied).
_DERIVED = frozenset(
    {"_migrations", "search_items", "search_edits", "chunks", "source_files", "source_walks"}
)
#: Copied first, in this order (parents before children); any other table follows.
_ORDER = (
    "contexts",
    "tasks",
    "files",
    "context_task_map",
    "context_file_map",
    "sessions",
    "events",
    "session_resume",
    "hook_state",
    "injections",
    "sources",
    "sandbox_runs",
    "shared_items",
    "team_state",
)


class SalvageReport(dict[str, int]):
    """Rows copied per table (``chunks`` included); ``lost_ranges`` counts damaged stretches."""

    lost_ranges: int = 0

    def summary(self) -> str:
        parts = [f"{n} {t}" for t, n in self.items() if n]
        damaged = f"; {self.lost_ranges} damaged stretch(es) skipped" if self.lost_ranges else ""
        return (", ".join(parts) or "nothing readable") + damaged


def _user_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    names = [
        str(n)
        for n, sql in rows
        if n not in _DERIVED
        and not str(sql or "").upper().startswith("CREATE VIRTUAL")
        and not str(n).startswith("search_")
    ]
    first = [t for t in _ORDER if t in names]
    return first + sorted(t for t in names if t not in first)


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _max_rowid(conn: sqlite3.Connection, table: str) -> int | None:
    try:
        row = conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()
    except sqlite3.DatabaseError:
        return None
    return None if row is None or row[0] is None else int(row[0])


def _read_rows(
    old: sqlite3.Connection, table: str, cols: str, report: SalvageReport
) -> list[tuple[object, ...]]:
    """Every readable row of ``table`` (rowid first), damaged pages skipped."""
    top = _max_rowid(old, table)
    out: list[tuple[object, ...]] = []
    last = -(2**63)
    sql = f'SELECT rowid, {cols} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT {_BATCH}'
    one = f'SELECT rowid, {cols} FROM "{table}" WHERE rowid = ?'
    while True:
        try:
            rows = old.execute(sql, (last,)).fetchall()
        except sqlite3.DatabaseError:
            report.lost_ranges += 1
            rows = []
            start = last + 1 if last > -(2**63) else 1
            end = top if top is not None else start + _PROBE_LIMIT
            for rowid in range(start, end + 1):
                try:
                    row = old.execute(one, (rowid,)).fetchone()
                except sqlite3.DatabaseError:
                    continue
                if row is not None:
                    rows = [row]
                    break
            if not rows:
                return out
        if not rows:
            return out
        out.extend(rows)
        last = int(str(rows[-1][0]))


def _copy_chunks(old: sqlite3.Connection, new: sqlite3.Connection, report: SalvageReport) -> None:
    """Chunks of sources that are not files, with their text (``search_items.body``)."""
    try:
        sources = [int(r[0]) for r in old.execute("SELECT id FROM sources WHERE kind != 'file'")]
    except sqlite3.DatabaseError:
        return
    copied = 0
    for source_id in sources:
        try:
            rows = old.execute(
                "SELECT c.source_id, c.ordinal, c.title, coalesce(nullif(c.content, ''), s.body), "
                "c.kind, c.created_at, c.path FROM chunks c JOIN search_items s "
                "ON s.item_kind = 'chunk' AND s.ref_id = c.id WHERE c.source_id = ? "
                "ORDER BY c.path, c.ordinal",
                (source_id,),
            ).fetchall()
        except sqlite3.DatabaseError:
            report.lost_ranges += 1
            continue
        for row in rows:
            if not row[3]:
                continue
            try:
                new.execute(
                    "INSERT INTO chunks(source_id, ordinal, title, content, kind, created_at, "
                    "path) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
                copied += 1
            except sqlite3.Error:
                continue
    report["chunks"] = copied


def copy_readable(
    old_path: str, new_conn: sqlite3.Connection, log: Callable[[str], None] | None = None
) -> SalvageReport:
    """Copy every readable row of the store at ``old_path`` into ``new_conn`` (a migrated,
    empty store, in autocommit mode); return the counts."""
    report = SalvageReport()
    try:
        if os.path.exists(old_path + "-wal"):  # committed rows may sit in the log
            old = sqlite3.connect(old_path, timeout=5.0)
        else:  # read as is: no log or lock files created beside the damaged file
            uri = "file:" + urllib.parse.quote(os.path.abspath(old_path)) + "?immutable=1"
            old = sqlite3.connect(uri, uri=True)
        old.execute("PRAGMA query_only = ON")
        tables = _user_tables(old)
    except sqlite3.DatabaseError as exc:
        # SQLite cannot read the schema (a truncated file loses the overflow pages of the long
        # trigger texts): read the tables' pages directly.
        if log is not None:
            log(f"SQLite cannot read {old_path} ({exc}); reading its pages directly")
        _copy_pages(old_path, new_conn, report)
        return report
    try:
        new_tables = set(_user_tables(new_conn))

        def copy() -> None:
            _copy_tables(old, new_conn, tables, new_tables, report)
            _copy_chunks(old, new_conn, report)

        _copying(new_conn, copy)
    finally:
        old.close()
    return report


def _copy_tables(
    old: sqlite3.Connection,
    new_conn: sqlite3.Connection,
    tables: list[str],
    new_tables: set[str],
    report: SalvageReport,
) -> None:
    """Every readable row of ``tables`` (those the new store has), column by shared column."""
    for table in tables:
        if table not in new_tables:
            continue
        try:
            shared = [c for c in _columns(old, table) if c in set(_columns(new_conn, table))]
        except sqlite3.DatabaseError:
            report.lost_ranges += 1
            continue
        cols = ", ".join(f'"{c}"' for c in shared)
        rows = (row[1:] for row in _read_rows(old, table, cols, report))
        report[table] = _insert_all(new_conn, table, shared, rows)


def _copying(new_conn: sqlite3.Connection, copy: Callable[[], None]) -> None:
    """Run ``copy`` in one transaction, foreign keys off (rows come in rowid order, not in
    the order their references need); file-backed sources then come back on the next
    refresh (nothing recorded: all their files look new)."""
    new_conn.execute("PRAGMA foreign_keys = OFF")
    new_conn.execute("BEGIN IMMEDIATE")
    try:
        copy()
        new_conn.execute("UPDATE sources SET content_hash = NULL, mtime = NULL WHERE kind = 'file'")
        new_conn.execute("COMMIT")
    except BaseException:
        if new_conn.in_transaction:
            new_conn.execute("ROLLBACK")
        raise
    finally:
        new_conn.execute("PRAGMA foreign_keys = ON")


def _insert_all(
    new_conn: sqlite3.Connection, table: str, cols: list[str], rows: Iterable[Sequence[Any]]
) -> int:
    """Insert (or replace) ``rows`` into ``table``; a row SQLite refuses is skipped. How many
    went in."""
    names = ", ".join(f'"{c}"' for c in cols)
    marks = ", ".join("?" for _ in cols)
    insert = f'INSERT OR REPLACE INTO "{table}" ({names}) VALUES ({marks})'
    copied = 0
    for row in rows:
        try:
            new_conn.execute(insert, row)
            copied += 1
        except sqlite3.Error:
            continue
    return copied


def _copy_pages(old_path: str, new_conn: sqlite3.Connection, report: SalvageReport) -> None:
    """``copy_readable`` for a file whose schema SQLite cannot read (``core.pages``)."""
    from ctxmode.core.pages import PageFile

    try:
        with open(old_path, "rb") as handle:
            pages = PageFile(handle.read())
        roots = pages.tables()
    except (OSError, ValueError):
        return

    def copy() -> None:
        for table in _user_tables(new_conn):
            if table not in roots:
                continue
            info = list(new_conn.execute(f'PRAGMA table_info("{table}")'))
            cols = [str(r[1]) for r in info]
            # An INTEGER PRIMARY KEY is stored as NULL in the record: its value is the rowid.
            pks = [i for i, r in enumerate(info) if r[5]]
            alias = pks[0] if len(pks) == 1 and str(info[pks[0]][2]).upper() == "INTEGER" else -1

            rows = _page_rows(pages.rows(roots[table]), len(cols), alias)
            report[table] = _insert_all(new_conn, table, cols, rows)

    _copying(new_conn, copy)


def _page_rows(
    records: Iterable[tuple[int, list[Any]]], width: int, alias: int
) -> Iterator[list[Any]]:
    """Records read from pages as rows of ``width`` values, the rowid put in for the
    ``alias`` column (an INTEGER PRIMARY KEY, -1: none)."""
    for rowid, values in records:
        row = (values + [None] * width)[:width]
        if alias >= 0 and row[alias] is None:
            row[alias] = rowid
        yield row
