"""Isolation between projects and worktrees, and the modes of the files ctxmode writes.

Rule under test (README "Projects and worktrees"): the project root is the nearest folder
holding a ``.git`` entry, so every git worktree (whose ``.git`` is a file) is a project of its
own with its own store. Knowledge of ``global`` scope is global to one project only, and a
session id that shows up in two projects stays two separate sessions.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from _hardening import db_rows, hook_process, post_tool_use
from conftest import CTXMODE, run_cli
from ctxmode.core import config
from ctxmode.mcp.sdk.server import build_server

SHARED_SID = "11111111-2222-3333-4444-555555555555"


def _make(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


def _fill(project: Path, tag: str) -> None:
    assert run_cli("init", cwd=project).returncode == 0
    add = run_cli("add", "convention", f"{tag} convention: tabs are forbidden", cwd=project)
    assert add.returncode == 0, add.stderr
    assert run_cli("task", "add", f"{tag} task", cwd=project).returncode == 0
    for i in range(3):
        payload = post_tool_use(project, SHARED_SID, f"toolu_{tag}_{i}", f"{project}/{tag}_{i}.py")
        payload["transcript_path"] = f"/tmp/t/{SHARED_SID}.jsonl"
        assert (
            hook_process("post-tool-use", json.dumps(payload).encode(), cwd=project).returncode == 0
        )
    prompt = {
        "session_id": SHARED_SID,
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"{tag} wants the retry logic fixed",
    }
    assert (
        hook_process("UserPromptSubmit", json.dumps(prompt).encode(), cwd=project).returncode == 0
    )


def _everything(project: Path) -> str:
    parts = []
    for args in (
        ("query", "--json"),
        ("task", "list", "--json"),
        ("events", "--json", "--limit", "500"),
        ("snapshot", "--session", SHARED_SID, "--json"),
        ("search", "convention retry task", "--json"),
        ("export",),
        ("sessions", "--json"),
    ):
        proc = run_cli(*args, cwd=project)
        parts.append(proc.stdout)
    return "\n".join(parts)


async def _mcp_text(project: Path) -> str:
    db = config.default_db_path(project)
    texts = []
    async with Client(build_server(db, project), mode="legacy") as client:
        for tool, args in (
            ("query_context", {}),
            ("list_tasks", {}),
            ("session_events", {"limit": 200}),
            ("session_snapshot", {"session_id": SHARED_SID}),
        ):
            result = await client.call_tool(tool, args)
            texts.append(result.content[0].text)
    return "\n".join(texts)


@pytest.mark.anyio
async def test_two_projects_never_see_each_other(tmp_path: Path) -> None:
    alpha = _make(tmp_path / "alpha")
    beta = _make(tmp_path / "beta")
    _fill(alpha, "ALPHA")
    _fill(beta, "BETA")
    for mine, other, theirs in ((alpha, beta, "BETA"), (beta, alpha, "ALPHA")):
        seen = _everything(mine) + await _mcp_text(mine)
        assert theirs not in seen and str(other) not in seen, theirs
        assert mine.name.upper() in seen
    # The shared session id is two sessions, one per project, each with its own events.
    for project in (alpha, beta):
        rows = db_rows(config.default_db_path(project), "SELECT project_dir FROM sessions")
        assert rows == [(str(project),)]
        paths = db_rows(
            config.default_db_path(project),
            "SELECT json_extract(data, '$.path') FROM events WHERE category = 'file'",
        )
        assert {p for (p,) in paths} == {
            f"{project}/{project.name.upper()}_{i}.py" for i in range(3)
        }


def _git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=30)


def test_each_git_worktree_is_its_own_project(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    main = tmp_path / "repo"
    main.mkdir()
    _git("init", "-q", cwd=main)
    (main / "README").write_text("x\n", encoding="utf-8")
    _git("add", "README", cwd=main)
    _git("commit", "-q", "-m", "init", cwd=main)
    other = tmp_path / "repo-feature"
    _git("worktree", "add", "-q", "-b", "feature", str(other), cwd=main)
    assert (other / ".git").is_file()
    (other / "pkg").mkdir()

    assert config.find_project_root(other / "pkg") == other.resolve()
    assert config.find_project_root(main) == main.resolve()
    _fill(main, "MAINTREE")
    # A hook fired from a subfolder of the worktree lands in the worktree's store.
    _fill(other / "pkg", "FEATURETREE")
    assert (other / ".context" / "context.db").exists()
    assert not (other / "pkg" / ".context").exists()
    assert "FEATURETREE" not in _everything(main)
    assert "MAINTREE" not in _everything(other)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_store_log_and_folders_are_private(project: Path, umask: int) -> None:
    assert CTXMODE
    env = dict(os.environ)

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "-c", f'umask {umask:03o}; exec "$@"', "sh", CTXMODE, *args],
            cwd=project,
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    payload = post_tool_use(project, "modes", "toolu_m", f"{project}/a.py")
    assert run("hook", "post-tool-use", stdin=json.dumps(payload)).returncode == 0
    assert run("hook", "post-tool-use", stdin="not json").returncode == 0  # writes the log
    assert run("add", "convention", "modes").returncode == 0
    assert run("exec", "shell", "echo hi").returncode == 0
    # A recovery keeps the damaged file: it must stay private as well.
    ctx = project / ".context"
    db = ctx / "context.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(os.urandom(8192))
    os.chmod(db, 0o600)
    assert run("hook", "post-tool-use", stdin=json.dumps(payload)).returncode == 0

    assert _mode(ctx) == 0o700
    checked: dict[str, Any] = {}
    for path in ctx.iterdir():
        if path.name in (".gitignore", config.CONFIG_NAME):
            continue  # not data: a '*' ignore rule, and the user's own settings file
        checked[path.name] = oct(_mode(path))
        assert _mode(path) & 0o077 == 0, (path.name, oct(_mode(path)))
    assert any(n.startswith("context.db.bad-") for n in checked), checked
    assert "hooks.log" in checked and "context.db" in checked
