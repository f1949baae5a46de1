"""Reading an append-only JSON Lines transcript from an offset, for the agents whose readers
keep no state but the offset (Qwen Code, GitHub Copilot CLI).

A chunk ends at its last whole line: a line still being written is read next time. A line
longer than a chunk (a pasted image, say) is passed over. Lines that are not JSON objects
are skipped; a file whose first chunk holds no JSON line at all is ``Unreadable``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxmode.history.readers import CHUNK_BYTES, Chunk, Unreadable, _past_long_line, _read_bytes
from ctxmode.history.readers import text_of as text_of


@dataclass
class Lines:
    """The JSON lines of one chunk, each with the file offset it starts at."""

    entries: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    #: The offset the chunk started at (0 when the file shrank: rewritten) and past its end.
    start: int = 0
    end: int = 0
    #: The chunk was the file's last (shorter than ``CHUNK_BYTES``).
    last: bool = True
    #: Set when nothing but a line longer than a chunk was there: the chunk to return.
    skip: Chunk | None = None


def read_lines(path: Path, offset: int, keep: Callable[[bytes], bool] | None = None) -> Lines:
    """The whole JSON lines from ``offset``; ``keep`` (given the line's first 400 bytes)
    says which lines are worth parsing: the others count as good lines, unread."""
    if not path.is_file():
        raise Unreadable("not a regular file")
    data, offset = _read_bytes(path, offset, CHUNK_BYTES)
    end = data.rfind(b"\n") + 1
    if end == 0:
        past = _past_long_line(path, offset) if len(data) == CHUNK_BYTES else None
        if past is not None:
            skip = Chunk(resume=past, nbytes=past - offset, done=False)
            return Lines(start=offset, end=past, last=False, skip=skip)
        if offset == 0 and data.strip():
            raise Unreadable("no complete JSON line")
        return Lines(start=offset, end=offset)
    out: list[tuple[int, dict[str, Any]]] = []
    good = 0
    at = 0
    for raw in data[:end].split(b"\n"):
        start, at = at, at + len(raw) + 1
        if not raw.strip():
            continue
        if keep is not None and raw.startswith(b"{") and not keep(raw[:400]):
            good += 1
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(entry, dict):
            good += 1
            out.append((offset + start, entry))
    if good == 0 and offset == 0:
        raise Unreadable("no line is JSON")
    return Lines(out, offset, offset + end, len(data) < CHUNK_BYTES)


def s(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
