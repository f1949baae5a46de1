"""``ctxmode serve``: run the MCP server over stdio.

``ctxmode serve`` is normally dispatched in ``ctxmode._entry`` before click loads (startup is
timed by the agent); this command is the same thing for ``ctxmode --db X serve`` and ``--help``.
"""

from __future__ import annotations

import click

from ctxmode.cli._common import state


@click.command("serve")
@click.option(
    "--db",
    "db",
    type=click.Path(dir_okay=False),
    help="Store file (default: from CTXMODE_DB, CLAUDE_PROJECT_DIR, else the current project).",
)
@click.pass_context
def serve_cmd(ctx: click.Context, db: str | None) -> None:
    """Run the MCP server over stdio (for agents; exits when stdin closes)."""
    from ctxmode.hooks.in_agent import prepare, record
    from ctxmode.mcp.front import resolve_serve_paths, serve

    db_path, root = resolve_serve_paths(db or state(ctx).db)
    serve(db_path, root, record=record, prepare=prepare)


def register(cli: click.Group) -> None:
    """Add this module's commands to the root group."""
    cli.add_command(serve_cmd)
