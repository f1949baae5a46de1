"""The CLI through real subprocesses: JSON output, human output, every error case."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import run_cli
from ctxmode.core.db import GITIGNORE


def cli_json(project: Path, *args: str, input: str | None = None) -> object:
    proc = run_cli(*args, "--json", cwd=project, input=input)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_init_creates_store_and_gitignore(project: Path) -> None:
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    data = cli_json(sub, "init")
    assert data["db"] == str(project / ".context" / "context.db")  # type: ignore[index]
    assert (project / ".context" / ".gitignore").read_text() == GITIGNORE
    again = cli_json(project, "init")
    assert again["created"] is False  # type: ignore[index]
    proc = run_cli("db", "path", cwd=sub)
    assert proc.stdout.strip() == str(project / ".context" / "context.db")


def test_db_override_by_option_and_env(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "k.db"
    assert run_cli("--db", str(other), "db", "path", cwd=project).stdout.strip() == str(other)
    proc = run_cli("db", "path", cwd=project, env={"CTXMODE_DB": str(other)})
    assert proc.stdout.strip() == str(other)


def test_add_query_show_round_trip(project: Path) -> None:
    (project / "api.py").write_text("def handler(): ...\n")
    task = cli_json(project, "task", "add", "API")
    sub = cli_json(project, "task", "add", "Handler", "--parent", str(task["id"]))  # type: ignore[index]
    added = cli_json(
        project, "add", "decision", "Return JSON errors.", "--task", str(task["id"]),  # type: ignore[index]
        "--file", "api.py", "--relation", "defines", "--meta", '{"source": "review"}',
    )  # fmt: skip
    assert added["verified"] is True  # type: ignore[index]
    result = cli_json(project, "query", "--task", str(sub["id"]))  # type: ignore[index]
    assert [i["id"] for i in result["items"]] == [added["id"]]  # type: ignore[index]
    assert result["items"][0]["via"] == "ancestor"  # type: ignore[index]
    shown = cli_json(project, "show", str(added["id"]))  # type: ignore[index]
    assert shown["files"] == [{"path": "api.py", "relation": "defines"}]  # type: ignore[index]
    assert shown["metadata"] == {"source": "review"}  # type: ignore[index]
    human = run_cli("query", "--file", "api.py", cwd=project)
    assert "Return JSON errors." in human.stdout


def test_stdin_content_and_decision_template(project: Path) -> None:
    added = cli_json(project, "add", "snippet", "-", input="print('hi')\n")
    assert added["id"] == 1  # type: ignore[index]
    dec = cli_json(
        project, "decision", "add", "Use SQLite", "--rationale", "local-first",
        "--options", "SQLite; Postgres",
    )  # fmt: skip
    shown = cli_json(project, "show", str(dec["id"]))  # type: ignore[index]
    assert "Rationale: local-first" in shown["content"]  # type: ignore[index]


def test_task_list_and_status(project: Path) -> None:
    cli_json(project, "task", "add", "root")
    cli_json(project, "task", "add", "child", "--parent", "1")
    updated = cli_json(project, "task", "status", "2", "in_progress")
    assert updated["status"] == "in_progress"  # type: ignore[index]
    listed = cli_json(project, "task", "list")
    assert [(t["name"], t["depth"]) for t in listed["tasks"]] == [("root", 0), ("child", 1)]  # type: ignore[index]
    assert "child" in run_cli("task", "list", cwd=project).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "opinion", "x"], "constraint"),
        (["add", "decision", "x", "--task", "99"], "no task with id 99"),
        (["add", "decision", "x", "--meta", "{bad"], "not valid JSON"),
        (["add", "decision", "x", "--meta", "[1]"], "JSON object"),
        (["task", "status", "1", "done"], "unknown task status"),
        (["show", "5"], "no context with id 5"),
        (["add", "decision", "x", "--file", "/etc/passwd"], "outside the project"),
        (["gc", "--now", "yesterday"], "ISO date"),
    ],
)
def test_errors_exit_1_with_a_clear_message(project: Path, args: list[str], message: str) -> None:
    run_cli("task", "add", "one", cwd=project)
    proc = run_cli(*args, cwd=project)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error") or "Error:" in proc.stderr
    assert message in proc.stderr
    count = sqlite3.connect(project / ".context" / "context.db").execute(
        "SELECT COUNT(*) FROM contexts"
    )
    assert count.fetchone()[0] == 0


def test_json_errors_still_print_one_json_document(project: Path) -> None:
    proc = run_cli("show", "7", "--json", cwd=project)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["kind"] == "NotFound"


def test_not_a_ctxmode_db_and_unwritable_path(project: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t(x)")
    conn.commit()
    conn.close()
    proc = run_cli("--db", str(foreign), "add", "decision", "x", cwd=project)
    assert proc.returncode == 1 and "another program" in proc.stderr
    # a path whose parent is a regular file can never be created, even by root
    blocker = tmp_path / "plain.txt"
    blocker.write_text("x")
    proc = run_cli("--db", str(blocker / "sub" / "k.db"), "init", cwd=project)
    assert proc.returncode == 1 and "cannot create" in proc.stderr
    proc = run_cli("--db", str(tmp_path), "add", "decision", "x", cwd=project)
    assert proc.returncode == 1 and "is a directory" in proc.stderr


def test_gc_dry_run_and_now(project: Path) -> None:
    cli_json(project, "add", "snippet", "old")
    report = cli_json(project, "gc", "--dry-run", "--now", "2099-01-01")
    assert report["counts"] == {"snippet": {"delete": 1}}  # type: ignore[index]
    assert "Would: snippet: delete 1" in run_cli("gc", "--dry-run", "--now", "2099-01-01",
                                                  cwd=project).stdout  # fmt: skip
    cli_json(project, "gc", "--now", "2099-01-01")
    assert cli_json(project, "query")["count"] == 0  # type: ignore[index]


def test_export_import_round_trip_without_loss(project: Path, tmp_path: Path) -> None:
    (project / "a.py").write_text("x")
    cli_json(project, "task", "add", "root")
    cli_json(project, "task", "add", "leaf", "--parent", "1")
    cli_json(project, "add", "decision", "first", "--task", "2", "--file", "a.py")
    cli_json(project, "add", "decision", "second", "--supersedes", "1")
    cli_json(project, "add", "reference", "https://example.org 中文", "--meta", '{"k": [1, 2]}')
    exported = run_cli("export", cwd=project).stdout
    assert all(json.loads(line) for line in exported.splitlines())

    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / "a.py").write_text("x")
    cli_json(other, "init")
    report = cli_json(other, "import", "-", input=exported)
    assert report == {"tasks_added": 2, "tasks_skipped": 0, "contexts_added": 3,  # type: ignore[comparison-overlap]
                      "contexts_skipped": 0}  # fmt: skip
    assert run_cli("export", cwd=other).stdout == exported
    again = cli_json(other, "import", "-", input=exported)
    assert again["contexts_added"] == 0 and again["contexts_skipped"] == 3  # type: ignore[index]
    assert run_cli("export", cwd=other).stdout == exported


def test_import_of_a_bad_line_writes_nothing(project: Path) -> None:
    good = json.dumps({"kind": "context", "id": 1, "type": "decision", "content": "ok"})
    proc = run_cli("import", "-", cwd=project, input=good + "\n{broken\n")
    assert proc.returncode == 1 and "line 2" in proc.stderr
    assert cli_json(project, "query")["count"] == 0  # type: ignore[index]


def test_every_command_accepts_json(project: Path) -> None:
    # One valid JSON document on stdout for each command that can run without arguments.
    for args in (["init"], ["query"], ["task", "list"], ["gc", "--dry-run"], ["db", "path"],
                 ["db", "status"]):  # fmt: skip
        cli_json(project, *args)


def test_human_output_shows_control_characters_instead_of_obeying_them(project: Path) -> None:
    cli_json(project, "add", "issue", "bad \x1b[31mred\x1b[0m text\x07")
    shown = run_cli("show", "1", cwd=project).stdout
    assert "\x1b" not in shown and "\x07" not in shown
    assert "bad \\x1b[31mred\\x1b[0m text\\x07" in shown
    # JSON output keeps the stored text exactly
    assert cli_json(project, "show", "1")["content"] == "bad \x1b[31mred\x1b[0m text\x07"  # type: ignore[index]


def test_command_table_matches_what_each_module_registers() -> None:
    """The lazy root group finds a command's module from ``COMMAND_MODULES``: it must list
    exactly the commands each module's ``register`` adds."""
    import importlib

    import click

    from ctxmode.cli import COMMAND_MODULES

    for module, names in COMMAND_MODULES.items():
        group = click.Group()
        importlib.import_module(module).register(group)
        assert sorted(group.commands) == sorted(names), module


