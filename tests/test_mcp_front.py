"""The stdio front of ``ctxmode serve``: it answers the handshake as the SDK server would,
without loading it, and hands everything else to the SDK server unchanged."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import CTXMODE, claude_substitute, run_cli
from ctxmode.mcp import listing

pytestmark = pytest.mark.timeout(120)


def _initialize(rid: Any, version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _ask(rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def serve_session(
    cwd: Path, lines: list[dict[str, Any] | str], stderr: Path | None = None
) -> dict[Any, dict[str, Any]]:
    """Replies by id of a real ``ctxmode serve`` sent ``lines``, waiting for each request
    (its stderr into the file ``stderr``)."""
    assert CTXMODE
    err = stderr.open("wb") if stderr else subprocess.DEVNULL
    proc = subprocess.Popen(
        [CTXMODE, "serve"],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=err,
    )
    replies: dict[Any, dict[str, Any]] = {}
    buf = b""
    try:
        assert proc.stdin and proc.stdout
        for line in lines:
            raw = line if isinstance(line, str) else json.dumps(line)
            proc.stdin.write(raw.encode() + b"\n")
            proc.stdin.flush()
            rid = None if isinstance(line, str) else line.get("id")
            if rid is None:
                continue
            deadline = time.monotonic() + 60
            while rid not in replies:
                assert time.monotonic() < deadline, f"no reply to {rid}"
                ready, _, _ = select.select([proc.stdout], [], [], 1)
                if ready:
                    chunk = os.read(proc.stdout.fileno(), 65536)
                    assert chunk, "server exited"
                    buf += chunk
                    while b"\n" in buf:
                        one, buf = buf.split(b"\n", 1)
                        reply = json.loads(one)
                        replies[reply.get("id")] = reply
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if stderr:
            err.close()  # type: ignore[union-attr]
    return replies


def test_the_recorded_listing_is_what_the_sdk_server_answers() -> None:
    assert listing.PATH.read_text(encoding="utf-8") == listing.render(listing.record()), (
        "listing.json is out of date: run .venv/bin/python -m ctxmode.mcp.listing --write"
    )


def test_front_and_sdk_server_give_the_same_replies(project: Path) -> None:
    """Answered by the front (handshake, lists) and by the SDK behind it (calls, errors)."""
    lines: list[dict[str, Any] | str] = [
        _initialize(1, "2025-03-26"),
        INITIALIZED,
        _ask(2, "ping"),
        _ask(3, "tools/list"),
        _ask(4, "resources/list", {"_meta": {"progressToken": 7}}),
        _ask(5, "prompts/list"),
        _ask(6, "resources/templates/list"),
        _ask(7, "tools/call", {"name": "list_tasks", "arguments": {}}),
        _ask(8, "tools/call", {"name": "write_context", "arguments": {"type": "rule"}}),
        _ask(9, "tools/list", {"cursor": "abc"}),
        _ask(10, "no/such/method"),
        _ask(11, "prompts/get", {"name": "record-decision", "arguments": {"decision": "Use X"}}),
        _ask(12, "tools/list"),
    ]
    served = serve_session(project, lines)
    sdk = listing._session(lines)
    assert set(served) == set(range(1, 13))
    for rid in served:
        assert served[rid] == sdk[rid], rid
    assert served[7]["result"]["structuredContent"]["count"] == 0
    assert served[8]["result"]["isError"] is True


def test_unknown_protocol_version_gets_the_latest_and_a_second_initialize_the_sdk(
    project: Path,
) -> None:
    lines: list[dict[str, Any] | str] = [_initialize(1, "1999-01-01"), INITIALIZED]
    lines += [_initialize(2, "2025-06-18")]
    served = serve_session(project, lines)
    sdk = listing._session(lines)
    assert served[1]["result"]["protocolVersion"] == listing.load()["latest_handshake"]
    assert served == sdk


def test_a_client_that_does_not_open_with_initialize_talks_to_the_sdk(project: Path) -> None:
    lines: list[dict[str, Any] | str] = [_ask(1, "tools/list"), "not json", _ask(2, "ping")]
    served = serve_session(project, lines)
    sdk = listing._session(lines)
    assert served == sdk


def test_a_stateless_era_probe_is_refused_and_the_handshake_follows(project: Path) -> None:
    """Claude Code sends ``server/discover`` first; "method not found" makes it initialize."""
    lines: list[dict[str, Any] | str] = [_ask(1, "server/discover"), _initialize(2, "2025-11-25")]
    lines += [INITIALIZED, _ask(3, "tools/call", {"name": "list_tasks", "arguments": {}})]
    served = serve_session(project, lines)
    assert served[1]["error"]["code"] == -32601
    sdk = listing._session(lines[1:])
    assert served[2] == sdk[2] and served[3] == sdk[3]


def test_sigterm_ends_the_server_at_once(project: Path) -> None:
    import signal

    assert CTXMODE
    proc = subprocess.Popen(
        [CTXMODE, "serve"], cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(_initialize(1, "2025-06-18")).encode() + b"\n")
        proc.stdin.flush()
        assert b"serverInfo" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_handshake_loads_neither_the_sdk_nor_pydantic(tmp_path: Path) -> None:
    """(Without the warm-up that ``ctxmode serve`` starts once ``tools/list`` is answered.)"""
    code = (
        "import io, json, sys\n"
        "from pathlib import Path\n"
        "from ctxmode.mcp.front import Front\n"
        "out = io.BytesIO()\n"
        "front = Front(Path(sys.argv[1]), None, out, warm=False)\n"
        "for line in sys.argv[2:]:\n"
        "    front.handle(line)\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', "
        "'pydantic', 'anyio', 'starlette', 'httpx'})\n"
        "print(json.dumps({'heavy': heavy, 'out': out.getvalue().decode()}))\n"
    )
    lines = [_initialize(1, "2025-06-18"), INITIALIZED, _ask(2, "tools/list")]
    lines += [_ask(3, "prompts/list"), _ask(4, "resources/list"), _ask(5, "ping")]
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "x.db"), *map(json.dumps, lines)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(proc.stdout)
    assert result["heavy"] == []
    replies = [json.loads(line) for line in result["out"].splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5]
    assert not (tmp_path / "x.db").exists()  # nor the store


# -- in-agent hooks: Claude Code's ``mcp_tool`` handlers calling ``record_hook`` ---------------


def _payloads(project: Path) -> list[tuple[str, dict[str, Any]]]:
    sid = "d2fbae2d-a320-40af-9b28-6da90ac32282"
    base = {"session_id": sid, "cwd": str(project), "permission_mode": "bypassPermissions"}
    failing = "F.\n=== FAILURES ===\nE   RefreshTokenReused: old token accepted\nFAILED t.py::x"
    return [
        (
            "user-prompt-submit",
            {
                **base,
                "hook_event_name": "UserPromptSubmit",
                "prompt": "Shorten the token lifetime to 2h, not 24h",
            },
        ),
        (
            "post-tool-use",
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Edit",
                "tool_input": {
                    "file_path": str(project / "a.py"),
                    "old_string": "X = 1\n",
                    "new_string": "X = 2\n",
                },
                "tool_response": {"filePath": str(project / "a.py"), "structuredPatch": []},
                "tool_use_id": "toolu_1",
                "duration_ms": 12,
            },
        ),
        (
            "post-tool-use",
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "git commit -m 'x'", "description": "c"},
                "tool_response": {
                    "stdout": "[main 4a511a7] x\n 1 file changed",
                    "stderr": "",
                    "interrupted": False,
                },
                "tool_use_id": "toolu_2",
                "duration_ms": 40,
            },
        ),
        (
            "post-tool-use-failure",
            {
                **base,
                "hook_event_name": "PostToolUseFailure",
                "tool_name": "Bash",
                "tool_input": {"command": "pytest -q", "description": "t"},
                "tool_use_id": "toolu_3",
                "error": "Exit code 1\n" + failing,
                "is_interrupt": False,
                "duration_ms": 1199,
            },
        ),
        (
            "stop",
            {
                **base,
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": "Done: the lifetime is 2h.",
            },
        ),
    ]


def _events(root: Path) -> str:
    """The recorded events (category, type, data) as JSON, the project folder as ``<root>``."""
    from ctxmode import Store
    from ctxmode.sessions import records

    with Store.open(root / ".context" / "context.db") as store:
        events = [(e.category, e.type, e.data) for e in records.list_events(store, limit=500)]
    return json.dumps(events, indent=1).replace(str(root), "<root>")


def test_record_hook_stores_what_the_command_hook_stores(tmp_path: Path) -> None:
    """The same payloads, through ``ctxmode hook`` and through ``record_hook`` calls."""
    from ctxmode.agents.claude import TEMPLATE

    assert CTXMODE
    by_command, in_agent = tmp_path / "cmd", tmp_path / "mcp"
    for folder in (by_command, in_agent):
        (folder / ".git").mkdir(parents=True)
    for event, payload in _payloads(by_command):
        proc = subprocess.run(
            [CTXMODE, "hook", event, "--agent", "claude-code"],
            cwd=by_command,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
    lines: list[dict[str, Any] | str] = [_initialize(1, "2025-06-18"), INITIALIZED]
    for rid, (event, payload) in enumerate(_payloads(in_agent), start=2):
        arguments = {"event": event, "agent": "claude-code", "payload": TEMPLATE}
        substituted = claude_substitute(arguments, payload)
        lines.append(_ask(rid, "tools/call", {"name": "record_hook", "arguments": substituted}))
        lines.append(
            _ask(rid + 100, "tools/call", {"name": "record_hook", "arguments": substituted})
        )
    served = serve_session(in_agent, lines)
    assert all("error" not in r and not r["result"].get("isError") for r in served.values())
    expected = _events(by_command)
    assert {"prompt", "file", "error"} <= {row[0] for row in json.loads(expected)}
    # Sent twice: the idempotency key drops the retry, as for a command hook.
    assert _events(in_agent) == expected
    # The hidden tool is not listed, and the SDK was never needed.
    assert "record_hook" not in listing.PATH.read_text(encoding="utf-8")


def test_record_hook_fails_open_on_bad_arguments(project: Path) -> None:
    lines: list[dict[str, Any] | str] = [_initialize(1, "2025-06-18"), INITIALIZED]
    lines += [_ask(2, "tools/call", {"name": "record_hook", "arguments": {"event": 3}})]
    lines += [_ask(3, "tools/call", {"name": "record_hook"})]
    served = serve_session(project, lines)
    for rid in (2, 3):
        assert served[rid]["result"] == {"content": [{"type": "text", "text": ""}]}
    assert "record_hook: bad arguments" in (project / ".context" / "hooks.log").read_text()


def test_in_agent_calls_reuse_the_store_until_its_file_is_replaced(project: Path) -> None:
    """The server keeps the store open between ``record_hook`` calls (no open, migration check
    or closing checkpoint per tool call), yet every call lands in the file at the store's
    path: written by others meanwhile, or moved aside and started anew."""
    from ctxmode import Store
    from ctxmode.agents.claude import TEMPLATE
    from ctxmode.hooks import in_agent

    def call(rid: int, command: str) -> None:
        payload = {
            "hook_event_name": "PostToolUse", "session_id": "s-reuse", "cwd": str(project),
            "tool_name": "Bash", "tool_input": {"command": command},
            "tool_response": {"stdout": "ok", "stderr": ""}, "tool_use_id": f"toolu_{rid}",
        }  # fmt: skip
        arguments = claude_substitute(
            {"event": "post-tool-use", "agent": "claude-code", "payload": TEMPLATE}, payload
        )
        assert in_agent.record(arguments, str(project)) == ""

    def commands(db: Path) -> list[str]:
        with Store.open(db) as store:
            rows = store.conn.execute("SELECT data FROM events ORDER BY id").fetchall()
        return [json.loads(r[0]).get("command", "") for r in rows]

    db = project / ".context" / "context.db"
    try:
        call(1, "ls first")
        call(2, "ls second")
        assert len(in_agent._STORES) == 1  # one open store, reused
        added = run_cli("add", "decision", "Use OAuth", cwd=project)  # another writer
        assert added.returncode == 0, added.stderr
        call(3, "ls third")
        assert commands(db) == ["ls first", "ls second", "ls third"]
        aside = project / "old.db"
        db.rename(aside)
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        call(4, "ls fourth")
        assert commands(db) == ["ls fourth"]
        assert "ls fourth" not in commands(aside)
    finally:
        in_agent.close_stores()
    assert in_agent._STORES == {}


def test_the_warm_up_opens_an_existing_store_for_hook_calls_and_creates_none(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``in_agent.prepare`` (the server's warm-up) opens the store of its working folder, which
    the first hook call then reuses; a folder without a store gets none."""
    from ctxmode.hooks import in_agent

    bare = tmp_path / "bare"
    (bare / ".git").mkdir(parents=True)
    monkeypatch.chdir(bare)
    in_agent.prepare()
    assert in_agent._STORES == {} and not (bare / ".context").exists()
    assert run_cli("init", cwd=project).returncode == 0
    monkeypatch.chdir(project)
    try:
        in_agent.prepare()
        in_agent.prepare()  # twice: still one
        [(path, (store, _))] = in_agent._STORES.items()
        assert Path(path) == project / ".context" / "context.db"
        payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s-warm",
                   "cwd": str(project), "prompt": "Fix the login test"}  # fmt: skip
        arguments = claude_substitute(
            {"event": "user-prompt-submit", "agent": "claude-code", "payload": _template()},
            payload,
        )
        in_agent.record(arguments, str(project))
        assert in_agent._STORES[path][0] is store  # the warm-up's store, reused
        rows = store.conn.execute("SELECT data FROM events").fetchall()
        assert any("Fix the login test" in r[0] for r in rows), rows
    finally:
        in_agent.close_stores()


def _template() -> Any:
    from ctxmode.agents.claude import TEMPLATE

    return TEMPLATE


def test_a_line_nested_too_deep_to_parse_does_not_end_the_server(project: Path) -> None:
    lines: list[dict[str, Any] | str] = [_initialize(1, "2025-06-18"), INITIALIZED]
    lines += ["[" * 100_000, _ask(2, "ping")]
    served = serve_session(project, lines)
    assert served[2]["result"] == {}
