"""Codex's trust of a project and of its hooks, computed the way Codex 0.171 computes it.

Codex ignores ``.codex/`` in a project it does not trust (``[projects."<root>"] trust_level =
"trusted"`` in ``$CODEX_HOME/config.toml``) and silently skips every hook nobody reviewed:
``/hooks`` in its TUI records ``[hooks.state."<key>"] trusted_hash = "sha256:..."`` per hook,
where ``key = "<hooks.json path>:<event_snake>:<group>:<handler>"`` and the hash is SHA-256 of
the handler's identity as compact, key-sorted JSON (so a changed command needs trusting again).
Verified against ``codex app-server``'s ``hooks/list`` in ``tests/e2e/test_codex.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

#: Events whose group matcher is part of the identity (Codex drops it for the others).
_MATCHER_EVENTS = frozenset(
    {
        "pre_tool_use",
        "permission_request",
        "post_tool_use",
        "session_start",
        "pre_compact",
        "post_compact",
        "subagent_start",
        "subagent_stop",
    }
)
MANUAL_STEP = "or open Codex in the project, trust it and review the hooks with /hooks"


def snake(event: str) -> str:
    """``PostToolUse`` -> ``post_tool_use``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def handler_hash(event: str, handler: dict[str, Any], matcher: Any) -> str:
    """``sha256:<hex>`` of one command handler's identity."""
    timeout = handler.get("timeout", handler.get("timeoutSec"))
    hook: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": max(int(timeout) if isinstance(timeout, int | float) else 600, 1),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        hook["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event, "hooks": [hook]}
    if matcher is not None and event in _MATCHER_EVENTS:
        identity["matcher"] = matcher
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


def hook_hashes(hooks_path: Path, doc: dict[str, Any], only_ours: bool = True) -> dict[str, str]:
    """``{key: trusted_hash}`` for the command hooks of a parsed ``hooks.json``."""
    from ctxmode.agents.specs import is_ours

    out: dict[str, str] = {}
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        name = snake(event)
        for gi, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            for hi, handler in enumerate(group["hooks"]):
                if not isinstance(handler, dict) or handler.get("type", "command") != "command":
                    continue
                if only_ours and not is_ours(handler):
                    continue
                key = f"{hooks_path}:{name}:{gi}:{hi}"
                out[key] = handler_hash(name, handler, group.get("matcher"))
    return out


def trust_tables(
    hooks_path: Path, doc: dict[str, Any], project_root: Path | None
) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """The ``config.toml`` tables that make Codex run ctxmode's hooks (and read the project)."""
    tables: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    if project_root is not None:
        tables.append((("projects", str(project_root)), {"trust_level": "trusted"}))
    for key, digest in hook_hashes(hooks_path, doc).items():
        tables.append((("hooks", "state", key), {"trusted_hash": digest}))
    return tables


def problems(
    hooks_path: Path, doc: dict[str, Any], config: dict[str, Any], project_root: Path | None
) -> list[str]:
    """What keeps Codex from running ctxmode's hooks in ``hooks_path``, with the fix."""
    scope = "" if project_root is not None else " --scope user"
    fix = f"run `ctxmode install codex --trust{scope}`, " + MANUAL_STEP
    out: list[str] = []
    if project_root is not None:
        projects = config.get("projects")
        entry = projects.get(str(project_root)) if isinstance(projects, dict) else None
        if not (isinstance(entry, dict) and entry.get("trust_level") == "trusted"):
            out.append(
                f"Codex does not trust {project_root}, so it ignores .codex/ (hooks and MCP "
                f"server); {fix}"
            )
    hooks = config.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    state = state if isinstance(state, dict) else {}
    wanted = hook_hashes(hooks_path, doc)
    untrusted = [
        key
        for key, digest in wanted.items()
        if not (isinstance(state.get(key), dict) and state[key].get("trusted_hash") == digest)
    ]
    if untrusted:
        out.append(
            f"{len(untrusted)} of {len(wanted)} ctxmode hooks in {hooks_path} are installed but "
            f"not trusted by Codex (never reviewed, or changed since), so Codex skips them; {fix}"
        )
    return out
