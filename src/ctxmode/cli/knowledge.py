"""Knowledge commands: init, add, decision, query, show, task, gc, export, import, db."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import Any

import click

from ctxmode.cli._common import (
    Choice,
    cli_path,
    emit,
    format_time,
    handle_errors,
    json_option,
    parse_json_object,
    parse_time,
    printable,
    state,
)
from ctxmode.cli._progress import working
from ctxmode.core import config
from ctxmode.core.db import write_gitignore
from ctxmode.core.errors import InvalidInput
from ctxmode.core.models import (
    CONTEXT_TYPES,
    DECISION_FIELDS,
    MODES,
    RELATIONS,
    SCOPES,
    TASK_STATUSES,
    Context,
)
from ctxmode.core.schema import SCHEMA_VERSION
from ctxmode.store import EVENT_RETENTION_DAYS, Store


def print_table(columns: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> None:
    """Draw a table on stdout with rich (imported here: ``--json`` output never needs it).

    Every cell shows its whole text: rich's default overflow ends a line that does not fit
    in ``…`` and drops the rest, and a run of CJK text has no space to wrap at, so it was cut
    mid-sentence. ``fold`` wraps at spaces where there are some and breaks between
    characters where there are none. The last column (the text) gets the spare width.
    """
    from rich.console import Console
    from rich.table import Column, Table
    from rich.text import Text

    table = Table(
        *(
            Column(name, overflow="fold", ratio=1 if i == len(columns) - 1 else None)
            for i, name in enumerate(columns)
        ),
        show_lines=False,
    )
    for row in rows:
        # Text, not a markup string: stored text such as "[stale]" or "[link]" is shown as
        # written, never read as a rich style tag and dropped.
        table.add_row(*(Text(cell) for cell in row))
    Console().print(table)


@click.command("init")
@json_option
@click.pass_context
@handle_errors
def init_cmd(ctx: click.Context, as_json: bool) -> None:
    """Create the project's store (.context/context.db) and its .gitignore."""
    app = state(ctx)
    path = app.db_path
    existed = path.exists() and path.stat().st_size > 0
    with app.store(create=True) as store:
        if store.path.parent.name == config.CONTEXT_DIR:
            write_gitignore(str(store.path.parent))
        data = {
            "db": str(store.path),
            "root": str(store.root),
            "created": not existed,
            "schema_version": SCHEMA_VERSION,
        }

    def human() -> None:
        click.echo(
            f"{'Created' if data['created'] else 'Found'} {data['db']} (schema {SCHEMA_VERSION})"
        )
        if data["created"]:
            click.echo(
                "Next: connect your agent with `ctxmode install claude-code` (`ctxmode agents` "
                "lists the others), then store what it should know: `ctxmode add --help`"
            )

    emit(as_json, data, human)


@click.command("add")
@click.argument("context_type", metavar="TYPE", type=Choice(CONTEXT_TYPES))
@click.argument("content")
@click.option("--task", "task_id", type=int, help="Link to this task id.")
@click.option("--file", "files", multiple=True, help="Link to this file (repeatable).")
@click.option("--relation", type=Choice(RELATIONS), default="related", show_default=True)
@click.option("--scope", type=Choice(SCOPES), default="global", show_default=True)
@click.option("--owner", help="Who wrote it (default: git's user.name, else the OS user).")
@click.option("--meta", help="Metadata as a JSON object.")
@click.option("--supersedes", type=int, help="Id of the context this one replaces.")
@click.option("--session", "session_id", help="Session id (for --scope session).")
@json_option
@click.pass_context
@handle_errors
def add_cmd(
    ctx: click.Context,
    context_type: str,
    content: str,
    task_id: int | None,
    files: tuple[str, ...],
    relation: str,
    scope: str,
    owner: str | None,
    meta: str | None,
    supersedes: int | None,
    session_id: str | None,
    as_json: bool,
) -> None:
    """Store a context of TYPE (use - as CONTENT to read stdin).

    \b
    TYPE is one of (tier 1 is always injected first, tier 3 last):
      constraint  a rule that must hold ("tokens are signed on the server only")   tier 1
      decision    a choice made, and why (see also: ctxmode decision add)          tier 1
      convention  how things are done here ("tests live under tests/")              tier 1
      interface   a contract other code relies on (a signature, a format)           tier 1
      issue       a known problem and its workaround                               tier 2
      snippet     code worth keeping; archived when its file is deleted             tier 2
      reference   a link or pointer; expires 30 days after it was last read         tier 3

    --file links it to files (or folders, or globs such as 'tests/**'): it is injected
    when an agent edits them and marked stale when they change.
    """
    metadata = parse_json_object(meta, "--meta")
    text = sys.stdin.read() if content == "-" else content
    with state(ctx).store() as store:
        result = store.write_context(
            context_type,
            text,
            task_id=task_id,
            file_paths=[cli_path(f) for f in files],
            relation=relation,
            scope=scope,
            owner=owner,
            metadata=metadata,
            supersedes=supersedes,
            session_id=session_id,
        )

    def human() -> None:
        click.echo(
            f"Stored #{result.id}"
            + (" (already known)" if result.deduplicated else "")
            + (f", supersedes #{result.superseded}" if result.superseded else "")
            + ("; verified through every link" if result.verified else "; VERIFY FAILED")
        )
        warn_missing(result.missing_files)

    emit(as_json, result.to_dict(), human)


