"""ctxmode at real size: a real repository indexed, hooks during the index, a year-old store.

Part 1, a real repository (``../shared/bench-data/repos/fastapi-c3f316b.tar.xz``, 3,139 files,
docs in 14 languages), unpacked to a temporary folder:
- ``ctxmode index .`` wall time and store size, next to the floor measured in the same run:
  the same files (those ctxmode indexed), cut at blank lines into ~1,500-character chunks, in
  one plain FTS5 table (porter unicode61), one Python loop, one transaction;
- post-tool-use hook wall time (median, max) idle, then while a second folder source is
  indexed, and ``ctxmode add`` latency during that index (and whether any failed);
- ``ctxmode index .`` again with nothing changed.
Part 2, a year-old store: that index plus ``--events`` events over ended sessions, ``--contexts``
contexts and ``--tasks`` tasks; the hook, the snapshot (pre-compact), query, search and the
startup brief (session-start) timed on it and on a small store (200 events, 200 contexts, 50
tasks, no index), medians of ``--runs`` runs, ratios year-old / small.
Part 3, damage: copies of the year-old store with the pages of one search-index shadow table
overwritten, repaired in place (``core.repair.repair``: the same file, the index rebuilt) and
salvaged (``core.db.salvage``: every row copied into a new store, files to index again).

Targets (issue 27): index <= 6x the floor's time and <= 3x its size; hook max during an index
<= 3x its idle median, no failed ``add``; unchanged re-index <= 2 s; year-old <= 1.5x small
on every hot path; a damaged search index repaired in place faster than a salvage.

Run: .venv/bin/python bench/scale.py [--runs 7] [--events 200000] [--contexts 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _repos import MISSING, unpack

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
CTXMODE = str(Path(PYTHON).parent / "ctxmode")
FIXTURES = REPO / "tests" / "fixtures" / "hooks" / "claude-code"
#: The search of the hot paths: two words of the seeded vocabulary, ranks 50 and 400.
QUERY = "w50 w400"


def store_bytes(db: Path) -> int:
    return sum(os.path.getsize(f"{db}{s}") for s in ("", "-wal") if os.path.exists(f"{db}{s}"))


def timed(cmd: list[str], cwd: Path, stdin: bytes = b"") -> tuple[float, int, bytes]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, timeout=3600)
    return time.perf_counter() - start, proc.returncode, proc.stdout


def floor_build(root: Path, files: list[str], out: Path) -> tuple[float, int]:
    """The one-table FTS5 build of ``files``: seconds and bytes."""
    start = time.perf_counter()
    conn = sqlite3.connect(out, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE VIRTUAL TABLE chunks USING fts5(path, body, tokenize='porter unicode61')")
    conn.execute("BEGIN")
    for rel in files:
        text = (root / rel).read_bytes().decode("utf-8", "replace")
        buf: list[str] = []
        size = 0
        for para in text.split("\n\n"):
            buf.append(para)
            size += len(para)
            if size >= 1500:
                conn.execute("INSERT INTO chunks VALUES (?, ?)", (rel, "\n\n".join(buf)))
                buf, size = [], 0
        if buf:
            conn.execute("INSERT INTO chunks VALUES (?, ?)", (rel, "\n\n".join(buf)))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - start, store_bytes(out)


def hook_payload(project: Path, n: int, session: str = "bench-scale") -> bytes:
    text = (FIXTURES / "post-tool-use.edit.json").read_text(encoding="utf-8")
    data = json.loads(text.replace("/home/user/my-project", str(project)))
    data["session_id"] = session
    data["tool_use_id"] = f"toolu_scale_{n}_{time.monotonic_ns()}"
    data["tool_input"]["new_string"] = f"def get(url, retries={n}):"
    data.pop("transcript_path", None)
    return json.dumps(data).encode()


def fixture(name: str, project: Path, session: str) -> bytes:
    text = (FIXTURES / f"{name}.json").read_text(encoding="utf-8")
    data = json.loads(text.replace("/home/user/my-project", str(project)))
    data["session_id"] = session
    data.pop("transcript_path", None)
    return json.dumps(data).encode()


def hook_times(project: Path, runs: int, start: int = 0) -> list[float]:
    out = []
    for n in range(start, start + runs):
        wall, code, _ = timed([CTXMODE, "hook", "post-tool-use"], project, hook_payload(project, n))
        assert code == 0
        out.append(wall)
    return out


def part_repo(tmp: Path, runs: int, index_runs: int = 3) -> Path | None:
    from ctxmode.core.config import index_workers

    project = unpack(tmp)
    if project is None:
        print(f"part 1 skipped: {MISSING}")
        return None
    (project / ".git").mkdir(exist_ok=True)
    db = project / ".context" / "context.db"
    walls: list[float] = []
    floors: list[float] = []
    for attempt in range(index_runs):
        # Each run starts from a new store (made outside the timed index), the floor's build
        # alternating with it so that both see the same machine.
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        _, code, out = timed([CTXMODE, "init"], project)
        assert code == 0, out
        wall, code, out = timed([CTXMODE, "index", "--json", "."], project)
        assert code == 0, out
        walls.append(wall)
        report = json.loads(out)
        size = store_bytes(db)
        with sqlite3.connect(db) as conn:
            files = [r[0] for r in conn.execute("SELECT path FROM source_files ORDER BY path")]
        floor_db = tmp / f"floor{attempt}.db"
        floor_s, floor_b = floor_build(project, files, floor_db)
        floors.append(floor_s)
    wall, floor_s = statistics.median(walls), statistics.median(floors)
    workers, _set = index_workers()
    print(
        f"repository: {report['files']} files, {report['chunks']} chunks, "
        f"{report['bytes'] / 1e6:.1f} MB; medians of {index_runs} runs, "
        f"{workers} worker process(es) ({os.cpu_count()} cores)"
    )
    print(f"  {'':24s} {'seconds':>9s} {'MB':>8s}")
    print(f"  {'floor (one FTS5 table)':24s} {floor_s:9.2f} {floor_b / 1e6:8.1f}")
    print(f"  {'ctxmode index':24s} {wall:9.2f} {size / 1e6:8.1f}")
    print(
        f"  ratio: time {wall / floor_s:.1f}x (target <= 6; runs "
        f"{', '.join(f'{w:.1f}' for w in walls)} s against {', '.join(f'{f:.2f}' for f in floors)}"
        f" s), size {size / floor_b:.2f}x (target <= 3)"
    )
    idle = hook_times(project, runs)
    # A second source over the whole repository: a full index while hooks and adds run.
    proc = subprocess.Popen(
        [CTXMODE, "index", "--json", ".", "--source", "repo-again"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    during: list[float] = []
    adds: list[float] = []
    failed = 0
    n = 1000
    while proc.poll() is None and len(during) < 40:
        during.extend(hook_times(project, 1, n))
        wall, code, _ = timed([CTXMODE, "add", "decision", f"added during the index {n}"], project)
        adds.append(wall)
        failed += code != 0
        n += 1
    proc.wait()
    med = statistics.median(idle)
    print(
        f"hook post-tool-use idle: median {med * 1000:.0f} ms, max {max(idle) * 1000:.0f} ms; "
        f"during the index ({len(during)} calls): median "
        f"{statistics.median(during) * 1000:.0f} ms, max {max(during) * 1000:.0f} ms "
        f"= {max(during) / med:.1f}x the idle median (target <= 3)"
    )
    print(
        f"ctxmode add during the index: {len(adds)} calls, median "
        f"{statistics.median(adds) * 1000:.0f} ms, max {max(adds) * 1000:.0f} ms, "
        f"{failed} failed (target 0)"
    )
    again, code, _ = timed([CTXMODE, "index", "--json", "."], project)
    print(f"re-index unchanged: {again:.2f} s (target <= 2)")
    # The year-old store holds the repository once (a ~100 MB index, as issue 27 sets it).
    _, code, out = timed([CTXMODE, "sources", "--rm", "repo-again"], project)
    assert code == 0, out
    return project


def seed_year(project: Path, events: int, contexts: int, tasks: int) -> None:
    """Add a year of use: ended sessions of events, contexts and a task tree."""
    from ctxmode import Store

    rng = random.Random(27)
    now = int(time.time())
    year = 365 * 86400
    cats = ("file", "tool", "task", "error", "git", "decision", "prompt")
    # A Zipf vocabulary of 20,000 words, as in real text: a few words are everywhere, most
    # are rare; the timed queries use words of ranks 50 and 400 (``QUERY``).
    vocab = [f"w{k}" for k in range(20_000)]
    weights = [1 / (k + 1) for k in range(20_000)]
    pool = rng.choices(vocab, weights, k=200_000)
    words = iter(pool * (1 + (events * 12 + contexts * 20) // len(pool)))
    with Store.open(project / ".context" / "context.db") as store:
        conn = store.conn
        per = 400
        for start in range(0, events, 5000):
            with store.transaction():
                rows = []
                for i in range(start, min(events, start + 5000)):
                    sid = f"old-{i // per}"
                    at = now - year + (i * year) // max(events, 1)
                    text = " ".join(next(words) for _ in range(12))
                    data = json.dumps({"path": f"src/m{i % 900}.py", "text": text})
                    rows.append(
                        (sid, "claude-code", rng.choice(cats), "seed", 1 + i % 4, data,
                         f"sha256:{i:064x}", at)
                    )  # fmt: skip
                conn.executemany(
                    "INSERT INTO events(session_id, agent, category, type, priority, data, "
                    "content_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        with store.transaction():
            for s in range(events // per + 1):
                at = now - year + (s * per * year) // max(events, 1)
                conn.execute(
                    "INSERT OR IGNORE INTO sessions(session_id, agent, project_dir, started_at, "
                    "last_event_at, event_count, ended_at) "
                    "VALUES (?, 'claude-code', ?, ?, ?, ?, ?)",
                    (f"old-{s}", str(project), at, at + 3600, per, at + 3600),
                )
        for start in range(0, contexts, 1000):
            with store.transaction():
                for i in range(start, min(contexts, start + 1000)):
                    text = " ".join(next(words) for _ in range(20))
                    store.write_context(
                        ("decision", "convention", "issue", "reference")[i % 4],
                        f"Knowledge {i}: {text}",
                    )
        with store.transaction():
            parent = None
            for i in range(tasks):
                cur = conn.execute(
                    "INSERT INTO tasks(name, status, parent_id, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (f"task {i}", ("done", "pending")[i % 9 == 0], parent, now - year, now),
                )
                parent = None if i % 10 == 9 else (parent or cur.lastrowid)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def hot_paths(project: Path, runs: int) -> dict[str, float]:
    """Median wall time of each hot path on the project's store."""
    times: dict[str, list[float]] = {
        k: [] for k in ("hook", "snapshot", "query", "search", "brief")
    }
    for n in range(runs):
        sid = f"hot-{n}"
        for k in range(3):  # a session with a few events to snapshot
            timed([CTXMODE, "hook", "post-tool-use"], project, hook_payload(project, k, sid))
        times["hook"].append(
            timed([CTXMODE, "hook", "post-tool-use"], project, hook_payload(project, 9, sid))[0]
        )
        times["snapshot"].append(
            timed([CTXMODE, "hook", "pre-compact"], project, fixture("pre-compact", project, sid))[
                0
            ]
        )
        times["query"].append(
            timed([CTXMODE, "query", "--json", "--file", "src/m1.py"], project)[0]
        )
        times["search"].append(timed([CTXMODE, "search", "--json", QUERY], project)[0])
        brief = fixture("session-start.startup", project, f"brief-{n}")
        times["brief"].append(timed([CTXMODE, "hook", "session-start"], project, brief)[0])
    return {k: statistics.median(v) for k, v in times.items()}


