"""``ctxmode eval``: run an agent on the user's own tasks with and without ctxmode, and compare.

- ``tasks``: the ``TASKS.toml`` file, read and checked field by field before any work;
- ``workspace``: scratch copies of the project (HEAD plus the uncommitted changes) per arm;
- ``agent``: the headless agent (Claude Code ``-p --output-format stream-json``): the check
  that it exists and is logged in, the run, and the figures read from its own stream;
- ``runner``: the two arms per task and run (order alternating), their stores, the check;
- ``report``: medians per arm, paired differences, spread between runs, pass rates.

Nothing here touches the user's checkout or store: the copies live in a temporary folder, the
project's store is read through SQLite's backup API.
May import: ``core``, ``agents`` (the installer), ``exchange`` (history import) and ``store``.
Never a face.
"""
