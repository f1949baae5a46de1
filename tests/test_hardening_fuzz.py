"""Bad input, property-based: the hook entry point, the MCP tools and the CLI never crash.

- Hook: payloads built from every agent's real fixture shapes, then mutated (fields dropped,
  wrong types, huge strings, deep nesting, random JSON, random bytes, invalid UTF-8, 10 MB
  stdin). Contract: exit 0; stdout empty or exactly one JSON object; the store stays
  consistent. Most examples call ``ctxmode.hooks.runner.main`` in-process (same code, no
  interpreter start); a smaller set runs the real process.
- MCP: random and schema-violating arguments for every tool: always a tool result (``isError``
  when the arguments are bad), never a protocol error, and the server keeps answering.
- CLI: random arguments for the store commands: exit 0 or 1, ``Error: ...``, never a traceback.

Payload paths (``cwd`` and friends) are kept inside the test's folder: a hook creates the store
of whatever project the payload names, and the fuzzer must not scatter stores over the disk.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from _hardening import (
    assert_hook_contract,
    db_rows,
    fts_integrity,
    hook_inprocess,
    hook_process,
    integrity,
)
from _hooks import FIXTURES, _rewrite, event_name
from ctxmode.mcp.sdk.server import build_server

PATH_KEYS = ("cwd", "directory", "worktree", "workspace_roots", "workspaceRoots")

#: (agent, event argument, payload) for every captured fixture.
SHAPES: list[tuple[str, str, dict[str, Any]]] = []
for _agent_dir in sorted(FIXTURES.iterdir()):
    for _file in sorted(_agent_dir.glob("*.json")):
        _payload = json.loads(_file.read_text(encoding="utf-8"))
        SHAPES.append((_agent_dir.name, event_name(_payload), _payload))
HOOK_EVENTS = sorted({e for _, e, _ in SHAPES} | {"post-tool-use", "pre-compact", "bogus-event"})

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from(["</session_knowledge>", "]]>", "\x00\x1b[31m", "\udc80", "🙂" * 5])
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=25,
)


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


special_value = st.one_of(
    json_value,
    st.integers(min_value=1, max_value=300_000).map(lambda n: "x" * n),
    st.integers(min_value=10, max_value=950).map(_nested),
)


@st.composite
def mutated_payload(draw: st.DrawFn, project: Path) -> tuple[str, str, Any]:
    agent, event, base = draw(st.sampled_from(SHAPES))
    payload: Any = _rewrite(json.loads(json.dumps(base)), project)
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        keys = list(payload)
        op = draw(st.sampled_from(["drop", "set", "set_input", "add"]))
        if op == "drop" and keys:
            payload.pop(draw(st.sampled_from(keys)))
        elif op == "set" and keys:
            payload[draw(st.sampled_from(keys))] = draw(special_value)
        elif op == "set_input":
            inner = payload.get("tool_input")
            if isinstance(inner, dict) and inner:
                inner[draw(st.sampled_from(list(inner)))] = draw(special_value)
            else:
                payload["tool_input"] = draw(special_value)
        else:
            payload[draw(st.text(max_size=20))] = draw(special_value)
    if draw(st.integers(0, 7)) == 0:
        payload = draw(json_value)  # not an object at all
    event = draw(st.sampled_from([event, event, *HOOK_EVENTS]))
    agent = draw(st.sampled_from([agent, agent, "claude-code", "codex", "nonsense"]))
    return agent, event, payload


def _confine(payload: Any, project: Path, tmp: Path) -> Any:
    """Keep path fields inside ``tmp`` so no store is created elsewhere on the disk."""
    if not isinstance(payload, dict):
        return payload
    for key in PATH_KEYS:
        if key not in payload:
            continue
        value = payload[key]
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, str) and v and not v.startswith(str(tmp)):
                payload[key] = str(project)
                break
    return payload


def _encode(payload: Any, mode: str) -> bytes:
    text = json.dumps(payload)
    if mode == "utf8":
        return json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if mode == "invalid-utf8":
        return text.replace('"', '"\xff\xfe', 1).encode("latin-1", "replace")
    if mode == "truncated":
        return text[: len(text) // 2].encode()
    return text.encode()


encodings = st.sampled_from(["ascii"] * 5 + ["utf8"] * 2 + ["invalid-utf8", "truncated"])


def _check_store(project: Path) -> None:
    db = project / ".context" / "context.db"
    if db.exists():
        assert integrity(db) == "ok"
        fts_integrity(db)


@pytest.fixture(scope="module")
def fuzz_project() -> Any:
    with tempfile.TemporaryDirectory(prefix="ctxmode-fuzz-") as tmp:
        project = Path(tmp) / "proj"
        (project / ".git").mkdir(parents=True)
        (project / "sub").mkdir()
        yield project


@pytest.mark.slow
@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_hook_runner_in_process_survives_anything(fuzz_project: Path, data: st.DataObject) -> None:
    project, tmp = fuzz_project, fuzz_project.parent
    agent, event, payload = data.draw(mutated_payload(project))
    raw = _encode(_confine(payload, project, tmp), data.draw(encodings))
    if data.draw(st.integers(0, 9)) == 0:
        raw = data.draw(st.binary(max_size=300))
    code, out, err = hook_inprocess(event, raw, cwd=project, agent=agent)
    assert_hook_contract(code, out)
    assert "Traceback" not in err


@pytest.mark.slow  # reads what the (slow) in-process fuzzer above wrote
def test_store_is_consistent_after_the_in_process_fuzz(fuzz_project: Path) -> None:
    _check_store(fuzz_project)
    # The fuzzer must get past parsing often enough to exercise recording.
    events = db_rows(fuzz_project / ".context" / "context.db", "SELECT count(*) FROM events")
    assert events[0][0] >= 20, events
    log = fuzz_project / ".context" / "hooks.log"
    if log.exists():
        text = log.read_text(encoding="utf-8")
        # Bad input is a WARN with a reason, not an internal error of the hook.
        errors = [line for line in text.splitlines() if " ERROR " in line]
        assert not errors, errors[:5]


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_hook_process_survives_anything(fuzz_project: Path, data: st.DataObject) -> None:
    project, tmp = fuzz_project, fuzz_project.parent
    agent, event, payload = data.draw(mutated_payload(project))
    raw = _encode(_confine(payload, project, tmp), data.draw(encodings))
    proc = hook_process(event, raw, cwd=project / "sub", agent=agent)
    assert_hook_contract(proc.returncode, proc.stdout)
    assert b"Traceback" not in proc.stderr
    _check_store(project)


@pytest.mark.parametrize("size", [10 * 1024 * 1024 - 64, 10 * 1024 * 1024 + 1])
def test_ten_megabyte_stdin(project: Path, size: int) -> None:
    head = json.dumps(
        {
            "session_id": "big",
            "cwd": str(project),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "cat huge.log"},
            "tool_response": {"stdout": ""},
        }
    )
    raw = head[:-3].encode() + b'"' + b"y" * (size - len(head) - 1) + b'"}}'
    assert abs(len(raw) - size) < 8
    proc = hook_process("post-tool-use", raw, cwd=project)
    assert_hook_contract(proc.returncode, proc.stdout)
    _check_store(project)


# -- MCP -------------------------------------------------------------------------------------

#: Tools that run code or reach the network: fuzzed for argument types only, never executed.
SIDE_EFFECT_TOOLS = {"execute", "execute_file", "batch_execute", "fetch_and_index"}


def _wrong_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value that violates a property schema (wrong JSON type)."""
    kind = schema.get("type")
    choices: list[Any] = [None, True, 3.5, "text", [1, 2], {"a": 1}, -1, 10**12]
    if kind == "string":
        choices = [None, 7, [1], {"a": 1}]
    elif kind in ("integer", "number"):
        choices = ["seven", None, [1], {"a": 1}, 1.5, True]
    elif kind == "array":
        choices = ["not-a-list", 5, {"a": 1}, [[["deep"]]], [None, {"x": []}]]
    elif kind == "boolean":
        choices = ["yes", 2, None, []]
    return st.sampled_from(choices)


