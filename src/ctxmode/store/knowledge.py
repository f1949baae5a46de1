"""Knowledge use cases of ``Store``: contexts, tasks, links, retrieval, lifecycle, browsing."""

from __future__ import annotations

from ctxmode.core.db import Database

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ctxmode.core.models import (
        CleanupReport,
        Context,
        ContextDetail,
        QueryResult,
        Task,
        WriteResult,
    )


class KnowledgeCases(Database):
    """Contexts and tasks: write, read, link, retrieve, clean up."""

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

    # -- listings for browsing (the viewer) ----------------------------------------------------

    def owners(self) -> list[str]:
        """Every owner that wrote a context, alphabetically."""
        from ctxmode.knowledge import browse

        return browse.owners(self)

    def task_files(self, task_id: int) -> list[tuple[str, int]]:
        """Files linked to a task's contexts, with how many of its contexts link each one."""
        from ctxmode.knowledge import browse

        return browse.task_files(self, task_id)

    def task_context_counts(self) -> dict[int, int]:
        """Task id -> its live (not superseded) contexts, for tasks that have any."""
        from ctxmode.knowledge import browse

        return browse.task_context_counts(self)
