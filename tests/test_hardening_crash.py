"""Crash safety: a writer killed with SIGKILL at random points loses nothing it committed.

The writer alternates two product paths: ``Store.write_context`` (contexts, links, FTS
triggers) and a hook call (``ctxmode.hooks.runner.main``: store open, session events, detector
state, store close). After each commit it prints what it wrote and flushes, so every line the
test reads names a committed write. The test kills it 50 times (after a random number of
writes, or at a random moment after spawn, which also lands in interpreter start-up, store
creation and migration), then checks ``PRAGMA integrity_check``, reopens the store through the
product path and looks for every reported write.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from _hardening import PY, db_rows, fts_integrity, integrity
from ctxmode import Store

KILLS = 50

WRITER = r"""
import io, json, sys
from ctxmode import Store
from ctxmode.hooks import runner

db, project, tag = sys.argv[1], sys.argv[2], sys.argv[3]
i = 0
while True:
    with Store.open(db) as store:
        for _ in range(3):
            res = store.write_context(
                "convention", f"crash {tag} context {i}", file_paths=[f"src/{tag}_{i}.py"]
            )
            print(f"ctx {res.id} crash {tag} context {i}", flush=True)
            i += 1
    payload = {
        "session_id": f"crash-{tag}",
        "cwd": project,
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_use_id": f"toolu_{tag}_{i}",
        "tool_input": {"file_path": f"{project}/src/{tag}_hook_{i}.py",
                       "old_string": "x", "new_string": "y"},
    }
    sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode()), encoding="utf-8")
    runner.main(["post-tool-use"])
    print(f"evt {project}/src/{tag}_hook_{i}.py", flush=True)
    i += 1
"""


def _kill_writer(db: Path, project: Path, tag: str, rng: random.Random) -> list[str]:
    """Run the writer, SIGKILL it at a random point, return the lines it reported."""
    proc = subprocess.Popen(
        [PY, "-c", WRITER, str(db), str(project), tag],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        if rng.random() < 0.3:
            # Anywhere from interpreter start-up to the first writes.
            time.sleep(rng.uniform(0.0, 0.4))
        else:
            wanted = rng.randint(1, 25)
            while len(lines) < wanted:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line.rstrip("\n"))
            time.sleep(rng.uniform(0.0, 0.01))
    finally:
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err
    assert "Traceback" not in err, err
    lines += [line for line in out.splitlines() if line]
    return lines


@pytest.mark.slow
def test_sigkilled_writer_loses_nothing_it_committed(tmp_path: Path) -> None:
    rng = random.Random(7)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    db = project / ".context" / "context.db"
    committed_contexts: dict[int, str] = {}
    committed_events: list[str] = []
    total_checked = 0
    for n in range(KILLS):
        if n % 10 == 0 and db.exists():
            # A new store now and then, so that kills also land in creation and migration.
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            committed_contexts.clear()
            committed_events.clear()
        for line in _kill_writer(db, project, f"k{n}", rng):
            kind, rest = line.split(" ", 1)
            if kind == "ctx":
                cid, content = rest.split(" ", 1)
                committed_contexts[int(cid)] = content
            else:
                committed_events.append(rest)
        if not db.exists():
            continue  # killed before the store was created
        assert integrity(db) == "ok", f"kill {n}"
        with Store.open(db) as store:  # the product path opens (and migrates) what is left
            for cid, content in committed_contexts.items():
                assert store.get_context(cid).content == content, f"kill {n}: context {cid}"
            assert integrity(db) == "ok"
        paths = {r[0] for r in db_rows(db, "SELECT json_extract(data, '$.path') FROM events")}
        missing = [p for p in committed_events if p not in paths]
        assert not missing, f"kill {n}: events lost: {missing[:3]}"
        fts_integrity(db)
        fts = db_rows(db, "SELECT count(*) FROM search_items")[0][0]
        assert fts >= len(committed_contexts)
        total_checked += len(committed_contexts) + len(committed_events)
    assert total_checked > KILLS, "the writer hardly got to write: the test tested nothing"
