"""``Store``: the public face of one project's store, above the domain.

``Store`` is a ``ctxmode.core.db.Database`` (the connection, transactions, migrations) whose
methods call the domain packages (``knowledge``, ``search``), so that callers hold one object.
The domain takes a ``Database`` and never imports this module; the imports here are lazy so
that the hook path, which opens a ``Store`` on every tool call, pays only for what it calls.
"""

from __future__ import annotations

from ctxmode.core.db import Database
from ctxmode.sessions.vocab import CATEGORIES as EVENT_CATEGORIES
from ctxmode.sessions.vocab import SNAPSHOT_MIN_BUDGET

#: Days after its session ended that an event is kept (``ctxmode gc``; ``sessions.retention``).
EVENT_RETENTION_DAYS = 90

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any, TextIO

    from ctxmode.core.models import (
        CleanupReport,
        Context,
        ContextDetail,
        Event,
        QueryResult,
        Session,
        SessionSnapshot,
        Task,
        WriteResult,
    )
    from ctxmode.exchange.team_items import ItemState, ShareResult, SyncReport, TeamStatus
    from ctxmode.exchange.transfer import ImportReport
    from ctxmode.search.engine import Item, SearchResult

__all__ = ["EVENT_CATEGORIES", "EVENT_RETENTION_DAYS", "SNAPSHOT_MIN_BUDGET", "Store"]


