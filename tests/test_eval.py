"""``ctxmode eval`` end to end: the real Claude Code CLI against a scripted model server.

The model is a local Anthropic Messages server on 127.0.0.1 that plays a script per prompt
(tool calls with the real absolute paths of each scratch copy) and reports its own token
figures, so every number in the report can be traced back to what the server sent. No
network, no login: ``ANTHROPIC_BASE_URL`` and a dummy key are the user's "own environment".

The Claude Code binary (pinned, as in the agent-protocol tests) comes from the tests' one
installer (``tests/_tools.py``); the tests that run it are marked ``e2e``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import _tools
from conftest import CTXMODE
from ctxmode.core.errors import InvalidInput
from ctxmode.evals.agent import AgentRun, parse_stream
from ctxmode.evals.tasks import parse_tasks

CLAUDE_VERSION = "2.1.332"
CLAUDE_PKG = "@anthropic-ai/claude-code-linux-x64"


# --- the agent binary --------------------------------------------------------------------------


def _claude_bin() -> str:
    """The pinned Claude Code, from the tests' one installer (shared with ``tests/e2e``)."""
    if not sys.platform.startswith("linux") or os.uname().machine != "x86_64":
        pytest.skip(f"the pinned Claude Code binary is for linux-x64, not {sys.platform}")
    rel = "node_modules/@anthropic-ai/claude-code-linux-x64/claude"
    return str(_tools.npm_tool("claude", CLAUDE_PKG, CLAUDE_VERSION, rel))


# --- the scripted model server -----------------------------------------------------------------

DECISION = "Access tokens live 2 hours: decided with the security team"


def _script(cwd: str, prompt: str) -> list[dict[str, Any]]:
    """The turns the model plays for a prompt, with absolute paths inside ``cwd``."""
    if "token lifetime" in prompt:
        app = f"{cwd}/app.py"
        return [
            {"tool_use": [{"name": "Read", "input": {"file_path": app}}]},
            {"tool_use": [{"name": "Bash", "input": {"command": "ls", "description": "List"}}]},
            {"tool_use": [{"name": "Edit", "input": {
                "file_path": app, "old_string": "TTL = 86400", "new_string": "TTL = 7200"}}]},
            {"text": "TTL is now 7200."},
        ]  # fmt: skip
    if "release notes" in prompt:
        return [
            {"tool_use": [{"name": "Write", "input": {
                "file_path": f"{cwd}/NOTES.md", "content": "# Notes\n- shorter tokens\n"}}]},
            {"text": "Wrote NOTES.md."},
        ]  # fmt: skip
    return [{"text": "Nothing scripted."}]


def _usage(prompt: str, turn: int) -> dict[str, int]:
    """Distinct figures per task and turn, so a sum tells which requests it counts."""
    base = 1000 if "token lifetime" in prompt else 3000
    return {
        "input_tokens": base + 17 * turn,
        "output_tokens": 11 + turn,
        "cache_creation_input_tokens": 200 + turn,
        "cache_read_input_tokens": 50 * (turn + 1),
    }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


