"""The two arms of every task and run, in scratch copies, one after the other.

Per run: copy the project, run the task's ``setup``, prepare the arm, run the agent, run the
``check``, read the figures, remove the copy (unless ``keep``).

- **with**: ctxmode installed for the agent in the copy (``--scope project``), its store at
  ``<copy>/.context/context.db`` holding the task's ``history`` export, else a copy of the
  project's store, else empty; ``CTXMODE_DB`` names it, so no hook can reach another store.
- **without**: ctxmode's project entries removed from the copy, no store, ``CTXMODE_DISABLE=1``
  (a user-scope install stays silent) and ``CTXMODE_DB`` pointing at a file that must never
  appear; the run records whether any trace of ctxmode showed up anyway.

Arm order alternates between runs (run 1: with first, run 2: without first, ...), so neither
arm always gets the warm caches. Ctrl-C ends the running agent, removes its copy and returns
what finished, marked ``interrupted``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ctxmode.agents import install as installer
from ctxmode.core import config
from ctxmode.evals import workspace
from ctxmode.evals.agent import AgentRun, agent_env, run_agent
from ctxmode.evals.tasks import Task

__all__ = [
    "ARMS",
    "EvalOptions",
    "EvalResult",
    "RunResult",
    "arm_order",
    "run_eval",
    "user_scope_install",
]

ARMS = ("with", "without")
_OUTPUT_TAIL = 4000


@dataclass(frozen=True)
class EvalOptions:
    agent: str
    binary: str
    runs: int
    out_dir: Path
    keep: bool = False
    permission_mode: str = "bypassPermissions"
    scratch_dir: Path | None = None
    #: The project's own store, copied into the with-arm when a task has no ``history``.
    project_store: Path | None = None


@dataclass
class RunResult:
    task: str
    run: int
    arm: str
    order: int
    passed: bool
    error: str | None
    agent: AgentRun
    check_exit: int | None = None
    store: dict[str, Any] = field(default_factory=dict)
    ctxmode_traces: list[str] = field(default_factory=list)
    copy: str | None = None
    raw: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(data.pop("agent"))
        return data


@dataclass
class EvalResult:
    tasks: list[Task]
    runs: int
    agent: str
    agent_version: str
    out_dir: Path
    scratch_dir: Path
    results: list[RunResult] = field(default_factory=list)
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)


def user_scope_install(agent: str) -> list[str]:
    """The user-scope config files that hold ctxmode entries for ``agent`` (seen by both arms:
    its hooks are silenced in the without-arm, its MCP server is not)."""
    with tempfile.TemporaryDirectory(prefix="ctxmode-eval-probe-") as empty:
        st = installer.status(agent, project_root=Path(empty), home=config.home_dir())
    return list(st.config_paths)


def arm_order(run: int) -> tuple[str, str]:
    """Run 1 (and every odd one) starts with ctxmode, the even ones without it."""
    return ARMS if run % 2 == 1 else (ARMS[1], ARMS[0])


def _shell(command: str, cwd: Path, env: dict[str, str], timeout_s: int) -> tuple[int, str]:
    """Run a task command through the shell; (exit status, the tail of its output)."""
    try:
        done = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout_s} s"
    output = (done.stdout + done.stderr).decode("utf-8", "replace")
    return done.returncode, output[-_OUTPUT_TAIL:]


def _store_path(copy: Path) -> Path:
    return copy / config.CONTEXT_DIR / config.DB_NAME


def _prepare_with(
    task: Task, copy: Path, project_store: Path | None, agent: str = "claude-code"
) -> dict[str, Any]:
    from ctxmode.exchange.transfer import import_lines
    from ctxmode.store import Store

    db = _store_path(copy)
    info: dict[str, Any] = {"source": "empty"}
    if task.history is not None:
        with Store.open(db, root=copy) as store, task.history.open(encoding="utf-8") as lines:
            info = {"source": "history", **import_lines(store, lines).to_dict()}
    elif project_store is not None and workspace.copy_store(project_store, db):
        info = {"source": "project"}
    with Store.open(db, root=copy):  # migrated to this ctxmode's schema, or created
        pass
    # A scratch copy, never committed: the interpreter goes into .mcp.json itself rather than
    # into the user's ~/.claude.json (portable=False).
    installer.install(
        agent, scope="project", project_root=copy, home=config.home_dir(), portable=False
    )
    return info


def _prepare_without(copy: Path, agent: str) -> None:
    # A committed .mcp.json (or a copied settings file) may name ctxmode: take it out.
    installer.uninstall(agent, scope="project", project_root=copy, home=config.home_dir())


def _store_figures(db: Path, session_id: str | None) -> dict[str, Any]:
    """What the with-arm's store recorded of the session: its events and injected snapshots."""
    from ctxmode.store import Store

    if not db.is_file():
        return {"exists": False}
    with Store.open(db, create=False) as store:
        conn = store.conn
        sid = session_id or ""
        session_events = conn.execute(
            "SELECT count(*) FROM events WHERE session_id = ?", (sid,)
        ).fetchone()[0]
        by_category = dict(
            conn.execute(
                "SELECT category, count(*) FROM events WHERE session_id = ? GROUP BY category",
                (sid,),
            ).fetchall()
        )
        snapshots = conn.execute(
            "SELECT count(*), coalesce(sum(bytes), 0) FROM session_resume WHERE consumed = 1"
        ).fetchone()
        contexts = conn.execute("SELECT count(*) FROM contexts").fetchone()[0]
    return {
        "exists": True,
        "session_events": int(session_events),
        "events_by_category": by_category,
        "snapshots_injected": int(snapshots[0]),
        "snapshot_bytes_injected": int(snapshots[1]),
        "contexts": int(contexts),
    }


