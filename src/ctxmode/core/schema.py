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

from ctxmode.core.errors import NotACtxmodeDatabase, SchemaTooNew

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


def m003_search(conn: sqlite3.Connection) -> None:
    """Indexed documents, one search table over contexts/events/chunks, FTS5, sandbox usage.

    ``search_items`` mirrors every searchable row (kept in sync by triggers) and is the external
    content of two FTS5 indexes: ``search_fts`` (porter unicode61: words, stemming) and
    ``search_trigram`` (trigram: substrings and CJK).
    """
    conn.executescript(
        """
        CREATE TABLE sources (
            id INTEGER PRIMARY KEY,
            label TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL CHECK (kind IN ('file', 'url', 'content', 'sandbox', 'import')),
            location TEXT,
            content_hash TEXT,
            mtime REAL,
            bytes INTEGER NOT NULL DEFAULT 0,
            fetched_at INTEGER,
            expires_at INTEGER,
            indexed_at INTEGER NOT NULL
        );
        CREATE INDEX idx_sources_location ON sources(location);

        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            title TEXT NOT NULL,
            content TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'text',
            created_at INTEGER NOT NULL
        );
        CREATE INDEX idx_chunks_source ON chunks(source_id, ordinal);

        CREATE TABLE search_items (
            id INTEGER PRIMARY KEY,
            item_kind TEXT NOT NULL CHECK (item_kind IN ('context', 'event', 'chunk')),
            ref_id INTEGER NOT NULL,
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            source TEXT NOT NULL,
            type TEXT NOT NULL,
            session_id TEXT,
            created_at INTEGER NOT NULL,
            UNIQUE (item_kind, ref_id)
        );
        CREATE INDEX idx_search_items_source ON search_items(source, created_at);
        CREATE INDEX idx_search_items_type ON search_items(type);
        CREATE INDEX idx_search_items_session ON search_items(session_id)
            WHERE session_id IS NOT NULL;

        CREATE VIRTUAL TABLE search_fts USING fts5(
            title, body, content='search_items', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE search_trigram USING fts5(
            title, body, content='search_items', content_rowid='id', tokenize='trigram'
        );

        CREATE TRIGGER search_items_ai AFTER INSERT ON search_items BEGIN
            INSERT INTO search_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
            INSERT INTO search_trigram(rowid, title, body) VALUES (new.id, new.title, new.body);
        END;
        CREATE TRIGGER search_items_ad AFTER DELETE ON search_items BEGIN
            INSERT INTO search_fts(search_fts, rowid, title, body)
                VALUES ('delete', old.id, old.title, old.body);
            INSERT INTO search_trigram(search_trigram, rowid, title, body)
                VALUES ('delete', old.id, old.title, old.body);
        END;
        CREATE TRIGGER search_items_au AFTER UPDATE ON search_items BEGIN
            INSERT INTO search_fts(search_fts, rowid, title, body)
                VALUES ('delete', old.id, old.title, old.body);
            INSERT INTO search_trigram(search_trigram, rowid, title, body)
                VALUES ('delete', old.id, old.title, old.body);
            INSERT INTO search_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
            INSERT INTO search_trigram(rowid, title, body) VALUES (new.id, new.title, new.body);
        END;

        CREATE TRIGGER contexts_search_ai AFTER INSERT ON contexts BEGIN
            INSERT INTO search_items(item_kind, ref_id, title, body, source, type, session_id,
                                     created_at)
            VALUES ('context', new.id,
                    substr(substr(new.content, 1, instr(new.content || char(10), char(10)) - 1),
                           1, 120),
                    new.content, 'knowledge', new.type, new.session_id, new.created_at);
        END;
        CREATE TRIGGER contexts_search_au AFTER UPDATE OF content, type ON contexts BEGIN
            UPDATE search_items SET
                title = substr(substr(new.content, 1,
                               instr(new.content || char(10), char(10)) - 1), 1, 120),
                body = new.content, type = new.type
            WHERE item_kind = 'context' AND ref_id = new.id;
        END;
        CREATE TRIGGER contexts_search_ad AFTER DELETE ON contexts BEGIN
            DELETE FROM search_items WHERE item_kind = 'context' AND ref_id = old.id;
        END;

        CREATE TRIGGER events_search_ai AFTER INSERT ON events BEGIN
            INSERT INTO search_items(item_kind, ref_id, title, body, source, type, session_id,
                                     created_at)
            VALUES ('event', new.id, new.category || ': ' || new.type, new.data, 'events',
                    new.category, new.session_id, new.created_at);
        END;
        CREATE TRIGGER events_search_ad AFTER DELETE ON events BEGIN
            DELETE FROM search_items WHERE item_kind = 'event' AND ref_id = old.id;
        END;

        CREATE TRIGGER chunks_search_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO search_items(item_kind, ref_id, title, body, source, type, created_at)
            VALUES ('chunk', new.id, new.title, new.content,
                    (SELECT label FROM sources WHERE id = new.source_id), new.kind,
                    new.created_at);
        END;
        CREATE TRIGGER chunks_search_ad AFTER DELETE ON chunks BEGIN
            DELETE FROM search_items WHERE item_kind = 'chunk' AND ref_id = old.id;
        END;

        CREATE TABLE sandbox_runs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            language TEXT,
            bytes_produced INTEGER NOT NULL,
            bytes_returned INTEGER NOT NULL,
            source_label TEXT,
            exit_code INTEGER,
            duration_ms INTEGER,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX idx_sandbox_runs_created ON sandbox_runs(created_at);
        """
    )


