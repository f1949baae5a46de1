"""MCP tools of this area, registered on the server built by ``mcp_server``.

Contract: ``register(server, call)`` adds tools to ``server`` (an ``mcp`` 2.x ``MCPServer``).
``call`` is ``async def call(fn, *args, **kwargs)``: it runs ``fn(store, *args, **kwargs)`` in a
worker thread with the server's ``Store`` and turns a ``CtxmodeError`` into an ``isError`` tool
result whose message says what to send instead.
"""

from __future__ import annotations

from typing import Any


def register(server: Any, call: Any) -> None:
    """Add this module's tools to ``server``."""
