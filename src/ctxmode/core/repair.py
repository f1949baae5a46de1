"""Repair a damaged store: in place when the damage is confined to what can be derived again.

``repair(path)`` is the entry point (hooks through ``repair_for_hook``, ``ctxmode doctor
--repair``, ``Database.open(recover=True)``). The search index (FTS5 tables and their shadow
tables) and every b-tree index are derived from the tables: a damaged page there costs a
rebuild of that structure in the same file (``rebuild``), not a copy of the whole store.
``diagnose`` finds what is damaged, table by table (``PRAGMA integrity_check(name)``, a full
read and a page walk of a table whose check fails, FTS5's own ``integrity-check``). Damage to a
table that holds data, or an in-place repair that fails, goes to ``db.salvage`` (every
readable row copied into a new store, the damaged file kept aside).

A damaged b-tree is never walked, not even to free it (``DROP TABLE`` and ``REINDEX`` do: a
child pointer overwritten by garbage can name a page of another table, which would then be
freed under it). Its entry in ``sqlite_master`` is removed or pointed at a new empty page
(``PRAGMA writable_schema``), the structure is created again, and ``VACUUM`` rewrites the file
(the same file: its inode does not change) without the pages nothing reaches any more. The
FTS5 tables are then filled again in short transactions (``index_schema.refill_fts``).

While a repair runs, a marker file (``config.repair_marker_for``) names its process, whether
it works in place, and the search indexes it still has to fill: hooks spool their calls
meanwhile, and a repair killed midway is finished by the next one.

Standard library only: the hook path calls it when a statement reports damage.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time

from ctxmode.core import config, db, index_schema
from ctxmode.core.errors import StoreUnavailable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


class Damage:
    """What ``diagnose`` found: the structures to rebuild and the tables whose rows are hurt."""

    __slots__ = ("fts", "indexes", "pages", "tables")

    def __init__(self) -> None:
        #: FTS5 tables whose index is damaged: recreated, then filled from their feeders.
        self.fts: list[str] = []
        #: b-tree indexes whose pages are damaged: rebuilt from their table.
        self.indexes: list[str] = []
        #: Tables whose rows cannot all be read: only a salvage (``core.salvage``) helps.
        self.tables: list[str] = []
        #: Problems outside any table (pages nothing uses, a damaged free list): ``VACUUM``.
        self.pages: list[str] = []

    @property
    def in_place(self) -> bool:
        """Whether ``rebuild`` can fix it in the same file (no table's rows are damaged)."""
        return not self.tables and bool(self.fts or self.indexes or self.pages)

    def describe(self) -> str:
        parts = []
        if self.tables:
            parts.append("rows of " + ", ".join(self.tables))
        if self.fts:
            parts.append("search index " + ", ".join(self.fts))
        if self.indexes:
            parts.append("index " + ", ".join(self.indexes))
        if self.pages and not (self.fts or self.indexes or self.tables):
            parts.append("unused or free pages")
        return "; ".join(parts) or "nothing"


def _ok(conn: sqlite3.Connection, name: str) -> bool:
    """``PRAGMA integrity_check`` of one table and its indexes (pages it does not reach are
    not looked at)."""
    try:
        rows = conn.execute(f'PRAGMA main.integrity_check("{name}")').fetchall()
    except sqlite3.DatabaseError:
        return False
    return [str(r[0]) for r in rows] == ["ok"]


def _reads(conn: sqlite3.Connection, table: str) -> bool:
    """Whether every row of ``table``, every column, reads without error (no index used),
    and its b-tree walks cleanly page by page (``dbstat``, where SQLite has it): a table whose
    check fails only then has only its indexes to blame."""
    cols = [str(r[1]) for r in conn.execute(f'PRAGMA main.table_info("{table}")')]
    probe = " + ".join(f'length("{c}")' for c in cols) or "1"
    try:
        conn.execute(f'SELECT sum({probe}) FROM main."{table}" NOT INDEXED').fetchone()
    except sqlite3.DatabaseError:
        return False
    try:
        conn.execute("SELECT count(*) FROM dbstat WHERE name = ?", (table,)).fetchone()
    except sqlite3.OperationalError as exc:
        return "no such table" in str(exc)  # a build without dbstat: the read above stands
    except sqlite3.DatabaseError:
        return False
    return True


def _fts_ok(conn: sqlite3.Connection, table: str) -> bool:
    """FTS5's own ``integrity-check`` (taken as passed where it cannot run: a read-only
    connection)."""
    try:
        conn.execute(f'INSERT INTO "{table}"("{table}") VALUES (\'integrity-check\')')
    except sqlite3.DatabaseError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
        if code in (11, 26) or "vtable constructor failed" in str(exc):
            return False
        if code == 8:  # SQLITE_READONLY: doctor's connection; the shadow tables' check stands
            return True
        raise  # locked, say: nothing is known yet
    return True


def diagnose(conn: sqlite3.Connection, log: Callable[[str], None] | None = None) -> Damage:
    """What is damaged in the file ``conn`` opened (in autocommit mode).

    Reads every table and index once (a large store takes seconds). An FTS5 table counts as
    derived when triggers feed it (``index_schema.fts_feeders``) or it indexes an external
    content table; one that holds its own content and that nothing feeds is data.
    """
    damage = Damage()
    fts = index_schema.fts_tables(conn)
    shadows = {t: index_schema.fts_shadows(conn, t) for t in fts}
    shadow_names = {s for names in shadows.values() for s in names}
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    tables = [str(n) for n, sql in rows if n not in fts and n not in shadow_names]
    for table in tables:
        if _ok(conn, table):
            continue
        if not _reads(conn, table):
            damage.tables.append(table)
            continue
        damage.indexes += [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (table,)
            )
        ]
    for table, create_sql in fts.items():
        if all(_ok(conn, s) for s in shadows[table]) and _fts_ok(conn, table):
            continue
        derived = index_schema.fts_feeders(conn, table) or "content=" in create_sql.lower().replace(
            " ", ""
        )
        (damage.fts if derived else damage.tables).append(table)
    if not (damage.fts or damage.indexes or damage.tables):
        try:
            rows = conn.execute("PRAGMA quick_check(20)").fetchall()
            problems = [str(r[0]) for r in rows]
        except sqlite3.DatabaseError as exc:
            problems = [str(exc)]
        if problems != ["ok"]:
            damage.pages = problems
    if log is not None:
        log(f"damaged: {damage.describe()}")
    return damage


