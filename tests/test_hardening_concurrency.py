"""Load: eight hook processes and one MCP server hammer one project store at the same time.

Each worker process fires 200 ``post-tool-use`` payloads at the project. Every
``SUBPROCESS_EVERY``-th payload goes through the real command (``python -m ctxmode hook``); the
others call ``ctxmode.hooks.runner.main`` in the worker (same code, same store open/close per
call, minus interpreter start-up) so that 1 600 hook calls fit in the suite's time budget while
eight processes really contend for SQLite's write lock. Meanwhile the test process drives the
MCP server in-process (writes and reads). Afterwards: every event exactly once, every hook exit
0 with empty stdout, no "database is locked" anywhere (stderr, hook log, MCP results).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from _hardening import (
    PY,
    db_rows,
    fts_integrity,
    hook_inprocess,
    hook_process,
    integrity,
    post_tool_use,
)
from ctxmode.mcp.sdk.server import build_server

WORKERS = 8
PAYLOADS = 200
SUBPROCESS_EVERY = 10

WORKER = r"""
import io, json, os, subprocess, sys
from ctxmode.hooks import runner

payload_file, result_file = sys.argv[1], sys.argv[2]
every = int(sys.argv[3])
payloads = [line.encode() for line in open(payload_file, encoding="utf-8").read().splitlines()]
results = []
for i, data in enumerate(payloads):
    if i % every == 0:
        proc = subprocess.run(
            [sys.executable, "-m", "ctxmode", "hook", "post-tool-use"],
            input=data, capture_output=True, timeout=120,
        )
        results.append(["process", proc.returncode, proc.stdout.decode(), proc.stderr.decode()])
        continue
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, out, err
    try:
        code = runner.main(["post-tool-use"])
    finally:
        sys.stdin, sys.stdout, sys.stderr = old
    results.append(["inprocess", code, out.getvalue(), err.getvalue()])
with open(result_file, "w", encoding="utf-8") as fh:
    json.dump(results, fh)