class ScriptedModel:
    """``POST /v1/messages`` (SSE) by script; every served turn logged with its usage."""

    def __init__(self) -> None:
        self.served: list[dict[str, Any]] = []
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw or b"{}")
                owner.answer(self, body)

            def do_GET(self) -> None:  # noqa: N802
                owner.json(self, {"data": [], "has_more": False})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def json(handler: BaseHTTPRequestHandler, obj: Any) -> None:
        data = json.dumps(obj).encode()
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = handler.path.split("?")[0]
        if path.endswith("/count_tokens"):
            return self.json(handler, {"input_tokens": 10})
        if not path.endswith("/v1/messages"):
            return self.json(handler, {})
        messages = body.get("messages") or []
        # The environment (cwd included) is in the system prompt or a "system" message.
        found = re.search(r"Primary working directory: ([^\s\\]+)", json.dumps(body))
        prompt = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
        if body.get("tools") and found:
            turns = _script(found.group(1), prompt)
            turn = sum(1 for m in messages if m.get("role") == "assistant")
            step = turns[min(turn, len(turns) - 1)] if turn < len(turns) else {"text": "Done."}
            usage = _usage(prompt, turn)
        else:  # a side request (title, quota): small fixed figures
            step, usage = {"text": "Side"}, {"input_tokens": 5, "output_tokens": 1}
        try:
            session = json.loads(body["metadata"]["user_id"])["session_id"]
        except (KeyError, TypeError, ValueError):
            session = None
        with self.lock:
            self.served.append(
                {"session": session, "usage": usage, "tools": bool(body.get("tools"))}
            )
            self.bodies.append({"session": session, "body": body})
        self._stream(handler, body, step, usage)

    def _stream(
        self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: dict[str, Any], usage: Any
    ) -> None:
        blocks: list[dict[str, Any]] = []
        if step.get("text"):
            blocks.append({"type": "text", "text": step["text"]})
        for i, tool in enumerate(step.get("tool_use") or []):
            blocks.append({"type": "tool_use", "id": f"toolu_{time.time_ns()}_{i}", **tool})
        stop = "tool_use" if step.get("tool_use") else "end_turn"
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("connection", "close")
        h.end_headers()
        h.close_connection = True

        def ev(name: str, data: dict[str, Any]) -> None:
            h.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        start = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, **usage}
        ev("message_start", {"type": "message_start", "message": {
            "id": f"msg_{time.time_ns()}", "type": "message", "role": "assistant",
            "model": body.get("model", "claude-mock"), "content": [], "stop_reason": None,
            "stop_sequence": None, "usage": {**start, "output_tokens": 1}}})  # fmt: skip
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                first: dict[str, Any] = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": b["text"]}
            else:
                first = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            ev("content_block_start", {"type": "content_block_start", "index": i,
                                       "content_block": first})  # fmt: skip
            ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        ev("message_delta", {"type": "message_delta",
                             "delta": {"stop_reason": stop, "stop_sequence": None},
                             "usage": {"output_tokens": usage["output_tokens"]}})  # fmt: skip
        ev("message_stop", {"type": "message_stop"})
        h.wfile.flush()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    server = ScriptedModel()
    yield server
    server.stop()


# --- the project and its task file ---------------------------------------------------------------

TASKS = """
[[task]]
name = "token-ttl"
prompt = "Shorten the access token lifetime to 2 hours"
setup = ["echo prepared > setup-ran.txt"]
check = "grep -q 'TTL = 7200' app.py && test -f setup-ran.txt"
history = "auth-history.jsonl"
timeout_s = 240

[[task]]
name = "notes"
prompt = "Write the release notes"
check = "test -f CHANGES.md"
timeout_s = 240
"""


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "app.py").write_text("TTL = 86400  # seconds\n")
    (proj / ".gitignore").write_text(".context/\n")
    _git("init", "-q", "-b", "main", cwd=proj)
    _git("config", "user.email", "dev@example.com", cwd=proj)
    _git("config", "user.name", "Dev", cwd=proj)
    _git("add", "-A", cwd=proj)
    _git("commit", "-q", "-m", "initial", cwd=proj)
    (proj / "README.md").write_text("uncommitted, untracked\n")
    return proj


def _history(tmp_path: Path) -> Path:
    """A ctxmode export holding one decision, made by the real CLI in another project."""
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    env = dict(os.environ, CTXMODE_DB=str(other / ".context" / "context.db"))
    assert CTXMODE
    subprocess.run([CTXMODE, "init"], cwd=other, env=env, check=True, capture_output=True)
    subprocess.run([CTXMODE, "add", "decision", DECISION], cwd=other, env=env, check=True,
                   capture_output=True)  # fmt: skip
    export = subprocess.run([CTXMODE, "export"], cwd=other, env=env, check=True,
                            capture_output=True, text=True).stdout  # fmt: skip
    path = tmp_path / "tasks" / "auth-history.jsonl"
    path.parent.mkdir()
    path.write_text(export)
    return path


def _claude_env(model: ScriptedModel, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "CLAUDE"))}
    env.update(
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-dummy-eval",
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        IS_SANDBOX="1",
        TMPDIR=str(tmp_path / "tmp"),
    )
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return env


