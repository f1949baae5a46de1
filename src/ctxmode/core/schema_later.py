"""The migrations from m011 on, kept out of ``schema.py`` so that module stays under the size
limit; ``schema.MIGRATIONS`` lists them in their places. Append new ones here."""

from __future__ import annotations

import sqlite3


def m011_history_import(conn: sqlite3.Connection) -> None:
    """Transcripts read by ``ctxmode history import`` (offset, size and mtime then: an unchanged
    file is skipped, a grown one continued) and the knowledge candidates of ``ctxmode inbox``
    (evidence, rank, open/accepted/rejected; ``key`` = kind + normalised text, one per statement).
    """
    conn.executescript(
        """
        CREATE TABLE history_files (
            path TEXT PRIMARY KEY, agent TEXT NOT NULL, session_id TEXT,
            offset INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0,
            mtime_ns INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(state)),
            skipped TEXT, imported_at INTEGER NOT NULL
        );
        CREATE INDEX idx_history_files_session ON history_files(session_id);
        CREATE TABLE candidates (
            id INTEGER PRIMARY KEY, kind TEXT NOT NULL, text TEXT NOT NULL,
            key TEXT NOT NULL UNIQUE,
            evidence TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(evidence)),
            score REAL NOT NULL DEFAULT 0, status TEXT NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'accepted', 'rejected')),
            context_id INTEGER REFERENCES contexts(id) ON DELETE SET NULL,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
        );
        CREATE INDEX idx_candidates_rank ON candidates(status, score DESC);
        """
    )


def m012_link_baselines(conn: sqlite3.Connection) -> None:
    """``linked_hash``: a file's hash when the link was made; the context is stale while the
    file differs (``knowledge.lifecycle.refresh_files``). NULL: the file was missing then (planned).
    Links of contexts already stale get ``''`` (unknown baseline): stale until refreshed."""
    conn.executescript(
        """
        ALTER TABLE context_file_map ADD COLUMN linked_hash TEXT;
        UPDATE context_file_map SET linked_hash = CASE
            WHEN (SELECT stale FROM contexts WHERE id = context_id) != 0 THEN ''
            ELSE (SELECT hash FROM files WHERE id = file_id) END;
        """
    )


def m014_index_upkeep(conn: sqlite3.Connection) -> None:
    """Cheaper upkeep of the search index: FTS5 merges 8 segments at a time, and a folder
    source remembers what its last walk saw.

    ``search.indexing`` writes in short transactions (so hooks never wait), and each commit
    leaves a new segment in every FTS5 table it touched; with ``automerge`` 4 (the default),
    the merges that follow rewrite the same postings again and again. On a 3,139-file
    repository written in ~1,000 transactions, 8 took the trigram index's write time from 9.5
    to 5.7 s and the porter index's from 4.3 to 3.6 s (measured in isolation), for a few more
    segments per query. A configuration value of the tables only: nothing is rebuilt.

    ``source_walks.stamps``: for a folder source, the mtime of every folder its last walk went
    through and of every .gitignore that applied (``search.files.walk_unchanged``), so a
    refresh before each search skips the walk while none changed.
    """
    for table in ("search_fts", "search_trigram", "search_cjk"):
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', 8)")
    conn.execute(
        "CREATE TABLE source_walks (source_id INTEGER PRIMARY KEY "
        "REFERENCES sources(id) ON DELETE CASCADE, "
        "stamps TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(stamps)))"
    )