class Store(Database):
    """One project's knowledge store. Use ``Store.open(path)`` as a context manager."""

    # -- knowledge ---------------------------------------------------------------------------

    def write_context(
        self,
        type: str,
        content: str,
        *,
        task_id: int | None = None,
        file_paths: Sequence[str] = (),
        relation: str = "related",
        scope: str = "global",
        owner: str | None = None,
        metadata: dict[str, Any] | None = None,
        supersedes: int | None = None,
        session_id: str | None = None,
        relevance: float = 1.0,
        now: int | None = None,
    ) -> WriteResult:
        """Store a context, link it, and verify it is found through every link given."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.write_context(
            self,
            type,
            content,
            task_id=task_id,
            file_paths=file_paths,
            relation=relation,
            scope=scope,
            owner=owner,
            metadata=metadata,
            supersedes=supersedes,
            session_id=session_id,
            relevance=relevance,
            now=now,
        )

    def write_decision(
        self,
        fields: dict[str, str],
        *,
        task_id: int | None = None,
        file_paths: Sequence[str] = (),
        scope: str = "global",
        owner: str | None = None,
        supersedes: int | None = None,
    ) -> WriteResult:
        """Write a ``decision`` from the template fields (decision, background, options ...)."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.write_decision(
            self,
            fields,
            task_id=task_id,
            file_paths=file_paths,
            scope=scope,
            owner=owner,
            supersedes=supersedes,
        )

    def get_context(self, context_id: int) -> Context:
        """The context with this id (superseded and archived ones included)."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.get_context(self, context_id)

    def context_detail(self, context_id: int) -> ContextDetail:
        """A context with its task and file links and its supersession chain; its linked
        files are re-hashed first, so that its stale mark says what the disk holds now."""
        import contextlib

        from ctxmode.core.errors import StoreError
        from ctxmode.knowledge import contexts as knowledge
        from ctxmode.knowledge import lifecycle

        paths = [f.path for f in knowledge.context_detail(self, context_id).files]
        # A read-only store still shows the context, with the mark it last recorded.
        with contextlib.suppress(StoreError):
            lifecycle.refresh_files(self, paths=paths)
        return knowledge.context_detail(self, context_id)

    def update_context(
        self,
        context_id: int,
        *,
        content: str | None = None,
        type: str | None = None,
        metadata: dict[str, Any] | None = None,
        now: int | None = None,
    ) -> Context:
        """Edit a context in place (content, type or metadata). New content is written
        against the linked files as they are now: they become its baseline (not stale)."""
        from ctxmode.knowledge import contexts as knowledge
        from ctxmode.knowledge import lifecycle

        updated = knowledge.update_context(
            self, context_id, content=content, type=type, metadata=metadata, now=now
        )
        if content is None:
            return updated
        lifecycle.accept_file_content(self, context_id)
        return knowledge.get_context(self, context_id)

    def delete_context(self, context_id: int) -> None:
        """Delete a context and its links."""
        from ctxmode.knowledge import contexts as knowledge

        knowledge.delete_context(self, context_id)

    def supersede(self, old_id: int, new_id: int) -> None:
        """Mark ``old_id`` as replaced by ``new_id``; it leaves query results, stays readable."""
        from ctxmode.knowledge import contexts as knowledge

        knowledge.supersede(self, old_id, new_id)

    def list_contexts(self, **filters: Any) -> list[Context]:
        """Contexts filtered by type, scope, owner, task, file, stale, superseded (newest first)."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.list_contexts(self, **filters)

    def create_task(
        self, name: str, parent_id: int | None = None, *, status: str = "pending"
    ) -> Task:
        """Create a task, optionally under a parent."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.create_task(self, name, parent_id, status=status)

    def update_task(self, task_id: int, status: str) -> Task:
        """Change a task's status."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.update_task(self, task_id, status)

    def get_task(self, task_id: int) -> Task:
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.get_task(self, task_id)

    def list_tasks(self, status: str | None = None) -> list[Task]:
        """Tasks in tree order (parents before children), optionally by status."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.list_tasks(self, status)

    def task_depths(self, tasks: Sequence[Task] | None = None) -> dict[int, int]:
        """Depth of each task in the tree (roots are 0); every task when ``tasks`` is None."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.task_depths(self, self.list_tasks() if tasks is None else tasks)

    def link_files(
        self, context_id: int, paths: Sequence[str], relation: str = "related"
    ) -> tuple[str, ...]:
        """Link a context to project files (paths are stored project-relative); returns
        those with nothing on disk yet."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.link_files(self, context_id, paths, relation)

    def accept_file_content(self, context_id: int, paths: Sequence[str] | None = None) -> list[str]:
        """Take the current content of a context's linked files (all, or these paths) as
        what it was written against, clearing the stale mark they caused."""
        from ctxmode.knowledge import contexts as knowledge
        from ctxmode.knowledge import lifecycle

        rels = None if paths is None else [knowledge.normalize_path(self, p) for p in paths]
        return lifecycle.accept_file_content(self, context_id, rels)

    def link_task(self, context_id: int, task_id: int, relevance: float = 1.0) -> None:
        """Link a context to a task with a relevance weight."""
        from ctxmode.knowledge import contexts as knowledge

        knowledge.link_task(self, context_id, task_id, relevance)

    # -- retrieval and lifecycle -------------------------------------------------------------

    def query_context(
        self,
        *,
        task_id: int | None = None,
        file_path: str | None = None,
        context_type: str | Sequence[str] | None = None,
        mode: str = "normal",
        limit: int | None = None,
        budget_tokens: int | None = None,
        window_tokens: int | None = None,
        owner: str | None = None,
        session_id: str | None = None,
        include_superseded: bool = False,
        record_access: bool = True,
        now: int | None = None,
    ) -> QueryResult:
        """Ranked contexts for a file and/or task, packed into a token budget."""
        from ctxmode.knowledge import retrieval

        return retrieval.query_context(
            self,
            task_id=task_id,
            file_path=file_path,
            context_type=context_type,
            mode=mode,
            limit=limit,
            budget_tokens=budget_tokens,
            window_tokens=window_tokens,
            owner=owner,
            session_id=session_id,
            include_superseded=include_superseded,
            record_access=record_access,
            now=now,
        )

    def file_knowledge(
        self,
        paths: Sequence[str],
        session_id: str,
        *,
        cwd: str | None = None,
        cap_bytes: int,
        wrap: Callable[[str], str],
    ) -> str | None:
        """Tier-1 knowledge linked to files about to be edited, not yet shown in the session,
        fenced by ``wrap`` within ``cap_bytes``, and recorded as injected (see
        ``knowledge.follow``)."""
        from ctxmode.knowledge import follow

        return follow.lookup(self, paths, session_id, cwd=cwd, cap_bytes=cap_bytes, wrap=wrap)

    def note_injection(
        self, session_id: str, kind: str, context_ids: Sequence[int], nbytes: int
    ) -> None:
        """Record contexts injected by other means (the startup brief), so the edit hook does
        not repeat them in this session."""
        from ctxmode.knowledge import follow

        follow.record(self, session_id, kind, context_ids, nbytes)

    def cleanup(self, now: int | None = None, dry_run: bool = False) -> CleanupReport:
        """Apply the retention rules; with ``dry_run`` only report what would change."""
        from ctxmode.knowledge import lifecycle

        return lifecycle.cleanup(self, now=now, dry_run=dry_run)

    def refresh_files(self, now: int | None = None) -> list[str]:
        """Re-hash linked files; a context is stale while a linked file differs from the
        content it was linked against (a revert clears it)."""
        from ctxmode.knowledge import lifecycle

        return lifecycle.refresh_files(self, now=now)

    def end_session(self, session_id: str, now: int | None = None) -> int:
        """Drop the session-scoped contexts of a session; return how many went."""
        from ctxmode.knowledge import contexts as knowledge

        return knowledge.end_session(self, session_id, now=now)

    # -- sessions (what the hooks captured) ---------------------------------------------------

    def session_snapshot(
        self,
        session_id: str | None = None,
        *,
        prefer: str = "built",
        budget: int | None = None,
    ) -> SessionSnapshot:
        """A session's resume snapshot (default: the most recent session), by one policy.

        ``prefer="built"``: what would be injected now, built from the events; the last stored
        one when the events are gone. ``prefer="stored"``: what was injected last (the stored
        one), else built. ``budget`` (bytes) applies to a built snapshot.
        """
        from ctxmode.core.errors import InvalidInput
        from ctxmode.core.models import SessionSnapshot
        from ctxmode.sessions import snapshot

        if prefer not in ("built", "stored"):
            raise InvalidInput(f"prefer must be 'built' or 'stored', not {prefer!r}")
        stored = None
        if prefer == "stored":
            stored = snapshot.latest_stored(self, session_id)
        if stored is None:
            built = snapshot.build_snapshot(self, session_id, budget)
            if built.event_count or prefer == "stored":
                return SessionSnapshot(built.xml, built.bytes, built.session_id, built.event_count)
            stored = snapshot.latest_stored(self, session_id)
            if stored is None:
                return SessionSnapshot(built.xml, built.bytes, built.session_id, 0)
        return SessionSnapshot(
            stored.snapshot,
            stored.bytes,
            stored.session_id,
            0,
            stored=True,
            consumed=stored.consumed,
            created_at=stored.created_at,
        )

    def events(
        self,
        session_id: str | None = None,
        category: str | Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[Event]:
        """Captured events, newest first; ``session_id`` None = every session; ``category``
        one category or several (an unknown one is an ``InvalidInput`` naming the known)."""
        from ctxmode.sessions import records

        if category is None or isinstance(category, str):
            return records.list_events(self, session_id, category, limit)
        found: list[Event] = []
        for cat in dict.fromkeys(category):
            found.extend(records.list_events(self, session_id, cat, limit))
        return sorted(found, key=lambda e: e.id, reverse=True)[:limit]

    def prune_events(
        self, *, days: int = EVENT_RETENTION_DAYS, now: int | None = None, dry_run: bool = False
    ) -> tuple[int, int]:
        """Drop the events of sessions over for ``days`` days (snapshots, sessions and
        knowledge stay), in short transactions; (sessions, events) affected, or that would be
        with ``dry_run``."""
        from ctxmode.sessions import retention

        return retention.prune_events(self, days=days, now=now, dry_run=dry_run)

    @staticmethod
    def describe_event(event: Event, limit: int = 200) -> str:
        """One readable line for an event: what was edited, run, failed or decided."""
        from ctxmode.sessions.describe import describe

        return describe(event.category, event.type, event.data, limit=limit)

    def sessions(self, limit: int = 50) -> list[Session]:
        """Agent sessions, most recently active first."""
        from ctxmode.sessions import records

        return records.list_sessions(self, limit)

    def latest_session_id(self) -> str | None:
        """The most recently active session, if any."""
        from ctxmode.sessions import records

        return records.latest_session_id(self)

    def imported_sessions(self) -> dict[str, str]:
        """Session id -> agent of every session read from an agent's transcript
        (``ctxmode history import``), beside the live ones the hooks recorded."""
        from ctxmode.history import importer

        return importer.imported_sessions(self)

    def session_refs(self, event_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """For search hits on session events: event id -> its session, agent, the session's
        start and whether it was imported or recorded live."""
        from ctxmode.history import importer

        return importer.session_refs(self, event_ids)

    # -- export and import ---------------------------------------------------------------------

    def export_lines(self) -> Iterator[str]:
        """The store as JSON Lines (stable ids), for ``import_lines`` elsewhere."""
        from ctxmode.exchange import transfer

        return transfer.export_lines(self)

    @staticmethod
    def read_export(stream: TextIO) -> list[str]:
        """The lines of an export file or stream, within the import's size limits
        (``InvalidInput`` past them: nothing is read further, nothing imported)."""
        from ctxmode.exchange import transfer

        return transfer.read_export(stream)

    def import_lines(self, lines: Iterable[str]) -> ImportReport:
        """Read an export back without loss, skipping what is already here (content hash)."""
        from ctxmode.exchange import transfer

        return transfer.import_lines(self, lines)

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

    # -- team knowledge (``.context/shared``) ------------------------------------------------

    def sync_shared(
        self,
        *,
        force: bool = False,
        prefer: dict[str, str] | None = None,
        accept: Sequence[str] = (),
    ) -> SyncReport | None:
        """Import teammates' changes to ``.context/shared`` and write local edits of shared
        items; None, at the cost of one ``stat`` and one row read, when neither side moved.

        ``prefer`` maps stable ids in conflict to the side to keep (``ours``/``theirs``);
        ``accept`` names items held for review whose supersession to apply.
        """
        from ctxmode.exchange import team_state

        if not force and not prefer and not accept and team_state.unchanged(self):
            return None
        from ctxmode.exchange import team

        return team.sync(self, prefer, accept=accept)

    def refresh_shared(self) -> SyncReport | None:
        """``sync_shared`` for automatic callers (commands, MCP calls, session start): a
        problem is reported on stderr and left to ``ctxmode team``, never raised."""
        import sqlite3
        import sys

        from ctxmode.core.errors import CtxmodeError

        try:
            return self.sync_shared()
        except (CtxmodeError, OSError, sqlite3.Error) as exc:
            print(f"ctxmode: team knowledge not synced ({exc})", file=sys.stderr)
            return None

    def share(self, context_ids: Sequence[int], *, with_task: bool = True) -> ShareResult:
        """Write a shared file for each context (tier 1-2, not session-scoped, no credential)."""
        from ctxmode.exchange import team

        return team.share(self, context_ids, with_task=with_task)

    def unshare(self, context_id: int) -> ItemState:
        """Delete a context's shared file; the local context stays."""
        from ctxmode.exchange import team

        return team.unshare(self, context_id)

    def shared_file(self, context_id: int) -> str | None:
        """The project-relative path of a context's shared file, or None when not shared."""
        from ctxmode.exchange import team_state

        return team_state.shared_file(self, context_id)

    def team_status(self) -> TeamStatus:
        """Every shared item with its state (in sync, changed locally or in the repo ...)."""
        from ctxmode.exchange import team

        return team.status(self)
