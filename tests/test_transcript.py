"""Stop hooks without ``last_assistant_message`` read the transcript's last assistant turn."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from _hooks import event_name, fixture, run_hook
from ctxmode.sessions.transcript import TAIL_BYTES, last_assistant_text

DECISION = "We decided to go with SQLite in WAL mode because readers must never block the hooks."


def _line(kind: str, content: Any) -> str:
    return json.dumps({"type": kind, "uuid": "u", "message": {"role": kind, "content": content}})


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_newest_assistant_text_blocks_are_joined(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            _line("user", "which database?"),
            _line("assistant", [{"type": "text", "text": "An older answer."}]),
            _line("user", [{"type": "tool_result", "content": "ok"}]),
            _line(
                "assistant",
                [
                    {"type": "thinking", "thinking": "hidden reasoning", "signature": "x"},
                    {"type": "text", "text": "First part."},
                    {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "text", "text": "Second part."},
                ],
            ),
            json.dumps({"type": "system", "subtype": "stop_hook_summary"}),
            "{not json at all",
        ],
    )
    assert last_assistant_text(str(path)) == "First part.\nSecond part."


def test_codex_style_payload_lines(tmp_path: Path) -> None:
    line = {
        "type": "response_item",
        "payload": {"role": "assistant", "content": [{"type": "output_text", "text": DECISION}]},
    }
    path = _write(tmp_path / "rollout.jsonl", [json.dumps(line)])
    assert last_assistant_text(str(path)) == DECISION


def test_only_the_tail_is_read_and_bad_paths_give_none(tmp_path: Path) -> None:
    early = _line("assistant", "an answer far back in the session")
    filler = _line("user", "x" * 1000)
    path = _write(tmp_path / "big.jsonl", [early] + [filler] * (TAIL_BYTES // 1000 + 50))
    assert last_assistant_text(str(path)) is None
    assert last_assistant_text(str(tmp_path / "missing.jsonl")) is None
    assert last_assistant_text(str(tmp_path)) is None
    (tmp_path / "notes.txt").write_text(_line("assistant", DECISION), encoding="utf-8")
    assert last_assistant_text(str(tmp_path / "notes.txt")) is None
    assert last_assistant_text(None) is None


def test_stop_hook_records_a_decision_found_in_the_transcript(project: Path) -> None:
    transcript = _write(
        project / "session.jsonl",
        [_line("user", "pick a store"), _line("assistant", [{"type": "text", "text": DECISION}])],
    )
    payload = fixture("claude-code", "stop.decision", project, transcript_path=str(transcript))
    del payload["last_assistant_message"]
    proc = run_hook(event_name(payload), payload, cwd=project)
    assert proc.returncode == 0 and proc.stdout.strip() == ""
    with sqlite3.connect(project / ".context" / "context.db") as conn:
        rows = conn.execute(
            "SELECT category, type, data FROM events WHERE category = 'decision'"
        ).fetchall()
    assert [(c, t) for c, t, _ in rows] == [("decision", "assistant")]
    assert "SQLite in WAL mode" in json.loads(rows[0][2])["text"]


@pytest.mark.parametrize("kind", ["missing", "named pipe"])
def test_stop_hook_with_an_unreadable_transcript_records_nothing(project: Path, kind: str) -> None:
    """A transcript path that is gone, or a named pipe (opening one for reading would wait for
    a writer for good), is passed over at once."""
    path = project / "t.jsonl"
    if kind == "named pipe":
        os.mkfifo(path)
    payload = fixture("claude-code", "stop.decision", project, transcript_path=str(path))
    del payload["last_assistant_message"]
    proc = run_hook(event_name(payload), payload, cwd=project, timeout=20)
    assert proc.returncode == 0
    with sqlite3.connect(project / ".context" / "context.db") as conn:
        assert (
            conn.execute("SELECT count(*) FROM events WHERE category = 'decision'").fetchone()[0]
            == 0
        )
    assert not (project / ".context" / "hooks.log").exists()


def test_a_compaction_summary_is_not_read_back_as_a_prompt(tmp_path: Path) -> None:
    """Claude Code 2.1.332 writes each compaction's summary as a user line
    (``isCompactSummary``): the backfill before the next compaction must skip it."""
    from ctxmode.sessions.transcript import claude_calls

    summary = json.loads(_line("user", "This session is being continued from a previous ..."))
    summary.update(isCompactSummary=True, isVisibleInTranscriptOnly=True)
    path = _write(
        tmp_path / "s.jsonl",
        [_line("user", "Fix the rotation"), json.dumps(summary), _line("user", "What is left?")],
    )
    calls, _offset = claude_calls(str(path))
    assert [c["prompt"] for c in calls] == ["Fix the rotation", "What is left?"]
