"""The last assistant message of an agent's transcript file: the Stop hook's fallback.

Claude Code passes ``last_assistant_message`` to Stop hooks, but older versions and other
agents do not; their transcript (JSON Lines, no official schema, written asynchronously) is
read leniently instead. Invariants: reads at most ``TAIL_BYTES`` from the end of one regular
``.jsonl`` file; never raises (``None`` when nothing usable is found); standard library only
(it runs in a hook process).
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ctxmode.core._lean import NamedTuple

#: How much of the transcript's end is read (bytes): the last turn, not the whole session.
TAIL_BYTES = 256 * 1024
#: Longest text returned (characters); the caller clips further.
MAX_CHARS = 4000


def last_assistant_text(path: str | None) -> str | None:
    """Text of the newest assistant message in the transcript at ``path``, if any."""
    if not path or not path.endswith(".jsonl"):
        return None
    if not os.path.isfile(path):  # before opening: opening a named pipe waits for a writer
        return None
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read(TAIL_BYTES)
    except OSError:
        return None
    lines = tail.split(b"\n")
    if len(tail) == TAIL_BYTES and len(lines) > 1:
        lines = lines[1:]  # the first line is cut
    for raw in reversed(lines):
        if b"assistant" not in raw:
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        text = _assistant_text(entry)
        if text:
            return text[:MAX_CHARS]
    return None


def _assistant_text(entry: Any) -> str | None:
    """Claude Code lines hold ``message{role, content}``; others ``payload{...}`` or the
    message itself. Content is a string or a list of blocks with ``text`` (tool calls and
    thinking blocks are skipped)."""
    if not isinstance(entry, dict):
        return None
    for message in (entry.get("message"), entry.get("payload"), entry):
        if isinstance(message, dict) and message.get("role") == "assistant":
            return _content_text(message.get("content"))
    return None


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content.strip() or None
    if not isinstance(content, list):
        return None
    parts = [
        block["text"].strip()
        for block in content
        if isinstance(block, dict)
        and block.get("type") in ("text", "output_text")
        and isinstance(block.get("text"), str)
    ]
    text = "\n".join(p for p in parts if p)
    return text or None


# -- the calls a Claude Code transcript holds (the hooks' backstop) --------------------------

#: Most of a transcript read per backfill (bytes, from the last offset read): a session's
#: tool outputs, not an unbounded file; the rest is read by the next backfill.
BACKFILL_BYTES = 4 * 1024 * 1024
#: What a line read by ``claude_read`` holds (the others are not parsed: most of a
#: transcript's bytes are attachments and request shapes).
_WANTED = (
    b'"type":"user"',
    b'"type":"assistant"',
    b'"type": "user"',
    b'"type": "assistant"',
    b'"compact_boundary"',
)
#: User texts that are Claude Code's own (slash commands, their output, caveats), not prompts.
_NOT_PROMPTS = ("<command-name>", "<command-message>", "<local-command-", "Caveat:", "<bash-")


class ClaudeRead(NamedTuple):
    """What one read of a Claude Code transcript found (``claude_read``)."""

    #: Hook payloads rebuilt, in order, without session fields.
    calls: list[dict[str, Any]]
    #: The time of each call (Unix milliseconds; 0 when its line has none), parallel to calls.
    times: list[int]
    #: The offset of each call's line, parallel to calls (a bounded backfill resumes there).
    lines: list[int]
    #: The offset read up to (see ``claude_calls``).
    resume: int
    #: The session id and working directory the lines record (the first seen), if any.
    session_id: str | None
    cwd: str | None
    #: Compaction boundaries read.
    compactions: int
    #: Bytes read.
    nbytes: int


def claude_calls(path: str | None, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """``claude_calls_at`` without the offsets of the calls."""
    calls, resume = claude_calls_at(path, offset)
    return [payload for _, payload in calls], resume


def claude_calls_at(
    path: str | None, offset: int = 0
) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """(offset of its line, payload) of each call, and the offset read up to.

    Hook payloads rebuilt from a Claude Code transcript, after byte ``offset``: one
    PostToolUse (or PostToolUseFailure) per finished tool call and one UserPromptSubmit per
    prompt, in order, without session fields; and the offset read up to (the end of the last
    whole line). A tool call whose result is not in the file yet is left for a later read,
    unless a prompt came after it (the call was abandoned: Claude Code was killed, say).

    Shapes (Claude Code 2.1.332): an ``assistant`` line's ``message.content`` holds
    ``tool_use`` blocks (``id``, ``name``, ``input``); the ``user`` line of the result holds a
    ``tool_result`` block (``tool_use_id``, ``is_error``, ``content``) and, at the top level,
    ``toolUseResult``: the PostToolUse ``tool_response``. Subagent (sidechain) lines are
    skipped. Never raises: ``([], offset)`` when nothing is readable.
    """
    read = claude_read(path, offset)
    return list(zip(read.lines, read.calls, strict=True)), read.resume


def claude_read(
    path: str | None, offset: int = 0, limit: int = BACKFILL_BYTES, *, stops: bool = False
) -> ClaudeRead:
    """``claude_calls`` with what the import of past sessions needs too: each call's time,
    the session id, working directory and compactions the lines record, and (``stops``) a
    Stop payload with the last assistant text of each turn that a prompt closed."""
    nothing = ClaudeRead([], [], [], offset, None, None, 0, 0)
    if not path or not path.endswith(".jsonl") or not os.path.isfile(path):
        return nothing
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if offset > size:
                offset = 0  # rewritten since: read it again (the store drops repeats)
            handle.seek(offset)
            data = handle.read(limit)
    except OSError:
        return nothing
    end = data.rfind(b"\n") + 1
    if end == 0:
        # One line longer than the read (a huge tool output): step over it, or every later
        # read would stop here.
        return nothing._replace(resume=offset + len(data) if len(data) == limit else offset)
    uses: dict[str, tuple[int, dict[str, Any]]] = {}
    out: list[tuple[int, str, dict[str, Any]]] = []
    resume = offset + end
    at = 0
    session_id = cwd = None
    compactions = 0
    said: tuple[int, str, str] | None = None  # the turn's last assistant text
    for raw in data[:end].split(b"\n"):
        start, at = at, at + len(raw) + 1
        if not any(mark in raw for mark in _WANTED):
            continue  # attachments, request shapes, progress: nothing read from them
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain") is True:
            continue
        if session_id is None and isinstance(entry.get("sessionId"), str):
            session_id = entry["sessionId"]
        if cwd is None and isinstance(entry.get("cwd"), str):
            cwd = entry["cwd"]
        stamp = entry.get("timestamp")
        when = stamp if isinstance(stamp, str) else ""
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        kind = entry.get("type")
        if kind == "assistant" and isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    ident, name = block.get("id"), block.get("name")
                    if isinstance(ident, str) and isinstance(name, str):
                        uses[ident] = (offset + start, block)
            if stops:
                text = _content_text(content)
                if text:
                    said = (offset + start, when, text)
        elif kind == "user":
            if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            ):
                for block in content:
                    call = _finished_call(block, entry, uses)
                    if call is not None:
                        out.append((call[0], when, call[1]))
            elif not (entry.get("isMeta") or entry.get("isCompactSummary")):
                # A compaction's summary comes back as a user line: Claude Code's, not a prompt.
                text = _content_text(content)
                if text and not text.startswith(_NOT_PROMPTS):
                    if said is not None:
                        stop = {"hook_event_name": "Stop", "last_assistant_message": said[2]}
                        out.append((said[0], said[1], stop))
                        said = None
                    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": text}
                    out.append((offset + start, when, prompt))
                    uses.clear()  # calls left without a result before a new prompt: abandoned
        elif kind == "system" and entry.get("subtype") == "compact_boundary":
            compactions += 1
    if said is not None and not uses:
        stop = {"hook_event_name": "Stop", "last_assistant_message": said[2]}
        out.append((said[0], said[1], stop))
    if uses:
        resume = min(resume, min(line for line, _ in uses.values()))  # results still to come
    out.sort(key=lambda item: item[0])
    return ClaudeRead(
        [payload for _, _, payload in out],
        [iso_ms(when) for _, when, _ in out],
        [line for line, _, _ in out],
        resume,
        session_id,
        cwd,
        compactions,
        end,
    )


def iso_ms(text: str) -> int:
    """Unix milliseconds of an ISO-8601 time (``2026-12-01T19:01:43.670Z``); 0 when unreadable."""
    if not text:
        return 0
    from datetime import datetime, timezone

    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00", 1))
    except ValueError:
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)  # noqa: UP017 - the hook path's stdlib
    return int(parsed.timestamp() * 1000)


def _finished_call(
    block: Any, entry: dict[str, Any], uses: dict[str, tuple[int, dict[str, Any]]]
) -> tuple[int, dict[str, Any]] | None:
    """The PostToolUse(Failure) payload of one ``tool_result`` block whose call is known."""
    if not isinstance(block, dict) or block.get("type") != "tool_result":
        return None
    ident = block.get("tool_use_id")
    if not isinstance(ident, str) or ident not in uses:
        return None
    line, use = uses.pop(ident)
    payload: dict[str, Any] = {
        "tool_name": use["name"],
        "tool_input": use.get("input") if isinstance(use.get("input"), dict) else {},
        "tool_use_id": ident,
    }
    if block.get("is_error") is True:
        payload["hook_event_name"] = "PostToolUseFailure"
        payload["error"] = _result_text(block.get("content")) or ""
    else:
        payload["hook_event_name"] = "PostToolUse"
        response = entry.get("toolUseResult")
        payload["tool_response"] = (
            response if response is not None else _result_text(block.get("content"))
        )
    return line, payload


def _result_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    return _content_text(content)
