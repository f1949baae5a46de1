"""Kimi Code's hooks: ``[[hooks]]`` tables in ``$KIMI_CODE_HOME/config.toml`` (default
``~/.kimi-code``), checked against Kimi Code 2.1.0.

Each table holds ``event``, ``matcher``, ``command`` and ``timeout`` (seconds, 1-600) and
nothing else (Kimi Code rejects the whole config for another key). Kimi Code reads hooks from
this user file only (no project hooks), so ctxmode installs them in user scope; its MCP
servers are in ``$KIMI_CODE_HOME/mcp.json`` (``mcpServers``). ctxmode's tables are found by
their ``-m ctxmode hook`` command and replaced in place of the old ones, appended at the end;
every other line of the file, comments included, stays as written (``files.toml_set_array``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxmode.agents.files import load_toml, read_text, toml_set_array
from ctxmode.agents.specs import EVENTS, handler_python, hook_command, is_ours

TIMEOUT_S = {"pre-compact": 30}
DEFAULT_TIMEOUT_S = 10


def entries(python: str) -> list[dict[str, Any]]:
    """ctxmode's ``[[hooks]]`` tables, in order."""
    return [
        {
            "event": agent_event,
            "command": hook_command(python, event, "kimi-code"),
            "timeout": TIMEOUT_S.get(event, DEFAULT_TIMEOUT_S),
        }
        for agent_event, event in EVENTS["kimi-code"]
    ]


def plan(path: Path, python: str, *, uninstall: bool) -> tuple[str | None, str | None]:
    """``(old text, new text)`` of the config with ctxmode's hook tables set (or removed);
    ``InvalidInput`` (nothing to write) for a file ctxmode cannot edit safely."""
    old = read_text(path)
    if uninstall and old is None:
        return None, None
    new = toml_set_array(path, old, "hooks", [] if uninstall else entries(python), is_ours)
    return old, new


def installed(path: Path) -> tuple[set[str], list[str]]:
    """Kimi events that run ctxmode's hook in ``path``, and the interpreters they name;
    ``CtxmodeError`` for a file that does not parse."""
    doc = load_toml(path, read_text(path)) or {}
    hooks = doc.get("hooks")
    events: set[str] = set()
    pythons: list[str] = []
    for entry in hooks if isinstance(hooks, list) else []:
        if isinstance(entry, dict) and is_ours(entry):
            events.add(str(entry.get("event")))
            python = handler_python(entry)
            if python:
                pythons.append(python)
    return events, pythons