def m004_indexing_extra(conn: sqlite3.Connection) -> None:
    """Per-file tracking for indexed sources, so a changed file re-indexes alone.

    ``chunks.path`` names the file (project-relative) a chunk came from; ``source_files`` holds
    each file's hash, mtime and size at indexing time (a directory source has many).
    """
    conn.executescript(
        """
        ALTER TABLE chunks ADD COLUMN path TEXT;
        CREATE INDEX idx_chunks_path ON chunks(source_id, path);
        CREATE TABLE source_files (
            source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            content_hash TEXT,
            mtime REAL,
            bytes INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (source_id, path)
        );
        CREATE INDEX idx_source_files_path ON source_files(path);
        """
    )


def m005_search_context(conn: sqlite3.Connection) -> None:
    """Neighbour context for search: ``search_items.context``, a third, low-weight FTS column.

    A document chunk is indexed with the ends (last 300 characters) of the two chunks just
    before it in the same source and file (``ordinal - 2`` and ``ordinal - 1``), copied when
    the chunk is inserted: the reply to a question, or the paragraph after a heading's first
    lines, then matches the words of what it answers. Search weights that column far below the
    title and body. Contexts and events keep an empty context. Only ``search_fts`` (porter) gets the
    column; ``search_trigram`` is unchanged. A chunk inserted before its predecessors (a later
    ordinal first) lacks their text.
    """
    conn.executescript(
        """
        DROP TRIGGER search_items_ai;
        DROP TRIGGER search_items_ad;
        DROP TRIGGER search_items_au;
        DROP TRIGGER chunks_search_ai;
        DROP TABLE search_fts;
        ALTER TABLE search_items ADD COLUMN context TEXT NOT NULL DEFAULT '';
        UPDATE search_items SET context = trim(
            coalesce((SELECT substr(p.content, -300) FROM chunks c
                      JOIN chunks p ON p.source_id = c.source_id AND p.path IS c.path
                      AND p.ordinal = c.ordinal - 2
                      WHERE c.id = search_items.ref_id ORDER BY p.id LIMIT 1), '')
            || ' ' ||
            coalesce((SELECT substr(p.content, -300) FROM chunks c
                      JOIN chunks p ON p.source_id = c.source_id AND p.path IS c.path
                      AND p.ordinal = c.ordinal - 1
                      WHERE c.id = search_items.ref_id ORDER BY p.id LIMIT 1), ''))
        WHERE item_kind = 'chunk';

        CREATE VIRTUAL TABLE search_fts USING fts5(
            title, body, context, content='search_items', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO search_fts(search_fts) VALUES ('rebuild');

        CREATE TRIGGER search_items_ai AFTER INSERT ON search_items BEGIN
            INSERT INTO search_fts(rowid, title, body, context)
                VALUES (new.id, new.title, new.body, new.context);
            INSERT INTO search_trigram(rowid, title, body) VALUES (new.id, new.title, new.body);
        END;
        CREATE TRIGGER search_items_ad AFTER DELETE ON search_items BEGIN
            INSERT INTO search_fts(search_fts, rowid, title, body, context)
                VALUES ('delete', old.id, old.title, old.body, old.context);
            INSERT INTO search_trigram(search_trigram, rowid, title, body)
                VALUES ('delete', old.id, old.title, old.body);
        END;
        CREATE TRIGGER search_items_au AFTER UPDATE ON search_items BEGIN
            INSERT INTO search_fts(search_fts, rowid, title, body, context)
                VALUES ('delete', old.id, old.title, old.body, old.context);
            INSERT INTO search_trigram(search_trigram, rowid, title, body)
                VALUES ('delete', old.id, old.title, old.body);
            INSERT INTO search_fts(rowid, title, body, context)
                VALUES (new.id, new.title, new.body, new.context);
            INSERT INTO search_trigram(rowid, title, body) VALUES (new.id, new.title, new.body);
        END;
        CREATE TRIGGER chunks_search_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO search_items(item_kind, ref_id, title, body, source, type, created_at,
                                     context)
            VALUES ('chunk', new.id, new.title, new.content,
                    (SELECT label FROM sources WHERE id = new.source_id), new.kind,
                    new.created_at,
                    trim(coalesce((SELECT substr(p.content, -300) FROM chunks p
                                   WHERE p.source_id = new.source_id AND p.path IS new.path
                                   AND p.ordinal = new.ordinal - 2
                                   ORDER BY p.id LIMIT 1), '')
                         || ' ' ||
                         coalesce((SELECT substr(p.content, -300) FROM chunks p
                                   WHERE p.source_id = new.source_id AND p.path IS new.path
                                   AND p.ordinal = new.ordinal - 1
                                   ORDER BY p.id LIMIT 1), '')));
        END;
        """
    )


