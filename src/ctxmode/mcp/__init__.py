"""The MCP face: ``ctxmode serve``, an MCP server over stdio (the ``mcp`` SDK).

- ``front``: the stdio front ``ctxmode serve`` runs: the handshake and lists from
  ``listing.json`` (standard library only), everything else forwarded to the SDK server it
  starts on first need through ``bridge``; ``listing`` records that file from ``server``;
- ``server``: the server, knowledge and session tools, resources and the prompt;
- ``base``: the server class, the thread runner that opens the store, fencing and results;
- ``search``, ``sandbox``: the search and sandbox/indexing tools, registered by ``server``.

Tools are thin: validate, one core call, render. May import: the core packages and the
``store`` facade. Never another face. ``base`` is imported by the tool modules, never the
reverse, and the tool modules never import ``server``.
"""
