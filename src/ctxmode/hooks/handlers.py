"""One handler per hook kind: record what happened, and return the JSON to print (or None).

Handlers get an open store and a normalized event; they never print. Output is limited to
context injection (``additionalContext`` or the agent's equivalent): the resume snapshot after a
compaction, the startup brief, and a one-time suggestion to record a decision. Stop hooks never
block (no ``decision: block``), so they cannot loop.
"""

from __future__ import annotations

import time

from ctxmode.sessions import events
from ctxmode.sessions import records as sessions

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ctxmode.sessions import snapshot
    from ctxmode.sessions.events import NormalizedHookEvent
    from ctxmode.store import Store

#: Largest context text any agent accepts inline (Claude Code caps hook strings at 10 000).
OUTPUT_CAP_CHARS = 10_000
#: Agents whose SessionStart has no ``compact`` source: the snapshot rides on the next prompt
#: (Gemini, VS Code) or the next tool result (Cursor, whose prompt hook cannot add context).
_INJECT_ON_PROMPT = frozenset({"gemini-cli", "vscode", "opencode"})
_INJECT_ON_TOOL = frozenset({"cursor"})
_PENDING = "pending_resume"
_SUGGEST = "suggest_decision"

#: Native event names used in ``hookSpecificOutput.hookEventName``.
_NATIVE = {
    "gemini-cli": {
        "session_start": "SessionStart",
        "user_prompt": "BeforeAgent",
        "post_tool_use": "AfterTool",
    },
}
_DEFAULT_NATIVE = {
    "session_start": "SessionStart",
    "user_prompt": "UserPromptSubmit",
    "post_tool_use": "PostToolUse",
    "post_tool_use_failure": "PostToolUseFailure",
}


def context_output(ev: NormalizedHookEvent, text: str) -> dict[str, Any] | None:
    """The agent's JSON shape for adding ``text`` to the model's context."""
    if not text or len(text) > OUTPUT_CAP_CHARS:
        return None
    if ev.agent == "cursor":
        return {"additional_context": text}
    name = _NATIVE.get(ev.agent, _DEFAULT_NATIVE).get(ev.kind) or _DEFAULT_NATIVE.get(ev.kind)
    return {"hookSpecificOutput": {"hookEventName": name or ev.kind, "additionalContext": text}}


def handle(
    store: Store, ev: NormalizedHookEvent, idempotency_key: str | None
) -> dict[str, Any] | None:
    """Dispatch one hook call; return the JSON object to print, if any."""
    kind = ev.kind
    if kind == "pre_tool_use":
        if ev.tool_name:
            sessions.note_pre_tool_use(store, ev)
        return None
    project = store.root_dir
    if kind in ("post_tool_use", "post_tool_use_failure"):
        _record(store, ev, events.extract(ev), idempotency_key)
        if ev.agent in _INJECT_ON_TOOL:
            return _pending_resume(store, ev)
        return None
    if kind == "user_prompt":
        _record(store, ev, events.extract(ev), idempotency_key)
        return _prompt_output(store, ev)
    if kind == "pre_compact":
        return _pre_compact(store, ev, idempotency_key)
    if kind == "session_start":
        # The resume snapshot matters more than the session row: a locked store (a long
        # index run elsewhere) still gets it injected, read-only (WAL readers never wait).
        writable = _written(
            lambda: sessions.record(store, ev, [], idempotency_key=None, project_dir=project)
        )
        if writable:
            store.refresh_shared()  # teammates' shared files into the brief (exchange.team)
        return _session_start(store, ev, writable)
    if kind == "stop":
        if ev.stop_hook_active:
            return None
        if not ev.last_assistant_message and ev.transcript_path:
            from ctxmode.sessions.transcript import last_assistant_text

            ev = ev._replace(last_assistant_message=last_assistant_text(ev.transcript_path))
        result = _record(store, ev, events.extract(ev), idempotency_key)
        if result.event_ids:
            with store.transaction() as conn:
                sessions.set_state(
                    conn, ev.session_id, _SUGGEST, result.event_ids[0], int(time.time())
                )
        return None
    if kind == "session_end":
        sessions.record(store, ev, [], idempotency_key=None, project_dir=project)
        with store.transaction() as conn:
            # Detector state of a finished session is dead weight.
            conn.execute(
                "DELETE FROM hook_state WHERE session_id = ? AND key NOT IN (?, ?)",
                (ev.session_id, _PENDING, _SUGGEST),
            )
        return None
    if kind in ("subagent_start", "subagent_stop"):
        sessions.record(
            store, ev, events.extract(ev), idempotency_key=idempotency_key, project_dir=project
        )
    return None


def _record(
    store: Store,
    ev: NormalizedHookEvent,
    records: list[events.EventRecord],
    idempotency_key: str | None,
) -> sessions.RecordResult:
    """``sessions.record``; when the store stays locked by another process, the records go
    to the spool (``sessions.spool``) and ``Spooled`` is raised instead of ``StoreUnavailable``."""
    from ctxmode.core.errors import StoreUnavailable

    ms = int(time.time() * 1000)
    try:
        return sessions.record(
            store, ev, records, idempotency_key=idempotency_key, project_dir=store.root_dir,
            now_ms=ms,
        )  # fmt: skip
    except StoreUnavailable as exc:
        from ctxmode.core.db import lock_held
        from ctxmode.sessions import spool

        if idempotency_key is None or ev.kind not in spool.KINDS or not lock_held(exc):
            raise  # read-only, disk full ...: waiting would not help
        if not spool.keep(store, ev, records, idempotency_key, store.root_dir, ms):
            raise
        raise spool.Spooled(spool.folder(store)) from None


