"""Session events in the store: recording, detectors, task mirroring, listing.

Invariants:
- ``record`` runs in one short write transaction; a retried hook (same idempotency key) adds
  nothing, and a record whose type and content hash match one of the session's recent events
  is skipped (tasks compare with the latest event of the same task instead, so a status that
  flips back is kept);
- each session keeps at most ``Settings.max_session_events`` events: beyond it the least
  important go first (P4 before P1), oldest first;
- detector state lives in ``hook_state`` (hooks are separate processes): error resolution
  (a failure, then a success on the same tool target), iteration loops (the same call three
  times in a row) and latency (more than 5 s between pre- and post-tool-use).
"""

from __future__ import annotations

import json
import sqlite3
import time

from ctxmode.core import config
from ctxmode.core._lean import sha256_hex
from ctxmode.core.redact import redact, redact_value
from ctxmode.sessions.events import (
    CATEGORIES,
    EventRecord,
    NormalizedHookEvent,
    call_fingerprint,
    call_target,
    error_summary,
    error_target,
)

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    from ctxmode.core.db import Database
    from ctxmode.core.models import Event, Session
else:
    from ctxmode.core._lean import NamedTuple

__all__ = [
    "CATEGORIES",
    "LATENCY_MS",
    "LOOP_REPEATS",
    "RECENT_WINDOW",
    "RecordResult",
    "content_hash",
    "list_events",
    "list_sessions",
    "record",
    "redact_record",
]

#: Tool time above which a latency event is recorded (milliseconds).
LATENCY_MS = 5000
#: The same call this many times in a row is an iteration loop.
LOOP_REPEATS = 3
#: Dedupe looks this many events back in the session.
RECENT_WINDOW = 100
#: Eviction frees this share of the cap at once so it runs rarely.
EVICT_SLACK = 0.05


class RecordResult(NamedTuple):
    """What one ``record`` call stored."""

    inserted: int
    skipped: int
    event_ids: tuple[int, ...]


def content_hash(rec: EventRecord) -> str:
    """``sha256:<hex>`` of the record's category, type and data."""
    body = json.dumps([rec.category, rec.type, rec.data], sort_keys=True, ensure_ascii=False)
    return "sha256:" + sha256_hex(body.encode("utf-8"))


# -- hook_state ------------------------------------------------------------------------------


def get_state(conn: sqlite3.Connection, session_id: str, key: str) -> Any:
    """The JSON value stored under ``key`` for a session, or ``None``."""
    row = conn.execute(
        "SELECT value FROM hook_state WHERE session_id = ? AND key = ?", (session_id, key)
    ).fetchone()
    return json.loads(row[0]) if row else None


def set_state(conn: sqlite3.Connection, session_id: str, key: str, value: Any, now: int) -> None:
    conn.execute(
        "INSERT INTO hook_state(session_id, key, value, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(session_id, key) DO UPDATE SET value = excluded.value, "
        "updated_at = excluded.updated_at",
        (session_id, key, json.dumps(value, ensure_ascii=False), now),
    )


def pop_state(conn: sqlite3.Connection, session_id: str, key: str) -> Any:
    """Read and delete a state value."""
    value = get_state(conn, session_id, key)
    if value is not None:
        conn.execute("DELETE FROM hook_state WHERE session_id = ? AND key = ?", (session_id, key))
    return value


# -- detectors -------------------------------------------------------------------------------


def _short_hash(text: str) -> str:
    return sha256_hex(text.encode("utf-8", "replace"))[:16]


