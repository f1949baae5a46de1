"""Indexing at size: short transactions, resume after kill -9, names found by substring."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import CTXMODE
from ctxmode import Store
from ctxmode.core.errors import StoreUnavailable
from ctxmode.search.engine import search
from ctxmode.search.indexing import index_path


def _write_docs(root: Path, files: int, paragraphs: int = 12) -> None:
    """``files`` markdown files of ``paragraphs`` sections each (~10 KB a file)."""
    for i in range(files):
        folder = root / "docs" / f"part{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(
            f"## Section {j} of page {i}\n\n"
            + " ".join(f"word{(i * 31 + j * 7 + k) % 997} text" for k in range(60))
            for j in range(paragraphs)
        )
        (folder / f"page{i}.md").write_text(f"# Page {i}\n\n{body}\n", encoding="utf-8")


def _chunks(db: Path) -> list[tuple[object, ...]]:
    """Every chunk's place and text (row ids aside: they differ between runs)."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT c.path, c.ordinal, c.kind, s.title, s.body, s.context FROM chunks c "
            "JOIN search_items s ON s.item_kind = 'chunk' AND s.ref_id = c.id "
            "ORDER BY c.path, c.ordinal"
        ).fetchall()


def _files(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT path, content_hash, bytes FROM source_files ORDER BY path"
        ).fetchall()


def _start_index(project: Path, workers: str = "0") -> subprocess.Popen[bytes]:
    assert CTXMODE
    return subprocess.Popen(
        [CTXMODE, "index", "--json", "docs"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "CTXMODE_INDEX_WORKERS": workers},
    )


def _children(pid: int) -> set[int]:
    """Processes whose parent is ``pid`` (Linux ``/proc``)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry))
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _wait_for_files(db: Path, proc: subprocess.Popen[bytes], at_least: int) -> int:
    """Poll until the running index has committed ``at_least`` files; return the count."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with sqlite3.connect(db, timeout=5) as conn:
                (n,) = conn.execute("SELECT count(*) FROM source_files").fetchone()
        except sqlite3.OperationalError:
            n = 0
        if n >= at_least:
            return int(n)
        time.sleep(0.02)
    return -1


@pytest.mark.parametrize("workers", ["0", "1"])
def test_kill_mid_index_then_rerun_equals_one_clean_run(tmp_path: Path, workers: str) -> None:
    """Killed with ``kill -9`` midway (files prepared in the indexing process, or in a worker
    process that must end with it), the rerun gives the store of one clean run."""
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    for root in (killed, clean):
        (root / ".git").mkdir(parents=True)
        _write_docs(root, 160)
    db = killed / ".context" / "context.db"
    Store.open(db).close()
    proc = _start_index(killed, workers)
    done = _wait_for_files(db, proc, 20)
    children = _children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 20 <= done < 160, "the index finished before it could be killed; add files"
    assert len(children) == int(workers), children
    deadline = time.monotonic() + 10
    while _alive(children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(children), "a worker outlived the killed index"
    with Store.open(db) as store:
        midway = len(_files(db))
        assert 0 < midway < 160
        report = index_path(store, "docs")
        assert report.sources[0].files == 160
    with Store.open(clean / ".context" / "context.db") as store:
        index_path(store, "docs")
    assert _files(db) == _files(clean / ".context" / "context.db")
    assert _chunks(db) == _chunks(clean / ".context" / "context.db")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        (bad,) = conn.execute(
            "SELECT count(*) FROM search_items s WHERE item_kind = 'chunk' "
            "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = s.ref_id)"
        ).fetchone()
        assert bad == 0


@pytest.mark.parametrize("workers", ["0", "1"])
def test_writes_land_while_a_folder_is_indexed(tmp_path: Path, workers: str) -> None:
    """Writes (in-process, at a hook's bound on the lock wait) and real hook processes land
    while a folder is indexed, with the files prepared in this process or in a worker: none
    waits the index out, none is left in the spool."""
    from _hardening import hook_process, post_tool_use
    from ctxmode.core import config

    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    _write_docs(project, 400)
    db = project / ".context" / "context.db"
    Store.open(db).close()
    proc = _start_index(project, workers)
    written = hooks = 0
    try:
        assert _wait_for_files(db, proc, 1) > 0
        with Store.open(db) as store:
            # A hook's bound on the lock wait: 250 ms, one attempt. The old single
            # transaction held the lock for the whole folder and every write here failed.
            store.limit_lock_wait(250, 1)
            while proc.poll() is None and written < 30:
                try:
                    store.write_context("decision", f"decision {written} during the index")
                except StoreUnavailable as exc:
                    raise AssertionError(f"write {written} waited out the index: {exc}") from exc
                written += 1
                if written % 3 == 0:
                    payload = post_tool_use(project, "s1", f"toolu_{written}", f"src/f{written}.py")
                    done = hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project)
                    assert done.returncode == 0 and done.stdout == b"", done.stderr
                    hooks += 1
                time.sleep(0.01)
    finally:
        if proc.poll() is None:
            proc.wait(timeout=120)
    assert proc.returncode == 0
    assert written >= 3, "the index ended before writes could overlap it; add files"
    assert not Path(config.spool_dir_for(str(db))).exists()  # no hook call waits to be written
    with Store.open(db) as store:
        assert store.query("SELECT count(*) AS n FROM contexts")[0]["n"] == written
        assert store.query("SELECT count(*) AS n FROM source_files")[0]["n"] == 400
        files = store.query("SELECT count(*) AS n FROM events WHERE category = 'file'")
        assert files[0]["n"] == hooks


