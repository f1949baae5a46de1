"""Migrations: a blank DB gets every table, column and index; refusals are clear."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ctxmode import NotACtxmodeDatabase, SchemaTooNew, Store
from ctxmode.core.errors import CorruptDatabase
from ctxmode.core.schema import MIGRATIONS, SCHEMA_VERSION

EXPECTED_COLUMNS = {
    "contexts": [
        "id", "type", "tier", "content", "metadata", "scope", "session_id", "owner",
        "content_hash", "superseded_by", "archived_at", "stale", "created_at", "updated_at",
        "last_accessed_at", "access_count",
    ],
    "tasks": ["id", "name", "status", "parent_id", "external_key", "created_at", "updated_at"],
    "context_task_map": ["context_id", "task_id", "relevance"],
    "files": ["id", "path", "hash", "last_indexed"],
    "context_file_map": ["context_id", "file_id", "relation_type", "linked_hash"],
    "sessions": [
        "session_id", "agent", "project_dir", "started_at", "last_event_at", "event_count",
        "compact_count", "ended_at",
    ],
    "events": [
        "id", "session_id", "agent", "category", "type", "priority", "data", "content_hash",
        "idempotency_key", "created_at",
    ],
    "session_resume": [
        "id", "session_id", "snapshot", "bytes", "event_count", "created_at", "consumed",
        "consumed_at",
    ],
    "hook_state": ["session_id", "key", "value", "updated_at"],
    "injections": [
        "id", "session_id", "kind", "path", "context_ids", "bytes", "compact_count", "created_at",
    ],
    "shared_items": [
        "stable_id", "context_id", "file_name", "item_hash", "file_stat", "file_hash",
        "with_task", "removed_at", "synced_at", "dirty",
    ],
    "team_state": ["id", "fingerprint", "edits", "synced_edits"],
    "_migrations": ["name", "applied_at"],
}  # fmt: skip

EXPECTED_INDEXES = {
    "idx_contexts_type": ("contexts", ["type"]),
    "idx_contexts_created": ("contexts", ["created_at"]),
    "idx_contexts_updated": ("contexts", ["updated_at"]),
    "idx_contexts_rank": ("contexts", ["scope", "tier", "updated_at"]),
    "idx_contexts_hash": ("contexts", ["content_hash"]),
    "idx_tasks_status": ("tasks", ["status"]),
    "idx_tasks_parent": ("tasks", ["parent_id"]),
    "idx_ctm_task": ("context_task_map", ["task_id", "context_id"]),
    "idx_cfm_file": ("context_file_map", ["file_id", "context_id"]),
    "idx_events_session": ("events", ["session_id", "id"]),
    "idx_injections_session": ("injections", ["session_id", "compact_count"]),
    "idx_files_glob": ("files", ["path"]),
}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def test_blank_db_gets_every_table_column_and_index(tmp_path: Path) -> None:
    path = tmp_path / "blank.db"
    with Store.open(path) as store:
        conn = store.conn
        for table, columns in EXPECTED_COLUMNS.items():
            assert _columns(conn, table) == columns, table
        for name, (table, cols) in EXPECTED_INDEXES.items():
            row = conn.execute(
                "SELECT tbl_name FROM sqlite_master WHERE type='index' AND name=?", (name,)
            ).fetchone()
            assert row == (table,), name
            assert [r[2] for r in conn.execute(f"PRAGMA index_info({name})")] == cols
        fks = {
            (r[2], r[3], r[4]) for r in conn.execute("PRAGMA foreign_key_list(context_task_map)")
        }
        assert fks == {("contexts", "context_id", "id"), ("tasks", "task_id", "id")}
        applied = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert applied == [m.__name__ for m in MIGRATIONS]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        virtual = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE '%fts5%'")
        }
        assert {"search_fts", "search_trigram"} <= virtual


def test_migrations_run_once(tmp_path: Path) -> None:
    path = tmp_path / "once.db"
    Store.open(path).close()
    with Store.open(path) as store:
        rows = store.conn.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0]
    assert rows == SCHEMA_VERSION


def test_every_connection_sets_the_pragmas(store: Store) -> None:
    conn = store.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_newer_schema_is_refused_without_guessing(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNew, match="upgrade ctxmode"):
        Store.open(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    conn.close()


def test_other_programs_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    conn.commit()
    conn.close()
    with pytest.raises(NotACtxmodeDatabase, match="invoices"):
        Store.open(path)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT total FROM invoices").fetchall() == [(9.5,)]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"invoices"}


def test_garbage_file_is_reported_and_recover_moves_it_aside(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CorruptDatabase, match="not a readable"):
        Store.open(path)
    with Store.open(path, recover=True) as store:
        assert store.recovered_from is not None
        assert store.recovered_from.read_bytes().startswith(b"this is not sqlite")
        assert store.write_context("decision", "fresh start").id == 1
