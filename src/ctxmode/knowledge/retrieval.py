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

import contextlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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

GLOBAL_DISTANCE = 9
UNRELATED_TASK_DISTANCE = 5
#: Share of a context window used as the budget when only the window size is given.
WINDOW_SHARE = 0.30
MAX_LIMIT = 1000
FOCUSED_TYPES = tuple(t for t, tier in TYPE_TIERS.items() if tier == 1) + ("snippet",)


@dataclass
class _Candidate:
    tier: int
    updated_at: int
    distance: int
    relevance: float
    via: str


#: (id, tier, updated_at) as every candidate query returns them.
_Row = tuple[int, int, int]


def _offer(
    pool: dict[int, _Candidate], row: _Row, distance: int, relevance: float, via: str
) -> None:
    """Keep the best route to each context: one row per context however many links match."""
    cid = row[0]
    current = pool.get(cid)
    if current is None or (distance, -relevance) < (current.distance, -current.relevance):
        pool[cid] = _Candidate(row[1], row[2], distance, relevance, via)


def _rank_key(item: tuple[int, _Candidate]) -> tuple[int, int, int, float, int]:
    cid, c = item
    return (c.tier, c.distance, -c.updated_at, -c.relevance, -cid)


def _types(context_type: str | Sequence[str] | None, mode: str) -> tuple[str, ...] | None:
    if context_type is None or context_type == ():
        return FOCUSED_TYPES if mode == "focused" else None
    wanted = (context_type,) if isinstance(context_type, str) else tuple(context_type)
    return tuple(check_type(t) for t in wanted)