def note_pre_tool_use(store: Database, ev: NormalizedHookEvent, now_ms: int | None = None) -> None:
    """Remember when a tool call started (for the latency detector)."""
    ts = int(now_ms if now_ms is not None else time.time() * 1000)
    key = "pre:" + (ev.tool_use_id or _short_hash(call_fingerprint(ev)))
    with store.transaction() as conn:
        set_state(conn, ev.session_id, key, ts, ts // 1000)


def _failure_text(ev: NormalizedHookEvent) -> str:
    """The text ``events.tool_records`` summarises for a failure (the same message)."""
    from ctxmode.sessions.events import _response_text

    return ev.error or _response_text(ev.tool_response) or "failed"


def _detect(conn: sqlite3.Connection, ev: NormalizedHookEvent, now_ms: int) -> list[EventRecord]:
    """Run the stateful detectors for a finished tool call; return their records."""
    out: list[EventRecord] = []
    sid, now = ev.session_id, now_ms // 1000
    tool = ev.tool_name or ""
    target = call_target(ev)
    fingerprint = _short_hash(call_fingerprint(ev))

    started = pop_state(conn, sid, "pre:" + (ev.tool_use_id or fingerprint))
    duration = ev.duration_ms
    if duration is None and isinstance(started, int):
        duration = now_ms - started
    if duration is not None and duration > LATENCY_MS:
        out.append(
            EventRecord(
                "latency", "slow_tool", {"tool": tool, "target": target[:200], "ms": int(duration)}
            )
        )

    err_key = f"err:{tool}:{_short_hash(target)}"
    if ev.failed:
        kind, message = error_summary(_failure_text(ev))
        state = {"kind": kind, "message": message, "target": error_target(ev)}
        set_state(conn, sid, err_key, state, now)
    else:
        previous = pop_state(conn, sid, err_key)
        if isinstance(previous, dict):
            out.append(
                EventRecord(
                    "error_resolution",
                    "resolved",
                    {
                        "tool": tool,
                        # What the error was shown against: the snapshot pairs them by it.
                        "target": str(previous.get("target") or target)[:200],
                        "error": previous.get("kind", ""),
                        "message": previous.get("message", ""),
                    },
                )
            )

    last = get_state(conn, sid, "last_call")
    if isinstance(last, dict) and ev.tool_use_id and last.get("id") == ev.tool_use_id:
        return out  # the same call delivered twice (a retried hook): not a repetition
    count = last.get("n", 0) + 1 if isinstance(last, dict) and last.get("fp") == fingerprint else 1
    set_state(conn, sid, "last_call", {"fp": fingerprint, "n": count, "id": ev.tool_use_id}, now)
    if count == LOOP_REPEATS:
        out.append(
            EventRecord(
                "iteration_loop",
                "repeated_call",
                {"tool": tool, "target": target[:200], "count": count},
            )
        )
    return out


# -- recording -------------------------------------------------------------------------------


def touch_session(
    conn: sqlite3.Connection, ev: NormalizedHookEvent, project_dir: str | None, now: int
) -> None:
    """Create or refresh the session row (ended sessions that get events again reopen)."""
    conn.execute(
        "INSERT INTO sessions(session_id, agent, project_dir, started_at, last_event_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET "
        "last_event_at = excluded.last_event_at, agent = excluded.agent, "
        "project_dir = coalesce(sessions.project_dir, excluded.project_dir), ended_at = NULL",
        (ev.session_id, ev.agent, project_dir, now, now),
    )
    if ev.kind == "pre_compact":
        conn.execute(
            "UPDATE sessions SET compact_count = compact_count + 1 WHERE session_id = ?",
            (ev.session_id,),
        )
    elif ev.kind == "session_end":
        conn.execute("UPDATE sessions SET ended_at = ? WHERE session_id = ?", (now, ev.session_id))


def _is_duplicate(
    conn: sqlite3.Connection,
    session_id: str,
    rec: EventRecord,
    digest: str,
    window: int | None = RECENT_WINDOW,
) -> bool:
    """Whether the session holds this content among its last ``window`` events (None: any);
    a task record only repeats the task's latest state."""
    if rec.category == "task":
        row = conn.execute(
            "SELECT content_hash FROM events WHERE session_id = ? AND category = 'task' "
            "AND json_extract(data, '$.key') = ? ORDER BY id DESC LIMIT 1",
            (session_id, rec.data.get("key")),
        ).fetchone()
        return row is not None and row[0] == digest
    if window is None:
        row = conn.execute(
            "SELECT 1 FROM events WHERE session_id = ? AND content_hash = ? LIMIT 1",
            (session_id, digest),
        ).fetchone()
        return row is not None
    row = conn.execute(
        "SELECT 1 FROM (SELECT content_hash FROM events WHERE session_id = ? "
        "ORDER BY id DESC LIMIT ?) WHERE content_hash = ? LIMIT 1",
        (session_id, RECENT_WINDOW, digest),
    ).fetchone()
    return row is not None


def _removed_todos(
    conn: sqlite3.Connection, ev: NormalizedHookEvent, records: list[EventRecord]
) -> list[EventRecord]:
    """TodoWrite sends the whole list: open todos missing from it were dropped."""
    current = {r.data.get("key") for r in records if r.category == "task"}
    prefix = f"{ev.agent}:{ev.session_id}:todo:"
    rows = conn.execute(
        "SELECT external_key, name FROM tasks WHERE external_key >= ? AND external_key < ? "
        "AND status NOT IN ('completed', 'cancelled')",
        (prefix, prefix + "\uffff"),
    ).fetchall()
    out = []
    for external_key, name in rows:
        key = external_key[len(f"{ev.agent}:{ev.session_id}:") :]
        if key not in current:
            out.append(
                EventRecord("task", "todo", {"key": key, "subject": name, "status": "cancelled"})
            )
    return out


def _mirror_task(
    conn: sqlite3.Connection, ev: NormalizedHookEvent, rec: EventRecord, now: int
) -> None:
    """Keep the ``tasks`` table in step with an agent's todo list (external_key = its key)."""
    key = f"{ev.agent}:{ev.session_id}:{rec.data.get('key')}"
    name = str(rec.data.get("subject") or rec.data.get("key"))[:500]
    status = rec.data.get("status")
    row = conn.execute("SELECT id FROM tasks WHERE external_key = ?", (key,)).fetchone()
    if row is None and not rec.data.get("subject"):
        return  # an update of a task created elsewhere: its agent id is no name for it
    if row is None:
        conn.execute(
            "INSERT INTO tasks(name, status, external_key, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (name, status or "pending", key, now, now),
        )
        return
    sets: list[str] = ["updated_at = ?"]
    params: list[Any] = [now]
    if status:
        sets.append("status = ?")
        params.append(status)
    if rec.data.get("subject"):
        sets.append("name = ?")
        params.append(name)
    conn.execute(f"UPDATE tasks SET {', '.join(sets)} WHERE id = ?", (*params, row[0]))


def _evict(conn: sqlite3.Connection, session_id: str, cap: int) -> None:
    count = conn.execute(
        "SELECT count(*) FROM events WHERE session_id = ?", (session_id,)
    ).fetchone()[0]
    if count <= cap:
        return
    excess = count - cap + int(cap * EVICT_SLACK)
    conn.execute(
        "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE session_id = ? "
        "ORDER BY priority DESC, id ASC LIMIT ?)",
        (session_id, excess),
    )
    conn.execute(
        "UPDATE sessions SET event_count = (SELECT count(*) FROM events WHERE session_id = ?) "
        "WHERE session_id = ?",
        (session_id, session_id),
    )


def _with_context_id(conn: sqlite3.Connection, rec: EventRecord) -> EventRecord:
    """A stored-context record with the id the store gave that content (its own
    ``contexts.content_hash``) in place of the hash: structured, whatever the reply said."""
    if rec.category != "knowledge" or "content_hash" not in rec.data:
        return rec
    data = dict(rec.data)
    digest = data.pop("content_hash")
    row = conn.execute(
        "SELECT id FROM contexts WHERE content_hash = ? ORDER BY id DESC LIMIT 1", (digest,)
    ).fetchone()
    data["id"] = int(row[0]) if row else None
    return rec._replace(data=data)


def redact_record(rec: EventRecord) -> EventRecord:
    """A record with every string of its type and data redacted."""
    return EventRecord(rec.category, redact(rec.type), redact_value(rec.data))


def record(
    store: Database,
    ev: NormalizedHookEvent,
    records: list[EventRecord],
    *,
    idempotency_key: str | None = None,
    project_dir: str | None = None,
    now_ms: int | None = None,
    detect: bool = True,
    dedupe_window: int | None = RECENT_WINDOW,
) -> RecordResult:
    """Store the records of one hook call (plus detector records) in one transaction.

    ``idempotency_key`` identifies the hook call (e.g. a hash of its payload): calling again
    with the same key stores nothing new. ``detect=False`` skips the detectors (a call
    replayed from the spool is not the newest one any more). A record whose content the
    session holds among its last ``dedupe_window`` events is dropped (None: among all of them,
    for calls rebuilt from a transcript).
    """
    ms = int(now_ms if now_ms is not None else time.time() * 1000)
    now = ms // 1000
    ids: list[int] = []
    skipped = 0
    with store.transaction() as conn:
        if idempotency_key is not None:
            seen = conn.execute(
                "SELECT 1 FROM events WHERE idempotency_key = ?",
                (f"{ev.session_id}:{idempotency_key}:0",),
            ).fetchone()
            if seen:
                return RecordResult(0, len(records), ())
        touch_session(conn, ev, project_dir, now)
        # Redacted here as well as at extraction: whatever a record holds (task ids, edit
        # modes, detector targets) is written only through this loop.
        todo = [redact_record(_with_context_id(conn, r)) for r in records]
        if ev.kind in ("post_tool_use", "post_tool_use_failure"):
            if detect:
                todo += [redact_record(r) for r in _detect(conn, ev, ms)]
            if ev.tool_name == "TodoWrite" and not ev.failed:
                todo += _removed_todos(conn, ev, todo)
        for index, rec in enumerate(todo):
            if rec.category not in CATEGORIES:
                skipped += 1
                continue
            digest = content_hash(rec)
            if _is_duplicate(conn, ev.session_id, rec, digest, dedupe_window):
                skipped += 1
                continue
            key = f"{ev.session_id}:{idempotency_key}:{index}" if idempotency_key else None
            cur = conn.execute(
                "INSERT OR IGNORE INTO events(session_id, agent, category, type, priority, data, "
                "content_hash, idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    ev.session_id,
                    ev.agent,
                    rec.category,
                    rec.type,
                    rec.priority,
                    json.dumps(rec.data, ensure_ascii=False, separators=(",", ":")),
                    digest,
                    key,
                    now,
                ),
            )
            if not cur.rowcount:
                skipped += 1
                continue
            ids.append(int(cur.lastrowid or 0))
            if rec.category == "task":
                _mirror_task(conn, ev, rec, now)
        if ids:
            row = conn.execute(
                "UPDATE sessions SET event_count = event_count + ? WHERE session_id = ? "
                "RETURNING event_count",
                (len(ids), ev.session_id),
            ).fetchone()
            if row and row[0] > store.settings.max_session_events:
                _evict(conn, ev.session_id, store.settings.max_session_events)
    return RecordResult(len(ids), skipped, tuple(ids))