def test_unchanged_files_are_not_read_again(store: Store, project: Path) -> None:
    _write_docs(project, 5)
    first = index_path(store, "docs")
    assert first.sources[0].status == "indexed"
    assert index_path(store, "docs").sources[0].status == "unchanged"
    page = project / "docs" / "part1" / "page1.md"
    stat = page.stat()
    os.utime(page, (stat.st_atime, stat.st_mtime + 10))  # touched, same bytes
    touched = index_path(store, "docs")
    assert touched.sources[0].status == "unchanged"
    recorded = store.query(
        "SELECT mtime FROM source_files WHERE path = ?", (str(page.relative_to(project)),)
    )
    assert recorded[0]["mtime"] == stat.st_mtime + 10
    page.write_text("# Page 1\n\nnew words about frobnication\n", encoding="utf-8")
    assert index_path(store, "docs").sources[0].status == "refreshed"
    assert search(store, "frobnication").hits


def test_names_found_by_substring_and_typo(store: Store, project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "auth.py").write_text(
        "ACCESS_TTL = 3600\n\n\ndef get_current_user(token: str) -> str:\n"
        "    return decode(token)\n\n\nclass OAuth2PasswordBearer:\n    pass\n",
        encoding="utf-8",
    )
    (project / "src" / "notes.md").write_text("# Notes\n\nNothing about users.\n")
    index_path(store, "src")
    for query in ("ACCESS_TT", "current_us", "PasswordBear", "get_curent_user"):
        hits = search(store, query).hits
        assert hits and hits[0].title.startswith("src/auth.py"), (query, hits[:1])


def test_a_file_larger_than_a_transaction_is_written_in_parts(store: Store, project: Path) -> None:
    """A 600 KB file spans several transactions; its chunks and their neighbour context are
    those of a write in one piece."""
    sections = "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"token{i}_{k}" for k in range(120)) for i in range(400)
    )
    (project / "big.md").write_text(f"# Big\n\n{sections}\n", encoding="utf-8")
    report = index_path(store, "big.md")
    rows = store.query(
        "SELECT c.ordinal, s.body, s.context FROM chunks c JOIN search_items s "
        "ON s.item_kind = 'chunk' AND s.ref_id = c.id ORDER BY c.ordinal"
    )
    assert report.sources[0].chunks == len(rows) > 100
    body = {r["ordinal"]: r["body"] for r in rows}
    for r in rows:
        k = r["ordinal"]
        want = f"{body.get(k - 2, '')[-300:]} {body.get(k - 1, '')[-300:]}".strip(" ")
        assert r["context"] == want, k
    assert search(store, "token399_7").hits
    assert index_path(store, "big.md").sources[0].status == "unchanged"


#: A fixed time in the past (the walk's stamps compare mtimes exactly).
_PAST = time.time() - 600


def _age(root: Path) -> None:
    """Set every folder and file under ``root`` (and ``root``) to ``_PAST``."""
    past = _PAST
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(os.path.join(here, name), (past, past))
    os.utime(root, (past, past))