def overwrite_pages(db: Path, name: str) -> int:
    """Overwrite every page of table ``name`` but its first 8 bytes; return how many."""
    conn = sqlite3.connect(db)
    pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (name,))]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    rng = random.Random(27)
    with db.open("r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * size + 8)
            handle.write(rng.randbytes(size - 8))
    return len(pages)


def part_damage(store: Path, tmp: Path) -> None:
    """In-place repair against salvage of the same damage, on copies of ``store``."""
    import shutil

    from ctxmode.core import db as database
    from ctxmode.core import repair

    print("damaged search index: in-place repair vs salvage (same damage, same store)")
    for table in ("search_trigram_data", "search_fts_data"):
        figures = []
        for how in ("in place", "salvage"):
            copy = tmp / f"damaged-{how[:2]}.db"
            shutil.copyfile(store, copy)
            pages = overwrite_pages(copy, table)
            inode = copy.stat().st_ino
            start = time.perf_counter()
            if how == "in place":
                account, moved = repair.repair(str(copy))
                assert moved is None and copy.stat().st_ino == inode, account
            else:
                database.salvage(str(copy))
            figures.append(time.perf_counter() - start)
            for leftover in tmp.glob("damaged-*"):
                leftover.unlink()
        print(
            f"  {table} ({pages} pages): in place {figures[0]:.1f} s, salvage {figures[1]:.1f} s "
            f"(then indexed files read again); salvage / in place {figures[1] / figures[0]:.1f}x"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--index-runs", type=int, default=3, help="timed index runs (median)")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--contexts", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=5_000)
    parser.add_argument("--skip-repo", action="store_true", help="part 2 only, without an index")
    parser.add_argument("--skip-year", action="store_true", help="part 1 only")
    parser.add_argument("--skip-damage", action="store_true", help="no part 3")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxmode-scale-") as name:
        tmp = Path(name)
        big = None if args.skip_repo else part_repo(tmp, args.runs, args.index_runs)
        if args.skip_year:
            return 0
        if big is None:
            big = tmp / "year"
            (big / ".git").mkdir(parents=True)
        start = time.perf_counter()
        seed_year(big, args.events, args.contexts, args.tasks)
        print(
            f"year-old store: {args.events} events, {args.contexts} contexts, {args.tasks} "
            f"tasks on top of the index, {store_bytes(big / '.context' / 'context.db') / 1e6:.0f}"
            f" MB (seeded in {time.perf_counter() - start:.0f} s)"
        )
        small = tmp / "small"
        (small / ".git").mkdir(parents=True)
        seed_year(small, 200, 200, 50)
        a, b = hot_paths(small, args.runs), hot_paths(big, args.runs)
        print(f"  {'path':10s} {'small ms':>9s} {'year ms':>9s} {'ratio':>6s}  (target <= 1.5)")
        for key in a:
            print(f"  {key:10s} {a[key] * 1000:9.0f} {b[key] * 1000:9.0f} {b[key] / a[key]:6.2f}")
        if not args.skip_damage:
            part_damage(big / ".context" / "context.db", tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