@st.composite
def tool_call(draw: st.DrawFn, tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(tools)))
    props: dict[str, Any] = tools[name].get("properties", {})
    args: dict[str, Any] = {}
    for prop, schema in props.items():
        if draw(st.booleans()):
            args[prop] = draw(
                _wrong_for(schema) | json_value | st.just("y" * 200_000) | st.just(-(2**63))
            )
    if draw(st.booleans()):
        args[draw(st.text(min_size=1, max_size=10))] = draw(json_value)
    if name in SIDE_EFFECT_TOOLS:
        # Guarantee a type error so validation refuses before anything runs.
        required = tools[name].get("required") or list(props)
        if required:
            target = required[0]
            args[target] = draw(_wrong_for(props.get(target, {})).filter(lambda v: v is not None))
            if props.get(target, {}).get("type") is None:
                args[target] = {"not": "valid"}
    return name, args


@pytest.mark.anyio
async def test_mcp_tools_survive_random_arguments(project: Path) -> None:
    db = project / ".context" / "context.db"
    async with Client(build_server(db, project), mode="legacy") as client:
        listed = (await client.list_tools()).tools
        tools = {t.name: dict(t.input_schema) for t in listed}
        calls = st.lists(tool_call(tools), min_size=1, max_size=1)
        problems: list[str] = []
        errors = 0
        seen: set[str] = set()

        @settings(max_examples=300, deadline=None, database=None)
        @given(batch=calls)
        def draw_calls(batch: list[tuple[str, dict[str, Any]]]) -> None:
            collected.extend(batch)

        collected: list[tuple[str, dict[str, Any]]] = []
        draw_calls()
        for name, args in collected:
            seen.add(name)
            try:
                result = await client.call_tool(name, args)
            except Exception as exc:  # noqa: BLE001 - a protocol-level failure is the bug
                problems.append(f"{name}({list(args)}): {type(exc).__name__}: {exc}")
                continue
            text = result.content[0].text if result.content else ""
            if result.is_error:
                errors += 1
                bare = re.fullmatch(r"(Error executing tool \w+:?)?", text.strip())
                if bare or "Traceback" in text:
                    problems.append(f"{name}({args!r:.300}): unhelpful error {text[:200]!r}")
            elif name in SIDE_EFFECT_TOOLS:
                problems.append(f"{name} ran with bad arguments {args!r:.200}")
        assert not problems, problems[:10]
        assert errors > len(collected) // 2
        assert seen >= set(tools) - {"get"} or len(seen) >= len(tools) - 2
        assert (await client.list_tools()).tools  # still answering
    _check_store(project)


