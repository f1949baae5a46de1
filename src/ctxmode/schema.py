"""Ordered, append-only schema migrations.

Each migration is a named function ``mNNN_description(conn)``; ``migrate`` applies the missing
ones in order, each in its own transaction together with its row in ``_migrations``, and keeps
``PRAGMA user_version`` equal to the number applied so that opening an up-to-date store costs a
single pragma read. Never edit a migration once it has shipped: append a new one.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from ctxmode.errors import NotACtxmodeDatabase, SchemaTooNew

Migration = Callable[[sqlite3.Connection], None]


def m001_knowledge(conn: sqlite3.Connection) -> None:
    """Contexts, the task tree, files and the links between them."""
    conn.executescript(
        """
        CREATE TABLE contexts (
            id INTEGER PRIMARY KEY,
            type TEXT NOT NULL,
            tier INTEGER NOT NULL,
            content TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
            scope TEXT NOT NULL DEFAULT 'global' CHECK (scope IN ('global', 'task', 'session')),
            session_id TEXT,
            owner TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            superseded_by INTEGER REFERENCES contexts(id) ON DELETE SET NULL,
            archived_at INTEGER,
            stale INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            last_accessed_at INTEGER,
            access_count INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX idx_contexts_type ON contexts(type);
        CREATE INDEX idx_contexts_created ON contexts(created_at);
        CREATE INDEX idx_contexts_updated ON contexts(updated_at);
        CREATE INDEX idx_contexts_rank ON contexts(scope, tier, updated_at DESC)
            WHERE superseded_by IS NULL;
        CREATE INDEX idx_contexts_hash ON contexts(content_hash);
        CREATE INDEX idx_contexts_superseded ON contexts(superseded_by);
        CREATE INDEX idx_contexts_session ON contexts(session_id) WHERE session_id IS NOT NULL;

        CREATE TABLE tasks (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            parent_id INTEGER REFERENCES tasks(id) ON DELETE SET NULL,
            external_key TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX idx_tasks_status ON tasks(status);
        CREATE INDEX idx_tasks_parent ON tasks(parent_id);
        CREATE UNIQUE INDEX idx_tasks_external ON tasks(external_key)
            WHERE external_key IS NOT NULL;

        CREATE TABLE context_task_map (
            context_id INTEGER NOT NULL REFERENCES contexts(id) ON DELETE CASCADE,
            task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
            relevance REAL NOT NULL DEFAULT 1.0,
            PRIMARY KEY (context_id, task_id)
        );
        CREATE INDEX idx_ctm_task ON context_task_map(task_id, context_id);

        CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            hash TEXT,
            last_indexed INTEGER
        );

        CREATE TABLE context_file_map (
            context_id INTEGER NOT NULL REFERENCES contexts(id) ON DELETE CASCADE,
            file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            relation_type TEXT NOT NULL DEFAULT 'related'
                CHECK (relation_type IN ('defines', 'uses', 'modifies', 'related')),
            PRIMARY KEY (context_id, file_id, relation_type)
        );
        CREATE INDEX idx_cfm_file ON context_file_map(file_id, context_id);
        """
    )


def m002_sessions(conn: sqlite3.Connection) -> None:
    """Session continuity: hook events, sessions, resume snapshots and detector state."""
    conn.executescript(
        """
        CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            project_dir TEXT,
            started_at INTEGER NOT NULL,
            last_event_at INTEGER NOT NULL,
            event_count INTEGER NOT NULL DEFAULT 0,
            compact_count INTEGER NOT NULL DEFAULT 0,
            ended_at INTEGER
        );
        CREATE INDEX idx_sessions_last ON sessions(last_event_at);

        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            agent TEXT NOT NULL,
            category TEXT NOT NULL,
            type TEXT NOT NULL,
            priority INTEGER NOT NULL CHECK (priority BETWEEN 1 AND 4),
            data TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(data)),
            content_hash TEXT NOT NULL,
            idempotency_key TEXT,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX idx_events_session ON events(session_id, id);
        CREATE INDEX idx_events_category ON events(session_id, category, id);
        CREATE INDEX idx_events_hash ON events(session_id, content_hash);
        CREATE INDEX idx_events_priority ON events(session_id, priority, id);
        CREATE INDEX idx_events_created ON events(created_at);
        CREATE UNIQUE INDEX idx_events_idem ON events(idempotency_key)
            WHERE idempotency_key IS NOT NULL;

        CREATE TABLE session_resume (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            snapshot TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            event_count INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            consumed INTEGER NOT NULL DEFAULT 0,
            consumed_at INTEGER
        );
        CREATE INDEX idx_resume_session ON session_resume(session_id, id);
        CREATE INDEX idx_resume_unconsumed ON session_resume(consumed, id);

        CREATE TABLE hook_state (
            session_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (session_id, key)
        );
        """
    )


#: Every migration, in the order it is applied. Append only.
MIGRATIONS: tuple[Migration, ...] = (m001_knowledge, m002_sessions)
SCHEMA_VERSION = len(MIGRATIONS)


def applied_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn`` up to ``SCHEMA_VERSION``; return the number of migrations applied.

    Refuses databases from a newer ctxmode and SQLite files that hold other programs' tables.
    The connection must be in autocommit mode (``isolation_level=None``).
    """
    version = applied_version(conn)
    if version == SCHEMA_VERSION:
        return 0
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"this database has schema version {version}, newer than the {SCHEMA_VERSION} this "
            "ctxmode knows; upgrade ctxmode (pip install -U ctxmode) to open it"
        )
    if version == 0:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        }
        if tables and "_migrations" not in tables:
            raise NotACtxmodeDatabase(
                "this SQLite file holds tables of another program "
                f"({', '.join(sorted(tables)[:5])}); point --db / CTXMODE_DB at a ctxmode store "
                "or at a path where a new one can be created"
            )
    applied = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have migrated meanwhile.
        version = applied_version(conn)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations "
            "(name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
        for index, migration in enumerate(MIGRATIONS, start=1):
            if index <= version or migration.__name__ in done:
                continue
            _run_in_transaction(conn, migration)
            conn.execute(
                "INSERT INTO _migrations(name, applied_at) VALUES (?, ?)",
                (migration.__name__, int(time.time())),
            )
            applied += 1
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied


def _run_in_transaction(conn: sqlite3.Connection, migration: Migration) -> None:
    migration(_InTransaction(conn))  # type: ignore[arg-type]


class _InTransaction:
    """Connection proxy whose ``executescript`` runs statement by statement.

    ``sqlite3.Connection.executescript`` commits any open transaction first, which would break
    the rule that a migration and its ``_migrations`` row commit together.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def executescript(self, script: str) -> None:
        for statement in _split_sql(script):
            self._conn.execute(statement)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def _split_sql(script: str) -> list[str]:
    """Split a script into complete statements (trigger bodies stay whole)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
