"""The one exception tree of ctxmode.

Every error the core raises is a ``CtxmodeError`` whose message says what went wrong and what
to do about it. Interfaces translate it at their edge: the CLI prints ``Error: <message>`` and
exits 1, the MCP server returns an ``isError`` tool result, hooks log and exit 0.

    CtxmodeError
    ├── InvalidInput          bad argument: unknown type/status/relation, malformed JSON ...
    │   └── PathOutsideProject
    ├── NotFound              a context, task or document id that does not exist
    └── StoreError            the database file itself
        ├── NotACtxmodeDatabase   a SQLite file written by another program
        ├── CorruptDatabase       not a database at all, or failing integrity checks
        ├── SchemaTooNew          written by a newer ctxmode
        └── StoreUnavailable      cannot be created/opened/written (permissions, disk full, locked)

An error may carry a ``hint``: what to do next, as a key of ``HINTS`` rather than words, because
the words differ by face (a CLI command and flag, an MCP tool and argument). Each face renders
it in its own words (``render``); ``str(exc)`` uses the neutral ones below.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Hint key -> what to do, in words that name no face.
HINTS: dict[str, str] = {
    "list_contexts": "list the contexts to see their ids",
    "list_tasks": "create the task first, or list the tasks to see their ids",
    "task_id": "give the task's id",
    "list_sources": "list the indexed sources to see their labels",
    "choose_store": "run from inside your project, or name the store file",
}


class CtxmodeError(Exception):
    """Base class: the message is meant for the user and says how to fix the problem;
    ``hint`` (a ``HINTS`` key) adds what to do next, in each face's words."""

    def __init__(self, *args: object, hint: str | None = None) -> None:
        super().__init__(*args)
        if hint is not None and hint not in HINTS:
            raise ValueError(f"unknown error hint {hint!r}")
        self.hint = hint

    def render(self, hints: Mapping[str, str] = HINTS) -> str:
        """The message, then the hint in the words of ``hints`` (a face's own table)."""
        message = super().__str__()
        if self.hint is None:
            return message
        return f"{message}; {hints.get(self.hint) or HINTS[self.hint]}"

    def __str__(self) -> str:
        return self.render()


class InvalidInput(CtxmodeError):
    """An argument is not acceptable; nothing was written."""


class PathOutsideProject(InvalidInput):
    """A file path resolves outside the project root."""


class NotFound(CtxmodeError):
    """A referenced context, task or document does not exist."""


class StoreError(CtxmodeError):
    """The database file cannot be used as a ctxmode store."""


class NotACtxmodeDatabase(StoreError):
    """The file is a SQLite database, but not one that ctxmode created."""


class CorruptDatabase(StoreError):
    """The file is not a readable SQLite database."""


class SchemaTooNew(StoreError):
    """The database was migrated by a newer ctxmode than this one."""


class StoreUnavailable(StoreError):
    """The database cannot be created, opened or written."""
