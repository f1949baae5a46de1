"""Bounds on input (issue 28): a huge session id, an endless import, task-parent cycles in an
import, and `ctxmode hook --help`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

from _hardening import hook_process
from conftest import CTXMODE, run_cli


def _db_size(project: Path) -> int:
    db = project / ".context" / "context.db"
    return sum(p.stat().st_size for p in db.parent.glob("context.db*"))


def test_a_huge_session_id_is_stored_as_a_short_stable_digest(project: Path) -> None:
    assert run_cli("init", cwd=project).returncode == 0
    huge = "S" * 5_000_000
    for n in range(2):
        payload = {
            "session_id": huge,
            "cwd": str(project),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {n}"},
            "tool_use_id": f"t{n}",
        }
        before = _db_size(project)
        assert (
            hook_process("PostToolUse", json.dumps(payload).encode(), cwd=project).returncode == 0
        )
        assert _db_size(project) - before < 1_000_000
    conn = sqlite3.connect(project / ".context" / "context.db")
    try:
        ids = {r[0] for r in conn.execute("SELECT DISTINCT session_id FROM events")}
    finally:
        conn.close()
    assert len(ids) == 1 and all(len(i) <= 200 for i in ids)


def test_import_of_an_endless_stream_is_refused_fast(project: Path) -> None:
    assert run_cli("init", cwd=project).returncode == 0
    assert CTXMODE
    started = time.monotonic()
    proc = subprocess.Popen(
        [CTXMODE, "import", "/dev/zero"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0
    while proc.poll() is None and time.monotonic() - started < 30:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            peak = max(peak, int(status.split("VmRSS:")[1].split()[0]))
        except (OSError, IndexError):
            pass
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 1 and "not a ctxmode export" in err
    assert peak < 300_000  # KB
    assert time.monotonic() - started < 30


def test_import_refuses_task_parent_cycles(project: Path, tmp_path: Path) -> None:
    assert run_cli("init", cwd=project).returncode == 0

    def task(tid: int, parent: int | None) -> str:
        return json.dumps(
            {
                "kind": "task",
                "id": tid,
                "name": f"t{tid}",
                "status": "pending",
                "parent_id": parent,
                "created_at": 1,
                "updated_at": 1,
            }  # fmt: skip
        )

    for lines in ([task(100, 101), task(101, 100)], [task(102, 102)]):
        path = tmp_path / "cycle.jsonl"
        path.write_text("\n".join(lines) + "\n")
        proc = run_cli("import", str(path), cwd=project)
        assert proc.returncode == 1 and "cycle" in proc.stderr, proc.stderr
        listed = run_cli("task", "list", "--json", cwd=project)
        assert json.loads(listed.stdout)["tasks"] == []
    path.write_text(task(103, None) + "\n" + task(104, 103) + "\n")
    assert run_cli("import", str(path), cwd=project).returncode == 0


def test_hook_help_prints_usage_and_reads_nothing(bare_project: Path) -> None:
    for flag in ("--help", "-h"):
        proc = hook_process(flag, b"", cwd=bare_project)
        out = proc.stdout.decode()
        assert proc.returncode == 0 and out.startswith("Usage: ctxmode hook")
        assert "session-start" in out and "EVENT" in out
    assert not os.path.exists(bare_project / ".context" / "context.db")
