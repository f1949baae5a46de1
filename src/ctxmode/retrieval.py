"""Select and rank contexts for a file and/or task: the read side of the knowledge store.

Three layers, in order:
1. the file narrows: with ``file_path``, only contexts linked to that file (plus, outside
   ``focused``, contexts reached in one hop from it) are candidates;
2. the task orders and gates: contexts linked to the task rank above those of its parent, its
   grandparent ...; ``task``-scoped contexts are visible only from their task and its subtasks;
3. the type tier orders the result.

Sort key: (tier, distance, newest updated_at, highest relevance, newest id). ``distance`` is 0
for a direct link, the ancestor depth for ancestors, 1 for a one-hop neighbour and 9 for a
context included only because it is ``global`` (broad mode, or no file/task given). Putting
distance before recency is what makes a task's own decisions outrank its parent's.

Mode reach:  focused = direct links, tier-1 + snippet types, 5 results;
             normal  = direct + parent task + one hop (contexts of files linked to the task's
                       contexts, contexts of tasks linked to the file's contexts), 15 results;
             broad   = every ancestor + one hop + all global contexts, 30 results.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxmode.errors import InvalidInput, StoreError
from ctxmode.knowledge import (
    CONTEXT_COLUMNS,
    _require_task,
    ancestors,
    file_hash,
    normalize_path,
    row_to_context,
)
from ctxmode.models import (
    MODE_LIMITS,
    TYPE_TIERS,
    Context,
    QueryResult,
    RankedItem,
    check_mode,
    check_type,
)
from ctxmode.packing import pack

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.store import Store

GLOBAL_DISTANCE = 9
UNRELATED_TASK_DISTANCE = 5
#: Share of a context window used as the budget when only the window size is given.
WINDOW_SHARE = 0.30
MAX_LIMIT = 1000
FOCUSED_TYPES = tuple(t for t, tier in TYPE_TIERS.items() if tier == 1) + ("snippet",)


@dataclass
class _Candidate:
    distance: int
    relevance: float
    via: str


def _offer(
    pool: dict[int, _Candidate], cid: int, distance: int, relevance: float, via: str
) -> None:
    """Keep the best route to each context: one row per context however many links match."""
    current = pool.get(cid)
    if current is None or (distance, -relevance) < (current.distance, -current.relevance):
        pool[cid] = _Candidate(distance, relevance, via)


def _types(context_type: str | Sequence[str] | None, mode: str) -> tuple[str, ...] | None:
    if context_type is None or context_type == ():
        return FOCUSED_TYPES if mode == "focused" else None
    wanted = (context_type,) if isinstance(context_type, str) else tuple(context_type)
    return tuple(check_type(t) for t in wanted)


def _placeholders(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def _file_contexts(conn: sqlite3.Connection, rel: str) -> list[int]:
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT m.context_id FROM files f JOIN context_file_map m ON m.file_id = f.id "
            "WHERE f.path = ?",
            (rel,),
        )
    ]


def _task_contexts(
    conn: sqlite3.Connection, task_ids: Sequence[int]
) -> list[tuple[int, int, float]]:
    if not task_ids:
        return []
    return [
        (int(r[0]), int(r[1]), float(r[2]))
        for r in conn.execute(
            f"SELECT context_id, task_id, relevance FROM context_task_map "
            f"WHERE task_id IN ({_placeholders(task_ids)})",
            tuple(task_ids),
        )
    ]


def _file_hop(conn: sqlite3.Connection, context_ids: Sequence[int]) -> list[int]:
    """Contexts sharing a file with any of ``context_ids``."""
    if not context_ids:
        return []
    return [
        int(r[0])
        for r in conn.execute(
            f"SELECT DISTINCT m2.context_id FROM context_file_map m1 "
            f"JOIN context_file_map m2 ON m2.file_id = m1.file_id "
            f"WHERE m1.context_id IN ({_placeholders(context_ids)}) LIMIT 500",
            tuple(context_ids),
        )
    ]


def _task_hop(conn: sqlite3.Connection, context_ids: Sequence[int]) -> list[int]:
    """Contexts sharing a task with any of ``context_ids``."""
    if not context_ids:
        return []
    return [
        int(r[0])
        for r in conn.execute(
            f"SELECT DISTINCT m2.context_id FROM context_task_map m1 "
            f"JOIN context_task_map m2 ON m2.task_id = m1.task_id "
            f"WHERE m1.context_id IN ({_placeholders(context_ids)}) LIMIT 500",
            tuple(context_ids),
        )
    ]


def _global_top(
    conn: sqlite3.Connection,
    types: tuple[str, ...] | None,
    owner: str | None,
    session_id: str | None,
    include_superseded: bool,
    limit: int,
) -> list[int]:
    where = ["scope = 'global'"]
    params: list[object] = []
    if not include_superseded:
        where.append("superseded_by IS NULL AND archived_at IS NULL")
    if types:
        where.append(f"type IN ({_placeholders(types)})")
        params.extend(types)
    if owner:
        where.append("owner = ?")
        params.append(owner)
    sql = (
        f"SELECT id FROM contexts WHERE {' AND '.join(where)} "
        "ORDER BY tier, updated_at DESC LIMIT ?"
    )
    ids = [int(r[0]) for r in conn.execute(sql, (*params, limit))]
    if session_id:
        ids += [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM contexts WHERE scope = 'session' AND session_id = ? "
                "ORDER BY tier, updated_at DESC LIMIT ?",
                (session_id, limit),
            )
        ]
    return ids


def _load(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, Context]:
    id_list = list(ids)
    out: dict[int, Context] = {}
    for start in range(0, len(id_list), 500):
        chunk = id_list[start : start + 500]
        for row in conn.execute(
            f"SELECT {CONTEXT_COLUMNS} FROM contexts WHERE id IN ({_placeholders(chunk)})",
            tuple(chunk),
        ):
            ctx = row_to_context(row)
            out[ctx.id] = ctx
    return out


def _task_scoped_visible(
    conn: sqlite3.Connection, contexts: Iterable[Context], chain: set[int]
) -> set[int]:
    """Ids of task-scoped contexts linked to a task in ``chain`` (the query task and ancestors)."""
    scoped = [c.id for c in contexts if c.scope == "task"]
    if not scoped or not chain:
        return set()
    return {
        int(r[0])
        for r in conn.execute(
            f"SELECT context_id FROM context_task_map "
            f"WHERE context_id IN ({_placeholders(scoped)}) "
            f"AND task_id IN ({_placeholders(list(chain))})",
            (*scoped, *chain),
        )
    }


def _check_positive(name: str, value: int | None, maximum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > maximum:
        raise InvalidInput(f"{name} must be an integer between 1 and {maximum}, got {value!r}")
    return value


def _mark_stale_if_changed(store: Store, rel: str) -> None:
    """Re-hash the queried file: a changed or deleted file marks its contexts stale."""
    from ctxmode.knowledge import absolute_path

    row = store.conn.execute("SELECT id, hash FROM files WHERE path = ?", (rel,)).fetchone()
    if not row:
        return
    current = file_hash(absolute_path(store, rel))
    if current == row[1]:
        return
    try:
        with store.transaction() as conn:
            conn.execute("UPDATE files SET hash = ? WHERE id = ?", (current, row[0]))
            conn.execute(
                "UPDATE contexts SET stale = 1 WHERE id IN "
                "(SELECT context_id FROM context_file_map WHERE file_id = ?)",
                (row[0],),
            )
    except StoreError:
        pass  # a read-only store still answers queries, just without the stale mark


def query_context(
    store: Store,
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
    if rel is not None:
        _mark_stale_if_changed(store, rel)

    chain_depth: dict[int, int] = {}
    if task_id is not None:
        chain_depth[task_id] = 0
        ups = ancestors(conn, task_id)
        reach = {"focused": 0, "normal": 1, "broad": len(ups)}[mode]
        for depth, ancestor in enumerate(ups[:reach], start=1):
            chain_depth[ancestor] = depth
    full_chain = set(chain_depth) | (set(ancestors(conn, task_id)) if task_id else set())

    pool: dict[int, _Candidate] = {}
    task_links = _task_contexts(conn, list(chain_depth))
    if rel is not None:
        file_ids = _file_contexts(conn, rel)
        for cid in file_ids:
            _offer(pool, cid, UNRELATED_TASK_DISTANCE if task_id is not None else 0, 1.0, "file")
        if mode != "focused":
            for cid in _task_hop(conn, file_ids):
                _offer(pool, cid, 1, 0.5, "hop")
        # The task only reorders what the file selected.
        for cid, tid, relevance in task_links:
            if cid in pool:
                depth = chain_depth[tid]
                _offer(
                    pool, cid, depth, relevance * 0.5**depth, "task" if depth == 0 else "ancestor"
                )
    elif task_id is not None:
        for cid, tid, relevance in task_links:
            depth = chain_depth[tid]
            _offer(pool, cid, depth, relevance * 0.5**depth, "task" if depth == 0 else "ancestor")
        if mode != "focused":
            direct = [cid for cid, tid, _ in task_links if tid == task_id]
            for cid in _file_hop(conn, direct):
                _offer(pool, cid, 1, 0.5, "hop")
    if (rel is None and task_id is None) or mode == "broad":
        distance = GLOBAL_DISTANCE if (rel is not None or task_id is not None) else 0
        for cid in _global_top(conn, types, owner, session_id, include_superseded, lim):
            _offer(pool, cid, distance, 0.0, "global")

    contexts = _load(conn, pool)
    task_ok = _task_scoped_visible(conn, contexts.values(), full_chain)
    ranked: list[RankedItem] = []
    for cid, ctx in contexts.items():
        if types is not None and ctx.type not in types:
            continue
        if owner is not None and ctx.owner != owner:
            continue
        if not include_superseded and (ctx.superseded_by is not None or ctx.archived_at):
            continue
        if ctx.scope == "task" and cid not in task_ok:
            continue
        if ctx.scope == "session" and (session_id is None or ctx.session_id != session_id):
            continue
        cand = pool[cid]
        ranked.append(RankedItem(ctx, cand.distance, cand.relevance, cand.via))
    ranked.sort(
        key=lambda i: (
            i.context.tier,
            i.distance,
            -i.context.updated_at,
            -i.relevance,
            -i.context.id,
        )
    )
    selected = tuple(ranked[:lim])
    if record_access and selected:
        _record_access(store, [i.context.id for i in selected], now)
    return QueryResult(items=selected, pack=pack(selected, budget), mode=mode, limit=lim)


def _record_access(store: Store, ids: Sequence[int], now: int | None) -> None:
    ts = int(now if now is not None else time.time())
    try:
        with store.transaction() as conn:
            conn.execute(
                f"UPDATE contexts SET last_accessed_at = ?, access_count = access_count + 1 "
                f"WHERE id IN ({_placeholders(ids)})",
                (ts, *ids),
            )
    except StoreError:
        pass  # bookkeeping only: a read-only or busy store still answers the query
