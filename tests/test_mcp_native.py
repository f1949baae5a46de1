"""``ctxmode serve`` against the SDK's server built from the same registry (``mcp.sdk``).

The same session, request by request, goes to a real ``ctxmode serve`` (the front, no SDK) and
to the SDK's low-level server over the SDK's own stdio codec, each on a fresh project with the
same files: every result must be the same, every error carry the same code (the front's
messages may say more), and both stores end up with the same rows. Then the argument checks
(``mcp.calls``) against ``jsonschema`` on the listed schemas, and the SDK's client against
``ctxmode serve``, validating every structured result against the listed output schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxmode import Store
from ctxmode.mcp import calls, registry
from test_mcp_front import INITIALIZED, _initialize, sdk_session, serve_session

pytestmark = pytest.mark.timeout(180)


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

#: Well-formed calls. Order matters (ids, tasks, links).
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

#: Arguments to forgive or refuse, unknown names, bad params.
CHECKED: list[dict[str, Any]] = [
    _call("create_task", {"name": "Parent"}),
    _call("update_task", {"task_id": "1", "status": "blocked"}),  # "1": forgiven
    _call("update_task", {"task_id": 1.0, "status": "completed"}),  # 1.0: forgiven
    _call("update_task", {"task_id": True, "status": "completed"}),  # true is not 1
    _call("update_task", {"task_id": 1, "status": "done"}),  # not in the enum
    _call("update_task", {"task_id": 2**70, "status": "done"}),  # over 64 bits
    _call("write_context", {"type": "rule", "content": "x"}),
    _call("write_context", {"content": "no type"}),
    _call("session_events", {"limit": 0}),
    _call("session_events", {"limit": None}),  # null: the default
    _call("batch_execute", {"commands": [], "queries": []}),
    _call("search", {"queries": "retry"}),  # a string, not a JSON list
    _call("list_tasks", []),  # arguments not an object
    _call("no_such_tool", {}),
    _call("list_tasks", {}, task={"ttl": 1}),  # a parameter of tools/call the front ignores
    {"method": "resources/read", "params": {"uri": "ctxmode://nope"}},
    {"method": "prompts/get", "params": {"name": "record-decision", "arguments": {"x": "1"}}},
    {"method": "prompts/get", "params": {"name": "record-decision", "arguments": {"x": 1}}},
    {"method": "prompts/get", "params": {"name": "nope"}},
    {"method": "no/such/method"},
    _call("list_tasks", {}),
]


#: One valid call of each tool (the others take no arguments).
SAMPLE: dict[str, dict[str, Any]] = {
    "write_context": {"type": "decision", "content": DECISION, "file_paths": ["auth.py"]},
    "create_task": {"name": "Ship it"},
    "update_task": {"task_id": 1, "status": "in_progress"},
    "link_files": {"context_id": 1, "file_paths": ["docs/retry.md"]},
    "search": {"queries": ["WAL", "retries"]},
    "get": {"ids": ["ctx:1"]},
    "index": {"path": "docs"},
    "fetch_and_index": {"url": "http://127.0.0.1:9/nothing-here"},
    "execute": {"language": "shell", "code": "echo hi"},
    "execute_file": {"path": "auth.py", "language": "shell", "code": "wc -l"},
    "batch_execute": {"commands": ["echo one"], "queries": ["one"]},
}


def _session(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [_initialize(0, "2025-06-18"), INITIALIZED]
    return lines + [{"jsonrpc": "2.0", "id": i + 1, **r} for i, r in enumerate(requests)]


def _compare(tmp_path: Path, requests: list[dict[str, Any]]) -> dict[Any, Any]:
    lines = _session(requests)
    front_root, sdk_root = _project(tmp_path, "front"), _project(tmp_path, "sdk")
    served = serve_session(front_root, list(lines))
    sdk = sdk_session(sdk_root, list(lines))
    for msg in lines[2:]:
        mine, theirs = served[msg["id"]], sdk[msg["id"]]
        if "error" in theirs:
            assert mine["error"]["code"] == theirs["error"]["code"], (msg, mine, theirs)
        else:
            assert mine == theirs, (msg, mine, theirs)
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
    return served


def test_well_formed_calls_get_the_sdk_servers_replies(tmp_path: Path) -> None:
    served = _compare(tmp_path, NATIVE)
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


def test_argument_errors_say_what_to_send(tmp_path: Path) -> None:
    served = _compare(tmp_path, CHECKED)

    def text(rid: int) -> str:
        reply = served[rid]
        return str(reply["result"]["content"][0]["text"] if "result" in reply else reply["error"])

    assert served[2]["result"]["structuredContent"]["status"] == "blocked"
    assert served[3]["result"]["structuredContent"]["status"] == "completed"
    assert text(4) == (
        "invalid arguments for update_task: task_id: expected integer (got True). "
        "Send: task_id (integer), status (one of: pending, in_progress, blocked, completed, "
        "cancelled)"
    )
    assert "status: expected one of: pending, in_progress" in text(5) and "(got 'done')" in text(5)
    assert "task_id: expected integer of at most 64 bits" in text(6)
    assert "type: expected one of: constraint, decision" in text(7)
    assert "type is required" in text(8) and "content (string)" in text(8)
    assert "limit: expected integer 1-500 (got 0)" in text(9)
    assert served[10]["result"]["isError"] is False
    assert "commands: expected list of string, 1-20 item(s) (got [])" in text(11)
    assert "queries: expected list of string (got 'retry')" in text(12)
    assert served[13]["error"]["code"] == -32602
    assert "Unknown tool: no_such_tool. Tools: write_context, " in text(14)
    assert served[15]["result"]["isError"] is False
    assert served[16]["error"]["code"] == -32602 and "ctxmode://tasks" in text(16)
    assert "unknown argument(s) x. Send any of: decision, background" in text(17)
    assert served[18]["error"]["code"] == -32602
    assert served[19]["error"]["code"] == -32602 and "Prompts: record-decision" in text(19)
    assert served[20]["error"] == {
        "code": -32601,
        "message": "Method not found",
        "data": "no/such/method",
    }
    assert served[len(CHECKED)]["result"]["isError"] is False


#: Values tried for every parameter of every tool (beside valid values of the others).
POOL: list[Any] = [
    None, True, False, 0, 1, -1, 7, 2**63, 1.5, 5.0, float("inf"), "", "x", "5", "5.5", " 7 ",
    "nan", "decision", "related", "[]", '["a"]', "{}", '{"a": 1}', "[1]", [], ["a"], ["a"] * 21,
    [1], [None], {}, {"a": 1}, "\udc80",
]  # fmt: skip


def _sample(schema: dict[str, Any]) -> Any:
    """A valid value of ``schema``."""
    if "anyOf" in schema:
        return _sample(schema["anyOf"][0])
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema["type"]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "array":
        return [_sample(schema["items"])] * max(1, schema.get("minItems", 1))
    return {"string": "x", "boolean": True, "object": {}}[kind]


def _forgiven(sent: Any, took: Any, param: registry.Param) -> bool:
    """Whether ``calls`` taking ``sent`` (which the schema refuses) as ``took`` is one of the
    forgivenesses ``mcp.calls`` states."""
    if sent is None:
        return not param.required and took == param.default
    if isinstance(sent, str):
        if isinstance(took, int | float) and not isinstance(took, bool):
            return float(sent) == took
        return isinstance(took, list | dict) and json.loads(sent) == took
    return False


def test_arguments_are_checked_as_the_listed_schema_says() -> None:
    """``calls.arguments`` takes what ``jsonschema`` finds valid under the listed input schema
    and refuses the rest, but for what it states it forgives (a number or a JSON text in a
    string, ``null`` for a default) and refuses beyond it (integers over 64 bits, lone
    surrogates replaced); whatever it takes fits the schema once taken."""
    import jsonschema

    tried = refused = forgiven = 0
    for tool in registry.TOOLS:
        schema = tool.input_schema()
        validator = jsonschema.Draft202012Validator(schema)
        valid = {p.name: _sample(p.schema) for p in tool.params if p.required}
        assert validator.is_valid(valid), tool.name
        for param in tool.params:
            for sent in POOL:
                given = {**valid, param.name: sent}
                tried += 1
                try:
                    took = calls.arguments(tool, given)
                except calls.ArgumentError as exc:
                    refused += 1
                    assert param.name in str(exc) and "Send: " in str(exc)
                    if validator.is_valid(given):  # refused beyond the schema: stated ones
                        assert isinstance(sent, int) and abs(sent) >= 2**63, (tool.name, given)
                    continue
                assert list(took) == [p.name for p in tool.params]
                taken = {k: v for k, v in took.items() if k in given}
                assert validator.is_valid(taken), (tool.name, given, took)
                if not validator.is_valid(given):
                    forgiven += 1
                    assert _forgiven(sent, took[param.name], param), (tool.name, given, took)
    assert tried > 1500 and refused > 800 and forgiven > 40, (tried, refused, forgiven)
    update_task = registry.TOOL["update_task"]
    for given in ([], "x", 3):
        with pytest.raises(calls.ArgumentError, match="arguments must be an object"):
            calls.arguments(update_task, given)
    took = calls.arguments(registry.TOOL["create_task"], {"name": "a\udc80b"})
    assert took == {"name": "a\ufffdb", "parent_id": None}


def test_tool_calls_load_neither_the_sdk_nor_pydantic(tmp_path: Path) -> None:
    """The front in-process: the handshake, one call of every tool, every resource read and
    the prompt. (``fetch_and_index`` loads ``httpx``, its HTTP client, only when it runs.)"""
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
        "'pydantic', 'pydantic_core', 'starlette'})\n"
        "print(json.dumps({'heavy': heavy, 'out': out.getvalue().decode()}))\n"
    )
    requests = [_call(t.name, SAMPLE.get(t.name, {})) for t in registry.TOOLS]
    requests += [{"method": "resources/read", "params": {"uri": r.uri}} for r in registry.RESOURCES]
    requests += [{"method": "prompts/get", "params": {"name": "record-decision"}}]
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
    assert "Use SQLite WAL" in replies[2]["result"]["content"][0]["text"]
    failed = [rid for rid, r in replies.items() if "error" in r or r["result"].get("isError")]
    assert failed == [1 + [t.name for t in registry.TOOLS].index("fetch_and_index")], failed
    assert len(replies) == 1 + len(requests)
    assert result["heavy"] == [], result["heavy"]


def test_the_sdk_client_takes_every_reply_of_ctxmode_serve(tmp_path: Path) -> None:
    """The SDK's client over stdio: the handshake, the lists, a call of every tool (each
    ``structuredContent`` validated by the client against the listed output schema), the
    resources and the prompt."""
    import anyio
    from mcp import Client, StdioServerParameters

    from conftest import CTXMODE

    root = _project(tmp_path, "client")
    assert CTXMODE

    async def run() -> None:
        params = StdioServerParameters(command=CTXMODE, args=["serve"], cwd=str(root))
        async with Client(params) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == [t.name for t in registry.TOOLS]
            for tool in registry.TOOLS:
                result = await client.call_tool(tool.name, SAMPLE.get(tool.name, {}))
                ok = tool.name != "fetch_and_index"  # nothing listens there: a clear error
                assert result.is_error is not ok, (tool.name, result)
                if ok:
                    assert set(result.structured_content or {}) == set(tool.output), tool.name
            for resource in registry.RESOURCES:
                read = await client.read_resource(resource.uri)
                assert read.contents[0].uri == resource.uri
            prompt = await client.get_prompt("record-decision", {"choice": "B"})
            assert "- choice: B" in str(prompt.messages[0].content)

    anyio.run(run)


def test_every_tool_has_a_body_taking_its_arguments() -> None:
    """What ``calls`` hands a body (every parameter of the row, defaults filled in) is what
    the body's keyword parameters are, for every tool; resources and prompts have bodies."""
    import inspect

    assert len(registry.TOOL) == len(registry.TOOLS)
    for tool in registry.TOOLS:
        params = inspect.signature(calls.body(tool.body)).parameters
        keywords = [p for p, spec in params.items() if spec.kind is spec.KEYWORD_ONLY]
        assert keywords == [p.name for p in tool.params], tool.name
    for resource in registry.RESOURCES:
        assert len(inspect.signature(calls.body(resource.body)).parameters) == 1
    for prompt in registry.PROMPTS:
        assert calls.body(prompt.body)({}).startswith("Record a project decision")


def test_the_registry_holds_the_limits_of_the_code_that_enforces_them() -> None:
    """Enums are ``core.models``' own; bounds come from ``core.config``, as the code's do."""
    from ctxmode.core import models

    write = {p.name: p.schema for p in registry.TOOL["write_context"].params}
    assert write["type"]["enum"] == list(models.CONTEXT_TYPES)
    assert write["relation"]["enum"] == list(models.RELATIONS)
    statuses = registry.TOOL["update_task"].params[1].schema["enum"]
    assert statuses == list(models.TASK_STATUSES)
    assert registry.PROMPT["record-decision"].arguments == models.DECISION_FIELDS
