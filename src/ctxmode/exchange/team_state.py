"""The cheap reads of team sharing that run on every command, MCP call and session start: has
anything moved since the last sync (one ``stat`` of ``.context/shared`` and one row), and the
file a shared context lives in. Standard library and ``core`` only: the hook path imports it.
"""

from __future__ import annotations

from ctxmode.core import config
from ctxmode.core.db import Database


def unchanged(store: Database) -> bool:
    """True when neither the shared folder nor a shared item changed since the last sync."""
    row = store.conn.execute(
        "SELECT fingerprint, edits, synced_edits FROM team_state WHERE id = 1"
    ).fetchone()
    if row is None or row[1] != row[2]:
        return False
    fresh = config.folder_fingerprint(config.shared_dir_for(store.root_dir))
    if row[0] == fresh and not fresh.startswith("racy:"):
        return True
    if (
        fresh == "absent"
        and not store.conn.execute("SELECT 1 FROM shared_items LIMIT 1").fetchone()
    ):
        with store.transaction() as conn:
            conn.execute("UPDATE team_state SET fingerprint = 'absent' WHERE id = 1")
        return True
    return False


def shared_file(store: Database, context_id: int) -> str | None:
    """The project-relative path of a context's shared file, or None when not shared."""
    row = store.conn.execute(
        "SELECT file_name FROM shared_items WHERE context_id = ? AND removed_at IS NULL",
        (context_id,),
    ).fetchone()
    return None if row is None else f"{config.CONTEXT_DIR}/{config.SHARED_DIR}/{row[0]}"
