"""Search commands: ``search QUERY`` (compact hits) and ``get ID...`` (full text by id)."""

from __future__ import annotations

import re
import sys
from typing import Any

import click

from ctxmode.cli._common import (
    cli_path,
    emit,
    format_time,
    handle_errors,
    json_option,
    parse_time,
    state,
)


@click.command("search")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--source", help="Only this source label (e.g. knowledge, events, docs/api.md).")
@click.option("--type", "type_", help="Only this type (context type, event category, chunk kind).")
@click.option("--session", "session_id", help="Only items of this session id.")
@click.option("--task", "task_id", type=int, help="Only contexts linked to this task id.")
@click.option("--file", "file_path", help="Only contexts linked to this file (or folder).")
@click.option("--since", help="Created at or after (Unix seconds or ISO date).")
@click.option(
    "--until", help="Created at or before (Unix seconds or ISO date; a date includes its day)."
)
@click.option(
    "--budget", type=click.IntRange(200), default=4000, show_default=True, help="Max characters."
)
@json_option
@click.pass_context
@handle_errors
def search_cmd(
    ctx: click.Context,
    query: str,
    limit: int,
    source: str | None,
    type_: str | None,
    session_id: str | None,
    task_id: int | None,
    file_path: str | None,
    since: str | None,
    until: str | None,
    budget: int,
    as_json: bool,
) -> None:
    """Search contexts, session events and indexed documents for QUERY.

    Prints compact hits (id, title, snippet); read one in full with `ctxmode get ID`.
    """
    start, end = parse_time(since, "--since"), parse_time(until, "--until", end_of_day=True)
    with state(ctx).store() as store:
        result = store.search(
            query,
            limit=limit,
            source=source,
            type=type_,
            session_id=session_id,
            task_id=task_id,
            file_path=cli_path(file_path) if file_path else None,
            since=start,
            until=end,
            budget_chars=budget,
        )
        refs = store.session_refs([int(h.id[4:]) for h in result.hits if h.id.startswith("evt:")])

    def session_of(hit_id: str) -> dict[str, Any] | None:
        return refs.get(int(hit_id[4:])) if hit_id.startswith("evt:") else None

    def human() -> None:
        if result.notice:
            click.echo(result.notice, err=True)
        if not result.hits:
            click.echo("No match.", err=True)
            return
        if not result.confident:
            click.echo("No confident match; the closest items:", err=True)
        tty = sys.stdout.isatty()
        for hit in result.hits:
            flag = hit.flags
            click.echo(
                f"{hit.id:<10} {hit.type:<10} {format_time(hit.created_at)}  {hit.title}{flag}"
                f"  [{hit.source}]"
            )
            ref = session_of(hit.id)
            if ref is not None:
                click.echo(
                    f"    session {str(ref['session'])[:8]} {ref['agent']} "
                    f"{format_time(ref['session_started_at'])} ({ref['origin']})"
                )
            click.echo(f"    {terminal_marks(hit.snippet, bold=tty)}")
        shown = sum(hit.matched for hit in result.hits)
        if result.total > shown:
            click.echo(f"{shown} of {result.total} matches shown.", err=True)

    data = result.to_dict()
    for hit in data["hits"]:
        ref = session_of(hit["id"])
        if ref is not None:
            hit["session"] = ref
    emit(as_json, data, human)


_MARKED = re.compile(r"\*\*(?=\S)((?:(?!\*\*).)+?)(?<=\S)\*\*")


def terminal_marks(snippet: str, *, bold: bool) -> str:
    """A snippet's ``**match**`` marks as the terminal's bold, or dropped when the output is
    not a terminal: people never see literal asterisks (``--json`` keeps them for agents)."""
    return _MARKED.sub(
        lambda m: click.style(m.group(1), bold=True) if bold else m.group(1), snippet
    )


@click.command("get")
@click.argument("ids", nargs=-1, required=True)
@click.option(
    "--budget", type=click.IntRange(200), default=20000, show_default=True, help="Max characters."
)
@json_option
@click.pass_context
@handle_errors
def get_cmd(ctx: click.Context, ids: tuple[str, ...], budget: int, as_json: bool) -> None:
    """Print the full text of search hits by id (ctx:12, evt:34, doc:56)."""
    with state(ctx).store() as store:
        items = store.get_items(list(ids), budget_chars=budget)

    def human() -> None:
        for item in items:
            flag = item.flags
            click.echo(
                f"== {item.id} {item.type} {format_time(item.created_at)} [{item.source}]{flag}"
            )
            click.echo(item.text)

    emit(as_json, {"items": [i.to_dict() for i in items]}, human)


def register(cli: click.Group) -> None:
    """Add this module's commands to the root group."""
    cli.add_command(search_cmd)
    cli.add_command(get_cmd)
