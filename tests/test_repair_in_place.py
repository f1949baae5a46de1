"""Damage costs only what is damaged: a store whose damage is confined to the search index or
to an index is rebuilt in the same file (``core.repair``), never copied or moved aside.

Real stores (200 contexts, tasks, links, events, a folder of indexed documents), pages of one
structure overwritten on disk, then the real hook process or ``ctxmode doctor --repair``.
Damage to a table that holds data still goes through the full salvage; a hook that comes
while a large store is repaired in the background keeps its call in the spool, written once
the repair ends.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from _hardening import db_rows, hook_process, integrity, post_tool_use
from conftest import run_cli
from ctxmode import Store
from ctxmode.core import config

#: A word only the contexts hold, and one only the indexed documents hold.
CONTEXT_WORD = "quokkaware"
CHUNK_WORD = "zebrafishery"


def _store(project: Path) -> tuple[Path, dict[str, int]]:
    """A store with 200 contexts (some in Chinese), tasks and files linked to them, events and
    a folder of indexed documents, checkpointed into the main file; returns it and its row
    counts."""
    docs = project / "docs"
    docs.mkdir()
    for i in range(30):
        lines = [f"# Guide {i}", ""]
        lines += [
            f"Paragraph {j} of guide {i} explains get_current_user and ACCESS_TTL_{j} "
            f"with the {CHUNK_WORD} pattern, token rotation and dependency overrides."
            for j in range(40)
        ]
        (docs / f"guide{i}.md").write_text("\n".join(lines), encoding="utf-8")
    db = project / ".context" / "context.db"
    for i in range(20):
        payload = post_tool_use(project, "old-session", f"toolu_{i}", f"{project}/src/{i}.py")
        proc = hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project)
        assert proc.returncode == 0
    with Store.open(db) as store:
        tasks = [store.create_task(f"task {t}") for t in range(10)]
        for i in range(200):
            text = f"decision {i}: we use {CONTEXT_WORD} for part {i}. " + "because " * 20
            if i % 20 == 0:
                text += " 数据库连接池的配置说明"
            ctx = store.write_context("decision", text)
            store.link_task(ctx.id, tasks[i % 10].id)
            store.link_files(ctx.id, [f"docs/guide{i % 30}.md"])
        report = store.index_path(str(docs))
        assert report.chunks > 30
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db, _counts(db)


def _counts(db: Path) -> dict[str, int]:
    tables = (
        "contexts", "tasks", "context_task_map", "context_file_map", "events", "chunks",
        "search_items",
    )  # fmt: skip
    return {t: db_rows(db, f"SELECT count(*) FROM {t}")[0][0] for t in tables}


def _overwrite(db: Path, name: str) -> None:
    """Overwrite every page of table or index ``name`` but its first 8 bytes."""
    conn = sqlite3.connect(db)
    pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (name,))]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    assert pages, name
    data = bytearray(db.read_bytes())
    for page in pages:
        start = (page - 1) * size
        data[start + 8 : start + size] = os.urandom(size - 8)
    db.write_bytes(bytes(data))


def _sound(db: Path) -> bool:
    try:
        return integrity(db) == "ok"
    except sqlite3.DatabaseError:
        return False


def _assert_whole(db: Path, counts: dict[str, int], project: Path) -> None:
    """Every row is there, the file is sound, and search finds contexts and documents."""
    assert integrity(db) == "ok"
    now = _counts(db)
    kept = ("contexts", "tasks", "context_task_map", "context_file_map", "chunks")
    assert {t: now[t] for t in kept} == {t: counts[t] for t in kept}
    assert now["events"] >= counts["events"]
    conn = sqlite3.connect(db)
    for table in ("search_fts", "search_trigram", "search_cjk", "search_names_fts"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    conn.close()
    with Store.open(db) as store:
        assert store.search(CONTEXT_WORD, refresh=False).hits
        assert store.search(CHUNK_WORD, refresh=False).hits
        assert store.search("current_us", refresh=False).hits  # the substring index
        assert store.search("连接池", refresh=False).hits  # the CJK index
    assert not [p for p in db.parent.iterdir() if ".bad-" in p.name or p.name.endswith(".repair")]


#: Structures whose damage is rebuilt in place: FTS5 shadow tables of each index, an index of
#: the search items, and the automatic index of a UNIQUE constraint.
DERIVED = (
    "search_fts_data",
    "search_fts_idx",
    "search_trigram_data",
    "search_cjk_data",
    "idx_search_items_type",
    "sqlite_autoindex_search_items_1",
)


@pytest.mark.parametrize("name", DERIVED)
def test_the_next_hook_rebuilds_damaged_derived_pages_in_place(project: Path, name: str) -> None:
    db, counts = _store(project)
    inode = db.stat().st_ino
    _overwrite(db, name)
    assert not _sound(db)

    payload = post_tool_use(project, "new-session", "toolu_new", f"{project}/src/after.py")
    proc = hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project)
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr

    assert db.stat().st_ino == inode  # the same file, repaired where it lies
    _assert_whole(db, counts, project)
    rows = db_rows(db, "SELECT json_extract(data, '$.path') FROM events")
    assert (f"{project}/src/after.py",) in rows  # the call that found the damage is recorded
    log = (project / ".context" / "hooks.log").read_text(encoding="utf-8")
    assert "rebuilt in place" in log, log


@pytest.mark.parametrize(
    "name",
    # search_names_fts: only indexing and search touch it (no hook writes it)
    ["search_trigram_data", "search_trigram_docsize", "idx_contexts_type", "search_names_fts_data"],
)
def test_doctor_names_the_in_place_repair_and_does_it(project: Path, name: str) -> None:
    """Damage no write has touched yet (a hook would not notice it) is found by ``doctor``."""
    db, counts = _store(project)
    inode = db.stat().st_ino
    _overwrite(db, name)

    report = json.loads(run_cli("doctor", "--json", cwd=project).stdout)
    check = {c["name"]: c for c in report["checks"]}["integrity"]
    assert check["level"] == "FAIL"
    table = name.rsplit("_", 1)[0]  # search_trigram_data -> search_trigram
    what = "index idx_contexts_type" if name.startswith("idx") else f"search index {table}"
    assert what in check["fix"] and "in place" in check["fix"], check

    done = run_cli("doctor", "--repair", "--json", cwd=project)
    assert "rebuilt in place: " + what.split()[-1] in done.stderr, done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["integrity"]["level"] == "OK"
    assert checks["quarantine"]["level"] == "OK"
    assert db.stat().st_ino == inode
    _assert_whole(db, counts, project)


def test_damage_to_a_table_of_data_still_salvages_into_a_new_store(project: Path) -> None:
    db, counts = _store(project)
    _overwrite(db, "events")

    report = json.loads(run_cli("doctor", "--json", cwd=project).stdout)
    check = {c["name"]: c for c in report["checks"]}["integrity"]
    assert "copies every readable" in check["fix"] and "events" in check["message"]

    payload = post_tool_use(project, "new-session", "toolu_new", f"{project}/src/after.py")
    assert hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project).returncode == 0
    kept = [p for p in db.parent.glob("context.db.bad-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1
    assert integrity(db) == "ok"
    now = _counts(db)
    assert now["contexts"] == counts["contexts"] and now["tasks"] == counts["tasks"]
    assert "copied" in (project / ".context" / "hooks.log").read_text(encoding="utf-8")


def test_a_hook_during_a_background_repair_is_recorded_when_it_ends(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the size a hook repairs itself, the repair runs in the background
    (``ctxmode doctor --repair``); a hook meanwhile spools its call, which is in the store
    once the repair ends."""
    from ctxmode.core import repair

    db, counts = _store(project)
    inode = db.stat().st_ino
    _overwrite(db, "search_fts_data")
    monkeypatch.setenv(config.ENV_HOOK_REPAIR_MAX_BYTES, "1000")
    # A writer holds the lock: the repair, started, waits for it, as one on a large store
    # takes its time; the hook comes meanwhile.
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert repair.repair_for_hook(str(db)) is None
        assert repair.repair_for_hook(str(db)) is None  # under way: not started twice
        assert repair.repair_running(str(db))
        payload = post_tool_use(project, "during", "toolu_during", f"{project}/src/during.py")
        started = time.monotonic()
        proc = hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project)
        assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
        assert time.monotonic() - started < 4  # spooled at once, no wait for the lock
        assert list(Path(config.spool_dir_for(db)).glob("*.json"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and Path(config.repair_marker_for(db)).exists():
        time.sleep(0.2)
    assert not Path(config.repair_marker_for(db)).exists()
    assert db.stat().st_ino == inode
    rows = db_rows(db, "SELECT session_id, json_extract(data, '$.path') FROM events")
    assert ("during", f"{project}/src/during.py") in rows  # written by the repair at its end
    _assert_whole(db, counts, project)


#: A repair process killed (SIGKILL) after a batch of its refill past half way committed.
_KILLED_MIDWAY = """
import os, sys
from ctxmode.core import repair

def step(table, done, total):
    if total // 2 < done < total:
        os.kill(os.getpid(), 9)

repair.repair(sys.argv[1], progress=step)
"""


def test_a_repair_killed_midway_is_finished_by_the_next_hook(project: Path) -> None:
    """A refill killed after its first batch leaves an index that passes every check but
    misses rows: the marker it leaves names the table, and the next hook fills it again."""
    import subprocess
    import sys

    db, counts = _store(project)
    _overwrite(db, "search_fts_data")
    killed = subprocess.run([sys.executable, "-c", _KILLED_MIDWAY, str(db)], check=False)
    assert killed.returncode == -9
    indexed = db_rows(db, "SELECT count(*) FROM search_fts_docsize")[0][0]
    assert 0 < indexed < counts["search_items"]  # half filled
    assert not _sound(db) or indexed < counts["search_items"]
    assert Path(config.repair_marker_for(db)).exists()
    report = json.loads(run_cli("doctor", "--json", cwd=project).stdout)
    check = {c["name"]: c for c in report["checks"]}["repair"]
    assert check["level"] == "FAIL" and "search_fts" in check["fix"]

    payload = post_tool_use(project, "new-session", "toolu_new", f"{project}/src/after.py")
    proc = hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project)
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
    assert "interrupted repair" in (project / ".context" / "hooks.log").read_text("utf-8")
    items = db_rows(db, "SELECT count(*) FROM search_items")[0][0]
    assert db_rows(db, "SELECT count(*) FROM search_fts_docsize")[0][0] == items
    _assert_whole(db, counts, project)
    rows = db_rows(db, "SELECT json_extract(data, '$.path') FROM events")
    assert (f"{project}/src/after.py",) in rows


def test_a_damaged_free_list_is_rewritten_in_place(project: Path) -> None:
    """Pages no table uses (a damaged free list) cost a ``VACUUM``, nothing more."""
    db, counts = _store(project)
    inode = db.stat().st_ino
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE scratch(x)")
    conn.execute("INSERT INTO scratch SELECT randomblob(3000) FROM contexts")
    conn.execute("DROP TABLE scratch")  # its pages go to the free list
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db.read_bytes())
    trunk, size = int.from_bytes(data[32:36], "big"), int.from_bytes(data[16:18], "big")
    assert trunk
    data[(trunk - 1) * size + 4 : trunk * size] = os.urandom(size - 4)
    db.write_bytes(bytes(data))
    assert not _sound(db)

    report = json.loads(run_cli("doctor", "--json", cwd=project).stdout)
    check = {c["name"]: c for c in report["checks"]}["integrity"]
    assert "unused or free pages" in check["fix"] and "in place" in check["fix"], check
    done = run_cli("doctor", "--repair", cwd=project)
    assert "rebuilt in place: the file's free pages" in done.stderr, done.stderr
    assert db.stat().st_ino == inode
    _assert_whole(db, counts, project)


