"""The result types of ``Store``'s use cases, named here for the faces' annotations.

A face imports them under ``TYPE_CHECKING`` (so importing it loads none of the domain) and
reaches the domain only through ``Store`` (``tests/test_architecture.py``). Importing this module
at run time works too; it loads the domain packages that define them.
"""

from __future__ import annotations

from ctxmode.exchange.importers import ImportSummary
from ctxmode.history.importer import ImportReport as HistoryReport
from ctxmode.history.inbox import Candidate
from ctxmode.sandbox import BatchResult, CodeRun, ExecResult
from ctxmode.search.engine import Item, SearchResult
from ctxmode.search.fetch import FetchReport
from ctxmode.search.indexing import IndexedSource, IndexReport
from ctxmode.search.sources import SourceInfo

__all__ = [
    "BatchResult",
    "Candidate",
    "CodeRun",
    "ExecResult",
    "FetchReport",
    "HistoryReport",
    "ImportSummary",
    "IndexReport",
    "IndexedSource",
    "Item",
    "SearchResult",
    "SourceInfo",
]
