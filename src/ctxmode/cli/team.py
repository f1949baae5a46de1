"""Team knowledge commands: share, unshare, team, sync (files under ``.context/shared``)."""

from __future__ import annotations

import re

import click

from ctxmode.cli._common import emit, handle_errors, json_option, printable, state
from ctxmode.core.errors import InvalidInput

_CTX_ID = re.compile(r"^(?:ctx:)?(\d{1,18})$")


def _context_id(value: str) -> int:
    match = _CTX_ID.match(value.strip())
    if match is None:
        raise InvalidInput(
            f"{value!r} is not a context id; pass ids such as 12 or ctx:12 (events and prompts "
            "are never shared)"
        )
    return int(match.group(1))


@click.command("share")
@click.argument("ids", nargs=-1, required=True)
@click.option("--no-task", is_flag=True, help="Leave the linked task branch out of the file.")
@json_option
@click.pass_context
@handle_errors
def share_cmd(ctx: click.Context, ids: tuple[str, ...], no_task: bool, as_json: bool) -> None:
    """Share contexts with the team: one file each under .context/shared, to commit.

    Only decisions, constraints, conventions, interfaces, issues and snippets outside a session
    are shared; an item that still looks like it holds a credential is refused (none is shared).
    """
    context_ids = [_context_id(i) for i in ids]
    with state(ctx).store() as store:
        result = store.share(context_ids, with_task=not no_task)

    def human() -> None:
        for item in result.shared:
            click.echo(f"Shared #{item.context_id} as {item.file}")
        for item in result.already:
            click.echo(f"#{item.context_id} is already shared ({item.file})")
        if result.shared:
            click.echo("Commit the file(s) to share them: git add .context/shared && git commit")
            click.echo(
                "Numbers such as #12 are this clone's; a teammate's clone numbers the item "
                "itself. The file name is the id that stays the same everywhere."
            )

    emit(as_json, result.to_dict(), human)


@click.command("unshare")
@click.argument("context_id")
@json_option
@click.pass_context
@handle_errors
def unshare_cmd(ctx: click.Context, context_id: str, as_json: bool) -> None:
    """Stop sharing a context: its file goes (commit the deletion); the local context stays."""
    with state(ctx).store() as store:
        item = store.unshare(_context_id(context_id))
    emit(
        as_json,
        item.to_dict(),
        lambda: click.echo(f"Unshared #{item.context_id}: removed {item.file} (commit it)"),
    )


_LABELS = {
    "in_sync": "in sync",
    "changed_locally": "changed locally",
    "changed_in_repo": "changed in the repo",
    "new_in_repo": "new in the repo",
    "deleted_in_repo": "deleted in the repo",
    "deleted_locally": "deleted locally",
    "conflicted": "CONFLICT",
    "invalid": "INVALID",
    "held": "HELD for review",
}


#: What to do about items in a state, said once under the list.
_ADVICE = {
    "new_in_repo": "a teammate's items, pulled with git; any ctxmode command (or ctxmode "
    "sync) imports them into this clone's store",
    "changed_in_repo": "edited by a teammate; ctxmode sync (or any command) takes their version",
    "changed_locally": "edited here; commit .context/shared to share the change",
    "deleted_in_repo": "removed by a teammate; ctxmode sync archives the local copy",
    "deleted_locally": "commit the deletion of the file (git add -A .context/shared)",
    "conflicted": "edited on both sides; keep one: ctxmode sync --ours ID or --theirs ID "
    "(ID: the file name without .md)",
    "invalid": "fix the file as the message says, then run ctxmode sync",
}


@click.command("team")
@json_option
@click.pass_context
@handle_errors
def team_cmd(ctx: click.Context, as_json: bool) -> None:
    """Shared items and their state: in sync, changed locally or in the repo, conflicted.

    Reads only: `ctxmode sync` (or any other command) applies the changes.
    """
    with state(ctx).store(sync=False) as store:
        status = store.team_status()

    def human() -> None:
        if not status.items:
            click.echo(f"Nothing shared yet ({status.folder}); share with `ctxmode share ID`.")
            return
        for item in status.items:
            label = _LABELS.get(item.state, item.state)
            if item.uncommitted and item.state == "in_sync":
                label = "not committed"
            who = f" (shared by {item.shared_by})" if item.shared_by else ""
            if item.owner and item.owner != item.shared_by:
                who += f" (owner: {item.owner}, as the file says)"
            ref = f"#{item.context_id}" if item.context_id else "-"
            click.echo(f"{label:<20} {ref:>6} {item.type or '':<10} {item.file}{who}")
            if item.title:
                click.echo(f"{'':>28}{printable(item.title)}")
            if item.message:
                click.echo(f"{'':>28}{printable(item.message)}")
        states = {i.state for i in status.items}
        for state_, advice in _ADVICE.items():
            if state_ in states:
                click.echo(f"{_LABELS[state_]}: {advice}")
        if any(i.uncommitted for i in status.items):
            click.echo("not committed: git add .context/shared && git commit, then push")
        click.echo("(#numbers are this clone's own; the file names are shared)")

    emit(as_json, status.to_dict(), human)
    if status.problems:
        ctx.exit(1)


@click.command("sync")
@click.option("--ours", "ours", multiple=True, help="In a conflict, keep the local version.")
@click.option("--theirs", "theirs", multiple=True, help="In a conflict, keep the repo's version.")
@click.option(
    "--accept",
    "accept",
    multiple=True,
    metavar="ID",
    help="Apply the supersession of an item held for review (listed by `ctxmode team`).",
)
@json_option
@click.pass_context
@handle_errors
def sync_cmd(
    ctx: click.Context,
    ours: tuple[str, ...],
    theirs: tuple[str, ...],
    accept: tuple[str, ...],
    as_json: bool,
) -> None:
    """Import teammates' shared files now and write local edits; report what changed."""
    both = set(ours) & set(theirs)
    if both:
        raise click.UsageError(f"{', '.join(sorted(both))} given to both --ours and --theirs")
    prefer = {**{sid: "ours" for sid in ours}, **{sid: "theirs" for sid in theirs}}
    with state(ctx).store(sync=False) as store:
        report = store.sync_shared(force=True, prefer=prefer, accept=accept)
    assert report is not None

    def human() -> None:
        click.echo(f"Team knowledge: {report.summary()}")
        for problem in report.problems:
            click.echo(f"  {problem.file}: {printable(problem.message)}")
        for warning in report.warnings:
            click.echo(f"  note: {printable(warning)}")

    emit(as_json, report.to_dict(), human)


def register(cli: click.Group) -> None:
    """Add this module's commands to the root group."""
    cli.add_command(share_cmd)
    cli.add_command(unshare_cmd)
    cli.add_command(team_cmd)
    cli.add_command(sync_cmd)
