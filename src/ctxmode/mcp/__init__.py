"""The MCP face: ``ctxmode serve``, an MCP server over stdio.

- ``registry``: every tool, resource and prompt, declared once (schemas, output shape,
  annotations, where the body is); what the server lists and checks comes from it;
- ``front``: the server ``ctxmode serve`` runs (standard library only): the handshake, the
  lists, calls, and a JSON-RPC error for anything else;
- ``calls``: argument checks that say what to send, running the bodies, shaping results;
- ``tools``: the bodies (no SDK);
- ``sdk``: the SDK's server built from the registry: the tests' oracle, never run by
  ``ctxmode serve``.

May import: the core packages and the ``store`` facade. Never another face. ``registry``
imports only ``core``; ``tools`` imports only ``registry`` of ``mcp``; ``front`` and
``calls`` never import ``sdk``; nothing imports ``sdk`` but the tests.
"""
