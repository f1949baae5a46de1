"""Shared plumbing of the CLI: store opening, ``--json`` output and error translation."""

from __future__ import annotations

import difflib
import functools
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from ctxmode.core import config
from ctxmode.core.db import translate_sqlite_error, write_gitignore
from ctxmode.core.errors import CtxmodeError
from ctxmode.store import Store

F = TypeVar("F", bound=Callable[..., Any])


class AppState:
    """What the root group parsed: the store location."""

    def __init__(self, db: str | None) -> None:
        self.db = db

    @property
    def db_path(self) -> Path:
        return config.resolve_db_path(self.db)

    @property
    def root(self) -> Path:
        path = self.db_path
        if path.parent.name == config.CONTEXT_DIR:
            return path.parent.parent
        return config.find_project_root()

    @contextmanager
    def store(self, *, create: bool = False, sync: bool = True) -> Iterator[Store]:
        """The open store; with ``sync``, teammates' shared files are picked up first and
        the command's own edits of shared items are written to their files after.

        Only ``init`` passes ``create``: any other command run outside a project (or before
        ``init``) says there is no store and how to make one, instead of leaving a new empty
        store in whatever folder it ran in. One exception: a clone of a project whose team
        knowledge is committed (``.context/shared``) was set up by a teammate, so its first
        command creates this clone's store, as ``init`` would, and says so.
        """
        path = self.db_path
        clone = not create and not path.exists() and self._team_clone(path)
        with Store.open(path, root=self.root, create=create or clone) as store:
            if clone:
                write_gitignore(str(path.parent))
                click.echo(
                    f"ctxmode: created this clone's store {path} (the project shares team "
                    f"knowledge in {config.CONTEXT_DIR}/{config.SHARED_DIR})",
                    err=True,
                )
            if sync:
                _note(store.refresh_shared())
            yield store
            if sync:
                _note(store.refresh_shared())

    def _team_clone(self, path: Path) -> bool:
        """Whether ``path`` is the default store of a project with committed team files."""
        return path.parent.name == config.CONTEXT_DIR and (path.parent / config.SHARED_DIR).is_dir()


def _note(report: Any) -> None:
    if report is not None and report.changed:
        click.echo(f"ctxmode: team knowledge: {report.summary()}", err=True)


class Choice(click.Choice):  # type: ignore[type-arg]
    """``click.Choice`` that names the nearest choice when a value is mistyped."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            near = difflib.get_close_matches(str(value), [str(c) for c in self.choices], n=1)
            if not near:
                raise
            raise click.BadParameter(
                f"{exc.message} Did you mean {near[0]!r}?", ctx=ctx, param=param
            ) from exc


def state(ctx: click.Context) -> AppState:
    obj = ctx.find_object(AppState)
    if obj is None:  # a subcommand invoked directly in tests
        obj = AppState(None)
        ctx.obj = obj
    return obj


def json_option(func: F) -> F:
    """Add ``--json``: print exactly one JSON document on stdout."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document on stdout."
    )(func)


def emit(as_json: bool, data: Any, human: Callable[[], None] | None = None) -> None:
    """Print ``data`` as JSON, or call ``human`` to render it for people."""
    if as_json or human is None:
        click.echo(json.dumps(data, ensure_ascii=False, indent=None, default=str))
    else:
        human()


#: What to do next (``core.errors.HINTS``), in the command line's words.
CLI_HINTS = {
    "list_contexts": "list ids with `ctxmode query`",
    "list_tasks": "create it with `ctxmode task add` or list them with `ctxmode task list`",
    "task_id": "pass it with --task",
    "list_sources": "list indexed sources with `ctxmode sources`",
    "choose_store": "cd into your project, or pass --db PATH",
}


def fail_with(exc: CtxmodeError, as_json: bool) -> None:
    message = exc.render(CLI_HINTS)
    if as_json:
        click.echo(json.dumps({"error": message, "kind": type(exc).__name__, "hint": exc.hint}))
    raise click.ClickException(message)


def handle_errors(func: F) -> F:
    """Translate ``CtxmodeError`` into ``Error: ...`` on stderr and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CtxmodeError as exc:
            fail_with(exc, bool(kwargs.get("as_json")))
        except sqlite3.Error as exc:
            # A storage error the core did not translate: still a message, never a traceback.
            ctx = click.get_current_context(silent=True)
            path = state(ctx).db_path if ctx is not None else Path(config.DB_NAME)
            fail_with(translate_sqlite_error(exc, path), bool(kwargs.get("as_json")))

    return wrapper  # type: ignore[return-value]


def parse_json_object(text: str | None, option: str) -> dict[str, Any] | None:
    """Parse a ``--meta``-style option; a clear error when it is not a JSON object."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f'not valid JSON ({exc.msg}); pass an object such as \'{{"key": "value"}}\'',
            param_hint=option,
        ) from exc
    if not isinstance(value, dict):
        raise click.BadParameter(
            'must be a JSON object such as {"key": "value"}', param_hint=option
        )
    return value


def cli_path(path: str) -> str:
    """A path typed at the shell is relative to the current directory."""
    return str(Path(path).expanduser().absolute()) if not os.path.isabs(path) else path


def parse_time(value: str | None, option: str, *, end_of_day: bool = False) -> int | None:
    """A time option: Unix seconds, or an ISO date/datetime (UTC when no zone is given).

    With ``end_of_day``, a date without a time means its last second (``--until 2026-03-01``
    includes that whole day), not its first.
    """
    if value is None:
        return None
    text = value.strip()
    if text.lstrip("-").isdigit():
        if not config.SQLITE_INT_MIN <= int(text) <= config.SQLITE_INT_MAX:
            raise click.BadParameter(f"{text} is out of range for Unix seconds", param_hint=option)
        return int(text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise click.BadParameter(
            "use Unix seconds or an ISO date such as 2026-03-01 or 2026-03-01T12:00",
            param_hint=option,
        ) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    if end_of_day and _is_date(text):
        return int(parsed.timestamp()) + 86_399
    return int(parsed.timestamp())


def _is_date(text: str) -> bool:
    """Whether ``text`` is an ISO date alone (no time of day)."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def format_time(ts: int | None) -> str:
    """Unix seconds as ``YYYY-MM-DD HH:MM`` (UTC) for human output; ``-`` when unset."""
    if not ts:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)}


def printable(text: str) -> str:
    """Stored text for a terminal: control characters (escape sequences) shown, not obeyed."""
    return text.translate(_CONTROL)
