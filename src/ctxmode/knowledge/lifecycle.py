"""Retention rules and staleness.

- ``decision``: kept until superseded; superseded ones are archived (still readable by id).
- ``constraint``: kept until every task it is linked to is completed (unlinked: kept).
- ``snippet``: expires ``snippet_days`` (90) after its last update, or as soon as a linked file
  is deleted or its content hash changes.
- ``reference``: expires ``reference_days`` (30) after it was last read (or written).
- ``session``-scoped contexts go when their session has ended.
- other superseded contexts are archived like decisions.
Guard over all of it: nothing linked to a task that is not completed is ever deleted.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctxmode.core.models import CleanupAction, CleanupReport
from ctxmode.knowledge.contexts import absolute_path, file_hash

if TYPE_CHECKING:
    from ctxmode.core.db import Database

DAY = 86_400


def refresh_files(
    store: Database, now: int | None = None, paths: Sequence[str] | None = None
) -> list[str]:
    """Re-hash linked files (all, or the given project-relative ``paths``).

    A changed or deleted file records its new hash and marks its contexts ``stale``: the mark
    is what the snippet rule and query results read later. Returns the paths that changed.
    """
    ts = int(now if now is not None else time.time())
    sql = "SELECT id, path, hash FROM files"
    params: tuple[str, ...] = ()
    if paths is not None:
        sql += f" WHERE path IN ({','.join('?' * len(paths))})"
        params = tuple(paths)
    changed: list[tuple[int, str, str | None]] = []
    for file_id, path, old in store.conn.execute(sql, params):
        current = file_hash(absolute_path(store, path))
        if current != old:
            changed.append((int(file_id), str(path), current))
    if changed:
        with store.transaction() as conn:
            for file_id, _path, current in changed:
                conn.execute(
                    "UPDATE files SET hash = ?, last_indexed = ? WHERE id = ?",
                    (current, ts, file_id),
                )
                conn.execute(
                    "UPDATE contexts SET stale = 1 WHERE id IN "
                    "(SELECT context_id FROM context_file_map WHERE file_id = ?)",
                    (file_id,),
                )
    return [p for _, p, _ in changed]


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
    # Snippets whose files are gone or changed: already marked stale by a refresh, or (not
    # refreshed yet; a dry run must not write) a stored hash that differs from the disk.
    file_changed: set[int] = set()
    for file_id, path, old in conn.execute(
        "SELECT DISTINCT f.id, f.path, f.hash FROM files f JOIN context_file_map m "
        "ON m.file_id = f.id JOIN contexts c ON c.id = m.context_id WHERE c.type = 'snippet'"
    ):
        if file_hash(absolute_path(store, path)) != old:
            file_changed.add(int(file_id))
    marks = ",".join("?" * len(file_changed)) or "NULL"
    add(
        conn.execute(
            f"SELECT DISTINCT c.id, c.type FROM contexts c LEFT JOIN context_file_map m "
            f"ON m.context_id = c.id WHERE c.type = 'snippet' "
            f"AND (c.stale = 1 OR m.file_id IN ({marks})) AND {guard} ORDER BY c.id",
            tuple(file_changed),
        ).fetchall(),
        "delete",
        "linked file deleted or changed",
    )
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
