"""Session continuity: what the hooks capture, and the snapshot that is injected back.

- ``events``: extraction, a hook payload -> typed, prioritised event records (pure functions);
- ``records``: sessions and their events in the store (idempotent, bounded);
- ``snapshot``: the <= 2 KB resume snapshot and the startup brief; ``state`` (what the
  session's state is: its candidates), ``corrections`` (prompts that reverse earlier ones) and
  ``budget`` (fitting them by shares that adapt);
- ``retention``: events of sessions over for 90 days dropped (``ctxmode gc``);
- ``spool``: hook calls kept on disk while another process holds the store's lock;
- ``transcript``: reading an agent's transcript (the last assistant turn; Claude Code's tool
  calls and prompts, for ``hooks.backfill``).

This is the hook path: standard library and ``core`` only, nothing heavy at import time.
May import: ``core``. Never ``knowledge``, ``search``, the ``store`` facade or a face.
"""
