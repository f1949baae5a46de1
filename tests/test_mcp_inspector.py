"""The MCP Inspector CLI as an independent client of ``ctxmode serve``.

The Inspector (npm ``@modelcontextprotocol/inspector``) is installed once per machine into a
cache folder found from the user database, not ``$HOME`` (the autouse fixture points HOME at a
temporary folder): ``~/.cache/ctxmode-tests/inspector``, or ``$CTXMODE_TEST_CACHE/inspector``.
The tests skip, saying why, only when node/npm are missing or the npm registry is unreachable.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import CTXMODE

INSPECTOR_VERSION = "2.12.0"
INSPECTOR_PACKAGE = f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}"


def cache_root() -> Path:
    override = os.environ.get("CTXMODE_TEST_CACHE")
    if override:
        return Path(override)
    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "ctxmode-tests"


def npm_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["npm_config_cache"] = str(root / "npm-cache")
    env["npm_config_update_notifier"] = "false"
    env["MCP_INSPECTOR_SECRET_STORE"] = "memory"
    return env


@pytest.fixture(scope="session")
def inspector() -> Path:
    """Path of the ``mcp-inspector`` launcher, installing it on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are needed for the MCP Inspector; install Node.js >= 20")
    root = cache_root()
    folder = root / "inspector"
    launcher = folder / "node_modules" / ".bin" / "mcp-inspector"
    installed = folder / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
    if installed.exists() and json.loads(installed.read_text())["version"] == INSPECTOR_VERSION:
        return launcher
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", INSPECTOR_PACKAGE],
        capture_output=True,
        text=True,
        env=npm_env(root),
        timeout=600,
    )
    if proc.returncode != 0:
        ping = subprocess.run(
            [npm, "ping"], capture_output=True, text=True, env=npm_env(root), timeout=60
        )
        if ping.returncode != 0:
            pytest.skip(f"npm registry unreachable, cannot install {INSPECTOR_PACKAGE}")
        pytest.fail(f"npm install {INSPECTOR_PACKAGE} failed:\n{proc.stderr[-3000:]}")
    return launcher


def run_inspector(inspector: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(inspector), "--cli", "--config", str(config), "--server", "ctxmode", *args],
        capture_output=True,
        text=True,
        env=npm_env(cache_root()),
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
