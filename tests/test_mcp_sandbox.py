"""The indexing and sandbox MCP tools through a real in-process JSON-RPC session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxmode import Store, stats

pytestmark = pytest.mark.anyio

TOOLS = {"index", "fetch_and_index", "execute", "execute_file", "batch_execute", "stats"}


async def test_tools_are_listed_with_flat_output_schemas(mcp_client: Any) -> None:
    tools = {t.name: t for t in (await mcp_client.list_tools()).tools}
    assert set(tools) >= TOOLS
    for name in TOOLS:
        props = tools[name].output_schema["properties"]
        for prop in props.values():
            kinds = [prop.get("type")] + [o.get("type") for o in prop.get("anyOf", [])]
            assert "object" not in kinds, (name, prop)


async def test_execute_small_and_digest(mcp_client: Any) -> None:
    res = await mcp_client.call_tool("execute", {"language": "shell", "code": "echo hi there"})
    assert res.is_error is False
    data = res.structured_content
    assert data["exit_code"] == 0 and not data["indexed"]
    assert "hi there" in data["output"] and "ctxmode_data" in data["output"]  # fenced
    code = "for i in range(3000): print('row', i, 'ok')\nprint('ERROR disk quota exceeded')"
    big = await mcp_client.call_tool(
        "execute", {"language": "python", "code": code, "intent": "disk quota error"}
    )
    data = big.structured_content
    assert data["indexed"] and data["source"].startswith("exec:python:")
    assert data["match_ids"] and "quota" in data["output"]
    hit = await mcp_client.call_tool("search", {"queries": ["quota"], "source": data["source"]})
    assert hit.is_error is False


async def test_stats_counts_what_runs_kept_out(mcp_client: Any, project: Path) -> None:
    empty = (await mcp_client.call_tool("stats", {})).structured_content
    assert empty["runs"] == 0 and empty["bytes_kept_out"] == 0
    await mcp_client.call_tool("execute", {"language": "shell", "code": "echo small"})
    code = "print('line of output ' * 8000)"
    big = await mcp_client.call_tool("execute", {"language": "python", "code": code})
    ran = big.structured_content
    res = await mcp_client.call_tool("stats", {})
    assert res.is_error is False
    got = res.structured_content
    assert got["runs"] == 2 and got["bytes_fetched"] == 0
    assert got["bytes_produced"] == len("small\n") + ran["bytes_produced"]
    assert got["bytes_kept_out"] == got["bytes_produced"] - got["bytes_returned"] > 100_000
    assert got["indexed_sources"] == 1  # the large output was indexed
    # The figures are the store's own: a second connection reads the same.
    with Store.open(project / ".context" / "context.db") as store:
        assert stats.sandbox_stats(store).bytes_kept_out == got["bytes_kept_out"]
    assert f"{got['bytes_kept_out']} kept out of context" in res.content[0].text


async def test_errors_are_tool_errors(mcp_client: Any) -> None:
    res = await mcp_client.call_tool("execute", {"language": "cobol", "code": "x"})
    assert res.is_error is True and "unknown language" in res.content[0].text
    res = await mcp_client.call_tool(
        "execute_file", {"path": "../../etc/passwd", "language": "shell", "code": "cat"}
    )
    assert res.is_error is True and "outside the project" in res.content[0].text
    res = await mcp_client.call_tool("index", {})
    assert res.is_error is True and "exactly one" in res.content[0].text
    res = await mcp_client.call_tool("fetch_and_index", {"url": "file:///etc/passwd"})
    assert res.is_error is True and "http" in res.content[0].text


async def test_index_content_and_path(mcp_client: Any, project: Path) -> None:
    res = await mcp_client.call_tool("index", {"content": "# Notes\nqueue depth", "source": "n"})
    assert res.structured_content["sources"] == ["n"] and res.structured_content["chunks"] == 1
    (project / "a.md").write_text("# A\nalpha\n")
    res = await mcp_client.call_tool("index", {"path": "a.md"})
    assert res.structured_content["sources"] == ["a.md"]


async def test_execute_file_and_batch(mcp_client: Any, project: Path) -> None:
    (project / "big.log").write_text("line\n" * 10_000)
    res = await mcp_client.call_tool(
        "execute_file", {"path": "big.log", "language": "shell", "code": "wc -l"}
    )
    assert res.structured_content["output"].count("10000") == 1
    res = await mcp_client.call_tool(
        "batch_execute", {"commands": ["echo one", "echo two"], "queries": ["two"]}
    )
    data = res.structured_content
    assert data["exit_codes"] == [0, 0] and data["match_ids"]


async def test_a_running_command_does_not_hold_up_other_tools(
    mcp_client: Any, project: Path
) -> None:
    import anyio

    started = project / "started"
    finished: list[str] = []

    async def slow() -> None:
        code = f"touch {started}; sleep 3; echo done"
        res = await mcp_client.call_tool("execute", {"language": "shell", "code": code})
        assert res.is_error is False
        finished.append("execute")

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        with anyio.fail_after(20):
            while not started.exists():  # the process is running now
                await anyio.sleep(0.05)
        res = await mcp_client.call_tool("list_tasks", {})
        assert res.is_error is False
        finished.append("list_tasks")
    assert finished == ["list_tasks", "execute"]
