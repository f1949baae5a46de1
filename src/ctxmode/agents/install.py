"""Install, remove and inspect ctxmode's hooks and MCP server in each coding agent's config.

Files written, relative to the project root (scope ``project``) or the home folder (``user``):

    agent        hooks                                      MCP server
    claude-code  .claude/settings.local.json                .mcp.json
                 (user: .claude/settings.json)              (user: .claude.json, top level)
    gemini-cli   .gemini/settings.json (hooks and mcpServers in one file)
    codex        .codex/hooks.json                          .codex/config.toml [mcp_servers.ctxmode]
    cursor       .cursor/hooks.json                         .cursor/mcp.json
    vscode       .github/hooks/ctxmode.json                 .vscode/mcp.json
                 (user: .copilot/hooks/ctxmode.json)        (user: VS Code's User/mcp.json)
    opencode     .opencode/plugins/ctxmode.js               opencode.json "mcp"
                 (user: .config/opencode/plugins/...)       (user: .config/opencode/opencode.json)
    qwen-code    .qwen/settings.json (hooks and mcpServers in one file)
    copilot-cli  .github/copilot/settings.local.json        .github/mcp.json
                 (user: ~/.copilot/settings.json)           (user: ~/.copilot/mcp-config.json)
    kimi-code    user scope only: ~/.kimi-code/config.toml [[hooks]], ~/.kimi-code/mcp.json

Invariants:
- Every hook runs ``<python> -m ctxmode hook <event> --agent <agent>`` (or, for Claude Code's
  in-agent handlers, calls ``record_hook`` of the running server: ``agents.claude``) and the
  MCP server runs ``<python> -m ctxmode serve``, where <python> is the absolute path of the
  running interpreter (a venv's ``bin/python`` is kept as is, not resolved; a pyenv shim is
  refused because it adds 100-200 ms to every hook).
- ctxmode's hook entries are recognised by their ``-m ctxmode hook`` command and its server by
  the name ``ctxmode``, so reinstalling updates them in place and uninstalling removes only them.
- Plan, then write: every file is read, parsed and its new text computed before the first write,
  so one unparseable file aborts the whole operation with nothing written. Files whose data does
  not change keep their bytes; a second install reports every file ``unchanged``.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from ctxmode.agents import claude, jsonc
from ctxmode.agents.files import (
    dump_json,
    load_json_object,
    load_toml,
    read_text,
    toml_remove_table,
    toml_set_table,
    write_atomic,
)
from ctxmode.agents.specs import (
    AGENTS,
    EVENTS,
    NESTED,
    PLUGIN_MARKER,
    PLUGIN_PLACEHOLDER,
    SCOPES,
    SERVER_NAME,
    SERVERS_KEY,
    agent_layout,
    check_scope,
    drop_hooks,
    drop_server,
    handler_python,
    is_ours,
    is_shim,
    normalize_agent,
    put_hooks,
    put_server,
    resolve_interpreter,
    server_entry,
)
from ctxmode.core import config
from ctxmode.core.errors import CtxmodeError, InvalidInput

__all__ = [
    "AGENTS",
    "SCOPES",
    "AgentStatus",
    "Change",
    "InstallResult",
    "install",
    "status",
    "uninstall",
]


Action = Literal["create", "update", "unchanged", "remove"]


@dataclass(frozen=True)
class Change:
    """One config file touched (or that would be touched, in a dry run)."""

    path: str
    action: Action
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class InstallResult:
    """What ``install`` or ``uninstall`` did (or would do) for one agent and scope."""

    agent: str
    scope: str
    changes: tuple[Change, ...]
    dry_run: bool
    #: Claude Code: the hook handlers written ("command" or "in-agent") and why; else None.
    hook_kind: str | None = None
    hook_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "scope": self.scope,
            "changes": [c.to_dict() for c in self.changes],
            "dry_run": self.dry_run,
            "hook_kind": self.hook_kind,
            "hook_note": self.hook_note,
        }


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


# --- planning and applying --------------------------------------------------------------------


@dataclass
class _Pending:
    path: Path
    old: str | None
    new: str | None  # None: remove the file
    what: str  # what ctxmode keeps in this file, e.g. "MCP server 'ctxmode'"
    uninstall: bool
    mode: int | None = None  # permission bits of a file created

    @property
    def action(self) -> Action:
        if self.new == self.old:
            return "unchanged"
        if self.old is None:
            return "create"
        return "remove" if self.new is None else "update"

    def change(self) -> Change:
        action = self.action
        if action == "unchanged":
            summary = f"already installed: {self.what}"
        elif self.uninstall:
            tail = " (the file held nothing else)" if action == "remove" else ""
            summary = f"removed {self.what}{tail}"
        else:
            summary = ("added " if action == "create" else "set ") + self.what
        return Change(str(self.path), action, summary)


JsonEdit = Callable[[dict[str, Any]], object]


def _plan_json(path: Path, edits: list[JsonEdit], what: str, *, uninstall: bool) -> _Pending | None:
    old = read_text(path)
    data = load_json_object(path, old)
    if data is None and uninstall:
        return None
    doc = copy.deepcopy(data) if data is not None else {}
    for edit in edits:
        edit(doc)
    if data is not None and doc == data:
        return _Pending(path, old, old, what, uninstall)
    if uninstall and set(doc) <= {"version"} and not (old and jsonc.has_comments(old)):
        return _Pending(path, old, None, what, uninstall)
    return _Pending(path, old, dump_json(doc, old, path), what, uninstall)


def _plan_codex_server(path: Path, python: str, *, uninstall: bool) -> _Pending | None:
    old = read_text(path)
    keys = ("mcp_servers", SERVER_NAME)
    what = "MCP server 'ctxmode' ([mcp_servers.ctxmode])"
    if uninstall:
        if old is None:
            return None
        new = toml_remove_table(path, old, keys)
        return _Pending(path, old, new if new.strip() else None, what, uninstall)
    new = toml_set_table(path, old, keys, server_entry("codex", python))
    return _Pending(path, old, new, what, uninstall)


def _plugin_text(python: str) -> str:
    template = resources.files("ctxmode.agents").joinpath("opencode_plugin.js").read_text("utf-8")
    return template.replace(PLUGIN_PLACEHOLDER, json.dumps(python))


def _plan_plugin(path: Path, python: str, *, uninstall: bool) -> _Pending | None:
    old = read_text(path)
    if old is not None and PLUGIN_MARKER not in old:
        raise InvalidInput(
            f"{path} exists and was not written by ctxmode; move it away and run again"
        )
    what = "OpenCode plugin forwarding events to ctxmode"
    if uninstall:
        return None if old is None else _Pending(path, old, None, what, uninstall)
    return _Pending(path, old, _plugin_text(python), what, uninstall)


def _hooks_edit(
    agent: str, path: Path, python: str, uninstall: bool, in_agent: bool = False
) -> JsonEdit:
    nested = agent in NESTED
    if uninstall:
        return lambda doc: drop_hooks(doc, nested)
    return lambda doc: put_hooks(doc, path, agent, python, in_agent)


def _server_edit(agent: str, path: Path, python: str, uninstall: bool) -> JsonEdit:
    if uninstall:
        return lambda doc: drop_server(doc, agent)
    return lambda doc: put_server(doc, path, agent, python)


def _plan_codex_trust(hooks: _Pending, root: Path, home: Path, scope: str) -> _Pending:
    """Record in ``$CODEX_HOME/config.toml`` that the project and ctxmode's hooks are trusted."""
    from ctxmode.agents import trust

    path = config.codex_home(home) / "config.toml"
    old = read_text(path)
    doc = json.loads(hooks.new) if hooks.new else {}
    new = old
    for keys, body in trust.trust_tables(hooks.path, doc, root if scope == "project" else None):
        new = toml_set_table(path, new, keys, body)
    what = "Codex trust of ctxmode's hooks" + (" and of this project" if scope == "project" else "")
    return _Pending(path, old, new, what, False)


