"""Past sessions: ``history import`` and the knowledge ``inbox`` proposed from them."""

from __future__ import annotations

import click

from ctxmode.cli._common import emit, format_time, handle_errors, json_option, parse_time, state
from ctxmode.core.config import HISTORY_AGENTS


@click.group("history")
def history_group() -> None:
    """The project's past agent sessions, read from the transcripts the agents keep."""


@history_group.command("import")
@click.option(
    "--agent",
    type=click.Choice(["all", *HISTORY_AGENTS]),
    default="all",
    show_default=True,
    help="Whose transcripts to read.",
)
@click.option("--since", help="Only sessions active since this date (ISO date or Unix seconds).")
@click.option("--dry-run", is_flag=True, help="Read and count; store nothing.")
@json_option
@click.pass_context
@handle_errors
def history_import(
    ctx: click.Context, agent: str, since: str | None, dry_run: bool, as_json: bool
) -> None:
    """Record this project's past sessions as the hooks would have (prompts, edits, commands
    and failures, reads, git actions, MCP calls, compactions). Run it again any time: it adds
    only what is new (a session still being written is continued)."""
    from ctxmode.cli._progress import bar

    since_ts = parse_time(since, "--since")
    with state(ctx).store(sync=False) as store, bar("Importing", quiet=as_json) as update:
        report = store.import_history(
            agent,
            since_ms=since_ts * 1000 if since_ts is not None else None,
            dry_run=dry_run,
            progress=update,
        )

    def human() -> None:
        for path, reason in report.skipped:
            click.echo(f"skipped {path}: {reason}", err=True)
        click.echo(report.summary())

    emit(as_json, report.to_dict(), human)


@click.group("inbox", invoke_without_command=True)
@click.option("--all", "show_all", is_flag=True, help="Accepted and rejected ones too.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@click.pass_context
@handle_errors
def inbox_group(ctx: click.Context, show_all: bool, limit: int, as_json: bool) -> None:
    """Knowledge candidates proposed from past sessions, best evidence first. Nothing becomes
    knowledge until you accept it (``inbox accept ID``)."""
    if ctx.invoked_subcommand is not None:
        return
    with state(ctx).store(sync=False) as store:
        found = store.candidates(include_closed=show_all, limit=limit)

    def human() -> None:
        if not found:
            click.echo("No candidates. Run `ctxmode history import` first.", err=True)
        for c in found:
            named = c.kind in ("decision", "rejection") and len(c.subject.split()) <= 3
            about = f": {c.subject}" if named else ""
            click.echo(f"#{c.id} [{c.kind}{about}] {c.text}  (score {c.score:.1f}, {c.status})")
            for ev in c.evidence[:3]:
                when = format_time(ev.get("at"))
                who = ev.get("agent", "")
                click.echo(f'    {when} {who} {ev.get("session", "")[:8]}: "{ev.get("quote", "")}"')

    emit(as_json, {"count": len(found), "candidates": [c.to_dict() for c in found]}, human)


@inbox_group.command("accept")
@click.argument("candidate_id", type=int)
@click.option("--type", "type_", help="Context type (default: the candidate's kind).")
@click.option(
    "--file", "files", multiple=True, help="Link to this file (repeatable; default: the files "
    "the candidate's sessions edited)."
)  # fmt: skip
@json_option
@click.pass_context
@handle_errors
def inbox_accept(
    ctx: click.Context, candidate_id: int, type_: str | None, files: tuple[str, ...], as_json: bool
) -> None:
    """Store candidate ID as a context."""
    with state(ctx).store() as store:
        result = store.accept_candidate(candidate_id, type_=type_, files=list(files) or None)
    emit(
        as_json,
        result,
        lambda: click.echo(
            f"Stored {result['type']} #{result['context_id']} from candidate #{candidate_id}"
            + (f" (linked: {', '.join(result['files'])})" if result["files"] else "")
        ),
    )


@inbox_group.command("reject")
@click.argument("candidate_id", type=int)
@json_option
@click.pass_context
@handle_errors
def inbox_reject(ctx: click.Context, candidate_id: int, as_json: bool) -> None:
    """Drop candidate ID (it is not proposed again)."""
    with state(ctx).store(sync=False) as store:
        store.reject_candidate(candidate_id)
    emit(as_json, {"id": candidate_id, "status": "rejected"},
         lambda: click.echo(f"Rejected candidate #{candidate_id}"))  # fmt: skip


def register(cli: click.Group) -> None:
    """Add this module's commands to the root group."""
    cli.add_command(history_group)
    cli.add_command(inbox_group)
