"""The document name vocabulary (``core.index_schema.m015_name_vocabulary``): chunks' names are
stored once per store, found by substring, and written by the indexer in bulk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ctxmode import Store
from ctxmode.core import db as core_db
from ctxmode.core import schema as sch
from ctxmode.search.engine import search
from ctxmode.search.indexing import index_fresh_names, index_path

CODE = (
    "ACCESS_TTL = 3600\n\n\ndef get_current_user(token: str) -> str:\n"
    "    return decode(token)\n\n\nclass OAuth2PasswordBearer:\n    pass\n"
)


def _top_title(store: Store, query: str) -> str:
    hits = search(store, query).hits
    return hits[0].title if hits else ""


def test_chunks_names_are_in_the_vocabulary_not_in_the_trigram_index(
    store: Store, project: Path
) -> None:
    (project / "src").mkdir()
    (project / "src" / "auth.py").write_text(CODE + CODE.replace("ACCESS", "REFRESH"))
    index_path(store, "src")
    note = store.write_context("decision", "Frobnication\nkeep the frobnicator short").id
    names = {r[0] for r in store.conn.execute("SELECT name FROM search_names")}
    assert {"ACCESS_TTL", "REFRESH_TTL", "get_current_user", "OAuth2PasswordBearer"} <= names
    assert "decode" not in names and "return" not in names  # plain short words are not names
    (dupes,) = store.conn.execute(
        "SELECT count(*) - count(DISTINCT name) FROM search_names"
    ).fetchone()
    assert dupes == 0
    # Every name has its trigram row once the run ends; the trigram index holds no chunk.
    assert store.conn.execute("SELECT count(*) FROM search_names WHERE fresh = 1").fetchone() == (
        0,
    )
    (indexed,) = store.conn.execute(
        "SELECT count(*) FROM search_names_fts WHERE search_names_fts MATCH '\"_ttl\"'"
    ).fetchone()
    assert indexed == 2  # ACCESS_TTL, REFRESH_TTL
    trigram_rows = {
        r[0]
        for r in store.conn.execute(
            "SELECT rowid FROM search_trigram WHERE search_trigram MATCH '\"frobnicat\"'"
        )
    }
    item = store.conn.execute(
        "SELECT id FROM search_items WHERE item_kind = 'context' AND ref_id = ?", (note,)
    ).fetchone()[0]
    assert trigram_rows == {item}
    chunk_rows = store.conn.execute(
        "SELECT count(*) FROM search_trigram WHERE rowid IN "
        "(SELECT id FROM search_items WHERE item_kind = 'chunk')"
    ).fetchone()[0]
    assert chunk_rows == 0
    for query in ("ACCESS_TT", "current_us", "PasswordBear", "frobnicat"):
        assert search(store, query).hits, query


def test_a_name_inside_cjk_text_is_found_by_its_latin_part(store: Store, project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "zh.md").write_text(
        "# 教程\n\n我们用FastAPI框架和Pydantic模型写接口。\n", encoding="utf-8"
    )
    (project / "docs" / "en.md").write_text("# Guide\n\nNothing about frameworks here.\n")
    index_path(store, "docs")
    # unicode61 keeps "我们用fastapi框架和pydantic模型写接口" as one token: only the names
    # list (the vocabulary, then ``search_cjk``) finds the Latin part.
    assert _top_title(store, "fastap").startswith("docs/zh.md")
    assert _top_title(store, "pydant").startswith("docs/zh.md")


def test_names_not_yet_indexed_are_found_by_a_scan(store: Store, project: Path) -> None:
    """A run killed before ``index_fresh_names`` leaves fresh names: search still finds them,
    and the next run indexes them."""
    (project / "src").mkdir()
    (project / "src" / "auth.py").write_text(CODE)
    index_path(store, "src")
    with store.transaction() as conn:
        conn.execute("INSERT INTO search_names_fts(search_names_fts) VALUES ('delete-all')")
        conn.execute("UPDATE search_names SET fresh = 1")
    assert _top_title(store, "current_us").startswith("src/auth.py")
    total = store.conn.execute("SELECT count(*) FROM search_names").fetchone()[0]
    assert index_fresh_names(store) == total > 0
    assert index_fresh_names(store) == 0
    assert _top_title(store, "current_us").startswith("src/auth.py")
    store.conn.execute("INSERT INTO search_names_fts(search_names_fts) VALUES ('integrity-check')")


def test_a_chunk_inserted_with_its_text_gets_every_index(store: Store) -> None:
    """The trigger path (any writer inserting a chunk with its content) indexes it as the
    indexer does: porter, bigrams, and the vocabulary with its trigram rows."""
    with store.transaction() as conn:
        source = conn.execute(
            "INSERT INTO sources(label, kind, indexed_at) VALUES ('raw', 'content', 0)"
        ).lastrowid
        conn.execute(
            "INSERT INTO chunks(source_id, ordinal, title, content, kind, created_at) "
            "VALUES (?, 0, 'notes', '用FastAPI框架 and the frobnicator_limit', 'text', 0)",
            (source,),
        )
    assert store.conn.execute("SELECT content FROM chunks").fetchone() == ("",)
    assert search(store, "frobnicator").hits
    assert search(store, "frobnicator_lim").hits
    assert search(store, "框架").hits
    assert _top_title(store, "fastap") == "notes"
    for table in ("search_fts", "search_cjk", "search_names_fts"):
        store.conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")


def test_deleting_an_indexed_file_leaves_every_index_consistent(
    store: Store, project: Path
) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "zh.md").write_text("# 教程\n\n我们用FastAPI框架。\n", encoding="utf-8")
    (project / "docs" / "a.py").write_text(CODE)
    index_path(store, "docs")
    (project / "docs" / "zh.md").unlink()
    (project / "docs" / "a.py").write_text(CODE.replace("ACCESS_TTL", "SESSION_TTL"))
    index_path(store, "docs")
    for table in ("search_fts", "search_cjk", "search_trigram", "search_names_fts"):
        store.conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    assert not search(store, "框架").hits
    assert search(store, "SESSION_TT").hits


def _store_at_version_14(path: Path) -> None:
    """A store as ctxmode wrote it before the vocabulary: chunks' names in search_trigram."""
    conn = core_db.connect(str(path))
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
    assert sch.MIGRATIONS[13].__name__ == "m014_index_upkeep"
    for migration in sch.MIGRATIONS[:14]:
        sch._run_in_transaction(conn, migration)
        conn.execute("INSERT INTO _migrations VALUES (?, 0)", (migration.__name__,))
    source = conn.execute(
        "INSERT INTO sources(label, kind, indexed_at) VALUES ('old', 'content', 0)"
    ).lastrowid
    for ordinal, text in enumerate((CODE, "我们用FastAPI框架写接口。", "plain words only")):
        conn.execute(
            "INSERT INTO chunks(source_id, ordinal, title, content, kind, created_at) "
            "VALUES (?, ?, ?, ?, 'text', 0)",
            (source, ordinal, f"part {ordinal}", text),
        )
    conn.execute(
        "INSERT INTO contexts(type, tier, content, owner, content_hash, created_at, updated_at) "
        "VALUES ('decision', 1, 'Frobnication stays', 'me', 'h', 0, 0)"
    )
    conn.execute("PRAGMA user_version = 14")
    conn.execute("COMMIT")
    conn.close()


