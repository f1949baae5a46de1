"""Exchange use cases of ``Store``: export and import, importers, team knowledge."""

from __future__ import annotations

from ctxmode.core.db import Database

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import TextIO

    from ctxmode.exchange.importers import ImportSummary
    from ctxmode.exchange.team_items import ItemState, ShareResult, SyncReport, TeamStatus
    from ctxmode.exchange.transfer import ImportReport


class ExchangeCases(Database):
    """Moving knowledge in and out: JSON Lines, docs/tasks/findings, ``.context/shared``."""

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

    # -- importers: docs, task lists, review findings -----------------------------------------

    def import_docs(self, path: str, *, now: int | None = None) -> ImportSummary:
        """Import a docs folder or file: one ``reference`` context per section, linked to it."""
        from ctxmode.exchange import importers

        return importers.import_docs(self, path, now=now)

    def import_tasks(self, path: str) -> ImportSummary:
        """Import a task list (markdown checklist or JSON); nesting makes parent tasks."""
        from ctxmode.exchange import importers

        return importers.import_tasks(self, path)

    def import_findings(self, path: str) -> ImportSummary:
        """Import review findings (JSON or markdown) as ``constraint`` contexts."""
        from ctxmode.exchange import importers

        return importers.import_findings(self, path)

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
