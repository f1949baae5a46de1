"""Claude Code's two kinds of hook handler, and which one an install writes.

- ``command``: a ``ctxmode hook`` process per call; every Claude Code version runs it.
- ``in-agent``: ``"type": "mcp_tool"`` handlers, calls of the hidden ``record_hook`` tool of the
  ``ctxmode serve`` Claude Code is already connected to (``hooks.in_agent`` records them with
  the command hooks' own path). No process per tool call. Claude Code runs them from 2.1.118;
  an older one ignores *every* hook of a settings file holding one (measured on 2.1.117: not
  even the command hooks beside it ran), so ``auto`` writes them only when it finds a Claude
  Code that is new enough. SessionStart (fired before servers connect: "mcp_tool hooks are
  not available for the 'SessionStart' hook event"), PreCompact and SessionEnd ("MCP server
  not connected" at exit) stay commands.

Claude Code fills a handler's ``input`` by ``${field}`` substitution from the hook payload
(measured on 2.1.332): inside string values only; an object or array field becomes its compact
JSON text, a scalar its string form, a missing field ``""``; no whole-payload form. ``TEMPLATE``
asks for every field the Claude Code adapter reads; ``hooks.in_agent`` turns the substituted
values back into the payload.

A project's ``.mcp.json`` server runs only once approved, and in-agent hooks record nothing
without it: the in-agent install approves ``ctxmode`` in ``.claude/settings.local.json``
(``enabledMcpjsonServers``, the list Claude Code's own approval dialog writes). Standard
library only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Literal

#: The first Claude Code release that runs ``mcp_tool`` hook handlers.
MIN_IN_AGENT = (2, 1, 118)
#: Claude Code events whose ctxmode hook can run inside the agent.
IN_AGENT_EVENTS = frozenset(
    {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop"}
)
SERVER = "ctxmode"
RECORD_TOOL = "record_hook"
HookKind = Literal["command", "in-agent"]
HOOK_CHOICES = ("auto", "in-agent", "command")

#: Payload fields passed through ``${...}``: every field the Claude Code adapter reads.
FIELDS = (
    "hook_event_name",
    "session_id",
    "transcript_path",
    "cwd",
    "tool_name",
    "tool_use_id",
    "tool_input",
    "tool_response",
    "error",
    "is_interrupt",
    "duration_ms",
    "prompt",
    "last_assistant_message",
    "stop_hook_active",
)
#: Fields whose value is an object (or array) in the payload: substituted as JSON text.
JSON_FIELDS = frozenset({"tool_input", "tool_response"})
INT_FIELDS = frozenset({"duration_ms"})
BOOL_FIELDS = frozenset({"is_interrupt", "stop_hook_active"})
#: The ``payload`` of a handler's ``input``; Claude Code substitutes each value.
TEMPLATE: dict[str, str] = {name: "${" + name + "}" for name in FIELDS}


def in_agent_handler(event: str, timeout: int) -> dict[str, Any]:
    """The ``mcp_tool`` handler recording ``event`` (ctxmode's name) in the running server."""
    return {
        "type": "mcp_tool",
        "server": SERVER,
        "tool": RECORD_TOOL,
        "input": {"event": event, "agent": "claude-code", "payload": dict(TEMPLATE)},
        "timeout": timeout,
    }


def is_in_agent(handler: Any) -> bool:
    """True for an ``mcp_tool`` handler calling ctxmode's ``record_hook``."""
    return (
        isinstance(handler, dict)
        and handler.get("type") == "mcp_tool"
        and handler.get("server") == SERVER
        and handler.get("tool") == RECORD_TOOL
    )


# --- which Claude Code is installed -------------------------------------------------------------


def find_executable(home: Path) -> str | None:
    """The ``claude`` the user runs: ``$CTXMODE_CLAUDE``, else on PATH, else where its
    installers put it."""
    from ctxmode.core import config

    chosen = config.claude_executable()
    if chosen:
        return chosen if os.path.isfile(chosen) and os.access(chosen, os.X_OK) else None
    found = shutil.which("claude")
    if found:
        return found
    for candidate in (home / ".claude" / "local" / "claude", home / ".local" / "bin" / "claude"):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``2.1.332 (Claude Code)`` -> (2, 1, 332)."""
    match = re.search(r"\b(\d+)\.(\d+)\.(\d+)\b", text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def installed_version(home: Path) -> tuple[str, tuple[int, int, int]] | None:
    """(executable, version) of the installed Claude Code, or None when none answers."""
    exe = find_executable(home)
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "--version"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    version = parse_version(proc.stdout) if proc.returncode == 0 else None
    return (exe, version) if version else None


def shown(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def choose(requested: str, home: Path) -> tuple[HookKind, str]:
    """The handler kind to write for ``requested`` (auto, in-agent, command), and why."""
    minimum = shown(MIN_IN_AGENT)
    if requested == "command":
        return "command", "command hooks, as asked (--hooks command)"
    if requested == "in-agent":
        return "in-agent", "in-agent hooks, as asked (--hooks in-agent; needs Claude Code " + (
            f">= {minimum})"
        )
    found = installed_version(home)
    if found is None:
        return "command", (
            "command hooks: no Claude Code found to check for in-agent hooks (>= "
            f"{minimum}); after installing it, run the install again"
        )
    exe, version = found
    if version < MIN_IN_AGENT:
        return "command", (
            f"command hooks: Claude Code {shown(version)} ({exe}) predates in-agent hooks "
            f"({minimum}); after updating it, run the install again"
        )
    return "in-agent", f"in-agent hooks: Claude Code {shown(version)} ({exe}) runs them"


# --- the project server's approval ---------------------------------------------------------------


def approve(doc: dict[str, Any]) -> None:
    """List ctxmode in ``enabledMcpjsonServers`` of a ``settings.local.json`` document."""
    approved = doc.get("enabledMcpjsonServers")
    if not isinstance(approved, list):
        approved = []
    if SERVER not in approved:
        doc["enabledMcpjsonServers"] = [*approved, SERVER]


def unapprove(doc: dict[str, Any]) -> None:
    """Take ctxmode out of ``enabledMcpjsonServers`` (the server is being removed)."""
    approved = doc.get("enabledMcpjsonServers")
    if isinstance(approved, list) and SERVER in approved:
        rest = [name for name in approved if name != SERVER]
        if rest:
            doc["enabledMcpjsonServers"] = rest
        else:
            del doc["enabledMcpjsonServers"]


def refused(docs: list[dict[str, Any]]) -> bool:
    """Whether one of these settings documents rejects the project's ctxmode server."""
    for doc in docs:
        rejected = doc.get("disabledMcpjsonServers")
        if isinstance(rejected, list) and SERVER in rejected:
            return True
    return False


def approved(docs: list[dict[str, Any]]) -> bool:
    """Whether one of these settings documents approves the project's ctxmode server."""
    for doc in docs:
        if doc.get("enableAllProjectMcpServers") is True:
            return True
        listed = doc.get("enabledMcpjsonServers")
        if isinstance(listed, list) and SERVER in listed:
            return True
    return False


# --- what stops in-agent hooks from recording -------------------------------------------------


def _doc(path: Path) -> dict[str, Any]:
    """A settings file's JSON object; ``{}`` when missing or unreadable (reported elsewhere)."""
    from ctxmode.agents.files import load_json_object, read_text
    from ctxmode.core.errors import CtxmodeError

    try:
        return load_json_object(path, read_text(path)) or {}
    except CtxmodeError:
        return {}


def has_in_agent(doc: dict[str, Any]) -> bool:
    hooks = doc.get("hooks")
    groups = (
        [g for v in hooks.values() if isinstance(v, list) for g in v]
        if isinstance(hooks, dict)
        else []
    )
    return any(
        is_in_agent(h)
        for g in groups
        if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        for h in g["hooks"]
    )


def _has_server(doc: dict[str, Any]) -> bool:
    servers = doc.get("mcpServers")
    return isinstance(servers, dict) and isinstance(servers.get(SERVER), dict)


def problems(root: Path, home: Path) -> list[str]:
    """In-agent hooks that Claude Code will not run, or that find no server to call."""
    settings = {
        path: _doc(path)
        for path in (
            root / ".claude" / "settings.local.json",
            root / ".claude" / "settings.json",
            home / ".claude" / "settings.json",
        )
    }
    files = [path for path, doc in settings.items() if has_in_agent(doc)]
    if not files:
        return []
    out: list[str] = []
    found = installed_version(home)
    if found is not None and found[1] < MIN_IN_AGENT:
        exe, version = found
        out += [
            f"Claude Code {shown(version)} ({exe}) ignores every hook in {path}: it predates "
            f"in-agent hooks ({shown(MIN_IN_AGENT)}); update Claude Code, or run `ctxmode "
            "install claude-code --hooks command`"
            for path in files
        ]
    user = _doc(home / ".claude.json")
    if (
        _has_server(user)
        or local_server(user, root) is not None
        or not _has_server(_doc(root / ".mcp.json"))
    ):
        return out  # a user or local-scope server always runs; a missing one: reported elsewhere
    choices = list(settings.values())
    legacy = user.get("projects")
    if isinstance(legacy, dict) and isinstance(legacy.get(str(root)), dict):
        choices.append(legacy[str(root)])  # where older Claude Code kept approvals
    fix = (
        "in-agent hooks record nothing until the project's MCP server 'ctxmode' runs; "
        "run `ctxmode install claude-code` (it approves the server) or approve it with /mcp"
    )
    if refused(choices):
        out.append(f"Claude Code was told not to run the project's server 'ctxmode': {fix}")
    elif not approved(choices):
        out.append(f"Claude Code has not approved the project's server 'ctxmode': {fix}")
    return out


# --- the project's server: a committable entry, and this machine's own ------------------------

#: The project-scope (``.mcp.json``) entry: ``ctxmode serve`` from PATH names nothing of this
#: machine, so the file can be committed; every clone runs whichever ctxmode its user has.
PORTABLE_SERVER: dict[str, Any] = {"type": "stdio", "command": "ctxmode", "args": ["serve"]}


def project_key(root: Path) -> str:
    """How ``~/.claude.json`` names the project: its real path (Claude Code keys ``projects``
    by the git root, measured on 2.1.332: a session started in a subfolder uses it too)."""
    return os.path.realpath(root)


def is_portable(entry: Any) -> bool:
    """True for a server entry that runs ``ctxmode`` by name (no path of this machine)."""
    command = entry.get("command") if isinstance(entry, dict) else None
    return isinstance(command, str) and command == "ctxmode"


def local_server(doc: dict[str, Any], root: Path) -> dict[str, Any] | None:
    """The project's local-scope ``ctxmode`` entry in a ``~/.claude.json`` document."""
    projects = doc.get("projects")
    project = projects.get(project_key(root)) if isinstance(projects, dict) else None
    servers = project.get("mcpServers") if isinstance(project, dict) else None
    entry = servers.get(SERVER) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def put_local_server(doc: dict[str, Any], root: Path, entry: dict[str, Any]) -> None:
    """Set the project's local-scope ``ctxmode`` entry (what ``claude mcp add --scope local``
    writes): Claude Code prefers it to ``.mcp.json``'s, needs no approval for it, and keeps it
    out of the repository."""
    from ctxmode.core.errors import InvalidInput

    projects = doc.setdefault("projects", {})
    if not isinstance(projects, dict):
        raise InvalidInput('~/.claude.json: "projects" must be a JSON object; fix it and run again')
    project = projects.setdefault(project_key(root), {})
    servers = project.setdefault("mcpServers", {}) if isinstance(project, dict) else None
    if not isinstance(servers, dict):
        raise InvalidInput(
            f"~/.claude.json: the mcpServers of {project_key(root)} must be a JSON object; "
            "fix it and run again"
        )
    current = servers.get(SERVER)
    servers[SERVER] = {**current, **entry} if isinstance(current, dict) else entry


def drop_local_server(doc: dict[str, Any], root: Path) -> None:
    """Remove the project's local-scope ``ctxmode`` entry, and what it alone made (an empty
    ``mcpServers``, project or ``projects``)."""
    projects = doc.get("projects")
    key = project_key(root)
    project = projects.get(key) if isinstance(projects, dict) else None
    servers = project.get("mcpServers") if isinstance(project, dict) else None
    if not isinstance(servers, dict) or SERVER not in servers:
        return
    del servers[SERVER]
    assert isinstance(projects, dict) and isinstance(project, dict)
    if not servers and set(project) == {"mcpServers"}:
        del projects[key]
        if not projects:
            del doc["projects"]