def warn_missing(paths: Iterable[str]) -> None:
    """Say on stderr which linked paths have nothing on disk: a typo is caught now, and a
    file still to be written is linked knowingly."""
    for path in paths:
        click.echo(
            f"warning: {path} does not exist; linked as a planned file (if you meant an "
            "existing file, check the path and link it with ctxmode link)",
            err=True,
        )


@click.group("decision")
def decision_group() -> None:
    """Decisions written from the template."""


@decision_group.command("add")
@click.argument("decision")
@click.option("--background", default="")
@click.option("--options", "options_", default="", help="The options considered.")
@click.option("--choice", default="")
@click.option("--rationale", default="")
@click.option("--impact", default="")
@click.option("--task", "task_id", type=int)
@click.option("--file", "files", multiple=True)
@click.option("--supersedes", type=int)
@json_option
@click.pass_context
@handle_errors
def decision_add(
    ctx: click.Context,
    decision: str,
    background: str,
    options_: str,
    choice: str,
    rationale: str,
    impact: str,
    task_id: int | None,
    files: tuple[str, ...],
    supersedes: int | None,
    as_json: bool,
) -> None:
    """Record a DECISION with background, options, choice, rationale and impact."""
    fields = dict(
        zip(
            DECISION_FIELDS,
            (decision, background, options_, choice, rationale, impact),
            strict=True,
        )
    )
    with state(ctx).store() as store:
        result = store.write_decision(
            fields, task_id=task_id, file_paths=[cli_path(f) for f in files], supersedes=supersedes
        )

    def human() -> None:
        click.echo(
            f"Stored decision #{result.id}"
            + (" (already known)" if result.deduplicated else "")
            + (f", supersedes #{result.superseded}" if result.superseded else "")
        )
        warn_missing(result.missing_files)

    emit(as_json, result.to_dict(), human)


