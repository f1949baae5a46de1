"""``ctxmode install``, ``uninstall`` and ``agents``: thin commands over ``agents.install``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click

from ctxmode.agents import install as core
from ctxmode.cli._common import emit, handle_errors, json_option
from ctxmode.core import config
from ctxmode.store import Store

_AGENT_HELP = ", ".join(core.AGENTS)


def _shown(path: str, root: Path, home: Path) -> str:
    """A path relative to the project, else ``~/...``, else as is."""
    p = Path(path)
    for base, prefix in ((root, ""), (home, "~/")):
        try:
            return prefix + p.relative_to(base).as_posix()
        except ValueError:
            continue
    return path


def _render(result: core.InstallResult, root: Path, verb: str) -> None:
    home = config.home_dir()
    head = f"{verb} {result.agent} ({result.scope} scope)"
    click.echo(head + (", dry run: nothing written" if result.dry_run else ""))
    if not result.changes:
        click.echo("  nothing to do: no ctxmode entries found")
    width = max((len(c.action) for c in result.changes), default=0)
    for change in result.changes:
        shown = _shown(change.path, root, home)
        click.echo(f"  {change.action:<{width}}  {shown}: {change.summary}")
    if result.hook_note:
        click.echo(f"  {result.hook_note}")
    if verb == "install" and result.scope == "project":
        _machine_note(result, root, home)


def _machine_note(result: core.InstallResult, root: Path, home: Path) -> None:
    """Say which written project files to commit and which name this machine's Python: a
    committed absolute path breaks every teammate's agent."""
    written = [
        c
        for c in result.changes
        if c.action in ("create", "update") and _shown(c.path, root, home) != c.path
        and not _shown(c.path, root, home).startswith(("~/", ".git/"))
    ]  # fmt: skip
    again = f"`ctxmode install {result.agent}`"
    portable = [_shown(c.path, root, home) for c in written if not c.machine_specific]
    if portable:
        click.echo(
            f"  commit: {', '.join(portable)} runs `ctxmode serve` from PATH, the same in "
            f"every clone (this machine's own entry is in ~/.claude.json); a teammate whose "
            f"ctxmode is not on PATH runs {again} in their clone"
        )
    machine = [_shown(c.path, root, home) for c in written if c.machine_specific]
    if not machine:
        return
    click.echo(
        f"  machine-specific: {', '.join(machine)} run ctxmode by this machine's absolute "
        f"Python path; keep them out of git, and have each teammate run {again} in their clone"
    )
    shared = [p for p in machine if p not in core.LOCAL_FILES]
    if shared:
        click.echo(
            f"  usually committed: {', '.join(shared)}; committed as written here, it makes "
            "every teammate's agent fail to start ctxmode (their machines have no such "
            f"Python): leave it out of git, or install with `--scope user` instead"
        )
    tracked = _not_ignored(root, machine)
    if tracked:
        click.echo(
            f"  not ignored by git: {', '.join(tracked)}; add them to .gitignore "
            "(or .git/info/exclude) so that they are not committed by mistake"
        )


def _not_ignored(root: Path, paths: list[str]) -> list[str]:
    """The ``paths`` (project-relative) that git would list as changes; none outside git."""
    try:
        done = subprocess.run(
            ["git", "check-ignore", "--stdin"],
            cwd=root,
            input="\n".join(paths),
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode not in (0, 1):  # 128: not a git repository
        return []
    ignored = set(done.stdout.splitlines())
    return [p for p in paths if p not in ignored]


def _scope_option(func: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--scope",
        type=click.Choice(core.SCOPES),
        default="project",
        show_default=True,
        help="project: this project's config files; user: your home folder's.",
    )(func)


def _dry_run_option(func: click.decorators.FC) -> click.decorators.FC:
    return click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")(
        func
    )


@click.command(name="install")
@click.argument("agent", metavar="AGENT")
@_scope_option
@_dry_run_option
@click.option(
    "--trust",
    is_flag=True,
    help="Also record the trust the agent needs before it runs project hooks. Codex: this "
    "project and ctxmode's hooks ($CODEX_HOME/config.toml), as /hooks in Codex would. Gemini "
    "CLI (project scope): this folder (~/.gemini/trustedFolders.json), as its trust dialog would. "
    "Copilot CLI (project scope): this folder (~/.copilot/config.json trustedFolders).",
)
@click.option(
    "--hooks",
    "hook_kind",
    type=click.Choice(("auto", "in-agent", "command")),
    default="auto",
    show_default=True,
    help="Claude Code: in-agent hooks run inside the agent, through the ctxmode server it is "
    "connected to (no process per tool call; Claude Code >= 2.1.118); command hooks start a "
    "process per call (every version); auto: in-agent when the installed Claude Code runs them.",
)
@json_option
@handle_errors
def install_agent(
    agent: str, scope: str, dry_run: bool, trust: bool, hook_kind: str, as_json: bool
) -> None:
    """Register ctxmode's hooks and MCP server with AGENT.

    AGENT is one of: claude-code, gemini-cli, codex, cursor, vscode, opencode, qwen-code,
    copilot-cli. Existing hooks and servers are kept; running it again changes nothing. The
    hooks and the server run this Python interpreter by its absolute path.
    """
    root = config.find_project_root()
    result = core.install(
        agent, scope=scope, project_root=root, dry_run=dry_run, trust=trust, hooks=hook_kind
    )
    past = Store.count_past_sessions(str(root))  # {} when they cannot be counted

    def human() -> None:
        _render(result, root, "install")
        if past:
            total = sum(past.values())
            each = ", ".join(f"{name} {n}" for name, n in sorted(past.items()))
            click.echo(
                f"Found {total} past sessions of this project ({each}): "
                "`ctxmode history import` records them (nothing is imported until you run it)."
            )

    emit(as_json, {**result.to_dict(), "past_sessions": past}, human)


@click.command(name="uninstall")
@click.argument("agent", metavar="AGENT")
@_scope_option
@_dry_run_option
@json_option
@handle_errors
def uninstall_agent(agent: str, scope: str, dry_run: bool, as_json: bool) -> None:
    """Remove ctxmode's hooks and MCP server from AGENT's config; nothing else is touched."""
    root = config.find_project_root()
    result = core.uninstall(agent, scope=scope, project_root=root, dry_run=dry_run)
    emit(as_json, result.to_dict(), lambda: _render(result, root, "uninstall"))


@click.command(name="agents")
@json_option
@handle_errors
def agents_status(as_json: bool) -> None:
    """Show, for every supported agent, whether ctxmode's hooks and MCP server are installed."""
    root = config.find_project_root()
    statuses = [core.status(agent, project_root=root) for agent in core.AGENTS]

    def human() -> None:
        home = config.home_dir()
        for st in statuses:
            hooks = "hooks yes" if st.hooks_installed else "hooks no "
            if st.hook_kind == "in-agent":
                hooks += " (in-agent)"
            mcp = "mcp yes" if st.mcp_installed else "mcp no "
            python = st.interpreter or "-"
            if st.interpreter and not st.interpreter_exists:
                python += " (missing)"
            click.echo(f"{st.agent:<12} {hooks}  {mcp}  {python}")
            for path in st.config_paths:
                click.echo(f"    {_shown(path, root, home)}")
            for problem in st.problems:
                click.echo(f"    problem: {problem}")

    emit(as_json, [st.to_dict() for st in statuses], human)


def register(cli: click.Group) -> None:
    """Add ``install``, ``uninstall`` and ``agents`` to the root group."""
    cli.add_command(install_agent)
    cli.add_command(uninstall_agent)
    cli.add_command(agents_status)
