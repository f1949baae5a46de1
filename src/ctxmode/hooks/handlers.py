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
#: (Gemini, VS Code, Copilot CLI) or the next tool result (Cursor, whose prompt hook cannot
#: add context).
_INJECT_ON_PROMPT = frozenset({"gemini-cli", "vscode", "opencode", "copilot-cli", "kimi-code"})
#: Agents that read context from the prompt hook only (Kimi Code ignores SessionStart and
#: PostToolUse output): what another hook would inject waits for the next prompt.
_CONTEXT_ON_PROMPT_ONLY = frozenset({"kimi-code"})
_DEFERRED = "deferred_context"
_INJECT_ON_TOOL = frozenset({"cursor"})
_PENDING = "pending_resume"
_SUGGEST = "suggest_decision"
#: The session's compaction count when a snapshot last went into the agent's context: a
#: resume replays that copy, so a second one (Codex fires SessionStart resume *and* compact
#: after a compaction; Gemini SessionStart and BeforeAgent) is injected only after the next
#: compaction.
_IN_CONTEXT = "snapshot_in_context"
#: Gemini fires PreCompress before every model call, compressing or not: the transcript size
#: then, to look for a real compression (a ``$set`` of messages with ``<state_snapshot>``).
_PRECOMPRESS = "gemini_precompress"
#: Agents that escape ``<``/``>`` in injected context: they get the snapshot as plain text.
_PLAIN_TEXT = frozenset({"gemini-cli", "qwen-code"})
#: Agents that keep SessionStart context in the running process only (Qwen Code in its system
#: prompt, each SessionStart replacing the last one's; Copilot CLI does not keep it in the
#: session either): a resumed session starts without it, so every resume gets the snapshot.
_CONTEXT_PER_PROCESS = frozenset({"qwen-code", "copilot-cli"})
#: Most of a Gemini transcript read when looking for a compression (bytes).
_TRANSCRIPT_READ_CAP = 4 * 1024 * 1024

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
    if ev.agent == "copilot-cli" and ev.kind in ("session_start", "user_prompt"):
        # Copilot CLI reads only the top-level field on these two events.
        return {"additionalContext": text}
    if ev.agent == "kimi-code":  # appended to the prompt inside <hook_result>
        return {"message": text}
    name = _NATIVE.get(ev.agent, _DEFAULT_NATIVE).get(ev.kind) or _DEFAULT_NATIVE.get(ev.kind)
    return {"hookSpecificOutput": {"hookEventName": name or ev.kind, "additionalContext": text}}


def handle(
    store: Store, ev: NormalizedHookEvent, idempotency_key: str | None
) -> dict[str, Any] | None:
    """Dispatch one hook call; return the JSON object to print, if any."""
    out = _dispatch(store, ev, idempotency_key)
    if out is None or ev.agent not in _CONTEXT_ON_PROMPT_ONLY or ev.kind == "user_prompt":
        return out
    text = out.get("message")
    if isinstance(text, str) and text:
        with store.transaction() as conn:
            held = sessions.get_state(conn, ev.session_id, _DEFERRED)
            joined = f"{held}\n{text}" if isinstance(held, str) and held else text
            if len(joined) <= OUTPUT_CAP_CHARS:  # else what is held goes first, alone
                sessions.set_state(conn, ev.session_id, _DEFERRED, joined, int(time.time()))
    return None