def _plan_folder_trust(agent: str, root: Path, home: Path) -> _Pending:
    """Record in Gemini CLI's ``trustedFolders.json`` (Copilot CLI's ``config.json``) that it
    may read this project's settings."""
    from ctxmode.agents import copilot, gemini_trust

    module = copilot if agent == "copilot-cli" else gemini_trust
    path, old, new, what = module.plan(root, home)
    return _Pending(path, old, new, what, False, mode=0o600)  # as the agents create them


def _plan(
    agent: str,
    scope: str,
    root: Path,
    home: Path,
    python: str,
    *,
    uninstall: bool,
    trust: bool = False,
    in_agent: bool = False,
) -> list[_Pending]:
    layout = agent_layout(agent, scope, root, home)
    plans: list[_Pending | None] = []
    if agent == "opencode":
        plans.append(_plan_plugin(layout.hooks, python, uninstall=uninstall))
    elif agent == "kimi-code":
        from ctxmode.agents import kimi

        old, new = kimi.plan(layout.hooks, python, uninstall=uninstall)
        what = f"ctxmode hooks for {len(EVENTS[agent])} events ([[hooks]] tables)"
        if old is not None or new is not None:
            new = None if uninstall and new is not None and not new.strip() else new
            plans.append(_Pending(layout.hooks, old, new, what, uninstall))
    else:
        events = list(dict.fromkeys(e for e, _ in EVENTS[agent]))
        what = f"ctxmode hooks for {len(events)} events ({', '.join(events)})"
        edits = [_hooks_edit(agent, layout.hooks, python, uninstall, in_agent)]
        if agent == "claude-code" and scope == "project":
            # In-agent hooks need the project's server running: approve it where Claude Code's
            # own dialog would (the hooks' file is that settings.local.json).
            if uninstall:
                edits.append(claude.unapprove)
            elif in_agent:  # command hooks leave an approval alone: the server still runs
                edits.append(claude.approve)
                what += " and approval of the project's MCP server 'ctxmode'"
            if in_agent and not uninstall:
                inside = sorted(claude.IN_AGENT_EVENTS)
                what += f" ({', '.join(inside)} in-agent, through the running server)"
        if layout.mcp == layout.hooks:
            edits.append(_server_edit(agent, layout.mcp, python, uninstall))
            what += " and MCP server 'ctxmode'"
        if agent == "codex" and not uninstall and not trust:
            what += (
                "; Codex runs them only once trusted: `ctxmode install codex --trust`, or "
                "trust the project and review them with /hooks in Codex"
            )
        folder_trust = (
            agent in ("gemini-cli", "copilot-cli") and scope == "project" and not uninstall
        )
        if folder_trust and not trust and agent == "gemini-cli":
            from ctxmode.agents import gemini_trust as folders

            what += "".join(f"; {problem}" for problem in folders.problems(root, home))
        if folder_trust and not trust and agent == "copilot-cli":
            from ctxmode.agents import copilot

            if not copilot.trusted(root, home):
                what += f"; Copilot CLI runs them only in a folder it trusts: {copilot.FIX}"
        hooks_plan = _plan_json(layout.hooks, edits, what, uninstall=uninstall)
        plans.append(hooks_plan)
        if agent == "codex" and trust and hooks_plan is not None and not uninstall:
            plans.append(_plan_codex_trust(hooks_plan, root, home, scope))
        if folder_trust and trust:
            plans.append(_plan_folder_trust(agent, root, home))
        for other in layout.also:  # only cleaned: install never writes there
            drop = [_hooks_edit(agent, other, python, True)]
            plans.append(_plan_json(other, drop, "ctxmode hooks", uninstall=True))
    if layout.mcp != layout.hooks:
        if agent == "codex":
            plans.append(_plan_codex_server(layout.mcp, python, uninstall=uninstall))
        else:
            edit = _server_edit(agent, layout.mcp, python, uninstall)
            what = "MCP server 'ctxmode'"
            if agent == "claude-code" and scope == "project" and not uninstall and not in_agent:
                what += "; Claude Code asks once to approve project servers"
            plans.append(_plan_json(layout.mcp, [edit], what, uninstall=uninstall))
    # Files that hold nothing of ctxmode's are not worth reporting on uninstall.
    return [p for p in plans if p is not None and not (p.uninstall and p.action == "unchanged")]


