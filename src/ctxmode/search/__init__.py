"""Search: documents indexed into chunks, and ranked full-text search over everything stored.

- ``engine``: ``search`` and ``get_items`` (contexts, session events and chunks together);
- ``query``, ``forms``: query parsing, word forms, spelling correction;
- ``lists``, ``rank``, ``cache``: the FTS5 result lists, their fusion and reranking, and the
  per-process cache of scores and rows;
- ``chunking``: markdown by heading, code by definition, JSON by key path, plain text;
- ``files``: folder walks, ignore rules, text decoding;
- ``indexing``: sources and their chunks written and refreshed;
- ``sources``: indexed sources read back;
- ``fetch``: a web page as markdown.

May import: ``core``, ``knowledge`` (paths, task checks), ``sessions.events`` (categories).
Never the ``store`` facade or a face.
"""
