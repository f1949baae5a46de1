"""The closed vocabularies of the knowledge store: context types, scopes, relations, task
statuses, retrieval modes, decision fields, and the agents ctxmode plugs into.

No imports at all: ``core.models`` re-exports them beside its dataclasses, and the MCP server
lists them (``mcp.registry``) before it answers ``initialize``, where loading ``dataclasses``
and ``models`` would add about 20 ms to every agent's start.
"""

from __future__ import annotations

#: Context type -> priority tier (1 = most important).
TYPE_TIERS: dict[str, int] = {
    "constraint": 1,
    "decision": 1,
    "convention": 1,
    "interface": 1,
    "issue": 2,
    "snippet": 2,
    "reference": 3,
}
CONTEXT_TYPES: tuple[str, ...] = tuple(TYPE_TIERS)
SCOPES: tuple[str, ...] = ("global", "task", "session")
RELATIONS: tuple[str, ...] = ("defines", "uses", "modifies", "related")
TASK_STATUSES: tuple[str, ...] = ("pending", "in_progress", "blocked", "completed", "cancelled")
MODES: tuple[str, ...] = ("focused", "normal", "broad")
#: Default number of results per retrieval mode.
MODE_LIMITS: dict[str, int] = {"focused": 5, "normal": 15, "broad": 30}
#: Fields of the decision template, in the order they are rendered.
DECISION_FIELDS: tuple[str, ...] = (
    "decision",
    "background",
    "options",
    "choice",
    "rationale",
    "impact",
)

#: The agents ctxmode installs into and reads hook payloads and transcripts of.
AGENTS: tuple[str, ...] = (
    "claude-code",
    "gemini-cli",
    "codex",
    "cursor",
    "vscode",
    "opencode",
    "qwen-code",
    "copilot-cli",
    "kimi-code",
)
