"""Viewer and health commands: ``ui`` (local web viewer), ``doctor`` and ``stats``."""

from __future__ import annotations

import socket

import click

from ctxmode import doctor, stats
from ctxmode.cli._common import emit, handle_errors, json_option, state
from ctxmode.core.errors import InvalidInput

#: Port of ``ctxmode ui`` unless --port says otherwise.
DEFAULT_PORT = 8765


def _check_port_free(port: int) -> None:
    """Fail early with a clear message instead of uvicorn's log line when the port is taken."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise InvalidInput(
                f"port {port} on 127.0.0.1 is not available ({exc.strerror}); "
                "pick another with --port (0 lets the system choose)"
            ) from exc


@click.command("ui")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a browser.")
@click.pass_context
@handle_errors
def ui_cmd(ctx: click.Context, port: int, open_browser: bool) -> None:
    """Browse and correct this project's store in a local web viewer (127.0.0.1 only)."""
    app = state(ctx)
    with app.store():
        pass  # create and migrate the store before serving, so the first page load is cheap
    _check_port_free(port)
    # The CLI is the viewer's composition root: it starts the web interface and then only waits
    # for it. Imported lazily so other commands never load starlette, jinja2 or uvicorn.
    from ctxmode import web

    web.serve(
        app.db_path,
        app.root,
        port=port,
        open_browser=open_browser,
        on_ready=lambda url: click.echo(f"ctxmode viewer on {url} (Ctrl-C to stop)", err=True),
    )


@click.command("doctor")
@click.option(
    "--repair",
    is_flag=True,
    help="Repair a damaged store: rebuild a damaged search index in place, else salvage it.",
)
@json_option
@click.pass_context
def doctor_cmd(ctx: click.Context, repair: bool, as_json: bool) -> None:
    """Check the store, FTS5, agent hooks and the hook log; each line says the fix.

    With --repair, a damaged store is repaired: damage confined to the search index or an
    index is rebuilt in the same file; other damage is salvaged (every readable row copied
    into a new store, the damaged file kept beside it). Exits 1 when any check FAILs.
    """
    app = state(ctx)
    checks = doctor.run(app.db_path, app.root)
    if repair and (doctor.needs_repair(checks) or doctor.repair_due(app.db_path)):
        from ctxmode.cli._progress import bars
        from ctxmode.core.errors import StoreError

        try:
            with bars("filling", quiet=as_json) as update:
                account = doctor.repair(
                    app.db_path, lambda text: click.echo(text, err=True), update
                )
        except StoreError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(account, err=True)
        checks = doctor.run(app.db_path, app.root)
    level = doctor.worst(checks)

    def human() -> None:
        for c in checks:
            color = {"OK": "green", "WARN": "yellow", "FAIL": "red"}[c.level]
            click.echo(f"{click.style(f'{c.level:<4}', fg=color)}  {c.name}: {c.message}")
            if c.fix and c.level != "OK":
                click.echo(f"      fix: {c.fix}")

    emit(
        as_json,
        {"status": level, "db": str(app.db_path), "checks": [c.to_dict() for c in checks]},
        human,
    )
    if level == "FAIL":
        ctx.exit(1)


@click.command("stats")
@click.option("--days", type=click.IntRange(1, 3660), default=stats.DEFAULT_DAYS, show_default=True)
@json_option
@click.pass_context
@handle_errors
def stats_cmd(ctx: click.Context, days: int, as_json: bool) -> None:
    """Measured figures: contexts, tasks, events, sessions, snapshots, sandbox savings."""
    with state(ctx).store() as store:
        st = stats.collect(store, days=days)

    def human() -> None:
        def line(label: str, value: object) -> None:
            click.echo(f"{label:<22} {value}")

        line("store", f"{st.db_path} ({st.db_bytes} bytes, schema {st.schema_version})")
        if st.space:
            line("  space", ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in st.space.items()))
        line(
            "contexts",
            f"{st.contexts_total} ({st.contexts_live} live, {st.contexts_superseded} superseded, "
            f"{st.contexts_stale} stale, {st.contexts_archived} archived)",
        )
        line("  by type", ", ".join(f"{k} {v}" for k, v in st.contexts_by_type.items()))
        line("  by tier", ", ".join(f"tier {k}: {v}" for k, v in st.contexts_by_tier.items()))
        line("tasks", ", ".join(f"{k} {v}" for k, v in st.tasks_by_status.items()))
        line("files", st.files)
        line("sessions", st.sessions)
        line(
            "events",
            f"{st.events_total}"
            + (
                ": " + ", ".join(f"{k} {v}" for k, v in st.events_by_category.items())
                if st.events_total
                else ""
            ),
        )
        snap = st.snapshots
        line(
            "snapshots",
            f"{snap.built} built ({snap.consumed} injected), bytes min {snap.min_bytes} / "
            f"mean {snap.mean_bytes:.0f} / max {snap.max_bytes}",
        )
        line("sandbox", stats.sandbox_line(st.sandbox))
        line("injections", stats.injection_line(st.injections))
        recent = [f"{d[5:]} {n}" for d, n in st.events_per_day if n]
        line(f"events/day ({days}d)", ", ".join(recent) if recent else "none")

    emit(as_json, st.to_dict(), human)


def register(cli: click.Group) -> None:
    """Add this module's commands to the root group."""
    for command in (ui_cmd, doctor_cmd, stats_cmd):
        cli.add_command(command)
