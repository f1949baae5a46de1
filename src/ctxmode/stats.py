"""Measured usage figures of one store: what it holds and what it saved.

Every number here is counted from the database at the time of the call (nothing is estimated
or cached): contexts per type and tier, tasks per status, events per category and per day,
sessions, resume snapshots built and their sizes, what the hooks injected (``injections``:
knowledge linked to edited files and the startup brief, as counted and sized when recorded),
and the bytes the sandbox kept out of the agent's context (``bytes_produced -
bytes_returned`` over ``sandbox_runs``). Read-only.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ctxmode.core.errors import StoreError
from ctxmode.core.models import CONTEXT_TYPES, TASK_STATUSES, TYPE_TIERS
from ctxmode.core.schema import applied_version

if TYPE_CHECKING:
    from pathlib import Path

    from ctxmode.core.db import Database

#: Days covered by ``events_per_day`` unless the caller asks for another span.
DEFAULT_DAYS = 30


@dataclass(frozen=True)
class SnapshotStats:
    """Resume snapshots built (rows of ``session_resume``) and their sizes in bytes."""

    built: int
    consumed: int
    total_bytes: int
    min_bytes: int
    max_bytes: int
    mean_bytes: float
    last_bytes: int | None
    last_created_at: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "built": self.built,
            "consumed": self.consumed,
            "total_bytes": self.total_bytes,
            "min_bytes": self.min_bytes,
            "max_bytes": self.max_bytes,
            "mean_bytes": round(self.mean_bytes, 1),
            "last_bytes": self.last_bytes,
            "last_created_at": self.last_created_at,
        }


@dataclass(frozen=True)
class SandboxStats:
    """Sandbox runs and fetched pages (rows of ``sandbox_runs``), and the bytes they kept out of
    the agent's context window: what commands printed and pages held, less what was returned.

    ``runs`` counts every row, fetches included; ``bytes_produced`` is command output only,
    ``bytes_fetched`` page bytes downloaded; ``by_kind`` has the three figures per kind
    (``execute``, ``batch``, ``file``, ``fetch``).
    """

    runs: int
    bytes_produced: int
    bytes_fetched: int
    bytes_returned: int
    by_kind: dict[str, dict[str, int]]

    @property
    def bytes_kept_out(self) -> int:
        return max(0, self.bytes_produced + self.bytes_fetched - self.bytes_returned)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "bytes_produced": self.bytes_produced,
            "bytes_fetched": self.bytes_fetched,
            "bytes_returned": self.bytes_returned,
            "bytes_kept_out": self.bytes_kept_out,
            "by_kind": {k: dict(v) for k, v in self.by_kind.items()},
        }


@dataclass(frozen=True)
class Stats:
    """Everything ``ctxmode stats`` reports; dict fields are ordered for display."""

    db_path: str
    db_bytes: int
    schema_version: int
    contexts_by_type: dict[str, int]
    contexts_by_tier: dict[int, int]
    contexts_live: int
    contexts_superseded: int
    contexts_stale: int
    contexts_archived: int
    tasks_by_status: dict[str, int]
    files: int
    events_by_category: dict[str, int]
    sessions: int
    snapshots: SnapshotStats
    sandbox: SandboxStats
    events_per_day: tuple[tuple[str, int], ...]
    #: kind (``file``, ``brief``) -> {"count", "bytes", "contexts"} over ``injections``.
    injections: dict[str, dict[str, int]]
    measured_at: int
    #: Bytes of the file per part (``space_by_part``); empty when SQLite lacks ``dbstat``.
    space: dict[str, int] = field(default_factory=dict)

    @property
    def contexts_total(self) -> int:
        return sum(self.contexts_by_type.values())

    @property
    def events_total(self) -> int:
        return sum(self.events_by_category.values())

    @property
    def tasks_total(self) -> int:
        return sum(self.tasks_by_status.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "db_path": self.db_path,
            "space": self.space,
            "db_bytes": self.db_bytes,
            "schema_version": self.schema_version,
            "contexts": {
                "total": self.contexts_total,
                "live": self.contexts_live,
                "superseded": self.contexts_superseded,
                "stale": self.contexts_stale,
                "archived": self.contexts_archived,
                "by_type": dict(self.contexts_by_type),
                "by_tier": {str(k): v for k, v in self.contexts_by_tier.items()},
            },
            "tasks": {"total": self.tasks_total, "by_status": dict(self.tasks_by_status)},
            "files": self.files,
            "events": {"total": self.events_total, "by_category": dict(self.events_by_category)},
            "sessions": self.sessions,
            "snapshots": self.snapshots.to_dict(),
            "sandbox": self.sandbox.to_dict(),
            "injections": {k: dict(v) for k, v in self.injections.items()},
            "events_per_day": [{"day": d, "events": n} for d, n in self.events_per_day],
            "measured_at": self.measured_at,
        }


def db_size(path: Path) -> int:
    """Bytes on disk of a store: the main file plus its WAL (uncheckpointed pages count too)."""
    total = 0
    for candidate in (path, path.with_name(path.name + "-wal")):
        try:
            total += candidate.stat().st_size
        except OSError:
            continue
    return total


def _counts(store: Database, sql: str, params: tuple[Any, ...] = ()) -> dict[Any, int]:
    return {row[0]: int(row[1]) for row in store.conn.execute(sql, params)}


def events_per_day(
    store: Database, days: int = DEFAULT_DAYS, now: int | None = None
) -> tuple[tuple[str, int], ...]:
    """Events recorded on each of the last ``days`` UTC days (oldest first, zeros included)."""
    days = max(1, min(days, 3660))
    ts = int(now if now is not None else time.time())
    last = datetime.fromtimestamp(ts, UTC).date()
    first = last - timedelta(days=days - 1)
    start = int(datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp())
    counted = _counts(
        store,
        "SELECT date(created_at, 'unixepoch') AS day, COUNT(*) FROM events "
        "WHERE created_at >= ? AND created_at < ? GROUP BY day",
        (start, start + days * 86_400),
    )
    out: list[tuple[str, int]] = []
    for offset in range(days):
        day: date = first + timedelta(days=offset)
        key = day.isoformat()
        out.append((key, counted.get(key, 0)))
    return tuple(out)


def snapshot_stats(store: Database) -> SnapshotStats:
    """Counts and sizes of the stored resume snapshots."""
    row = store.conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(consumed != 0), 0), COALESCE(SUM(bytes), 0), "
        "COALESCE(MIN(bytes), 0), COALESCE(MAX(bytes), 0), COALESCE(AVG(bytes), 0.0) "
        "FROM session_resume"
    ).fetchone()
    last = store.conn.execute(
        "SELECT bytes, created_at FROM session_resume ORDER BY created_at DESC, id DESC LIMIT 1"
    ).fetchone()
    return SnapshotStats(
        built=int(row[0]),
        consumed=int(row[1]),
        total_bytes=int(row[2]),
        min_bytes=int(row[3]),
        max_bytes=int(row[4]),
        mean_bytes=float(row[5]),
        last_bytes=int(last[0]) if last else None,
        last_created_at=int(last[1]) if last else None,
    )


def sandbox_line(sb: SandboxStats) -> str:
    """One line for people: runs, bytes produced and fetched, returned, kept out."""
    return (
        f"{sb.runs} runs, {sb.bytes_produced} bytes produced + {sb.bytes_fetched} fetched, "
        f"{sb.bytes_returned} returned, {sb.bytes_kept_out} kept out of context"
    )


def sandbox_stats(store: Database) -> SandboxStats:
    """Totals over ``sandbox_runs``, per kind and overall (fetched pages apart)."""
    rows = store.conn.execute(
        "SELECT kind, COUNT(*), COALESCE(SUM(bytes_produced), 0), COALESCE(SUM(bytes_returned), 0) "
        "FROM sandbox_runs GROUP BY kind ORDER BY kind"
    ).fetchall()
    by_kind = {
        str(k): {"runs": int(n), "bytes_produced": int(p), "bytes_returned": int(r)}
        for k, n, p, r in rows
    }
    return SandboxStats(
        runs=sum(v["runs"] for v in by_kind.values()),
        bytes_produced=sum(v["bytes_produced"] for k, v in by_kind.items() if k != "fetch"),
        bytes_fetched=by_kind.get("fetch", {}).get("bytes_produced", 0),
        bytes_returned=sum(v["bytes_returned"] for v in by_kind.values()),
        by_kind=by_kind,
    )


#: Kinds of ``injections`` rows, always reported (zero when none).
INJECTION_KINDS = ("file", "brief")


def injection_stats(store: Database) -> dict[str, dict[str, int]]:
    """Injections recorded per kind: how many, their UTF-8 bytes, the contexts they carried."""
    out = {k: {"count": 0, "bytes": 0, "contexts": 0} for k in INJECTION_KINDS}
    for kind, count, nbytes, contexts in store.conn.execute(
        "SELECT kind, COUNT(*), COALESCE(SUM(bytes), 0), COALESCE(SUM(json_array_length("
        "context_ids)), 0) FROM injections GROUP BY kind ORDER BY kind"
    ):
        out[str(kind)] = {"count": int(count), "bytes": int(nbytes), "contexts": int(contexts)}
    return out


def injection_line(injections: dict[str, dict[str, int]]) -> str:
    """One line for people: file-knowledge and brief injections, with their bytes."""
    f, b = injections.get("file", {}), injections.get("brief", {})
    return (
        f"{f.get('count', 0)} file knowledge ({f.get('contexts', 0)} contexts, "
        f"{f.get('bytes', 0)} bytes), {b.get('count', 0)} briefs ({b.get('bytes', 0)} bytes)"
    )


#: Parts of the store, by the name of a table or index (first matching prefix wins).
_PARTS = (
    ("events", ("events", "idx_events")),
    ("documents", ("chunks", "sources", "source_", "idx_chunks", "idx_source")),
    ("search index (and document text)", ("search_", "idx_search", "sqlite_autoindex_search")),
    (
        "sessions and snapshots",
        ("sessions", "session_resume", "hook_state", "injections", "idx_sessions", "idx_resume",
         "idx_injections", "sqlite_autoindex_hook_state", "sqlite_autoindex_sessions"),
    ),
    (
        "knowledge",
        ("contexts", "tasks", "files", "context_", "shared_items", "team_state", "idx_contexts",
         "idx_tasks", "idx_ctm", "idx_cfm", "idx_files", "sqlite_autoindex_context",
         "sqlite_autoindex_files", "sqlite_autoindex_shared"),
    ),
)  # fmt: skip


def space_by_part(conn: Any) -> dict[str, int]:
    """What takes the space: bytes of each part of the file (``dbstat``), largest first, with
    the free pages that ``VACUUM`` would give back. Empty when SQLite lacks ``dbstat``."""
    import sqlite3

    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    except sqlite3.Error:
        return {}
    out: dict[str, int] = {}
    for name, size in rows:
        part = next(
            (label for label, prefixes in _PARTS if str(name).startswith(prefixes)), "other"
        )
        out[part] = out.get(part, 0) + int(size or 0)
    if free:
        out["free (VACUUM gives it back)"] = int(free) * int(page)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def collect(store: Database, *, days: int = DEFAULT_DAYS, now: int | None = None) -> Stats:
    """Measure the store now (one consistent read transaction)."""
    from ctxmode.knowledge.lifecycle import refresh_files

    ts = int(now if now is not None else time.time())
    conn = store.conn
    # The stale count says what the disk holds now, not what the last query saw.
    with contextlib.suppress(StoreError):
        refresh_files(store, now=ts)
    # One read transaction so that the figures agree with each other under concurrent writers.
    own_txn = not conn.in_transaction
    if own_txn:
        conn.execute("BEGIN")
    try:
        by_type = dict.fromkeys(CONTEXT_TYPES, 0)
        by_type.update(_counts(store, "SELECT type, COUNT(*) FROM contexts GROUP BY type"))
        by_tier = dict.fromkeys(sorted(set(TYPE_TIERS.values())), 0)
        by_tier.update(_counts(store, "SELECT tier, COUNT(*) FROM contexts GROUP BY tier"))
        flags = conn.execute(
            "SELECT COALESCE(SUM(superseded_by IS NULL AND archived_at IS NULL), 0), "
            "COALESCE(SUM(superseded_by IS NOT NULL), 0), COALESCE(SUM(stale != 0), 0), "
            "COALESCE(SUM(archived_at IS NOT NULL), 0) FROM contexts"
        ).fetchone()
        by_status = dict.fromkeys(TASK_STATUSES, 0)
        by_status.update(_counts(store, "SELECT status, COUNT(*) FROM tasks GROUP BY status"))
        by_category = _counts(
            store, "SELECT category, COUNT(*) FROM events GROUP BY category ORDER BY category"
        )
        stats = Stats(
            db_path=str(store.path),
            db_bytes=db_size(store.path),
            schema_version=applied_version(conn),
            contexts_by_type=by_type,
            contexts_by_tier=by_tier,
            contexts_live=int(flags[0]),
            contexts_superseded=int(flags[1]),
            contexts_stale=int(flags[2]),
            contexts_archived=int(flags[3]),
            tasks_by_status=by_status,
            files=int(conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]),
            events_by_category=by_category,
            sessions=int(conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]),
            snapshots=snapshot_stats(store),
            sandbox=sandbox_stats(store),
            events_per_day=events_per_day(store, days, ts),
            injections=injection_stats(store),
            measured_at=ts,
            space=space_by_part(conn),
        )
    finally:
        if own_txn:
            conn.execute("COMMIT")
    return stats
