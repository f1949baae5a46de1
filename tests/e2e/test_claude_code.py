"""Claude Code 2.1.332 (native binary, ``-p`` stream-json) driven for real against a scripted
Anthropic Messages server, with ctxmode installed by ``ctxmode install claude-code``."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import harness as h
import pytest
from harness import (  # noqa: F401 - shared tests, collected here with this module's run
    test_a_commit_that_failed_is_not_a_commit,
    test_the_failure_is_an_error_that_says_what_failed,
    test_the_history_import_gives_back_what_the_hooks_recorded,
    test_the_mcp_write_context_call_stored_the_decision,
)
from mock_anthropic import MockAnthropic

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

P1 = "Shorten the access token TTL to 2 hours, test, commit and record the auth decision"
P2 = "Now look at the rotation test"
P3 = "What is left after the compaction?"
P4 = "Resumed: continue with the rotation fix"
P5 = "New session: what do we know about sign-in?"


#: Knowledge linked to a file (``ctxmode add --file``) that the agent writes in prompt 2.
CONSTRAINT = "Refresh tokens are single use: rotation revokes the old one"
OLD, NEW = "ROTATE = False\n", "ROTATE = True\n"


def script(proj: Path) -> list[dict[str, Any]]:
    cfg = str(proj / "auth" / "config.py")
    tokens = str(proj / "auth" / "tokens.py")

    def bash(cmd: str) -> dict[str, Any]:
        return {"tool_use": [{"name": "Bash", "input": {"command": cmd, "description": "run"}}]}

    return [
        {
            "match": P1,
            "turns": [
                {
                    "tool_use": [
                        {
                            "name": "ToolSearch",
                            "input": {
                                "query": "select:mcp__ctxmode__write_context",
                                "max_results": 5,
                            },
                        }
                    ]
                },
                {"tool_use": [{"name": "Read", "input": {"file_path": cfg}}]},
                {
                    "tool_use": [
                        {
                            "name": "Edit",
                            "input": {
                                "file_path": cfg,
                                "old_string": "ACCESS_TTL = 86400",
                                "new_string": "ACCESS_TTL = 7200",
                            },
                        }
                    ]
                },
                bash(h.PYTEST),
                bash(h.COMMIT),
                bash(h.EMPTY_COMMIT),
                {
                    "tool_use": [
                        {
                            "name": "mcp__ctxmode__write_context",
                            "input": {
                                "type": "decision",
                                "content": h.DECISION,
                                "file_paths": ["auth/config.py"],
                            },
                        }
                    ]
                },
                {"text": "ACCESS_TTL is 7200 and committed; test_rotation still fails."},
            ],
        },  # fmt: skip
        {
            "match": P2,
            "turns": [
                {
                    "tool_use": [
                        {
                            "name": "Read",
                            "input": {"file_path": str(proj / "tests" / "test_refresh.py")},
                        }
                    ]
                },
                {"tool_use": [{"name": "Write", "input": {"file_path": tokens, "content": OLD}}]},
                {
                    "tool_use": [
                        {
                            "name": "Edit",
                            "input": {"file_path": tokens, "old_string": OLD, "new_string": NEW},
                        }
                    ]
                },
                {"text": "rotate() never revokes the old token."},
            ],
        },  # fmt: skip
        {"match": P3, "turns": [bash("git log --oneline"), {"text": "Left: the rotation fix."}]},
        {"match": P4, "turns": [{"text": "Continuing after resume."}]},
        {"match": P5, "turns": [{"text": "We use Google OAuth 2.0."}]},
    ]


class Claude:
    """One ``claude -p`` stream-json process; ``ask`` sends a prompt and waits for its result."""

    def __init__(self, exe: Path, proj: Path, env: dict[str, str], args: list[str]) -> None:
        argv = [str(exe), "-p", "--input-format", "stream-json", "--output-format",
                "stream-json", "--verbose", "--include-hook-events", "--permission-mode",
                "bypassPermissions", *args]  # fmt: skip
        self.proc = subprocess.Popen(
            argv, cwd=proj, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )  # fmt: skip
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stream: list[dict[str, Any]] = []  # every line the agent printed
        self.session_id: str | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                self.stream.append(item)
                self.lines.put(item)
        self.lines.put(None)

    def ask(self, prompt: str, timeout: float = 240) -> dict[str, Any]:
        assert self.proc.stdin is not None
        message = {"type": "user", "message": {"role": "user", "content": prompt}}
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        end = time.monotonic() + timeout
        while True:
            item = self.lines.get(timeout=max(0.1, end - time.monotonic()))
            assert item is not None, "claude exited before answering"
            self.session_id = item.get("session_id") or self.session_id
            if item.get("type") == "result":
                return item

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(90)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


@pytest.fixture(scope="module", params=["command", "in-agent"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One scripted session per hook kind: every hook a process, or (issue 21) the tool-call
    hooks inside the agent, through the ctxmode server it is connected to."""
    exe = h.cli("claude")
    root = tmp_path_factory.mktemp("claude")
    proj, home = h.make_project(root)
    assert h.ctxmode(proj, home, "init").returncode == 0
    installed = h.ctxmode(
        proj, home, "install", "claude-code", "--scope", "project", "--hooks", request.param
    )
    assert installed.returncode == 0, installed.stderr
    settings_path = proj / ".claude" / "settings.local.json"
    settings = json.loads(settings_path.read_text())
    h.wrap_hooks_for_capture(settings, "claude-code")
    settings_path.write_text(json.dumps(settings, indent=2))
    mock = MockAnthropic(script(proj), root / "requests.jsonl").start()
    env = h.claude_env(home, mock.url)
    marks: dict[str, int] = {}
    try:
        first = Claude(exe, proj, env, [])
        for prompt in (P1, P2, "/compact", P3):
            if prompt == P2:  # knowledge linked to a file the agent has not touched yet
                added = h.ctxmode(
                    proj, home, "add", "constraint", CONSTRAINT, "--file", "auth/tokens.py"
                )
                assert added.returncode == 0, added.stderr
            marks[prompt] = len(mock.requests)
            first.ask(prompt)
        rc1 = first.close()
        sid = first.session_id
        assert sid
        marks["resume"] = len(mock.requests)
        resumed = Claude(exe, proj, env, ["--resume", sid])
        resumed.ask(P4)
        rc2 = resumed.close()
        marks["new"] = len(mock.requests)
        fresh = Claude(exe, proj, env, [])
        fresh.ask(P5)
        rc3 = fresh.close()
        time.sleep(1)
    finally:
        mock.stop()
    return {
        "proj": proj, "home": home, "mock": mock, "marks": marks, "sid": sid,
        "new_sid": fresh.session_id, "rcs": (rc1, rc2, rc3), "install": installed.stdout,
        "hooks": request.param, "streams": first.stream + resumed.stream + fresh.stream,
    }  # fmt: skip


