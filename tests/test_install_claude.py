"""Claude Code's in-agent hooks (``mcp_tool`` handlers into the running server): what
``ctxmode install claude-code --hooks ...`` writes, replaces and removes, and what ``status``
reports, on real files in a temp project and home. Which kind ``auto`` picks for real Claude
Code binaries is checked in ``tests/e2e/test_claude_install.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import claude_substitute, run_cli
from ctxmode.agents import claude
from ctxmode.agents import install as inst
from ctxmode.core.errors import InvalidInput
from ctxmode.hooks.in_agent import payload_from

IN_AGENT = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop"}
COMMANDS = {"SessionStart", "PreCompact", "SessionEnd"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir(exist_ok=True)
    return path


def _settings(project: Path) -> dict[str, Any]:
    return json.loads((project / ".claude" / "settings.local.json").read_text())


def _handlers(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        event: [h for group in groups for h in group["hooks"]]
        for event, groups in doc.get("hooks", {}).items()
    }


def test_in_agent_install_writes_mcp_tool_handlers_and_approves_the_server(
    project: Path, home: Path
) -> None:
    result = inst.install("claude-code", project_root=project, home=home, hooks="in-agent")
    assert result.hook_kind == "in-agent"
    doc = _settings(project)
    handlers = _handlers(doc)
    assert set(handlers) == IN_AGENT | COMMANDS
    for event in IN_AGENT:
        (handler,) = handlers[event]
        assert handler["type"] == "mcp_tool" and handler["server"] == "ctxmode"
        assert handler["tool"] == "record_hook"
        assert handler["input"]["agent"] == "claude-code"
        assert handler["input"]["payload"]["tool_input"] == "${tool_input}"
    for event in COMMANDS:
        (handler,) = handlers[event]
        assert handler["type"] == "command" and " -m ctxmode hook " in handler["command"]
    assert handlers["PostToolUse"][0]["input"]["event"] == "post-tool-use"
    assert doc["enabledMcpjsonServers"] == ["ctxmode"]
    st = inst.status("claude-code", project_root=project, home=home)
    assert st.hooks_installed and st.mcp_installed and st.hook_kind == "in-agent"
    assert st.problems == ()
    again = inst.install("claude-code", project_root=project, home=home, hooks="in-agent")
    assert {c.action for c in again.changes} == {"unchanged"}


def test_the_handlers_input_is_what_record_hook_reads_back(project: Path, home: Path) -> None:
    """The written template, substituted the way Claude Code does (objects as JSON text,
    scalars as strings, missing fields empty), comes back as the command hook's payload."""
    inst.install("claude-code", project_root=project, home=home, hooks="in-agent")
    template = _handlers(_settings(project))["PostToolUse"][0]["input"]["payload"]
    sent = {
        "hook_event_name": "PostToolUse",
        "session_id": "s1",
        "cwd": str(project),
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q"},
        "tool_response": {"stdout": "1 failed", "stderr": "", "interrupted": False},
        "duration_ms": 1506,
    }
    substituted = claude_substitute(template, sent)
    assert payload_from(substituted) == sent


def test_switching_back_to_command_hooks_replaces_them_in_place(project: Path, home: Path) -> None:
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir(parents=True)
    mine = {"type": "command", "command": "echo mine"}
    path.write_text(
        json.dumps(
            {
                "enabledMcpjsonServers": ["other"],
                "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [mine]}]},
            }
        )
    )
    inst.install("claude-code", project_root=project, home=home, hooks="in-agent")
    assert _settings(project)["enabledMcpjsonServers"] == ["other", "ctxmode"]
    result = inst.install("claude-code", project_root=project, home=home, hooks="command")
    assert result.hook_kind == "command"
    doc = _settings(project)
    handlers = _handlers(doc)
    assert not any(claude.is_in_agent(h) for hs in handlers.values() for h in hs)
    assert mine in handlers["PostToolUse"]
    assert doc["enabledMcpjsonServers"] == ["other", "ctxmode"]  # the server is still there
    assert inst.status("claude-code", project_root=project, home=home).hook_kind == "command"


def test_uninstall_removes_in_agent_handlers_and_the_approval_only(
    project: Path, home: Path
) -> None:
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"enabledMcpjsonServers": ["other"], "model": "x"}))
    inst.install("claude-code", project_root=project, home=home, hooks="in-agent")
    inst.uninstall("claude-code", project_root=project, home=home)
    assert _settings(project) == {"enabledMcpjsonServers": ["other"], "model": "x"}
    assert not (project / ".mcp.json").exists()


def test_auto_without_a_claude_code_writes_command_hooks_and_says_why(
    project: Path, home: Path
) -> None:
    result = inst.install("claude-code", project_root=project, home=home)
    assert result.hook_kind == "command"
    assert result.hook_note and "no Claude Code found" in result.hook_note
    assert not any(
        claude.is_in_agent(h) for hs in _handlers(_settings(project)).values() for h in hs
    )
    assert "enabledMcpjsonServers" not in _settings(project)


def test_in_agent_hooks_are_for_claude_code_only(project: Path, home: Path) -> None:
    with pytest.raises(InvalidInput, match="Claude Code only"):
        inst.install("gemini-cli", project_root=project, home=home, hooks="in-agent")
    with pytest.raises(InvalidInput, match="--hooks must be one of"):
        inst.install("claude-code", project_root=project, home=home, hooks="sometimes")
    assert not (project / ".gemini").exists() and not (project / ".claude").exists()


@pytest.mark.parametrize(
    ("choice", "said"),
    [({}, "has not approved"), ({"disabledMcpjsonServers": ["ctxmode"]}, "told not to run")],
)
def test_status_reports_a_project_server_claude_code_will_not_run(
    project: Path, home: Path, choice: dict[str, Any], said: str
) -> None:
    inst.install("claude-code", project_root=project, home=home, hooks="in-agent")
    path = project / ".claude" / "settings.local.json"
    doc = _settings(project)
    del doc["enabledMcpjsonServers"]
    path.write_text(json.dumps({**doc, **choice}))
    # This machine's local-scope entry runs whatever the project's approval says.
    assert inst.status("claude-code", project_root=project, home=home).problems == ()
    # A clone that only has the committed .mcp.json depends on the approval.
    (home / ".claude.json").unlink()
    problems = inst.status("claude-code", project_root=project, home=home).problems
    assert [p for p in problems if said in p and "ctxmode install claude-code" in p], problems


def test_a_user_scope_server_needs_no_approval(project: Path, home: Path) -> None:
    inst.install("claude-code", scope="user", project_root=project, home=home, hooks="in-agent")
    st = inst.status("claude-code", project_root=project, home=home)
    assert st.hook_kind == "in-agent" and st.problems == ()
    doc = json.loads((home / ".claude" / "settings.json").read_text())
    assert "enabledMcpjsonServers" not in doc


def test_cli_install_hooks_option_and_json(project: Path) -> None:
    proc = run_cli("install", "claude-code", "--hooks", "in-agent", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["hook_kind"] == "in-agent" and "Claude Code >= 2.1.118" in data["hook_note"]
    proc = run_cli("agents", "--json", cwd=project)
    (row,) = [r for r in json.loads(proc.stdout) if r["agent"] == "claude-code"]
    assert row["hook_kind"] == "in-agent"
    proc = run_cli("install", "codex", "--hooks", "in-agent", cwd=project)
    assert proc.returncode != 0 and "Claude Code only" in proc.stderr
