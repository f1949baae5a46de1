"""``ctxmode doctor`` on real setups: healthy, missing, corrupt, quarantined, old/new schema,
other programs' files, hook logs with errors, installed and broken agent configs."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import run_cli
from ctxmode import Store, doctor
from ctxmode.agents import install
from ctxmode.core.schema import SCHEMA_VERSION

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp()


def by_name(checks: tuple[doctor.Check, ...]) -> dict[str, doctor.Check]:
    return {c.name: c for c in checks}


def db_of(project: Path) -> Path:
    return project / ".context" / "context.db"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(project: Path, home: Path) -> dict[str, doctor.Check]:
    return by_name(doctor.run(db_of(project), project, home=home, now=NOW))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_healthy_store_is_all_ok(project: Path, home: Path) -> None:
    with Store.open(db_of(project)) as store:
        store.write_context("decision", "Use SQLite")
    checks = run(project, home)
    assert checks["database"].level == "OK"
    assert checks["schema"].level == "OK" and str(SCHEMA_VERSION) in checks["schema"].message
    assert checks["integrity"].message == "PRAGMA integrity_check: ok"
    assert checks["fts5"].level == "OK"
    assert checks["quarantine"].level == "OK"
    assert checks["spool"].level == "OK"
    assert checks["hook log"].level == "OK"
    assert {f"agent {a}" for a in install.AGENTS} <= set(checks)
    assert doctor.worst(tuple(checks.values())) == "OK"


def test_missing_store_warns_and_creates_nothing(bare_project: Path, home: Path) -> None:
    checks = run(bare_project, home)
    assert checks["database"].level == "WARN"
    assert "ctxmode init" in checks["database"].fix
    assert "schema" not in checks and "integrity" not in checks
    assert not db_of(bare_project).exists() and not db_of(bare_project).parent.exists()


def test_file_that_is_not_a_database_fails_and_is_left_alone(
    bare_project: Path, home: Path
) -> None:
    project = bare_project
    db = db_of(project)
    db.parent.mkdir(parents=True)
    db.write_bytes(b"definitely not sqlite\n" * 200)
    before = digest(db)
    checks = run(project, home)
    assert checks["schema"].level == "FAIL"
    assert "not a readable database" in checks["schema"].message
    assert "doctor --repair" in checks["schema"].fix
    assert digest(db) == before
    assert not list(db.parent.glob("*.bad-*")), "doctor must not quarantine anything itself"


def test_damaged_pages_fail_the_integrity_check(project: Path, home: Path) -> None:
    db = db_of(project)
    with Store.open(db) as store:
        for i in range(400):
            store.write_context("snippet", f"snippet number {i} " + "x" * 200)
    # Closing the last connection checkpoints the WAL; then damage pages near the end
    # (the index and FTS pages written last) while leaving the header intact.
    size = db.stat().st_size
    assert not Path(str(db) + "-wal").exists() or Path(str(db) + "-wal").stat().st_size == 0
    noise = random.Random(7)
    with db.open("r+b") as fh:
        for offset in range(size // 2, size, 4096 * 3):
            fh.seek(offset + 100)
            fh.write(noise.randbytes(600))
    before = digest(db)
    checks = run(project, home)
    assert checks["schema"].level == "OK"
    check = checks["integrity"]
    assert check.level == "FAIL" and "found damage" in check.message
    assert len(check.message) < 600 and "\n" not in check.message
    assert "ctxmode doctor --repair" in check.fix and "keeps the damaged file" in check.fix
    assert digest(db) == before


def test_quarantined_files_are_named(bare_project: Path, home: Path) -> None:
    project = bare_project
    db = db_of(project)
    db.parent.mkdir(parents=True)
    db.write_bytes(b"garbage" * 1000)
    with Store.open(db, recover=True) as store:  # the store moves the bad file aside itself
        kept = store.recovered_from
    assert kept is not None and kept.exists()
    checks = run(project, home)
    assert checks["quarantine"].level == "WARN"
    assert kept.name in checks["quarantine"].message
    assert checks["schema"].level == "OK"


def test_hook_calls_waiting_in_the_spool_are_counted(project: Path, home: Path) -> None:
    db = db_of(project)
    with Store.open(db) as store:
        store.write_context("decision", "Use SQLite")
    spool = Path(f"{db}.spool")
    spool.mkdir()
    for i in range(3):
        (spool / f"{i:015d}-1-abc.json").write_text("{}")
    checks = run(project, home)
    assert checks["spool"].level == "WARN" and "3 hook call(s)" in checks["spool"].message


def test_schema_versions(project: Path, home: Path) -> None:
    db = db_of(project)
    with Store.open(db):
        pass
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    check = run(project, home)["schema"]
    assert check.level == "WARN" and "migrates" in check.message
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    check = run(project, home)["schema"]
    assert check.level == "FAIL" and "upgrade ctxmode" in check.fix


def test_another_programs_database_fails(bare_project: Path, home: Path) -> None:
    project = bare_project
    db = db_of(project)
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
    conn.close()
    check = run(project, home)["schema"]
    assert check.level == "FAIL" and "moz_places" in check.message


def test_hook_log_errors_of_the_last_day(project: Path, home: Path) -> None:
    with Store.open(db_of(project)):
        pass
    log = project / ".context" / "hooks.log"
    log.write_text(
        "\n".join(
            [
                "2026-11-28T10:00:00Z ERROR too old to count",
                "2026-11-29T13:00:00Z INFO session_start ok",
                "2026-11-29T13:30:00Z ERROR post_tool_use: database is locked",
                "not a log line at all",
                "2026-11-30T11:00:00Z WARN slow hook",
                "2026-11-30T11:59:00Z ERROR pre_compact: disk I/O error",
                "",
            ]
        ),
        encoding="utf-8",
    )
    check = run(project, home)["hook log"]
    assert check.level == "WARN"
    assert check.message.startswith("2 hook error(s) in the last day")
    assert "pre_compact: disk I/O error" in check.message
    assert str(log) in check.fix
    log.write_text("2026-11-30T11:00:00Z INFO fine\n", encoding="utf-8")
    assert run(project, home)["hook log"].level == "OK"


def test_installed_agent_is_ok_and_a_broken_one_fails(
    project: Path, home: Path, tmp_path: Path
) -> None:
    with Store.open(db_of(project)):
        pass
    install.install("claude-code", project_root=project, home=home)
    checks = run(project, home)
    assert checks["agent claude-code"].level == "OK", checks["agent claude-code"]
    assert "installed" in checks["agent claude-code"].message

    # an interpreter that later disappears (a deleted venv)
    venv_python = tmp_path / "oldvenv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    install.install("gemini-cli", project_root=project, home=home, python=str(venv_python))
    check = run(project, home)["agent gemini-cli"]  # installed, but in a folder Gemini ignores
    assert check.level == "WARN" and "Gemini CLI does not trust" in check.message
    assert "ctxmode install gemini-cli --trust" in check.fix
    install.install(
        "gemini-cli", project_root=project, home=home, python=str(venv_python), trust=True
    )
    assert run(project, home)["agent gemini-cli"].level == "OK"
    venv_python.unlink()
    check = run(project, home)["agent gemini-cli"]
    assert check.level == "FAIL"
    assert str(venv_python) in check.message and "ctxmode install gemini-cli" in check.fix


def test_the_mcp_server_the_entries_start_must_answer(
    project: Path, home: Path, tmp_path: Path
) -> None:
    """In-agent hooks and every ctxmode tool need the server: doctor starts it as the agents'
    entries do and asks for ``initialize``; a Python without ctxmode fails, saying why."""
    import subprocess

    with Store.open(db_of(project)):
        pass
    install.install("claude-code", project_root=project, home=home, hooks="in-agent")
    check = run(project, home)["mcp server"]
    assert check.level == "OK" and "answers initialize" in check.message, check
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    install.install("cursor", project_root=project, home=home, python=str(bare / "bin" / "python"))
    failed = [c for c in doctor.run(db_of(project), project, home=home) if c.name == "mcp server"]
    assert sorted(c.level for c in failed) == ["FAIL", "OK"], failed  # one per interpreter
    (bad,) = [c for c in failed if c.level == "FAIL"]
    assert "No module named ctxmode" in bad.message and "cursor" in bad.message


def test_unreadable_agent_config_warns(project: Path, home: Path) -> None:
    with Store.open(db_of(project)):
        pass
    settings = project / ".cursor" / "hooks.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"hooks": {', encoding="utf-8")
    check = run(project, home)["agent cursor"]
    assert check.level == "WARN", check
    assert "hooks.json" in check.message


def test_cli_prints_each_line_with_its_fix_and_exits_1_on_fail(project: Path) -> None:
    ok = run_cli("init", cwd=project)
    assert ok.returncode == 0, ok.stderr
    r = run_cli("doctor", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(line.startswith("OK") and "integrity" in line for line in r.stdout.splitlines())

    r = run_cli("doctor", "--json", cwd=project)
    data = json.loads(r.stdout)
    assert data["status"] == "OK" and {c["name"] for c in data["checks"]} >= {"fts5", "schema"}

    db_of(project).write_bytes(b"broken" * 500)
    for name in ("-wal", "-shm"):
        Path(str(db_of(project)) + name).unlink(missing_ok=True)
    r = run_cli("doctor", cwd=project)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    fail = next(i for i, line in enumerate(lines) if line.startswith("FAIL"))
    assert "schema" in lines[fail] and lines[fail + 1].strip().startswith(
        "fix: run `ctxmode doctor --repair`"
    )
    r = run_cli("doctor", "--json", cwd=project)
    assert r.returncode == 1 and json.loads(r.stdout)["status"] == "FAIL"
