"""Retention rules and staleness.

- ``decision``: kept until superseded; superseded ones are archived (still readable by id).
- ``constraint``: kept until every task it is linked to is completed (unlinked: kept).
- ``snippet``: expires ``snippet_days`` (90) after its last update; archived as soon as a file
  it was linked to is deleted. A changed file never deletes anything: it makes its contexts
  stale (``refresh_files``), which clears when the content matches again.
- ``reference``: expires ``reference_days`` (30) after it was last read (or written).
- ``session``-scoped contexts go when their session has ended.
- other superseded contexts are archived like decisions.
Guard over all of it: nothing linked to a task that is not completed is ever deleted.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctxmode.core.errors import InvalidInput
from ctxmode.core.models import CleanupAction, CleanupReport
from ctxmode.knowledge.contexts import absolute_path, file_hash

if TYPE_CHECKING:
    from ctxmode.core.db import Database

DAY = 86_400
#: Linked files larger than this are not re-hashed for the stale check (bytes).
HASH_MAX_BYTES = 8 * 1024 * 1024


def refresh_files(
    store: Database, now: int | None = None, paths: Sequence[str] | None = None
) -> list[str]:
    """Re-hash linked files (all, or the given project-relative ``paths``) and bring the
    ``stale`` mark of every context linked to them up to date.

    A context is stale while one of its linked files differs from the content the link was
    made against (deleted included), and stops being stale as soon as every such file
    matches again: a revert clears it. A file that did not exist when linked (planned) takes
    its first content as the baseline. Nothing is written when nothing moved, so reads stay
    reads. Returns the paths whose content changed since they were last looked at.
    """
    ts = int(now if now is not None else time.time())
    sql = "SELECT id, path, hash FROM files"
    params: tuple[str, ...] = ()
    if paths is not None:
        if not paths:
            return []
        sql += f" WHERE path IN ({','.join('?' * len(paths))})"
        params = tuple(paths)
    conn = store.conn
    current: dict[int, str | None] = {}
    moved: list[tuple[int, str, str | None]] = []
    for file_id, path, old in conn.execute(sql, params).fetchall():
        full = absolute_path(store, path)
        try:
            huge = full.stat().st_size > HASH_MAX_BYTES
        except OSError:
            huge = False
        # A huge file is not re-hashed on every query: it keeps the hash last seen.
        digest = old if huge else file_hash(full)
        current[int(file_id)] = digest
        if digest != old:
            moved.append((int(file_id), str(path), digest))
    if not current:
        return []
    marks, adopt = _stale_marks(conn, current)
    if moved or marks or adopt:
        with store.transaction() as tx:
            for file_id, _path, digest in moved:
                tx.execute(
                    "UPDATE files SET hash = ?, last_indexed = ? WHERE id = ?",
                    (digest, ts, file_id),
                )
            for file_id in adopt:
                tx.execute(
                    "UPDATE context_file_map SET linked_hash = ? "
                    "WHERE file_id = ? AND linked_hash IS NULL",
                    (current[file_id], file_id),
                )
            for context_id, stale in marks.items():
                tx.execute("UPDATE contexts SET stale = ? WHERE id = ?", (int(stale), context_id))
    return [p for _, p, _ in moved]


def _stale_marks(
    conn: sqlite3.Connection, current: dict[int, str | None]
) -> tuple[dict[int, bool], list[int]]:
    """The contexts linked to the files of ``current`` (file id -> hash on disk now) whose
    stale mark must change, with its new value; and the files whose planned links (no
    baseline) now have content to adopt."""
    ids = list(current)
    rows: list[tuple[int, int, int, str | None, str | None]] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        holes = ",".join("?" * len(chunk))
        rows += conn.execute(
            "SELECT m.context_id, c.stale, m.file_id, m.linked_hash, f.hash "
            "FROM context_file_map m JOIN files f ON f.id = m.file_id "
            "JOIN contexts c ON c.id = m.context_id "
            "WHERE m.context_id IN (SELECT context_id FROM context_file_map "
            f"WHERE file_id IN ({holes}))",
            chunk,
        ).fetchall()
    was: dict[int, bool] = {}
    now_stale: dict[int, bool] = {}
    adopt: set[int] = set()
    for context_id, stale, file_id, linked, last_seen in rows:
        was[context_id] = bool(stale)
        on_disk = current.get(file_id, last_seen)
        if linked is None:
            if on_disk is not None and file_id in current:
                adopt.add(file_id)
            changed = False
        else:
            changed = linked != on_disk
        now_stale[context_id] = now_stale.get(context_id, False) or changed
    marks = {cid: flag for cid, flag in now_stale.items() if flag != was[cid]}
    return marks, sorted(adopt)


def accept_file_content(
    store: Database, context_id: int, paths: Sequence[str] | None = None
) -> list[str]:
    """Take the current content of the context's linked files (all, or the given
    project-relative ``paths``) as what it was written against: it is no longer stale
    because of them. Returns the paths refreshed; a path not linked to it is an error."""
    from ctxmode.knowledge.contexts import get_context

    get_context(store, context_id)
    linked = {
        str(path): int(file_id)
        for file_id, path in store.conn.execute(
            "SELECT f.id, f.path FROM context_file_map m JOIN files f ON f.id = m.file_id "
            "WHERE m.context_id = ?",
            (context_id,),
        )
    }
    chosen = list(linked) if paths is None else list(dict.fromkeys(paths))
    missing = [p for p in chosen if p not in linked]
    if missing:
        raise InvalidInput(
            f"#{context_id} is not linked to {missing[0]}; its files are: "
            + (", ".join(sorted(linked)) or "none")
            + f" (link one with ctxmode link {context_id} PATH)"
        )
    with store.transaction() as conn:
        for path in chosen:
            digest = file_hash(absolute_path(store, path))
            conn.execute("UPDATE files SET hash = ? WHERE id = ?", (digest, linked[path]))
            conn.execute(
                "UPDATE context_file_map SET linked_hash = ? WHERE context_id = ? AND file_id = ?",
                (digest, context_id, linked[path]),
            )
    refresh_files(store, paths=sorted(linked))
    return sorted(chosen)


def deleted_links(store: Database, context_ids: Sequence[int] | None = None) -> dict[int, str]:
    """Context id -> the first of its linked files that existed when linked and is gone now
    (checked on disk: a dry run must see it before any refresh recorded it)."""
    sql = (
        "SELECT m.context_id, f.path FROM context_file_map m JOIN files f ON f.id = m.file_id "
        "WHERE m.linked_hash IS NOT NULL AND m.linked_hash != ''"
    )
    params: tuple[int, ...] = ()
    if context_ids is not None:
        sql += f" AND m.context_id IN ({','.join('?' * len(context_ids)) or 'NULL'})"
        params = tuple(context_ids)
    gone: dict[int, str] = {}
    exists: dict[str, bool] = {}
    for context_id, path in store.conn.execute(sql + " ORDER BY f.path", params).fetchall():
        if path not in exists:
            exists[path] = absolute_path(store, str(path)).exists()
        if not exists[path]:
            gone.setdefault(int(context_id), str(path))
    return gone


def _open_task_guard() -> str:
    return (
        "NOT EXISTS (SELECT 1 FROM context_task_map m JOIN tasks t ON t.id = m.task_id "
        "WHERE m.context_id = c.id AND t.status != 'completed')"
    )


def plan_cleanup(store: Database, now: int) -> list[CleanupAction]:
    """Every action the rules call for at time ``now`` (nothing is changed)."""
    settings = store.settings
    conn = store.conn
    guard = _open_task_guard()
    actions: list[CleanupAction] = []
    seen: set[int] = set()

    def add(rows: list[tuple[int, str]], action: str, reason: str) -> None:
        for cid, ctype in rows:
            if cid not in seen:
                seen.add(cid)
                actions.append(CleanupAction(cid, ctype, action, reason))  # type: ignore[arg-type]

    add(
        conn.execute(
            "SELECT c.id, c.type FROM contexts c WHERE c.superseded_by IS NOT NULL "
            "AND c.archived_at IS NULL ORDER BY c.id"
        ).fetchall(),
        "archive",
        "superseded",
    )
    add(
        conn.execute(
            f"SELECT c.id, c.type FROM contexts c WHERE c.type = 'constraint' "
            f"AND EXISTS (SELECT 1 FROM context_task_map m WHERE m.context_id = c.id) "
            f"AND {guard} AND c.archived_at IS NULL ORDER BY c.id"
        ).fetchall(),
        "delete",
        "every linked task is completed",
    )
    # A snippet copies code: once a file it was linked to is deleted, it is archived (still
    # readable by id), with the file named. A file that merely changed deletes nothing: the
    # context is marked stale, which clears if the file matches again.
    snippets = [
        int(r[0])
        for r in conn.execute(
            "SELECT c.id FROM contexts c WHERE c.type = 'snippet' AND c.archived_at IS NULL "
            "AND EXISTS (SELECT 1 FROM context_file_map m WHERE m.context_id = c.id) "
            "ORDER BY c.id"
        )
    ]
    for cid, path in sorted(deleted_links(store, snippets).items()):
        if cid not in seen:
            seen.add(cid)
            actions.append(CleanupAction(cid, "snippet", "archive", f"linked file {path} deleted"))
    add(
        conn.execute(
            f"SELECT c.id, c.type FROM contexts c WHERE c.type = 'snippet' "
            f"AND c.updated_at < ? AND {guard} ORDER BY c.id",
            (now - settings.snippet_days * DAY,),
        ).fetchall(),
        "delete",
        f"older than {settings.snippet_days} days",
    )
    add(
        conn.execute(
            f"SELECT c.id, c.type FROM contexts c WHERE c.type = 'reference' "
            f"AND COALESCE(c.last_accessed_at, c.updated_at) < ? AND {guard} ORDER BY c.id",
            (now - settings.reference_days * DAY,),
        ).fetchall(),
        "delete",
        f"not read for {settings.reference_days} days",
    )
    add(
        conn.execute(
            f"SELECT c.id, c.type FROM contexts c JOIN sessions s ON s.session_id = c.session_id "
            f"WHERE c.scope = 'session' AND s.ended_at IS NOT NULL AND {guard} ORDER BY c.id"
        ).fetchall(),
        "delete",
        "its session ended",
    )
    return actions


def cleanup(store: Database, now: int | None = None, dry_run: bool = False) -> CleanupReport:
    """Apply the retention rules at ``now`` (default: the current time)."""
    ts = int(now if now is not None else time.time())
    if not dry_run:
        refresh_files(store, now=ts)  # stale marks as the disk holds them now
    actions = plan_cleanup(store, ts)
    if not dry_run and actions:
        with store.transaction() as conn:
            for a in actions:
                if a.action == "archive":
                    conn.execute(
                        "UPDATE contexts SET archived_at = ? WHERE id = ?", (ts, a.context_id)
                    )
                elif a.action == "delete":
                    # A superseded predecessor keeps pointing at nothing (ON DELETE SET NULL
                    # would make it live again), so archive those predecessors first.
                    conn.execute(
                        "UPDATE contexts SET archived_at = COALESCE(archived_at, ?) "
                        "WHERE superseded_by = ?",
                        (ts, a.context_id),
                    )
                    conn.execute("DELETE FROM contexts WHERE id = ?", (a.context_id,))
    return CleanupReport(now=ts, dry_run=dry_run, actions=tuple(actions))
