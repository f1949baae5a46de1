"""Benchmark the knowledge store at 100k contexts: write_context and query_context per mode.

Fills a fresh temporary store with N contexts (default 100,000) spread over a task tree and
files, then times, one call at a time, ``write_context`` (with a task and a file link plus the
write-then-verify read-back) and ``query_context`` for each mode with a task, a file, and
neither. Baselines measured in the same run: a bare ``INSERT`` + commit and a bare indexed
``SELECT`` on the same connection settings, so the figures can be read as overhead ratios.

Usage: .venv/bin/python bench/knowledge.py [--contexts 100000] [--samples 500]
Targets (2-core machine): write <= 1 ms median, query <= 5 ms median.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ctxmode import Store
from ctxmode.core.models import CONTEXT_TYPES, tier_of
from ctxmode.knowledge.contexts import content_hash

WORDS = [
    "cache",
    "auth",
    "token",
    "session",
    "retry",
    "queue",
    "schema",
    "index",
    "migration",
    "handler",
    "route",
    "parser",
    "config",
    "worker",
    "thread",
    "lock",
    "timeout",
    "payload",
    "batch",
    "stream",
    "vector",
    "search",
    "ranking",
    "budget",
]


def fill(store: Store, n: int, rng: random.Random) -> tuple[list[int], list[str]]:
    conn = store.conn
    now = int(time.time())
    tasks: list[int] = []
    with store.transaction():
        for i in range(max(50, n // 50)):
            parent = rng.choice(tasks) if tasks and rng.random() < 0.7 else None
            cur = conn.execute(
                "INSERT INTO tasks(name, status, parent_id, created_at, updated_at) "
                "VALUES (?, 'in_progress', ?, ?, ?)",
                (f"task {i}", parent, now, now),
            )
            tasks.append(int(cur.lastrowid or 0))
        files = [f"src/mod{i // 20}/file{i}.py" for i in range(max(100, n // 20))]
        conn.executemany(
            "INSERT INTO files(path, hash, last_indexed) VALUES (?, NULL, ?)",
            [(f, now) for f in files],
        )
        rows = []
        for i in range(n):
            ctype = rng.choice(CONTEXT_TYPES)
            text = " ".join(rng.choices(WORDS, k=rng.randint(8, 30))) + f" #{i}"
            ts = now - rng.randint(0, 86_400 * 60)
            scope = "task" if rng.random() < 0.2 else "global"
            rows.append(
                (ctype, tier_of(ctype), text, "{}", scope, "bench", content_hash(ctype, text),
                 ts, ts)
            )  # fmt: skip
        conn.executemany(
            "INSERT INTO contexts(type, tier, content, metadata, scope, owner, content_hash, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.executemany(
            "INSERT OR IGNORE INTO context_task_map(context_id, task_id, relevance) "
            "VALUES (?, ?, ?)",
            [(cid, rng.choice(tasks), round(rng.random(), 2)) for cid in range(1, n + 1)],
        )
        conn.executemany(
            "INSERT OR IGNORE INTO context_file_map(context_id, file_id, relation_type) "
            "VALUES (?, ?, 'related')",
            [(cid, rng.randint(1, len(files))) for cid in range(1, n + 1) if rng.random() < 0.6],
        )
    conn.execute("ANALYZE")
    return tasks, files


def median_ms(fn: Callable[[int], object], samples: int) -> float:
    times = []
    for i in range(samples):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contexts", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".context" / "context.db"
        with Store.open(path) as store:
            t0 = time.perf_counter()
            tasks, files = fill(store, args.contexts, rng)
            print(f"filled {args.contexts:,} contexts, {len(tasks):,} tasks, {len(files):,} files "
                  f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
            conn = store.conn

            def bare_insert(i: int) -> None:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT INTO files(path, hash, last_indexed) VALUES (?, NULL, 0)",
                    (f"baseline/{i}",),
                )
                conn.execute("COMMIT")

            def bare_select(i: int) -> None:
                conn.execute(
                    "SELECT c.id FROM context_task_map m JOIN contexts c ON c.id = m.context_id "
                    "WHERE m.task_id = ?",
                    (tasks[i % len(tasks)],),
                ).fetchall()

            base_w = median_ms(bare_insert, args.samples)
            base_q = median_ms(bare_select, args.samples)

            def write(i: int) -> None:
                store.write_context(
                    rng.choice(CONTEXT_TYPES),
                    f"bench write {i} " + " ".join(rng.choices(WORDS, k=12)),
                    task_id=rng.choice(tasks),
                    file_paths=[rng.choice(files)],
                )

            write_ms = median_ms(write, args.samples)
            print(f"\nbaseline bare INSERT+COMMIT     {base_w:7.3f} ms")
            print(f"baseline bare indexed SELECT    {base_q:7.3f} ms")
            print(f"write_context (task+file link)  {write_ms:7.3f} ms  "
                  f"{write_ms / base_w:5.1f}x baseline  target <= 1 ms: "
                  f"{'OK' if write_ms <= 1 else 'MISS'}")  # fmt: skip
            print(f"\n{'query_context':<32}{'median':>9}  {'x base':>6}  target <= 5 ms")
            for mode in ("focused", "normal", "broad"):
                for label, kwargs in (
                    ("task", lambda i: {"task_id": tasks[(i * 7) % len(tasks)]}),
                    ("file", lambda i: {"file_path": files[(i * 13) % len(files)]}),
                    ("task+file", lambda i: {"task_id": tasks[(i * 7) % len(tasks)],
                                             "file_path": files[(i * 13) % len(files)]}),
                    ("none", lambda i: {}),
                ):  # fmt: skip
                    ms = median_ms(
                        lambda i, kw=kwargs, m=mode: store.query_context(mode=m, **kw(i)),
                        args.samples,
                    )
                    verdict = "OK" if ms <= 5 else "MISS"
                    print(f"  {mode:<8} by {label:<19}{ms:7.3f} ms  {ms / base_q:6.1f}  {verdict}")
            budget_ms = median_ms(
                lambda i: store.query_context(
                    task_id=tasks[i % len(tasks)], mode="broad", budget_tokens=300
                ),
                args.samples,
            )
            print(f"  broad by task, 300-token budget {budget_ms:7.3f} ms  "
                  f"{budget_ms / base_q:6.1f}  {'OK' if budget_ms <= 5 else 'MISS'}")  # fmt: skip


if __name__ == "__main__":
    main()
