"""Whether ctxmode is wired into an agent, in either scope, and what stops it from running
(``ctxmode agents``, ``ctxmode doctor``); reads the files ``agents.install`` writes, never raises
for a bad one."""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ctxmode.agents import claude
from ctxmode.agents.files import load_json_object, load_toml, read_text
from ctxmode.agents.specs import (
    EVENTS,
    NESTED,
    PLUGIN_MARKER,
    SCOPES,
    SERVER_NAME,
    SERVERS_KEY,
    agent_layout,
    handler_python,
    is_ours,
    is_shim,
    normalize_agent,
)
from ctxmode.core import config
from ctxmode.core.errors import CtxmodeError


@dataclass(frozen=True)
class AgentStatus:
    """Whether ctxmode is wired into an agent, in either scope, and what is wrong with it.

    ``config_paths`` are the files that hold ctxmode entries; ``interpreter`` is the Python those
    entries run (hooks first, else the MCP server), None when nothing is installed.
    """

    agent: str
    hooks_installed: bool
    mcp_installed: bool
    config_paths: tuple[str, ...]
    interpreter: str | None
    interpreter_exists: bool
    problems: tuple[str, ...]
    #: How the hooks run: "command", or "in-agent" (Claude Code's mcp_tool handlers); None
    #: when no hooks are installed.
    hook_kind: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["config_paths"] = list(self.config_paths)
        data["problems"] = list(self.problems)
        return data