def _pre_compact(
    store: Store, ev: NormalizedHookEvent, idempotency_key: str | None
) -> dict[str, Any] | None:
    from ctxmode.sessions import snapshot

    # One transaction (the inner ones become savepoints): one commit instead of three.
    with store.transaction() as conn:
        sessions.record(store, ev, [], idempotency_key=None, project_dir=store.root_dir)
        snap = snapshot.build_snapshot(store, ev.session_id)
        snapshot_id = snapshot.save(store, snap)
        if ev.agent in _INJECT_ON_PROMPT | _INJECT_ON_TOOL:
            sessions.set_state(conn, ev.session_id, _PENDING, snapshot_id, int(time.time()))
    return None


def _written(write: Callable[[], object]) -> bool:
    """Run a write; False, instead of ``StoreUnavailable``, when another process holds the
    lock (the caller goes on read-only)."""
    from ctxmode.core.db import lock_held
    from ctxmode.core.errors import StoreUnavailable

    try:
        write()
    except StoreUnavailable as exc:
        if not lock_held(exc):
            raise
        return False
    return True


def _inject(
    store: Store, ev: NormalizedHookEvent, stored: snapshot.StoredSnapshot, writable: bool = True
) -> str:
    from ctxmode.sessions import snapshot

    if writable and stored.id:
        snapshot.consume(store, stored.id)
    return snapshot.injection_text(stored.snapshot, "session_knowledge", stored.session_id)


def _session_start(
    store: Store, ev: NormalizedHookEvent, writable: bool = True
) -> dict[str, Any] | None:
    from ctxmode.sessions import snapshot

    source = ev.source or "startup"
    if source == "clear":
        return None
    if source == "compact":
        # No unconsumed one: the pre-compact hook did not run (or the store was locked then).
        # Built afresh from the events, not the last compaction's, which misses all since.
        stored = (
            snapshot.latest_stored(store, ev.session_id, unconsumed=True)
            or _rebuild(store, ev.session_id, writable)
            or snapshot.latest_stored(store, ev.session_id)
        )
        return context_output(ev, _inject(store, ev, stored, writable)) if stored else None
    if source == "resume":
        stored = snapshot.latest_stored(store, unconsumed=True)
        if stored is None:
            stored = _rebuild(store, ev.session_id, writable) or _rebuild(store, None, writable)
        return context_output(ev, _inject(store, ev, stored, writable)) if stored else None
    if not store.settings.startup_brief:
        return None
    brief = snapshot.startup_brief(store)
    if brief is None:
        return None
    return context_output(ev, snapshot.injection_text(brief, "project_brief"))


def _rebuild(
    store: Store, session_id: str | None, writable: bool = True
) -> snapshot.StoredSnapshot | None:
    """Build and store a snapshot from events when none was stored (e.g. no pre-compact hook);
    not ``writable``: built only (id 0), for injection."""
    from ctxmode.sessions import snapshot

    if session_id is not None:
        has_events = store.conn.execute(
            "SELECT 1 FROM events WHERE session_id = ? LIMIT 1", (session_id,)
        ).fetchone()
        if not has_events:
            return None
    snap = snapshot.build_snapshot(store, session_id)
    if snap.session_id is None or snap.event_count == 0:
        return None
    if not writable:
        return snapshot.StoredSnapshot(0, snap.session_id, snap.xml, snap.bytes, 0, False)
    snapshot.save(store, snap)
    return snapshot.latest_stored(store, snap.session_id)


def _pending_resume(store: Store, ev: NormalizedHookEvent) -> dict[str, Any] | None:
    text = _pending_text(store, ev)
    return context_output(ev, text) if text else None


def _pending_text(store: Store, ev: NormalizedHookEvent) -> str:
    from ctxmode.sessions import snapshot

    with store.transaction() as conn:
        pending = sessions.pop_state(conn, ev.session_id, _PENDING)
    if not isinstance(pending, int):
        return ""
    stored = snapshot.latest_stored(store, ev.session_id, unconsumed=True)
    return _inject(store, ev, stored) if stored else ""


def _prompt_output(store: Store, ev: NormalizedHookEvent) -> dict[str, Any] | None:
    if ev.agent == "cursor":
        return None  # beforeSubmitPrompt cannot add context
    parts = []
    if ev.agent in _INJECT_ON_PROMPT:
        text = _pending_text(store, ev)
        if text:
            parts.append(text)
    with store.transaction() as conn:
        event_id = sessions.pop_state(conn, ev.session_id, _SUGGEST)
    if isinstance(event_id, int):
        row = store.conn.execute("SELECT data FROM events WHERE id = ?", (event_id,)).fetchone()
        if row:
            parts.append(_suggestion(row[0]))
    return context_output(ev, "\n".join(parts)) if parts else None


def _suggestion(data_json: str) -> str:
    import json

    from ctxmode.sessions import snapshot

    try:
        text = str(json.loads(data_json).get("text", ""))
    except (ValueError, AttributeError):
        text = ""
    quoted = snapshot.xml_text(events.clip(text, 200))
    return (
        f'<ctxmode_data kind="decision_suggestion">The previous reply looked like a decision: '
        f'"{quoted}"</ctxmode_data>\n'
        "If it should outlive this session, it can be recorded with the decision template: "
        '`ctxmode decision add "<decision>" --background ... --options ... --choice ... '
        "--rationale ... --impact ...`."
    )