def test_a_command_loads_only_its_own_module(project: Path) -> None:
    """``ctxmode search`` imports the search stack, not the installers, sandbox or tables;
    ``--help`` still lists every command."""
    import subprocess
    import sys

    assert run_cli("init", cwd=project).returncode == 0
    code = (
        "import sys\n"
        "from ctxmode.cli import cli\n"
        "cli.main(['search', 'anything', '--json'], standalone_mode=False)\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stderr.split())
    assert json.loads(proc.stdout)["hits"] == []
    assert "ctxmode.cli.search" in loaded
    for module in (
        "ctxmode.cli.install",
        "ctxmode.cli.indexing",
        "ctxmode.sandbox",
        "rich.table",
    ):
        assert module not in loaded, module
    from ctxmode.cli import COMMAND_MODULES

    listed = run_cli("--help", cwd=project).stdout
    for names in COMMAND_MODULES.values():
        for name in names:
            assert f"\n  {name} " in listed, name


def test_a_context_linked_to_a_named_pipe_is_stored_without_reading_it(project: Path) -> None:
    """Linking hashes the file; a named pipe has no content to hash and opening it would wait
    for a writer for good."""
    import os

    os.mkfifo(project / "events.fifo")
    assert run_cli("init", cwd=project).returncode == 0
    data = cli_json(
        project, "add", "constraint", "Readers attach to events.fifo", "--file", "events.fifo"
    )
    assert data["id"] >= 1  # type: ignore[index]
    found = cli_json(project, "query", "--file", "events.fifo")
    assert [i["content"] for i in found["items"]] == ["Readers attach to events.fifo"]  # type: ignore[index]
    assert run_cli("gc", "--json", cwd=project).returncode == 0


def test_a_deleted_working_directory_gets_a_clear_error(tmp_path: Path) -> None:
    import subprocess

    from conftest import CTXMODE

    script = 'mkdir gone && cd gone && rmdir ../gone && exec "$0" search anything --json'
    proc = subprocess.run(
        ["sh", "-c", script, str(CTXMODE)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "InvalidInput" and "no longer exists" in error["error"]


HUGE = str(10**20)  # past SQLite's 64-bit integers: binding it raises OverflowError


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["gc", "--now", HUGE], 1, "out of range"),
        (["gc", "--now", f"-{HUGE}"], 1, "out of range"),
        (["search", "x", "--since", HUGE], 1, "out of range"),
        (["search", "x", "--until", f"-{HUGE}"], 1, "out of range"),
        (["events", "--limit", HUGE], 0, ""),
        (["sessions", "--limit", HUGE], 0, ""),
        (["show", HUGE], 1, "no context"),
        (["task", "status", HUGE, "completed"], 1, "no task"),
    ],
)
def test_integers_past_sqlite_range_get_clear_answers(
    project: Path, args: list[str], code: int, says: str
) -> None:
    assert run_cli("init", cwd=project).returncode == 0
    proc = run_cli(*args, cwd=project)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == code, proc.stderr
    assert says in proc.stderr