def m006_search_edits(conn: sqlite3.Connection) -> None:
    """A counter of the changes to searchable items other than new ones: ``search_edits.n``.

    It moves when an item is updated or deleted, when a context's ``superseded_by`` changes
    (search shows that flag) and when a document chunk is inserted (a chunk's neighbours are
    read from ``chunks``). A new event or context does not move it, so a long-lived process
    that sees only new items since its last search (an agent's hooks write on every tool
    call) keeps what it read of the older ones (``search.cache``).
    """
    conn.executescript(
        """
        CREATE TABLE search_edits (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            n INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO search_edits (id, n) VALUES (1, 0);
        CREATE TRIGGER search_edits_au AFTER UPDATE ON search_items BEGIN
            UPDATE search_edits SET n = n + 1 WHERE id = 1;
        END;
        CREATE TRIGGER search_edits_ad AFTER DELETE ON search_items BEGIN
            UPDATE search_edits SET n = n + 1 WHERE id = 1;
        END;
        CREATE TRIGGER search_edits_superseded AFTER UPDATE OF superseded_by ON contexts BEGIN
            UPDATE search_edits SET n = n + 1 WHERE id = 1;
        END;
        CREATE TRIGGER search_edits_chunks AFTER INSERT ON chunks BEGIN
            UPDATE search_edits SET n = n + 1 WHERE id = 1;
        END;
        """
    )


def m007_file_knowledge(conn: sqlite3.Connection) -> None:
    """What the hooks injected into an agent's context, and quick access to glob links.

    ``injections``: one row per injection (``kind`` ``file`` for knowledge linked to an edited
    file, ``brief`` for the startup brief), the context ids it carried (a JSON array), its
    size in UTF-8 bytes and the session's ``compact_count`` at the time (a compaction drops
    earlier injections from the agent's context). ``ctxmode stats`` sums it.
    ``idx_files_glob``: linked paths holding a glob character (``src/auth/**``), so the hook
    reads those few rows instead of every linked file.
    """
    conn.executescript(
        """
        CREATE TABLE injections (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            path TEXT,
            context_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(context_ids)),
            bytes INTEGER NOT NULL,
            compact_count INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL
        );
        CREATE INDEX idx_injections_session ON injections(session_id, compact_count);
        CREATE INDEX idx_files_glob ON files(path) WHERE path GLOB '*[*?[]*';
        """
    )


