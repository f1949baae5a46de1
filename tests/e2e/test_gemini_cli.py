"""Gemini CLI 0.61.0 (``gemini -p -o stream-json``) driven for real against a scripted Gemini
API server, with ctxmode installed by ``ctxmode install gemini-cli --scope project --trust`` (no
``GEMINI_CLI_TRUST_WORKSPACE``: the folder trust ctxmode records is what lets Gemini CLI run)."""

from __future__ import annotations

import json
import shutil
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
from mock_gemini import MockGemini, call, text

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    exe = h.cli("gemini")
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: Gemini CLI cannot run")
    root = tmp_path_factory.mktemp("gemini")
    proj, home = h.make_project(root)
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        # No start-up cleanup of chat files (on by default: chats older than 30 days, and
        # files it reads as holding nothing to resume): it once removed the scripted
        # session's chat before the history import could compare it with the hooks' record.
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True,
                    "sessionRetention": {"enabled": False}},
    }))  # fmt: skip
    assert h.ctxmode(proj, home, "init").returncode == 0
    mock = MockGemini(root / "requests.jsonl").start()
    env = {**h.git_env(home), "GEMINI_API_KEY": "dummy-key", "GOOGLE_GEMINI_BASE_URL": mock.url,
           "NO_COLOR": "1", "TERM": "dumb"}  # fmt: skip
    env["PATH"] += ":" + str(h.Path(node).parent)
    # Installed without --trust: the folder is untrusted, so the real binary refuses to start.
    untrusted = h.ctxmode(proj, home, "install", "gemini-cli", "--scope", "project")
    assert untrusted.returncode == 0, untrusted.stderr
    agents = json.loads(h.ctxmode(proj, home, "agents", "--json").stdout)
    mock.load("untrusted", [text("never asked")])
    refused = subprocess.run(
        [node, str(exe), "-m", "gemini-2.5-pro", "-o", "stream-json", "-p", "hello"], cwd=proj,
        env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    out: dict[str, Any] = {"proj": proj, "home": home, "mock": mock, "rcs": [], "marks": {},
                           "untrusted": {"install": untrusted.stdout, "agents": agents,
                                         "rc": refused.returncode, "stderr": refused.stderr,
                                         "requests": len(mock.requests),
                                         "sessions": h.sessions(proj, home)}}  # fmt: skip
    installed = h.ctxmode(proj, home, "install", "gemini-cli", "--scope", "project", "--trust")
    assert installed.returncode == 0, installed.stderr
    out["install"] = installed.stdout
    out["trust_file"] = json.loads((home / ".gemini" / "trustedFolders.json").read_text())
    out["agents"] = json.loads(h.ctxmode(proj, home, "agents", "--json").stdout)
    settings_path = proj / ".gemini" / "settings.json"
    settings = json.loads(settings_path.read_text())
    h.wrap_hooks_for_capture(settings, "gemini-cli")
    settings_path.write_text(json.dumps(settings, indent=2))
    cfg = str(proj / "auth" / "config.py")

    def gemini(phase: str, prompt: str, turns: list[dict[str, Any]], resume: bool) -> None:
        mock.load(phase, turns)
        out["marks"][phase] = len(mock.requests)
        argv = [node, str(exe), "-m", "gemini-2.5-pro", "-o", "stream-json", "--approval-mode",
                "yolo", "-p", prompt, *(["-r", "latest"] if resume else [])]  # fmt: skip
        proc = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
        out["rcs"].append(proc.returncode)
        out[phase + ".stderr"] = proc.stderr[-2000:]

    try:
        first = "Shorten the access token TTL to 2 hours, test, commit, record the decision"
        gemini("new", first, [
            call("read_file", file_path=cfg),
            call("replace", file_path=cfg, old_string="ACCESS_TTL = 86400",
                 new_string="ACCESS_TTL = 7200", instruction="Shorten the TTL to 2h"),
            call("run_shell_command", command=h.PYTEST, description="Run the test"),
            call("run_shell_command", command=h.COMMIT, description="Commit"),
            call("run_shell_command", command=h.EMPTY_COMMIT, description="Commit again"),
            call("mcp_ctxmode_write_context", type="decision", content=h.DECISION,
                 file_paths=["auth/config.py"]),
            text("ACCESS_TTL is 7200 and committed; test_rotation still fails."),
        ], resume=False)  # fmt: skip
        # The first reply reports a huge prompt: the next model call compresses first.
        gemini("compress", "Now find the cause of the rotation failure", [
            call("read_file", file_path=str(proj / "tests" / "test_refresh.py"),
                 prompt_tokens=600000),
            text("rotate() never revokes the old token."),
        ], resume=True)  # fmt: skip
        gemini("resume", "Where are we?", [text("The rotation still needs a fix.")], resume=True)
        gemini("fresh", "What did we decide about auth?", [text("Google OAuth 2.0.")], resume=False)
        time.sleep(1)
    finally:
        mock.stop()
    sids = [s["session_id"] for s in h.sessions(proj, home)]
    out["sid"] = sids[-1]  # the oldest: the session resumed twice
    return out


def _main(run: dict[str, Any], phase: str) -> list[dict[str, Any]]:
    return [r for r in run["mock"].requests if r["kind"] == "main" and r.get("phase") == phase]


def test_every_run_ends_cleanly_and_no_hook_failed(run: dict[str, Any]) -> None:
    assert run["rcs"] == [0, 0, 0, 0], run
    assert "ERROR" not in h.hooks_log(run["proj"]), h.hooks_log(run["proj"])
    assert h.serve_processes(run["proj"]) == []


def _gemini_problems(agents: list[dict[str, Any]]) -> list[str]:
    (row,) = [a for a in agents if a["agent"] == "gemini-cli"]
    assert row["hooks_installed"] and row["mcp_installed"]
    return [p for p in row["problems"] if "Gemini CLI" in p]


def test_without_folder_trust_gemini_runs_nothing_and_ctxmode_says_so(run: dict[str, Any]) -> None:
    untrusted = run["untrusted"]
    assert "ctxmode install gemini-cli --trust" in untrusted["install"]
    (problem,) = _gemini_problems(untrusted["agents"])
    assert "does not trust" in problem and "/permissions trust" in problem
    # the real binary agrees: no hook, no model request, an error naming the trust
    assert untrusted["rc"] != 0 and "trusted directory" in untrusted["stderr"]
    assert untrusted["requests"] == 0 and untrusted["sessions"] == []


def test_the_trust_ctxmode_records_is_what_gemini_reads(run: dict[str, Any]) -> None:
    assert run["trust_file"] == {str(run["proj"].resolve()): "TRUST_FOLDER"}
    assert "folder trust of" in run["install"]
    assert _gemini_problems(run["agents"]) == []


def test_tool_calls_land_in_their_categories(run: dict[str, Any]) -> None:
    evs = [e for e in h.events(run["proj"], run["home"]) if e["session_id"] == run["sid"]]
    kinds = {(e["category"], e["type"]) for e in evs}
    assert ("file", "edit") in kinds
    assert ("data", "read") in kinds or ("file", "read") in kinds
    h.check_the_commit_and_the_decision(evs)


def test_the_failing_test_is_an_error(run: dict[str, Any]) -> None:
    evs = h.events(run["proj"], run["home"])
    errors = [e for e in evs if e["category"] == "error"]
    assert any("test_refresh" in json.dumps(e["data"]) for e in errors), evs


def test_only_the_real_compression_counts(run: dict[str, Any]) -> None:
    assert len(run["mock"].of_kind("side:compression")) == 1
    (row,) = [s for s in h.sessions(run["proj"], run["home"]) if s["session_id"] == run["sid"]]
    assert row["compact_count"] == 1
    sql = f"SELECT count(*) FROM session_resume WHERE session_id = '{run['sid']}'"
    assert h.db_rows(run["proj"], sql) == [(1,)]


def test_the_resume_after_compression_carries_one_readable_snapshot(run: dict[str, Any]) -> None:
    reqs = _main(run, "resume")
    assert reqs
    body = reqs[0]["body"]
    assert h.snapshot_copies(body) == 1, h.strings_of(body)[-4000:]
    assert h.readable(h.snapshot_block(body))


def test_no_snapshot_before_any_compression(run: dict[str, Any]) -> None:
    for req in _main(run, "new") + _main(run, "fresh"):
        assert h.snapshot_copies(req["body"]) == 0


def test_nothing_injected_is_stored_as_user_input(run: dict[str, Any]) -> None:
    evs = h.events(run["proj"], run["home"])
    for text_ in h.stored_user_text(evs):
        assert not any(mark in text_ for mark in h.INJECTED_MARKS), text_
    prompts = [e["data"].get("text") for e in evs if e["category"] == "prompt"]
    assert "Where are we?" in prompts and "What did we decide about auth?" in prompts
