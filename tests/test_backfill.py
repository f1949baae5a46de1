"""The hooks' backstop (``hooks.backfill``): calls a real Claude Code 2.1.332 transcript holds
that no hook recorded are recorded at PreCompact (before the snapshot) and at SessionEnd,
once, through ``ctxmode hook`` processes on a real store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import CTXMODE
from ctxmode import Store
from ctxmode.sessions.transcript import BACKFILL_BYTES, claude_calls

FIXTURE = Path(__file__).parent / "fixtures" / "transcripts" / "claude-code-2.1.332.jsonl"
SID = "50628e68-8ca7-4c43-8583-3e8912c72a0c"


@pytest.fixture
def transcript(project: Path) -> Path:
    """The fixture with its project paths pointing at ``project``."""
    path = project.parent / "transcript.jsonl"
    path.write_text(FIXTURE.read_text().replace("/home/dev/proj", str(project)))
    return path


def hook(project: Path, event: str, payload: dict[str, Any]) -> str:
    assert CTXMODE
    body = {"session_id": SID, "cwd": str(project), **payload}
    proc = subprocess.run(
        [CTXMODE, "hook", event, "--agent", "claude-code"], cwd=project,
        input=json.dumps(body), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def stored(project: Path) -> list[tuple[str, str, dict[str, Any]]]:
    with Store.open(project / ".context" / "context.db") as store:
        rows = store.conn.execute(
            "SELECT category, type, data FROM events WHERE session_id = ? ORDER BY id", (SID,)
        ).fetchall()
    return [(c, t, json.loads(d)) for c, t, d in rows]


def test_the_transcript_gives_back_every_finished_call_and_the_prompt() -> None:
    calls, end = claude_calls(str(FIXTURE))
    assert end == FIXTURE.stat().st_size
    assert [c["hook_event_name"] for c in calls] == [
        "UserPromptSubmit", "PostToolUse", "PostToolUse", "PostToolUse", "PostToolUseFailure",
        "PostToolUse", "PostToolUseFailure", "PostToolUse",
    ]  # fmt: skip
    names = [c.get("tool_name") for c in calls[1:]]
    assert names == ["ToolSearch", "Read", "Edit", "Bash", "Bash", "Bash",
                     "mcp__ctxmode__write_context"]  # fmt: skip
    failed = calls[4]
    assert failed["error"].startswith("Exit code 1") and "test_rotation" in failed["error"]
    edit = calls[3]
    assert edit["tool_input"]["new_string"] == "ACCESS_TTL = 7200"
    assert edit["tool_response"]["newString"] == "ACCESS_TTL = 7200"
    assert claude_calls(str(FIXTURE), end) == ([], end)


def test_a_call_whose_result_is_not_written_yet_is_read_later(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines(keepends=True)
    last_use = max(i for i, line in enumerate(lines) if '"tool_use"' in line)
    part = tmp_path / "t.jsonl"
    part.write_text("".join(lines[: last_use + 1]))
    calls, end = claude_calls(str(part))
    assert "mcp__ctxmode__write_context" not in [c.get("tool_name") for c in calls]
    assert end == len("".join(lines[:last_use]).encode())  # back to the open call
    part.write_text("".join(lines))
    later, _ = claude_calls(str(part), end)
    assert [c.get("tool_name") for c in later] == ["mcp__ctxmode__write_context"]


def test_a_call_abandoned_before_a_new_prompt_does_not_hold_the_offset(tmp_path: Path) -> None:
    """Claude Code killed during a tool call, the session resumed: the call never gets its
    result, and the next reads must not start from it again and again."""
    lines = FIXTURE.read_text().splitlines(keepends=True)
    last_use = max(i for i, line in enumerate(lines) if '"tool_use"' in line)
    prompt = json.dumps(
        {"type": "user", "message": {"role": "user", "content": "Resumed: go on"}}
    )  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text("".join(lines[: last_use + 1]) + prompt + "\n")
    calls, end = claude_calls(str(path))
    assert end == path.stat().st_size
    assert calls[-1] == {"hook_event_name": "UserPromptSubmit", "prompt": "Resumed: go on"}


@pytest.mark.parametrize("path", [None, "/nonexistent.jsonl", "/etc/hostname"])
def test_nothing_readable_gives_nothing(path: str | None) -> None:
    assert claude_calls(path, 5) == ([], 5)


def test_pre_compact_records_what_no_hook_did_and_the_snapshot_states_it(
    project: Path, transcript: Path
) -> None:
    """Only the prompt reached ctxmode (say the in-agent hooks' server was not running)."""
    prompt = "Shorten the access token TTL to 2 hours, test, commit and record the auth decision"
    hook(project, "user-prompt-submit", {"hook_event_name": "UserPromptSubmit", "prompt": prompt})
    assert "file" not in {c for c, _, _ in stored(project)}
    compact = {"hook_event_name": "PreCompact", "trigger": "manual",
               "transcript_path": str(transcript)}  # fmt: skip
    hook(project, "pre-compact", compact)
    after = stored(project)
    kinds = [(c, t) for c, t, _ in after]
    assert sum(1 for c, _, _ in after if c == "prompt") == 1  # not stored twice
    assert ("file", "edit") in kinds
    commits = [d.get("message") for c, t, d in after if (c, t) == ("git", "commit")]
    assert commits == ["Shorten access TTL to 2h"]  # the failed commit is no commit
    errors = [json.dumps(d) for c, _, d in after if c == "error"]
    assert any("test_rotation" in e and "RefreshTokenReused" in e for e in errors), errors
    with Store.open(project / ".context" / "context.db") as store:
        (snap,) = store.conn.execute(
            "SELECT snapshot FROM session_resume WHERE session_id = ?", (SID,)
        ).fetchone()
    assert "auth/config.py" in snap and "test_rotation" in snap
    hook(project, "pre-compact", compact)  # read again: nothing new
    assert stored(project) == after


def test_calls_the_hooks_recorded_are_not_stored_again(project: Path, transcript: Path) -> None:
    """Every call through its hook first (the transcript's own payloads), then PreCompact and
    SessionEnd: the backstop adds nothing, whichever shape the hook's payload had."""
    calls, _ = claude_calls(str(transcript))
    for call in calls:
        event = (
            "user-prompt-submit"
            if call["hook_event_name"] == "UserPromptSubmit"
            else ("post-tool-use-failure" if "error" in call else "post-tool-use")
        )
        hook(project, event, call)
    live = stored(project)
    assert live
    hook(project, "pre-compact", {"hook_event_name": "PreCompact", "trigger": "auto",
                                  "transcript_path": str(transcript)})  # fmt: skip
    hook(project, "session-end", {"hook_event_name": "SessionEnd", "reason": "other",
                                  "transcript_path": str(transcript)})  # fmt: skip
    assert stored(project) == live


def test_a_failing_backfill_is_logged_and_the_snapshot_still_built(
    project: Path, transcript: Path
) -> None:
    hook(project, "user-prompt-submit", {"hook_event_name": "UserPromptSubmit", "prompt": "Go"})
    with Store.open(project / ".context" / "context.db") as store, store.transaction() as conn:
        conn.execute(  # a damaged offset record: its JSON does not parse
            "INSERT INTO hook_state(session_id, key, value, updated_at) VALUES (?, ?, ?, 0)",
            (SID, "transcript_offset", "{not json"),
        )
    hook(project, "pre-compact", {"hook_event_name": "PreCompact", "trigger": "auto",
                                  "transcript_path": str(transcript)})  # fmt: skip
    with Store.open(project / ".context" / "context.db") as store:
        rows = store.conn.execute(
            "SELECT count(*) FROM session_resume WHERE session_id = ?", (SID,)
        ).fetchone()
    assert rows == (1,)
    log = (project / ".context" / "hooks.log").read_text()
    assert "transcript backfill skipped" in log


def _big_transcript(path: Path, project: Path, calls: int) -> None:
    """``calls`` finished Edit calls, each an assistant line and its result line (~3.5 KB)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(calls):
            ident = f"toolu_big_{i:06d}"
            edit = {"file_path": f"{project}/src/m{i}.py", "old_string": "a" * 2500,
                    "new_string": f"b{i}" + "c" * 300}  # fmt: skip
            use = {"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": ident, "name": "Edit", "input": edit}]}}  # fmt: skip
            result = {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": ident, "content": "ok " * 100}]},
                "toolUseResult": {"filePath": edit["file_path"]}}  # fmt: skip
            out.write(json.dumps(use) + "\n" + json.dumps(result) + "\n")


def test_a_huge_transcript_is_recorded_over_several_compactions(project: Path) -> None:
    """Each PreCompact records a bounded share (``backfill.BUDGET_S``, ``BACKFILL_BYTES``) and
    moves the offset; the next ones go on from there until every call is recorded once."""
    path = project.parent / "big.jsonl"
    _big_transcript(path, project, 1800)  # over BACKFILL_BYTES, under the session cap
    size = path.stat().st_size
    assert size > BACKFILL_BYTES
    compact = {"hook_event_name": "PreCompact", "trigger": "auto", "transcript_path": str(path)}
    db = project / ".context" / "context.db"
    offsets = []
    for _ in range(40):
        hook(project, "pre-compact", compact)
        with Store.open(db) as store:
            row = store.conn.execute(
                "SELECT value FROM hook_state WHERE session_id = ? AND key = 'transcript_offset'",
                (SID,),
            ).fetchone()
        offsets.append(int(json.loads(row[0])))
        if offsets[-1] >= size:
            break
    assert offsets[0] < size
    assert offsets == sorted(offsets) and offsets[-1] == size
    edits = [d for c, t, d in stored(project) if (c, t) == ("file", "edit")]
    assert len(edits) == 1800
