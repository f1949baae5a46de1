"""ctxmode's MCP server on the ``mcp`` SDK, built from the registry: the oracle the tests hold
``ctxmode serve`` (``mcp.front``) to, and an in-process server for ``mcp.Client``.

- ``server``: ``build_server``, the SDK's low-level ``Server`` answering from ``mcp.registry``
  and running calls through ``mcp.calls``;
- ``bridge``: runs an SDK session on JSON-RPC lines (the differential tests feed it).

``ctxmode serve`` never imports it.
"""
