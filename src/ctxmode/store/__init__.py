"""``Store``: the use-case layer of one project's store, the one object the faces call.

``Store`` is a ``ctxmode.core.db.Database`` (the connection, transactions, migrations) whose
methods run the domain packages' use cases with their policy (search refreshes edited files
first, a session's snapshot follows one rule, an index reports the store's size ...), so that
the CLI, MCP and web faces hold one object and import only ``store`` and ``core``
(``tests/test_architecture.py``). The methods are grouped by concern in mixins:
``store.knowledge``, ``store.sessions``, ``store.search``, ``store.exchange``; the result types
the faces annotate with are named in ``store.results``.

The domain takes a ``Database`` and never imports this package; the domain imports here are
lazy (inside each method) so that the hook path, which opens a ``Store`` on every tool call,
pays only for what it calls.

May import: ``core``, ``knowledge``, ``sessions``, ``search``, ``history``, ``sandbox``,
``exchange`` (the domain, lazily). Never a face (``cli``, ``hooks``, ``mcp``, ``web``) or
``stats``, ``doctor``, ``evals``.
"""

from __future__ import annotations

from ctxmode.store.exchange import ExchangeCases
from ctxmode.store.knowledge import KnowledgeCases
from ctxmode.store.search import SearchCases
from ctxmode.store.sessions import (
    EVENT_CATEGORIES,
    EVENT_RETENTION_DAYS,
    SNAPSHOT_MIN_BUDGET,
    SessionCases,
)

__all__ = [
    "EVENT_CATEGORIES",
    "EVENT_RETENTION_DAYS",
    "SNAPSHOT_MIN_BUDGET",
    "Store",
]


class Store(KnowledgeCases, SessionCases, SearchCases, ExchangeCases):
    """One project's knowledge store. Use ``Store.open(path)`` as a context manager."""
