"""Health checks of one project's ctxmode setup, each with the fix to apply.

Invariants:
- doctor only reads: the store is opened read-only (``mode=ro``), never created, migrated or
  repaired, so running it on a broken setup cannot make things worse;
- every check returns a frozen ``Check`` (name, level, message, fix) instead of raising, so
  one broken part never hides the report on the others;
- ``FAIL`` means something does not work now; ``WARN`` means it works but needs attention.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ctxmode.core import config
from ctxmode.core.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from collections.abc import Callable

    from ctxmode.agents.install import AgentStatus

Level = Literal["OK", "WARN", "FAIL"]
LEVELS: tuple[Level, ...] = ("OK", "WARN", "FAIL")

#: Hook log errors newer than this count as recent.
LOG_WINDOW_S = 86_400
#: Only the end of the hook log is read, so a huge log cannot stall the check.
LOG_TAIL_BYTES = 1 << 20


@dataclass(frozen=True)
class Check:
    """One finding: ``fix`` says what to run or change (empty when nothing is needed)."""

    name: str
    level: Level
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "level": self.level, "message": self.message, "fix": self.fix}


def worst(checks: tuple[Check, ...] | list[Check]) -> Level:
    """The most severe level among ``checks`` (OK for none)."""
    return max((c.level for c in checks), key=LEVELS.index, default="OK")


#: The fix for a damaged store: ``repair`` (``core.salvage``).
REPAIR = (
    "run `ctxmode doctor --repair`: it copies every readable context, task, link, event and "
    "snapshot into a new store (the search index is rebuilt; indexed files are read again) and "
    "keeps the damaged file as context.db.bad-<time>"
)


def check_writable(db_path: Path) -> list[Check]:
    """The store file and its folder are writable (SQLite's log and lock files live there)."""
    import os

    for path in (db_path.parent, db_path):
        if path.exists() and not os.access(path, os.W_OK):
            return [
                Check(
                    "writable",
                    "FAIL",
                    f"{path} is read-only: nothing can be recorded (nothing is lost either)",
                    f"make it writable by you: `chmod u+w {path}` (and check its owner); "
                    "do not move the store aside",
                )
            ]
    return []


def repair_in_place_fix(what: str) -> str:
    """The fix for damage confined to derived structures (``core.repair``)."""
    return (
        f"run `ctxmode doctor --repair`: it rebuilds {what} in place from the tables (nothing "
        "is copied or moved; every context, task, link and event stays where it is)"
    )


def repair(
    db_path: Path,
    log: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> str:
    """Repair a damaged store (``core.repair.repair``: in place when only derived structures are
    damaged, else a salvage into a new store), then write the hook calls spooled meanwhile;
    return a one-line account. ``progress(table, rows done, rows)`` follows the refill of a
    search index."""
    from ctxmode.core.db import Database
    from ctxmode.core.errors import StoreError
    from ctxmode.core.repair import repair as repair_store
    from ctxmode.sessions import spool

    account, kept = repair_store(str(db_path), log, progress)
    if kept is not None:
        account += f"; the damaged file is kept as {kept}"
    if spool.waiting(config.spool_dir_for(db_path)):
        written = 0
        try:
            with Database.open(db_path) as db:
                while done := spool.replay(db, limit=spool.REPLAY_BATCH):
                    written += done
        except StoreError as exc:
            return f"{account}; hook calls kept while it ran wait for the next hook ({exc})"
        account += f"; wrote {written} hook call(s) kept while it ran"
    return account


def repair_due(db_path: Path) -> bool:
    """Whether ``repair`` should run whatever the checks say: a hook started this process for
    it, or a repair was stopped midway (``core.repair.repair_due``)."""
    from ctxmode.core import repair as store_repair

    return store_repair.repair_due(str(db_path))


def needs_repair(checks: tuple[Check, ...] | list[Check]) -> bool:
    """Whether a check found damage that ``repair`` fixes."""
    return any(c.level == "FAIL" and "`ctxmode doctor --repair`" in c.fix for c in checks)


def _connect_ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=2.0)


def check_fts5() -> Check:
    """FTS5 with the porter and trigram tokenizers is compiled into this Python's SQLite."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t1 USING fts5(a, tokenize='porter unicode61')")
        conn.execute("CREATE VIRTUAL TABLE t2 USING fts5(a, tokenize='trigram')")
    except sqlite3.Error as exc:
        return Check(
            "fts5",
            "FAIL",
            f"SQLite {sqlite3.sqlite_version} lacks FTS5 or its trigram tokenizer ({exc})",
            "use a Python whose SQLite is 3.34 or newer with FTS5 (python.org and most "
            "distribution builds qualify)",
        )
    finally:
        conn.close()
    return Check(
        "fts5", "OK", f"FTS5 with porter and trigram tokenizers (SQLite {sqlite3.sqlite_version})"
    )


def check_database(db_path: Path) -> list[Check]:
    """DB found, schema version and ``PRAGMA integrity_check``."""
    if not db_path.exists():
        return [
            Check(
                "database",
                "WARN",
                f"no store yet at {db_path}",
                "run `ctxmode init` in the project (the first hook event also creates it)",
            )
        ]
    if not db_path.is_file():
        return [
            Check("database", "FAIL", f"{db_path} is not a file", "remove it or pass --db <file>")
        ]
    checks = [Check("database", "OK", f"{db_path} ({db_path.stat().st_size} bytes)")]
    checks.extend(check_writable(db_path))
    move_aside = REPAIR
    try:
        conn = _connect_ro(db_path)
    except sqlite3.Error as exc:
        return [*checks, Check("schema", "FAIL", f"cannot open {db_path}: {exc}", move_aside)]
    try:
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )
            }
        except sqlite3.Error as exc:
            return [
                *checks,
                Check(
                    "schema", "FAIL", f"{db_path} is not a readable database ({exc})", move_aside
                ),
            ]
        checks.append(_schema_check(version, tables))
        checks.append(_integrity_check(conn, move_aside))
    finally:
        conn.close()
    return checks


def _schema_check(version: int, tables: set[str]) -> Check:
    if tables and "_migrations" not in tables:
        return Check(
            "schema",
            "FAIL",
            f"the file holds another program's tables ({', '.join(sorted(tables)[:5])})",
            "point --db / CTXMODE_DB at a ctxmode store",
        )
    if version > SCHEMA_VERSION:
        return Check(
            "schema",
            "FAIL",
            f"schema version {version} is newer than this ctxmode's {SCHEMA_VERSION}",
            "upgrade ctxmode (pip install -U ctxmode)",
        )
    if version < SCHEMA_VERSION:
        return Check(
            "schema",
            "WARN",
            f"schema version {version}, this ctxmode migrates it to {SCHEMA_VERSION} on open",
            "run `ctxmode db status` once to migrate it",
        )
    return Check("schema", "OK", f"schema version {version} (current)")


def check_repair(db_path: Path) -> Check | None:
    """A repair under way (hooks spool meanwhile) or one killed midway; None for neither."""
    from ctxmode.core import repair as store_repair

    marker = config.repair_marker_for(db_path)
    if not Path(marker).exists():
        return None
    if store_repair.repair_running(str(db_path)):
        return Check(
            "repair",
            "WARN",
            "a repair of the store is under way; hook calls wait in the spool until it ends",
            "nothing to do: they are written when it ends",
        )
    left = store_repair.repair_interrupted(str(db_path)) or []
    what = ", ".join(left) or "the damaged structures"
    return Check(
        "repair", "FAIL", "a repair of the store was stopped midway", repair_in_place_fix(what)
    )


def _integrity_check(conn: sqlite3.Connection, move_aside: str) -> Check:
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(20)")]
    except sqlite3.Error as exc:
        found = f"integrity check could not run ({exc})"
    else:
        if rows == ["ok"]:
            return Check("integrity", "OK", "PRAGMA integrity_check: ok")
        problems = [line for row in rows for line in row.splitlines() if not line.startswith("*")]
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        found = f"PRAGMA integrity_check found damage: {'; '.join(problems[:3])}{more}"
    from ctxmode.core.repair import diagnose

    try:
        damage = diagnose(conn)
    except sqlite3.Error:
        return Check("integrity", "FAIL", found, move_aside)
    if damage.in_place:
        fix = repair_in_place_fix(damage.describe())
        return Check("integrity", "FAIL", f"{found}; only in {damage.describe()}", fix)
    where = f"; in {damage.describe()}" if damage.tables else ""
    return Check("integrity", "FAIL", f"{found}{where}", move_aside)


def quarantined_files(db_path: Path) -> list[Path]:
    """Unreadable stores moved aside next to the DB (``context.db.bad-*``), WAL/SHM excluded."""
    try:
        found = db_path.parent.glob(f"{db_path.name}.bad-*")
        return sorted(p for p in found if not p.name.endswith(("-wal", "-shm")))
    except OSError:
        return []


def check_quarantine(db_path: Path) -> Check:
    """WARN naming the files a recovery moved aside."""
    bad = quarantined_files(db_path)
    if not bad:
        return Check("quarantine", "OK", "no quarantined store files")
    names = ", ".join(p.name for p in bad)
    return Check(
        "quarantine",
        "WARN",
        f"{len(bad)} unreadable store file(s) were moved aside in {db_path.parent}: {names}",
        "salvage what you need (`sqlite3 <file> .recover`), then delete them",
    )


def check_spool(db_path: Path) -> Check:
    """WARN when hook calls wait in the spool (``ctxmode.sessions.spool``: the store was locked)."""
    from ctxmode.sessions import spool

    folder = config.spool_dir_for(db_path)
    waiting = spool.waiting(folder)
    if not waiting:
        return Check("spool", "OK", "no hook calls waiting for a locked store")
    return Check(
        "spool",
        "WARN",
        f"{len(waiting)} hook call(s) kept in {folder} while the store was locked",
        "the next hook call writes them; if none comes, stop the process holding the store",
    )


def _parse_log_line(line: str) -> tuple[float, str, str] | None:
    parts = line.rstrip("\n").split(" ", 2)
    if len(parts) < 2:
        return None
    try:
        ts = datetime.fromisoformat(parts[0]).timestamp()
    except ValueError:
        return None
    return ts, parts[1].upper(), parts[2] if len(parts) > 2 else ""


def recent_log_errors(log_path: Path, now: float, window_s: int = LOG_WINDOW_S) -> list[str]:
    """Messages of ERROR lines newer than ``window_s`` in the hook log (oldest first)."""
    try:
        with log_path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - LOG_TAIL_BYTES))
            data = fh.read()
    except OSError:
        return []
    errors: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        parsed = _parse_log_line(line)
        if parsed and parsed[1] == "ERROR" and now - window_s <= parsed[0] <= now + 300:
            errors.append(parsed[2])
    return errors


def check_hook_log(root: Path, now: float) -> Check:
    """WARN when the hooks logged errors in the last day."""
    log_path = root / config.CONTEXT_DIR / config.LOG_NAME
    if not log_path.exists():
        return Check("hook log", "OK", f"no hook log at {log_path} (no hook has failed)")
    errors = recent_log_errors(log_path, now)
    if not errors:
        return Check("hook log", "OK", "no hook errors in the last day")
    latest = errors[-1] if len(errors[-1]) <= 200 else errors[-1][:199] + "…"
    return Check(
        "hook log",
        "WARN",
        f"{len(errors)} hook error(s) in the last day; latest: {latest}",
        f"read {log_path}; hooks fail open, so the agent kept working but events may be missing",
    )


def check_agents(root: Path, home: Path | None = None) -> list[Check]:
    """For each agent: hooks and MCP entry installed, and the interpreter they name exists;
    then each interpreter's MCP server answers ``initialize``."""
    from ctxmode.agents import install

    checks: list[Check] = []
    servers: dict[str, list[str]] = {}
    for agent in install.AGENTS:
        try:
            st = install.status(agent, project_root=root, home=home)
        except Exception as exc:  # noqa: BLE001 - one unreadable config must not end the report
            checks.append(
                Check(
                    f"agent {agent}",
                    "FAIL",
                    f"cannot read its configuration ({exc})",
                    f"fix or remove the file, then `ctxmode install {agent}`",
                )
            )
            continue
        checks.append(_agent_check(agent, st))
        if st.mcp_installed and st.interpreter and st.interpreter_exists:
            servers.setdefault(st.interpreter, []).append(agent)
    checks += [check_server(python, agents, root) for python, agents in servers.items()]
    return checks


#: How long ``check_server`` waits for ``initialize`` (seconds): a cold start on a busy machine.
SERVER_TIMEOUT_S = 20


def check_server(python: str, agents: list[str], root: Path) -> Check:
    """The MCP server the agents' entries start answers ``initialize`` (in-agent hooks, and
    every ctxmode tool, need it running)."""
    import json
    import selectors
    import subprocess

    name = "mcp server"
    start = time.monotonic()
    hello = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "ctxmode-doctor", "version": "0"}},
    }  # fmt: skip
    try:
        proc = subprocess.Popen(
            [python, "-m", "ctxmode", "serve"], cwd=root, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
    except OSError as exc:
        return Check(name, "FAIL", f"{python} -m ctxmode serve did not start ({exc})", "reinstall")
    reply = b""
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(hello).encode() + b"\n")
        proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if sel.select(SERVER_TIMEOUT_S):
                reply = proc.stdout.readline()
    except OSError:
        pass
    finally:
        elapsed = time.monotonic() - start
        try:
            _, err = proc.communicate(timeout=10)  # closes its stdin: the server ends
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    used_by = ", ".join(agents)
    try:
        ok = "serverInfo" in json.loads(reply).get("result", {})
    except (ValueError, AttributeError):
        ok = False
    if ok:
        return Check(name, "OK", f"answers initialize in {elapsed * 1000:.0f} ms ({used_by})")
    tail = " ".join(err.decode("utf-8", "replace").split())[-300:] or "no reply"
    return Check(
        name,
        "FAIL",
        f"`{python} -m ctxmode serve` (for {used_by}) did not answer initialize: {tail}",
        "run that command yourself to see why; reinstall ctxmode into that environment",
    )


