"""Bodies of the session tools and the ``ctxmode://snapshot`` resource.

The contract of a body is the one of ``mcp.tools.knowledge``.
"""

from __future__ import annotations

import time
from typing import Any

from ctxmode.mcp.tools.common import StoreRunner, ToolOutput, fence
from ctxmode.store import Store

#: Longest rendering of one event's data in ``session_events`` text, in characters.
EVENT_LINE_CHARS = 300


def _snapshot(store: Store, session_id: str | None) -> Any:
    """The current snapshot, built from the events; the last stored one if they are gone."""
    return store.session_snapshot(session_id, prefer="built")


def _events(store: Store, category: str | None, limit: int) -> tuple[str | None, list[Any]]:
    latest = store.latest_session_id()
    # Listing with session "" when there is none still validates the category.
    return latest, store.events(latest or "", category, limit)


def _event_line(event: Any) -> str:
    """One readable line per event: id, UTC time, category/type and its data."""
    stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(event.created_at))
    data = event.data
    if isinstance(data, dict):
        body = "; ".join(f"{k}: {v}" for k, v in data.items() if v not in (None, "", [], {}))
    else:
        body = str(data)
    if len(body) > EVENT_LINE_CHARS:
        body = body[: EVENT_LINE_CHARS - 1] + "…"
    return f"#{event.id} {stamp} {event.category}/{event.type} {body}".rstrip()


def _snapshot_text(call: StoreRunner, session_id: str | None) -> tuple[Any, str]:
    snap = call(_snapshot, session_id)
    text = fence(snap.xml, "session_snapshot") if snap.session_id else "No session recorded yet."
    return snap, text


def session_snapshot(call: StoreRunner, *, session_id: str | None) -> ToolOutput:
    snap, text = _snapshot_text(call, session_id)
    data = {
        "session_id": snap.session_id,
        "bytes": snap.bytes,
        "event_count": snap.event_count,
        "text": text,
    }
    return ToolOutput(text, data)


def session_events(call: StoreRunner, *, category: str | None, limit: int) -> ToolOutput:
    session_id, events = call(_events, category, limit)
    lines = [_event_line(e) for e in events]
    text = fence("\n".join(lines), "session_events") if events else "No events recorded."
    data = {
        "session_id": session_id,
        "count": len(events),
        "ids": [e.id for e in events],
        "categories": [e.category for e in events],
        "types": [e.type for e in events],
        "text": text,
    }
    return ToolOutput(text, data)


def snapshot_resource(call: StoreRunner) -> str:
    """The text of ``ctxmode://snapshot``: the latest session's snapshot."""
    return _snapshot_text(call, None)[1]