def m008_search_cjk(conn: sqlite3.Connection) -> None:
    """Words inside CJK text: ``search_cjk``, an FTS5 table of character bigrams.

    Each searchable item whose title or body holds a CJK character (``cjk.CJK_GLOB``) gets a
    row (same row id) holding ``ctxmode_bigrams(title)`` and ``ctxmode_bigrams(body)``: the
    overlapping bigrams of its CJK runs and its other words (``core.cjk``). The table is
    contentless (the bigram text is derived, never read back), so a row is deleted with the
    bigrams of the old text, which the deterministic function gives again. Items without CJK
    get no row and cost the triggers one GLOB. Existing items are filled here. The analyser
    must never change under an existing table (deletes would miss): a new analyser needs a new
    migration that rebuilds the table.
    """
    # Written out, not read from ``core.cjk``: a shipped migration must not change with it.
    glob = "*[\u3040-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]*"
    guard_new = f"(new.title GLOB '{glob}' OR new.body GLOB '{glob}')"
    guard_old = f"(old.title GLOB '{glob}' OR old.body GLOB '{glob}')"
    f = "ctxmode_bigrams"
    conn.executescript(
        f"""
        CREATE VIRTUAL TABLE search_cjk USING fts5(
            title, body, content='', tokenize='unicode61 remove_diacritics 0'
        );
        INSERT INTO search_cjk(rowid, title, body)
            SELECT id, {f}(title), {f}(body) FROM search_items
            WHERE title GLOB '{glob}' OR body GLOB '{glob}';
        CREATE TRIGGER search_cjk_ai AFTER INSERT ON search_items WHEN {guard_new} BEGIN
            INSERT INTO search_cjk(rowid, title, body)
                VALUES (new.id, {f}(new.title), {f}(new.body));
        END;
        CREATE TRIGGER search_cjk_ad AFTER DELETE ON search_items WHEN {guard_old} BEGIN
            INSERT INTO search_cjk(search_cjk, rowid, title, body)
                VALUES ('delete', old.id, {f}(old.title), {f}(old.body));
        END;
        CREATE TRIGGER search_cjk_au AFTER UPDATE OF title, body ON search_items BEGIN
            INSERT INTO search_cjk(search_cjk, rowid, title, body)
                SELECT 'delete', old.id, {f}(old.title), {f}(old.body) WHERE {guard_old};
            INSERT INTO search_cjk(rowid, title, body)
                SELECT new.id, {f}(new.title), {f}(new.body) WHERE {guard_new};
        END;
        """
    )


def m009_rechunk_prose(conn: sqlite3.Connection) -> None:
    """Files chunked before prose was cut into passages are chunked again on the next refresh.

    A file one of whose text chunks is over 1,500 characters of long lines (200+ characters
    per line on average: prose without structure, which ``search.chunking.chunk_text`` now cuts at
    sentence ends) loses its recorded hash and mtime, so the next ``ctxmode index`` (or any
    refresh of its source) reads and chunks it again, with the usual progress bar. Nothing is
    deleted here: until then the old chunks stay searchable. Content indexed without a file
    (``index_content``) keeps its chunks.
    """
    conn.executescript(
        """
        UPDATE source_files SET content_hash = NULL, mtime = NULL
        WHERE EXISTS (
            SELECT 1 FROM chunks c
            WHERE c.source_id = source_files.source_id AND c.path = source_files.path
            AND c.kind = 'text' AND length(c.content) > 1500
            AND length(c.content)
                >= 200 * (1 + length(c.content) - length(replace(c.content, char(10), '')))
        );
        """
    )