@click.command("query")
@click.option(
    "--task", "task_id", type=int, help="Knowledge of this task id (and, by --mode, its parents)."
)
@click.option(
    "--file",
    "file_path",
    help="Knowledge linked to this file, its folder or a matching glob (and one hop further).",
)
@click.option(
    "--type",
    "types",
    multiple=True,
    type=Choice(CONTEXT_TYPES),
    help="Only this type (repeatable).",
)
@click.option(
    "--mode",
    type=Choice(MODES),
    default="normal",
    show_default=True,
    help="How far to reach. focused: the task or file itself, tier 1 and snippets, 5 "
    "items. normal: also the parent task and one hop through shared links, 15 items. broad: "
    "every ancestor task and the global knowledge too, 30 items.",
)
@click.option("--limit", type=click.IntRange(1, 1000), help="At most this many items.")
@click.option(
    "--budget",
    type=click.IntRange(1, 10_000_000),
    help="Token budget: print the packed text an agent would get instead of the table.",
)
@click.option("--owner", help="Only knowledge written by this owner.")
@click.option("--session", "session_id", help="Include this session's session-scoped knowledge.")
@click.option("--all", "include_superseded", is_flag=True, help="Include superseded contexts.")
@json_option
@click.pass_context
@handle_errors
def query_cmd(
    ctx: click.Context,
    task_id: int | None,
    file_path: str | None,
    types: tuple[str, ...],
    mode: str,
    limit: int | None,
    budget: int | None,
    owner: str | None,
    session_id: str | None,
    include_superseded: bool,
    as_json: bool,
) -> None:
    """Ranked knowledge for a file and/or task: the file narrows, the task orders, the tier
    ranks (constraints and decisions first). Without --task and --file: the newest global
    knowledge."""
    with state(ctx).store() as store:
        result = store.query_context(
            task_id=task_id,
            file_path=cli_path(file_path) if file_path else None,
            context_type=types or None,
            mode=mode,
            limit=limit,
            budget_tokens=budget,
            owner=owner,
            session_id=session_id,
            include_superseded=include_superseded,
        )

    def human() -> None:
        if not result.items:
            click.echo("No matching contexts.")
            return
        if budget is not None:
            click.echo(result.text)
            return
        rows = []
        for item in result.items:
            c = item.context
            rows.append(
                (
                    str(c.id),
                    c.type,
                    format_time(c.updated_at),
                    item.via,
                    printable(c.content) + "".join(f" [{flag}]" for flag in _flags(c)),
                )
            )
        print_table(("id", "type", "updated", "via", "content"), rows)

    emit(as_json, result.to_dict(), human)


def _flags(c: Context) -> list[str]:
    """What makes a listed context out of date, in words."""
    flags = []
    if c.superseded_by:
        flags.append(f"superseded by #{c.superseded_by}")
    if c.archived_at:
        flags.append("archived")
    if c.stale:
        flags.append(f"stale: a linked file changed; see ctxmode show {c.id}")
    return flags


@click.command("show")
@click.argument("context_id", type=int)
@json_option
@click.pass_context
@handle_errors
def show_cmd(ctx: click.Context, context_id: int, as_json: bool) -> None:
    """One context with its links and supersession history."""
    with state(ctx).store() as store:
        detail = store.context_detail(context_id)

    def human() -> None:
        c = detail.context
        click.echo(f"#{c.id} {c.type} ({c.scope}, owner {c.owner})")
        click.echo(
            f"created {format_time(c.created_at)}  updated {format_time(c.updated_at)}  "
            f"read {c.access_count}x, last {format_time(c.last_accessed_at)}"
        )
        if c.superseded_by:
            click.echo(f"superseded by #{c.superseded_by}")
        if c.stale:
            click.echo(
                "stale: a linked file's content differs from when it was linked; check the "
                f"text still holds, then run ctxmode link {c.id} --refresh (a revert clears it)"
            )
        if len(detail.history) > 1:
            click.echo("history: " + " -> ".join(f"#{i}" for i in detail.history))
        for t in detail.tasks:
            click.echo(f"task #{t.task_id} (relevance {t.relevance})")
        for f in detail.files:
            click.echo(f"file {f.path} ({f.relation})")
        click.echo("")
        click.echo(printable(c.content))

    emit(as_json, detail.to_dict(), human)


@click.command("supersede")
@click.argument("old_id", type=int)
@click.argument("new_id", type=int)
@json_option
@click.pass_context
@handle_errors
def supersede_cmd(ctx: click.Context, old_id: int, new_id: int, as_json: bool) -> None:
    """Mark OLD_ID as replaced by NEW_ID."""
    with state(ctx).store() as store:
        store.supersede(old_id, new_id)
    emit(as_json, {"old": old_id, "new": new_id}, lambda: click.echo(f"#{old_id} -> #{new_id}"))


