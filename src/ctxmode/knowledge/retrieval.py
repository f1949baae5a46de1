"""Select and rank contexts for a file and/or task: the read side of the knowledge store.

Three layers, in order:
1. the file narrows: with ``file_path``, only contexts linked to that file (plus, outside
   ``focused``, contexts reached in one hop from it) are candidates;
2. the task orders and gates: contexts linked to the task rank above those of its parent, its
   grandparent ...; ``task``-scoped contexts are visible only from their task and its subtasks;
3. the type tier orders the result.

The candidates and their order come from ``ranking.select`` (shared with the edit hook);
a file reaches the contexts linked to it, to a folder holding it and to a glob matching it.

Mode reach:  focused = direct links, tier-1 + snippet types, 5 results;
             normal  = direct + parent task + one hop (contexts of files linked to the task's
                       contexts, contexts of tasks linked to the file's contexts), 15 results;
             broad   = every ancestor + one hop + all global contexts, 30 results.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ctxmode.core.errors import InvalidInput, StoreError
from ctxmode.core.models import (
    MODE_LIMITS,
    TYPE_TIERS,
    Context,
    QueryResult,
    RankedItem,
    check_mode,
    check_type,
)
from ctxmode.knowledge import ranking
from ctxmode.knowledge.contexts import (
    CONTEXT_COLUMNS,
    _require_task,
    ancestors,
    normalize_path,
    row_to_context,
)
from ctxmode.knowledge.packing import pack

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.core.db import Database

#: Share of a context window used as the budget when only the window size is given.
WINDOW_SHARE = 0.30
MAX_LIMIT = ranking.MAX_LIMIT
FOCUSED_TYPES = tuple(t for t, tier in TYPE_TIERS.items() if tier == 1) + ("snippet",)


def _types(context_type: str | Sequence[str] | None, mode: str) -> tuple[str, ...] | None:
    if context_type is None or context_type == ():
        return FOCUSED_TYPES if mode == "focused" else None
    wanted = (context_type,) if isinstance(context_type, str) else tuple(context_type)
    return tuple(check_type(t) for t in wanted)


def _load(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, Context]:
    id_list = list(ids)
    out: dict[int, Context] = {}
    for start in range(0, len(id_list), 500):
        chunk = id_list[start : start + 500]
        for row in conn.execute(
            f"SELECT {CONTEXT_COLUMNS} FROM contexts WHERE id IN ({ranking.placeholders(chunk)})",
            tuple(chunk),
        ):
            ctx = row_to_context(row)
            out[ctx.id] = ctx
    return out


def _check_positive(name: str, value: int | None, maximum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > maximum:
        raise InvalidInput(f"{name} must be an integer between 1 and {maximum}, got {value!r}")
    return value


def _refresh_stale(store: Database, ids: Sequence[int], rel: str | None) -> None:
    """Re-hash the files linked to the chosen contexts (and the queried file), so that their
    stale marks say what the disk holds now: set by a change, cleared by a revert."""
    from ctxmode.knowledge.lifecycle import refresh_files

    paths = {rel} if rel is not None else set()
    if ids:
        paths.update(
            str(r[0])
            for r in store.conn.execute(
                "SELECT DISTINCT f.path FROM context_file_map m JOIN files f "
                f"ON f.id = m.file_id WHERE m.context_id IN ({ranking.placeholders(ids)})",
                tuple(ids),
            )
        )
    # A read-only store still answers queries, with the marks it last recorded.
    with contextlib.suppress(StoreError):
        refresh_files(store, paths=sorted(paths))


def query_context(
    store: Database,
    *,
    task_id: int | None = None,
    file_path: str | None = None,
    context_type: str | Sequence[str] | None = None,
    mode: str = "normal",
    limit: int | None = None,
    budget_tokens: int | None = None,
    window_tokens: int | None = None,
    owner: str | None = None,
    session_id: str | None = None,
    include_superseded: bool = False,
    record_access: bool = True,
    now: int | None = None,
) -> QueryResult:
    check_mode(mode)
    types = _types(context_type, mode)
    lim = _check_positive("limit", limit, MAX_LIMIT) or MODE_LIMITS[mode]
    budget = _check_positive("budget_tokens", budget_tokens, 10_000_000)
    window = _check_positive("window_tokens", window_tokens, 100_000_000)
    if budget is None and window is not None:
        budget = max(1, int(window * WINDOW_SHARE))
    conn = store.conn
    rel = normalize_path(store, file_path) if file_path else None
    if task_id is not None:
        _require_task(conn, task_id)

    chain_depth: dict[int, int] = {}
    full_chain: tuple[int, ...] = ()
    if task_id is not None:
        ups = ancestors(conn, task_id)
        full_chain = (task_id, *ups)
        reach = {"focused": 0, "normal": 1, "broad": len(ups)}[mode]
        chain_depth = {t: depth for depth, t in enumerate(full_chain[: reach + 1])}
    vis = ranking.Visible(types, owner, session_id, full_chain, include_superseded)
    # Rank on the keys the queries returned; load full rows for the winners only.
    winners = ranking.select(
        conn, rel=rel, task_id=task_id, chain_depth=chain_depth, vis=vis, mode=mode, limit=lim
    )
    _refresh_stale(store, [cid for cid, _ in winners], rel)
    contexts = _load(conn, [cid for cid, _ in winners])
    selected = tuple(
        RankedItem(contexts[cid], c.distance, c.relevance, c.via)
        for cid, c in winners
        if cid in contexts
    )
    if record_access and selected:
        _record_access(store, [i.context.id for i in selected], now)
    return QueryResult(items=selected, pack=pack(selected, budget), mode=mode, limit=lim)


def _record_access(store: Database, ids: Sequence[int], now: int | None) -> None:
    ts = int(now if now is not None else time.time())
    try:
        with store.transaction() as conn:
            conn.execute(
                f"UPDATE contexts SET last_accessed_at = ?, access_count = access_count + 1 "
                f"WHERE id IN ({ranking.placeholders(ids)})",
                (ts, *ids),
            )
    except StoreError:
        pass  # bookkeeping only: a read-only or busy store still answers the query