def test_refresh_skips_the_walk_while_no_folder_changed(store: Store, project: Path) -> None:
    """A refresh walks a folder source again only when a folder it walked or a .gitignore
    changed; files edited in place are still found by their size and mtime."""
    from ctxmode.search.indexing import refresh_sources

    docs = project / "docs"
    (docs / "api").mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\n\nalpha_first words\n", encoding="utf-8")
    (docs / "api" / "ref.md").write_text("# Ref\n\nbeta_second words\n", encoding="utf-8")
    _age(project)
    index_path(store, "docs")
    paths = lambda: sorted(r[0] for r in store.conn.execute("SELECT path FROM source_files"))  # noqa: E731

    # A file added then hidden from the folder stamps (mtime set back): the walk is skipped,
    # so the refresh does not see it (this proves the listing came from the last walk).
    (docs / "api" / "hidden.md").write_text("# Hidden\n\ngamma_third\n", encoding="utf-8")
    _age(project)
    refresh_sources(store)
    assert paths() == ["docs/api/ref.md", "docs/guide.md"]

    # A file edited in place (no folder changes) is read again.
    (docs / "guide.md").write_text("# Guide\n\ndelta_fourth words\n", encoding="utf-8")
    refresh_sources(store)
    assert [h.title for h in search(store, "delta_fourth").hits]

    # A new file changes its folder's mtime: the next refresh walks and finds both new files.
    (docs / "api" / "new.md").write_text("# New\n\nepsilon_fifth\n", encoding="utf-8")
    refresh_sources(store)
    assert paths() == ["docs/api/hidden.md", "docs/api/new.md", "docs/api/ref.md", "docs/guide.md"]

    # A .gitignore edited in place applies at once (its own stamp changed).
    _age(project)
    refresh_sources(store)  # settled: stamps recorded again
    (project / ".gitignore").write_text("docs/api/\n", encoding="utf-8")
    os.utime(project, (_PAST, _PAST))
    _age(docs)
    refresh_sources(store)
    assert paths() == ["docs/guide.md"]


def test_worker_processes_give_the_store_of_one_process(tmp_path: Path) -> None:
    """``ctxmode index`` with two worker processes preparing files writes the same chunks,
    bigrams and names as preparing them in the indexing process."""
    stores = []
    for workers in ("0", "2"):
        root = tmp_path / f"w{workers}"
        (root / ".git").mkdir(parents=True)
        _write_docs(root, 90, paragraphs=4)
        for i in range(12):
            (root / "docs" / f"zh{i}.md").write_text(
                f"# 教程 {i}\n\n我们用FastAPI框架写接口{i}，get_user_{i} 返回用户。\n",
                encoding="utf-8",
            )
            (root / "docs" / f"mod{i}.py").write_text(
                f"ACCESS_TTL_{i} = 60\n\n\ndef get_current_user_{i}(token):\n    return token\n"
            )
        db = root / ".context" / "context.db"
        Store.open(db).close()
        proc = _start_index(root, workers)
        assert proc.wait(timeout=120) == 0
        stores.append(db)
    first, second = stores
    assert _files(first) == _files(second) and len(_files(first)) == 114
    assert _chunks(first) == _chunks(second)
    for sql in (
        "SELECT name FROM search_names ORDER BY name",
        "SELECT count(*) FROM search_cjk",
        "SELECT count(*) FROM search_names WHERE fresh = 1",
    ):
        with sqlite3.connect(first) as a, sqlite3.connect(second) as b:
            assert a.execute(sql).fetchall() == b.execute(sql).fetchall(), sql
    with Store.open(second) as store:
        assert search(store, "current_user_7").hits
        assert search(store, "框架").hits


_WAITER = """
import sys, time
from ctxmode.core.db import Database
store = Database.open(sys.argv[1])
store.limit_lock_wait(2000, 3)
with store.transaction() as conn:
    conn.execute("INSERT INTO search_edits(id, n) VALUES (1, 0) ON CONFLICT(id) DO NOTHING")
print("in", flush=True)
"""