def _placeholders(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


@dataclass(frozen=True)
class _Visible:
    """SQL filter on ``contexts c``: visibility (scope, supersession) plus the caller's filters.

    Every candidate query applies it and orders by the final rank, so each returns at most
    ``limit`` rows however many links a task or file has.
    """

    types: tuple[str, ...] | None
    owner: str | None
    session_id: str | None
    chain: tuple[int, ...]
    include_superseded: bool

    def sql(self, scope_override: str | None = None) -> tuple[str, list[object]]:
        """WHERE clause and parameters; ``scope_override`` keeps one scope (uses the index)."""
        where: list[str] = []
        params: list[object] = []
        if not self.include_superseded:
            where.append("c.superseded_by IS NULL AND c.archived_at IS NULL")
        if self.types:
            where.append(f"c.type IN ({_placeholders(self.types)})")
            params.extend(self.types)
        if self.owner is not None:
            where.append("c.owner = ?")
            params.append(self.owner)
        if scope_override == "global":
            where.append("c.scope = 'global'")
            return " AND ".join(where), params
        if scope_override == "session":
            where.append("c.scope = 'session' AND c.session_id = ?")
            params.append(self.session_id)
            return " AND ".join(where), params
        scopes = ["c.scope = 'global'"]
        if self.session_id:
            scopes.append("(c.scope = 'session' AND c.session_id = ?)")
            params.append(self.session_id)
        if self.chain:
            scopes.append(
                "(c.scope = 'task' AND EXISTS (SELECT 1 FROM context_task_map v "
                f"WHERE v.context_id = c.id AND v.task_id IN ({_placeholders(self.chain)})))"
            )
            params.extend(self.chain)
        where.append("(" + " OR ".join(scopes) + ")")
        return " AND ".join(where), params


_RANK = "ORDER BY c.tier, c.updated_at DESC, c.id DESC LIMIT ?"


def _linked_to_file(conn: sqlite3.Connection, rel: str, vis: _Visible, limit: int) -> list[_Row]:
    where, params = vis.sql()
    return [
        (int(r[0]), int(r[1]), int(r[2]))
        for r in conn.execute(
            "SELECT DISTINCT c.id, c.tier, c.updated_at FROM files f "
            "JOIN context_file_map m ON m.file_id = f.id JOIN contexts c ON c.id = m.context_id "
            f"WHERE f.path = ? AND {where} {_RANK}",
            (rel, *params, limit),
        )
    ]


def _linked_to_tasks(
    conn: sqlite3.Connection,
    task_ids: Sequence[int],
    vis: _Visible,
    limit: int,
    among: Sequence[int] | None = None,
) -> list[tuple[_Row, int, float]]:
    """(row, task id, relevance): the best ``limit`` contexts per task, in one statement."""
    if not task_ids:
        return []
    where, params = vis.sql()
    if among is not None:
        where += f" AND c.id IN ({_placeholders(among)})"
        params = [*params, *among]
    return [
        ((int(r[0]), int(r[1]), int(r[2])), int(r[3]), float(r[4]))
        for r in conn.execute(
            "SELECT id, tier, updated_at, task_id, relevance FROM ("
            " SELECT c.id, c.tier, c.updated_at, m.task_id, m.relevance, ROW_NUMBER() OVER ("
            "  PARTITION BY m.task_id"
            "  ORDER BY c.tier, c.updated_at DESC, m.relevance DESC, c.id DESC) AS rn"
            " FROM context_task_map m JOIN contexts c ON c.id = m.context_id"
            f" WHERE m.task_id IN ({_placeholders(task_ids)}) AND {where}"
            ") WHERE rn <= ?",
            (*task_ids, *params, limit),
        )
    ]


def _hop(
    conn: sqlite3.Connection,
    via_table: str,
    key: str,
    seeds: Sequence[int],
    vis: _Visible,
    limit: int,
) -> list[_Row]:
    """Best-ranked contexts sharing a file (or task) with any of ``seeds``."""
    if not seeds:
        return []
    where, params = vis.sql()
    return [
        (int(r[0]), int(r[1]), int(r[2]))
        for r in conn.execute(
            f"SELECT c.id, c.tier, c.updated_at FROM contexts c WHERE c.id IN ("
            f" SELECT m2.context_id FROM {via_table} m1 JOIN {via_table} m2 ON m2.{key} = m1.{key}"
            f" WHERE m1.context_id IN ({_placeholders(seeds)})) AND {where} {_RANK}",
            (*seeds, *params, limit),
        )
    ]


def _global_top(conn: sqlite3.Connection, vis: _Visible, limit: int) -> list[_Row]:
    """Best-ranked global (and this session's) contexts: one index range scan per scope."""
    scopes = ("global", "session") if vis.session_id else ("global",)
    rows: list[_Row] = []
    for scope in scopes:
        where, params = vis.sql(scope_override=scope)
        sql = f"SELECT c.id, c.tier, c.updated_at FROM contexts c WHERE {where} {_RANK}"
        rows += [(int(r[0]), int(r[1]), int(r[2])) for r in conn.execute(sql, (*params, limit))]
    return rows


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


def _check_positive(name: str, value: int | None, maximum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > maximum:
        raise InvalidInput(f"{name} must be an integer between 1 and {maximum}, got {value!r}")
    return value


def _mark_stale_if_changed(store: Database, rel: str) -> None:
    """Re-hash the queried file: a changed or deleted file marks its contexts stale."""
    from ctxmode.knowledge.lifecycle import refresh_files

    # A read-only store still answers queries, just without the stale mark.
    with contextlib.suppress(StoreError):
        refresh_files(store, paths=[rel])


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
    if rel is not None:
        _mark_stale_if_changed(store, rel)

    chain_depth: dict[int, int] = {}
    full_chain: tuple[int, ...] = ()
    if task_id is not None:
        ups = ancestors(conn, task_id)
        full_chain = (task_id, *ups)
        reach = {"focused": 0, "normal": 1, "broad": len(ups)}[mode]
        chain_depth = {t: depth for depth, t in enumerate(full_chain[: reach + 1])}
    vis = _Visible(types, owner, session_id, full_chain, include_superseded)

    pool: dict[int, _Candidate] = {}
    if rel is not None:
        # The file narrows: only its contexts (and one hop from them) are candidates.
        direct = _linked_to_file(conn, rel, vis, MAX_LIMIT)
        far = UNRELATED_TASK_DISTANCE if task_id is not None else 0
        for row in direct:
            _offer(pool, row, far, 1.0, "file")
        if mode != "focused":
            seeds = [r[0] for r in direct[:200]]
            for row in _hop(conn, "context_task_map", "task_id", seeds, vis, lim):
                _offer(pool, row, 1, 0.5, "hop")
        if task_id is not None:
            # ... and the task orders what the file selected.
            file_ids = list(pool)[:MAX_LIMIT]
            for row, tid, relevance in _linked_to_tasks(
                conn, list(chain_depth), vis, MAX_LIMIT, file_ids
            ):
                depth = chain_depth[tid]
                via = "task" if depth == 0 else "ancestor"
                _offer(pool, row, depth, relevance * 0.5**depth, via)
    elif task_id is not None:
        for row, tid, relevance in _linked_to_tasks(conn, list(chain_depth), vis, lim):
            depth = chain_depth[tid]
            via = "task" if depth == 0 else "ancestor"
            _offer(pool, row, depth, relevance * 0.5**depth, via)
        if mode != "focused":
            direct_ids = [cid for cid, c in pool.items() if c.distance == 0]
            for row in _hop(conn, "context_file_map", "file_id", direct_ids[:200], vis, lim):
                _offer(pool, row, 1, 0.5, "hop")
    if (rel is None and task_id is None) or mode == "broad":
        distance = GLOBAL_DISTANCE if (rel is not None or task_id is not None) else 0
        for row in _global_top(conn, vis, lim):
            _offer(pool, row, distance, 0.0, "global")

    # Rank on the keys the queries returned; load full rows for the winners only.
    winners = sorted(pool.items(), key=_rank_key)[:lim]
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
                f"WHERE id IN ({_placeholders(ids)})",
                (ts, *ids),
            )
    except StoreError:
        pass  # bookkeeping only: a read-only or busy store still answers the query
