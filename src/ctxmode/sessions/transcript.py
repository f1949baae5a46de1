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
    from typing import Any

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
