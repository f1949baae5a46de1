"""``ctxmode eval``: a thin command over ``ctxmode.evals`` (check, run, render)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from ctxmode.cli._common import cli_path, emit, handle_errors, json_option, state
from ctxmode.cli._progress import bar
from ctxmode.core import config
from ctxmode.core.errors import InvalidInput

_PERMISSION_MODES = ("bypassPermissions", "acceptEdits", "default", "dontAsk", "plan")


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _render_section(title: str, section: dict[str, Any]) -> None:
    from ctxmode.evals.report import METRICS

    click.echo(title)
    rates = section["pass_rate"]
    passed = "  ".join(
        f"{arm} {rates[arm]['passed']}/{rates[arm]['runs']}" for arm in ("with", "without")
    )
    click.echo(f"  passed: {passed}")
    click.echo(f"  {'':<28} {'with':>12} {'without':>12} {'diff':>12} {'spread':>12}")
    for key, label in METRICS.items():
        m = section["metrics"][key]
        cells = "".join(f" {_fmt(m[c]):>12}" for c in ("with", "without", "diff", "spread"))
        click.echo(f"  {label:<28}{cells}")
    for error in section["errors"]:
        click.echo(f"  error: {error}")
    click.echo(f"  {section['verdict']}")


def _render(report: dict[str, Any]) -> None:
    click.echo(
        f"ctxmode eval: {report['agent']} {report['agent_version']}, "
        f"{report['runs_per_task']} run(s) per task and arm; medians, diff = with - without"
    )
    for task in report["tasks"]:
        _render_section(f"\ntask {task['task']}", task)
    _render_section("\noverall", report["overall"])
    click.echo(
        f"\nraw runs: {report['out_dir']}"
        if report["out_dir"]
        else "\nraw runs: not kept (pass --out DIR to keep them)"
    )
    for warning in report["warnings"]:
        click.echo(f"warning: {warning}")
    if report["interrupted"]:
        click.echo("interrupted: the report covers the runs that finished")


@click.command(name="eval")
@click.argument("tasks_file", metavar="TASKS.toml", type=click.Path(dir_okay=False))
@click.option(
    "--agent",
    type=click.Choice(["claude-code", "qwen-code", "copilot-cli"]),
    default="claude-code",
    show_default=True,
    help="The agent to drive headlessly (Qwen Code: with --approval-mode from --permission-mode).",
)
@click.option("--agent-bin", metavar="PATH", help="The agent's executable (default: on PATH).")
@click.option(
    "--runs",
    type=click.IntRange(1, 100),
    default=3,
    show_default=True,
    help="Runs per task and arm.",
)
@click.option("--out", "out_dir", metavar="DIR", help="Folder for the raw runs (new or empty).")
@click.option("--keep", is_flag=True, help="Keep the scratch copies (their paths are reported).")
@click.option(
    "--permission-mode",
    type=click.Choice(_PERMISSION_MODES),
    default="bypassPermissions",
    show_default=True,
    help="Passed to the agent; it works in a scratch copy, so it may edit without asking.",
)
@json_option
@click.pass_context
@handle_errors
def eval_command(
    ctx: click.Context,
    tasks_file: str,
    agent: str,
    agent_bin: str | None,
    runs: int,
    out_dir: str | None,
    keep: bool,
    permission_mode: str,
    as_json: bool,
) -> int:
    """Run each task of TASKS.toml with and without ctxmode and compare the two.

    Every run works in a scratch copy of this project (HEAD plus uncommitted changes): the
    with-arm has ctxmode installed and this project's store (or the task's history), the
    without-arm has no ctxmode at all. Your checkout and store are not touched.

    \b
    TASKS.toml holds one [[task]] table per task:
      [[task]]
      name = "token-lifetime"                  # letters, digits, . _ -
      prompt = "Shorten the access token lifetime to 2 hours"
      check = "python -m pytest -q tests/test_tokens.py"   # exit 0 = passed
      setup = ["git checkout -q main"]         # optional, run in the copy first
      history = "sessions/auth.jsonl"          # optional: a ctxmode export for the with-arm
      timeout_s = 600                          # optional

    Exits 1 when no run finished (the reasons are printed), 130 when interrupted.
    """
    from ctxmode.evals import agent as agents
    from ctxmode.evals.report import build_report
    from ctxmode.evals.runner import EvalOptions, run_eval
    from ctxmode.evals.tasks import load_tasks

    tasks = load_tasks(Path(cli_path(tasks_file)))
    binary = agents.resolve_binary(agent, cli_path(agent_bin) if agent_bin else None)
    # The first line: some binaries print a multi-line banner for --version.
    version = (agents.preflight(binary, agents.agent_env({}), agent).splitlines() or ["unknown"])[0]
    if out_dir:
        out = Path(cli_path(out_dir))
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise InvalidInput(f"--out {out} exists and is not an empty folder; pick a new one")
    else:
        out = Path(tempfile.mkdtemp(prefix="ctxmode-eval-runs-"))
    app = state(ctx)
    opts = EvalOptions(
        agent=agent,
        binary=binary,
        runs=runs,
        out_dir=out,
        keep=keep,
        permission_mode=permission_mode,
        project_store=app.db_path,
    )
    with bar("eval", quiet=as_json) as update:
        result = run_eval(tasks, config.find_project_root(), opts, agent_version=version,
                          progress=update)  # fmt: skip
    report = build_report(result)
    if not out_dir:
        # Raw runs are kept only where --out says; the report holds the figures.
        shutil.rmtree(out, ignore_errors=True)
        report["out_dir"] = None
    emit(as_json, report, lambda: _render(report))
    if result.interrupted:
        return 130
    finished = [r for r in result.results if r.error is None]
    if result.results and not finished:
        reasons = sorted({str(r.error) for r in result.results})
        raise click.ClickException(
            f"no run finished ({len(result.results)} tried); "
            + "; ".join(reasons[:3])
            + (f"; and {len(reasons) - 3} other reasons" if len(reasons) > 3 else "")
        )
    return 0


def register(cli: click.Group) -> None:
    """Add ``eval`` to the root group."""
    cli.add_command(eval_command)
