"""Disk full and read-only storage: a clear error in the CLI and MCP, hooks fail open.

The tests run as root, which ignores permission bits, so read-only and full disks are made for
real: a small tmpfs mounted for the test (remounted read-only, or filled up), and the
immutable attribute (``chattr +i``) on the store file. Where the sandbox forbids mounting or
chattr, the test skips and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from _hardening import db_rows, hook_process, integrity, post_tool_use
from conftest import run_cli
from ctxmode.mcp.sdk.server import build_server


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=30)


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (skips when this environment does not allow mounting)."""
    where = tmp_path / "mnt"
    where.mkdir()
    proc = _run("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(where))
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()}); needs root")
    try:
        yield where
    finally:
        _run("umount", "-l", str(where))


def _project_on(mount: Path) -> Path:
    project = mount / "proj"
    (project / ".git").mkdir(parents=True)
    init = run_cli("init", cwd=project)
    assert init.returncode == 0, init.stderr
    added = run_cli("add", "decision", "we keep the store small", cwd=project)
    assert added.returncode == 0, added.stderr
    return project


def _fill(mount: Path, leave_kib: int = 8) -> Path:
    stat = os.statvfs(mount)
    free = stat.f_bavail * stat.f_frsize - leave_kib * 1024
    filler = mount / "filler"
    with open(filler, "wb") as fh:
        fh.write(b"\0" * max(free, 0))
    return filler


def _big_text(n: int) -> str:
    return " ".join(f"word{i}x{os.urandom(4).hex()}" for i in range(n))


def _assert_cli_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("Error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    assert any(n in proc.stderr for n in needles), proc.stderr


def _hook(project: Path, i: int, big: bool = False) -> subprocess.CompletedProcess[bytes]:
    payload = post_tool_use(project, "disk-session", f"toolu_disk_{i}", f"{project}/src/{i}.py")
    if big:
        payload["tool_input"]["new_string"] = _big_text(3000)
        payload["prompt"] = _big_text(3000)
    return hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project)


async def _mcp_write(project: Path, content: str) -> tuple[bool, str]:
    db = project / ".context" / "context.db"
    async with Client(build_server(db, project), mode="legacy") as client:
        result = await client.call_tool("write_context", {"type": "convention", "content": content})
        return bool(result.is_error), result.content[0].text


@pytest.mark.anyio
async def test_disk_full(mount: Path) -> None:
    project = _project_on(mount)
    db = project / ".context" / "context.db"
    filler = _fill(mount)

    # CLI: writes fail with a message that says what to do; nothing half-written.
    for _ in range(3):
        proc = run_cli("add", "convention", _big_text(4000), cwd=project)
        _assert_cli_error(proc, "free disk space", "disk", "full")
    # Hooks: exit 0, nothing on stdout, whatever the size of the payload.
    for i in range(3):
        proc = _hook(project, i, big=True)
        assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
        assert b"Traceback" not in proc.stderr
    # MCP: an isError result that names the problem.
    is_error, text = await _mcp_write(project, _big_text(4000))
    assert is_error, text
    assert "disk" in text or "full" in text, text

    filler.unlink()
    assert integrity(db) == "ok"
    rows = db_rows(db, "SELECT content FROM contexts")
    assert rows == [("we keep the store small",)]
    # With space again, everything works.
    assert run_cli("add", "convention", "space again", cwd=project).returncode == 0
    assert _hook(project, 99).returncode == 0
    assert db_rows(db, "SELECT count(*) FROM events WHERE session_id = 'disk-session'") == [(1,)]


@pytest.mark.anyio
async def test_read_only_directory(mount: Path) -> None:
    project = _project_on(mount)
    db = project / ".context" / "context.db"
    remount = _run("mount", "-o", "remount,ro", str(mount))
    if remount.returncode != 0:
        pytest.skip(f"cannot remount read-only ({remount.stderr.strip()})")

    _assert_cli_error(
        run_cli("add", "convention", "x", cwd=project), "read-only", "readonly", "writable"
    )
    for args in (("query", "--json"), ("task", "list")):
        proc = run_cli(*args, cwd=project)
        # Reading a WAL store needs its shared-memory file: it may work or fail, but clearly.
        if proc.returncode != 0:
            _assert_cli_error(proc, "read-only", "readonly", "writable", "cannot")
    for i in range(3):
        proc = _hook(project, i)
        assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
        assert b"Traceback" not in proc.stderr
    is_error, text = await _mcp_write(project, "x")
    assert is_error, text
    assert any(n in text for n in ("read-only", "readonly", "writable")), text

    assert _run("mount", "-o", "remount,rw", str(mount)).returncode == 0
    assert integrity(db) == "ok"
    assert db_rows(db, "SELECT content FROM contexts") == [("we keep the store small",)]


@pytest.fixture
def immutable(project: Path) -> Iterator[Path]:
    """The project's store with the immutable attribute set (skips without chattr support)."""
    assert run_cli("init", cwd=project).returncode == 0
    db = project / ".context" / "context.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    proc = _run("chattr", "+i", str(db))
    if proc.returncode != 0:
        pytest.skip(f"chattr +i is not available here ({proc.stderr.strip()})")
    try:
        yield db
    finally:
        _run("chattr", "-i", str(db))


@pytest.mark.anyio
async def test_read_only_store_file(project: Path, immutable: Path) -> None:
    outcomes: list[Any] = []
    _assert_cli_error(
        run_cli("add", "convention", "x", cwd=project), "read-only", "readonly", "writable"
    )
    for i in range(3):
        proc = _hook(project, i)
        assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
        outcomes.append(proc.returncode)
    log = (project / ".context" / "hooks.log").read_text(encoding="utf-8")
    assert "read-only" in log or "readonly" in log, log
    assert "Traceback" not in log
    assert not (project / ".context" / "context.db.spool").exists()  # only a lock is waited out
    is_error, text = await _mcp_write(project, "x")
    assert is_error, text
    assert any(n in text for n in ("read-only", "readonly", "writable")), text
    assert outcomes == [0, 0, 0]
