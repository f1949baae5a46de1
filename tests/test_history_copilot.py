"""``ctxmode history import`` of GitHub Copilot CLI sessions, from the session folders Copilot
CLI 1.0.102 wrote in the e2e run (``tests/fixtures/history/copilot-cli``), laid out in a
scratch HOME where Copilot CLI keeps them, imported by the real CLI into a real store.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from _history import (
    _git_project,
    check_the_scripted_session,
    compactions,
    ctx,
    events,
    lay_out,
    prompts,
)

COPILOT_SID = "8d3e15fd-5999-4f45-85b0-d7dc5971bc0b"
#: The session Copilot CLI ran in a folder it did not trust yet: no hook of ctxmode ran.
COPILOT_UNHOOKED = "976a3caf-ddf3-4eaf-8b0f-58b0b7fe33b5"


@pytest.fixture(autouse=True)
def _no_agent_homes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COPILOT_HOME", "QWEN_RUNTIME_DIR", "QWEN_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return _git_project(tmp_path / "proj")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


# -- GitHub Copilot CLI ----------------------------------------------------------------------


def test_copilot_sessions_come_back_as_its_hooks_recorded_them(proj: Path, home: Path) -> None:
    lay_out("copilot-cli", home, proj)
    report = ctx(proj, "history", "import", "--agent", "copilot-cli")
    assert report["sessions"] == 3 and report["agents"] == {"copilot-cli": 3}, report
    assert report["skipped"] == []
    evs = events(proj, COPILOT_SID)
    assert {e["agent"] for e in evs} == {"copilot-cli"}
    assert prompts(evs) == [
        "Shorten the access token TTL to 2 hours, test, commit",
        "Now fix the rotation",
        "Where are we?",
        "And now?",
    ]  # `/compact` is a command, not a prompt
    check_the_scripted_session(evs, proj)
    # The session of the untrusted folder, which no hook saw, is there too.
    assert prompts(events(proj, COPILOT_UNHOOKED)) == ["hello"]
    counts = compactions(proj)
    assert counts[COPILOT_SID] == 1 and sorted(counts.values()) == [0, 0, 1]
    again = ctx(proj, "history", "import")
    assert again["events"] == 0 and again["unchanged"] == 3


def _append(path: Path, *entries: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for entry in entries:
            handle.write(json.dumps(entry) + "\n")


def test_a_copilot_tool_that_failed_is_an_error_and_secrets_stay_out(
    proj: Path, home: Path
) -> None:
    """A call Copilot reports ``success: false`` (its ``error.message``) is a failure; a key
    pasted into a prompt and a command never reaches the store; messages a skill or the
    autopilot injected are not the user's prompts."""
    (path, *_) = [p for p in lay_out("copilot-cli", home, proj) if COPILOT_SID in str(p)]
    key = "ghp_" + "Z" * 36
    stamp = "2026-12-02T07:00:00.000Z"
    _append(
        path,
        {"type": "user.message", "timestamp": stamp,
         "data": {"content": f"deploy with the token {key} please"}},
        {"type": "tool.execution_start", "timestamp": stamp,
         "data": {"toolCallId": "call_x", "toolName": "bash",
                  "arguments": {"command": f"GH_TOKEN={key} ./deploy.sh"}}},
        {"type": "tool.execution_complete", "timestamp": stamp,
         "data": {"toolCallId": "call_x", "success": False,
                  "error": {"message": "./deploy.sh: Permission denied"}}},
        {"type": "user.message", "timestamp": stamp,
         "data": {"content": "Use the PDF skill's rules", "source": "skill-pdf"}},
        {"type": "user.message", "timestamp": stamp,
         "data": {"content": "Continue working", "isAutopilotContinuation": True}},
    )  # fmt: skip
    ctx(proj, "history", "import")
    evs = events(proj, COPILOT_SID)
    errors = [e["data"] for e in evs if e["category"] == "error"]
    assert any("Permission denied" in e["message"] for e in errors), errors
    said = prompts(evs)
    assert "deploy with the token" in said[-1]  # the user's words, not Copilot's own
    assert "Use the PDF skill's rules" not in said and "Continue working" not in said
    dump = "\n".join(str(r) for r in sqlite3.connect(proj / ".context" / "context.db").iterdump())
    assert key not in dump


def test_a_copilot_session_continued_later_adds_only_what_is_new(proj: Path, home: Path) -> None:
    (path, *_) = [p for p in lay_out("copilot-cli", home, proj) if COPILOT_SID in str(p)]
    full = path.read_bytes()
    lines = full.splitlines(keepends=True)
    # Up to the second run (`--continue`): the first run's calls only.
    cut = next(i for i, line in enumerate(lines) if b'"session.resume"' in line)
    path.write_bytes(b"".join(lines[:cut]))
    first = ctx(proj, "history", "import", "--agent", "copilot-cli")
    assert prompts(events(proj, COPILOT_SID)) == [
        "Shorten the access token TTL to 2 hours, test, commit"
    ]
    path.write_bytes(full)
    second = ctx(proj, "history", "import", "--agent", "copilot-cli")
    assert 0 < second["bytes_read"] < len(full)  # continued from the offset
    assert first["events"] + second["events"] == len(events(proj))
    assert len(prompts(events(proj, COPILOT_SID))) == 4
    check_the_scripted_session(events(proj, COPILOT_SID), proj)


def test_copilot_home_moves_where_the_sessions_are(
    proj: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lay_out("copilot-cli", home, proj)
    (home / ".copilot").rename(tmp_path / "copilot-home")
    assert ctx(proj, "history", "import")["sessions"] == 0
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot-home"))
    assert ctx(proj, "history", "import")["sessions"] == 3


def test_a_copilot_session_of_another_project_is_left_alone(proj: Path, home: Path) -> None:
    other = _git_project(proj.parent / "other", "# another project\n")
    lay_out("copilot-cli", home, other)
    report = ctx(proj, "history", "import")
    assert report["sessions"] == 0 and report["other_projects"] == 3
    assert events(proj) == []


def test_install_counts_qwen_and_copilot_sessions(proj: Path, home: Path) -> None:
    from ctxmode.history.importer import count_past_sessions

    lay_out("qwen-code", home, proj)
    lay_out("copilot-cli", home, proj)
    assert count_past_sessions(str(proj)) == {"qwen-code": 2, "copilot-cli": 3}