#: A repair process that stops after the first batch of its refill until ``go`` exists: an
#: in-place repair of a large store, caught in the middle.
_PAUSED_MIDWAY = """
import os, sys, time
from ctxmode.core import repair

def step(table, done, total):
    if 0 < done < total and not os.path.exists(sys.argv[2]):
        open(sys.argv[3], "w").close()
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.05)

print(repair.repair(sys.argv[1], progress=step)[0])
"""


def test_during_an_in_place_repair_a_snapshot_is_taken_and_calls_wait_in_the_spool(
    project: Path, tmp_path: Path
) -> None:
    """While a repair fills a search index again in the same file, a PreCompact still saves
    its snapshot (the file stays usable), a tool call waits in the spool, and the first hook
    after the repair writes it."""
    import subprocess
    import sys

    db, counts = _store(project)
    _overwrite(db, "search_trigram_data")
    go, paused = tmp_path / "go", tmp_path / "paused"
    repairer = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_MIDWAY, str(db), str(go), str(paused)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not paused.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert paused.exists()
        compact = {
            "session_id": "old-session", "transcript_path": str(tmp_path / "none.jsonl"),
            "cwd": str(project), "hook_event_name": "PreCompact", "trigger": "auto",
        }  # fmt: skip
        proc = hook_process("pre-compact", json.dumps(compact).encode(), cwd=project)
        assert proc.returncode == 0, proc.stderr
        payload = post_tool_use(project, "old-session", "toolu_during", f"{project}/src/d.py")
        proc = hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project)
        assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
        assert list(Path(config.spool_dir_for(db)).glob("*.json"))
        assert db_rows(db, "SELECT count(*) FROM session_resume")[0][0] == 1
    finally:
        go.touch()
        out, _ = repairer.communicate(timeout=60)
    assert "rebuilt in place: search_trigram" in out
    payload = post_tool_use(project, "old-session", "toolu_after", f"{project}/src/e.py")
    assert hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project).returncode == 0
    paths = {r[0] for r in db_rows(db, "SELECT json_extract(data, '$.path') FROM events")}
    assert {f"{project}/src/d.py", f"{project}/src/e.py"} <= paths
    assert not Path(config.spool_dir_for(db)).exists()
    # search_trigram holds contexts and events; chunks' names are in search_names_fts.
    items = db_rows(db, "SELECT count(*) FROM search_items WHERE item_kind != 'chunk'")[0][0]
    assert db_rows(db, "SELECT count(*) FROM search_trigram_docsize")[0][0] == items
    _assert_whole(db, counts, project)


