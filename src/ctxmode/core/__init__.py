"""The store core: settings, the exception tree, the data model, the SQLite file and its schema.

- ``config``: paths, limits and ``.context/config.toml`` (the only module that reads the
  environment);
- ``errors``: the one exception tree (``CtxmodeError`` and its subclasses);
- ``models``: frozen dataclasses and the closed vocabularies (context types, relations...),
  which live in ``vocab`` (no imports: the MCP server lists them before ``initialize``);
- ``db``: ``Database``, the connection (WAL, busy timeout, retries, quarantine of a corrupt file);
- ``schema``: append-only migrations, applied once on open;
- ``redact``: secret redaction applied to everything stored or shared (``secret_shapes``:
  whether a name holds a secret and whether a value looks like one);
- ``_lean``: stand-ins that keep the hook path free of heavy standard-library imports.

May import: the standard library only. Everything else in ctxmode builds on this package, and
the hook path imports it on every tool call: nothing heavy at module level.
"""
