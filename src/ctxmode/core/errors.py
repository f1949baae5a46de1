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
"""

from __future__ import annotations


class CtxmodeError(Exception):
    """Base class: the message is meant for the user and says how to fix the problem."""


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