def test_a_waiting_writer_is_let_in_between_two_transactions(tmp_path: Path) -> None:
    """A writer waiting for the lock keeps a marker next to the store; a long operation that
    finds it fresh between two of its transactions pauses until the writer is in."""
    import sys
    import threading

    from ctxmode.core.db import WAITING_SUFFIX

    db = tmp_path / "context.db"
    holder = Store.open(db)
    marker = Path(f"{db}{WAITING_SUFFIX}")
    holder.conn.execute("BEGIN IMMEDIATE")
    waiter = subprocess.Popen(
        [sys.executable, "-c", _WAITER, str(db)], stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.exists(), "the waiting writer left no marker"
    holder.conn.execute("COMMIT")
    started = time.monotonic()
    holder.let_waiters_in(most_s=20)  # returns once the waiter has the lock
    assert time.monotonic() - started < 20
    assert waiter.communicate(timeout=30)[0].strip() == "in"
    assert not marker.exists()
    # Nobody waiting, or a marker left by a process that died waiting: no pause.
    holder.let_waiters_in(most_s=20)
    marker.write_text("")
    os.utime(marker, (time.time() - 60, time.time() - 60))
    started = time.monotonic()
    holder.let_waiters_in(most_s=20)
    assert time.monotonic() - started < 5
    # A fresh marker with no writer behind it costs at most ``most_s``.
    threading.Timer(0.2, marker.unlink).start()
    marker.touch()
    holder.let_waiters_in(most_s=20)
    assert not marker.exists()
    holder.close()


def test_the_mcp_index_tool_prepares_files_in_workers_from_a_server(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ctxmode serve`` (a process with threads) starts its workers from a fork server; the
    index it writes is the CLI's."""
    from test_mcp_front import INITIALIZED, _ask, _initialize, serve_session

    _write_docs(project, 40, paragraphs=3)
    monkeypatch.setenv("CTXMODE_INDEX_WORKERS", "2")
    replies = serve_session(
        project,
        [
            _initialize(1, "2025-06-18"),
            INITIALIZED,
            _ask(2, "tools/call", {"name": "index", "arguments": {"path": "docs"}}),
            _ask(3, "tools/call", {"name": "search", "arguments": {"queries": ["word500"]}}),
        ],
    )
    assert not replies[2]["result"].get("isError"), replies[2]
    assert "word500" in json.dumps(replies[3]["result"])
    db = project / ".context" / "context.db"
    served = _chunks(db)
    assert len(_files(db)) == 40 and served
    clean = project.parent / "clean"
    (clean / ".git").mkdir(parents=True)
    _write_docs(clean, 40, paragraphs=3)
    with Store.open(clean / ".context" / "context.db") as store:
        monkeypatch.setenv("CTXMODE_INDEX_WORKERS", "0")
        index_path(store, "docs")
    assert _chunks(clean / ".context" / "context.db") == served


def test_a_worker_killed_midway_leaves_its_files_to_the_indexing_process(tmp_path: Path) -> None:
    """``kill -9`` of the worker process while the index runs: the files it had not returned
    are prepared by the indexing process, which ends normally with the store of a clean run."""
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    for root in (killed, clean):
        (root / ".git").mkdir(parents=True)
        _write_docs(root, 300)
    db = killed / ".context" / "context.db"
    Store.open(db).close()
    proc = _start_index(killed, "1")
    assert _wait_for_files(db, proc, 10) > 0
    workers = _children(proc.pid)
    assert len(workers) == 1, workers
    os.kill(workers.pop(), signal.SIGKILL)
    assert proc.wait(timeout=120) == 0
    with Store.open(clean / ".context" / "context.db") as store:
        index_path(store, "docs")
    assert len(_files(db)) == 300
    assert _files(db) == _files(clean / ".context" / "context.db")
    assert _chunks(db) == _chunks(clean / ".context" / "context.db")


_NO_MULTIPROCESSING = """
import sys
sys.modules["_multiprocessing"] = None  # a platform without working multiprocessing
from ctxmode import Store
with Store.open(sys.argv[1]) as store:
    print(store.index_path("docs").files)
"""


def test_no_working_multiprocessing_means_no_workers(tmp_path: Path) -> None:
    import sys

    (tmp_path / ".git").mkdir()
    _write_docs(tmp_path, 70)
    db = tmp_path / ".context" / "context.db"
    Store.open(db).close()
    done = subprocess.run(
        [sys.executable, "-c", _NO_MULTIPROCESSING, str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, "CTXMODE_INDEX_WORKERS": "2"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "70"