def _read_json_leniently(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        return load_json_object(path, read_text(path))
    except CtxmodeError as exc:
        problems.append(str(exc))
        return None


def _our_hooks(doc: dict[str, Any], nested: bool) -> tuple[set[str], list[str]]:
    """Agent events that run our hook, and the interpreters those handlers use."""
    events: set[str] = set()
    pythons: list[str] = []
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return events, pythons
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            continue
        handlers: list[Any] = []
        for entry in entries:
            if nested and isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
                handlers += entry["hooks"]
            elif not nested:
                handlers.append(entry)
        for handler in handlers:
            if is_ours(handler):
                events.add(event)
                python = handler_python(handler)
                if python:
                    pythons.append(python)
    return events, pythons


def _server_python(agent: str, path: Path, problems: list[str]) -> tuple[bool, str | None]:
    """Whether ``path`` registers our server, and the interpreter it runs."""
    if agent == "codex":
        try:
            doc = load_toml(path, read_text(path))
        except CtxmodeError as exc:
            problems.append(str(exc))
            return False, None
        servers = (doc or {}).get("mcp_servers")
    else:
        data = _read_json_leniently(path, problems)
        servers = (data or {}).get(SERVERS_KEY[agent])
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if not isinstance(entry, dict):
        return False, None
    command = entry.get("command")
    if isinstance(command, list):
        command = command[0] if command else None
    return True, command if isinstance(command, str) else None


def _claude_project_server(
    root: Path,
    home: Path,
    found: bool,
    command: str | None,
    paths: list[str],
    problems: list[str],
) -> tuple[bool, str | None]:
    """Claude Code's project server: ``.mcp.json``'s entry (``found``, its ``command``) and the
    project's local-scope entry in ``~/.claude.json``, which wins; (registered, interpreter)."""
    local_path = home / ".claude.json"
    local = claude.local_server(_read_json_leniently(local_path, []) or {}, root)
    python = local.get("command") if local is not None else None
    if local is not None:
        paths.append(str(local_path))
    mcp = root / ".mcp.json"
    if found and command and not claude.is_portable({"command": command}):
        problems.append(
            f"{mcp} runs ctxmode by this machine's path ({command}), and teams commit that file: "
            "a teammate's Claude Code cannot start it; run `ctxmode install claude-code` (it "
            "writes `ctxmode serve` there and keeps this path in ~/.claude.json)"
        )
        python = python or command
    elif found and local is None and shutil.which("ctxmode") is None:
        problems.append(
            f"{mcp} runs `ctxmode serve` from PATH and no ctxmode is on PATH here: run "
            "`ctxmode install claude-code` with the ctxmode you use (it registers its "
            "interpreter for this project in ~/.claude.json), or put ctxmode on PATH"
        )
    return found or local is not None, python if isinstance(python, str) else None


def _plugin_python(path: Path, problems: list[str]) -> tuple[bool, str | None]:
    try:
        text = read_text(path)
    except CtxmodeError as exc:
        problems.append(str(exc))
        return False, None
    if text is None or PLUGIN_MARKER not in text:
        return False, None
    match = re.search(r"^const PYTHON = (\".*\");$", text, re.MULTILINE)
    if not match:
        problems.append(f"{path}: cannot find the interpreter; run `ctxmode install opencode`")
        return True, None
    value = json.loads(match.group(1))
    return True, value if isinstance(value, str) else None


def _agent_notes(agent: str, root: Path, home: Path, problems: list[str]) -> None:
    """Agent-specific settings that silently stop our hooks from running."""
    if agent == "gemini-cli":
        for path in (root / ".gemini" / "settings.json", home / ".gemini" / "settings.json"):
            doc = _read_json_leniently(path, []) or {}
            hooks_config, tools = doc.get("hooksConfig"), doc.get("tools")
            if (isinstance(hooks_config, dict) and hooks_config.get("enabled") is False) or (
                isinstance(tools, dict) and tools.get("enableHooks") is False
            ):
                problems.append(f"{path} turns Gemini CLI hooks off")
        settings = root / ".gemini" / "settings.json"  # user-scope settings need no trust
        if (
            _our_hooks(_read_json_leniently(settings, []) or {}, True)[0]
            or _server_python(agent, settings, [])[0]
        ):
            from ctxmode.agents import gemini_trust

            problems += gemini_trust.problems(root, home)
    if agent == "codex":
        from ctxmode.agents import trust

        config_path = config.codex_home(home) / "config.toml"
        try:
            codex_config = load_toml(config_path, read_text(config_path)) or {}
        except CtxmodeError as exc:
            problems.append(str(exc))
            codex_config = {}
        for scope, hooks_path in (("project", root / ".codex" / "hooks.json"),
                                  ("user", home / ".codex" / "hooks.json")):  # fmt: skip
            doc = _read_json_leniently(hooks_path, []) or {}
            if _our_hooks(doc, True)[0]:
                project = root if scope == "project" else None
                problems += trust.problems(hooks_path, doc, codex_config, project)
    if agent == "qwen-code":
        from ctxmode.agents import qwen

        problems += qwen.problems(root, home)
    if agent == "copilot-cli":
        from ctxmode.agents import copilot

        files = agent_layout(agent, "project", root, home)
        doc = _read_json_leniently(files.hooks, []) or {}
        installed = bool(_our_hooks(doc, False)[0]) or _server_python(agent, files.mcp, [])[0]
        problems += copilot.problems(root, home, installed)
    if agent == "claude-code":
        problems += claude.problems(root, home)
    if agent == "vscode":
        for path in (root / ".claude" / "settings.json", root / ".claude" / "settings.local.json"):
            doc = _read_json_leniently(path, []) or {}
            if _our_hooks(doc, True)[0]:
                problems.append(
                    f"VS Code also runs the Claude Code hooks in {path}, so it records events "
                    "twice; turn off chat.hookFilesLocations for .claude or uninstall one of them"
                )


def _install_command(agent: str) -> str:
    """The command that installs ``agent`` (Kimi Code: user scope only)."""
    return f"ctxmode install {agent}" + (" --scope user" if agent == "kimi-code" else "")


def status(agent: str, *, project_root: Path, home: Path | None = None) -> AgentStatus:
    """How ctxmode is wired into ``agent`` across both scopes; never raises for bad config files
    (they are reported in ``problems``)."""
    agent = normalize_agent(agent)
    root = Path(project_root).absolute()
    home_path = Path(home).absolute() if home is not None else config.home_dir()
    problems: list[str] = []
    paths: list[str] = []
    hook_pythons: list[str] = []
    server_pythons: list[str] = []
    hooks_ok = mcp_ok = in_agent = False
    nested = agent in NESTED
    expected = {event for event, _ in EVENTS.get(agent, ())}
    seen: set[Path] = set()
    for scope in SCOPES:
        layout = agent_layout(agent, scope, root, home_path)
        hook_files = [p for p in (layout.hooks, *layout.also) if p not in seen]
        for path in hook_files:
            seen.add(path)
            if agent == "opencode":
                found, python = _plugin_python(path, problems)
                hooks_ok = hooks_ok or found
                events: set[str] = {"plugin"} if found else set()
                pythons = [python] if python else []
            elif agent == "kimi-code":
                from ctxmode.agents import kimi

                try:
                    events, pythons = kimi.installed(path)
                except CtxmodeError as exc:
                    problems.append(str(exc))
                    events, pythons = set(), []
                hooks_ok = hooks_ok or bool(events and expected <= events)
            else:
                doc = _read_json_leniently(path, problems) or {}
                events, pythons = _our_hooks(doc, nested)
                in_agent = in_agent or (agent == "claude-code" and claude.has_in_agent(doc))
                if events and not expected <= events:
                    missing = ", ".join(sorted(expected - events))
                    problems.append(
                        f"{path}: ctxmode hooks missing for {missing}; run "
                        f"`ctxmode install {agent} --scope {scope}`"
                    )
                hooks_ok = hooks_ok or bool(events and expected <= events)
            if events:
                paths.append(str(path))
                hook_pythons += pythons
        if layout.mcp in seen and layout.mcp != layout.hooks:
            continue
        seen.add(layout.mcp)
        found, python = _server_python(agent, layout.mcp, problems)
        if agent == "claude-code" and scope == "project":
            found, python = _claude_project_server(root, home_path, found, python, paths, problems)
        if found:
            mcp_ok = True
            if str(layout.mcp) not in paths:
                paths.append(str(layout.mcp))
            if python:
                server_pythons.append(python)
    if hooks_ok and not mcp_ok:
        problems.append(f"the MCP server is not registered; run `{_install_command(agent)}`")
    if mcp_ok and not hooks_ok and not any("hooks missing" in p for p in problems):
        problems.append(f"hooks are not installed; run `{_install_command(agent)}`")
    pythons = list(dict.fromkeys(hook_pythons + server_pythons))
    if len(pythons) > 1:
        problems.append(f"entries run different interpreters: {', '.join(pythons)}; reinstall")
    for python in pythons:
        if is_shim(python):
            problems.append(f"{python} is a pyenv shim (slow); reinstall from the venv's python")
        elif not (os.path.isfile(python) and os.access(python, os.X_OK)):
            problems.append(f"interpreter {python} does not exist; reinstall ctxmode's hooks")
    if hooks_ok or mcp_ok:
        # Only an agent that has ctxmode's entries can be stopped (or doubled) by its settings.
        _agent_notes(agent, root, home_path, problems)
    interpreter = pythons[0] if pythons else None
    exists = (
        interpreter is not None and os.path.isfile(interpreter) and os.access(interpreter, os.X_OK)
    )
    return AgentStatus(
        agent=agent,
        hooks_installed=hooks_ok,
        mcp_installed=mcp_ok,
        config_paths=tuple(paths),
        interpreter=interpreter,
        interpreter_exists=exists,
        problems=tuple(dict.fromkeys(problems)),
        hook_kind=("in-agent" if in_agent else "command") if hooks_ok else None,
    )
