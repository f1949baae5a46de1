"""Tool calls the stdio front runs without the SDK (``mcp.native``) get the SDK server's reply.

The same session, request by request, goes to a real ``ctxmode serve`` (the front) and to the
SDK server (``build_server`` over the SDK's own stdio transport), each on a fresh project with
the same files; every reply must be the same. Well-formed calls never start the SDK server in
``ctxmode serve`` (it says on stderr when it does); the others are its own replies.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxmode import Store
from ctxmode.mcp import native
from ctxmode.mcp.sdk.bridge import serve_lines
from ctxmode.mcp.sdk.server import build_server
from test_mcp_front import INITIALIZED, _initialize, serve_session

pytestmark = pytest.mark.timeout(180)

SDK_STARTS = "starting the SDK server"


class SDKSession:
    """The SDK server on its own, fed one request at a time (each waits for its reply)."""

    def __init__(self, root: Path) -> None:
        self._feed: queue.Queue[str | None] = queue.Queue()
        self._replies: dict[Any, dict[str, Any]] = {}
        self._got = threading.Condition()
        server = build_server(root / ".context" / "context.db", root)
        self._thread = threading.Thread(
            target=lambda: anyio.run(serve_lines, server, self._feed, self._write), daemon=True
        )
        self._thread.start()

    def _write(self, line: str) -> None:
        reply = json.loads(line)
        with self._got:
            self._replies[reply.get("id")] = reply
            self._got.notify_all()

    def session(self, lines: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
        for msg in lines:
            self._feed.put(json.dumps(msg))
            rid = msg.get("id")
            if rid is not None:
                with self._got:
                    assert self._got.wait_for(lambda rid=rid: rid in self._replies, 60), msg
        self._feed.put(None)
        self._thread.join(30)
        return self._replies


def _project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs" / "retry.md").write_text(
        "# Retries\n\nThe worker retries a failed upload three times, then gives up.\n",
        encoding="utf-8",
    )
    (root / "auth.py").write_text("TOKEN_TTL = 3600\n", encoding="utf-8")
    return root


def _call(name: str, arguments: Any = None, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return {"method": "tools/call", "params": params}


DECISION = "Use SQLite WAL for the store\nRationale: readers never block the writer"

#: Well-formed calls: the front runs each itself. Order matters (ids, tasks, links).
NATIVE: list[dict[str, Any]] = [
    _call("list_tasks", {}),
    _call("session_snapshot"),
    _call("session_events", {}),
    _call("query_context", {}),
    _call(
        "write_context",
        {"type": "decision", "content": DECISION, "file_paths": ["auth.py"], "metadata": {"a": 1}},
    ),
    _call("write_context", {"type": "decision", "content": DECISION}),  # deduplicated
    _call("write_context", {"type": "constraint", "content": "No network in tests", "x": 1}),
    _call("write_context", {"type": "decision", "content": "Use Postgres", "supersedes": 1}),
    _call("write_context", {"type": "snippet", "content": "key sk-ant-api03-" + "x" * 40}),
    _call("write_context", {"type": "decision", "content": "x", "task_id": 99}),  # core error
    _call("query_context", {"file_path": "auth.py", "mode": "broad", "budget_tokens": 50}),
    _call("query_context", {"context_type": "decision", "limit": 1}),
    _call("create_task", {"name": "Ship the retry fix"}),
    _call("create_task", {"name": "Write the test", "parent_id": 1}),
    _call("update_task", {"task_id": 2, "status": "in_progress"}),
    _call("update_task", {"task_id": 42, "status": "blocked"}),  # core error
    _call("list_tasks", {"status": "in_progress"}),
    _call("list_tasks", {}),
    _call("link_files", {"context_id": 1, "file_paths": '["docs/retry.md"]'}),  # a JSON text
    _call("link_files", {"context_id": 1, "file_paths": ["auth.py"], "relation": "defines"}),
    _call("link_files", {"context_id": 1000, "file_paths": ["auth.py"]}),  # core error
    _call("index", {"path": "docs"}),
    _call("index", {"content": "The ledger backup runs nightly at 02:00.", "source": "ops"}),
    _call("index", {}),  # neither content nor path: the body's error
    _call("search", {"queries": ["retries upload", "ledger backup"], "limit": 3}),
    _call("search", {"queries": ["retry"], "source": "ops", "since": 0, "until": None}),
    _call("search", {"queries": []}),  # the body's error
    _call("get", {"ids": ["ctx:1", "ctx:999"], "budget_chars": 500}),
    _call("execute", {"language": "shell", "code": "echo hello; exit 3", "timeout": 20}),
    _call("execute", {"language": "python", "code": "print(sum(range(10)))", "timeout": 5.5}),
    _call("execute", {"language": "cobol-9000", "code": "x"}),  # core error
    _call("execute_file", {"path": "auth.py", "language": "shell", "code": "wc -l"}),
    _call("batch_execute", {"commands": ["echo one", "echo two"], "queries": ["two"]}),
    _call("stats", None),
    _call("session_events", {"category": "nope"}),
    {"method": "resources/read", "params": {"uri": "ctxmode://tasks"}},
    {"method": "resources/read", "params": {"uri": "ctxmode://snapshot"}},
    {"method": "prompts/get", "params": {"name": "record-decision"}},
    {"method": "prompts/get", "params": {"name": "record-decision", "arguments": {"choice": "B"}}},
]

#: What the SDK must decide (coercion, argument errors, unknown names): forwarded to it.
FORWARDED: list[dict[str, Any]] = [
    _call("create_task", {"name": "Parent"}),
    _call("update_task", {"task_id": "1", "status": "blocked"}),  # "1": pydantic coerces
    _call("update_task", {"task_id": 1.0, "status": "completed"}),
    _call("update_task", {"task_id": True, "status": "completed"}),
    _call("update_task", {"task_id": 1, "status": "done"}),  # not in the enum
    _call("write_context", {"type": "rule", "content": "x"}),
    _call("write_context", {"content": "no type"}),
    _call("session_events", {"limit": 0}),
    _call("batch_execute", {"commands": [], "queries": []}),
    _call("search", {"queries": "retry"}),  # a string, not a JSON list
    _call("list_tasks", []),  # arguments not an object
    _call("no_such_tool", {}),
    _call("list_tasks", {}, task={"ttl": 1}),  # a parameter the front does not know
    {"method": "resources/read", "params": {"uri": "ctxmode://nope"}},
    {"method": "prompts/get", "params": {"name": "record-decision", "arguments": {"x": "1"}}},
    {"method": "prompts/get", "params": {"name": "nope"}},
    _call("list_tasks", {}),  # well-formed again: the front runs it once more
]


def _session(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [_initialize(0, "2025-06-18"), INITIALIZED]
    return lines + [{"jsonrpc": "2.0", "id": i + 1, **r} for i, r in enumerate(requests)]


def _compare(tmp_path: Path, requests: list[dict[str, Any]]) -> tuple[dict[Any, Any], str]:
    lines = _session(requests)
    front_root, sdk_root = _project(tmp_path, "front"), _project(tmp_path, "sdk")
    err = tmp_path / "serve.err"
    served = serve_session(front_root, list(lines), stderr=err)
    sdk = SDKSession(sdk_root).session(lines)
    for msg in lines[2:]:
        assert served[msg["id"]] == sdk[msg["id"]], (msg, served[msg["id"]], sdk[msg["id"]])
    with (
        Store.open(front_root / ".context" / "context.db") as a,
        Store.open(sdk_root / ".context" / "context.db") as b,
    ):
        for table in ("contexts", "tasks", "context_file_map", "sources"):
            query = f"SELECT * FROM {table} ORDER BY 1, 2"
            strip = {"created_at", "updated_at", "last_accessed_at", "mtime", "indexed_at"}
            rows_a = [{k: v for k, v in dict(r).items() if k not in strip} for r in a.query(query)]
            rows_b = [{k: v for k, v in dict(r).items() if k not in strip} for r in b.query(query)]
            assert rows_a == rows_b, table
    return served, err.read_text(encoding="utf-8")


def test_well_formed_calls_get_the_sdk_servers_replies_without_it(tmp_path: Path) -> None:
    served, err = _compare(tmp_path, NATIVE)
    assert SDK_STARTS not in err, err
    results = [served[i + 1].get("result", {}) for i in range(len(NATIVE))]
    errors = [i for i, r in enumerate(results) if r.get("isError")]
    # Each error case above is an error, the rest are not (the list is what it claims).
    assert [NATIVE[i]["params"].get("arguments") for i in errors] == [
        {"type": "decision", "content": "x", "task_id": 99},
        {"task_id": 42, "status": "blocked"},
        {"context_id": 1000, "file_paths": ["auth.py"]},
        {},
        {"queries": []},
        {"ids": ["ctx:1", "ctx:999"], "budget_chars": 500},
        {"language": "cobol-9000", "code": "x"},
        {"category": "nope"},
    ]
    assert "Error executing tool index: give exactly one of content or path" in str(results)

    def result_of(arguments: dict[str, Any]) -> dict[str, Any]:
        return results[[r["params"].get("arguments") for r in NATIVE].index(arguments)]

    assert result_of({"type": "decision", "content": DECISION})["structuredContent"]["deduplicated"]
    assert "sk-ant-api03" not in json.dumps(served)
    linked = result_of({"context_id": 1, "file_paths": '["docs/retry.md"]'})
    assert linked["structuredContent"]["files"] == ["auth.py", "docs/retry.md"]
    shell = result_of({"language": "shell", "code": "echo hello; exit 3", "timeout": 20})
    assert "exit code 3" in shell["content"][0]["text"]


def test_what_the_sdk_must_decide_is_its_own_reply(tmp_path: Path) -> None:
    served, err = _compare(tmp_path, FORWARDED)
    assert err.count(SDK_STARTS) == 1 and "for tools/call" in err, err
    assert served[2]["result"]["structuredContent"]["status"] == "blocked"  # "1" coerced
    assert "invalid arguments for update_task" in served[5]["result"]["content"][0]["text"]
    assert served[len(FORWARDED)]["result"]["isError"] is False


def test_arguments_are_taken_only_as_the_sdk_would_take_them() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "xs": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "t": {"type": "number", "exclusiveMinimum": 0},
            "s": {"type": "string"},
            "d": {"default": "x", "enum": ["x", "y"], "type": "string"},
        },
        "required": ["xs"],
    }
    assert native.arguments(schema, {"xs": ["a"]}) == {
        "n": None,
        "xs": ["a"],
        "t": None,
        "s": None,
        "d": "x",
    }
    took = native.arguments(schema, {"xs": '["a", "b"]', "t": 2, "s": "[1]", "n": "null"})
    assert took is not None
    assert took["xs"] == ["a", "b"] and took["s"] == "[1]" and took["n"] is None
    assert type(took["t"]) is float
    for given in (
        {},  # xs is required
        {"xs": ["a", "b", "c"]},
        {"xs": [1]},
        {"xs": ["a"], "n": 0},
        {"xs": ["a"], "n": True},
        {"xs": ["a"], "n": "5"},
        {"xs": ["a"], "t": 0},
        {"xs": ["a"], "d": "z"},
        {"xs": ["a"], "s": 5},
        ["xs"],
    ):
        assert native.arguments(schema, given) is None, given
    assert native.arguments({**schema, "properties": {"s": {"minLength": 1}}}, {"s": "a"}) is None


def test_native_calls_load_neither_the_sdk_nor_pydantic(tmp_path: Path) -> None:
    """The front in-process: handshake, a write, a query, a search and a resource read."""
    code = (
        "import io, json, sys, time\n"
        "from pathlib import Path\n"
        "from ctxmode.mcp.front import Front\n"
        "out = io.BytesIO()\n"
        "front = Front(Path(sys.argv[1]), Path(sys.argv[2]), out, warm=False)\n"
        "for line in sys.argv[3:]:\n"
        "    front.handle(line)\n"
        "    rid = json.loads(line).get('id')\n"
        "    while rid is not None and f'\"id\":{rid},'.encode() not in out.getvalue():\n"
        "        time.sleep(0.01)\n"
        "front.close()\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', "
        "'pydantic', 'pydantic_core', 'anyio', 'starlette', 'httpx'})\n"
        "print(json.dumps({'heavy': heavy, 'out': out.getvalue().decode()}))\n"
    )
    requests = [
        _call("write_context", {"type": "decision", "content": DECISION}),
        _call("query_context", {}),
        _call("search", {"queries": ["WAL"]}),
        {"method": "resources/read", "params": {"uri": "ctxmode://tasks"}},
    ]
    root = _project(tmp_path, "p")
    lines = [json.dumps(m) for m in _session(requests)]
    proc = subprocess.run(
        [sys.executable, "-c", code, str(root / ".context" / "context.db"), str(root), *lines],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    replies = {r["id"]: r for r in map(json.loads, result["out"].splitlines())}
    assert replies[1]["result"]["structuredContent"]["id"] == 1
    assert "Use SQLite WAL" in replies[3]["result"]["content"][0]["text"]
    assert result["heavy"] == [], result["heavy"]
    assert SDK_STARTS not in proc.stderr


def test_every_listed_tool_has_a_body_taking_its_arguments() -> None:
    """What ``native`` hands a body (every property of the listed schema, defaults filled in)
    is what the body's keyword parameters are, for every tool the server lists."""
    import inspect

    from ctxmode.mcp import listing, tools

    listed = {t["name"]: t for t in listing.load()["results"]["tools/list"]["tools"]}
    assert set(listed) == set(tools.TOOLS)
    for name, tool in listed.items():
        params = inspect.signature(tools.body(tools.TOOLS[name])).parameters
        keywords = [p for p, spec in params.items() if spec.kind is spec.KEYWORD_ONLY]
        assert keywords == list(tool["inputSchema"].get("properties", {})), name
