"""MCP tools of this area, registered on the server built by ``mcp_server``.

Contract: ``register(server, call)`` adds tools to ``server`` (an ``mcp`` 2.x ``MCPServer``).
``call`` is ``async def call(fn, *args, **kwargs)``: it runs ``fn(store, *args, **kwargs)`` in a
worker thread with the server's ``Store`` and turns a ``CtxmodeError`` into an ``isError`` tool
result whose message says what to send instead. ``call.unlocked(fn, ...)`` runs store-free
slow work (a sandboxed process) without holding the store, so other tools go on meanwhile.

Tools: ``search`` (several queries in one call, compact hits per query) and ``get`` (full text
by id). Output schemas are flat: hits of all queries share aligned lists, ``hit_query`` naming
the query each hit answers. Returned text is fenced as data (``mcp_server.fence``).
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ctxmode.core.config import search_warmup_enabled
from ctxmode.core.errors import InvalidInput
from ctxmode.mcp.base import READ_ONLY, fence, tool_result
from ctxmode.search.engine import MIN_BUDGET, Item, SearchResult, get_items, search
from ctxmode.search.indexing import refresh_due
from ctxmode.store import Store

#: Queries accepted in one ``search`` call, and the characters all their hits share.
MAX_QUERIES = 10
SEARCH_BUDGET = 6000
GET_BUDGET = 20000
#: Characters of a query echoed back; a pasted 10 KB query must not blow the output budget.
QUERY_ECHO_CHARS = 200


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


def _date(ts: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts)) if ts else "-"


def search_many(store: Store, queries: list[str], **filters: Any) -> list[SearchResult]:
    """Run each query with the same filters; the budget is shared evenly between queries.

    File-backed sources are refreshed first (at most every ``indexing.REFRESH_EVERY_S``), so
    edited or deleted files are searched as they are.
    """
    if not queries:
        raise InvalidInput('give at least one query, e.g. {"queries": ["retry policy"]}')
    if len(queries) > MAX_QUERIES:
        raise InvalidInput(f"at most {MAX_QUERIES} queries per call; split the list")
    budget = max(MIN_BUDGET, int(filters.pop("budget_chars", SEARCH_BUDGET)) // len(queries))
    # Indexed files edited or deleted since: re-chunked first (one stat per file otherwise).
    refresh_due(store)
    return [search(store, q, budget_chars=budget, **filters) for q in queries]


def _echo(query: str | None) -> str | None:
    """A query as echoed back: cut to ``QUERY_ECHO_CHARS`` (the caller knows what it sent)."""
    if query is None or len(query) <= QUERY_ECHO_CHARS:
        return query
    return query[: QUERY_ECHO_CHARS - 1] + "…"


def _render_search(results: list[SearchResult]) -> tuple[SearchOut, str]:

    out = SearchOut(
        queries=[_echo(r.query) or "" for r in results],
        corrected=[_echo(r.corrected_query) for r in results],
        confident=[r.confident for r in results],
        totals=[r.total for r in results],
        hit_query=[],
        ids=[],
        titles=[],
        sources=[],
        types=[],
        dates=[],
        scores=[],
        text="",
    )
    blocks: list[str] = []
    for index, result in enumerate(results):
        head = f"Query {index + 1}: {_echo(result.query)!r}"
        if result.corrected_query is not None:  # result.notice, with both queries cut
            head += (
                f" (no match for {_echo(result.query)!r}; "
                f"showing results for {_echo(result.corrected_query)!r})"
            )
        if not result.hits:
            blocks.append(f"{head}: no match.")
            continue
        if not result.confident:
            head += " - no confident match, closest items"
        lines = []
        for hit in result.hits:
            out.hit_query.append(index)
            out.ids.append(hit.id)
            out.titles.append(hit.title)
            out.sources.append(hit.source)
            out.types.append(hit.type)
            out.dates.append(_date(hit.created_at))
            out.scores.append(round(hit.score, 4))
            flag = hit.flags
            lines.append(
                f"{hit.id} [{hit.type}, {hit.source}, {_date(hit.created_at)}]{flag} "
                f"{hit.title}\n  {hit.snippet}"
            )
        more = f"\n({len(result.hits)} of {result.total} shown)" if result.truncated else ""
        blocks.append(f"{head}\n" + fence("\n".join(lines), "search") + more)
    blocks.append("Full text: get(ids=[...]).")
    text = "\n\n".join(blocks)
    out.text = text
    return out, text


def _render_items(items: list[Item]) -> tuple[GetOut, str]:

    parts = []
    for item in items:
        flag = item.flags
        parts.append(
            f"== {item.id} [{item.type}, {item.source}, {_date(item.created_at)}]{flag} "
            f"{item.title}\n{item.text}"
        )
    text = fence("\n\n".join(parts), "get")
    out = GetOut(
        ids=[i.id for i in items],
        titles=[i.title for i in items],
        sources=[i.source for i in items],
        truncated=[i.truncated for i in items],
        text=text,
    )
    return out, text


def register(server: MCPServer[Any], call: Any) -> None:
    """Add this module's tools to ``server``."""

    @server.tool(
        description="Full-text search of stored knowledge, session events and indexed docs. "
        "Several queries per call; compact hits with ids (read them with get).",
        annotations=READ_ONLY,
    )
    async def search(
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
    ) -> Annotated[CallToolResult, SearchOut]:
        results = await call(
            search_many,
            queries,
            limit=limit,
            source=source,
            type=type,
            session_id=session_id,
            task_id=task_id,
            file_path=file_path,
            since=since,
            until=until,
            budget_chars=budget_chars,
        )
        # The items of what was searched are analysed ahead in idle moments (same results,
        # faster next searches).
        if search_warmup_enabled():
            call.warm_later(source)
        return tool_result(*_render_search(results))

    @server.tool(
        description="Full text of search hits by id (ctx:12, evt:34, doc:56), within a budget.",
        annotations=READ_ONLY,
    )
    async def get(
        ids: Annotated[list[str], Field(description="Ids printed by search.")],
        budget_chars: Annotated[int, Field(ge=MIN_BUDGET, le=100_000)] = GET_BUDGET,
    ) -> Annotated[CallToolResult, GetOut]:
        items = await call(get_items, ids, budget_chars=budget_chars)
        return tool_result(*_render_items(items))
