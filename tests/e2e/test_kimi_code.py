"""Kimi Code 2.1.0 (``kimi -p --output-format stream-json``, on Node 22 from npm) driven for
real against a scripted OpenAI Chat Completions server, with ctxmode installed by ``ctxmode
install kimi-code --scope user`` (``[[hooks]]`` tables in ``~/.kimi-code/config.toml``, the
server in ``~/.kimi-code/mcp.json``). Kimi Code reads context from its prompt hook only, so
the brief, the snapshot and linked knowledge reach the model with the next prompt."""

from __future__ import annotations

import json
import subprocess
import time
import tomllib
from typing import Any

import harness as h
import pytest
from harness import (  # noqa: F401 - shared tests, collected here with this module's run
    test_a_commit_that_failed_is_not_a_commit,
    test_the_failure_is_an_error_that_says_what_failed,
    test_the_mcp_write_context_call_stored_the_decision,
)
from mock_openai_chat import MockChat, call, text, usage

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

CONSTRAINT = "Refresh tokens are single use: rotation revokes the old one"
FENCE = 'kind="file_knowledge"'
#: The model's window in the config below; a reply reporting nearly all of it makes Kimi
#: compact before its next model call.
WINDOW = 128_000
#: The user's own config, comments included: the install must keep every line of it.
CONFIG = """# my Kimi config
default_model = "mock"

[providers.mock]  # the scripted server
type = "openai"
base_url = "{url}"
api_key = "dummy-key-e2e"

[models.mock]
provider = "mock"
model = "mock-model"
max_context_size = {window}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    node = h.cli("node22")
    exe = h.cli("kimi")
    root = tmp_path_factory.mktemp("kimi")
    proj, home = h.make_project(root)
    mock = MockChat(root / "requests.jsonl").start()
    config_path = home / ".kimi-code" / "config.toml"
    config_path.parent.mkdir()
    user_config = CONFIG.format(url=mock.base_url, window=WINDOW)
    config_path.write_text(user_config)
    assert h.ctxmode(proj, home, "init").returncode == 0
    project_scope = h.ctxmode(proj, home, "install", "kimi-code")
    installed = h.ctxmode(proj, home, "install", "kimi-code", "--scope", "user")
    assert installed.returncode == 0, installed.stderr
    again = h.ctxmode(proj, home, "install", "kimi-code", "--scope", "user", "--json")
    out: dict[str, Any] = {"proj": proj, "home": home, "mock": mock, "rcs": [], "marks": {},
                           "user_config": user_config, "config": config_path.read_text(),
                           "project_scope": project_scope, "install": installed.stdout,
                           "again": json.loads(again.stdout),
                           "agents": json.loads(h.ctxmode(proj, home, "agents", "--json").stdout),
                           "doctor": h.ctxmode(proj, home, "doctor").stdout}  # fmt: skip
    if h.CAPTURE:
        import re
        import shlex

        (h.Path(h.CAPTURE) / "kimi-code").mkdir(parents=True, exist_ok=True)
        tee = shlex.join([h.PYTHON, str(h.HERE / "tee_hook.py"), f"{h.CAPTURE}/kimi-code", "--"])
        text_ = config_path.read_text()
        config_path.write_text(
            re.sub(
                r'^command = "',
                lambda m: f"command = {json.dumps(tee + ' ')[:-1]}",
                text_,
                flags=re.MULTILINE,
            )  # fmt: skip
        )
    env = {**h.git_env(home), "NO_COLOR": "1", "TERM": "dumb"}
    env["PATH"] = f"{node.parent}:{env['PATH']}"
    cfg = str(proj / "auth" / "config.py")
    refresh = str(proj / "auth" / "refresh.py")

    def kimi(phase: str, prompt: str, steps: list[dict[str, Any]], *args: str) -> None:
        mock.load(phase, steps)
        out["marks"][phase] = len(mock.requests)
        argv = [str(node), str(exe), "-p", prompt, "--output-format", "stream-json", *args]
        proc = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
        out["rcs"].append(proc.returncode)
        out[phase + ".stdout"] = proc.stdout[-3000:]
        out[phase + ".stderr"] = proc.stderr[-3000:]
        time.sleep(1)  # Kimi does not wait for PostToolUse hooks: let the last one finish

    try:
        kimi("s1", "Shorten the access token TTL to 2 hours, test, commit, record the decision", [
            call("Read", path=cfg),
            call("Edit", path=cfg, old_string="ACCESS_TTL = 86400",
                 new_string="ACCESS_TTL = 7200"),
            call("Bash", command=h.PYTEST, description="Run the test"),
            call("Bash", command=h.COMMIT, description="Commit"),
            call("Bash", command=h.EMPTY_COMMIT, description="Commit again"),
            call("mcp__ctxmode__write_context", type="decision", content=h.DECISION,
                 file_paths=["auth/config.py"]),
            text("ACCESS_TTL is 7200 and committed; test_rotation still fails."),
        ])  # fmt: skip
        added = h.ctxmode(proj, home, "add", "constraint", CONSTRAINT, "--file", "auth/refresh.py")
        assert added.returncode == 0, added.stderr
        kimi("p2", "Now fix the rotation", [
            call("Read", path=refresh),
            call("Edit", path=refresh, old_string="        self.valid.add(new)\n",
                 new_string="        self.valid.discard(old)\n        self.valid.add(new)\n"),
            text("rotate() now revokes the old token."),
        ], "-c")  # fmt: skip
        kimi("p3", "Check the log", [
            call("Bash", command="git log --oneline", description="Log"),
            text("One commit so far.", usage=usage(WINDOW - 2000)),
        ], "-c")  # fmt: skip
        # The last reply reported a nearly full window: Kimi compacts after the next prompt.
        kimi("compact", "Go on", [text("Going on.")], "-c")
        kimi("resume", "Where are we?", [text("The rotation is fixed, not committed.")], "-c")
        kimi("new", "New session: what was decided about auth?", [text("Google OAuth 2.0.")])
    finally:
        mock.stop()
    sids = [s["session_id"] for s in h.sessions(proj, home)]
    out["sid"] = sids[-1]  # the oldest: the session continued four times
    return out


def _main(run: dict[str, Any], *phases: str) -> list[dict[str, Any]]:
    return [r for r in run["mock"].requests if r["kind"] == "main" and r["phase"] in phases]


def test_every_run_ends_cleanly_and_no_hook_failed(run: dict[str, Any]) -> None:
    assert run["rcs"] == [0] * 6, run
    assert "ERROR" not in h.hooks_log(run["proj"]), h.hooks_log(run["proj"])
    assert h.serve_processes(run["proj"]) == []


def test_install_keeps_the_users_config_and_is_idempotent(run: dict[str, Any]) -> None:
    assert run["project_scope"].returncode != 0 and "--scope user" in run["project_scope"].stderr
    assert run["config"].startswith(run["user_config"])  # every line and comment kept
    hooks = tomllib.loads(run["config"])["hooks"]
    assert {hook["event"] for hook in hooks} >= {"PostToolUse", "UserPromptSubmit", "PreCompact"}
    assert all(set(hook) <= {"event", "matcher", "command", "timeout"} for hook in hooks)
    assert {c["action"] for c in run["again"]["changes"]} == {"unchanged"}
    (row,) = [a for a in run["agents"] if a["agent"] == "kimi-code"]
    assert row["hooks_installed"] and row["mcp_installed"] and row["problems"] == [], row
    assert "kimi-code" in run["doctor"]


def test_tool_calls_land_in_their_categories(run: dict[str, Any]) -> None:
    evs = [e for e in h.events(run["proj"], run["home"]) if e["session_id"] == run["sid"]]
    kinds = {(e["category"], e["type"]) for e in evs}
    assert ("file", "edit") in kinds, kinds
    assert ("data", "read") in kinds or ("file", "read") in kinds, kinds
    h.check_the_commit_and_the_decision(evs)


def test_one_compaction_one_snapshot(run: dict[str, Any]) -> None:
    assert run["mock"].of_kind("compaction")
    assert {r["phase"] for r in run["mock"].of_kind("compaction")} == {"compact"}
    (row,) = [s for s in h.sessions(run["proj"], run["home"]) if s["session_id"] == run["sid"]]
    assert row["compact_count"] == 1
    sql = f"SELECT count(*) FROM session_resume WHERE session_id = '{run['sid']}'"
    assert h.db_rows(run["proj"], sql) == [(1,)]


def test_the_snapshot_reaches_the_model_once_with_the_next_prompt(run: dict[str, Any]) -> None:
    after = _main(run, "resume")
    assert after
    for req in after:
        assert h.snapshot_copies(req["body"]) == 1, h.strings_of(req["body"])[-3000:]
    assert h.readable(h.snapshot_block(after[0]["body"]))


def test_a_continued_session_carries_one_snapshot(run: dict[str, Any]) -> None:
    """The first continued run gets it with its prompt; Kimi keeps that prompt's hook result
    in the session, so later runs replay that copy and ctxmode adds none."""
    for req in _main(run, "p2", "p3"):
        assert h.snapshot_copies(req["body"]) == 1, h.strings_of(req["body"])[-3000:]


def test_a_new_session_gets_the_brief_and_no_snapshot(run: dict[str, Any]) -> None:
    for req in _main(run, "s1"):
        assert h.snapshot_copies(req["body"]) == 0
    new = _main(run, "new")
    assert new
    for req in new:
        text_ = h.strings_of(req["body"])
        assert h.snapshot_copies(req["body"]) == 0
        assert text_.count('kind="project_brief"') == 1, text_[-3000:]
        assert h.DECISION in text_[text_.find('kind="project_brief"') :]


def test_knowledge_linked_to_a_file_comes_with_the_next_prompt_once(run: dict[str, Any]) -> None:
    """Kimi Code takes no context from tool hooks: the knowledge linked to auth/refresh.py,
    read in p2, reaches the model with the next prompt (p3), once."""
    copies = [h.strings_of(r["body"]).count(FENCE) for r in _main(run, "s1", "p2")]
    assert copies == [0] * len(copies), copies
    later = _main(run, "p3")
    assert later and [h.strings_of(r["body"]).count(FENCE) for r in later] == [1] * len(later)
    assert CONSTRAINT in h.strings_of(later[0]["body"])


def test_nothing_injected_is_stored_as_user_input(run: dict[str, Any]) -> None:
    evs = h.events(run["proj"], run["home"])
    for text_ in h.stored_user_text(evs):
        assert not any(mark in text_ for mark in (*h.INJECTED_MARKS, "hook_result")), text_
    prompts = [e["data"].get("text") for e in evs if e["category"] == "prompt"]
    assert "Where are we?" in prompts and "Now fix the rotation" in prompts, prompts
