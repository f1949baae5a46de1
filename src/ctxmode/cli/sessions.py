"""Session commands: ``snapshot``, ``events``, ``sessions`` (reads of what hooks captured)."""

from __future__ import annotations

import sys

import click

from ctxmode.cli._common import emit, format_time, handle_errors, json_option, printable, state
from ctxmode.store import EVENT_CATEGORIES, SNAPSHOT_MIN_BUDGET, Store


@click.command("snapshot")
@click.option("--session", "session_id", help="Session id (default: the most recent session).")
@click.option(
    "--budget",
    type=click.IntRange(min=SNAPSHOT_MIN_BUDGET),
    help="Size limit in UTF-8 bytes (default: snapshot_bytes setting, 2048).",
)
@json_option
@click.pass_context
@handle_errors
def snapshot_cmd(
    ctx: click.Context, session_id: str | None, budget: int | None, as_json: bool
) -> None:
    """Print the <session_knowledge> resume snapshot built from a session's events."""
    with state(ctx).store() as store:
        snap = store.session_snapshot(session_id, budget=budget)
    emit(as_json, snap.to_dict(), lambda: click.echo(snap.xml))


@click.command("events")
@click.option("--session", "session_id", help="Only this session (default: all sessions).")
@click.option(
    "--category",
    type=click.Choice(list(EVENT_CATEGORIES)),
    help="Only this category.",
)
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@click.pass_context
@handle_errors
def events_cmd(
    ctx: click.Context, session_id: str | None, category: str | None, limit: int, as_json: bool
) -> None:
    """List captured session events, newest first."""
    with state(ctx).store() as store:
        found = store.events(session_id, category, limit)

    def human() -> None:
        if not found:
            click.echo("No events.", err=True)
        for e in found:
            click.echo(
                f"#{e.id} {format_time(e.created_at)} P{e.priority} "
                + printable(Store.describe_event(e))
            )

    emit(as_json, {"count": len(found), "events": [e.to_dict() for e in found]}, human)


@click.command("sessions")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@click.pass_context
@handle_errors
def sessions_cmd(ctx: click.Context, limit: int, as_json: bool) -> None:
    """List agent sessions, most recently active first: those the hooks recorded (live) and
    those read from the agents' transcripts (imported: ``ctxmode history import``)."""
    with state(ctx).store() as store:
        found = store.sessions(limit)
        imported = store.imported_sessions()

    def origin(session_id: str) -> str:
        return "imported" if session_id in imported else "live"

    def human() -> None:
        if not found:
            click.echo("No sessions.", err=True)
        for s in found:
            ended = f" ended {format_time(s.ended_at)}" if s.ended_at else ""
            click.echo(
                f"{s.session_id} {s.agent} {origin(s.session_id)} "
                f"{format_time(s.started_at)} .. {format_time(s.last_event_at)} "
                f"events={s.event_count} compactions={s.compact_count}{ended}"
            )

    rows = [{**s.to_dict(), "origin": origin(s.session_id)} for s in found]
    emit(as_json, {"count": len(found), "sessions": rows}, human)


@click.command(
    "hook",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_cmd(args: tuple[str, ...]) -> None:
    """Run one agent hook: EVENT [--agent AGENT], the agent's JSON payload on stdin.

    Agents call this (``ctxmode install AGENT`` sets it up); it always exits 0. The project is
    the payload's working directory. ``ctxmode hook ...`` as the first words skips this CLI
    entirely for speed; this command is the same runner for other spellings.
    """
    if args[:1] in (("-h",), ("--help",)) or (not args and sys.stdin.isatty()):
        click.echo(click.get_current_context().get_help())
        click.echo(
            "\nEVENT, in any agent's spelling: session-start, user-prompt-submit, pre-tool-use, "
            "post-tool-use, pre-compact, post-compact, stop, session-end (SessionStart, "
            'BeforeTool, ... also work).\nTry one by hand:\n  echo \'{"session_id": "s1", '
            '"cwd": "."}\' | ctxmode hook session-start --agent claude-code\n'
            "Problems are logged to .context/hooks.log (ctxmode doctor reads it)."
        )
        return
    from ctxmode.hooks.runner import main

    raise SystemExit(main(list(args)))


def register(cli: click.Group) -> None:
    """Add this module's commands to the root group."""
    cli.add_command(hook_cmd)
    cli.add_command(snapshot_cmd)
    cli.add_command(events_cmd)
    cli.add_command(sessions_cmd)
