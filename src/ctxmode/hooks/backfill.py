"""The hooks' backstop for Claude Code: what its transcript shows that no hook recorded.

A hook call can be lost: an in-agent (``mcp_tool``) hook while the ``ctxmode serve`` it calls
is not connected (not approved yet, crashed, restarting), a command hook killed by its
timeout. Before a snapshot is built (PreCompact) and when the session ends, the calls and
prompts of the session's transcript (``sessions.transcript.claude_calls_at``) after the offset
read last time go through the hooks' own adapter and extraction, for at most ``BUDGET_S``
seconds and ``transcript.BACKFILL_BYTES`` of the file per call (the rest the next time).
Nothing is stored twice: a tool call's idempotency key is its ``tool_use_id`` (``call_key``,
the same for every path), and a rebuilt record whose content the session already holds is
dropped. Detectors (repeats, latency, error resolution) do not run on replayed calls. Standard
library only.
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


def call_key(kind: str, payload: dict[str, Any]) -> str:
    """The idempotency key of one hook call: its ``tool_use_id`` for a finished tool call
    (Claude Code, Codex: unique per call, whoever reports it), else its canonical payload."""
    from ctxmode.core._lean import sha256_hex

    ident = payload.get("tool_use_id")
    if kind in ("post_tool_use", "post_tool_use_failure") and isinstance(ident, str) and ident:
        basis = f"{kind}\0tool_use_id\0{ident}"
    else:
        # Canonical JSON, not the raw bytes: an agent that re-serialises a retried payload
        # (other key order or spacing) still sends the same call.
        basis = f"{kind}\0{json.dumps(payload, sort_keys=True, separators=(',', ':'))}"
    return sha256_hex(basis.encode())[:32]


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

    from ctxmode.hooks import adapters
    from ctxmode.sessions import events, records, transcript

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
        result = records.record(
            store, call, events.extract(call), idempotency_key=call_key(call.kind, payload),
            project_dir=store.root_dir, detect=False, dedupe_window=None,
        )  # fmt: skip
        stored += result.inserted
    if resume != offset:
        with store.transaction() as conn:
            records.set_state(conn, ev.session_id, OFFSET, resume, int(time.time()))
    return stored
