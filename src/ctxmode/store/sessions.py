"""Session use cases of ``Store``: snapshots, events, sessions, past-session import, the inbox."""

from __future__ import annotations

from ctxmode.core import config
from ctxmode.core.db import Database
from ctxmode.sessions.vocab import CATEGORIES as EVENT_CATEGORIES
from ctxmode.sessions.vocab import SNAPSHOT_MIN_BUDGET

#: Days after its session ended that an event is kept (``ctxmode gc``; ``sessions.retention``).
EVENT_RETENTION_DAYS = config.EVENT_RETENTION_DAYS

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ctxmode.core.models import Event, Session, SessionSnapshot
    from ctxmode.history.importer import ImportReport as HistoryReport
    from ctxmode.history.inbox import Candidate

__all__ = ["EVENT_CATEGORIES", "EVENT_RETENTION_DAYS", "SNAPSHOT_MIN_BUDGET", "SessionCases"]


class SessionCases(Database):
    """What the hooks captured and what past transcripts add."""

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

    # -- past sessions (``history import``) and the inbox they feed ----------------------------

    def import_history(
        self,
        agent: str | None = "all",
        *,
        since_ms: int | None = None,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> HistoryReport:
        """Record this project's past sessions from the transcripts of ``agent`` (``all``: every
        agent of ``core.config.HISTORY_AGENTS``; an unknown one is an ``InvalidInput``) as the
        hooks would have, adding only what is new, then propose inbox candidates from them."""
        from ctxmode.history import importer

        return importer.run(
            self,
            agents=importer.agents_of(agent),
            since_ms=since_ms,
            dry_run=dry_run,
            progress=progress,
        )

    @staticmethod
    def count_past_sessions(root: str) -> dict[str, int]:
        """Past sessions of the project at ``root`` per agent, read from nothing but the
        agents' transcript folders (no store needed); empty when they cannot be counted, since
        the count is an offer (``ctxmode install``) that must never fail its caller."""
        from ctxmode.history.importer import count_past_sessions

        try:
            return count_past_sessions(root)
        except Exception:  # noqa: BLE001 - see the docstring
            return {}

    def candidates(self, *, include_closed: bool = False, limit: int = 50) -> list[Candidate]:
        """Inbox candidates, best evidence first (open ones only unless ``include_closed``)."""
        from ctxmode.history import inbox

        return inbox.list_candidates(self, include_closed=include_closed, limit=limit)

    def accept_candidate(
        self, candidate_id: int, *, type_: str | None = None, files: list[str] | None = None
    ) -> dict[str, Any]:
        """Store a candidate as a context (type: ``type_``, else the candidate's
        ``context_type``), linked to ``files``, else to the files its sessions edited."""
        from ctxmode.history import inbox

        return inbox.accept(self, candidate_id, type_=type_, files=files)

    def reject_candidate(self, candidate_id: int) -> None:
        """Drop a candidate: it stays rejected and is not proposed again."""
        from ctxmode.history import inbox

        inbox.reject(self, candidate_id)