class RepairFailed(Exception):
    """The in-place repair could not finish; a salvage (``core.salvage``) is the way left."""


def rebuild(
    conn: sqlite3.Connection,
    damage: Damage,
    log: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> str:
    """Rebuild what ``damage`` names in the file ``conn`` opened (autocommit mode, with the SQL
    functions the triggers call); return a one-line account. Raises ``RepairFailed``.

    Steps: one transaction edits the schema (damaged indexes point at new empty pages and are
    rebuilt from their tables by ``REINDEX``; damaged FTS5 tables are dropped from
    ``sqlite_master`` and created again, empty), ``VACUUM`` drops the pages nothing reaches
    any more, then each FTS5 table is filled again in short transactions. ``progress(table,
    done, total)`` follows the refill.
    """
    if not damage.in_place:
        raise RepairFailed(f"the rows of {', '.join(damage.tables)} are damaged")
    say = log or (lambda _text: None)
    try:
        _edit_schema(conn, damage)
        say("rebuilt " + ", ".join(damage.indexes) if damage.indexes else "no index to rebuild")
        conn.execute("VACUUM")
        say("VACUUM done: the file holds only reachable pages")
        filled = []
        for table in damage.fts:
            step = None if progress is None else _bind(progress, table)
            rows = index_schema.refill_fts(conn, table, step)
            filled.append(f"{table} ({rows} rows)")
            say(f"search index {table} filled again from {rows} rows")
        problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check(20)")]
        # ``VACUUM`` went through the write-ahead log (as large as the file): give it back now
        # rather than when the last connection closes.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except (sqlite3.Error, LookupError) as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
            raise  # another writer held on: the caller tries again later
        raise RepairFailed(f"{type(exc).__name__}: {exc}") from exc
    if problems != ["ok"]:
        raise RepairFailed("the file still fails its check: " + "; ".join(problems[:3]))
    done = [*filled, *damage.indexes] or ["the file's free pages"]
    return "rebuilt in place: " + ", ".join(done)


def _bind(progress: Callable[[str, int, int], None], table: str) -> Callable[[int, int], None]:
    return lambda done, total: progress(table, done, total)


def _edit_schema(conn: sqlite3.Connection, damage: Damage) -> None:
    """The schema edits of ``rebuild``, in one transaction."""
    fts = index_schema.fts_tables(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        blanks = []
        for number, _ in enumerate(damage.indexes):
            # A new empty index page for each damaged index (the table's rows never read).
            conn.execute(f'CREATE TABLE "ctxmode_blank_{number}"(x)')
            conn.execute(f'CREATE INDEX "ctxmode_blank_{number}_i" ON "ctxmode_blank_{number}"(x)')
            root = conn.execute(
                "SELECT rootpage FROM sqlite_master WHERE name = ?", (f"ctxmode_blank_{number}_i",)
            ).fetchone()[0]
            blanks.append(int(root))
        gone = [(t, fts[t], index_schema.fts_shadows(conn, t)) for t in damage.fts]
        version = int(conn.execute("PRAGMA schema_version").fetchone()[0])
        conn.execute("PRAGMA writable_schema = ON")
        try:
            for name, root in zip(damage.indexes, blanks, strict=True):
                conn.execute(
                    "UPDATE sqlite_master SET rootpage = ? WHERE type = 'index' AND name = ?",
                    (root, name),
                )
            conn.execute(
                "DELETE FROM sqlite_master WHERE name LIKE 'ctxmode\\_blank\\_%' ESCAPE '\\'"
            )
            for table, _, shadows in gone:
                for name in [table, *shadows]:
                    conn.execute("DELETE FROM sqlite_master WHERE name = ?", (name,))
            # The new version makes every connection (this one included) read the schema again.
            conn.execute(f"PRAGMA schema_version = {version + 1}")
        finally:
            conn.execute("PRAGMA writable_schema = OFF")
        for _, create_sql, _ in gone:
            conn.execute(create_sql)
        for name in damage.indexes:
            conn.execute(f'REINDEX "{name}"')
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# -- the repair of a store file: in place when it can, else a salvage; hooks spool meanwhile --

#: A repair whose marker is older than this (seconds) and whose process cannot be checked is
#: taken for dead.
_REPAIR_GRACE_S = 3600
#: A background repair is not started again sooner than this after the last (seconds).
_RESPAWN_S = 300


def _read_marker(path: str) -> tuple[int, list[str], bool] | None:
    """(process id, FTS tables left to fill, whether the repair works in place) from the
    repair marker of the store at ``path``; None without one. An unreadable marker reads as
    (0, [], False)."""
    try:
        with open(config.repair_marker_for(path), encoding="utf-8") as handle:
            parts = handle.read().split()
    except OSError:
        return None
    try:
        tables = [t for t in parts[1].split(",") if t and t != "-"] if len(parts) > 1 else []
        return int(parts[0]), tables, parts[2:3] == ["in-place"]
    except (ValueError, IndexError):
        return 0, [], False


def _write_marker(path: str, pid: int, tables: Sequence[str] = (), in_place: bool = False) -> None:
    marker = config.repair_marker_for(path)
    tmp = f"{marker}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        mode = "in-place" if in_place else "undecided"
        handle.write(f"{pid} {','.join(tables) or '-'} {mode}\n")
    os.replace(tmp, marker)


def repair_running(path: str) -> bool:
    """Whether a repair of the store at ``path`` is under way in a live process (its marker
    names one): hooks then keep their calls in the spool instead of writing."""
    state = _read_marker(path)
    if state is None:
        return False
    pid = state[0]
    if pid < 0:
        return False  # stopped by a lock held too long: the next hook resumes it
    if pid == 0:
        try:
            return time.time() - os.path.getmtime(config.repair_marker_for(path)) < 60
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False  # killed midway: the next repair takes over (``repair``)
    except OSError:
        pass  # another user's process: alive
    try:
        return time.time() - os.path.getmtime(config.repair_marker_for(path)) < _REPAIR_GRACE_S
    except OSError:
        return False


def repair_in_place_running(path: str) -> bool:
    """Whether the repair under way works in the same file (``repair``): then the store can
    be read and written meanwhile, at the cost of a wait for the lock now and then (hooks
    still spool the calls they can, so that the refill keeps its short transactions)."""
    state = _read_marker(path)
    return state is not None and state[2] and repair_running(path)


def repair_interrupted(path: str) -> list[str] | None:
    """The FTS tables a killed in-place repair left half filled (``[]``: it was killed before
    that step), or None when no repair was interrupted."""
    state = _read_marker(path)
    if state is None or repair_running(path):
        return None
    return state[1]


def repair_due(path: str) -> bool:
    """Whether a repair marker waits for this process: one a hook left for the repair it
    started here (or that claimed it), or one a killed repair left."""
    state = _read_marker(path)
    return state is not None and (state[0] in (0, os.getpid()) or not repair_running(path))


def repair(
    path: str,
    log: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[str, str | None]:
    """Repair the damaged store at ``path``: ``(account, where the damaged file was moved)``.

    When only derived structures are damaged (the search index, b-tree indexes, unused pages;
    ``diagnose``) they are rebuilt in the same file and nothing is moved (None).
    Otherwise, or when that fails, every readable row is copied into a new store
    (``db.salvage``).
    A marker file (``config.repair_marker_for``) names the process while it works, so hooks
    spool their calls meanwhile; an in-place repair killed midway is finished by the next.
    """
    say = log or (lambda _text: None)
    state = _read_marker(path)
    if state is not None and state[0] not in (0, os.getpid()) and repair_running(path):
        raise StoreUnavailable(
            f"a repair of {path} is under way (process {state[0]}); wait for it to end"
        )
    left = [] if state is None else state[1]
    _write_marker(path, os.getpid(), left)
    pending: list[str] = left
    try:
        try:
            conn = db.connect(path)
        except sqlite3.Error as exc:
            say(f"cannot open {path} ({exc}): copying what is readable")
        else:
            try:
                damage = diagnose(conn, say)
                present = index_schema.fts_tables(conn)  # a migration may have dropped one
                damage.fts += [t for t in left if t in present and t not in damage.fts]
                if damage.in_place:
                    pending = damage.fts
                    _write_marker(path, os.getpid(), pending, in_place=True)
                    account = rebuild(conn, damage, say, progress)
                    pending = []
                    return account, None
                if not damage.tables:
                    return "nothing to repair", None
            except sqlite3.OperationalError as exc:
                if not db.is_locked(exc):
                    say(f"in-place repair failed ({exc}): copying what is readable")
                else:  # another writer held on past the busy timeout: the next call resumes
                    if pending:
                        _write_marker(path, -1, pending)
                    raise db.translate_sqlite_error(exc, path) from exc
            except (RepairFailed, sqlite3.Error) as exc:
                say(f"in-place repair failed ({exc}): copying what is readable")
            finally:
                conn.close()
        moved, report = db.salvage(path, log)
        pending = []
        return f"copied {report.summary()} into a new store", moved
    finally:
        if not pending:
            try:  # noqa: SIM105 - contextlib costs a hook ~1.6 ms to import
                os.remove(config.repair_marker_for(path))
            except OSError:
                pass


def repair_for_hook(
    path: str, log: Callable[[str], None] | None = None
) -> tuple[str, str | None] | None:
    """``repair`` a store up to ``config.hook_repair_max_bytes()`` now; for a larger one start
    ``ctxmode doctor --repair`` in a detached process (once) and return ``None``."""
    if repair_running(path):
        return None
    if os.path.getsize(path) <= config.hook_repair_max_bytes():
        return repair(path, log)
    import subprocess

    try:
        if time.time() - os.path.getmtime(config.repair_marker_for(path)) < _RESPAWN_S:
            return None  # one started lately did not finish: not one process per tool call
    except OSError:
        pass
    _write_marker(path, 0)  # claims the repair for the process below (``repair_running``)
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "ctxmode", "--db", path, "doctor", "--repair"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        state = _read_marker(path)
        if state is not None and state[0] == 0:
            _write_marker(path, child.pid, state[1])
    except OSError:
        pass
    return None
