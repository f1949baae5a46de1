"""Knowledge in and out of the store: JSON Lines export/import, importers of docs, task lists
and review findings, and team sharing through git.

- ``transfer``: JSON Lines export and import (stable ids, duplicates skipped by content hash);
- ``importers``: docs folders, task lists and review findings into contexts and tasks;
- ``team``, ``team_files``, ``team_items``: ``.context/shared/*.md`` written, read and synced;
- ``team_state``: the cheap has-anything-moved check every command and session start runs.

May import: ``core``, ``knowledge``, ``search`` (file walks, chunking). Never the ``store``
facade or a face.
"""
