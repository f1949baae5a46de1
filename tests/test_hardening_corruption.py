"""Corruption: a damaged store never breaks the agent and never silently loses the old file.

Damage kinds: random bytes over the whole file, a truncated file, a header only, another
program's SQLite database, and pages of a live index overwritten (damage SQLite only notices
when a write touches it, long after the store opened fine). For each, the real hook process
exits 0 with nothing on stdout, the bad file is kept under ``context.db.bad-<stamp>`` byte for
byte, a fresh store records the event, the hook log and ``ctxmode doctor`` say what happened,
and the CLI and MCP server (which never move files themselves) report a clear error. Damage
confined to an index or the search index is repaired in the same file instead
(``tests/test_repair_in_place.py``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from _hardening import db_rows, hook_inprocess, hook_process, integrity, post_tool_use
from conftest import run_cli
from ctxmode import Store
from ctxmode.mcp.sdk.server import build_server


def _healthy_store(project: Path) -> Path:
    """A store with a few hundred events and contexts, checkpointed into the main file."""
    db = project / ".context" / "context.db"
    for i in range(150):
        payload = post_tool_use(project, "old-session", f"toolu_old_{i}", f"{project}/src/{i}.py")
        assert hook_inprocess("post-tool-use", json.dumps(payload).encode(), cwd=project)[0] == 0
    with Store.open(db) as store:
        for i in range(50):
            store.write_context("convention", f"convention {i}: " + "words " * 40)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def _garbage(db: Path) -> None:
    db.write_bytes(os.urandom(64 * 1024))


def _truncated(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2 + 123])


def _header_only(db: Path) -> None:
    db.write_bytes(db.read_bytes()[:100])


def _foreign(db: Path) -> None:
    db.unlink()
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT);"
        "INSERT INTO users(email) VALUES ('a@example.com');"
    )
    conn.close()


def _overwrite_pages(db: Path, table: str) -> None:
    """Overwrite every page of ``table`` (an index or a table) but its first 8 bytes."""
    conn = sqlite3.connect(db)
    pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    assert pages
    data = bytearray(db.read_bytes())
    for page in pages:
        start = (page - 1) * size
        data[start + 8 : start + size] = os.urandom(size - 8)
    db.write_bytes(bytes(data))


def _index_pages(db: Path) -> None:
    """Overwrite the pages of the events' idempotency index: the store still opens."""
    _overwrite_pages(db, "idx_events_idem")


def _fts_pages(db: Path) -> None:
    """Overwrite the pages of an FTS5 shadow table (the substring index's data)."""
    _overwrite_pages(db, "search_trigram_data")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "garbage": _garbage,
    "truncated": _truncated,
    "header-only": _header_only,
    "foreign-sqlite": _foreign,
    "index-pages": _index_pages,
    "fts-pages": _fts_pages,
}
#: Damage that leaves the user's rows readable: all of them come back after the salvage.
ROWS_INTACT = ("index-pages", "fts-pages")


def _damaged(project: Path, kind: str) -> tuple[Path, bytes]:
    db = _healthy_store(project)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    DAMAGE[kind](db)
    return db, db.read_bytes()