def _main_after(run: dict[str, Any], mark: str, until: str | None = None) -> list[dict[str, Any]]:
    end = run["marks"][until] if until else None
    return [r for r in run["mock"].requests[run["marks"][mark] : end] if r["kind"] == "main"]


def test_every_session_ends_cleanly_and_no_hook_failed(run: dict[str, Any]) -> None:
    assert run["rcs"] == (0, 0, 0)
    assert "ERROR" not in h.hooks_log(run["proj"]), h.hooks_log(run["proj"])
    assert h.serve_processes(run["proj"]) == []
    responses = [e for e in run["streams"] if e.get("subtype") == "hook_response"]
    assert responses and all(e.get("outcome") == "success" for e in responses), [
        e for e in responses if e.get("outcome") != "success"
    ]


def test_the_installed_kind_of_hooks_is_what_ran(run: dict[str, Any]) -> None:
    """In-agent: Claude Code ran the tool-call hooks as mcp_tool calls (no hook process), the
    rest as commands; the store got the same kinds of events either way (the other tests)."""
    settings = json.loads((run["proj"] / ".claude" / "settings.local.json").read_text())
    kinds = {
        event: {hook["type"] for group in groups for hook in group["hooks"]}
        for event, groups in settings["hooks"].items()
    }
    inside = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop"}
    for event, types in kinds.items():
        want = "mcp_tool" if run["hooks"] == "in-agent" and event in inside else "command"
        assert types == {want}, (event, types)
    ran = {e.get("hook_event") for e in run["streams"] if e.get("subtype") == "hook_response"}
    assert {"PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop"} <= ran


def test_tool_calls_land_in_their_categories(run: dict[str, Any]) -> None:
    evs = [e for e in h.events(run["proj"], run["home"]) if e["session_id"] == run["sid"]]
    kinds = {(e["category"], e["type"]) for e in evs}
    edits = [e for e in evs if (e["category"], e["type"]) == ("file", "edit")]
    assert edits and edits[0]["data"]["path"].endswith("auth/config.py")
    assert ("data", "read") in kinds or ("file", "read") in kinds
    h.check_the_commit_and_the_decision(evs)
    errors = [e for e in evs if e["category"] == "error"]
    assert any("test_refresh" in json.dumps(e["data"]) for e in errors)


def test_one_compaction_one_snapshot(run: dict[str, Any]) -> None:
    (row,) = [s for s in h.sessions(run["proj"], run["home"]) if s["session_id"] == run["sid"]]
    assert row["compact_count"] == 1
    stored = h.db_rows(
        run["proj"], f"SELECT count(*) FROM session_resume WHERE session_id = '{run['sid']}'"
    )
    assert stored == [(1,)]


def test_the_snapshot_reaches_the_model_once_after_the_compaction(run: dict[str, Any]) -> None:
    after = _main_after(run, P3, "resume")
    assert after
    for req in after:
        assert h.snapshot_copies(req["body"]) == 1
    assert h.readable(h.snapshot_block(after[0]["body"]))


def test_a_resume_carries_exactly_one_snapshot(run: dict[str, Any]) -> None:
    for req in _main_after(run, "resume", "new"):
        assert h.snapshot_copies(req["body"]) == 1


def test_a_new_session_gets_the_brief_not_the_snapshot(run: dict[str, Any]) -> None:
    (req,) = _main_after(run, "new")[:1]
    text = h.strings_of(req["body"])
    assert h.snapshot_copies(req["body"]) == 0
    assert "project_brief" in text and h.DECISION in text


def test_nothing_injected_is_stored_as_user_input(run: dict[str, Any]) -> None:
    for text in h.stored_user_text(h.events(run["proj"], run["home"])):
        assert not any(mark in text for mark in h.INJECTED_MARKS), text


def test_knowledge_linked_to_a_file_reaches_the_model_at_its_first_edit_once(
    run: dict[str, Any],
) -> None:
    """Issue 22: the constraint linked to auth/tokens.py is injected when the agent first
    writes that file (prompt 2), not at the edit of the unlinked auth/config.py (prompt 1), and
    the second edit of the file does not repeat it."""
    before = _main_after(run, P1, P2)
    assert before and not any(CONSTRAINT in h.strings_of(r["body"]) for r in before)
    during = _main_after(run, P2, "/compact")
    copies = [h.strings_of(r["body"]).count(CONSTRAINT) for r in during]
    assert copies[0] == 0  # the prompt itself: nothing linked was touched yet
    assert 1 in copies and max(copies) == 1, copies  # shown once, and kept once in the history
