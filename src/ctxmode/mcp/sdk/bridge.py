"""The SDK server (``sdk.server``) fed JSON-RPC lines instead of stdin.

``serve_lines(server, lines, write)`` runs a session of the SDK's ``Server`` exactly as over
stdio (the SDK's ``stdio_server`` transport, the same JSON codec), but reads lines from a
``queue.Queue`` (``None`` ends the session) and hands every line it sends to ``write``: the
differential tests send the same lines to it and to ``ctxmode serve``.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any, cast

import anyio.to_thread
from mcp.server import Server
from mcp.server.stdio import stdio_server


class _QueueLines:
    """An async iterator over the lines put in a queue, until ``None``."""

    def __init__(self, lines: queue.Queue[str | None]) -> None:
        self._lines = lines

    def __aiter__(self) -> _QueueLines:
        return self

    async def __anext__(self) -> str:
        line = await anyio.to_thread.run_sync(self._lines.get, abandon_on_cancel=True)
        if line is None:
            raise StopAsyncIteration
        return line


class _LineWriter:
    """The ``stdout`` the SDK transport writes to: one JSON-RPC message per ``write``."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write

    async def write(self, text: str) -> None:
        self._write(text.rstrip("\n"))

    async def flush(self) -> None:
        return None


async def serve_lines(
    server: Server[Any], lines: queue.Queue[str | None], write: Callable[[str], None]
) -> None:
    """Serve one session: lines from ``lines`` in, each reply line to ``write``."""
    stdin, stdout = cast(Any, _QueueLines(lines)), cast(Any, _LineWriter(write))
    async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
