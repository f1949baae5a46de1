"""What ctxmode's MCP tools, resources and prompt do: their bodies, without the ``mcp`` SDK.

A tool body is ``fn(call, **arguments) -> ToolOutput`` (``common``): ``call`` is the server's
``StoreRunner``; the arguments are checked and complete (defaults filled in) by
``mcp.calls``, from the tool's row in ``mcp.registry``, which names the body
(``"knowledge:write_context"``). A ``CtxmodeError`` is the caller's mistake and becomes an
``isError`` result.

- ``knowledge``: contexts, tasks, links; the tasks resource and the decision prompt;
- ``sessions``: snapshot and events; the snapshot resource;
- ``search``, ``sandbox``: search and get; indexing, fetching and sandboxed runs.

May import: the core packages, the ``store`` facade, ``mcp.registry`` (the defaults it lists)
and ``mcp.tools`` itself; never the SDK, pydantic or another part of ``mcp``.
"""