def _eval(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert CTXMODE
    return subprocess.run(
        [CTXMODE, "eval", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


# --- end to end ----------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.timeout(900)  # real agent sessions (and a first npm install)
def test_eval_two_tasks_both_arms_both_orders(tmp_path: Path, model: ScriptedModel) -> None:
    claude = _claude_bin()
    proj = _project(tmp_path)
    _history(tmp_path)
    tasks = tmp_path / "tasks" / "tasks.toml"
    tasks.write_text(TASKS)
    user_store_before = sorted(p.name for p in proj.iterdir())
    out = tmp_path / "out"
    env = _claude_env(model, tmp_path)
    done = _eval(str(tasks), "--agent-bin", claude, "--runs", "2", "--json", "--out", str(out),
                 "--keep", cwd=proj, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    report = json.loads(done.stdout)
    runs = report["runs"]

    # Two tasks x two runs x two arms; run 1 starts with ctxmode, run 2 without.
    assert len(runs) == 8
    for task in ("token-ttl", "notes"):
        order = [(r["run"], r["arm"]) for r in runs if r["task"] == task]
        assert order == [(1, "with"), (1, "without"), (2, "without"), (2, "with")]
    assert all(r["error"] is None for r in runs), [r["error"] for r in runs]

    # The check decides: token-ttl passes (the edit and the setup happened), notes fails.
    assert {r["passed"] for r in runs if r["task"] == "token-ttl"} == {True}
    assert {r["passed"] for r in runs if r["task"] == "notes"} == {False}
    assert {r["check_exit"] for r in runs if r["task"] == "notes"} == {1}
    by_task = {t["task"]: t for t in report["tasks"]}
    assert by_task["notes"]["pass_rate"]["with"] == {"passed": 0, "runs": 2, "rate": 0.0}
    assert by_task["token-ttl"]["pass_rate"]["without"]["rate"] == 1.0
    assert report["overall"]["pass_rate"]["with"] == {"passed": 2, "runs": 4, "rate": 0.5}

    # Token figures: exactly what the server reported for that session's requests.
    for r in runs:
        served = [s["usage"] for s in model.served if s["session"] == r["session_id"]]
        assert served, r["session_id"]
        assert r["input_tokens"] == sum(u["input_tokens"] for u in served)
        assert r["output_tokens"] == sum(u["output_tokens"] for u in served)
        assert r["cache_creation_tokens"] == sum(
            u.get("cache_creation_input_tokens", 0) for u in served
        )
        assert r["cache_read_tokens"] == sum(u.get("cache_read_input_tokens", 0) for u in served)
    ttl = [r for r in runs if r["task"] == "token-ttl"]
    assert {r["tool_calls"] for r in ttl} == {3}
    assert {r["tool_calls_before_edit"] for r in ttl} == {2}
    assert {r["tool_calls_before_edit"] for r in runs if r["task"] == "notes"} == {0}
    assert by_task["token-ttl"]["metrics"]["tool_calls"] == {
        "with": 3, "without": 3, "diff": 0, "pairs": 2, "spread": 0,
    }  # fmt: skip

    # With ctxmode: the history's decision was injected, reached the model, and the store
    # holds the session's events. Without: no trace of ctxmode anywhere.
    for r in runs:
        bodies = [json.dumps(b["body"]) for b in model.bodies if b["session"] == r["session_id"]]
        copy = Path(r["copy"])
        if r["arm"] == "with":
            assert r["ctxmode_traces"] == []
            assert "ctxmode" in r["mcp_servers"]
            if r["task"] == "token-ttl":
                assert r["injected_bytes"] > len(DECISION)
                assert any(DECISION in b for b in bodies)
                assert r["store"]["loaded"]["source"] == "history"
                assert r["store"]["loaded"]["contexts_added"] == 1
            assert r["store"]["session_events"] > 0
            from ctxmode.store import Store

            with Store.open(copy / ".context" / "context.db", create=False) as store:
                rows = store.conn.execute(
                    "SELECT count(*) FROM events WHERE session_id = ?", (r["session_id"],)
                ).fetchone()
            assert rows[0] == r["store"]["session_events"]
        else:
            assert r["ctxmode_traces"] == []
            assert r["injected_bytes"] == 0 and r["mcp_servers"] == []
            # (the scratch path says "ctxmode-eval": look for what ctxmode itself would add)
            assert not any(m in b for b in bodies for m in ("ctxmode_data", "mcp__ctxmode"))
            assert not any(DECISION in b for b in bodies)
            assert not (copy / ".context").exists()
            assert not (copy / ".mcp.json").exists()
            assert not (copy / ".claude" / "settings.local.json").exists()
        # The copy had the uncommitted file; the user's checkout did not change.
        assert (copy / "README.md").read_text() == "uncommitted, untracked\n"
    assert sorted(p.name for p in proj.iterdir()) == user_store_before
    assert (proj / "app.py").read_text() == "TTL = 86400  # seconds\n"
    assert not (proj / ".context").exists()

    # Raw stream of every run, the record of every run, the verdict sentence.
    for r in runs:
        raw = Path(r["raw"])
        assert raw.parent.parent == out
        lines = [json.loads(x) for x in raw.read_text().splitlines()]
        assert lines[-1]["type"] == "result"
    assert len((out / "runs.jsonl").read_text().splitlines()) == 8
    assert "spread between runs" in by_task["token-ttl"]["verdict"]
    assert report["interrupted"] is False
    assert report["warnings"] == []


@pytest.mark.e2e
@pytest.mark.timeout(600)  # real agent sessions (and a first npm install)
def test_user_scope_install_is_reported(tmp_path: Path, model: ScriptedModel) -> None:
    """A user-scope ctxmode cannot be kept out of the without-arm: the report says so, and the
    without-arm's run lists the traces it left."""
    claude = _claude_bin()
    proj = _project(tmp_path)
    assert CTXMODE
    subprocess.run([CTXMODE, "install", "claude-code", "--scope", "user"], cwd=proj, check=True,
                   capture_output=True)  # fmt: skip
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(
        '[[task]]\nname = "notes"\nprompt = "Write the release notes"\ncheck = "true"\n'
    )
    env = _claude_env(model, tmp_path)
    done = _eval(str(tasks), "--agent-bin", claude, "--runs", "1", "--json", cwd=proj, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (warning,) = report["warnings"]
    assert "installed for claude-code in your user config" in warning
    without = next(r for r in report["runs"] if r["arm"] == "without")
    assert "the ctxmode MCP server was loaded" in without["ctxmode_traces"]


@pytest.mark.e2e
@pytest.mark.timeout(600)  # real agent sessions (and a first npm install)
def test_eval_project_store_uncommitted_changes_human_report(
    tmp_path: Path, model: ScriptedModel
) -> None:
    """No history: the with-arm gets a copy of the project's store, which stays as it was; the
    copies hold the uncommitted edit of a tracked file and are removed afterwards."""
    claude = _claude_bin()
    proj = _project(tmp_path)
    (proj / "app.py").write_text("TTL = 86400  # seconds, edited\n")
    assert CTXMODE
    subprocess.run([CTXMODE, "init"], cwd=proj, check=True, capture_output=True)
    subprocess.run([CTXMODE, "add", "decision", DECISION], cwd=proj, check=True,
                   capture_output=True)  # fmt: skip
    db = proj / ".context" / "context.db"
    before = db.read_bytes()
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(
        '[[task]]\nname = "notes"\nprompt = "Write the release notes"\n'
        'check = "grep -q edited app.py && test ! -e eval-out"\n'
    )
    out = proj / "eval-out"  # inside the project, untracked: not copied into the arms
    env = _claude_env(model, tmp_path)
    done = _eval(str(tasks), "--agent-bin", claude, "--runs", "1", "--out", str(out),
                 cwd=proj, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "task notes" in done.stdout and "passed: with 1/1  without 1/1" in done.stdout
    assert "One run per arm" in done.stdout
    records = {r["arm"]: r for r in map(json.loads, (out / "runs.jsonl").read_text().splitlines())}
    assert records["with"]["store"]["loaded"] == {"source": "project"}
    assert records["with"]["store"]["contexts"] == 1
    assert records["with"]["injected_bytes"] > len(DECISION)
    assert records["without"]["injected_bytes"] == 0
    assert db.read_bytes() == before
    assert not any((tmp_path / "tmp").glob("ctxmode-eval-[!r]*")), "scratch copies left behind"


@pytest.mark.e2e
@pytest.mark.timeout(600)  # real agent sessions (and a first npm install)
def test_eval_interrupted_keeps_what_finished(tmp_path: Path, model: ScriptedModel) -> None:
    claude = _claude_bin()
    proj = _project(tmp_path)
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(TASKS.split("[[task]]")[2].join(["[[task]]", ""]))
    out = tmp_path / "out"
    env = _claude_env(model, tmp_path)
    assert CTXMODE
    proc = subprocess.Popen(
        [CTXMODE, "eval", str(tasks), "--agent-bin", claude, "--runs", "3", "--json",
         "--out", str(out)],
        cwd=proj, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    log = out / "runs.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and not (log.exists() and log.read_text().count("\n") >= 1):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    report = json.loads(stdout)
    assert report["interrupted"] is True
    assert 1 <= len(report["runs"]) < 6
    assert len(log.read_text().splitlines()) == len(report["runs"])
    assert not any((tmp_path / "tmp").glob("ctxmode-eval-[!r]*")), "scratch copies left behind"


# --- errors before any work ----------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.timeout(600)  # real agent sessions (and a first npm install)
def test_missing_agent_and_not_logged_in_fail_before_any_work(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\nname = "a"\nprompt = "p"\ncheck = "true"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "CLAUDE"))}
    out = tmp_path / "out"
    done = _eval(str(tasks), "--agent-bin", str(tmp_path / "nope"), "--out", str(out),
                 cwd=proj, env=env)  # fmt: skip
    assert done.returncode == 1
    assert "cannot run the agent" in done.stderr and "does not exist" in done.stderr
    claude = _claude_bin()
    done = _eval(str(tasks), "--agent-bin", claude, "--out", str(out), cwd=proj, env=env)
    assert done.returncode == 1
    assert "is not logged in" in done.stderr and "claude auth login" in done.stderr
    assert not out.exists()


def test_task_file_errors_are_listed_per_field(tmp_path: Path) -> None:
    text = """
[[task]]
name = "bad name!"
prompt = ""
setup = "echo ok"
timeout_s = 0
colour = "red"

[[task]]
name = "ok"
prompt = "p"
check = "true"
history = "missing.jsonl"

[[task]]
name = "ok"
prompt = "p"
check = "true"
"""
    with pytest.raises(InvalidInput) as info:
        parse_tasks(text, base=tmp_path, source="t.toml")
    lines = str(info.value).splitlines()
    assert lines == [
        "t.toml: task 1 (bad name!): unknown field 'colour'",
        "t.toml: task 1 (bad name!): name must be 1-80 letters, digits, '.', '_' or '-' "
        "(it names folders)",
        "t.toml: task 1 (bad name!): prompt must be a non-empty string",
        "t.toml: task 1 (bad name!): check is missing",
        "t.toml: task 1 (bad name!): timeout_s must be between 1 and 86400 seconds",
        f"t.toml: task 2 (ok): history file {tmp_path / 'missing.jsonl'} does not exist",
        "t.toml: task 3 (ok): name 'ok' is used by an earlier task",
    ]
    with pytest.raises(InvalidInput, match="not valid TOML"):
        parse_tasks("[[task]\n", base=tmp_path)
    with pytest.raises(InvalidInput, match=r"no \[\[task\]\] tables"):
        parse_tasks('title = "x"\n', base=tmp_path, source="t.toml")
    (tasks,) = parse_tasks(
        '[[task]]\nname = "a"\nprompt = "p"\ncheck = "true"\nsetup = "make"\n', base=tmp_path
    )
    assert tasks.setup == ("make",) and tasks.timeout_s == 600 and tasks.history is None


def test_task_file_error_through_the_cli(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\nname = "a"\n')
    done = _eval(str(tasks), "--agent-bin", "/nonexistent/claude", "--json", cwd=proj,
                 env=dict(os.environ))  # fmt: skip
    assert done.returncode == 1
    doc = json.loads(done.stdout)
    assert doc["kind"] == "InvalidInput" and "prompt is missing" in doc["error"]
    assert "cannot run the agent" not in done.stderr  # the file is checked first


def test_stream_parsing_counts_what_the_agent_printed() -> None:
    context = '<ctxmode_data kind="project_brief">é</ctxmode_data>'
    lines = [
        json.dumps({"type": "system", "subtype": "init", "session_id": "s1",
                    "mcp_servers": [{"name": "ctxmode", "status": "connected"}]}),
        json.dumps({"type": "system", "subtype": "hook_response", "output": json.dumps(
            {"hookSpecificOutput": {"additionalContext": context}})}),
        json.dumps({"type": "system", "subtype": "hook_response",
                    "output": json.dumps({"hookSpecificOutput": {"additionalContext": "other"}})}),
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Read"}]}}),
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Read"}]}}),  # same block again
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t2", "name": "Write"}]}}),
        "not json",
        json.dumps({"type": "result", "num_turns": 3, "total_cost_usd": 0.5, "usage": {
            "input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 3,
            "cache_read_input_tokens": 4}}),
    ]  # fmt: skip
    run = parse_stream(lines, AgentRun())
    assert run.session_id == "s1" and run.mcp_servers == ["ctxmode"]
    assert run.injected_bytes == len(context.encode()) and run.injections == 1
    assert run.tool_calls == 2 and run.tool_calls_before_edit == 1
    assert (run.turns, run.input_tokens, run.output_tokens) == (3, 10, 2)
    assert (run.cache_creation_tokens, run.cache_read_tokens, run.cost_usd) == (3, 4, 0.5)


def _run(task: str, run: int, arm: str, tokens: int, passed: bool = True) -> Any:
    from ctxmode.evals.runner import RunResult

    agent = AgentRun(turns=2, tool_calls=3, input_tokens=tokens, output_tokens=0, wall_s=1.0)
    agent.cache_creation_tokens = agent.cache_read_tokens = 0
    return RunResult(task, run, arm, 1, passed, None, agent)


def test_report_tells_a_difference_from_the_spread(tmp_path: Path) -> None:
    from ctxmode.evals.report import build_report
    from ctxmode.evals.runner import EvalResult
    from ctxmode.evals.tasks import Task

    tasks = [Task("big", "p", "true"), Task("noisy", "p", "true")]
    results = [
        # big: with ctxmode ~500 fewer tokens, runs of one arm within 20 of each other
        *(_run("big", i, "with", 1000 + 10 * i) for i in (1, 2, 3)),
        *(_run("big", i, "without", 1500 + 10 * i, passed=i != 2) for i in (1, 2, 3)),
        # noisy: 50 fewer, but runs of one arm 400 apart
        _run("noisy", 1, "with", 1000), _run("noisy", 2, "with", 1400),
        _run("noisy", 1, "without", 1050), _run("noisy", 2, "without", 1450),
    ]  # fmt: skip
    report = build_report(EvalResult(tasks, 3, "claude-code", "x", tmp_path, tmp_path, results))
    big, noisy = report["tasks"]
    assert big["metrics"]["tokens"] == {
        "with": 1020, "without": 1520, "diff": -500, "pairs": 3, "spread": 20,
    }  # fmt: skip
    assert "tokens (all): 500 fewer with ctxmode, larger than the spread" in big["verdict"]
    assert big["pass_rate"]["without"] == {"passed": 2, "runs": 3, "rate": 0.6667}
    assert noisy["metrics"]["tokens"]["diff"] == -50
    assert "within the spread between runs of the same arm (400)" in noisy["verdict"]
    assert "tool calls: no difference" in noisy["verdict"]
    assert report["overall"]["metrics"]["tokens"]["spread"] == 400  # the largest per task
    assert report["overall"]["metrics"]["tokens"]["pairs"] == 5


def test_copy_of_a_plain_folder_leaves_the_store_behind(tmp_path: Path) -> None:
    from ctxmode.evals.workspace import copy_project

    src = tmp_path / "plain"
    (src / ".context").mkdir(parents=True)
    (src / ".context" / "context.db").write_bytes(b"store")
    (src / "sub").mkdir()
    (src / "sub" / "a.txt").write_text("a")
    (src / "out").mkdir()
    (src / "out" / "run.jsonl").write_text("{}")
    copy = copy_project(src, tmp_path / "scratch" / "copy", exclude=(src / "out",))
    assert (copy / "sub" / "a.txt").read_text() == "a"
    assert not (copy / "out").exists()
    assert not (copy / ".context").exists()
    assert (src / ".context" / "context.db").read_bytes() == b"store"


def test_a_broken_agent_binary_exits_non_zero_with_the_reason(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    broken = tmp_path / "not-claude"
    broken.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  --version) printf "fake 1.0\\nsecond banner line\\n" ;;\n'
        "  auth) echo '{\"loggedIn\": true}' ;;\n"
        "esac\nexit 0\n"
    )
    broken.chmod(0o755)
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\nname = "a"\nprompt = "p"\ncheck = "true"\n')
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    done = _eval(str(tasks), "--agent-bin", str(broken), "--runs", "1", cwd=proj, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no run finished (2 tried)" in done.stderr
    assert "wrote no stream-json result" in done.stderr
    assert "fake 1.0" in done.stdout and "second banner line" not in done.stdout
    assert "raw runs: not kept" in done.stdout
    assert not list((tmp_path / "tmp").glob("ctxmode-eval-runs-*"))
