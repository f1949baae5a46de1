"""The MCP Inspector CLI as an independent client of ``ctxmode serve``.

The Inspector (npm ``@modelcontextprotocol/inspector``, pinned) is installed once per machine by
the tests' one installer (``tests/_tools.py``, the shared cache folder); marker ``npm``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import _tools
from conftest import CTXMODE

pytestmark = pytest.mark.npm

INSPECTOR_VERSION = "2.12.0"
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector"


def npm_env() -> dict[str, str]:
    return {**_tools.npm_env(), "MCP_INSPECTOR_SECRET_STORE": "memory"}


@pytest.fixture(scope="session")
def inspector() -> Path:
    """Path of the ``mcp-inspector`` launcher, installing it on first use."""
    if not shutil.which("node"):
        _tools.unavailable("node is needed for the MCP Inspector; install Node.js >= 20")
    return _tools.npm_tool(
        "inspector", INSPECTOR_PACKAGE, INSPECTOR_VERSION, "node_modules/.bin/mcp-inspector"
    )


def run_inspector(inspector: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(inspector), "--cli", "--config", str(config), "--server", "ctxmode", *args],
        capture_output=True,
        text=True,
        env=npm_env(),
        timeout=120,
    )


@pytest.fixture
def config(project: Path, tmp_path: Path) -> Path:
    assert CTXMODE
    db = project / ".context" / "context.db"
    path = tmp_path / "mcp.json"
    server = {"command": CTXMODE, "args": ["serve", "--db", str(db)]}
    path.write_text(json.dumps({"mcpServers": {"ctxmode": server}}))
    return path


def result_of(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)["result"]


@pytest.mark.timeout(900)
def test_inspector_strict_tools_list(inspector: Path, config: Path) -> None:
    proc = run_inspector(inspector, config, "--method", "tools/list", "--strict", "-q")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    listed = run_inspector(inspector, config, "--method", "tools/list", "--format", "json", "-q")
    names = {t["name"] for t in result_of(listed)["tools"]}
    assert {"write_context", "query_context", "list_tasks"} <= names


@pytest.mark.timeout(900)
def test_inspector_write_then_query_round_trip(inspector: Path, config: Path) -> None:
    content = "Inspector round trip: keep migrations append-only."
    args = {"type": "convention", "content": content, "file_paths": ["schema.py"]}
    written = result_of(
        run_inspector(
            inspector,
            config,
            "--method",
            "tools/call",
            "--tool-name",
            "write_context",
            "--tool-args-json",
            json.dumps(args),
            "--format",
            "json",
            "-q",
        )
    )
    assert written["isError"] is False
    assert written["structuredContent"]["verified"] is True
    found = result_of(
        run_inspector(
            inspector,
            config,
            "--method",
            "tools/call",
            "--tool-name",
            "query_context",
            "--tool-args-json",
            json.dumps({"file_path": "schema.py"}),
            "--format",
            "json",
            "-q",
        )
    )
    assert found["structuredContent"]["ids"] == [written["structuredContent"]["id"]]
    assert content in found["content"][0]["text"]
    bad = run_inspector(
        inspector,
        config,
        "--method",
        "tools/call",
        "--tool-name",
        "update_task",
        "--tool-args-json",
        json.dumps({"task_id": 42, "status": "completed"}),
        "--format",
        "json",
        "-q",
    )
    assert bad.returncode == 5  # the Inspector's exit code for an isError tool result
    assert "no task with id 42" in bad.stdout + bad.stderr