def _last_column(table: str) -> str:
    """The text of a rich table's last column, its wrapped lines joined, spaces dropped."""
    cells = [line.split("│")[-2] for line in table.splitlines() if line.startswith("│")]
    return "".join("".join(cells).split())


@pytest.mark.parametrize("columns", ["80", "60"])
def test_tables_show_whole_text_at_narrow_widths(project: Path, columns: str) -> None:
    texts = [
        "令牌只在服务端签发，签名密钥不得写入代码仓库。",
        "JWT 过期时间从 24 小时调整为 2 小时",
        "本地测试通过但 CI 失败：通常是数据库版本不一致，用 docker compose 启动数据库。",
        "Public API in click/__init__.py must stay backwards compatible across every minor "
        "release; deprecate first, remove in the next major (see docs/upgrading.md#versioning).",
    ]
    for text in texts:
        cli_json(project, "add", "constraint", text)
    cli_json(project, "task", "add", "认证重构：令牌轮换、注销黑名单与服务端签名密钥的统一管理")
    env = {"COLUMNS": columns}
    shown = _last_column(run_cli("query", cwd=project, env=env).stdout)
    for text in texts:
        assert "".join(text.split()) in shown
    listed = _last_column(run_cli("task", "list", cwd=project, env=env).stdout)
    assert "认证重构：令牌轮换、注销黑名单与服务端签名密钥的统一管理" in listed


def test_only_init_creates_a_store(tmp_path: Path) -> None:
    plain = tmp_path / "notes" / "sub"  # no git repository, never initialised
    plain.mkdir(parents=True)
    for args in (("query",), ("add", "decision", "x"), ("search", "x"), ("stats",)):
        proc = run_cli(*args, cwd=plain)
        assert proc.returncode == 1, args
        assert "no ctxmode store here" in proc.stderr and "ctxmode init" in proc.stderr
    assert not list(tmp_path.rglob("context.db"))
    assert cli_json(plain.parent, "init")["created"] is True  # type: ignore[index]
    # A subfolder of a project without git finds the store its top folder made.
    added = cli_json(plain, "add", "decision", "x")
    assert cli_json(plain, "db", "path")["path"] == str(plain.parent / ".context" / "context.db")  # type: ignore[index]
    assert added["id"] == 1  # type: ignore[index]
    assert [p.parent.parent for p in tmp_path.rglob("context.db")] == [plain.parent]


