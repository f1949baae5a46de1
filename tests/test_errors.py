"""Errors carry what to do next as a hint key; each face says it in its own words."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import CTXMODE, run_cli
from ctxmode.cli._common import CLI_HINTS
from ctxmode.core.errors import HINTS, CtxmodeError, NotFound
from ctxmode.mcp.tools.common import TOOL_HINTS


def test_every_hint_has_words_in_every_face() -> None:
    assert set(CLI_HINTS) == set(HINTS)
    assert set(TOOL_HINTS) == set(HINTS)


def test_a_hint_is_a_known_key_and_str_uses_neutral_words() -> None:
    exc = NotFound("no task with id 9", hint="list_tasks")
    assert str(exc) == f"no task with id 9; {HINTS['list_tasks']}"
    assert "ctxmode" not in str(exc) and "create_task" not in str(exc)
    assert exc.render(CLI_HINTS).endswith(CLI_HINTS["list_tasks"])
    with pytest.raises(ValueError, match="unknown error hint"):
        CtxmodeError("x", hint="no-such-hint")


def _serve_call(db: Path, cwd: Path, tool: str, arguments: dict[str, Any]) -> str:
    """One tool call to a real ``ctxmode serve`` over stdio; the error text it answered."""
    assert CTXMODE
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": tool, "arguments": arguments}},
    ]  # fmt: skip
    proc = subprocess.run(
        [CTXMODE, "serve", "--db", str(db)],
        input="".join(json.dumps(m) + "\n" for m in lines),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    (answer,) = [r for r in replies if r.get("id") == 2]
    assert answer["result"]["isError"] is True, answer
    return str(answer["result"]["content"][0]["text"])


def test_the_cli_and_the_mcp_server_each_say_what_to_do_in_their_words(project: Path) -> None:
    assert run_cli("init", cwd=project).returncode == 0
    cli = run_cli("add", "decision", "Use JWTs.", "--task", "999", cwd=project)
    assert cli.returncode == 1
    assert "no task with id 999" in cli.stderr and "`ctxmode task add`" in cli.stderr
    db = project / ".context" / "context.db"
    text = _serve_call(db, project, "update_task", {"task_id": 999, "status": "completed"})
    assert "no task with id 999" in text and "create_task" in text and "ctxmode" not in text
    text = _serve_call(db, project, "search", {"queries": ["jwt"], "source": "nope"})
    assert "each hit names its source" in text and "`ctxmode sources`" not in text
