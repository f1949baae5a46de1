"""Declarations of the search tools: signatures and flat output models.

Each runs the body of its name in ``mcp.tools.search`` (``server.declarer``).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ctxmode.mcp.sdk.server import READ_ONLY, declarer
from ctxmode.mcp.tools.common import StoreRunner
from ctxmode.mcp.tools.search import GET_BUDGET, SEARCH_BUDGET
from ctxmode.search.engine import MIN_BUDGET


class SearchOut(BaseModel):
    queries: list[str]
    corrected: list[str | None] = Field(description="Per query: the spelling searched instead.")
    confident: list[bool] = Field(description="Per query: False = no good match.")
    totals: list[int] = Field(description="Per query: items that matched.")
    hit_query: list[int] = Field(description="Per hit: index of its query; other lists align.")
    ids: list[str] = Field(description="Pass to get for full text.")
    titles: list[str]
    sources: list[str]
    types: list[str]
    dates: list[str]
    scores: list[float]
    text: str


class GetOut(BaseModel):
    ids: list[str]
    titles: list[str]
    sources: list[str]
    truncated: list[bool] = Field(description="Per item: text cut to the budget.")
    text: str


def register(server: MCPServer[Any], call: StoreRunner) -> None:
    tool = declarer(server, call)

    @tool(
        description="Full-text search of stored knowledge, session events and indexed docs. "
        "Several queries per call; compact hits with ids (read them with get).",
        annotations=READ_ONLY,
    )
    def search(
        queries: Annotated[list[str], Field(description="One or more search texts.")],
        limit: Annotated[int, Field(ge=1, le=50)] = 5,
        source: Annotated[str | None, Field(description="Source label only.")] = None,
        type: Annotated[str | None, Field(description="Context type/event category.")] = None,
        session_id: str | None = None,
        task_id: Annotated[int | None, Field(description="Contexts of this task.")] = None,
        file_path: Annotated[str | None, Field(description="Contexts of this file.")] = None,
        since: Annotated[int | None, Field(description="Unix seconds.")] = None,
        until: Annotated[int | None, Field(description="Unix seconds.")] = None,
        budget_chars: Annotated[
            int, Field(ge=MIN_BUDGET, le=100_000, description="Shared by all queries.")
        ] = SEARCH_BUDGET,
    ) -> Annotated[CallToolResult, SearchOut]: ...

    @tool(
        description="Full text of search hits by id (ctx:12, evt:34, doc:56), within a budget.",
        annotations=READ_ONLY,
    )
    def get(
        ids: Annotated[list[str], Field(description="Ids printed by search.")],
        budget_chars: Annotated[int, Field(ge=MIN_BUDGET, le=100_000)] = GET_BUDGET,
    ) -> Annotated[CallToolResult, GetOut]: ...
