"""Qwen Code 0.24.4 (``qwen -p -o json --yolo``, on Node 22 from npm) driven for real against a
scripted OpenAI Chat Completions server, with ctxmode installed by ``ctxmode install qwen-code
--scope project`` (hooks and MCP server in ``.qwen/settings.json``)."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import harness as h
import pytest
from harness import (  # noqa: F401 - shared tests, collected here with this module's run
    test_a_commit_that_failed_is_not_a_commit,
    test_the_failure_is_an_error_that_says_what_failed,
    test_the_history_import_gives_back_what_the_hooks_recorded,
    test_the_mcp_write_context_call_stored_the_decision,
)
from mock_openai_chat import MockChat, call, text, usage

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

#: Knowledge linked to a file (``ctxmode add --file``) that the agent edits in p2.
CONSTRAINT = "Refresh tokens are single use: rotation revokes the old one"
#: Prompt tokens a reply reports to push Qwen over its compression threshold (70 % of the
#: 200 000-token window it assumes for an unknown model).
FULL = 190_000


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    node = h.cli("node22")
    exe = h.cli("qwen")
    root = tmp_path_factory.mktemp("qwen")
    proj, home = h.make_project(root)
    mock = MockChat(root / "requests.jsonl").start()
    assert h.ctxmode(proj, home, "init").returncode == 0
    installed = h.ctxmode(proj, home, "install", "qwen-code", "--scope", "project")
    assert installed.returncode == 0, installed.stderr
    again = h.ctxmode(proj, home, "install", "qwen-code", "--scope", "project", "--json")
    out: dict[str, Any] = {"proj": proj, "home": home, "mock": mock, "rcs": [], "marks": {},
                           "install": installed.stdout, "again": json.loads(again.stdout),
                           "agents": json.loads(h.ctxmode(proj, home, "agents", "--json").stdout),
                           "doctor": h.ctxmode(proj, home, "doctor").stdout}  # fmt: skip
    settings_path = proj / ".qwen" / "settings.json"
    settings = json.loads(settings_path.read_text())
    h.wrap_hooks_for_capture(settings, "qwen-code")
    settings_path.write_text(json.dumps(settings, indent=2))
    env = {**h.git_env(home), "OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "dummy",
           "OPENAI_MODEL": "mock-model", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
           "NO_COLOR": "1", "TERM": "dumb"}  # fmt: skip
    env["PATH"] = f"{node.parent}:{env['PATH']}"
    cfg = str(proj / "auth" / "config.py")
    refresh = str(proj / "auth" / "refresh.py")

    def qwen(phase: str, prompt: str, steps: list[dict[str, Any]], *args: str) -> None:
        mock.load(phase, steps)
        out["marks"][phase] = len(mock.requests)
        argv = [str(node), str(exe), "--auth-type", "openai", "-m", "mock-model", "--yolo",
                "-o", "json", *args, prompt]  # fmt: skip
        proc = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
        out["rcs"].append(proc.returncode)
        out[phase + ".stdout"] = proc.stdout[-3000:]
        out[phase + ".stderr"] = proc.stderr[-3000:]

    try:
        qwen("s1", "Shorten the access token TTL to 2 hours, test, commit, record the decision", [
            call("read_file", file_path=cfg),
            call("edit", file_path=cfg, old_string="ACCESS_TTL = 86400",
                 new_string="ACCESS_TTL = 7200"),
            call("run_shell_command", command=h.PYTEST, description="Run the test"),
            call("run_shell_command", command=h.COMMIT, description="Commit"),
            call("run_shell_command", command=h.EMPTY_COMMIT, description="Commit again"),
            call("mcp__ctxmode__write_context", type="decision", content=h.DECISION,
                 file_paths=["auth/config.py"]),
            text("ACCESS_TTL is 7200 and committed; test_rotation still fails."),
        ])  # fmt: skip
        added = h.ctxmode(proj, home, "add", "constraint", CONSTRAINT, "--file", "auth/refresh.py")
        assert added.returncode == 0, added.stderr
        qwen("p2", "Now fix the rotation", [
            call("read_file", file_path=refresh),
            call("edit", file_path=refresh, old_string="        self.valid.add(new)\n",
                 new_string="        self.valid.discard(old)\n        self.valid.add(new)\n"),
            call("edit", file_path=refresh, old_string="the bug", new_string="fixed"),
            text("rotate() now revokes the old token."),
        ], "-c")  # fmt: skip
        # The first reply reports a nearly full window: Qwen compresses before the next call.
        qwen("compact", "Check the log", [
            call("run_shell_command", command="git log --oneline", description="Log",
                 ) | {"usage": usage(FULL)},
            text("One commit so far."),
            text("Still here."),
        ], "-c")  # fmt: skip
        qwen("resume", "Where are we?", [text("The rotation is fixed, not committed.")], "-c")
        qwen("new", "New session: what was decided about auth?", [text("Google OAuth 2.0.")])
        time.sleep(1)
    finally:
        mock.stop()
    sids = [s["session_id"] for s in h.sessions(proj, home)]
    out["sid"] = sids[-1]  # the oldest: the session continued four times
    return out


def _main(run: dict[str, Any], *phases: str) -> list[dict[str, Any]]:
    return [r for r in run["mock"].requests if r["kind"] == "main" and r["phase"] in phases]


def _compaction_n(run: dict[str, Any]) -> int:
    reqs = run["mock"].of_kind("compaction")
    assert len(reqs) == 1, [r["phase"] for r in reqs]
    return int(reqs[0]["n"])


def test_every_run_ends_cleanly_and_no_hook_failed(run: dict[str, Any]) -> None:
    assert run["rcs"] == [0, 0, 0, 0, 0], run
    assert "ERROR" not in h.hooks_log(run["proj"]), h.hooks_log(run["proj"])
    assert h.serve_processes(run["proj"]) == []


def test_install_is_reported_and_idempotent(run: dict[str, Any]) -> None:
    assert "qwen-code" in run["install"]
    assert {c["action"] for c in run["again"]["changes"]} == {"unchanged"}
    (row,) = [a for a in run["agents"] if a["agent"] == "qwen-code"]
    assert row["hooks_installed"] and row["mcp_installed"] and row["problems"] == [], row
    assert "qwen-code" in run["doctor"]


def test_tool_calls_land_in_their_categories(run: dict[str, Any]) -> None:
    evs = [e for e in h.events(run["proj"], run["home"]) if e["session_id"] == run["sid"]]
    kinds = {(e["category"], e["type"]) for e in evs}
    assert ("file", "edit") in kinds, kinds
    assert ("data", "read") in kinds or ("file", "read") in kinds, kinds
    h.check_the_commit_and_the_decision(evs)
    assert all(e["agent"] == "qwen-code" for e in evs if "agent" in e)


def test_one_compaction_one_snapshot(run: dict[str, Any]) -> None:
    _compaction_n(run)
    (row,) = [s for s in h.sessions(run["proj"], run["home"]) if s["session_id"] == run["sid"]]
    assert row["compact_count"] == 1
    sql = f"SELECT count(*) FROM session_resume WHERE session_id = '{run['sid']}'"
    assert h.db_rows(run["proj"], sql) == [(1,)]


def test_the_snapshot_reaches_the_model_once_after_the_compaction(run: dict[str, Any]) -> None:
    at = _compaction_n(run)
    after = [r for r in _main(run, "compact", "resume") if r["n"] > at]
    assert after
    for req in after:
        assert h.snapshot_copies(req["body"]) == 1, h.strings_of(req["body"])[-3000:]
    assert h.readable(h.snapshot_block(after[0]["body"]))


def test_a_continued_session_carries_one_snapshot(run: dict[str, Any]) -> None:
    for req in _main(run, "p2"):
        assert h.snapshot_copies(req["body"]) == 1


def test_a_new_session_gets_the_brief_and_no_snapshot(run: dict[str, Any]) -> None:
    for req in _main(run, "s1"):
        assert h.snapshot_copies(req["body"]) == 0
        assert 'kind="project_brief"' not in h.strings_of(req["body"])  # nothing known yet
    new = _main(run, "new")
    assert new
    for req in new:
        text_ = h.strings_of(req["body"])
        assert h.snapshot_copies(req["body"]) == 0
        assert text_.count('kind="project_brief"') == 1, text_[-3000:]
        assert h.DECISION in text_[text_.find('kind="project_brief"') :]


def test_knowledge_linked_to_a_file_comes_with_its_first_read_once(run: dict[str, Any]) -> None:
    """Qwen Code drops PreToolUse context: the knowledge linked to auth/refresh.py rides on the
    result of its first read (p2), kept once in the history, not repeated at its edits."""
    fence = 'kind="file_knowledge"'
    copies = [h.strings_of(r["body"]).count(fence) for r in _main(run, "s1", "p2")]
    assert copies == [0] * 7 + [0, 1, 1, 1], copies
    read_result = [m for m in _main(run, "p2")[1]["body"]["messages"] if m["role"] == "tool"][-1]
    assert CONSTRAINT in h.strings_of(read_result) and "auth/refresh.py" in h.strings_of(
        read_result
    )


def test_nothing_injected_is_stored_as_user_input(run: dict[str, Any]) -> None:
    evs = h.events(run["proj"], run["home"])
    for text_ in h.stored_user_text(evs):
        assert not any(mark in text_ for mark in (*h.INJECTED_MARKS, "qwen:")), text_
    prompts = [e["data"].get("text") for e in evs if e["category"] == "prompt"]
    assert "Where are we?" in prompts and "Now fix the rotation" in prompts, prompts
    assert "" not in prompts and None not in prompts
