"""Declarations of the session tools: signatures and flat output models.

Each runs the body of its name in ``mcp.tools.sessions`` (``server.declarer``).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ctxmode.mcp.sdk.server import READ_ONLY, declarer
from ctxmode.mcp.tools.common import StoreRunner


class SnapshotOut(BaseModel):
    session_id: str | None
    bytes: int
    event_count: int
    text: str


class EventsOut(BaseModel):
    session_id: str | None
    count: int
    ids: list[int] = Field(description="Newest first; categories and types align.")
    categories: list[str]
    types: list[str]
    text: str


def register(server: MCPServer[Any], call: StoreRunner) -> None:
    tool = declarer(server, call)

    @tool(
        description="The resume snapshot of a session (default: the latest): files, tasks, "
        "decisions, errors so far.",
        annotations=READ_ONLY,
    )
    def session_snapshot(
        session_id: str | None = None,
    ) -> Annotated[CallToolResult, SnapshotOut]: ...

    @tool(
        description="Recorded events of the latest session, newest first, for detail beyond "
        "the snapshot.",
        annotations=READ_ONLY,
    )
    def session_events(
        category: Annotated[str | None, Field(description="e.g. file, error, decision.")] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
    ) -> Annotated[CallToolResult, EventsOut]: ...
