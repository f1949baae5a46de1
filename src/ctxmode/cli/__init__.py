"""The ``ctxmode`` command line: thin commands over the core (parse, one core call, render).

Command groups live in sibling modules, each exposing ``register(cli)``. A module is imported
only when one of its commands runs (or ``--help`` lists them all): ``ctxmode search`` then
loads the search stack alone, not the installers, the sandbox or rich's tables.

May import: the core packages and the ``store`` facade. It is the composition root of
``ctxmode ui``, ``hook`` and ``serve``, so it may start the web, hooks and MCP faces, no more.
"""

from __future__ import annotations

import difflib
import importlib
import json
import sys
from typing import Any

import click

from ctxmode import __version__
from ctxmode.cli._common import AppState
from ctxmode.core.redact import scrub_surrogates

#: Modules that add commands, and the top-level commands each one's ``register`` adds (a test
#: checks the two agree).
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "ctxmode.cli.knowledge": (
        "add", "db", "decision", "export", "gc", "import", "init", "link", "query", "rm",
        "show", "supersede", "task",
    ),
    "ctxmode.cli.sessions": ("events", "hook", "sessions", "snapshot"),
    "ctxmode.cli.history": ("history", "inbox"),
    "ctxmode.cli.search": ("get", "search"),
    "ctxmode.cli.serve": ("serve",),
    "ctxmode.cli.web": ("doctor", "stats", "ui"),
    "ctxmode.cli.install": ("agents", "install", "uninstall"),
    "ctxmode.cli.evals": ("eval",),
    "ctxmode.cli.team": ("share", "sync", "team", "unshare"),
    "ctxmode.cli.indexing": (
        "exec", "fetch", "import-docs", "import-findings", "import-tasks", "index", "sources",
    ),
}  # fmt: skip
#: Command name -> the module that adds it.
_MODULE_OF = {name: module for module, names in COMMAND_MODULES.items() for name in names}


class CtxmodeGroup(click.Group):
    """Root group: every error, usage errors included, exits 1 with ``Error: ...`` (and, with
    ``--json``, a ``{"error", "kind"}`` document on stdout)."""

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        standalone_mode: bool = True,
        **kwargs: Any,
    ) -> Any:
        # Undecodable argv bytes arrive as lone surrogates, which SQLite and UTF-8 output
        # reject: store U+FFFD instead.
        args = scrub_surrogates(list(sys.argv[1:] if args is None else args))
        if not standalone_mode:
            return super().main(args, prog_name, standalone_mode=False, **kwargs)
        try:
            rv = super().main(args, prog_name, standalone_mode=False, **kwargs)
        except click.UsageError as exc:
            # Raised while parsing, before the command runs: with --json the caller still gets
            # its one JSON document (core errors print theirs in ``_common.fail_with``).
            if "--json" in args:
                error = {"error": exc.format_message(), "kind": "UsageError"}
                click.echo(json.dumps(error))
            exc.show()
            sys.exit(1)
        except click.ClickException as exc:
            exc.show()
            sys.exit(1)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = args[0] if args else ""
            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            if not near or name.startswith("-"):
                raise
            raise click.UsageError(
                f"No such command {name!r}. Did you mean {near[0]!r}?", ctx
            ) from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*_MODULE_OF, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = _MODULE_OF.get(cmd_name)
        if cmd_name not in self.commands and module is not None:
            importlib.import_module(module).register(self)
        return self.commands.get(cmd_name)


@click.group(cls=CtxmodeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxmode")
@click.option(
    "--db",
    envvar="CTXMODE_DB",
    type=click.Path(dir_okay=False),
    help="Store file (default: <project root>/.context/context.db; env CTXMODE_DB).",
)
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """ctxmode: keep your coding agent's project context outside its window."""
    ctx.obj = AppState(db)