# -- CLI -------------------------------------------------------------------------------------

cli_word = st.one_of(
    st.text(max_size=30).filter(lambda s: "\x00" not in s),
    st.sampled_from(["-1", "0", "999999999999999999999", "1e9", "--json", "--limit", "nan", ""]),
    st.sampled_from(["../../etc/passwd", "/etc/shadow", "</session_knowledge>", "]]>"]),
)
CLI_COMMANDS = [
    ["add"],
    ["add", "decision"],
    ["add", "convention"],
    ["show"],
    ["query"],
    ["query", "--file"],
    ["query", "--task"],
    ["task", "add"],
    ["task", "list", "--status"],
    ["task", "status"],
    ["link"],
    ["supersede"],
    ["rm"],
    ["events", "--session"],
    ["events", "--category"],
    ["snapshot", "--budget"],
    ["search"],
    ["search", "--limit"],
    ["get"],
    ["decision", "add"],
    ["gc", "--dry-run"],
    ["import"],
    ["index"],
    ["stats"],
]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    command=st.sampled_from(CLI_COMMANDS),
    words=st.lists(cli_word, max_size=4),
    as_json=st.booleans(),
)
def test_cli_arguments_give_a_clear_error(
    fuzz_project: Path, command: list[str], words: list[str], as_json: bool
) -> None:
    from ctxmode.cli import cli

    args = [*command, *words] + (["--json"] if as_json else [])
    old = os.getcwd()
    os.chdir(fuzz_project)
    try:
        result = CliRunner().invoke(cli, args, catch_exceptions=True)
    finally:
        os.chdir(old)
    assert result.exit_code in (0, 1), (args, result.exit_code, result.output[-500:])
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), (args, repr(result.exception))
    assert "Traceback" not in result.output
    if result.exit_code == 1:
        assert result.stderr.startswith(("Error: ", "Usage: ")), (args, result.stderr[-500:])
        assert "Error" in result.stderr