def _dispatch(
    store: Store, ev: NormalizedHookEvent, idempotency_key: str | None
) -> dict[str, Any] | None:
    kind = ev.kind
    if ev.agent == "gemini-cli":
        if kind == "pre_compact":
            _gemini_precompress(store, ev)
            return None
        _gemini_compressed(store, ev)
    if kind == "pre_tool_use":
        if ev.tool_name:
            sessions.note_pre_tool_use(store, ev)
        return _file_knowledge(store, ev)
    project = store.root_dir
    if kind in ("post_tool_use", "post_tool_use_failure"):
        _record(store, ev, events.extract(ev), idempotency_key)
        if ev.agent in _INJECT_ON_TOOL:
            return _pending_resume(store, ev)
        return _file_knowledge_after(store, ev)
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
        if ev.agent == "kimi-code":
            from ctxmode.hooks.backfill import backfill

            backfill(store, ev)  # the calls whose PostToolUse hooks Kimi killed
        if ev.stop_hook_active:
            return None
        result = _record(store, ev, records_of(ev), idempotency_key)
        if result.event_ids:
            with store.transaction() as conn:
                sessions.set_state(
                    conn, ev.session_id, _SUGGEST, result.event_ids[0], int(time.time())
                )
        return None
    if kind == "session_end":
        from ctxmode.hooks.backfill import OFFSET, backfill

        sessions.record(store, ev, [], idempotency_key=None, project_dir=project)
        backfill(store, ev)  # the session's last calls, if no hook recorded them
        with store.transaction() as conn:
            # Detector state of a finished session is dead weight.
            conn.execute(
                "DELETE FROM hook_state WHERE session_id = ? AND key NOT IN (?, ?, ?, ?)",
                (ev.session_id, _PENDING, _SUGGEST, _IN_CONTEXT, OFFSET),
            )
        return None
    if kind in ("subagent_start", "subagent_stop"):
        sessions.record(
            store, ev, events.extract(ev), idempotency_key=idempotency_key, project_dir=project
        )
    return None


def records_of(ev: NormalizedHookEvent) -> list[events.EventRecord]:
    """What a call of a recording kind (``sessions.spool.KINDS``) writes, from the call
    alone: a Stop without the last answer reads it from the transcript."""
    if ev.kind == "stop":
        if ev.stop_hook_active:
            return []
        if not ev.last_assistant_message and ev.transcript_path:
            from ctxmode.sessions.transcript import last_assistant_text

            ev = ev._replace(last_assistant_message=last_assistant_text(ev.transcript_path))
    return events.extract(ev)


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
        if not spool.keep(store.db_file, ev, records, idempotency_key, store.root_dir, ms):
            raise
        raise spool.Spooled(spool.folder(store)) from None


def _pre_compact(
    store: Store, ev: NormalizedHookEvent, idempotency_key: str | None
) -> dict[str, Any] | None:
    from ctxmode.hooks.backfill import backfill
    from ctxmode.sessions import snapshot

    # One transaction (the inner ones become savepoints): one commit instead of three.
    with store.transaction() as conn:
        sessions.record(store, ev, [], idempotency_key=None, project_dir=store.root_dir)
        backfill(store, ev)  # calls no hook recorded (a server not connected ...)
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


