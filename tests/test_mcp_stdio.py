"""``ctxmode serve`` as a real subprocess: stdio JSON-RPC, DB resolution and exit behaviour."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import CTXMODE
from ctxmode.core.db import GITIGNORE

pytestmark = pytest.mark.timeout(60)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


def server_params(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    assert CTXMODE
    return StdioServerParameters(
        command=CTXMODE,
        args=["serve", *args],
        cwd=str(cwd),
        env={"HOME": os.environ["HOME"], **(env or {})},
    )


@pytest.mark.anyio
async def test_stdio_round_trip(project: Path) -> None:
    async with Client(server_params(project), mode="legacy") as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"write_context", "query_context", "session_snapshot"} <= names
        written = await c.call_tool(
            "write_context", {"type": "constraint", "content": "Python 3.11 only."}
        )
        assert written.is_error is False
        bad = await c.call_tool("write_context", {"type": "rule", "content": "x"})
        assert bad.is_error is True
        found = await c.call_tool("query_context", {})
        assert "Python 3.11 only." in found.content[0].text
        assert found.structured_content["ids"] == [written.structured_content["id"]]
    assert (project / ".context" / "context.db").is_file()
    assert (project / ".context" / ".gitignore").read_text() == GITIGNORE


@pytest.mark.anyio
async def test_db_from_claude_project_dir_and_flag(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sub").mkdir(parents=True)
    params = server_params(elsewhere / "sub", env={"CLAUDE_PROJECT_DIR": str(project)})
    async with Client(params, mode="legacy") as c:
        await c.call_tool("create_task", {"name": "From Claude"})
    assert (project / ".context" / "context.db").is_file()
    explicit = tmp_path / "explicit.db"
    async with Client(server_params(elsewhere, "--db", str(explicit)), mode="legacy") as c:
        result = await c.call_tool("list_tasks", {})
        assert result.structured_content["count"] == 0
    assert explicit.is_file()
    # ``ctxmode --db X serve`` goes through the click CLI instead of the fast path.
    via_cli = tmp_path / "via-cli.db"
    assert CTXMODE
    params = StdioServerParameters(
        command=CTXMODE,
        args=["--db", str(via_cli), "serve"],
        cwd=str(elsewhere),
        env={"HOME": os.environ["HOME"]},
    )
    async with Client(params, mode="legacy") as c:
        await c.call_tool("create_task", {"name": "Via the CLI"})
    assert via_cli.is_file()


def test_bad_arguments_exit_1(project: Path) -> None:
    assert CTXMODE
    proc = subprocess.run(
        [CTXMODE, "serve", "--port", "1"], cwd=project, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1
    assert "Error: unexpected argument '--port'" in proc.stderr
    assert proc.stdout == ""


def test_serve_from_a_deleted_directory_says_so(tmp_path: Path) -> None:
    assert CTXMODE
    script = 'mkdir gone && cd gone && rmdir ../gone && exec "$0" serve </dev/null'
    proc = subprocess.run(
        ["sh", "-c", script, CTXMODE], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("Error: the current directory no longer exists")


def test_serve_help_goes_through_the_cli(project: Path) -> None:
    assert CTXMODE
    proc = subprocess.run(
        [CTXMODE, "serve", "--help"], cwd=project, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0 and "--db" in proc.stdout


def _read_line(fd: int, timeout: float) -> bytes:
    """One line from a raw pipe, or b"" on EOF; fails the test on timeout."""
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no line within {timeout} s (got {buf!r})"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 1)
            if not chunk:
                return buf
            buf += chunk
    return buf


def test_exits_within_2s_after_stdin_closes(project: Path) -> None:
    assert CTXMODE
    proc = subprocess.Popen(
        [CTXMODE, "serve"],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        reply = json.loads(_read_line(proc.stdout.fileno(), 30))
        assert reply["result"]["serverInfo"]["name"] == "ctxmode"
        proc.stdin.close()
        assert proc.wait(timeout=2) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_exits_when_its_parent_goes_away(project: Path) -> None:
    """The agent dies but its stdin pipe stays open elsewhere: the parent watch ends it."""
    assert CTXMODE
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    launcher = (
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.argv[1], 'serve'], stdin=int(sys.argv[2]), "
        "stdout=int(sys.argv[3]), stderr=subprocess.DEVNULL)\n"
        "print(p.pid, flush=True)\n"
        "sys.stdin.readline()\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", launcher, CTXMODE, str(stdin_r), str(stdout_w)],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        pass_fds=(stdin_r, stdout_w),
    )
    os.close(stdin_r)
    os.close(stdout_w)
    server_pid = None
    exited = False
    try:
        assert parent.stdin and parent.stdout
        server_pid = int(parent.stdout.readline())
        os.write(stdin_w, json.dumps(INITIALIZE).encode() + b"\n")
        assert b"serverInfo" in _read_line(stdout_r, 30)
        parent.stdin.write(b"\n")  # let the launcher exit; we still hold the server's stdin
        parent.stdin.flush()
        parent.wait(timeout=10)
        # The server's end of the stdout pipe closes when it exits (EOF on our side).
        assert _read_line(stdout_r, 10) == b""
        exited = True
    finally:
        os.close(stdin_w)
        os.close(stdout_r)
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if server_pid is not None and not exited:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server_pid, 9)
