"""The hooks' backstop for Claude Code and Kimi Code: what the agent's own log shows that no
hook recorded.

A hook call can be lost: an in-agent (``mcp_tool``) hook while the ``ctxmode serve`` it calls
is not connected (not approved yet, crashed, restarting), a command hook killed by its
timeout. Before a snapshot is built (PreCompact) and when the session ends, the calls and
prompts of the session's transcript (``sessions.transcript.claude_calls_at``) after the offset
read last time go through the hooks' own adapter and extraction, for at most ``BUDGET_S``
seconds and ``sessions.transcript.BACKFILL_BYTES`` of the file per call (the rest the next time).
Nothing is stored twice: a tool call's idempotency key is its ``tool_use_id``
(``sessions.adapters.call_key``, the same for every path), and a rebuilt record whose content
the session already holds is dropped. Detectors (repeats, latency, error resolution) do not
run on replayed calls. Standard library only.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any

    from ctxmode.sessions.vocab import NormalizedHookEvent
    from ctxmode.store import Store

#: hook_state key: the transcript offset read up to, per session.
OFFSET = "transcript_offset"
#: Seconds of recording per backfill: a PreCompact hook stays far from its timeout (30 s as
#: installed) whatever the transcript's size; the rest is recorded by the next backfill.
BUDGET_S = 2.0


def backfill(store: Store, ev: NormalizedHookEvent) -> int:
    """Record what ``ev``'s transcript holds after the last offset read; events stored.

    Never raises: a failure is logged and the hook goes on (the snapshot is built anyway).
    """
    if ev.agent == "kimi-code" and ev.session_id:
        try:
            return _kimi_backfill(store, ev)
        except Exception as exc:  # noqa: BLE001 - the backstop must not cost the snapshot
            from ctxmode.hooks.hooklog import log

            log(store.root_dir, "WARN", f"Kimi wire backfill skipped: {type(exc).__name__}: {exc}")
            return 0
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
    calls, resume = transcript.claude_calls_at(ev.transcript_path, offset)
    stored = 0
    deadline = time.monotonic() + BUDGET_S
    for line, rebuilt in calls:
        if time.monotonic() > deadline:
            # The rest next time, from this call's line: what was recorded after it is
            # dropped as a repeat (idempotency keys).
            resume = min(resume, line)
            break
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


#: Most of a Kimi session's wire log read per call (bytes).
_WIRE_READ_CAP = 8 * 1024 * 1024


def _kimi_wire(session_id: str) -> str | None:
    """``$KIMI_CODE_HOME/sessions/<workdir key>/<session>/agents/main/wire.jsonl``."""
    import os

    from ctxmode.core import config

    sessions = os.path.join(str(config.kimi_home()), "sessions")
    if os.sep in session_id or session_id.startswith("."):
        return None
    try:
        folders = os.listdir(sessions)
    except OSError:
        return None
    for folder in folders:
        path = os.path.join(sessions, folder, session_id, "agents", "main", "wire.jsonl")
        if os.path.isfile(path):
            return path
    return None


def _kimi_backfill(store: Store, ev: NormalizedHookEvent) -> int:
    """Kimi Code does not wait for its PostToolUse hooks and kills them when a ``-p`` run
    ends, so the last calls of a turn are often lost: its Stop, PreCompact and SessionEnd
    hooks (awaited) record the tool calls of the session's wire log after the offset read
    last time, through the adapter, keyed as the PostToolUse hook keys them."""
    import time

    from ctxmode.sessions import adapters, events, records

    path = _kimi_wire(ev.session_id)
    if path is None:
        return 0
    offset = records.get_state(store.conn, ev.session_id, OFFSET)
    offset = offset if isinstance(offset, int) and offset >= 0 else 0
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(_WIRE_READ_CAP)
    calls: dict[str, tuple[int, dict[str, Any]]] = {}  # uuid -> (line offset, event)
    done = offset
    stored = 0
    at = offset
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break  # being written
        start, at = at, at + len(line)
        try:
            event = json.loads(line).get("event")
        except (ValueError, AttributeError):
            event = None
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "tool.call":
            calls[str(event.get("uuid"))] = (start, event)
        elif kind == "tool.result" and str(event.get("parentUuid")) in calls:
            _, call = calls.pop(str(event.get("parentUuid")))
            payload = _kimi_payload(ev, call, event)
            normalized = adapters.normalize("kimi-code", None, payload)
            if normalized is not None:
                result = records.record(
                    store, normalized, events.extract(normalized),
                    idempotency_key=adapters.call_key(normalized.kind, payload),
                    project_dir=store.root_dir, detect=False, dedupe_window=None,
                )  # fmt: skip
                stored += result.inserted
        if not calls:
            done = at
    # A call still waiting for its result is read again next time.
    resume = min((start for start, _ in calls.values()), default=done)
    if resume != offset:
        with store.transaction() as conn:
            records.set_state(conn, ev.session_id, OFFSET, resume, int(time.time()))
    return stored


def _kimi_payload(
    ev: NormalizedHookEvent, call: dict[str, Any], done: dict[str, Any]
) -> dict[str, Any]:
    """The PostToolUse(Failure) payload Kimi Code would have sent for one call of its wire."""
    raw = done.get("result")
    result: dict[str, Any] = raw if isinstance(raw, dict) else {}
    output = result.get("output")
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    failed = result.get("isError") is True
    payload: dict[str, Any] = {
        "hook_event_name": "PostToolUseFailure" if failed else "PostToolUse",
        "session_id": ev.session_id,
        "cwd": ev.cwd,
        "tool_name": call.get("name"),
        "tool_input": call.get("args") if isinstance(call.get("args"), dict) else {},
        "tool_call_id": call.get("toolCallId"),
    }
    if failed:
        payload["error"] = {"code": "internal", "message": text}
    else:
        payload["tool_output"] = text[:2000]
    return payload
