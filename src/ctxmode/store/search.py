"""Search use cases of ``Store``: search, indexing, sources, fetch, the sandbox."""

from __future__ import annotations

from ctxmode.core.config import FETCH_TTL_S
from ctxmode.core.db import Database

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any

    from ctxmode.sandbox import BatchResult, CodeRun, ExecResult
    from ctxmode.search.engine import Item, SearchResult
    from ctxmode.search.fetch import FetchReport
    from ctxmode.search.indexing import IndexReport
    from ctxmode.search.sources import SourceInfo


class SearchCases(Database):
    """Search and what feeds it: indexed files, fetched pages, sandboxed runs."""

    # -- search ------------------------------------------------------------------------------

    def search(self, query: str, *, refresh: bool = True, **filters: Any) -> SearchResult:
        """Full-text search over contexts, events and indexed documents (``search.engine``).

        ``refresh``: first re-read indexed files edited or deleted since the last refresh (at
        most once per ``search.indexing.REFRESH_EVERY_S`` on this store; one ``stat`` per file
        when nothing changed), so files are searched as they are now. Every face searches
        this way."""
        from ctxmode.search import engine as search

        if refresh:
            from ctxmode.search.indexing import refresh_due

            refresh_due(self)
        return search.search(self, query, **filters)

    def get_items(self, ids: Sequence[str], budget_chars: int = 20000) -> list[Item]:
        """Full text of search hits by id (``ctx:12``, ``evt:34``, ``doc:56``) within a budget."""
        from ctxmode.search import engine as search

        return search.get_items(self, ids, budget_chars=budget_chars)

    def warm_search(self, source: str | None = None, *, below: int | None = None) -> int | None:
        """Analyse items ahead of searches, one slice (``search.engine.warm``): a server calls it
        again with the ``below`` returned, in idle moments, until it returns None."""
        from ctxmode.search import engine

        return engine.warm(self, source, below=below)

    # -- indexing and sources ------------------------------------------------------------------

    def prune_names(self, *, dry_run: bool = False) -> int:
        """Drop the names of the document vocabulary that no chunk holds any more (a file
        edited or removed since); how many (would be) dropped."""
        from ctxmode.search.writer import prune_names

        return prune_names(self, dry_run=dry_run)

    def index_path(self, path: str, source: str | None = None) -> IndexReport:
        """Index a file or a folder as one source (re-indexing a label replaces it)."""
        from ctxmode.search import indexing

        return indexing.index_path(self, path, source)

    def index_paths(
        self,
        paths: Sequence[str],
        source: str | None = None,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> IndexReport:
        """Index files or folders, one source each (``source`` labels a single path), calling
        ``progress(path, done, total)`` as each goes; one report for them all."""
        from ctxmode.core.errors import InvalidInput
        from ctxmode.search import indexing

        if source and len(paths) > 1:
            raise InvalidInput("a source label names one source: give a single path with it")
        reports = []
        for path in paths:
            report_path = None if progress is None else _progress_of(progress, path)
            reports.append(indexing.index_path(self, path, source, report_path))
        return indexing.IndexReport(
            tuple(s for r in reports for s in r.sources),
            tuple(s for r in reports for s in r.skipped),
            sum(r.seconds for r in reports),
        )

    def disk_bytes(self) -> int:
        """The store's size on disk (file and write-ahead log), once the log is folded into
        the file (unless a reader holds it: then as it is). What ``ctxmode index`` reports."""
        import contextlib
        import os
        import sqlite3

        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                size += os.path.getsize(self.db_file + suffix)
        return size

    def index_text(self, content: str, source: str | None = None) -> IndexReport:
        """Index a piece of text as source ``source``, by default ``content:<hash of it>``
        (the same text indexed twice is one source)."""
        import hashlib

        from ctxmode.search import indexing

        label = source or "content:" + hashlib.sha256(content.encode()).hexdigest()[:10]
        return indexing.index_content(self, content, label)

    def sources(self, kind: str | None = None) -> list[SourceInfo]:
        """Indexed sources (files, folders, URLs, sandbox output), optionally of one kind."""
        from ctxmode.search import sources

        return sources.list_sources(self, kind)

    def remove_source(self, label: str) -> bool:
        """Delete a source and its chunks; False when there is no source of that label."""
        from ctxmode.search import sources

        return sources.remove_source(self, label)

    def fetch(
        self, url: str, source: str | None = None, ttl_s: int = FETCH_TTL_S, *, force: bool = False
    ) -> FetchReport:
        """Fetch an http(s) URL, convert HTML to markdown and index it (``search.fetch``)."""
        from ctxmode.search import fetch

        return fetch.fetch_and_index(self, url, source, ttl_s, force=force)

    # -- the sandbox ---------------------------------------------------------------------------

    def execute(
        self, language: str, code: str, intent: str | None = None, timeout: float | None = None
    ) -> ExecResult:
        """Run code at the project root; large output is indexed and a digest returned.

        A server sharing one store between calls runs the process without it instead
        (``run_code``), then hands the run to ``finish_run``: a long command must not stall the
        other calls."""
        from ctxmode import sandbox

        return sandbox.execute(self, language, code, intent, timeout)

    @staticmethod
    def run_code(root: Path, language: str, code: str, timeout: float | None = None) -> CodeRun:
        """The process half of ``execute``: run the code at ``root``; no store involved."""
        from ctxmode import sandbox

        return sandbox.run_code(root, language, code, timeout)

    def finish_run(self, run: CodeRun, intent: str | None = None) -> ExecResult:
        """The store half of ``execute``: index large output, build the digest, count bytes."""
        from ctxmode import sandbox

        return sandbox.finish_run(self, run, intent)

    def execute_file(
        self,
        path: str,
        language: str,
        code: str,
        intent: str | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run code over a project file (content on stdin, path in ``$FILE_PATH``)."""
        from ctxmode import sandbox

        return sandbox.execute_file(self, path, language, code, intent, timeout)

    def batch_execute(
        self, commands: Sequence[str], queries: Sequence[str], timeout: float | None = None
    ) -> BatchResult:
        """Run shell commands in turn, index their output as one source, answer the queries."""
        from ctxmode import sandbox

        return sandbox.batch_execute(self, commands, queries, timeout)


def _progress_of(
    progress: Callable[[str, int, int], None], path: str
) -> Callable[[int, int, str], None]:
    return lambda done, total, _file: progress(path, done, total)
