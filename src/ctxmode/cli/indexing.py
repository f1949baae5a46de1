"""Indexing, fetching, the sandbox and importers: index, fetch, sources, exec, import-*."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

import click

from ctxmode.cli._common import cli_path, emit, handle_errors, json_option, state
from ctxmode.cli._progress import bars, working
from ctxmode.core.config import FETCH_TTL_S
from ctxmode.core.errors import InvalidInput

if TYPE_CHECKING:
    from ctxmode.store.results import ImportSummary, IndexReport

#: Niceness added to a ``ctxmode index`` process.
INDEX_NICENESS = 10


def _render_index(report: IndexReport, store_bytes: int) -> None:
    for s in report.sources:
        click.echo(
            f"{s.label}: {s.files} file(s), {s.chunks} chunk(s), {s.bytes} bytes ({s.status})"
        )
    size = sum(s.bytes for s in report.sources)
    rate = size / 1e6 / report.seconds if report.seconds > 0 else 0.0
    click.echo(
        f"{report.files} files, {report.chunks} chunks, {size / 1e6:.1f} MB in "
        f"{report.seconds:.1f} s ({rate:.1f} MB/s); store {store_bytes / 1e6:.1f} MB",
        err=True,
    )
    if report.skipped:
        click.echo(f"skipped {len(report.skipped)} file(s):", err=True)
        for item in report.skipped[:20]:
            click.echo(f"  {item.path}: {item.reason}", err=True)
        if len(report.skipped) > 20:
            click.echo(f"  ... and {len(report.skipped) - 20} more", err=True)


@click.command("index")
@click.argument("paths", nargs=-1, required=True)
@click.option("--source", help="Label of the source (default: the path). One PATH only.")
@json_option
@click.pass_context
@handle_errors
def index_cmd(
    ctx: click.Context, paths: tuple[str, ...], source: str | None, as_json: bool
) -> None:
    """Index files or folders for search (honours .gitignore; re-indexing replaces)."""
    if source and len(paths) > 1:
        raise InvalidInput("--source names one source; give a single PATH with it")
    # A long index must not slow the agent's hooks down: on a busy machine they get the CPU
    # first (this process only; the MCP server's index tool runs in the server).
    with contextlib.suppress(OSError, AttributeError):
        os.nice(INDEX_NICENESS)
    resolved = [cli_path(p) for p in paths]
    given = dict(zip(resolved, paths, strict=True))
    with state(ctx).store() as store, bars("indexing", quiet=as_json) as update:
        report = store.index_paths(resolved, source, lambda p, d, t: update(given[p], d, t))
        size = store.disk_bytes()
    emit(as_json, {**report.to_dict(), "store_bytes": size}, lambda: _render_index(report, size))


@click.command("fetch")
@click.argument("url")
@click.option("--source", help="Label of the source (default: the URL).")
@click.option("--ttl", type=int, default=FETCH_TTL_S, show_default=True, help="Cache seconds.")
@click.option("--force", is_flag=True, help="Fetch again even if the cached copy is fresh.")
@json_option
@click.pass_context
@handle_errors
def fetch_cmd(
    ctx: click.Context, url: str, source: str | None, ttl: int, force: bool, as_json: bool
) -> None:
    """Fetch an http(s) URL, convert HTML to markdown and index it."""
    with state(ctx).store() as store, working(f"fetching {url}", quiet=as_json):
        report = store.fetch(url, source, ttl, force=force)
    emit(as_json, report.to_dict(), lambda: click.echo(report.summary))


@click.command("sources")
@click.option("--rm", "remove", metavar="LABEL", help="Delete this source and its chunks.")
@json_option
@click.pass_context
@handle_errors
def sources_cmd(ctx: click.Context, remove: str | None, as_json: bool) -> None:
    """List indexed sources (files, folders, URLs, sandbox output), or delete one."""
    with state(ctx).store() as store:
        if remove is not None:
            if not store.remove_source(remove):
                raise InvalidInput(f"no source {remove!r}; list them with `ctxmode sources`")
            emit(as_json, {"removed": remove}, lambda: click.echo(f"removed {remove}"))
            return
        rows = store.sources()
    data = {"sources": [s.to_dict() for s in rows]}

    def human() -> None:
        if not rows:
            click.echo("no sources indexed yet; try `ctxmode index docs/`")
        for s in rows:
            gone = "\t(missing: indexed again when it is back)" if s.missing else ""
            click.echo(f"{s.label}\t{s.kind}\t{s.chunks} chunks\t{s.bytes} bytes{gone}")

    emit(as_json, data, human)


@click.command("exec")
@click.argument("language")
@click.argument("code")
@click.option("--intent", help="What you look for: large output is indexed, matches returned.")
@click.option("--timeout", type=float, help="Seconds before the process group is killed.")
@json_option
@click.pass_context
@handle_errors
def exec_cmd(
    ctx: click.Context,
    language: str,
    code: str,
    intent: str | None,
    timeout: float | None,
    as_json: bool,
) -> None:
    """Run CODE in LANGUAGE at the project root (use - as CODE to read stdin).

    Small output is printed as is; large output is indexed and a digest is printed. Exits with
    the command's exit code (124 when it timed out, as timeout(1) does).
    """
    text = sys.stdin.read() if code == "-" else code
    with state(ctx).store() as store:
        result = store.execute(language, text, intent=intent, timeout=timeout)

    def human() -> None:
        click.echo(result.output)
        if result.exit_code not in (0, None) or result.timed_out:
            note = "timed out" if result.timed_out else f"exit code {result.exit_code}"
            click.echo(f"[{note}]", err=True)

    emit(as_json, result.to_dict(), human)
    if result.timed_out:
        ctx.exit(124)
    if result.exit_code:  # killed by signal N (negative code): 128 + N, as shells report it
        ctx.exit(result.exit_code if result.exit_code > 0 else 128 - result.exit_code)


def _render_import(summary: ImportSummary) -> None:
    parts = [f"{summary.created} created", f"{summary.unchanged} unchanged"]
    if summary.updated:
        parts.append(f"{summary.updated} updated")
    if summary.superseded:
        parts.append(f"{summary.superseded} superseded")
    click.echo(f"{summary.kind}: " + ", ".join(parts))
    for item in summary.skipped[:20]:
        click.echo(f"  skipped {item}", err=True)


@click.command("import-docs")
@click.argument("path")
@json_option
@click.pass_context
@handle_errors
def import_docs_cmd(ctx: click.Context, path: str, as_json: bool) -> None:
    """Import a docs folder: one reference context per section, linked to its file."""
    with state(ctx).store() as store:
        summary = store.import_docs(cli_path(path))
    emit(as_json, summary.to_dict(), lambda: _render_import(summary))


@click.command("import-tasks")
@click.argument("path")
@json_option
@click.pass_context
@handle_errors
def import_tasks_cmd(ctx: click.Context, path: str, as_json: bool) -> None:
    """Import a task list (markdown checklist or JSON); nesting makes parent tasks."""
    with state(ctx).store() as store:
        summary = store.import_tasks(cli_path(path))
    emit(as_json, summary.to_dict(), lambda: _render_import(summary))


@click.command("import-findings")
@click.argument("path")
@json_option
@click.pass_context
@handle_errors
def import_findings_cmd(ctx: click.Context, path: str, as_json: bool) -> None:
    """Import review findings (JSON or markdown) as constraint contexts."""
    with state(ctx).store() as store:
        summary = store.import_findings(cli_path(path))
    emit(as_json, summary.to_dict(), lambda: _render_import(summary))


def register(cli: click.Group) -> None:
    """Add this module's commands to the root group."""
    for command in (
        index_cmd,
        fetch_cmd,
        sources_cmd,
        exec_cmd,
        import_docs_cmd,
        import_tasks_cmd,
        import_findings_cmd,
    ):
        cli.add_command(command)