"""


def _payload(project: Path, worker: int, i: int) -> dict[str, Any]:
    return post_tool_use(
        project,
        f"sess-{worker}",
        f"toolu_{worker}_{i}",
        f"{project}/src/w{worker}/f{i}.py",
    )


async def _mcp_load(db: Path, project: Path, workers: list[subprocess.Popen[bytes]]) -> list[str]:
    """Write and read through the MCP server until the workers are done; return the problems."""
    problems: list[str] = []
    written = 0
    async with Client(build_server(db, project), mode="legacy") as client:
        while any(w.poll() is None for w in workers) or written < 20:
            result = await client.call_tool(
                "write_context",
                {"type": "convention", "content": f"mcp convention number {written} under load"},
            )
            if result.is_error:
                problems.append(result.content[0].text)
            else:
                written += 1
            for tool, args in (
                ("query_context", {"limit": 5}),
                ("session_events", {"limit": 5}),
                ("list_tasks", {}),
            ):
                result = await client.call_tool(tool, args)
                if result.is_error:
                    problems.append(f"{tool}: {result.content[0].text}")
            await anyio.sleep(0.05)
    rows = db_rows(db, "SELECT content FROM contexts WHERE content LIKE 'mcp convention number %'")
    contents = sorted(r[0] for r in rows)
    expected = sorted(f"mcp convention number {n} under load" for n in range(written))
    if contents != expected:
        problems.append(f"MCP writes: {len(contents)} stored, {written} acknowledged")
    return problems


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.timeout(240)
async def test_eight_hook_processes_and_an_mcp_server_share_one_store(
    project: Path, tmp_path: Path
) -> None:
    db = project / ".context" / "context.db"
    # The store exists before the storm, as it does once an agent has used ctxmode.
    code, _, _ = hook_inprocess(
        "post-tool-use", json.dumps(_payload(project, 99, 0)).encode(), cwd=project
    )
    assert code == 0 and db.exists()

    workers: list[subprocess.Popen[bytes]] = []
    result_files = []
    for w in range(WORKERS):
        payload_file = tmp_path / f"payloads-{w}.jsonl"
        payload_file.write_text(
            "\n".join(json.dumps(_payload(project, w, i)) for i in range(PAYLOADS)),
            encoding="utf-8",
        )
        result_files.append(tmp_path / f"results-{w}.json")
        workers.append(
            subprocess.Popen(
                [PY, "-c", WORKER, str(payload_file), str(result_files[-1]), str(SUBPROCESS_EVERY)],
                cwd=project,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(os.environ),
            )
        )
    started = time.monotonic()
    try:
        problems = await _mcp_load(db, project, workers)
        outputs = [w.communicate(timeout=200) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
    elapsed = time.monotonic() - started

    for w, (_out, err) in zip(workers, outputs, strict=True):
        assert w.returncode == 0, err.decode()[-2000:]
    assert problems == []

    processes = 0
    for result_file in result_files:
        results = json.loads(result_file.read_text(encoding="utf-8"))
        assert len(results) == PAYLOADS
        for mode, code, stdout, stderr in results:
            processes += mode == "process"
            assert code == 0, stderr
            assert stdout == "", stdout
            assert "locked" not in stderr.lower(), stderr
    assert processes == WORKERS * -(-PAYLOADS // SUBPROCESS_EVERY)

    log = project / ".context" / "hooks.log"
    log_text = log.read_text(encoding="utf-8") if log.exists() else ""
    assert "locked" not in log_text.lower(), log_text[-3000:]
    assert "ERROR" not in log_text, log_text[-3000:]

    # Every payload stored exactly once, in its own session.
    rows = db_rows(
        db,
        "SELECT session_id, json_extract(data, '$.path'), count(*) FROM events "
        "WHERE category = 'file' AND session_id != 'sess-99' GROUP BY 1, 2",
    )
    assert all(n == 1 for _, _, n in rows), [r for r in rows if r[2] != 1][:5]
    seen = {(s, p) for s, p, _ in rows}
    expected = {
        (f"sess-{w}", f"{project}/src/w{w}/f{i}.py")
        for w in range(WORKERS)
        for i in range(PAYLOADS)
    }
    assert seen == expected, f"missing {len(expected - seen)}, extra {len(seen - expected)}"
    counts = dict(db_rows(db, "SELECT session_id, event_count FROM sessions"))
    for w in range(WORKERS):
        assert counts[f"sess-{w}"] == PAYLOADS
    assert integrity(db) == "ok"
    fts_integrity(db)
    print(f"{WORKERS}x{PAYLOADS} hook calls + MCP load in {elapsed:.1f}s", file=sys.stderr)


def test_a_retried_hook_is_a_no_op(project: Path) -> None:
    """The same payload again (same tool_use_id) stores nothing, even when it is no longer
    among the recent events that duplicate detection looks at."""
    db = project / ".context" / "context.db"
    first = json.dumps(_payload(project, 0, 0)).encode()
    assert hook_process("post-tool-use", first, cwd=project).returncode == 0
    # Push the first event out of the duplicate-detection window (sessions.RECENT_WINDOW).
    from ctxmode.sessions.records import RECENT_WINDOW

    for i in range(1, RECENT_WINDOW + 5):
        code, _, _ = hook_inprocess(
            "post-tool-use", json.dumps(_payload(project, 0, i)).encode(), cwd=project
        )
        assert code == 0
    before = db_rows(db, "SELECT count(*) FROM events")[0][0]
    assert before == RECENT_WINDOW + 4 + 1
    retry = hook_process("post-tool-use", first, cwd=project)
    assert retry.returncode == 0 and retry.stdout == b""
    code, _, _ = hook_inprocess("post-tool-use", first, cwd=project)
    assert code == 0
    assert db_rows(db, "SELECT count(*) FROM events")[0][0] == before
    assert db_rows(db, "SELECT event_count FROM sessions WHERE session_id = 'sess-0'") == [
        (before,)
    ]


def test_a_retry_with_reformatted_json_is_still_a_no_op(project: Path) -> None:
    """An agent that re-serialises the payload on retry (other key order, other spacing) sends
    the same call: the tool_use_id, not the byte layout, identifies it."""
    db = project / ".context" / "context.db"
    payload = _payload(project, 0, 0)
    hook_inprocess("post-tool-use", json.dumps(payload).encode(), cwd=project)
    from ctxmode.sessions.records import RECENT_WINDOW

    for i in range(1, RECENT_WINDOW + 5):
        hook_inprocess("post-tool-use", json.dumps(_payload(project, 0, i)).encode(), cwd=project)
    before = db_rows(db, "SELECT count(*) FROM events")[0][0]
    reformatted = json.dumps(dict(reversed(list(payload.items()))), indent=2).encode()
    code, out, _ = hook_inprocess("post-tool-use", reformatted, cwd=project)
    assert code == 0 and out == ""
    assert db_rows(db, "SELECT count(*) FROM events")[0][0] == before
