"""What ctxmode writes into each agent's config, and how it recognises its own entries.

Facts come from the agent protocol notes: file locations per scope, each agent's hook event
names mapped to ctxmode's (``post-tool-use`` ...), handler shapes and units (Gemini timeouts are
milliseconds, Claude/Codex/VS Code seconds), and MCP server entry shapes. Pure functions over
parsed JSON; ``ctxmode.agents.install`` does the reading, planning and writing.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxmode.agents import claude
from ctxmode.core import config
from ctxmode.core.errors import InvalidInput
from ctxmode.core.vocab import AGENTS as AGENTS

SCOPES: tuple[str, ...] = ("project", "user")
_ALIASES = {
    "claude": "claude-code",
    "gemini": "gemini-cli",
    "copilot": "vscode",
    "qwen": "qwen-code",
    "kimi": "kimi-code",
}
SERVER_NAME = "ctxmode"

#: Hook timeouts in seconds. Hooks fail open and are fast; the cap only stops a hung process.
#: session-end is short because Claude Code and Codex make the user wait for it (Codex caps it at
#: 3 s); pre-compact may rebuild a snapshot from many events.
_TIMEOUT_S = {"pre-compact": 30, "session-end": 3}
_DEFAULT_TIMEOUT_S = 10

#: (agent's event name, ctxmode's event name) per agent, from the agent protocol notes.
#: Claude Code's PreToolUse runs for the edit tools only (``MATCHERS``): it shows the knowledge
#: linked to the file about to change; its PostToolUse carries ``duration_ms`` (the latency
#: detector's input), so other tool calls are not held up by one more process.
#: The other agents report no duration, so their PreToolUse start time measures it.
EVENTS: dict[str, tuple[tuple[str, str], ...]] = {
    "claude-code": (
        ("PreToolUse", "pre-tool-use"),
        ("PostToolUse", "post-tool-use"),
        ("PostToolUseFailure", "post-tool-use-failure"),
        ("UserPromptSubmit", "user-prompt-submit"),
        ("PreCompact", "pre-compact"),
        ("SessionStart", "session-start"),
        ("Stop", "stop"),
        ("SessionEnd", "session-end"),
    ),
    "gemini-cli": (
        ("BeforeTool", "pre-tool-use"),
        ("AfterTool", "post-tool-use"),
        ("BeforeAgent", "user-prompt-submit"),
        ("PreCompress", "pre-compact"),
        ("SessionStart", "session-start"),
        ("AfterAgent", "stop"),
        ("SessionEnd", "session-end"),
    ),
    "codex": (
        ("PreToolUse", "pre-tool-use"),
        ("PostToolUse", "post-tool-use"),
        ("UserPromptSubmit", "user-prompt-submit"),
        ("PreCompact", "pre-compact"),
        ("SessionStart", "session-start"),
        ("Stop", "stop"),
        ("SessionEnd", "session-end"),
    ),
    # Cursor's before* events are permission gates; ctxmode only observes, so it uses the after*
    # events (its generic postToolUse would report shell and edit calls a second time).
    "cursor": (
        ("afterShellExecution", "post-tool-use"),
        ("afterFileEdit", "post-tool-use"),
        ("afterMCPExecution", "post-tool-use"),
        ("postToolUseFailure", "post-tool-use-failure"),
        ("beforeSubmitPrompt", "user-prompt-submit"),
        ("preCompact", "pre-compact"),
        ("sessionStart", "session-start"),
        ("stop", "stop"),
        ("sessionEnd", "session-end"),
    ),
    # Qwen Code copies Claude Code's events and payloads (tool ids are its own); SessionEnd
    # does not fire in ``qwen -p``, PreCompact and SessionStart ``compact`` do. No PreToolUse:
    # Qwen 0.24 drops its additionalContext, and PostToolUse carries ``duration_ms``.
    "qwen-code": (
        ("PostToolUse", "post-tool-use"),
        ("PostToolUseFailure", "post-tool-use-failure"),
        ("UserPromptSubmit", "user-prompt-submit"),
        ("PreCompact", "pre-compact"),
        ("SessionStart", "session-start"),
        ("Stop", "stop"),
        ("SessionEnd", "session-end"),
    ),
    "vscode": (
        ("PreToolUse", "pre-tool-use"),
        ("PostToolUse", "post-tool-use"),
        ("UserPromptSubmit", "user-prompt-submit"),
        ("PreCompact", "pre-compact"),
        ("SessionStart", "session-start"),
        ("Stop", "stop"),
    ),
    # PascalCase names: Copilot CLI then sends snake_case payloads with Claude's tool names
    # (camelCase names get camelCase payloads). Nothing fires after a compaction.
    "copilot-cli": (
        ("PreToolUse", "pre-tool-use"),
        ("PostToolUse", "post-tool-use"),
        ("PostToolUseFailure", "post-tool-use-failure"),
        ("UserPromptSubmit", "user-prompt-submit"),
        ("PreCompact", "pre-compact"),
        ("SessionStart", "session-start"),
        ("Stop", "stop"),
        ("SessionEnd", "session-end"),
    ),
    # Kimi Code: no PreToolUse (it can only block there); PostToolUse is not awaited and its
    # output ignored; SessionStart output is ignored too: context goes with the next prompt.
    "kimi-code": (
        ("PostToolUse", "post-tool-use"),
        ("PostToolUseFailure", "post-tool-use-failure"),
        ("UserPromptSubmit", "user-prompt-submit"),
        ("PreCompact", "pre-compact"),
        ("SessionStart", "session-start"),
        ("Stop", "stop"),
        ("SessionEnd", "session-end"),
    ),
}

#: (agent, agent's event) -> the matcher of ctxmode's group (none: every tool).
MATCHERS: dict[tuple[str, str], str] = {
    ("claude-code", "PreToolUse"): "Edit|Write|MultiEdit|NotebookEdit",
}
#: Claude, Gemini, Codex and Qwen nest handlers in matcher groups; Cursor and VS Code list them
#: flat.
NESTED = {"claude-code", "gemini-cli", "codex", "qwen-code"}
#: Where each agent keeps its MCP servers inside its JSON file.
SERVERS_KEY = {
    "claude-code": "mcpServers",
    "gemini-cli": "mcpServers",
    "qwen-code": "mcpServers",
    "cursor": "mcpServers",
    "vscode": "servers",
    "opencode": "mcp",
    "copilot-cli": "mcpServers",
    "kimi-code": "mcpServers",
}
#: Project files meant for one machine (the agents keep them out of git); every other project
#: file ctxmode writes is one that teams usually commit and share.
LOCAL_FILES = frozenset({".claude/settings.local.json", ".github/copilot/settings.local.json"})
PLUGIN_MARKER = "Written by `ctxmode install opencode`"
PLUGIN_PLACEHOLDER = '"__CTXMODE_PYTHON__"'


# --- agents' files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The files one agent uses in one scope."""

    hooks: Path  # where install puts hooks (the plugin file for OpenCode)
    mcp: Path  # where install registers the server
    also: tuple[Path, ...] = ()  # other files of the scope that may hold our hooks


