"""Shared fixtures: every test gets its own project folder and store; no test touches $HOME."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxmode import Store
from ctxmode.core.db import write_gitignore

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
#: The ``ctxmode`` console script of the interpreter running the tests.
CTXMODE = str(VENV_BIN / "ctxmode") if (VENV_BIN / "ctxmode").exists() else shutil.which("ctxmode")
SHARED = REPO.parent / "shared"

#: The modules a hook call runs (``ctxmode hook ...``, and in-agent calls in ``ctxmode serve``):
#: the hot path, with rules of its own (standard library only, no dataclasses, the lean idioms
#: of ``core._lean``); ``tests/test_hooks.py`` measures that a hook loads no other ctxmode
#: module, and ``tests/test_architecture.py`` keeps the lean idioms to these (and the MCP
#: front's standard-library start). Everywhere else: ordinary imports and dataclasses.
HOT_PATH = (
    "ctxmode",
    "ctxmode._entry",
    "ctxmode.core",
    "ctxmode.core._lean",
    "ctxmode.core.cjk",
    "ctxmode.core.config",
    "ctxmode.core.db",
    "ctxmode.core.errors",
    "ctxmode.core.index_schema",
    "ctxmode.core.names",
    "ctxmode.core.pages",
    "ctxmode.core.redact",
    "ctxmode.core.repair",
    "ctxmode.core.salvage",
    "ctxmode.core.schema",
    "ctxmode.core.schema_later",
    "ctxmode.core.secret_patterns",
    "ctxmode.core.secret_scan",
    "ctxmode.core.secret_shapes",
    "ctxmode.core.vocab",
    "ctxmode.exchange",
    "ctxmode.exchange.team_state",
    "ctxmode.hooks",
    "ctxmode.hooks.backfill",
    "ctxmode.hooks.handlers",
    "ctxmode.hooks.hooklog",
    "ctxmode.hooks.in_agent",
    "ctxmode.hooks.plain",
    "ctxmode.hooks.runner",
    "ctxmode.knowledge",
    "ctxmode.knowledge.follow",
    "ctxmode.knowledge.ranking",
    "ctxmode.sessions",
    "ctxmode.sessions.adapters",
    "ctxmode.sessions.budget",
    "ctxmode.sessions.corrections",
    "ctxmode.sessions.events",
    "ctxmode.sessions.failures",
    "ctxmode.sessions.prompts",
    "ctxmode.sessions.records",
    "ctxmode.sessions.shell_reads",
    "ctxmode.sessions.snapshot",
    "ctxmode.sessions.spool",
    "ctxmode.sessions.state",
    "ctxmode.sessions.transcript",
    "ctxmode.sessions.vocab",
    "ctxmode.store",
    "ctxmode.store.exchange",
    "ctxmode.store.knowledge",
    "ctxmode.store.search",
    "ctxmode.store.sessions",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under ``tests/e2e`` drives a real agent binary: marker ``e2e``."""
    e2e = REPO / "tests" / "e2e"
    for item in items:
        if e2e in Path(item.path).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (``pytest.mark.anyio``) run on asyncio, as the MCP server does."""
    return "asyncio"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in (
        "CTXMODE_DB", "CTXMODE_DISABLE", "CLAUDE_PROJECT_DIR", "CODEX_HOME", "CLAUDE_CONFIG_DIR",
        "XDG_DATA_HOME", "COPILOT_HOME", "KIMI_CODE_HOME",
    ):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    for name in (
        "GEMINI_CLI_HOME",
        "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
        "GEMINI_CLI_TRUST_WORKSPACE",
    ):
        monkeypatch.delenv(name, raising=False)
    # Gemini CLI's machine-wide settings (/etc/gemini-cli) must not decide a test's outcome.
    monkeypatch.setenv(
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "etc-gemini" / "settings.json")
    )
    # No Claude Code to find unless a test names one: `ctxmode install claude-code` (auto)
    # writes command hooks whatever this machine has installed.
    monkeypatch.setenv("CTXMODE_CLAUDE", str(tmp_path / "no-claude-here"))


@pytest.fixture
def bare_project(tmp_path: Path) -> Path:
    """A git-like project folder (a ``.git`` dir marks its root) where ``init`` never ran."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def project(bare_project: Path) -> Path:
    """A git-like project folder with its store, as ``ctxmode init`` leaves it (only ``init``
    and the agent-facing faces create a store; other commands refuse without one)."""
    context = bare_project / ".context"
    with Store.open(context / "context.db"):
        write_gitignore(str(context))
    return bare_project


@pytest.fixture
def store(project: Path) -> Iterator[Store]:
    with Store.open(project / ".context" / "context.db") as s:
        yield s


@pytest.fixture
async def mcp_client(project: Path) -> AsyncIterator[Any]:
    """An in-process MCP client of the project's server (tests mark themselves anyio)."""
    from mcp import Client

    from ctxmode.mcp.sdk.server import build_server

    server = build_server(project / ".context" / "context.db", project)
    async with Client(server, mode="legacy") as client:
        yield client


def run_cli(
    *args: str, cwd: Path, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real ``ctxmode`` command in a subprocess."""
    assert CTXMODE, "ctxmode console script not installed"
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [CTXMODE, *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )


@contextlib.contextmanager
def serve_body(body: bytes, content_type: str, path: str = "/") -> Iterator[str]:
    """A local HTTP server answering every GET with ``body``; yields the URL of ``path``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server API
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{path}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def claude_substitute(template: Any, payload: dict[str, Any]) -> Any:
    """What Claude Code 2.1.332 sends for ``template`` (measured: reports-e2e, mcp_tool probe):
    ``${field}`` in string values; objects as compact JSON, scalars as strings, missing ""."""
    if isinstance(template, dict):
        return {k: claude_substitute(v, payload) for k, v in template.items()}
    if isinstance(template, str) and template.startswith("${") and template.endswith("}"):
        value = payload.get(template[2:-1])
        if value is None:
            return ""
        if isinstance(value, dict | list):
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    return template
