"""The sandbox: run code at the project root and keep bulky output out of the agent's window.

``process`` runs code in its own process group and renders its output as a terminal would;
``runs`` redacts it, indexes large output as a ``sandbox`` source, returns a digest and records
each run. The names below are the package's API for the faces (CLI, MCP).

May import: ``core``, ``knowledge``, ``search``. Never a face (``cli``, ``hooks``, ``mcp``,
``web``) or the ``store`` facade.
"""

from __future__ import annotations

from ctxmode.sandbox.process import (
    DEFAULT_TIMEOUT_S,
    MAX_CODE_CHARS,
    MAX_OUTPUT_BYTES,
    MAX_TIMEOUT_S,
    CodeRun,
    available_languages,
    resolve_language,
    terminal_text,
)
from ctxmode.sandbox.runs import (
    BATCH_INLINE_BYTES,
    INTENT_THRESHOLD_BYTES,
    MAX_BATCH_COMMANDS,
    MAX_BATCH_QUERIES,
    BatchResult,
    CommandRun,
    ExecResult,
    batch_execute,
    distinctive_terms,
    execute,
    execute_file,
    finish_run,
    run_code,
)

__all__ = [
    "BATCH_INLINE_BYTES",
    "DEFAULT_TIMEOUT_S",
    "INTENT_THRESHOLD_BYTES",
    "MAX_BATCH_COMMANDS",
    "MAX_BATCH_QUERIES",
    "MAX_CODE_CHARS",
    "MAX_OUTPUT_BYTES",
    "MAX_TIMEOUT_S",
    "BatchResult",
    "CodeRun",
    "CommandRun",
    "ExecResult",
    "available_languages",
    "batch_execute",
    "distinctive_terms",
    "execute",
    "execute_file",
    "finish_run",
    "resolve_language",
    "run_code",
    "terminal_text",
]