def test_stale_follows_the_file_in_show_stats_link_and_gc(project: Path) -> None:
    testing = project / "testing.py"
    testing.write_text("def invoke(): ...\n")
    cli_json(
        project, "add", "snippet", "CliRunner.invoke catches exceptions", "--file", "testing.py"
    )
    testing.write_text("def invoke(): ...\n# appended\n")
    # No query first: show and stats see the change themselves.
    assert cli_json(project, "show", "1")["stale"] is True  # type: ignore[index]
    assert "ctxmode link 1 --refresh" in run_cli("show", "1", cwd=project).stdout
    assert cli_json(project, "stats")["contexts"]["stale"] == 1  # type: ignore[index]
    gc = run_cli("gc", "--dry-run", cwd=project)
    assert "delete" not in gc.stdout and gc.returncode == 0
    testing.write_text("def invoke(): ...\n")  # reverted byte for byte
    assert cli_json(project, "show", "1")["stale"] is False  # type: ignore[index]
    testing.write_text("def invoke(): return 0\n")
    cli_json(project, "link", "1", "testing.py")  # linking again is not re-verifying
    assert cli_json(project, "show", "1")["stale"] is True  # type: ignore[index]
    refreshed = cli_json(project, "link", "1", "--refresh")
    assert refreshed["refreshed"] == ["testing.py"] and refreshed["stale"] is False  # type: ignore[index]
    testing.unlink()
    planned = run_cli("gc", "--dry-run", cwd=project).stdout
    assert "archive #1 (snippet): linked file testing.py deleted" in planned


def test_query_table_marks_stale_and_superseded(project: Path) -> None:
    (project / "types.py").write_text("class ParamType: ...\n")
    cli_json(
        project, "add", "interface", "ParamType.convert(value) [see docs]", "--file", "types.py"
    )
    cli_json(project, "add", "decision", "old choice")
    cli_json(project, "add", "decision", "new choice", "--supersedes", "2")
    (project / "types.py").write_text("class ParamType: pass\n")
    env = {"COLUMNS": "200"}
    table = run_cli("query", "--file", "types.py", cwd=project, env=env).stdout
    assert "[see docs]" in table  # stored brackets are text, not rich markup
    assert "[stale: a linked file changed; see ctxmode show 1]" in table
    listed = run_cli("query", "--all", cwd=project, env=env).stdout
    assert "[superseded by #3]" in listed


def test_a_linked_path_with_nothing_on_disk_is_warned(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "core.py").write_text("x = 1\n")
    proc = run_cli(
        "add", "decision", "x", "--file", "src/core.py", "--file", "src/does_not_exist.py",
        "--file", "tests/**", cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0
    assert "warning: src/does_not_exist.py does not exist; linked as a planned file" in proc.stderr
    assert "core.py" not in proc.stderr and "tests/**" not in proc.stderr
    added = cli_json(project, "add", "constraint", "y", "--file", "src/typo.py")
    assert added["missing_files"] == ["src/typo.py"]  # type: ignore[index]
    linked = run_cli("link", "2", "src/cor.py", cwd=project)
    assert "warning: src/cor.py does not exist" in linked.stderr
    decided = run_cli("decision", "add", "z", "--file", "nope.py", cwd=project)
    assert "warning: nope.py does not exist" in decided.stderr


def test_help_answers_the_next_question_and_typos_get_a_suggestion(project: Path) -> None:
    add_help = run_cli("add", "--help", cwd=project).stdout
    assert all(t in add_help for t in ("constraint", "convention", "interface", "reference"))
    query_help = run_cli("query", "--help", cwd=project).stdout
    for words in ("focused", "broad", "--task", "--file", "Knowledge linked to this file"):
        assert words in " ".join(query_help.split())
    assert "[[task]]" in run_cli("eval", "--help", cwd=project).stdout
    hook_help = run_cli("hook", "--help", cwd=project)
    assert hook_help.returncode == 0 and "session-start" in hook_help.stdout
    typo = run_cli("serach", "foo", cwd=project)
    assert typo.returncode == 1 and "Did you mean 'search'?" in typo.stderr
    wrong_type = run_cli("add", "desicion", "x", cwd=project)
    assert wrong_type.returncode == 1 and "Did you mean 'decision'?" in wrong_type.stderr
    budget = run_cli("query", "--budget", "-5", cwd=project)
    assert budget.returncode == 1 and "'--budget'" in budget.stderr
    assert "budget_tokens" not in budget.stderr