def _compactions(store: Store, session_id: str) -> int:
    row = store.conn.execute(
        "SELECT compact_count FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def _in_context(store: Store, ev: NormalizedHookEvent) -> bool:
    """True when a snapshot went into this session's context since its last compaction.

    A SessionStart ``compact`` is itself a compaction (its pre-compact hook may not have run):
    only a copy injected on resume just before it, in the same compaction, is the same one
    (Codex fires resume, then compact)."""
    value = sessions.get_state(store.conn, ev.session_id, _IN_CONTEXT)
    if not isinstance(value, dict) or value.get("n") != _compactions(store, ev.session_id):
        return False
    return not (
        ev.kind == "session_start" and ev.source == "compact" and value.get("by") != "resume"
    )


def _inject(
    store: Store, ev: NormalizedHookEvent, stored: snapshot.StoredSnapshot, writable: bool = True
) -> str:
    from ctxmode.sessions import snapshot

    if writable:
        count = _compactions(store, ev.session_id)

        def mark() -> None:
            if stored.id:
                snapshot.consume(store, stored.id)
            with store.transaction() as conn:
                by = ev.source if ev.kind == "session_start" else ev.kind
                value = {"n": count, "by": by}
                sessions.set_state(conn, ev.session_id, _IN_CONTEXT, value, int(time.time()))

        _written(mark)
    return render(ev, stored.snapshot, "session_knowledge", stored.session_id)


def render(ev: NormalizedHookEvent, xml: str, kind: str, session_id: str | None = None) -> str:
    """The injected text: fenced XML, or plain text sections for agents that escape XML."""
    from ctxmode.sessions import snapshot

    text = snapshot.injection_text(xml, kind, session_id)
    if ev.agent not in _PLAIN_TEXT:
        return text
    from ctxmode.hooks.plain import plain_text

    return plain_text(text)


def _session_start(
    store: Store, ev: NormalizedHookEvent, writable: bool = True
) -> dict[str, Any] | None:
    from ctxmode.sessions import snapshot

    source = ev.source or "startup"
    if source == "clear":
        return None
    per_process = source == "resume" and ev.agent in _CONTEXT_PER_PROCESS
    if source in ("compact", "resume") and not per_process and _in_context(store, ev):
        return None  # the copy injected since the last compaction is still in the context
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
        # Built for this injection only (not stored): the store keeps one snapshot per
        # compaction.
        stored = (
            snapshot.latest_stored(store, ev.session_id, unconsumed=True)
            or _rebuild(store, ev.session_id, False)
            or snapshot.latest_stored(store, unconsumed=True)
            or _rebuild(store, None, False)
        )
        return context_output(ev, _inject(store, ev, stored, writable)) if stored else None
    if not store.settings.startup_brief:
        return None
    brief = snapshot.startup_brief(store)
    if brief is None:
        return None
    text = render(ev, brief, "project_brief")
    if writable:
        _note_brief(store, ev, brief, text)
    return context_output(ev, text)


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
    if not isinstance(pending, int) or _in_context(store, ev):
        return ""
    stored = snapshot.latest_stored(store, ev.session_id, unconsumed=True)
    return _inject(store, ev, stored) if stored else ""


def _prompt_output(store: Store, ev: NormalizedHookEvent) -> dict[str, Any] | None:
    if ev.agent == "cursor":
        return None  # beforeSubmitPrompt cannot add context
    parts = []
    if ev.agent in _CONTEXT_ON_PROMPT_ONLY:
        with store.transaction() as conn:
            held = sessions.pop_state(conn, ev.session_id, _DEFERRED)
        if isinstance(held, str) and held:
            parts.append(held)
    if ev.agent in _INJECT_ON_PROMPT:
        text = _pending_text(store, ev)
        if text:
            parts.append(text)
    with store.transaction() as conn:
        event_id = sessions.pop_state(conn, ev.session_id, _SUGGEST)
    if isinstance(event_id, int):
        row = store.conn.execute("SELECT data FROM events WHERE id = ?", (event_id,)).fetchone()
        if row:
            parts.append(_suggestion(row[0], ev.agent in _PLAIN_TEXT))
    kept: list[str] = []
    for part in parts:  # what fits under the cap, in order, rather than nothing at all
        if len("\n".join([*kept, part])) <= OUTPUT_CAP_CHARS:
            kept.append(part)
    return context_output(ev, "\n".join(kept)) if kept else None


def _suggestion(data_json: str, plain: bool = False) -> str:
    import json

    from ctxmode.sessions import snapshot

    try:
        text = str(json.loads(data_json).get("text", ""))
    except (ValueError, AttributeError):
        text = ""
    clipped = events.clip(text, 200)
    if plain:  # see ``render``
        from ctxmode.hooks.plain import neutral

        fence = (
            '[ctxmode_data kind="decision_suggestion"] The previous reply looked like a decision: '
            f'"{neutral(clipped)}" [/ctxmode_data]\n'
        )
    else:
        fence = (
            f'<ctxmode_data kind="decision_suggestion">The previous reply looked like a '
            f'decision: "{snapshot.xml_text(clipped)}"</ctxmode_data>\n'
        )
    return fence + (
        "If it should outlive this session, it can be recorded with the decision template: "
        '`ctxmode decision add "DECISION" --background ... --options ... --choice ... '
        "--rationale ... --impact ...`."
    )


def _gemini_precompress(store: Store, ev: NormalizedHookEvent) -> None:
    """Remember the transcript's size: whether Gemini compresses shows only there, later."""
    import os

    try:
        size = os.path.getsize(ev.transcript_path) if ev.transcript_path else None
    except OSError:
        size = None
    if size is None:
        return  # nothing to tell a compression by: counted nowhere rather than each call
    with store.transaction() as conn:
        sessions.set_state(conn, ev.session_id, _PRECOMPRESS, size, int(time.time()))
    return None


def _gemini_compressed(store: Store, ev: NormalizedHookEvent) -> None:
    """After a PreCompress: when the transcript shows a compression since, count it and keep
    the snapshot for the next prompt (``_pre_compact``)."""
    offset = sessions.get_state(store.conn, ev.session_id, _PRECOMPRESS)
    if not isinstance(offset, int):
        return
    with store.transaction() as conn:
        sessions.pop_state(conn, ev.session_id, _PRECOMPRESS)
    if ev.kind == "session_start" or not ev.transcript_path:
        return  # a resume rewrites the (already compressed) history: not a compression
    try:
        with open(ev.transcript_path, "rb") as fh:
            fh.seek(offset)
            tail = fh.read(_TRANSCRIPT_READ_CAP)
    except OSError:
        return
    for line in tail.splitlines():
        if line.startswith(b'{"$set":{"messages":') and b"<state_snapshot>" in line:
            _pre_compact(store, ev._replace(kind="pre_compact"), None)
            return


# -- knowledge that follows the file ---------------------------------------------------------

#: Canonical edit tools (``sessions.adapters.canonical_tool``): their target files'
#: knowledge is shown before they run.
_EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
#: File lines of a Codex ``apply_patch`` envelope.
_PATCH_HEADERS = ("*** Update File:", "*** Add File:", "*** Delete File:", "*** Move to:")


def edited_paths(ev: NormalizedHookEvent) -> list[str]:
    """The files an edit tool call is about to change, as the agent named them."""
    data = ev.tool_input
    if ev.tool_name == "apply_patch":
        patch = data.get("command", data.get("patch", data.get("input")))
        if isinstance(patch, list):  # ["apply_patch", "<envelope>"]
            patch = "\n".join(p for p in patch if isinstance(p, str))
        if not isinstance(patch, str):
            return []
        return [
            line.split(":", 1)[1].strip()
            for line in patch.splitlines()
            if line.startswith(_PATCH_HEADERS)
        ]
    for key in ("file_path", "notebook_path", "path"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return [value]
    files = data.get("files")
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else []


#: Agents whose pre-tool hook cannot add context (Gemini CLI reads ``additionalContext`` from
#: AfterTool only, ``coreToolHookTriggers.js``; Qwen Code 0.24 reads PreToolUse's only for a
#: tracing flag; OpenCode's ``tool.execute.before`` can change only the arguments, its
#: ``tool.execute.after`` the output, to which ctxmode's plugin appends it): the knowledge
#: follows the first read or edit.
_KNOWLEDGE_AFTER_TOOL = frozenset({"gemini-cli", "opencode", "qwen-code", "kimi-code"})


def _knowledge_text(store: Store, ev: NormalizedHookEvent) -> str | None:
    """The tier-1 knowledge linked to the call's files that this session has not been shown,
    fenced like the snapshot and recorded (``knowledge.follow``); None when there is none."""
    settings = store.settings
    if not settings.file_knowledge or settings.file_knowledge_bytes <= 0:
        return None
    paths = edited_paths(ev)
    if not paths:
        return None

    def fence(xml: str) -> str:
        return render(ev, xml, "file_knowledge")

    cap = min(settings.file_knowledge_bytes, OUTPUT_CAP_CHARS)
    return store.file_knowledge(paths, ev.session_id, cwd=ev.cwd, cap_bytes=cap, wrap=fence)


def _file_knowledge(store: Store, ev: NormalizedHookEvent) -> dict[str, Any] | None:
    """Before an edit: the knowledge linked to the files it changes, as context only (never
    ``permissionDecision`` or ``updatedInput``: the call runs as the agent asked)."""
    if ev.tool_name not in _EDIT_TOOLS or ev.agent in _KNOWLEDGE_AFTER_TOOL:
        return None
    text = _knowledge_text(store, ev)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": text}}


def _file_knowledge_after(store: Store, ev: NormalizedHookEvent) -> dict[str, Any] | None:
    """After the first read or edit of a file, for agents whose pre-tool hook cannot inject."""
    if ev.agent not in _KNOWLEDGE_AFTER_TOOL or ev.kind != "post_tool_use":
        return None
    if ev.tool_name not in _EDIT_TOOLS and ev.tool_name != "Read":
        return None
    text = _knowledge_text(store, ev)
    return context_output(ev, text) if text else None


def _note_brief(store: Store, ev: NormalizedHookEvent, brief: str, text: str) -> None:
    """Record the brief's contexts as shown, so an edit hook does not repeat them."""
    import re

    ids = [int(i) for i in re.findall(r'<knowledge id="(\d+)"', brief)]
    if ids:
        nbytes = len(text.encode("utf-8"))
        _written(lambda: store.note_injection(ev.session_id, "brief", ids, nbytes))
