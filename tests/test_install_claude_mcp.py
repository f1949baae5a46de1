"""Claude Code's project server in a form a team can commit (issue 32, point 5): ``.mcp.json``
runs ``ctxmode serve`` from PATH, this machine's interpreter goes to the project's local scope in
``~/.claude.json``; the old form (an absolute path in ``.mcp.json``) is reported and upgraded in
place; uninstall takes out only ctxmode's entries. Real files in a temp git repository and home;
that the real Claude Code connects through both entries is ``tests/e2e/test_claude_install.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxmode.agents import install as inst

PYTHON = sys.executable
PORTABLE = {"type": "stdio", "command": "ctxmode", "args": ["serve"]}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir(exist_ok=True)
    return path


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def _claude_json(project: Path, home: Path) -> str:
    """A ``~/.claude.json`` as Claude Code keeps it, with this project already known."""
    doc = {
        "numStartups": 4,
        "projects": {
            "/elsewhere": {"allowedTools": [], "mcpServers": {"db": {"command": "db-mcp"}}},
            os.path.realpath(project): {
                "allowedTools": [],
                "mcpServers": {},
                "hasTrustDialogAccepted": True,
            },
        },
    }
    return json.dumps(doc, indent=2) + "\n"


def _local(home: Path, project: Path) -> dict[str, object] | None:
    projects = json.loads((home / ".claude.json").read_text())["projects"]
    servers = projects.get(os.path.realpath(project), {}).get("mcpServers", {})
    entry = servers.get("ctxmode")
    return entry if isinstance(entry, dict) else None


def test_a_committed_old_form_is_reported_then_upgraded_in_place(project: Path, home: Path) -> None:
    _git(project, "init", "-q")
    old = {
        "mcpServers": {
            "github": {"command": "gh-mcp"},
            "ctxmode": {
                "type": "stdio",
                "command": "/home/alice/proj/.venv/bin/python",
                "args": ["-m", "ctxmode", "serve"],
                "env": {"CTXMODE_LOG": "debug"},
            },
        }
    }
    (project / ".mcp.json").write_text(json.dumps(old, indent=2) + "\n")
    _git(project, "add", ".mcp.json")
    _git(project, "commit", "-qm", "share the agent config")
    (home / ".claude.json").write_text(_claude_json(project, home))

    problems = inst.status("claude-code", project_root=project, home=home).problems
    assert any(
        "/home/alice/proj/.venv/bin/python" in p and "teams commit that file" in p for p in problems
    ), problems

    result = inst.install("claude-code", project_root=project, home=home, hooks="command")
    actions = {Path(c.path).name: (c.action, c.machine_specific) for c in result.changes}
    assert actions[".mcp.json"] == ("update", False)
    assert actions[".claude.json"] == ("update", True)
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["github"] == {"command": "gh-mcp"}  # the team's other server kept
    assert servers["ctxmode"] == {**PORTABLE, "env": {"CTXMODE_LOG": "debug"}}
    # What the team commits next names no machine: the upgrade is a diff to commit.
    assert "alice" not in (project / ".mcp.json").read_text()
    assert ".mcp.json" in _git(project, "status", "--short")
    local = _local(home, project)
    assert local == {"type": "stdio", "command": PYTHON, "args": ["-m", "ctxmode", "serve"]}
    st = inst.status("claude-code", project_root=project, home=home)
    assert st.problems == () and st.interpreter == PYTHON and st.mcp_installed
    assert str(home / ".claude.json") in st.config_paths

    again = inst.install("claude-code", project_root=project, home=home, hooks="command")
    assert {c.action for c in again.changes} == {"unchanged"}


def test_uninstall_takes_out_only_ctxmode_s_entries(project: Path, home: Path) -> None:
    claude_json = _claude_json(project, home)
    (home / ".claude.json").write_text(claude_json)
    (project / ".mcp.json").write_text('{"mcpServers": {"github": {"command": "gh-mcp"}}}\n')
    mcp_before = (project / ".mcp.json").read_bytes()
    inst.install("claude-code", project_root=project, home=home, hooks="command")
    assert _local(home, project) is not None
    removed = inst.uninstall("claude-code", project_root=project, home=home)
    assert {Path(c.path).name for c in removed.changes} >= {".mcp.json", ".claude.json"}
    assert (home / ".claude.json").read_text() == claude_json  # byte for byte
    assert (project / ".mcp.json").read_bytes() == mcp_before


def test_a_local_entry_created_for_a_new_project_is_removed_whole(
    project: Path, home: Path
) -> None:
    (home / ".claude.json").write_text('{"numStartups": 1}\n')
    inst.install("claude-code", project_root=project, home=home, hooks="command")
    assert _local(home, project) is not None
    inst.uninstall("claude-code", project_root=project, home=home)
    assert json.loads((home / ".claude.json").read_text()) == {"numStartups": 1}
    assert not (project / ".mcp.json").exists()


def test_a_created_claude_json_is_private(project: Path, home: Path) -> None:
    inst.install("claude-code", project_root=project, home=home, hooks="command")
    assert (home / ".claude.json").stat().st_mode & 0o777 == 0o600


def test_a_clone_with_only_the_committed_file_needs_ctxmode_on_path(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"ctxmode": PORTABLE}}))
    monkeypatch.setenv("PATH", str(home))  # no ctxmode there
    st = inst.status("claude-code", project_root=project, home=home)
    assert st.mcp_installed and st.interpreter is None
    (problem,) = [p for p in st.problems if "from PATH" in p]
    assert "no ctxmode is on PATH" in problem and "ctxmode install claude-code" in problem
    monkeypatch.setenv("PATH", str(Path(PYTHON).parent))  # the venv's bin holds ctxmode
    st = inst.status("claude-code", project_root=project, home=home)
    assert not [p for p in st.problems if "from PATH" in p]


def test_scratch_copies_keep_the_interpreter_in_mcp_json(project: Path, home: Path) -> None:
    """``ctxmode eval``'s copies are never committed: nothing goes to the user's
    ``~/.claude.json`` for them."""
    inst.install("claude-code", project_root=project, home=home, hooks="command", portable=False)
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["ctxmode"]
    assert server["command"] == PYTHON
    assert not (home / ".claude.json").exists()
    inst.uninstall("claude-code", project_root=project, home=home)
    assert not (project / ".mcp.json").exists()


def test_a_project_below_the_repository_top_gets_no_exclude_line(
    tmp_path: Path, home: Path
) -> None:
    """``.git/info/exclude`` patterns are relative to the repository's top folder: a project
    in a subfolder gets no line rather than a wrong one (the output says what to ignore)."""
    repo = tmp_path / "mono"
    (repo / "svc").mkdir(parents=True)
    _git(repo, "init", "-q")
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    result = inst.install("claude-code", project_root=repo / "svc", home=home, hooks="command")
    assert not [c for c in result.changes if "exclude" in c.path]
    assert exclude.read_bytes() == before