def _apply(plans: list[_Pending]) -> None:
    """Write every planned file; on a failure, put back what was already written."""
    done: list[_Pending] = []
    try:
        for plan in plans:
            if plan.action == "unchanged":
                continue
            if plan.new is None:
                plan.path.unlink(missing_ok=True)
            else:
                write_atomic(plan.path, plan.new, plan.mode)
            done.append(plan)
    except OSError as exc:
        for plan in reversed(done):
            try:
                if plan.old is None:
                    plan.path.unlink(missing_ok=True)
                else:
                    write_atomic(plan.path, plan.old)
            except OSError:
                pass
        raise CtxmodeError(
            f"cannot write {exc.filename or 'a config file'} ({exc.strerror}); nothing was changed"
        ) from exc


def _run(
    agent: str,
    scope: str,
    project_root: Path,
    home: Path | None,
    dry_run: bool,
    python: str,
    *,
    uninstall: bool,
    trust: bool = False,
    hooks: str = "auto",
) -> InstallResult:
    agent = normalize_agent(agent)
    scope = check_scope(scope)
    root = Path(project_root).absolute()
    home_path = Path(home).absolute() if home is not None else config.home_dir()
    if agent == "kimi-code" and scope == "project":
        raise InvalidInput(
            "Kimi Code reads hooks only from its user config ($KIMI_CODE_HOME/config.toml, "
            "~/.kimi-code by default): run `ctxmode install kimi-code --scope user`"
        )
    if trust and agent not in ("codex", "gemini-cli", "copilot-cli"):
        raise InvalidInput(
            "--trust is for Codex (its hook review), Gemini CLI and Copilot CLI (their folder "
            "trust) only"
        )
    if hooks not in claude.HOOK_CHOICES:
        raise InvalidInput(f"--hooks must be one of {', '.join(claude.HOOK_CHOICES)}")
    kind: str | None = None
    note: str | None = None
    if agent == "claude-code" and not uninstall:
        kind, note = claude.choose(hooks, home_path)
    elif hooks == "in-agent":
        raise InvalidInput(
            "--hooks in-agent is for Claude Code only (its mcp_tool hooks); other agents run "
            "ctxmode's hooks as commands"
        )
    plans = _plan(
        agent, scope, root, home_path, python, uninstall=uninstall, trust=trust,
        in_agent=kind == "in-agent",
    )  # fmt: skip
    if not dry_run:
        _apply(plans)
    return InstallResult(agent, scope, tuple(p.change() for p in plans), dry_run, kind, note)