def normalize_agent(agent: str) -> str:
    """The canonical agent name for ``agent`` (aliases: claude, gemini, copilot, qwen, kimi)."""
    name = _ALIASES.get(agent.strip().lower(), agent.strip().lower())
    if name not in AGENTS:
        raise InvalidInput(f"unknown agent {agent!r}; choose one of: {', '.join(AGENTS)}")
    return name


def check_scope(scope: str) -> str:
    """``scope`` if it is ``project`` or ``user``; else ``InvalidInput``."""
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r}; choose project or user")
    return scope


def _vscode_user_dir(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Code" / "User"
    if sys.platform == "win32":
        return home / "AppData" / "Roaming" / "Code" / "User"
    return home / ".config" / "Code" / "User"


def _opencode_config(folder: Path) -> Path:
    """``opencode.json``, or an existing ``opencode.jsonc`` when that is what the user has."""
    plain, commented = folder / "opencode.json", folder / "opencode.jsonc"
    return commented if commented.exists() and not plain.exists() else plain


def agent_layout(agent: str, scope: str, root: Path, home: Path) -> Layout:
    """Where ``agent`` keeps hooks and MCP servers for ``scope`` (see ``agents.install``)."""
    base = root if scope == "project" else home
    if agent == "claude-code":
        # Project hooks go to settings.local.json: the absolute interpreter path is specific to
        # this machine, and Claude Code keeps that file out of git.
        if scope == "project":
            return Layout(
                base / ".claude" / "settings.local.json",
                base / ".mcp.json",
                (base / ".claude" / "settings.json",),
            )
        return Layout(base / ".claude" / "settings.json", base / ".claude.json")
    if agent == "gemini-cli":
        path = base / ".gemini" / "settings.json"
        return Layout(path, path)
    if agent == "qwen-code":
        path = base / ".qwen" / "settings.json"
        return Layout(path, path)
    if agent == "codex":
        return Layout(base / ".codex" / "hooks.json", base / ".codex" / "config.toml")
    if agent == "cursor":
        return Layout(base / ".cursor" / "hooks.json", base / ".cursor" / "mcp.json")
    if agent == "copilot-cli":
        # Project hooks in the repository's git-ignored local settings (the interpreter path is
        # this machine's), not .github/hooks/, which VS Code runs as well.
        if scope == "project":
            return Layout(
                base / ".github" / "copilot" / "settings.local.json", base / ".github" / "mcp.json"
            )
        folder = config.copilot_home(home)
        return Layout(folder / "settings.json", folder / "mcp-config.json")
    if agent == "kimi-code":  # user scope only (``agents.kimi``)
        folder = config.kimi_home(home)
        return Layout(folder / "config.toml", folder / "mcp.json")
    if agent == "vscode":
        if scope == "project":
            return Layout(
                base / ".github" / "hooks" / "ctxmode.json", base / ".vscode" / "mcp.json"
            )
        return Layout(
            base / ".copilot" / "hooks" / "ctxmode.json", _vscode_user_dir(home) / "mcp.json"
        )
    folder = base if scope == "project" else base / ".config" / "opencode"
    plugins = (base / ".opencode") if scope == "project" else folder
    return Layout(plugins / "plugins" / "ctxmode.js", _opencode_config(folder))


# --- commands ---------------------------------------------------------------------------------


def is_shim(path: str) -> bool:
    """True for a pyenv shim (a shell script that re-resolves Python on every call)."""
    return "/.pyenv/shims/" in path.replace(os.sep, "/")


def resolve_interpreter(python: str | None) -> str:
    """The absolute interpreter path to write (default: the running one), or ``InvalidInput``."""
    raw = python if python is not None else sys.executable
    if not raw:
        raise InvalidInput(
            "cannot tell which Python runs ctxmode; run `/path/to/venv/bin/python -m ctxmode "
            "install ...` instead"
        )
    # abspath, not resolve: resolving a venv's bin/python would leave the venv and lose ctxmode.
    path = os.path.abspath(raw)
    if is_shim(path):
        raise InvalidInput(
            f"{path} is a pyenv shim (slow, and it may pick another Python later); run the "
            "install with the interpreter of the environment that has ctxmode, e.g. "
            "`.venv/bin/python -m ctxmode install ...`"
        )
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise InvalidInput(f"Python interpreter {path} does not exist or is not executable")
    return path


def hook_command(python: str, event: str, agent: str) -> str:
    """The shell command line of one hook.

    A single command string rather than Claude's exec-form ``args``: VS Code also reads
    ``.claude/settings*.json`` and ignores ``args``, and so do older Claude Code releases;
    either would run the bare interpreter with the payload on stdin as a script.
    """
    return f"{shlex.quote(python)} -m ctxmode hook {event} --agent {agent}"


def handler(agent: str, python: str, event: str, in_agent: bool = False) -> dict[str, Any]:
    """One hook handler entry in ``agent``'s own shape (``in_agent``: Claude Code's
    ``mcp_tool`` handler into the running server, see ``agents.claude``)."""
    command = hook_command(python, event, agent)
    timeout = _TIMEOUT_S.get(event, _DEFAULT_TIMEOUT_S)
    if in_agent:
        return claude.in_agent_handler(event, timeout)
    if agent == "gemini-cli":  # milliseconds; the name lets users list it in hooks.disabled
        return {
            "type": "command",
            "command": command,
            "name": f"ctxmode-{event}",
            "timeout": timeout * 1000,
        }
    if agent == "qwen-code":  # seconds (values of 1000 or more are read as milliseconds)
        return {
            "type": "command",
            "command": command,
            "name": f"ctxmode-{event}",
            "timeout": timeout,
        }
    if agent == "copilot-cli":
        return {"type": "command", "command": command, "timeoutSec": timeout}
    if agent == "cursor":  # timeout units are undocumented for Cursor: keep its default
        return {"command": command}
    return {"type": "command", "command": command, "timeout": timeout}


def server_entry(agent: str, python: str) -> dict[str, Any]:
    """The ``ctxmode`` MCP server entry in ``agent``'s own shape."""
    args = ["-m", "ctxmode", "serve"]
    if agent in ("claude-code", "vscode"):
        return {"type": "stdio", "command": python, "args": args}
    if agent == "opencode":
        return {"type": "local", "command": [python, *args], "enabled": True}
    if agent == "codex":  # Codex's 10 s default start-up timeout is too short for a cold start
        return {"command": python, "args": args, "startup_timeout_sec": 30}
    return {"command": python, "args": args}


def _tokens(handler: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("command", "bash", "linux", "osx"):
        value = handler.get(key)
        if isinstance(value, str):
            try:
                out += shlex.split(value)
            except ValueError:
                out += value.split()
            break
    args = handler.get("args")
    if isinstance(args, list):
        out += [a for a in args if isinstance(a, str)]
    return out


def is_ours(handler: Any) -> bool:
    """True for a hook handler that runs ``ctxmode hook`` (any interpreter, any launcher), or
    Claude Code's in-agent handler calling ctxmode's ``record_hook``."""
    if not isinstance(handler, dict):
        return False
    if claude.is_in_agent(handler):
        return True
    tokens = _tokens(handler)
    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token == "-m" and nxt.startswith("ctxmode."):
            return nxt.startswith(("ctxmode.hook", "ctxmode.hooks"))
        if token == "-m" and nxt == "ctxmode":
            return tokens[i + 2 : i + 3] == ["hook"]
        if os.path.basename(token) == "ctxmode" and nxt == "hook":
            return True
    return False


def handler_python(handler: dict[str, Any]) -> str | None:
    """The interpreter a ctxmode hook handler runs, if it names one."""
    tokens = _tokens(handler)
    return tokens[0] if tokens and os.path.basename(tokens[0]) != "ctxmode" else None


# --- editing parsed JSON ----------------------------------------------------------------------


def child_dict(doc: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """``doc[key]``, created empty if missing; ``InvalidInput`` if it is not an object."""
    value = doc.setdefault(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(f'{path}: "{key}" must be a JSON object; fix it and run again')
    return value


def _strip(entries: list[Any], nested: bool) -> tuple[list[Any], int | None]:
    """Entries without our handlers, and the index where the first of ours was."""
    kept: list[Any] = []
    at: int | None = None
    for entry in entries:
        if nested and isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
            others = [h for h in entry["hooks"] if not is_ours(h)]
            if len(others) == len(entry["hooks"]):
                kept.append(entry)
                continue
            at = len(kept) if at is None else at
            if others:
                kept.append({**entry, "hooks": others})
        elif not nested and is_ours(entry):
            at = len(kept) if at is None else at
        else:
            kept.append(entry)
    return kept, at


def drop_hooks(
    doc: dict[str, Any], nested: bool, keep: frozenset[str] = frozenset(), prune: bool = True
) -> int:
    """Remove our handlers from every event not in ``keep``; return how many events changed.

    With ``prune``, a ``hooks`` object left empty is removed too.
    """
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    changed = 0
    for event in list(hooks):
        entries = hooks[event]
        if event in keep or not isinstance(entries, list):
            continue
        kept, at = _strip(entries, nested)
        if at is None:
            continue
        changed += 1
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if prune and changed and not hooks:
        del doc["hooks"]
    return changed


def put_hooks(
    doc: dict[str, Any], path: Path, agent: str, python: str, in_agent: bool = False
) -> None:
    """Set ctxmode's handlers in ``doc`` (a hooks file of ``agent``), in place of old ones;
    ``in_agent``: Claude Code's events of ``claude.IN_AGENT_EVENTS`` as in-agent handlers."""
    nested = agent in NESTED
    if agent == "cursor":
        doc.setdefault("version", 1)
    hooks = child_dict(doc, "hooks", path)
    wanted: dict[str, list[dict[str, Any]]] = {}
    for agent_event, event in EVENTS[agent]:
        inside = in_agent and agent_event in claude.IN_AGENT_EVENTS
        wanted.setdefault(agent_event, []).append(handler(agent, python, event, inside))
    drop_hooks(doc, nested, keep=frozenset(wanted), prune=False)
    for agent_event, handlers in wanted.items():
        entries = hooks.get(agent_event, [])
        if not isinstance(entries, list):
            raise InvalidInput(
                f'{path}: hooks "{agent_event}" must be a list; fix it and run again'
            )
        kept, at = _strip(entries, nested)
        matcher = MATCHERS.get((agent, agent_event))
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        ours: list[Any] = [{**group, "hooks": handlers}] if nested else handlers
        at = len(kept) if at is None else at
        hooks[agent_event] = kept[:at] + ours + kept[at:]


def put_server(doc: dict[str, Any], path: Path, agent: str, python: str) -> None:
    """Set the ``ctxmode`` server entry in ``doc``."""
    servers = child_dict(doc, SERVERS_KEY[agent], path)
    entry = server_entry(agent, python)
    current = servers.get(SERVER_NAME)
    # Keep keys the user added to our entry (env, trust ...); ours win where both exist.
    servers[SERVER_NAME] = {**current, **entry} if isinstance(current, dict) else entry


def drop_server(doc: dict[str, Any], agent: str) -> bool:
    """Remove the ``ctxmode`` server entry; True if there was one."""
    key = SERVERS_KEY[agent]
    servers = doc.get(key)
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return False
    del servers[SERVER_NAME]
    if not servers:
        del doc[key]
    return True