def _agent_check(agent: str, st: AgentStatus) -> Check:
    name = f"agent {agent}"
    # Kimi Code reads hooks from its user config only (``agents.kimi``).
    command = f"ctxmode install {agent}" + (" --scope user" if agent == "kimi-code" else "")
    reinstall = f"run `{command}`"
    if not st.hooks_installed and not st.mcp_installed:
        if st.problems:
            # Unreadable config files and settings that switch hooks off: worth a look even
            # though nothing of ctxmode is found (a broken file hides an installation).
            return Check(
                name,
                "WARN",
                "not installed; " + "; ".join(st.problems),
                reinstall + " if you use it",
            )
        return Check(name, "OK", f"not set up; to use it: `{command}`")
    if st.interpreter and not st.interpreter_exists:
        return Check(
            name,
            "FAIL",
            f"its config ({', '.join(st.config_paths)}) runs {st.interpreter}, which does not "
            "exist: the hooks and MCP server cannot start",
            reinstall + " again from the environment where ctxmode is installed",
        )
    if st.problems or not (st.hooks_installed and st.mcp_installed):
        missing = [
            part
            for part, ok in (("hooks", st.hooks_installed), ("MCP entry", st.mcp_installed))
            if not ok
        ]
        text = "; ".join(st.problems) or f"{' and '.join(missing)} not installed"
        if not missing and all("--trust" in problem for problem in st.problems):
            # Installed but ignored until the agent trusts it: the message names the exact step.
            reinstall = (
                f"record the trust: the `ctxmode install {agent} --trust` command above, or "
                "the agent's own step it names"
            )
        return Check(name, "WARN", text, reinstall)
    return Check(
        name,
        "OK",
        f"hooks and MCP entry installed ({', '.join(st.config_paths)}; {st.interpreter})",
    )


