"""Read-only lookups for people browsing a store (the web viewer, through ``Store``).

Nothing here writes. Each function answers one question a page asks (which owners exist,
which files a task touches, how many contexts each task has), so interfaces never hold SQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxmode.core.db import Database


def owners(store: Database) -> list[str]:
    """Every owner that wrote a context, alphabetically."""
    rows = store.conn.execute("SELECT DISTINCT owner FROM contexts ORDER BY owner").fetchall()
    return [str(r[0]) for r in rows]


def task_files(store: Database, task_id: int) -> list[tuple[str, int]]:
    """Files linked to the task's contexts, with how many of its contexts link each one."""
    rows = store.conn.execute(
        "SELECT f.path, COUNT(DISTINCT m.context_id) FROM context_task_map t "
        "JOIN context_file_map m ON m.context_id = t.context_id JOIN files f ON f.id = m.file_id "
        "WHERE t.task_id = ? GROUP BY f.path ORDER BY f.path",
        (task_id,),
    ).fetchall()
    return [(str(r[0]), int(r[1])) for r in rows]


def task_context_counts(store: Database) -> dict[int, int]:
    """Number of live (not superseded) contexts linked to each task that has any."""
    rows = store.conn.execute(
        "SELECT m.task_id, COUNT(*) FROM context_task_map m JOIN contexts c "
        "ON c.id = m.context_id WHERE c.superseded_by IS NULL GROUP BY m.task_id"
    ).fetchall()
    return {int(r[0]): int(r[1]) for r in rows}
