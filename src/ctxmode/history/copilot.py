"""GitHub Copilot CLI's past sessions: ``$COPILOT_HOME/session-state/<session id>/events.jsonl``
(default ``~/.copilot``), one folder per session, a continued session (``--continue``,
``--resume``) appended to the same file.

Copilot CLI 1.0 writes one JSON line per event, ``{type, data, id, timestamp, parentId}``:

- ``session.start``: ``data.sessionId`` and ``data.context.cwd`` (``workspace.yaml`` beside
  the file says the same);
- ``user.message``: ``data.content``, what the user typed (``transformedContent`` is what the
  model got, with Copilot's own context in front; a ``source`` or ``isAutopilotContinuation``
  marks a message the user did not type);
- ``tool.execution_start``: ``toolCallId``, ``toolName`` (``view``, ``edit``, ``bash``;
  ``<server>-<tool>`` for MCP tools), ``arguments``;
- ``tool.execution_complete``: ``toolCallId``, ``success``, ``result.content`` (the text the
  model read: a shell call's ends ``<shellId: N completed with exit code C>``), ``error``;
- ``session.compaction_complete``: a compaction (``success``);
- ``hook.*``, usage and model records: nothing to import.

Each call is rebuilt as the payload Copilot CLI's hooks send (``UserPromptSubmit``,
``PostToolUse`` with ``tool_result {result_type, text_result_for_llm}``), keyed by the call
id. Its ``Stop`` hook carries no reply, so none is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxmode.history.lines import read_lines, s, text_of
from ctxmode.history.readers import Chunk
from ctxmode.sessions.transcript import iso_ms

_WANTED = (b"session.start", b"user.message", b"tool.execution_", b"session.compaction_complete")


def _keep(head: bytes) -> bool:
    return any(mark in head for mark in _WANTED) or b'"type"' not in head


def read_copilot(path: Path, offset: int, state: dict[str, Any]) -> Chunk:
    """One Copilot CLI session's ``events.jsonl``, from ``offset``; a call whose completion
    is not written yet is read again (with it) next time."""
    lines = read_lines(path, offset, _keep)
    if lines.skip is not None:
        return lines.skip
    calls: list[tuple[int, int, dict[str, Any]]] = []
    pending: dict[str, tuple[int, str, dict[str, Any]]] = {}
    sid = cwd = None
    compacted: list[int] = []
    for at, entry in lines.entries:
        kind = entry.get("type")
        data = entry.get("data")
        if not isinstance(data, dict):
            continue
        ms = iso_ms(str(entry.get("timestamp") or ""))
        if kind == "session.start":
            sid = sid or s(data.get("sessionId"))
            context = data.get("context")
            cwd = cwd or (s(context.get("cwd")) if isinstance(context, dict) else None)
        elif kind == "user.message":
            text = text_of(data.get("content"))
            # ``source`` names a skill's or another agent's injected message; autopilot
            # continuations are Copilot's own: neither is what the user typed.
            typed = data.get("source") in (None, "user") and not data.get("isAutopilotContinuation")
            if text and typed:
                calls.append((at, ms, {"hook_event_name": "UserPromptSubmit", "prompt": text}))
        elif kind == "tool.execution_start":
            ident, name = s(data.get("toolCallId")), s(data.get("toolName"))
            if ident and name:
                args = data.get("arguments")
                pending[ident] = (at, name, args if isinstance(args, dict) else {})
        elif kind == "tool.execution_complete":
            ident = s(data.get("toolCallId"))
            if ident and ident in pending:
                line, name, args = pending.pop(ident)
                calls.append((line, ms, _result(data, ident, name, args)))
        elif kind == "session.compaction_complete" and data.get("success", True) is not False:
            compacted.append(at)
    resume = lines.end
    if pending:  # read these calls again once their completion is written
        resume = min(resume, min(line for line, _, _ in pending.values()))
        calls = [c for c in calls if c[0] < resume]
    calls.sort(key=lambda item: item[0])
    return Chunk(
        calls=[(ms, payload) for _, ms, payload in calls],
        resume=resume,
        session_id=sid or path.parent.name,
        cwd=cwd,
        compactions=sum(1 for at in compacted if at < resume),
        nbytes=lines.end - lines.start,
        done=lines.last or resume <= lines.start,
    )


def _result(data: dict[str, Any], ident: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The PostToolUse payload of one finished call, as Copilot CLI's hook sends it."""
    raw = data.get("result")
    result: dict[str, Any] = raw if isinstance(raw, dict) else {}
    content = result.get("content")
    text = content if isinstance(content, str) else text_of(content)
    if data.get("success") is False:
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        text = text_of(message) or text or "failed"
        kind = "failure"
    else:
        kind = "success"
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": name,
        "tool_input": args,
        "tool_result": {"result_type": kind, "text_result_for_llm": text},
        "tool_use_id": ident,
    }
