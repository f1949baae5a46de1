"""What ctxmode's MCP tools, resources and prompt do, without the ``mcp`` SDK.

A tool body is ``fn(call, **arguments) -> ToolOutput`` (``common``): ``call`` is the server's
``StoreRunner``; the arguments are validated and complete. Two paths run the same bodies: the
stdio front's native dispatch (``mcp.native``, standard library only, for well-formed calls)
and the SDK server (``mcp.sdk``, whose declarations give each tool its schema and validate
whatever the native dispatch does not take).

- ``knowledge``: contexts, tasks, links; the tasks resource and the decision prompt;
- ``sessions``: snapshot and events; the snapshot resource;
- ``search``, ``sandbox``: search and get; indexing, fetching and sandboxed runs.

May import: the core packages, the ``store`` facade and ``mcp.tools`` itself; never the SDK,
pydantic or another part of ``mcp``.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # mypy reads it as true; ``typing`` is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: Tool name -> ``module:function`` of its body (modules load on the first call).
TOOLS: dict[str, str] = {
    "write_context": "knowledge:write_context",
    "query_context": "knowledge:query_context",
    "create_task": "knowledge:create_task",
    "update_task": "knowledge:update_task",
    "list_tasks": "knowledge:list_tasks",
    "link_files": "knowledge:link_files",
    "session_snapshot": "sessions:session_snapshot",
    "session_events": "sessions:session_events",
    "search": "search:search",
    "get": "search:get",
    "index": "sandbox:index",
    "fetch_and_index": "sandbox:fetch_and_index",
    "execute": "sandbox:execute",
    "execute_file": "sandbox:execute_file",
    "batch_execute": "sandbox:batch_execute",
    "stats": "sandbox:stats_tool",
}
#: Resource URI -> ``module:function`` returning its text.
RESOURCES: dict[str, str] = {
    "ctxmode://snapshot": "sessions:snapshot_resource",
    "ctxmode://tasks": "knowledge:tasks_resource",
}
#: The one prompt, and what it says of itself.
DECISION_PROMPT = "record-decision"
DECISION_PROMPT_DESCRIPTION = (
    "Walk through the decision template, then store it with write_context."
)


def body(target: str) -> Callable[..., Any]:
    """The function ``module:function`` of this package names."""
    module, _, name = target.partition(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return fn


def load_all() -> None:
    """Import every body module (the server's warm-up, so the first call pays none)."""
    for target in {*TOOLS.values(), *RESOURCES.values()}:
        body(target)
