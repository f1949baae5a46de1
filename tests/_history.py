"""Laying out the agents' transcripts of ``tests/fixtures/history`` in a scratch HOME, and
running the CLI on a project (shared by the history import and inbox tests)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ctxmode.cli import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "history"
PROJ, HOME = "/home/dev/proj", "/home/dev"
DECISION = "Use Google OAuth 2.0 rather than Passport"
CLAUDE_SID = "0129c34d-5070-4d8b-97f3-ad4e1848768d"


def _git_project(root: Path, readme: str = "# proj\n") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "PATH": "/usr/bin:/bin", "HOME": str(root)}  # fmt: skip
    (root / "README.md").write_text(readme)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "initial"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    ctx(root, "init")  # the store: no command but init creates one
    return root


def _put(src: Path, dest: Path, proj: Path, home: Path, **swap: str) -> Path:
    text = src.read_text(encoding="utf-8").replace(PROJ, str(proj)).replace(HOME, str(home))
    for old, new in swap.items():
        text = text.replace(old, new)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")
    return dest


def lay_out(agent: str, home: Path, proj: Path, **swap: str) -> list[Path]:
    """The fixture transcripts of ``agent`` where the agent keeps them, for ``proj``."""
    out = []
    if agent == "claude-code":
        slug = str(proj).replace("/", "-")
        for src in sorted((FIXTURES / agent / "-home-dev-proj").glob("*.jsonl")):
            name = src.name
            for old, new in swap.items():
                name = name.replace(old, new)
            out.append(_put(src, home / ".claude" / "projects" / slug / name, proj, home, **swap))
    elif agent == "codex":
        base = FIXTURES / agent
        for src in sorted(base.rglob("rollout-*.jsonl")):
            dest = home / ".codex" / "sessions" / src.relative_to(base)
            out.append(_put(src, dest, proj, home, **swap))
    elif agent == "gemini-cli":
        folder = home / ".gemini" / "tmp" / proj.name
        for src in sorted((FIXTURES / agent / "proj" / "chats").glob("*")):
            out.append(_put(src, folder / "chats" / src.name, proj, home, **swap))
        (folder / ".project_root").write_text(str(proj))
    elif agent == "qwen-code":
        slug = "".join(c if c.isalnum() else "-" for c in str(proj))
        for src in sorted((FIXTURES / agent / "-home-dev-proj" / "chats").glob("*.jsonl")):
            dest = home / ".qwen" / "projects" / slug / "chats" / src.name
            out.append(_put(src, dest, proj, home, **swap))
    elif agent == "copilot-cli":
        for src in sorted((FIXTURES / agent).glob("*/*")):
            dest = home / ".copilot" / "session-state" / src.parent.name / src.name
            put = _put(src, dest, proj, home, **swap)
            if src.name == "events.jsonl":
                out.append(put)
    elif agent == "opencode":
        sql = (FIXTURES / agent / "opencode.sql").read_text().replace(PROJ, str(proj))
        db = home / ".local" / "share" / "opencode" / "opencode.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(db)
        conn.executescript(sql)
        conn.commit()
        conn.close()
        out.append(db)
    return out


def ctx(proj: Path, *args: str) -> Any:
    """Run the CLI in ``proj``; the parsed ``--json`` document."""
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(proj)
        result = runner.invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def events(proj: Path, session: str | None = None) -> list[dict[str, Any]]:
    args = ["events", "--limit", "1000"] + (["--session", session] if session else [])
    return list(reversed(ctx(proj, *args)["events"]))


def kinds(evs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(e["category"], e["type"]) for e in evs}


def prompts(evs: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["text"] for e in evs if e["category"] == "prompt"]


def check_the_scripted_session(evs: list[dict[str, Any]], proj: Path) -> None:
    """What every e2e agent's first run did: read, edit, a failing test, a commit, a commit
    that failed, the decision stored through ctxmode's MCP server."""
    assert {("data", "read"), ("file", "edit"), ("git", "commit")} <= kinds(evs), kinds(evs)
    edits = [e["data"] for e in evs if (e["category"], e["type"]) == ("file", "edit")]
    assert edits[0] == {
        "path": f"{proj}/auth/config.py", "old": "ACCESS_TTL = 86400", "new": "ACCESS_TTL = 7200"
    }  # fmt: skip
    errors = [e["data"] for e in evs if e["category"] == "error"]
    assert any(
        "tests/test_refresh.py::test_rotation" in e["message"]
        and "RefreshTokenReused: old token accepted after rotation" in e["message"]
        for e in errors
    ), errors
    assert any(e["target"] == "git commit -m 'nothing here'" for e in errors), errors
    commits = [e["data"]["message"] for e in evs if (e["category"], e["type"]) == ("git", "commit")]
    assert commits == ["Shorten access TTL to 2h"]  # the commit that failed is an error
    assert ("knowledge", "decision", DECISION) in {
        (e["category"], e["type"], e["data"].get("text")) for e in evs
    }


def compactions(proj: Path) -> dict[str, int]:
    return {s["session_id"]: s["compact_count"] for s in ctx(proj, "sessions")["sessions"]}
