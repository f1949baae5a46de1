"""Which hooks ``ctxmode install claude-code`` writes for the Claude Code a user really has
(issue 21): in-agent (``mcp_tool``) handlers for 2.1.332, command hooks for 2.1.117, the last
release before ``mcp_tool`` handlers, which ignores every hook of a settings file holding one.
Both binaries are the real ones, pinned in ``harness.CLIS``, each run once headlessly against
the scripted Anthropic server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import harness as h
import pytest
from mock_anthropic import MockAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

PROMPT = "Read the config"


def _install(proj: Path, home: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [h.CTXMODE, "install", "claude-code", "--json", *args],
        cwd=proj, env={**h.git_env(home), **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def _session(exe: Path, proj: Path, home: Path, path: str | None = None) -> list[dict[str, Any]]:
    """One ``claude -p`` prompt that reads a file; the agent's stream-json lines (``path``:
    the agent's PATH, default the harness's, which holds this venv's ``ctxmode``)."""
    read = {"name": "Read", "input": {"file_path": str(proj / "auth" / "config.py")}}
    script = [{"match": PROMPT, "turns": [{"tool_use": [read]}, {"text": "ACCESS_TTL is 86400."}]}]
    with MockAnthropic(script, proj.parent / "requests.jsonl") as mock:
        env = h.claude_env(home, mock.url)
        if path is not None:
            env["PATH"] = path
        proc = subprocess.run(
            [str(exe), "-p", PROMPT, "--output-format", "stream-json", "--verbose",
             "--include-hook-events", "--permission-mode", "bypassPermissions"],
            cwd=proj, env=env, capture_output=True, text=True, timeout=240,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = []
    for line in proc.stdout.splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue
    return lines


def _servers(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The MCP servers of the session's init line: name, status, source (local, project ...)."""
    (init,) = [e for e in lines if e.get("type") == "system" and e.get("subtype") == "init"]
    return list(init.get("mcp_servers") or [])


def _reads(proj: Path, home: Path) -> list[dict[str, Any]]:
    return [
        e
        for e in h.events(proj, home)
        if e["type"] == "read" and str(e["data"].get("path", "")).endswith("auth/config.py")
    ]


def test_a_current_claude_code_on_path_gets_in_agent_hooks(tmp_path: Path) -> None:
    exe = h.cli("claude")
    proj, home = h.make_project(tmp_path / "run")
    path = f"{exe.parent}:{h.git_env(home)['PATH']}"
    result = _install(proj, home, {"PATH": path})
    assert result["hook_kind"] == "in-agent", result
    assert "2.1.332" in result["hook_note"]
    lines = _session(exe, proj, home)
    assert _reads(proj, home), "the in-agent PostToolUse recorded nothing"
    responses = [e for e in lines if e.get("subtype") == "hook_response"]
    assert responses and all(e.get("outcome") == "success" for e in responses), responses


def test_an_older_claude_code_gets_command_hooks_that_it_runs(tmp_path: Path) -> None:
    old = h.cli("claude-old")
    proj, home = h.make_project(tmp_path / "run")
    result = _install(proj, home, {"CTXMODE_CLAUDE": str(old)})
    assert result["hook_kind"] == "command", result
    assert "2.1.117" in result["hook_note"] and "predates" in result["hook_note"]
    _session(old, proj, home)
    assert _reads(proj, home), "the old Claude Code ran no ctxmode hook"
    agents = subprocess.run(
        [h.CTXMODE, "agents", "--json"], cwd=proj, capture_output=True, text=True,
        env={**h.git_env(home), "CTXMODE_CLAUDE": str(old)}, timeout=120,
    )  # fmt: skip
    (row,) = [r for r in json.loads(agents.stdout) if r["agent"] == "claude-code"]
    assert row["hook_kind"] == "command" and row["problems"] == []


def test_in_agent_hooks_forced_on_an_older_claude_code_are_reported(tmp_path: Path) -> None:
    """Why ``auto`` checks the version: 2.1.117 runs none of the file's hooks, not even the
    command ones beside the mcp_tool handlers, and ``ctxmode agents`` says so with the fix."""
    old = h.cli("claude-old")
    proj, home = h.make_project(tmp_path / "run")
    env = {"CTXMODE_CLAUDE": str(old)}
    assert _install(proj, home, env, "--hooks", "in-agent")["hook_kind"] == "in-agent"
    lines = _session(old, proj, home)
    assert not [e for e in lines if e.get("subtype") == "hook_response"]
    # Not even the SessionStart command hook ran: no hook made the store (the server does not).
    db = proj / ".context" / "context.db"
    assert not db.exists() or h.events(proj, home) == []
    agents = subprocess.run(
        [h.CTXMODE, "agents", "--json"], cwd=proj, capture_output=True, text=True,
        env={**h.git_env(home), **env}, timeout=120,
    )  # fmt: skip
    (row,) = [r for r in json.loads(agents.stdout) if r["agent"] == "claude-code"]
    (problem,) = row["problems"]
    assert "2.1.117" in problem and "ignores every hook" in problem
    assert "--hooks command" in problem


def test_calls_lost_while_the_server_is_down_reach_the_snapshot(tmp_path: Path) -> None:
    """In-agent hooks with a ``ctxmode serve`` that cannot start: every tool-call hook fails
    ("not connected") and records nothing, yet the PreCompact command hook reads the calls
    back from the transcript (``hooks.backfill``) and the snapshot the model gets after
    ``/compact`` states the edit and the failing test."""
    import test_claude_code as e2e

    exe = h.cli("claude")
    proj, home = h.make_project(tmp_path / "run")
    assert _install(proj, home, {}, "--hooks", "in-agent")["hook_kind"] == "in-agent"
    local = home / ".claude.json"  # this machine's entry wins over .mcp.json's
    config = json.loads(local.read_text())
    (project,) = config["projects"].values()
    project["mcpServers"]["ctxmode"]["command"] = "/bin/false"  # the server never starts
    local.write_text(json.dumps(config))
    with MockAnthropic(e2e.script(proj), tmp_path / "requests.jsonl") as mock:
        env = h.claude_env(home, mock.url)
        claude = e2e.Claude(exe, proj, env, [])
        claude.ask(e2e.P1)
        claude.ask("/compact")
        mark = len(mock.requests)
        claude.ask(e2e.P3)
        assert claude.close() == 0
        after = [r for r in mock.requests[mark:] if r["kind"] == "main"]
    lost = [
        e for e in claude.stream
        if e.get("subtype") == "hook_response" and e.get("hook_event") == "PostToolUse"
    ]  # fmt: skip
    assert lost and all(e.get("outcome") != "success" for e in lost), lost
    evs = h.events(proj, home)
    assert any((e["category"], e["type"]) == ("file", "edit") for e in evs), evs
    assert any(h.says_what_failed(e["data"]) for e in evs if e["category"] == "error"), evs
    assert after and h.snapshot_copies(after[0]["body"]) == 1
    block = h.snapshot_block(after[0]["body"])
    assert "auth/config.py" in block and "test_rotation" in block, block


def test_the_committed_mcp_json_connects_here_and_in_a_teammate_s_clone(tmp_path: Path) -> None:
    """Issue 32: ``.mcp.json`` is the file teams commit. Here, with no ctxmode on PATH, Claude
    Code runs the project's local-scope entry (this venv's interpreter, ``~/.claude.json``) and
    the in-agent hooks record through it; a teammate's clone of the commit, with nothing of
    this machine and ctxmode on its PATH, connects through the committed entry itself."""
    exe = h.cli("claude")
    proj, home = h.make_project(tmp_path / "run")
    with_claude = f"{exe.parent}:{h.git_env(home)['PATH']}"
    assert _install(proj, home, {"PATH": with_claude})["hook_kind"] == "in-agent"
    committed = json.loads((proj / ".mcp.json").read_text())
    assert committed == {
        "mcpServers": {"ctxmode": {"type": "stdio", "command": "ctxmode", "args": ["serve"]}}
    }
    bare = "/usr/local/bin:/usr/bin:/bin"  # no ctxmode here: only the local entry can start it
    lines = _session(exe, proj, home, path=bare)
    assert {"name": "ctxmode", "status": "connected", "source": "local"} in _servers(lines)
    assert [e for e in h.events(proj, home) if e["type"] == "read"], "nothing recorded"
    responses = [e for e in lines if e.get("subtype") == "hook_response"]
    assert responses and all(e.get("outcome") == "success" for e in responses), responses

    env = h.git_env(home)
    subprocess.run(["git", "add", "-f", ".mcp.json"], cwd=proj, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "share ctxmode"], cwd=proj, env=env, check=True)
    mate = tmp_path / "mate"
    mate_home = mate / "home"
    mate_home.mkdir(parents=True)
    subprocess.run(
        ["git", "clone", "-q", str(proj), str(mate / "proj")], env=env, check=True
    )  # fmt: skip
    lines = _session(exe, mate / "proj", mate_home)  # the harness's PATH: ctxmode on it
    assert {"name": "ctxmode", "status": "connected", "source": "project"} in _servers(lines)