def _traces(copy: Path, sentinel: Path, run: AgentRun, agent: str) -> list[str]:
    """Every sign of ctxmode in a without-arm run (should be none)."""
    found = []
    if (copy / config.CONTEXT_DIR).exists():
        found.append(f"{config.CONTEXT_DIR}/ in the copy")
    if sentinel.exists():
        found.append(f"a store at {sentinel}")
    st = installer.status(agent, project_root=copy, home=copy / ".no-home")
    if st.hooks_installed or st.mcp_installed:
        found.append(f"ctxmode entries in the copy's {agent} config")
    if "ctxmode" in run.mcp_servers:
        found.append("the ctxmode MCP server was loaded")
    if run.injected_bytes:
        found.append(f"{run.injected_bytes} bytes injected by ctxmode hooks")
    return found


def _one(
    task: Task, run: int, arm: str, order: int, root: Path, opts: EvalOptions, scratch: Path
) -> RunResult:
    label = f"{task.name}/run{run}-{arm}"
    copy = scratch / task.name / f"run{run}-{arm}" / "project"
    raw = opts.out_dir / task.name / f"run{run}-{arm}.jsonl"
    result = RunResult(task.name, run, arm, order, False, None, AgentRun(), raw=str(raw))
    sentinel = copy.parent / "no-ctxmode.db"
    try:
        workspace.copy_project(root, copy, exclude=(opts.out_dir, scratch))
        if arm == "with":
            db = _store_path(copy)
            env = agent_env({config.ENV_DB: str(db)})
        else:
            env = agent_env({config.ENV_DISABLE: "1", config.ENV_DB: str(sentinel)})
        for command in task.setup:
            rc, output = _shell(command, copy, env, task.timeout_s)
            if rc:
                result.error = f"setup command {command!r} exited {rc}: {output[-500:]}"
                return result
        if arm == "with":
            result.store["loaded"] = _prepare_with(task, copy, opts.project_store, opts.agent)
        else:
            _prepare_without(copy, opts.agent)
        result.agent = run_agent(
            opts.binary,
            task.prompt,
            cwd=copy,
            env=env,
            timeout_s=task.timeout_s,
            raw_path=raw,
            stderr_path=raw.with_suffix(".stderr.txt"),
            permission_mode=opts.permission_mode,
            agent=opts.agent,
        )
        if result.agent.timed_out:
            result.error = f"the agent did not finish within {task.timeout_s} s"
        elif result.agent.turns is None:
            tail = raw.with_suffix(".stderr.txt").read_text(errors="replace")[-500:].strip()
            result.error = f"the agent exited {result.agent.exit_code} without a result: " + (
                tail or "it wrote no stream-json result (is --agent-bin Claude Code?)"
            )
        rc, output = _shell(task.check, copy, env, task.timeout_s)
        result.check_exit = rc
        result.passed = rc == 0
        raw.with_suffix(".check.txt").write_text(output, encoding="utf-8")
        if arm == "with":
            result.store.update(_store_figures(_store_path(copy), result.agent.session_id))
        else:
            result.ctxmode_traces = _traces(copy, sentinel, result.agent, opts.agent)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # one broken run must not lose the others
        result.error = f"{label}: {type(exc).__name__}: {exc}"
    finally:
        if opts.keep:
            result.copy = str(copy)
        else:
            workspace.remove_copy(copy.parent)
    return result


@contextmanager
def _scratch(opts: EvalOptions) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ctxmode-eval-", dir=opts.scratch_dir))
    try:
        yield path
    finally:
        if not opts.keep:
            workspace.remove_copy(path)


def run_eval(
    tasks: list[Task],
    root: Path,
    opts: EvalOptions,
    *,
    agent_version: str,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> EvalResult:
    """Run every task ``opts.runs`` times in both arms; Ctrl-C keeps what finished."""
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    total = len(tasks) * opts.runs * len(ARMS)
    with _scratch(opts) as scratch:
        result = EvalResult(tasks, opts.runs, opts.agent, agent_version, opts.out_dir, scratch)
        found = user_scope_install(opts.agent)
        if found:
            result.warnings.append(
                f"ctxmode is installed for {opts.agent} in your user config ({', '.join(found)}): "
                "the without-arm still loads its MCP server (its hooks are disabled there); "
                f"`ctxmode uninstall {opts.agent} --scope user` for a clean comparison"
            )
        progress(0, total)
        log = opts.out_dir / "runs.jsonl"
        try:
            for task in tasks:
                for run in range(1, opts.runs + 1):
                    for order, arm in enumerate(arm_order(run), 1):
                        started = time.time()
                        one = _one(task, run, arm, order, root, opts, scratch)
                        result.results.append(one)
                        record = {"started_at": int(started), **one.to_dict()}
                        with log.open("a", encoding="utf-8") as f:
                            f.write(json.dumps(record, default=str) + "\n")
                        progress(len(result.results), total)
        except KeyboardInterrupt:
            result.interrupted = True
    return result
