"""Retention of hook events: events of sessions over for ``days`` days are dropped.

Events are the raw capture of tool calls; what a session leaves for later is its resume
snapshot (``session_resume``) and the knowledge written from it, both kept. A session is over
when it ended (``ended_at``) or, for an agent that never sent its end, when its last event is
as old: ``coalesce(ended_at, last_event_at)`` older than ``days`` days. Deletion runs in short
transactions (``BATCH`` events, each also dropping its search row), so hooks keep recording
while a large store is pruned; the session row stays, with its counters.
"""

from __future__ import annotations

import time

from ctxmode.core import config
from ctxmode.core.db import Database

#: Default age, in days, past which the events of a finished session are dropped.
EVENT_DAYS = config.EVENT_RETENTION_DAYS
#: Events deleted per transaction.
BATCH = 500
_DAY = 86_400


def prune_events(
    store: Database, *, days: int = EVENT_DAYS, now: int | None = None, dry_run: bool = False
) -> tuple[int, int]:
    """Drop the events of sessions over for ``days`` days; return (sessions, events) affected
    (what would be, with ``dry_run``)."""
    cutoff = int(now if now is not None else time.time()) - days * _DAY
    sessions = [
        str(r[0])
        for r in store.conn.execute(
            "SELECT session_id FROM sessions WHERE coalesce(ended_at, last_event_at) < ?",
            (cutoff,),
        )
    ]
    total = 0
    touched = 0
    for sid in sessions:
        (count,) = store.conn.execute(
            "SELECT count(*) FROM events WHERE session_id = ?", (sid,)
        ).fetchone()
        if not count:
            continue
        touched += 1
        total += int(count)
        if dry_run:
            continue
        while True:
            with store.transaction() as conn:
                cur = conn.execute(
                    "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE session_id = ? "
                    f"LIMIT {BATCH})",
                    (sid,),
                )
            if cur.rowcount < BATCH:
                break
    return touched, total
