"""Project knowledge: contexts, the task tree, file links, and what is given back from them.

- ``contexts``: the write side (contexts, tasks, links, supersession, paths);
- ``retrieval``: ranked candidates for a file, a task or a type (``query_context``);
- ``packing``: fitting ranked items into a token budget;
- ``lifecycle``: retention per context type, staleness of linked files, cleanup;
- ``browse``: read-only listings for the web viewer.

May import: ``core``. Takes a ``core.db.Database``; never the ``store`` facade or a face.
"""