@click.command("link")
@click.argument("context_id", type=int)
@click.argument("paths", nargs=-1)
@click.option("--relation", type=Choice(RELATIONS), default="related", show_default=True)
@click.option(
    "--refresh",
    is_flag=True,
    help="Accept the linked files' current content (all, or PATHS) as what the context was "
    "written against: it is no longer stale because of them.",
)
@json_option
@click.pass_context
@handle_errors
def link_cmd(
    ctx: click.Context,
    context_id: int,
    paths: tuple[str, ...],
    relation: str,
    refresh: bool,
    as_json: bool,
) -> None:
    """Link a context to files, or with --refresh re-verify its links.

    A context is stale while a linked file's content differs from when it was linked; it
    clears by itself when the file matches again (a revert). After checking that the text
    still holds for the new content, `ctxmode link ID --refresh` says so.
    """
    if not paths and not refresh:
        raise click.UsageError("give the file PATHS to link, or --refresh to re-verify the links")
    refreshed: list[str] = []
    missing: tuple[str, ...] = ()
    with state(ctx).store() as store:
        if refresh:
            refreshed = store.accept_file_content(
                context_id, [cli_path(p) for p in paths] if paths else None
            )
        else:
            missing = store.link_files(context_id, [cli_path(p) for p in paths], relation)
        detail = store.context_detail(context_id)
    files = [f.path for f in detail.files]
    data = {
        "id": context_id,
        "files": files,
        "refreshed": refreshed,
        "stale": detail.context.stale,
        "missing_files": list(missing),
    }

    def human() -> None:
        if refresh:
            click.echo(f"#{context_id}: accepted the current content of " + ", ".join(refreshed))
            click.echo(f"#{context_id} is {'still stale' if detail.context.stale else 'not stale'}")
        else:
            click.echo("\n".join(files))
            warn_missing(missing)
            if detail.context.stale:
                click.echo(
                    f"#{context_id} is stale: a linked file changed since it was linked; "
                    f"check the text, then run ctxmode link {context_id} --refresh",
                    err=True,
                )

    emit(as_json, data, human)


@click.command("rm")
@click.argument("context_id", type=int)
@json_option
@click.pass_context
@handle_errors
def rm_cmd(ctx: click.Context, context_id: int, as_json: bool) -> None:
    """Delete a context and its links."""
    with state(ctx).store() as store:
        store.delete_context(context_id)
    emit(as_json, {"deleted": context_id}, lambda: click.echo(f"Deleted #{context_id}"))


@click.group("task")
def task_group() -> None:
    """The task tree."""


@task_group.command("add")
@click.argument("name")
@click.option("--parent", "parent_id", type=int)
@click.option("--status", type=Choice(TASK_STATUSES), default="pending", show_default=True)
@json_option
@click.pass_context
@handle_errors
def task_add(
    ctx: click.Context, name: str, parent_id: int | None, status: str, as_json: bool
) -> None:
    """Create a task."""
    with state(ctx).store() as store:
        task = store.create_task(name, parent_id, status=status)
    emit(as_json, task.to_dict(), lambda: click.echo(f"Task #{task.id} {task.name}"))


@task_group.command("status")
@click.argument("task_id", type=int)
@click.argument("status")
@json_option
@click.pass_context
@handle_errors
def task_status(ctx: click.Context, task_id: int, status: str, as_json: bool) -> None:
    """Set a task's STATUS (pending, in_progress, blocked, completed, cancelled)."""
    with state(ctx).store() as store:
        task = store.update_task(task_id, status)
    emit(as_json, task.to_dict(), lambda: click.echo(f"Task #{task.id} is {task.status}"))


