"""ctxmode's MCP server on the ``mcp`` SDK: the tool contract, and what the front forwards.

- ``server``: ``build_server``, the server class (lean listings, argument errors that say what
  to send) and ``declarer``, which runs a declaration's body from ``mcp.tools``;
- ``knowledge``, ``sessions``, ``search``, ``sandbox``: the tools' declarations (signatures and
  flat output models), one module per module of ``mcp.tools``;
- ``bridge``: runs an SDK session on lines the front hands it.

Imported only when the front forwards a message, ``listing`` records, or a test asks.
"""
