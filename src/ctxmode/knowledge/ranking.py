"""The ranking of ``query_context``: candidates for a file and/or task, in their final order.

``retrieval.query_context`` (the CLI, the MCP server) and ``follow`` (the edit hook) both rank
with ``select``, so a hook shows what a query would. This module is on the hook path: the
standard library's ``sqlite3`` and nothing heavier at import time (no dataclasses, typing,
pathlib; see ``core._lean``).

A file reaches the contexts linked to it, to a folder holding it (``src/auth`` for
``src/auth/tokens.py``, ``.`` for any project file) and to a glob matching it
(``src/auth/**``; ``*`` and ``?`` stay within one path segment, ``**`` spans any number).

Sort key: (tier, distance, newest updated_at, highest relevance, newest id). ``distance`` is 0
for a direct link, the ancestor depth for ancestors, 1 for a one-hop neighbour or a folder's
or glob's link (without a task; with one, file links sit at 5 and theirs at 6), and 9 for a
context included only because it is ``global`` (broad mode, or no file/task given). Putting
distance before recency is what makes a task's own decisions outrank its parent's.
"""

from __future__ import annotations

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence
    from typing import NamedTuple
else:
    from ctxmode.core._lean import NamedTuple

GLOBAL_DISTANCE = 9
UNRELATED_TASK_DISTANCE = 5
MAX_LIMIT = 1000
#: Characters that make a linked path a glob (the ``idx_files_glob`` partial index's test).
GLOB_CHARS = "*?["


class Candidate(NamedTuple):
    """The best route found to one context."""

    tier: int
    updated_at: int
    distance: int
    relevance: float
    via: str


#: (id, tier, updated_at) as every candidate query returns them.
Row = tuple[int, int, int]


def offer(pool: dict[int, Candidate], row: Row, distance: int, relevance: float, via: str) -> None:
    """Keep the best route to each context: one row per context however many links match."""
    cid = row[0]
    current = pool.get(cid)
    if current is None or (distance, -relevance) < (current.distance, -current.relevance):
        pool[cid] = Candidate(row[1], row[2], distance, relevance, via)


def rank_key(item: tuple[int, Candidate]) -> tuple[int, int, int, float, int]:
    cid, c = item
    return (c.tier, c.distance, -c.updated_at, -c.relevance, -cid)


def placeholders(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


class Visible(NamedTuple):
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
            where.append(f"c.type IN ({placeholders(self.types)})")
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
                f"WHERE v.context_id = c.id AND v.task_id IN ({placeholders(self.chain)})))"
            )
            params.extend(self.chain)
        where.append("(" + " OR ".join(scopes) + ")")
        return " AND ".join(where), params


_RANK = "ORDER BY c.tier, c.updated_at DESC, c.id DESC LIMIT ?"


def folders_of(rel: str) -> list[str]:
    """The folders holding a project-relative path, nearest first, then ``.`` (the root)."""
    parts = rel.split("/")
    out = ["/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]
    out = [p for p in out if p]
    if not rel.startswith("/") and rel != ".":
        out.append(".")
    return out


def glob_matches(pattern: str, rel: str) -> bool:
    """Whether ``rel`` matches ``pattern``, segment by segment (``**``: any number of them)."""
    from fnmatch import fnmatchcase

    pat, path = pattern.split("/"), rel.split("/")

    def walk(i: int, j: int) -> bool:
        while i < len(pat):
            if pat[i] == "**":
                return any(walk(i + 1, k) for k in range(j, len(path) + 1))
            if j >= len(path) or not fnmatchcase(path[j], pat[i]):
                return False
            i, j = i + 1, j + 1
        return j == len(path)

    return walk(0, 0)


def glob_links(conn: sqlite3.Connection, rel: str) -> list[int]:
    """Ids of linked glob paths that match ``rel``.

    The partial index ``idx_files_glob`` holds only the glob rows; SQLite's own GLOB (whose
    ``*`` and ``?`` also match ``/``, so it accepts a superset) drops in C the many that
    cannot match, and ``glob_matches`` decides on the rest. A ``**/`` may match no segment at
    all, which SQLite's GLOB would reject, so those patterns always go to ``glob_matches``.
    """
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT id, path FROM files WHERE path GLOB '*[*?[]*' "
            "AND (? GLOB path OR instr(path, '**/') > 0)",
            (rel,),
        )
        if glob_matches(str(r[1]), rel)
    ]


def linked_to_file(
    conn: sqlite3.Connection, rel: str, vis: Visible, limit: int
) -> list[tuple[Row, str]]:
    """(row, via) of the contexts linked to ``rel``, a folder holding it or a matching glob;
    ``via`` is ``file``, ``folder`` or ``glob``."""
    where, params = vis.sql()
    keys = [rel, *folders_of(rel)]
    globs = glob_links(conn, rel)
    match = f"f.path IN ({placeholders(keys)})"
    if globs:
        match = f"({match} OR f.id IN ({placeholders(globs)}))"
    best: dict[int, tuple[Row, str]] = {}
    for r in conn.execute(
        "SELECT c.id, c.tier, c.updated_at, f.path FROM files f "
        "JOIN context_file_map m ON m.file_id = f.id JOIN contexts c ON c.id = m.context_id "
        f"WHERE {match} AND {where} {_RANK}",
        (*keys, *globs, *params, limit),
    ):
        via = "file" if r[3] == rel else ("folder" if r[3] in keys else "glob")
        cid = int(r[0])
        if cid not in best or via == "file":
            best[cid] = ((cid, int(r[1]), int(r[2])), via)
    return list(best.values())


