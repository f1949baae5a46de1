"""Claude Code 2.1.332 for real, one session compacted twice: what the model receives after the
second compaction (issue 33). Between the compactions the user corrects an instruction of the
first prompt in Chinese, the agent fixes the failing test and commits; the
snapshot after the second compaction must state the current state, built on the first.
(``-p`` sessions of this version have no task tools: TaskCreate and TodoWrite are disabled.)"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import harness as h
import pytest
from mock_anthropic import MockAnthropic
from test_claude_code import Claude

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

RENAME = "rename rotate() to rotate_token()"
P1 = f"Fix the refresh-token rotation in auth/refresh.py; {RENAME}; record the rule."
P2 = "不对，不要把 rotate() 改名为 rotate_token()，保持原来的名字。修好测试后提交。"
P3 = "What is left now?"
RULE = "Refresh tokens are single use: rotate() revokes the old one"
COMMIT_MSG = "Revoke the old refresh token on rotation"


def script(proj: Path) -> list[dict[str, Any]]:
    refresh = str(proj / "auth" / "refresh.py")

    def one(name: str, **inp: Any) -> dict[str, Any]:
        return {"tool_use": [{"name": name, "input": inp}]}

    return [
        {
            "match": P1,
            "turns": [
                one("ToolSearch", query="select:mcp__ctxmode__write_context", max_results=5),
                one("Read", file_path=refresh),
                one("Bash", command=h.PYTEST, description="run the test"),
                one(
                    "mcp__ctxmode__write_context",
                    type="decision",
                    content=RULE,
                    file_paths=["auth/refresh.py"],
                ),  # fmt: skip
                {"text": "test_rotation fails: rotate() keeps the old token valid."},
            ],
        },
        {
            "match": P2,
            "turns": [
                one(
                    "Edit",
                    file_path=refresh,
                    old_string="        self.valid.add(new)\n",
                    new_string="        self.valid.discard(old)\n        self.valid.add(new)\n",
                ),  # fmt: skip
                one("Bash", command=h.PYTEST, description="run the test"),
                one(
                    "Bash",
                    command=f"git add -A && git commit -m '{COMMIT_MSG}'",
                    description="commit",
                ),  # fmt: skip
                {"text": "rotate() now revokes the old token; the test passes; committed."},
            ],
        },
        {"match": P3, "turns": [{"text": "Left: document the rotation rule."}]},
    ]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    exe = h.cli("claude")
    root = tmp_path_factory.mktemp("claude-twice")
    proj, home = h.make_project(root)
    assert h.ctxmode(proj, home, "init").returncode == 0
    installed = h.ctxmode(proj, home, "install", "claude-code", "--scope", "project")
    assert installed.returncode == 0, installed.stderr
    mock = MockAnthropic(script(proj), root / "requests.jsonl").start()
    marks: dict[str, int] = {}
    try:
        agent = Claude(exe, proj, h.claude_env(home, mock.url), [])
        for i, prompt in enumerate((P1, "/compact", P2, "/compact", P3)):
            marks[f"{i}:{prompt}"] = len(mock.requests)
            agent.ask(prompt)
        rc = agent.close()
        time.sleep(1)
    finally:
        mock.stop()
    return {"proj": proj, "home": home, "mock": mock, "marks": marks, "sid": agent.session_id,
            "rc": rc}  # fmt: skip


def _after_second(run: dict[str, Any]) -> list[dict[str, Any]]:
    start = run["marks"][f"4:{P3}"]
    return [r for r in run["mock"].requests[start:] if r["kind"] == "main"]


def _block(run: dict[str, Any]) -> str:
    after = _after_second(run)
    assert after, "no model request after the second compaction"
    return h.snapshot_block(after[0]["body"])


def test_two_compactions_two_snapshots(run: dict[str, Any]) -> None:
    assert run["rc"] == 0
    (row,) = [s for s in h.sessions(run["proj"], run["home"]) if s["session_id"] == run["sid"]]
    assert row["compact_count"] == 2
    stored = h.db_rows(
        run["proj"], f"SELECT count(*) FROM session_resume WHERE session_id = '{run['sid']}'"
    )
    assert stored == [(2,)]


def test_after_the_second_compaction_the_model_gets_one_snapshot(run: dict[str, Any]) -> None:
    for req in _after_second(run):
        assert h.snapshot_copies(req["body"]) == 1


def test_the_correction_stands_and_what_it_reversed_is_gone(run: dict[str, Any]) -> None:
    block = _block(run)
    assert "保持原来的名字" in block
    assert RENAME not in block  # the reversed clause of the first prompt
    assert "Fix the refresh-token rotation in auth/refresh.py" in block  # the rest of it stands


def test_what_the_first_snapshot_kept_and_is_still_true_is_still_there(
    run: dict[str, Any],
) -> None:
    block = _block(run)
    assert RULE in block, block  # stored through write_context before the first compaction


def test_the_current_state_replaces_the_earlier_one(run: dict[str, Any]) -> None:
    block = _block(run)
    assert COMMIT_MSG in block and 'branch="main"' in block, block
    assert "<errors>" not in block, block  # the failing test passes since the fix
    assert "auth/refresh.py" in block and "self.valid.discard(old)" in block  # latest change
    assert len(block.encode()) <= 2048 + 400  # the snapshot and its fence


def test_the_compaction_summary_is_not_taken_for_a_request(run: dict[str, Any]) -> None:
    """Claude Code writes each compaction's summary to the transcript as a user line; the
    backfill at the next compaction must not read it back as the user's prompt."""
    assert "being continued from a previous conversation" not in _block(run)
    for text in h.stored_user_text(h.events(run["proj"], run["home"])):
        assert "being continued from a previous conversation" not in text, text


def test_the_hooks_logged_no_failure(run: dict[str, Any]) -> None:
    log = h.hooks_log(run["proj"])
    assert "ERROR" not in log, log
    assert json.dumps(run["marks"])  # the run went through every prompt