# -- reading ---------------------------------------------------------------------------------

_EVENT_COLUMNS = "id, session_id, agent, category, type, priority, data, created_at"


def row_to_event(row: Any) -> Event:
    from ctxmode.core.models import Event  # read side only: keeps dataclasses off the hook path

    try:
        data = json.loads(row[6])
    except (TypeError, ValueError):
        data = {}
    return Event(
        id=int(row[0]),
        session_id=row[1],
        agent=row[2],
        category=row[3],
        type=row[4],
        priority=int(row[5]),
        data=data if isinstance(data, dict) else {"value": data},
        created_at=int(row[7]),
    )


def _row_limit(limit: int) -> int:
    """A row count for ``LIMIT``: negatives are 0, anything past SQLite's integers is all."""
    return max(0, min(int(limit), config.SQLITE_INT_MAX))


def list_events(
    store: Database,
    session_id: str | None = None,
    category: str | None = None,
    limit: int = 50,
) -> list[Event]:
    """Events newest first; ``session_id`` None = every session."""
    if category is not None and category not in CATEGORIES:
        from ctxmode.core.errors import InvalidInput

        raise InvalidInput(f"unknown category {category!r}; use one of: {', '.join(CATEGORIES)}")
    where, params = [], []
    if session_id is not None:
        where.append("session_id = ?")
        params.append(session_id)
    if category is not None:
        where.append("category = ?")
        params.append(category)
    sql = f"SELECT {_EVENT_COLUMNS} FROM events"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC LIMIT ?"
    rows = store.conn.execute(sql, (*params, _row_limit(limit))).fetchall()
    return [row_to_event(r) for r in rows]


def list_sessions(store: Database, limit: int = 50) -> list[Session]:
    """Sessions, most recently active first."""
    from ctxmode.core.models import Session

    rows = store.conn.execute(
        "SELECT session_id, agent, project_dir, started_at, last_event_at, event_count, "
        "compact_count, ended_at FROM sessions ORDER BY last_event_at DESC, rowid DESC LIMIT ?",
        (_row_limit(limit),),
    ).fetchall()
    return [Session(*r) for r in rows]


def latest_session_id(store: Database) -> str | None:
    """The most recently active session, if any."""
    row = store.conn.execute(
        "SELECT session_id FROM sessions ORDER BY last_event_at DESC, rowid DESC LIMIT 1"
    ).fetchone()
    return str(row[0]) if row else None