def check_team(root: Path) -> Check:
    """Shared team knowledge files (``.context/shared``) that would not import."""
    from ctxmode.exchange.team import file_problems

    problems = file_problems(str(root))
    if not problems:
        return Check("team", "OK", "every shared knowledge file imports")
    conflicted = [n for n, why in problems if why.startswith("merge conflict")]
    text = "; ".join(f"{name}: {why}" for name, why in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    fix = (
        "resolve the conflict in each file named (keep the text you want, remove the "
        "<<<<<<<, ======= and >>>>>>> lines), then `git add` it"
        if conflicted
        else "fix each file named (see `ctxmode team`); it is not imported until then"
    )
    return Check("team", "WARN", text + more, fix)


def run(
    db_path: Path,
    root: Path,
    *,
    home: Path | None = None,
    now: float | None = None,
    agents: bool = True,
) -> tuple[Check, ...]:
    """Every check for the store at ``db_path`` of the project at ``root``, in report order."""
    ts = time.time() if now is None else now
    under_way = check_repair(db_path)
    checks: list[Check] = [
        *check_database(db_path),
        *([under_way] if under_way else []),
        check_fts5(),
        check_quarantine(db_path),
        check_spool(db_path),
    ]
    if agents:
        checks.extend(check_agents(root, home))
    checks.append(check_hook_log(root, ts))
    checks.append(check_team(root))
    return tuple(checks)
