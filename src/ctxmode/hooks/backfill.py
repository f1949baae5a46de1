"""The hooks' backstop for Claude Code: what its transcript shows that no hook recorded.

A hook call can be lost: an in-agent (``mcp_tool``) hook while the ``ctxmode serve`` it calls
is not connected (not approved yet, crashed, restarting), a command hook killed by its
timeout. Before a snapshot is built (PreCompact) and when the session ends, the calls and
prompts of the session's transcript (``sessions.transcript.claude_calls``) after the offset
read last time go through the hooks' own adapter and extraction. Nothing is stored twice: a
tool call's idempotency key is its ``tool_use_id`` (``adapters.call_key``, the same for every path),
and a rebuilt record whose content the session already holds is dropped. Detectors (repeats,
latency, error resolution) do not run on replayed calls. Standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from ctxmode.sessions.vocab import NormalizedHookEvent
    from ctxmode.store import Store

#: hook_state key: the transcript offset read up to, per session.
OFFSET = "transcript_offset"


def backfill(store: Store, ev: NormalizedHookEvent) -> int:
    """Record what ``ev``'s transcript holds after the last offset read; events stored.

    Never raises: a failure is logged and the hook goes on (the snapshot is built anyway).
    """
    if ev.agent != "claude-code" or not ev.transcript_path or not ev.session_id:
        return 0
    try:
        return _backfill(store, ev)
    except Exception as exc:  # noqa: BLE001 - the backstop must not cost the snapshot
        from ctxmode.hooks.hooklog import log

        log(store.root_dir, "WARN", f"transcript backfill skipped: {type(exc).__name__}: {exc}")
        return 0


def _backfill(store: Store, ev: NormalizedHookEvent) -> int:
    import time

    from ctxmode.sessions import adapters, events, records, transcript

    offset = records.get_state(store.conn, ev.session_id, OFFSET)
    offset = offset if isinstance(offset, int) and offset >= 0 else 0
    calls, resume = transcript.claude_calls(ev.transcript_path, offset)
    stored = 0
    for rebuilt in calls:
        payload = {**rebuilt, "session_id": ev.session_id, "cwd": ev.cwd or store.root_dir}
        call = adapters.normalize("claude-code", None, payload)
        if call is None:
            continue
        key = adapters.call_key(call.kind, payload)
        result = records.record(
            store, call, events.extract(call), idempotency_key=key,
            project_dir=store.root_dir, detect=False, dedupe_window=None,
        )  # fmt: skip
        stored += result.inserted
    if resume != offset:
        with store.transaction() as conn:
            records.set_state(conn, ev.session_id, OFFSET, resume, int(time.time()))
    return stored
