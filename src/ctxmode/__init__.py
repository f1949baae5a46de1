"""ctxmode: a local context layer for AI coding agents.

The public API is what ``__all__`` lists; everything else may change without notice.
"""

from ctxmode.errors import (
    CorruptDatabase,
    CtxmodeError,
    InvalidInput,
    NotACtxmodeDatabase,
    NotFound,
    PathOutsideProject,
    SchemaTooNew,
    StoreError,
    StoreUnavailable,
)
from ctxmode.models import (
    CONTEXT_TYPES,
    MODES,
    RELATIONS,
    SCOPES,
    TASK_STATUSES,
    CleanupReport,
    Context,
    ContextDetail,
    Pack,
    QueryResult,
    RankedItem,
    Task,
    WriteResult,
)
from ctxmode.store import Store

__version__ = "0.1.0"

__all__ = [
    "CONTEXT_TYPES",
    "CleanupReport",
    "Context",
    "ContextDetail",
    "CorruptDatabase",
    "CtxmodeError",
    "InvalidInput",
    "MODES",
    "NotACtxmodeDatabase",
    "NotFound",
    "Pack",
    "PathOutsideProject",
    "QueryResult",
    "RELATIONS",
    "RankedItem",
    "SCOPES",
    "SchemaTooNew",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "TASK_STATUSES",
    "Task",
    "WriteResult",
    "__version__",
]
