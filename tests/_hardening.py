"""Helpers shared by the hardening tests (tests/test_hardening_*.py).

The hook is driven two ways: as the real process (``python -m ctxmode hook ...``, slow to start)
and in-process through ``ctxmode.hooks.runner.main`` with stdin/stdout/stderr swapped, which runs
the same code minus interpreter start-up, so property tests can afford many examples.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

PY = sys.executable


def hook_process(
    event: str,
    data: bytes,
    *,
    cwd: Path,
    agent: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """The real hook: ``python -m ctxmode hook EVENT [--agent A]`` with ``data`` on stdin."""
    args = [PY, "-m", "ctxmode", "hook", event]
    if agent:
        args += ["--agent", agent]
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        args, input=data, cwd=cwd, capture_output=True, env=full_env, timeout=timeout
    )


@contextlib.contextmanager
def _chdir(path: Path) -> Any:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def hook_inprocess(
    event: str, data: bytes, *, cwd: Path, agent: str | None = None
) -> tuple[int, str, str]:
    """``ctxmode.hooks.runner.main`` with swapped standard streams: (exit code, stdout, stderr)."""
    from ctxmode.hooks import runner

    argv = [event] + (["--agent", agent] if agent else [])
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, out, err
    try:
        with _chdir(cwd):
            code = runner.main(argv)
    finally:
        sys.stdin, sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def assert_hook_contract(code: int, stdout: str | bytes) -> dict[str, Any] | None:
    """Exit 0 and either no stdout or exactly one JSON object; return the object."""
    assert code == 0
    text = stdout.decode("utf-8") if isinstance(stdout, bytes) else stdout
    text = text.strip()
    if not text:
        return None
    assert "\n" not in text, f"more than one line on stdout: {text[:300]!r}"
    value = json.loads(text)
    assert isinstance(value, dict), text[:300]
    return value


def integrity(db_path: Path) -> str:
    """``PRAGMA integrity_check`` of a store file (opened read-only, no ctxmode code)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def fts_integrity(db_path: Path) -> None:
    """FTS5 ``integrity-check`` of both search indexes against ``search_items`` (raises if off)."""
    conn = sqlite3.connect(db_path, timeout=10)
    try:
        for table in ("search_fts", "search_trigram"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def db_rows(db_path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db_path, timeout=10)
    try:
        return list(conn.execute(sql, args).fetchall())
    finally:
        conn.close()


def post_tool_use(
    project: Path, session: str, tool_use_id: str, file_path: str, **extra: Any
) -> dict[str, Any]:
    """A Claude Code PostToolUse payload for an Edit of ``file_path`` (one ``file`` event)."""
    payload: dict[str, Any] = {
        "session_id": session,
        "transcript_path": f"/tmp/transcripts/{session}.jsonl",
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": file_path, "old_string": "a = 1", "new_string": "a = 2"},
        "tool_use_id": tool_use_id,
        "tool_response": {"filePath": file_path, "success": True},
    }
    payload.update(extra)
    return payload
