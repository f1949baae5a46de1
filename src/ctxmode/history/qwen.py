"""Qwen Code's past sessions: ``<runtime dir>/projects/<folder>/chats/<session id>.jsonl``.

The runtime folder is ``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME``, else ``~/.qwen``; the
project folder's name is the working directory with every character but letters and digits
made ``-`` (as Claude Code's). Qwen Code 0.24 appends one JSON line per record, a continued
session (``-c``, ``--resume``) to the same file, each line carrying ``sessionId``, ``cwd``
and ``timestamp``:

- ``type: user`` with ``provenance: real_user``: what the user typed (``message.parts``; its
  ``systemPayload.displayText`` when a prompt hook added context); cron prompts,
  notifications and goal runtime messages are ``provenance: system`` / ``goal_runtime``;
- ``type: assistant``: the model's ``parts``, text and ``functionCall {id, name, args}``;
- ``type: tool_result``: ``functionResponse {id, name, response: {output}|{error}}`` and
  ``toolCallResult {callId, status, resultDisplay}``;
- ``type: system``: ``subtype: chat_compression`` (a compaction) and telemetry.

Each is rebuilt as the payload Qwen Code's hooks send (``UserPromptSubmit`` with
``submitted_prompt``, ``PostToolUse`` / ``PostToolUseFailure`` with ``tool_response
{llmContent, returnDisplay}`` or ``error``, ``Stop`` with the turn's last reply), keyed by
the call id the model gave.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxmode.history.lines import read_lines, s, text_of
from ctxmode.history.readers import Chunk
from ctxmode.sessions.transcript import iso_ms

#: Lines worth parsing: the others (telemetry, attribution snapshots) hold nothing to import.
_WANTED = (b'"type": "user"', b'"type":"user"', b'"type": "assistant"', b'"type":"assistant"',
           b'"type": "tool_result"', b'"type":"tool_result"', b"chat_compression")  # fmt: skip


def _keep(head: bytes) -> bool:
    return any(mark in head for mark in _WANTED) or b'"type"' not in head


def read_qwen(path: Path, offset: int, state: dict[str, Any]) -> Chunk:
    """One Qwen Code chat, from ``offset``; a call whose result is not written yet is read
    again (with its result) next time."""
    lines = read_lines(path, offset, _keep)
    if lines.skip is not None:
        return lines.skip
    calls: list[tuple[int, int, dict[str, Any]]] = []
    pending: dict[str, tuple[int, str, dict[str, Any]]] = {}
    sid = cwd = None
    compacted: list[int] = []
    for at, entry in lines.entries:
        sid = sid or s(entry.get("sessionId"))
        cwd = cwd or s(entry.get("cwd"))
        kind = entry.get("type")
        ms = iso_ms(str(entry.get("timestamp") or ""))
        message = entry.get("message")
        parts = message.get("parts") if isinstance(message, dict) else None
        if kind == "user" and entry.get("provenance", "real_user") == "real_user":
            # What the user typed, without the context a prompt hook added (``hookContext``).
            extra = entry.get("systemPayload")
            shown = extra.get("displayText") if isinstance(extra, dict) else None
            text = shown.strip() if isinstance(shown, str) else text_of(parts)
            if text:
                prompt = {"hook_event_name": "UserPromptSubmit", "prompt": text,
                          "submitted_prompt": text}  # fmt: skip
                calls.append((at, ms, prompt))
        elif kind == "assistant" and isinstance(parts, list):
            asked = False
            for part in parts:
                call = part.get("functionCall") if isinstance(part, dict) else None
                if isinstance(call, dict) and s(call.get("id")) and s(call.get("name")):
                    args = call.get("args")
                    pending[call["id"]] = (at, call["name"], args if isinstance(args, dict) else {})
                    asked = True
            text = text_of(parts)
            if text and not asked:  # the turn's last reply: what Stop sends
                calls.append((at, ms, {"hook_event_name": "Stop", "last_assistant_message": text}))
        elif kind == "tool_result" and isinstance(parts, list):
            for part in parts:
                done = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(done, dict) and s(done.get("id")) in pending:
                    line, name, args = pending.pop(done["id"])
                    payload = _result(done, entry.get("toolCallResult"), name, args)
                    calls.append((line, ms, payload))
        elif kind == "system" and entry.get("subtype") == "chat_compression":
            payload_ = entry.get("systemPayload")
            info = payload_.get("info") if isinstance(payload_, dict) else None
            if not isinstance(info, dict) or info.get("compressionStatus", 1) == 1:
                compacted.append(at)
    resume = lines.end
    if pending:  # read these calls again once their results are written
        resume = min(resume, min(line for line, _, _ in pending.values()))
        calls = [c for c in calls if c[0] < resume]
    calls.sort(key=lambda item: item[0])
    return Chunk(
        calls=[(ms, payload) for _, ms, payload in calls],
        resume=resume,
        session_id=sid or path.stem,
        cwd=cwd,
        compactions=sum(1 for at in compacted if at < resume),
        nbytes=lines.end - lines.start,
        done=lines.last or resume <= lines.start,
    )


def _result(done: dict[str, Any], result: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The PostToolUse(Failure) payload of one finished call, as Qwen Code's hook sends it."""
    raw = done.get("response")
    response: dict[str, Any] = raw if isinstance(raw, dict) else {}
    result = result if isinstance(result, dict) else {}
    base = {"tool_name": name, "tool_input": args, "tool_use_id": done["id"]}
    error = response.get("error")
    if result.get("status") == "error" or error is not None:
        message = error if isinstance(error, str) else text_of(response.get("output")) or "failed"
        return {"hook_event_name": "PostToolUseFailure", **base, "error": message}
    output = response.get("output", "")
    display = result.get("resultDisplay", "")
    if isinstance(display, dict) and display.get("type") == "shell_result":
        display = display.get("output") or ""  # the hook shows a shell call's output
    return {
        "hook_event_name": "PostToolUse",
        **base,
        "tool_response": {"llmContent": output if isinstance(output, str) else text_of(output),
                          "returnDisplay": display},
    }  # fmt: skip