@pytest.mark.parametrize("kind", [k for k in DAMAGE if k not in ROWS_INTACT])
def test_hook_salvages_a_damaged_store_and_keeps_recording(project: Path, kind: str) -> None:
    db, damaged = _damaged(project, kind)
    payload = post_tool_use(project, "new-session", "toolu_new", f"{project}/src/after.py")
    proc = hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert b"Traceback" not in proc.stderr

    kept = sorted(db.parent.glob("context.db.bad-*"))
    kept = [p for p in kept if not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1, sorted(p.name for p in db.parent.iterdir())
    assert kept[0].read_bytes() == damaged  # kept untouched, for salvage
    if kind != "foreign-sqlite":  # a file ctxmode created keeps its owner-only mode
        assert oct(kept[0].stat().st_mode & 0o777) == oct(0o600)

    assert integrity(db) == "ok"
    rows = db_rows(db, "SELECT session_id, json_extract(data, '$.path') FROM events")
    assert ("new-session", f"{project}/src/after.py") in rows
    old_events = len(rows) - 1
    contexts = db_rows(db, "SELECT count(*) FROM contexts")[0][0]
    if kind == "truncated":
        # The first half of the file holds the schema's start and the session rows (the event
        # and context pages were written later, past the cut): read from the pages directly.
        sessions = {r[0] for r in db_rows(db, "SELECT session_id FROM sessions")}
        assert "old-session" in sessions
    else:
        assert (old_events, contexts) == (0, 0)

    log = (project / ".context" / "hooks.log").read_text(encoding="utf-8")
    assert kept[0].name in log

    # The next hook call finds a healthy store and does not move anything again.
    again = post_tool_use(project, "new-session", "toolu_new2", f"{project}/src/after2.py")
    assert hook_process("post-tool-use", json.dumps(again).encode(), cwd=project).returncode == 0
    assert [p for p in db.parent.glob("context.db.bad-*") if p.suffix != ".db-wal"][:2] == kept
    assert db_rows(db, "SELECT count(*) FROM events")[0][0] == old_events + 2

    doctor = run_cli("doctor", "--json", cwd=project)
    report = json.loads(doctor.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["quarantine"]["level"] == "WARN"
    assert kept[0].name in checks["quarantine"]["message"]


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_cli_reports_a_damaged_store_clearly(project: Path, kind: str) -> None:
    db, damaged = _damaged(project, kind)
    for args in (
        ("add", "convention", "a new convention"),
        ("events", "--json"),
        ("query", "--json"),
        ("search", "convention"),
        ("task", "list"),
    ):
        proc = run_cli(*args, cwd=project)
        if kind in ROWS_INTACT and proc.returncode == 0:
            continue  # this damage only hurts an index: reads elsewhere still work
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        assert proc.stderr.startswith("Error: "), (args, proc.stderr)
        assert "ctxmode database" in proc.stderr or "another program" in proc.stderr, proc.stderr
    # Damage the commands did not touch still surfaces where the user looks: doctor runs the
    # integrity check.
    doctor = run_cli("doctor", "--json", cwd=project)
    assert doctor.returncode == 1
    assert json.loads(doctor.stdout)["status"] == "FAIL"
    # The CLI reports; it does not move files behind the user's back (only hooks recover).
    assert not list(db.parent.glob("context.db.bad-*"))
    if kind not in ROWS_INTACT:
        assert db.read_bytes() == damaged
    if kind == "foreign-sqlite":
        return  # another program's file: doctor says to point --db elsewhere, never repairs
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert "doctor --repair" in checks["integrity" if "integrity" in checks else "schema"]["fix"]
    repaired = run_cli("doctor", "--repair", "--json", cwd=project)
    checks = {c["name"]: c for c in json.loads(repaired.stdout)["checks"]}
    assert checks["integrity"]["level"] == "OK"
    if kind in ROWS_INTACT:  # rebuilt in the same file: nothing moved, every row there
        assert "rebuilt in place" in repaired.stderr, repaired.stderr
        assert not list(db.parent.glob("context.db.bad-*"))
        assert db_rows(db, "SELECT count(*) FROM contexts")[0][0] >= 50  # `add` may have worked
        assert db_rows(db, "SELECT count(*) FROM events")[0][0] == 150
        assert "convention 7" in run_cli("search", "convention 7", cwd=project).stdout
    else:
        assert "copied" in repaired.stderr and "kept as" in repaired.stderr, repaired.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["garbage", "foreign-sqlite", "index-pages"])
async def test_mcp_reports_a_damaged_store_as_a_tool_error(project: Path, kind: str) -> None:
    db, _ = _damaged(project, kind)
    async with Client(build_server(db, project), mode="legacy") as client:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("write_context", {"type": "convention", "content": "x"}),
            ("session_events", {"limit": 5}),
            ("query_context", {}),
        ]
        errors = 0
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            if kind == "index-pages" and not result.is_error:
                continue
            assert result.is_error, (tool, result)
            text = result.content[0].text
            assert "Traceback" not in text
            assert "ctxmode database" in text or "another program" in text, text
            errors += 1
        assert errors >= 1 or kind == "index-pages"
        tools = await client.list_tools()  # the server is still up
        assert tools.tools
