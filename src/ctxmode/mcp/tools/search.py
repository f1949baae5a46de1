"""Bodies of the search tools: ``search`` (several queries in one call, compact hits per query)
and ``get`` (full text by id).

The contract of a body is the one of ``mcp.tools.knowledge``. Output is flat: the hits of all
queries share aligned lists, ``hit_query`` naming the query each hit answers. Returned text is
fenced as data.
"""

from __future__ import annotations

from typing import Any

from ctxmode.core.config import SEARCH_MIN_BUDGET, search_warmup_enabled
from ctxmode.core.errors import InvalidInput
from ctxmode.mcp.registry import MAX_QUERIES, SEARCH_BUDGET
from ctxmode.mcp.tools.common import StoreRunner, ToolOutput, date, fence
from ctxmode.store import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ctxmode.store.results import Item, SearchResult

#: Characters of a query echoed back; a pasted 10 KB query must not blow the output budget.
QUERY_ECHO_CHARS = 200


def search_many(store: Store, queries: list[str], **filters: Any) -> list[SearchResult]:
    """Run each query with the same filters; the budget is shared evenly between queries.

    File-backed sources are refreshed first (at most every ``search.indexing.REFRESH_EVERY_S``), so
    edited or deleted files are searched as they are.
    """
    if not queries:
        raise InvalidInput('give at least one query, e.g. {"queries": ["retry policy"]}')
    if len(queries) > MAX_QUERIES:
        raise InvalidInput(f"at most {MAX_QUERIES} queries per call; split the list")
    budget = max(SEARCH_MIN_BUDGET, int(filters.pop("budget_chars", SEARCH_BUDGET)) // len(queries))
    # Indexed files edited or deleted since: re-read once, before the first query.
    return [
        store.search(q, refresh=i == 0, budget_chars=budget, **filters)
        for i, q in enumerate(queries)
    ]


def _echo(query: str | None) -> str | None:
    """A query as echoed back: cut to ``QUERY_ECHO_CHARS`` (the caller knows what it sent)."""
    if query is None or len(query) <= QUERY_ECHO_CHARS:
        return query
    return query[: QUERY_ECHO_CHARS - 1] + "…"


def _render_search(results: list[SearchResult]) -> ToolOutput:
    hit_query: list[int] = []
    ids: list[str] = []
    titles: list[str] = []
    sources: list[str] = []
    types: list[str] = []
    dates: list[str] = []
    scores: list[float] = []
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
            hit_query.append(index)
            ids.append(hit.id)
            titles.append(hit.title)
            sources.append(hit.source)
            types.append(hit.type)
            dates.append(date(hit.created_at))
            scores.append(round(hit.score, 4))
            lines.append(
                f"{hit.id} [{hit.type}, {hit.source}, {date(hit.created_at)}]{hit.flags} "
                f"{hit.title}\n  {hit.snippet}"
            )
        more = f"\n({len(result.hits)} of {result.total} shown)" if result.truncated else ""
        blocks.append(f"{head}\n" + fence("\n".join(lines), "search") + more)
    blocks.append("Full text: get(ids=[...]).")
    text = "\n\n".join(blocks)
    data = {
        "queries": [_echo(r.query) or "" for r in results],
        "corrected": [_echo(r.corrected_query) for r in results],
        "confident": [r.confident for r in results],
        "totals": [r.total for r in results],
        "hit_query": hit_query,
        "ids": ids,
        "titles": titles,
        "sources": sources,
        "types": types,
        "dates": dates,
        "scores": scores,
        "text": text,
    }
    return ToolOutput(text, data)


def _render_items(items: list[Item]) -> ToolOutput:
    parts = [
        f"== {item.id} [{item.type}, {item.source}, {date(item.created_at)}]{item.flags} "
        f"{item.title}\n{item.text}"
        for item in items
    ]
    text = fence("\n\n".join(parts), "get")
    data = {
        "ids": [i.id for i in items],
        "titles": [i.title for i in items],
        "sources": [i.source for i in items],
        "truncated": [i.truncated for i in items],
        "text": text,
    }
    return ToolOutput(text, data)


def search(
    call: StoreRunner,
    *,
    queries: list[str],
    limit: int,
    source: str | None,
    type: str | None,
    session_id: str | None,
    task_id: int | None,
    file_path: str | None,
    since: int | None,
    until: int | None,
    budget_chars: int,
) -> ToolOutput:
    results = call(
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
    return _render_search(results)


def get(call: StoreRunner, *, ids: list[str], budget_chars: int) -> ToolOutput:
    return _render_items(call(Store.get_items, ids, budget_chars=budget_chars))
