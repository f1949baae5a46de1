"""Install, remove and inspect ctxmode's hooks and MCP server in each coding agent's config.

Files written, relative to the project root (scope ``project``) or the home folder (``user``):

    agent        hooks                                      MCP server
    claude-code  .claude/settings.local.json                .mcp.json (``ctxmode serve`` from PATH)
                                                            + ~/.claude.json projects.<root>
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
  refused because it adds 100-200 ms to every hook). Claude Code's project ``.mcp.json``, which
  teams commit, runs ``ctxmode serve`` from PATH instead; ``<python>`` goes to the project's
  local scope in ``~/.claude.json``, which Claude Code prefers.
- ctxmode's hook entries are recognised by their ``-m ctxmode hook`` command and its server by
  the name ``ctxmode``, so reinstalling updates them in place and uninstalling removes only them.
- Plan, then write: every file is read, parsed and its new text computed before the first write,
  so one unparseable file aborts the whole operation with nothing written. Files whose data does
  not change keep their bytes; a second install reports every file ``unchanged``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from ctxmode.agents import claude, jsonc
from ctxmode.agents.agent_status import AgentStatus, status
from ctxmode.agents.files import (
    dump_json,
    load_json_object,
    read_text,
    toml_remove_table,
    toml_set_table,
    write_atomic,
)
from ctxmode.agents.specs import (
    AGENTS,
    EVENTS,
    LOCAL_FILES,
    NESTED,
    PLUGIN_MARKER,
    PLUGIN_PLACEHOLDER,
    SCOPES,
    SERVER_NAME,
    SERVERS_KEY,
    agent_layout,
    check_scope,
    child_dict,
    drop_hooks,
    drop_server,
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
    "LOCAL_FILES",
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
    #: The file names this machine's interpreter (False: the same in every clone).
    machine_specific: bool = True

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


# --- planning and applying --------------------------------------------------------------------


@dataclass
class _Pending:
    path: Path
    old: str | None
    new: str | None  # None: remove the file
    what: str  # what ctxmode keeps in this file, e.g. "MCP server 'ctxmode'"
    uninstall: bool
    mode: int | None = None  # permission bits of a file created
    machine: bool = True  # the file names this machine's interpreter

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
        return Change(str(self.path), action, summary, self.machine and not self.uninstall)


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
    portable: bool = True,
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
        if scope == "project":
            plans.append(_plan_exclude(root, layout.hooks, uninstall))
        for other in layout.also:  # only cleaned: install never writes there
            drop = [_hooks_edit(agent, other, python, True)]
            plans.append(_plan_json(other, drop, "ctxmode hooks", uninstall=True))
    if layout.mcp != layout.hooks:
        if agent == "codex":
            plans.append(_plan_codex_server(layout.mcp, python, uninstall=uninstall))
        elif agent == "claude-code" and scope == "project" and portable:
            plans += _plan_claude_servers(layout.mcp, root, home, python, uninstall, in_agent)
        else:
            edit = _server_edit(agent, layout.mcp, python, uninstall)
            plans.append(
                _plan_json(layout.mcp, [edit], "MCP server 'ctxmode'", uninstall=uninstall)
            )
    # Files that hold nothing of ctxmode's are not worth reporting on uninstall.
    return [p for p in plans if p is not None and not (p.uninstall and p.action == "unchanged")]


def _plan_exclude(root: Path, hooks: Path, uninstall: bool) -> _Pending | None:
    """List a per-machine hooks file (``LOCAL_FILES``) in the clone's ``.git/info/exclude``
    unless git already ignores it (``agents.gitexclude``)."""
    from ctxmode.agents import gitexclude

    rel = hooks.relative_to(root).as_posix()
    path = gitexclude.exclude_file(root) if rel in LOCAL_FILES else None
    if path is None:
        return None
    old = read_text(path)
    new = gitexclude.plan(root, rel, old, uninstall=uninstall)
    if new == old and not gitexclude.listed(old, rel):
        return None  # git ignores the file some other way
    what = f"the line keeping {rel} out of git in this clone (.gitignore untouched)"
    pending = _Pending(path, old, new, what, uninstall)
    pending.machine = False
    return pending


def _plan_claude_servers(
    mcp: Path, root: Path, home: Path, python: str, uninstall: bool, in_agent: bool
) -> list[_Pending | None]:
    """Claude Code's project server in two parts: ``.mcp.json``, which teams commit, runs
    ``ctxmode serve`` from PATH (``claude.PORTABLE_SERVER``); this machine's own entry, with
    the absolute interpreter, goes to the project's local scope in ``~/.claude.json``, which
    Claude Code prefers. Uninstall removes both (and an absolute entry of older installs)."""
    local = home / ".claude.json"
    if uninstall:
        drop: list[JsonEdit] = [lambda doc: claude.drop_local_server(doc, root)]
        return [
            _plan_json(mcp, [_server_edit("claude-code", mcp, python, True)],
                       "MCP server 'ctxmode'", uninstall=True),
            _plan_json(local, drop, "this project's MCP server 'ctxmode'", uninstall=True),
        ]  # fmt: skip

    def portable(doc: dict[str, Any]) -> None:
        servers = child_dict(doc, SERVERS_KEY["claude-code"], mcp)
        current = servers.get(SERVER_NAME)  # keys the user added (env ...) stay
        ours = dict(claude.PORTABLE_SERVER)
        servers[SERVER_NAME] = {**current, **ours} if isinstance(current, dict) else ours

    what = (
        "MCP server 'ctxmode' as `ctxmode serve` from PATH (nothing of this machine: commit it "
        "for your teammates)"
    )
    if not in_agent:
        what += "; Claude Code asks once to approve project servers"
    entry = server_entry("claude-code", python)
    mine = (
        f"this project's MCP server 'ctxmode' on this machine ({python} -m ctxmode serve; "
        "Claude Code prefers it to .mcp.json's)"
    )
    local_plan = _plan_json(
        local, [lambda doc: claude.put_local_server(doc, root, entry)], mine, uninstall=False
    )
    if local_plan is not None and local_plan.old is None:
        local_plan.mode = 0o600  # as Claude Code creates it
    shared = _plan_json(mcp, [portable], what, uninstall=False)
    if shared is not None:
        shared.machine = False
    return [shared, local_plan]


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
    portable: bool = True,
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
        in_agent=kind == "in-agent", portable=portable,
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
    portable: bool = True,
) -> InstallResult:
    """Register ctxmode's hooks and MCP server with ``agent``; idempotent.

    ``python`` overrides the interpreter written into the config (default: the running one).
    ``trust``: Codex, also record in ``$CODEX_HOME/config.toml`` that the project and these
    hooks are trusted, as Codex's ``/hooks`` review would (``agents.trust``); Gemini CLI (project
    scope; user-scope settings need no trust), record the project's folder trust in
    ``~/.gemini/trustedFolders.json`` (``agents.gemini_trust``).
    ``hooks`` (Claude Code): ``in-agent`` handlers, ``command`` ones, or ``auto``: in-agent when
    the installed Claude Code runs them (``agents.claude``).
    ``portable`` (Claude Code, project scope): ``.mcp.json`` runs ``ctxmode serve`` from PATH,
    committable, and this machine's interpreter goes to the project's local scope in
    ``~/.claude.json``; False: the interpreter in ``.mcp.json`` itself (scratch copies that are
    never committed, such as ``ctxmode eval``'s).
    Raises ``InvalidInput`` (nothing written) for an unknown agent or scope, a pyenv shim, or an
    existing config file that cannot be parsed or edited safely.
    """
    interpreter = resolve_interpreter(python)
    return _run(
        agent, scope, project_root, home, dry_run, interpreter, uninstall=False, trust=trust,
        hooks=hooks, portable=portable,
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
