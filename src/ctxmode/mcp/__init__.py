"""The MCP face: ``ctxmode serve``, an MCP server over stdio.

- ``front``: the stdio front ``ctxmode serve`` runs (standard library only): the handshake and
  lists from ``listing.json``, well-formed tool calls, resource reads and the prompt through
  ``native``; anything else forwarded to the SDK server it starts on first need;
- ``native``: checks a call's arguments against the listed schema as the SDK would take them,
  and runs the body, without the SDK;
- ``tools``: what the tools, resources and prompt do (bodies shared by both paths, no SDK);
- ``sdk``: the server on the ``mcp`` SDK: the tools' declarations (their schemas), argument
  errors, and the bridge the front feeds; ``listing`` records ``listing.json`` from it.

May import: the core packages and the ``store`` facade. Never another face. ``tools`` imports
nothing else of ``mcp``; ``sdk`` imports ``tools``; ``front`` imports ``sdk`` only inside the
function that starts it, ``native`` never.
"""
