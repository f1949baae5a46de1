"""ctxmode: a local context layer for AI coding agents.

The public API is what ``__all__`` lists; everything else may change without notice.
"""

from __future__ import annotations

# The hook entry point imports this package on every tool call: no ``typing`` at run time.
TYPE_CHECKING = False  # mypy reads it as true (see ``ctxmode.core._lean``)
if TYPE_CHECKING:
    from typing import Any

    from ctxmode.core.errors import (
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
    from ctxmode.core.models import (
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

# Names resolve on first use (PEP 562): the hook entry point imports this package on every
# tool call of an agent and must not pay for modules it does not need.
_LAZY = {
    "core.errors": (
        "CorruptDatabase", "CtxmodeError", "InvalidInput", "NotACtxmodeDatabase", "NotFound",
        "PathOutsideProject", "SchemaTooNew", "StoreError", "StoreUnavailable",
    ),
    "core.models": (
        "CONTEXT_TYPES", "MODES", "RELATIONS", "SCOPES", "TASK_STATUSES", "CleanupReport",
        "Context", "ContextDetail", "Pack", "QueryResult", "RankedItem", "Task", "WriteResult",
    ),
    "store": ("Store",),
}  # fmt: skip
_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxmode' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"ctxmode.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


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