def install(
    agent: str,
    *,
    scope: str = "project",
    project_root: Path,
    home: Path | None = None,
    dry_run: bool = False,
    python: str | None = None,
    trust: bool = False,
    hooks: str = "auto",
) -> InstallResult:
    """Register ctxmode's hooks and MCP server with ``agent``; idempotent.

    ``python`` overrides the interpreter written into the config (default: the running one).
    ``trust``: Codex, also record in ``$CODEX_HOME/config.toml`` that the project and these
    hooks are trusted, as Codex's ``/hooks`` review would (``agents.trust``); Gemini CLI (project
    scope; user-scope settings need no trust), record the project's folder trust in
    ``~/.gemini/trustedFolders.json`` (``agents.gemini_trust``).
    ``hooks`` (Claude Code): ``in-agent`` handlers, ``command`` ones, or ``auto``: in-agent when
    the installed Claude Code runs them (``agents.claude``).
    Raises ``InvalidInput`` (nothing written) for an unknown agent or scope, a pyenv shim, or an
    existing config file that cannot be parsed or edited safely.
    """
    interpreter = resolve_interpreter(python)
    return _run(
        agent, scope, project_root, home, dry_run, interpreter, uninstall=False, trust=trust,
        hooks=hooks,
    )  # fmt: skip


def uninstall(
    agent: str,
    *,
    scope: str = "project",
    project_root: Path,
    home: Path | None = None,
    dry_run: bool = False,
) -> InstallResult:
    """Remove ctxmode's hooks and MCP server from ``agent``'s config, leaving all else intact.

    A file left holding nothing (``{}``) is deleted. Same errors as ``install``.
    """
    return _run(agent, scope, project_root, home, dry_run, "", uninstall=True)


# --- status -----------------------------------------------------------------------------------


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