@task_group.command("list")
@click.option("--status", type=Choice(TASK_STATUSES))
@json_option
@click.pass_context
@handle_errors
def task_list(ctx: click.Context, status: str | None, as_json: bool) -> None:
    """Tasks as a tree."""
    with state(ctx).store() as store:
        tasks = store.list_tasks(status)
        depths = store.task_depths()

    def human() -> None:
        if not tasks:
            click.echo("No tasks.")
            return
        rows = [(str(t.id), t.status, "  " * depths.get(t.id, 0) + t.name) for t in tasks]
        print_table(("id", "status", "task"), rows)

    emit(
        as_json,
        {"tasks": [dict(t.to_dict(), depth=depths.get(t.id, 0)) for t in tasks]},
        human,
    )


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="List what would change; change nothing.")
@click.option("--now", "now_text", help="Evaluate the rules at this time (Unix seconds or ISO).")
@click.option(
    "--events-days",
    type=click.IntRange(1, 36500),
    default=EVENT_RETENTION_DAYS,
    show_default=True,
    help="Drop the events of sessions over for this many days (snapshots and knowledge stay).",
)
@json_option
@click.pass_context
@handle_errors
def gc_cmd(
    ctx: click.Context, dry_run: bool, now_text: str | None, events_days: int, as_json: bool
) -> None:
    """Apply the retention rules (expire, archive, old events, names no indexed file holds)
    and report counts per type."""
    now = parse_time(now_text, "--now")
    with state(ctx).store() as store, working("Applying retention rules", quiet=as_json):
        report = store.cleanup(now=now, dry_run=dry_run)
        sessions, events = store.prune_events(days=events_days, now=now, dry_run=dry_run)
        names = store.prune_names(dry_run=dry_run)

    def human() -> None:
        counts = report.counts()
        verb = "Would" if dry_run else "Did"
        if events:
            click.echo(
                f"{verb}: drop {events} event(s) of {sessions} session(s) over for "
                f"{events_days}+ days"
            )
        if names:
            click.echo(f"{verb}: drop {names} name(s) no indexed file holds any more")
        if not counts and not events and not names:
            click.echo("Nothing to clean up.")
        for ctype, per in sorted(counts.items()):
            click.echo(f"{verb}: {ctype}: " + ", ".join(f"{a} {n}" for a, n in sorted(per.items())))
        if dry_run:
            for a in report.actions:
                click.echo(f"  {a.action} #{a.context_id} ({a.type}): {a.reason}")

    data = {
        **report.to_dict(),
        "events": {"sessions": sessions, "events": events},
        "names": names,
    }
    emit(as_json, data, human)


@click.command("export")
@click.option("--json", "as_json", is_flag=True, help="Accepted for symmetry: output is JSONL.")
@click.pass_context
@handle_errors
def export_cmd(ctx: click.Context, as_json: bool) -> None:
    """Write every task and context as JSON Lines to stdout (stable ids)."""
    with state(ctx).store() as store:
        for line in store.export_lines():
            click.echo(line)


@click.command("import")
@click.argument("source", type=click.File("r", encoding="utf-8"))
@json_option
@click.pass_context
@handle_errors
def import_cmd(ctx: click.Context, source: Any, as_json: bool) -> None:
    """Import an export file (- for stdin); duplicates are skipped by content hash."""
    try:
        lines = Store.read_export(source)
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{source.name} is not UTF-8 text; pass a ctxmode export") from exc
    with state(ctx).store() as store, working(f"Importing {len(lines)} lines", quiet=as_json):
        report = store.import_lines(lines)
    emit(
        as_json,
        report.to_dict(),
        lambda: click.echo(
            f"Imported {report.contexts_added} contexts ({report.contexts_skipped} duplicates "
            f"skipped), {report.tasks_added} tasks ({report.tasks_skipped} skipped)"
        ),
    )


@click.group("db")
def db_group() -> None:
    """The store file."""


@db_group.command("path")
@json_option
@click.pass_context
def db_path(ctx: click.Context, as_json: bool) -> None:
    """Print the resolved store path."""
    app = state(ctx)
    emit(
        as_json, {"path": str(app.db_path), "root": str(app.root)}, lambda: click.echo(app.db_path)
    )


@db_group.command("status")
@json_option
@click.pass_context
@handle_errors
def db_status(ctx: click.Context, as_json: bool) -> None:
    """Schema version, size and row counts."""
    with state(ctx).store() as store:
        counts = {
            table: store.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("contexts", "tasks", "files", "events", "sessions")
        }
        data = {
            "path": str(store.path),
            "schema_version": SCHEMA_VERSION,
            "bytes": store.path.stat().st_size,
            "counts": counts,
            "checked_at": int(time.time()),
        }
    emit(
        as_json,
        data,
        lambda: click.echo(
            f"{data['path']}: schema {SCHEMA_VERSION}, {data['bytes']} bytes, "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
        ),
    )


def register(cli: click.Group) -> None:
    for command in (
        init_cmd,
        add_cmd,
        decision_group,
        query_cmd,
        show_cmd,
        supersede_cmd,
        link_cmd,
        rm_cmd,
        task_group,
        gc_cmd,
        export_cmd,
        import_cmd,
        db_group,
    ):
        cli.add_command(command)


__all__ = ["config", "register"]
