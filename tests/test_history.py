"""``ctxmode history import``: past sessions from transcripts the real agents wrote.

The transcripts under ``tests/fixtures/history`` come from the e2e runs (the pinned agents
against scripted model servers; ``tests/e2e/history_fixtures.py`` copies them, paths
replaced). Each test lays them out in a scratch HOME as the agent would, with this test's
project path put back, and runs the real CLI against a real store.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from _history import CLAUDE_SID, DECISION, FIXTURES, _git_project, ctx, events, lay_out
from ctxmode import Store
from ctxmode.cli import cli


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """A git project where ``ctxmode init`` ran (only init creates a store)."""
    root = _git_project(tmp_path / "proj")
    Store.open(root / ".context" / "context.db").close()
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def kinds(evs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(e["category"], e["type"]) for e in evs}


# -- Claude Code -----------------------------------------------------------------------------


def test_claude_sessions_come_back_with_prompts_edits_failures_and_the_decision(
    proj: Path, home: Path
) -> None:
    lay_out("claude-code", home, proj)
    report = ctx(proj, "history", "import")
    assert report["sessions"] == 2 and report["new_sessions"] == 2
    assert report["agents"] == {"claude-code": 2} and report["matched_by"] == {"path": 2}
    evs = events(proj, CLAUDE_SID)
    prompts = [e["data"]["text"] for e in evs if e["category"] == "prompt"]
    assert prompts == [
        "Shorten the access token TTL to 2 hours, test, commit and record the auth decision",
        "Now look at the rotation test",
        "What is left after the compaction?",
        "Resumed: continue with the rotation fix",
    ]
    edits = [e["data"] for e in evs if (e["category"], e["type"]) == ("file", "edit")]
    assert edits[0]["path"] == f"{proj}/auth/config.py" and edits[0]["new"] == "ACCESS_TTL = 7200"
    errors = [e["data"] for e in evs if e["category"] == "error"]
    assert any(
        "RefreshTokenReused: old token accepted after rotation" in e["message"] for e in errors
    )
    commits = [e["data"]["message"] for e in evs if (e["category"], e["type"]) == ("git", "commit")]
    assert commits == ["Shorten access TTL to 2h"]  # the commit that failed is an error
    assert ("knowledge", "decision", DECISION) in {
        (e["category"], e["type"], e["data"].get("text")) for e in evs
    }
    # Each event carries the time the transcript gives it, not the import's.
    assert {time_day(e["created_at"]) for e in evs} == {"2026-12-02"}
    (session,) = [s for s in ctx(proj, "sessions")["sessions"] if s["session_id"] == CLAUDE_SID]
    assert session["compact_count"] == 1 and session["agent"] == "claude-code"
    assert session["origin"] == "imported"


def time_day(ts: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d")


def test_a_second_import_adds_nothing_and_reads_nothing(proj: Path, home: Path) -> None:
    lay_out("claude-code", home, proj)
    first = ctx(proj, "history", "import")
    count = len(events(proj))
    second = ctx(proj, "history", "import")
    assert first["events"] == count > 0
    assert second["events"] == 0 and second["bytes_read"] == 0 and second["unchanged"] == 2
    assert len(events(proj)) == count


def test_a_session_still_being_written_is_continued_not_duplicated(proj: Path, home: Path) -> None:
    (path, *_) = [p for p in lay_out("claude-code", home, proj) if CLAUDE_SID in p.name]
    full = path.read_bytes()
    lines = full.splitlines(keepends=True)
    half = b"".join(lines[: len(lines) // 2])
    path.write_bytes(half)
    ctx(proj, "history", "import")
    before = events(proj, CLAUDE_SID)
    path.write_bytes(full)  # the agent wrote on
    again = ctx(proj, "history", "import")
    after = events(proj, CLAUDE_SID)
    assert again["bytes_read"] < len(full)  # continued from the offset, not read again
    assert len(after) > len(before)
    fresh = proj.parent / "fresh"
    _git_project(fresh)
    Store.open(fresh / ".context" / "context.db").close()
    lay_out("claude-code", home, fresh)
    ctx(fresh, "history", "import")
    whole = events(fresh, CLAUDE_SID)
    # The same events as one import of the whole file: nothing twice, nothing lost.
    assert [(e["category"], e["type"]) for e in after] == [
        (e["category"], e["type"]) for e in whole
    ]


def test_another_projects_sessions_are_not_imported(proj: Path, home: Path) -> None:
    other = _git_project(proj.parent / "other", "# another project\n")
    lay_out("claude-code", home, other, **{
        CLAUDE_SID: "11111111-2222-4333-8444-555555555555",
        "7bc1b06a-360a-42e5-a252-736398c7d293": "11111111-2222-4333-8444-666666666666",
    })  # fmt: skip
    lay_out("claude-code", home, proj)
    report = ctx(proj, "history", "import")
    assert report["sessions"] == 2 and report["other_projects"] == 2
    sessions = {s["session_id"] for s in ctx(proj, "sessions")["sessions"]}
    assert "11111111-2222-4333-8444-555555555555" not in sessions
    assert not any(str(other) in json.dumps(e["data"]) for e in events(proj))


def test_a_clone_elsewhere_is_matched_by_its_root_commit(proj: Path, home: Path) -> None:
    clone = proj.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(proj), str(clone)], check=True, capture_output=True)
    lay_out("claude-code", home, clone)
    report = ctx(proj, "history", "import")
    assert report["matched_by"] == {"root commit": 2}


def test_secrets_planted_in_a_transcript_never_reach_the_store(proj: Path, home: Path) -> None:
    (path, *_) = [p for p in lay_out("claude-code", home, proj) if CLAUDE_SID in p.name]
    key = "sk-ant-api03-" + "Q" * 40
    aws = "AKIA" + "Z" * 16
    line = {
        "type": "user", "isSidechain": False, "sessionId": CLAUDE_SID, "cwd": str(proj),
        "timestamp": "2026-12-02T07:00:00.000Z",
        "message": {"role": "user", "content": f"use the key {key} and {aws} for the deploy"},
    }  # fmt: skip
    tool = {
        "type": "assistant", "isSidechain": False, "sessionId": CLAUDE_SID,
        "timestamp": "2026-12-02T07:00:01.000Z",
        "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_secret",
                    "name": "Bash", "input": {"command": f"export TOKEN={key} && ./deploy"}}]},
    }  # fmt: skip
    result = {
        "type": "user", "isSidechain": False, "sessionId": CLAUDE_SID,
        "timestamp": "2026-12-02T07:00:02.000Z", "toolUseResult": {"stdout": key},
        "message": {"role": "user", "content": [{"type": "tool_result",
                    "tool_use_id": "toolu_secret", "content": key}]},
    }  # fmt: skip
    with path.open("a") as fh:
        for entry in (line, tool, result):
            fh.write(json.dumps(entry) + "\n")
    ctx(proj, "history", "import")
    dump = "\n".join(
        str(row) for row in sqlite3.connect(proj / ".context" / "context.db").iterdump()
    )
    assert "use the key" in dump  # the prompt is there ...
    assert key not in dump and aws not in dump  # ... without its secrets


def test_an_unparseable_transcript_is_skipped_with_its_reason(proj: Path, home: Path) -> None:
    lay_out("claude-code", home, proj)
    slug = home / ".claude" / "projects" / str(proj).replace("/", "-")
    (slug / "22222222-3333-4444-8555-666666666666.jsonl").write_bytes(b"\x00\xff not json\n")
    bad = slug / "33333333-3333-4444-8555-666666666666.jsonl"
    bad.write_text(json.dumps({"cwd": str(proj), "sessionId": "x"}) + "\n" + "{broken\n" * 3)
    report = ctx(proj, "history", "import")
    assert report["sessions"] == 2
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert reasons == {
        "22222222-3333-4444-8555-666666666666.jsonl": "no line is JSON",
        bad.name: "3 of 4 lines are not JSON; no prompt or call read",
    }


def test_dry_run_counts_and_stores_nothing(proj: Path, home: Path) -> None:
    lay_out("claude-code", home, proj)
    report = ctx(proj, "history", "import", "--dry-run")
    assert report["dry_run"] and report["sessions"] == 2 and report["events"] > 0
    assert events(proj) == []
    assert ctx(proj, "history", "import")["events"] == report["events"]


def test_since_leaves_older_sessions_out(proj: Path, home: Path) -> None:
    lay_out("claude-code", home, proj)
    report = ctx(proj, "history", "import", "--since", "2099-01-01")
    assert report["sessions"] == 0 and events(proj) == []


def test_an_unknown_agent_is_refused_before_any_work(proj: Path) -> None:
    result = CliRunner().invoke(cli, ["history", "import", "--agent", "vim"])
    assert result.exit_code != 0 and "vim" in result.output


# -- Codex, Gemini CLI, OpenCode -------------------------------------------------------------


@pytest.mark.parametrize("agent", ["codex", "gemini-cli", "opencode"])
def test_every_agent_s_sessions_come_back(proj: Path, home: Path, agent: str) -> None:
    lay_out(agent, home, proj)
    report = ctx(proj, "history", "import", "--agent", agent)
    assert report["sessions"] == 2 and report["agents"] == {agent: 2}, report
    evs = events(proj)
    assert {e["agent"] for e in evs} == {agent}
    assert {("prompt", "request"), ("git", "commit")} <= kinds(evs), kinds(evs)
    files = [e["data"] for e in evs if e["category"] == "file"]
    assert any(f["path"].endswith("auth/config.py") for f in files), files
    errors = [json.dumps(e["data"]) for e in evs if e["category"] == "error"]
    assert any("test_rotation" in e for e in errors), errors
    commits = [e["data"]["message"] for e in evs if (e["category"], e["type"]) == ("git", "commit")]
    assert commits == ["Shorten access TTL to 2h"]
    assert ("knowledge", "decision", DECISION) in {
        (e["category"], e["type"], e["data"].get("text")) for e in evs
    }
    compacted = [s["compact_count"] for s in ctx(proj, "sessions")["sessions"]]
    assert sorted(compacted) == [0, 1]
    again = ctx(proj, "history", "import", "--agent", agent)
    assert again["events"] == 0 and len(events(proj)) == len(evs)


def test_nothing_injected_is_taken_for_the_user_s_words(proj: Path, home: Path) -> None:
    for agent in ("claude-code", "codex", "gemini-cli", "opencode", "qwen-code", "copilot-cli"):
        lay_out(agent, home, proj)
    ctx(proj, "history", "import")
    for e in events(proj):
        if e["category"] in ("prompt", "intent", "decision", "constraint", "rejected_approach"):
            text = json.dumps(e["data"])
            assert "ctxmode_data" not in text and "session_knowledge" not in text, text
            assert "environment_context" not in text and "session_context" not in text, text
            assert "current_datetime" not in text and "<qwen:" not in text, text


def test_install_offers_the_import_and_imports_nothing(proj: Path, home: Path) -> None:
    lay_out("claude-code", home, proj)
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(proj)
        result = runner.invoke(cli, ["install", "claude-code"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "2 past sessions of this project" in result.output
    assert "ctxmode history import" in result.output
    assert events(proj) == []


def test_copies_are_removed(tmp_path: Path) -> None:
    """The fixtures hold no path of the machine they were made on."""
    for path in FIXTURES.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert "/tmp/pytest" not in text and "/tmp/history" not in text, path
            assert "/work/" not in text and "/root/" not in text, path
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_moved_codex_checkout_is_matched_by_its_remote(proj: Path, home: Path) -> None:
    """Codex records the repository URL: a session of a folder that no longer exists is this
    project's when that URL is one of the project's remotes (spelled another way here)."""
    subprocess.run(
        ["git", "remote", "add", "origin", "git@github.com:acme/authsvc.git"],
        cwd=proj, check=True, capture_output=True,
    )  # fmt: skip
    gone = proj.parent / "old-place"
    lay_out("codex", home, gone, **{
        '"branch":"main"}': '"branch":"main","repository_url":"https://github.com/Acme/authsvc"}'
    })  # fmt: skip
    report = ctx(proj, "history", "import")
    assert report["matched_by"] == {"remote": 2} and report["sessions"] == 2


def test_an_older_gemini_chat_file_is_read_too(proj: Path, home: Path) -> None:
    """Gemini CLI before JSON Lines kept one JSON document per chat: the same messages."""
    (path, *_) = lay_out("gemini-cli", home, proj)
    messages: dict[str, Any] = {}
    header: dict[str, Any] = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if "$set" in entry:
            for m in entry["$set"].get("messages", []):
                messages.setdefault(m["id"], m)
        elif "type" in entry:
            messages[entry["id"]] = entry
        else:
            header = header or entry
    for other in path.parent.glob("*.jsonl"):
        other.unlink()
    (path.parent / "session-old.json").write_text(
        json.dumps({**header, "messages": list(messages.values())})
    )
    ctx(proj, "history", "import", "--agent", "gemini-cli")
    evs = events(proj)
    assert ("git", "commit") in kinds(evs) and ("knowledge", "decision") in kinds(evs)
    assert {e["session_id"] for e in evs} == {header["sessionId"]}


def test_a_skipped_transcript_is_reported_again_until_it_changes(proj: Path, home: Path) -> None:
    lay_out("claude-code", home, proj)
    slug = home / ".claude" / "projects" / str(proj).replace("/", "-")
    (slug / "22222222-3333-4444-8555-666666666666.jsonl").write_bytes(b"garbage\n")
    first = ctx(proj, "history", "import")
    second = ctx(proj, "history", "import")
    assert [s["reason"] for s in first["skipped"]] == ["no line is JSON"]
    assert second["skipped"] == first["skipped"] and second["bytes_read"] == 0


def test_search_finds_past_sessions_with_their_dates_and_agents(proj: Path, home: Path) -> None:
    for agent in ("claude-code", "codex"):
        lay_out(agent, home, proj)
    ctx(proj, "history", "import")
    found = ctx(proj, "search", "RefreshTokenReused rotation")
    hits = [h for h in found["hits"] if h["id"].startswith("evt:")]
    assert hits and all(h["type"] == "error" for h in hits[:2]), hits
    agents = {h["session"]["agent"] for h in hits}
    assert agents == {"claude-code", "codex"}
    for h in hits:
        assert h["session"]["origin"] == "imported"
        assert time_day(h["session"]["session_started_at"]) == "2026-12-02"


def test_a_line_longer_than_a_chunk_does_not_stop_the_rest(proj: Path, home: Path) -> None:
    """A 17 MB line (a pasted image, say) is passed over; the calls after it are read."""
    from ctxmode.history.readers import CHUNK_BYTES

    (path, *_) = [p for p in lay_out("claude-code", home, proj) if CLAUDE_SID in p.name]
    lines = path.read_text().splitlines(keepends=True)
    huge = json.dumps({"type": "user", "sessionId": CLAUDE_SID, "blob": "x" * CHUNK_BYTES})
    path.write_text(lines[0] + huge + "\n" + "".join(lines[1:]))
    report = ctx(proj, "history", "import")
    assert report["skipped"] == [] and report["sessions"] == 2
    prompts = [e for e in events(proj, CLAUDE_SID) if e["category"] == "prompt"]
    assert len(prompts) == 4