def test_a_store_of_version_14_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _store_at_version_14(path)
    before = sqlite3.connect(path)
    (trigram_chunks,) = before.execute(
        "SELECT count(*) FROM search_trigram WHERE search_trigram MATCH '\"current_us\"'"
    ).fetchone()
    before.close()
    assert trigram_chunks == 1
    with Store.open(path) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == sch.SCHEMA_VERSION
        names = {r[0] for r in store.conn.execute("SELECT name FROM search_names WHERE fresh = 0")}
        assert {"ACCESS_TTL", "get_current_user", "FastAPI"} <= names
        (left,) = store.conn.execute(
            "SELECT count(*) FROM search_trigram WHERE search_trigram MATCH '\"current_us\"'"
        ).fetchone()
        assert left == 0
        assert _top_title(store, "current_us") == "part 0"
        assert _top_title(store, "fastap") == "part 1"
        assert search(store, "frobnicat").hits
        for table in ("search_fts", "search_cjk", "search_trigram", "search_names_fts"):
            store.conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")


def test_gc_drops_names_no_indexed_file_holds(project: Path) -> None:
    """Names only grow while files are indexed; ``ctxmode gc`` drops the ones no chunk holds
    any more (a renamed constant, a deleted file) and keeps the others searchable."""
    import json

    from conftest import run_cli

    (project / "src").mkdir()
    (project / "src" / "auth.py").write_text(CODE)
    (project / "src" / "gone.py").write_text("LEGACY_SESSION_KEY = 1\n")
    assert run_cli("index", "src", cwd=project).returncode == 0
    (project / "src" / "auth.py").write_text(CODE.replace("ACCESS_TTL", "TOKEN_LIFETIME"))
    (project / "src" / "gone.py").unlink()
    assert run_cli("index", "src", cwd=project).returncode == 0
    db = project / ".context" / "context.db"

    def vocabulary() -> set[str]:
        with sqlite3.connect(db) as conn:
            return {r[0] for r in conn.execute("SELECT name FROM search_names")}

    assert {"ACCESS_TTL", "LEGACY_SESSION_KEY", "TOKEN_LIFETIME"} <= vocabulary()
    dry = json.loads(run_cli("gc", "--dry-run", "--json", cwd=project).stdout)
    assert dry["names"] == 2 and "ACCESS_TTL" in vocabulary()
    done = run_cli("gc", cwd=project)
    assert "drop 2 name(s) no indexed file holds any more" in done.stdout, done.stdout
    names = vocabulary()
    assert "ACCESS_TTL" not in names and "LEGACY_SESSION_KEY" not in names
    assert {"TOKEN_LIFETIME", "get_current_user", "OAuth2PasswordBearer"} <= names
    with Store.open(db) as store:
        store.conn.execute(
            "INSERT INTO search_names_fts(search_names_fts) VALUES ('integrity-check')"
        )
        assert _top_title(store, "TOKEN_LIFET").startswith("src/auth.py")
        assert not search(store, "LEGACY_SESS").hits
    assert json.loads(run_cli("gc", "--json", cwd=project).stdout)["names"] == 0


def test_no_fresh_name_means_no_write_lock(store: Store, project: Path) -> None:
    """Content, fetched pages and sandbox output are indexed one piece at a time, each followed
    by ``index_fresh_names``: with nothing fresh it only reads, so another writer holding
    the lock costs it nothing."""
    from ctxmode.core.errors import StoreUnavailable

    (project / "src").mkdir()
    (project / "src" / "auth.py").write_text(CODE)
    index_path(store, "src")
    other = sqlite3.connect(store.db_file, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        store.limit_lock_wait(50, 1)
        assert index_fresh_names(store) == 0
        other.execute("INSERT OR IGNORE INTO search_names(name) VALUES ('HELD_LOCK_NAME')")
        try:
            index_fresh_names(store)  # a fresh name committed by nobody yet: not visible
        except StoreUnavailable as exc:  # pragma: no cover - the assertion below says why
            raise AssertionError("took the write lock with nothing to do") from exc
    finally:
        other.execute("ROLLBACK")
        other.close()