def linked_to_tasks(
    conn: sqlite3.Connection,
    task_ids: Sequence[int],
    vis: Visible,
    limit: int,
    among: Sequence[int] | None = None,
) -> list[tuple[Row, int, float]]:
    """(row, task id, relevance): the best ``limit`` contexts per task, in one statement."""
    if not task_ids:
        return []
    where, params = vis.sql()
    if among is not None:
        where += f" AND c.id IN ({placeholders(among)})"
        params = [*params, *among]
    return [
        ((int(r[0]), int(r[1]), int(r[2])), int(r[3]), float(r[4]))
        for r in conn.execute(
            "SELECT id, tier, updated_at, task_id, relevance FROM ("
            " SELECT c.id, c.tier, c.updated_at, m.task_id, m.relevance, ROW_NUMBER() OVER ("
            "  PARTITION BY m.task_id"
            "  ORDER BY c.tier, c.updated_at DESC, m.relevance DESC, c.id DESC) AS rn"
            " FROM context_task_map m JOIN contexts c ON c.id = m.context_id"
            f" WHERE m.task_id IN ({placeholders(task_ids)}) AND {where}"
            ") WHERE rn <= ?",
            (*task_ids, *params, limit),
        )
    ]


def hop(
    conn: sqlite3.Connection,
    via_table: str,
    key: str,
    seeds: Sequence[int],
    vis: Visible,
    limit: int,
) -> list[Row]:
    """Best-ranked contexts sharing a file (or task) with any of ``seeds``."""
    if not seeds:
        return []
    where, params = vis.sql()
    return [
        (int(r[0]), int(r[1]), int(r[2]))
        for r in conn.execute(
            f"SELECT c.id, c.tier, c.updated_at FROM contexts c WHERE c.id IN ("
            f" SELECT m2.context_id FROM {via_table} m1 JOIN {via_table} m2 ON m2.{key} = m1.{key}"
            f" WHERE m1.context_id IN ({placeholders(seeds)})) AND {where} {_RANK}",
            (*seeds, *params, limit),
        )
    ]


def global_top(conn: sqlite3.Connection, vis: Visible, limit: int) -> list[Row]:
    """Best-ranked global (and this session's) contexts: one index range scan per scope."""
    scopes = ("global", "session") if vis.session_id else ("global",)
    rows: list[Row] = []
    for scope in scopes:
        where, params = vis.sql(scope_override=scope)
        sql = f"SELECT c.id, c.tier, c.updated_at FROM contexts c WHERE {where} {_RANK}"
        rows += [(int(r[0]), int(r[1]), int(r[2])) for r in conn.execute(sql, (*params, limit))]
    return rows


def select(
    conn: sqlite3.Connection,
    *,
    rel: str | None,
    task_id: int | None,
    chain_depth: dict[int, int],
    vis: Visible,
    mode: str,
    limit: int,
) -> list[tuple[int, Candidate]]:
    """The ranked winners (at most ``limit``) for a file (``rel``) and/or a task.

    ``chain_depth`` maps the task and the ancestors the mode reaches to their depth.
    """
    pool: dict[int, Candidate] = {}
    if rel is not None:
        # The file narrows: only its contexts (and one hop from them) are candidates.
        direct = linked_to_file(conn, rel, vis, MAX_LIMIT)
        far = UNRELATED_TASK_DISTANCE if task_id is not None else 0
        for row, via in direct:
            # A folder's or a glob's link is one step away from the file, like a hop.
            offer(pool, row, far if via == "file" else far + 1, 1.0, via)
        if mode != "focused":
            seeds = [r[0] for r, _via in direct[:200]]
            for row in hop(conn, "context_task_map", "task_id", seeds, vis, limit):
                offer(pool, row, 1, 0.5, "hop")
        if task_id is not None:
            # ... and the task orders what the file selected.
            file_ids = list(pool)[:MAX_LIMIT]
            for row, tid, relevance in linked_to_tasks(
                conn, list(chain_depth), vis, MAX_LIMIT, file_ids
            ):
                depth = chain_depth[tid]
                via = "task" if depth == 0 else "ancestor"
                offer(pool, row, depth, relevance * 0.5**depth, via)
    elif task_id is not None:
        for row, tid, relevance in linked_to_tasks(conn, list(chain_depth), vis, limit):
            depth = chain_depth[tid]
            via = "task" if depth == 0 else "ancestor"
            offer(pool, row, depth, relevance * 0.5**depth, via)
        if mode != "focused":
            direct_ids = [cid for cid, c in pool.items() if c.distance == 0]
            for row in hop(conn, "context_file_map", "file_id", direct_ids[:200], vis, limit):
                offer(pool, row, 1, 0.5, "hop")
    if (rel is None and task_id is None) or mode == "broad":
        distance = GLOBAL_DISTANCE if (rel is not None or task_id is not None) else 0
        for row in global_top(conn, vis, limit):
            offer(pool, row, distance, 0.0, "global")
    return sorted(pool.items(), key=rank_key)[:limit]
