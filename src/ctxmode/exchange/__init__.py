"""Knowledge in and out of the store: JSON Lines export/import and importers of docs, task lists
and review findings.

May import: ``core``, ``knowledge``, ``search`` (file walks, chunking). Never the ``store``
facade or a face.
"""
