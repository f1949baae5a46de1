"""ctxmode's MCP server on the official SDK's low-level ``Server``, built from the registry.

``ctxmode serve`` does not run it (``mcp.front`` answers everything itself). It is the oracle
the tests hold the front to, and the in-process server tests and embedders drive with
``mcp.Client(build_server(db, root))``: the SDK answers the protocol (``initialize`` and its
version negotiation, capabilities, ``ping``, error codes); every list comes from
``mcp.registry`` and every call runs through ``mcp.calls``, as in the front, with the SDK's
client validating each reply (``structuredContent`` against the listed output schema).

Invariants: one ``Store`` per server (``tools.common.StoreRunner``), opened on the first call
and closed when the session ends; bodies run in a worker thread, so SQLite never blocks the
event loop.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from ctxmode import __version__
from ctxmode.core.errors import CtxmodeError
from ctxmode.mcp import calls, registry
from ctxmode.mcp.tools.common import StoreRunner

Context = ServerRequestContext[Any]


def build_server(
    db_path: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
    runner: StoreRunner | None = None,
) -> Server[Any]:
    """The SDK server over the store at ``db_path`` (opened on the first call). ``runner``:
    one the caller already uses for the same store."""
    if runner is None:
        runner = StoreRunner(Path(db_path).expanduser().absolute(), Path(root) if root else None)
    store = runner
    lists = registry.lists()

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(store.close)

    async def list_tools(_ctx: Context, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult.model_validate(lists["tools/list"])

    async def list_resources(_ctx: Context, _params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult.model_validate(lists["resources/list"])

    async def list_templates(_ctx: Context, _params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult.model_validate(lists["resources/templates/list"])

    async def list_prompts(_ctx: Context, _params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult.model_validate(lists["prompts/list"])

    async def call_tool(_ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = registry.TOOL.get(params.name)
        if tool is None:
            known = ", ".join(registry.TOOL)
            result = calls.error_result(f"Unknown tool: {params.name}. Tools: {known}")
        else:
            result = await anyio.to_thread.run_sync(calls.call_tool, store, tool, params.arguments)
        return types.CallToolResult.model_validate(result)

    async def read_resource(
        _ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        resource = registry.RESOURCE.get(uri)
        if resource is None:
            known = ", ".join(registry.RESOURCE)
            raise MCPError(
                types.INVALID_PARAMS, f"Unknown resource: {uri}. Resources: {known}", {"uri": uri}
            )
        try:
            result = await anyio.to_thread.run_sync(calls.read_resource, store, resource)
        except CtxmodeError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc), {"uri": uri}) from exc
        return types.ReadResourceResult.model_validate(result)

    async def get_prompt(
        _ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        prompt = registry.PROMPT.get(params.name)
        if prompt is None:
            known = ", ".join(registry.PROMPT)
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}. Prompts: {known}")
        try:
            result = calls.get_prompt(prompt, params.arguments)
        except calls.ArgumentError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from exc
        return types.GetPromptResult.model_validate(result)

    return Server(
        registry.SERVER_NAME,
        version=__version__,
        instructions=registry.INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