def test_the_rebuild_follows_the_schema_in_the_file(project: Path) -> None:
    """An FTS5 table a later migration might add, fed by its own trigger (another source
    table, a WHEN clause, ``INSERT OR REPLACE ... SELECT``), is rebuilt from that trigger's
    own statements: nothing about it is written in the repair code."""
    from ctxmode.core import repair

    db = project / ".context" / "context.db"
    with Store.open(db) as store:
        store.conn.executescript(
            """
            CREATE VIRTUAL TABLE "notes_fts" USING fts5(body, content='');
            CREATE TRIGGER notes_fts_ai AFTER INSERT ON contexts
            WHEN new.type = 'decision' BEGIN
                INSERT OR REPLACE INTO "notes_fts"(rowid, body)
                    SELECT new.id, upper(new.content) WHERE new.content != '';
            END;
            """
        )
        for i in range(600):
            store.write_context(("decision", "convention")[i % 2], f"note {i} about dingoes")
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _overwrite(db, "notes_fts_data")

    account, moved = repair.repair(str(db))
    assert moved is None and account.startswith("rebuilt in place: notes_fts"), account
    assert integrity(db) == "ok"
    assert db_rows(db, "SELECT count(*) FROM notes_fts_docsize")[0][0] == 300
    hits = db_rows(db, "SELECT rowid FROM notes_fts WHERE notes_fts MATCH 'DINGOES'")
    decisions = db_rows(db, "SELECT id FROM contexts WHERE type = 'decision'")
    assert sorted(hits) == sorted(decisions)