def m010_team_shares(conn: sqlite3.Connection) -> None:
    """Contexts shared with the team as files under ``.context/shared`` (``exchange.team``).

    ``shared_items`` maps each file's stable id to its local context and keeps what both sides
    agreed on at the last sync (``item_hash``: a hash of the shared fields), so that a later
    change is known to be local, from the repository, or both (a conflict). ``file_stat`` and
    ``file_hash`` let a sync skip parsing a file whose stat did not move. ``team_state`` holds
    the folder's fingerprint and a counter of local edits to shared contexts (moved by
    triggers, which also flag the rows to read again: ``dirty``), so that "nothing changed"
    costs one stat and one row read, and a sync re-reads only the contexts that moved.
    """
    conn.executescript(
        """
        CREATE TABLE shared_items (
            stable_id TEXT PRIMARY KEY,
            context_id INTEGER UNIQUE REFERENCES contexts(id) ON DELETE SET NULL,
            file_name TEXT NOT NULL,
            item_hash TEXT,
            file_stat TEXT,
            file_hash TEXT,
            with_task INTEGER NOT NULL DEFAULT 1,
            removed_at INTEGER,
            synced_at INTEGER NOT NULL,
            dirty INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE team_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            fingerprint TEXT NOT NULL DEFAULT '',
            edits INTEGER NOT NULL DEFAULT 0,
            synced_edits INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO team_state (id) VALUES (1);
        CREATE TRIGGER team_edits_au
            AFTER UPDATE OF type, content, scope, owner, superseded_by, metadata ON contexts
            WHEN EXISTS (SELECT 1 FROM shared_items WHERE context_id = new.id)
            OR EXISTS (SELECT 1 FROM shared_items
                       WHERE context_id IN (new.superseded_by, old.superseded_by)) BEGIN
            UPDATE team_state SET edits = edits + 1 WHERE id = 1;
            UPDATE shared_items SET dirty = 1
                WHERE context_id IN (new.id, new.superseded_by, old.superseded_by);
        END;
        CREATE TRIGGER team_edits_bd BEFORE DELETE ON contexts
            WHEN EXISTS (SELECT 1 FROM shared_items WHERE context_id = old.id) BEGIN
            UPDATE team_state SET edits = edits + 1 WHERE id = 1;
        END;
        CREATE TRIGGER team_edits_files_ai AFTER INSERT ON context_file_map
            WHEN EXISTS (SELECT 1 FROM shared_items WHERE context_id = new.context_id) BEGIN
            UPDATE team_state SET edits = edits + 1 WHERE id = 1;
            UPDATE shared_items SET dirty = 1 WHERE context_id = new.context_id;
        END;
        CREATE TRIGGER team_edits_files_ad AFTER DELETE ON context_file_map
            WHEN EXISTS (SELECT 1 FROM shared_items WHERE context_id = old.context_id) BEGIN
            UPDATE team_state SET edits = edits + 1 WHERE id = 1;
            UPDATE shared_items SET dirty = 1 WHERE context_id = old.context_id;
        END;
        """
    )


def _later(module: str, name: str) -> Migration:
    """A migration of ``core.schema_later`` or ``core.index_schema``, imported only when run."""

    def run(conn: sqlite3.Connection) -> None:
        getattr(__import__(f"ctxmode.core.{module}", fromlist=[name]), name)(conn)

    run.__name__ = run.__qualname__ = name
    return run


#: Every migration, in the order it is applied. Append only.
MIGRATIONS: tuple[Migration, ...] = (
    m001_knowledge,
    m002_sessions,
    m003_search,
    m004_indexing_extra,
    m005_search_context,
    m006_search_edits,
    m007_file_knowledge,
    m008_search_cjk,
    m009_rechunk_prose,
    m010_team_shares,
    _later("schema_later", "m011_history_import"),
    _later("schema_later", "m012_link_baselines"),
    _later("index_schema", "m013_lean_chunks"),
    _later("schema_later", "m014_index_upkeep"),
    _later("index_schema", "m015_name_vocabulary"),
)
SCHEMA_VERSION = len(MIGRATIONS)


def applied_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def refuse_foreign(conn: sqlite3.Connection) -> None:
    """Raise ``NotACtxmodeDatabase`` when the file holds tables but no ctxmode migrations."""
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
        refuse_foreign(conn)
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
