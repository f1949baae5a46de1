"""Shell commands that read files (``cat F``, ``sed -n '1,20p' F``...) recorded as reads: the
parser (``sessions.shell_reads``) on its own, and the real hook with the agents' real payloads."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _hooks import event_name, fixture, output_json, run_hook
from ctxmode.sessions import adapters
from ctxmode.sessions.events import extract
from ctxmode.sessions.shell_reads import _read_paths, command_text, read_paths

R = "/p"


@pytest.mark.parametrize(
    "command, paths",
    [
        ("cat auth/config.py", ["/p/auth/config.py"]),
        ("cat a.py b.py", ["/p/a.py", "/p/b.py"]),
        ("cat -n a.py", ["/p/a.py"]),
        ("head -n 5 a.py", ["/p/a.py"]),
        ("head -5 a.py", ["/p/a.py"]),
        ("tail -n +3 a.py", ["/p/a.py"]),
        ("sed -n '1,20p' a.py", ["/p/a.py"]),
        ("sed -n -e '$p' a.py", ["/p/a.py"]),
        ("nl -ba a.py", ["/p/a.py"]),
        ("less +10 a.py", ["/p/a.py"]),
        ("cat a.py | head -20", ["/p/a.py"]),
        ("cat a.py 2>&1 | grep -n TTL", ["/p/a.py"]),
        ("cat a.py 2>/dev/null", ["/p/a.py"]),
        ("cd auth && cat config.py", ["/p/auth/config.py"]),
        ("cd auth; sed -n '1,5p' ../a.py", ["/p/a.py"]),
        ("cat a.py && cat a.py", ["/p/a.py"]),
        ("cat ./x/../a.py", ["/p/a.py"]),
        ("cat /p/a.py", ["/p/a.py"]),
        # quoting, as the shell reads it
        ("cat 'my file.py'", ["/p/my file.py"]),
        ('cat "my file.py"', ["/p/my file.py"]),
        ("cat my\\ file.py", ["/p/my file.py"]),
        ("cat -- -odd.py", ["/p/-odd.py"]),
        ("bash -lc 'cat auth/config.py'", ["/p/auth/config.py"]),
        ("/bin/bash -c \"sed -n '1,3p' a.py\"", ["/p/a.py"]),
        ("head -n 1 a b c d e f g", ["/p/a", "/p/b", "/p/c", "/p/d", "/p/e"]),
    ],
)  # fmt: skip
def test_a_command_that_only_reads_yields_its_files(command: str, paths: list[str]) -> None:
    assert read_paths(command, R) == (paths, True)


@pytest.mark.parametrize(
    "command, paths",
    [
        ("cat a.py && pytest -q", ["/p/a.py"]),
        ("cat a.py; ls", ["/p/a.py"]),
        ("cat a.py\npytest", ["/p/a.py"]),
        ("cat a.py ../outside.py", ["/p/a.py"]),
    ],
)  # fmt: skip
def test_a_read_among_other_work_is_a_read_but_not_all_it_did(
    command: str, paths: list[str]
) -> None:
    assert read_paths(command, R) == (paths, False)


@pytest.mark.parametrize(
    "command",
    [
        "cat > notes.md <<EOF\nhello\nEOF",  # a write
        "cat a.py > b.py",  # a copy
        "cat a.py >> b.py",
        "cat < a.py",
        "cat a.py | python",  # the file is input, not shown
        "cat a.py | sh",
        "sed -i 's/a/b/' a.py",  # an edit
        "sed 1,5p a.py",  # prints everything, twice
        "sed -n 's/a/b/p' a.py",
        "sed -n -f script.sed a.py",
        "cat /dev/null",
        "cat /etc/passwd",
        "cat ../x.py",
        "cd /tmp && cat x",
        "cd $DIR && cat x",
        "cd - && cat x",
        "cat $FILE",
        "cat *.py",
        "cat ~/.bashrc",
        "cat $(ls)",
        "cat `ls`",
        "(cat a.py)",
        "cat a.py &",
        "cat -",
        "cat",
        "git log | cat",
        "ls -la",
        'cat "unbalanced',
        "bash -lc 'bash -c \"cat a.py\"'",
        "",
    ],
)
def test_anything_else_is_no_read(command: str) -> None:
    assert read_paths(command, R) == ([], False)


def test_relative_paths_need_a_known_folder() -> None:
    assert read_paths("cat a.py", None) == ([], False)
    assert read_paths("cat a.py", "relative/dir") == ([], False)
    assert read_paths("cat a.py", R, "/p/sub") == (["/p/sub/a.py"], True)
    assert read_paths("cat ../a.py", R, "/p/sub") == (["/p/a.py"], True)


def test_command_text_unwraps_argv_lists() -> None:
    assert command_text("cat a") == "cat a"
    assert command_text(["bash", "-lc", "cat a"]) == "cat a"
    assert command_text(["/usr/bin/zsh", "-c", "cat a"]) == "cat a"
    assert command_text(["cat", "my file"]) == "cat 'my file'"
    for odd in (None, 3, {"a": 1}, ["cat", 3], b"cat a"):
        assert command_text(odd) == ""


SHELLISH = st.text(alphabet=st.sampled_from(list("catheadsn -'\"\\|&;<>()$`*~/.\n\t0129p,{}[]")))


@settings(max_examples=400, deadline=None)
@given(SHELLISH)
def test_the_parser_never_raises_and_stays_in_the_project(command: str) -> None:
    paths, _ = _read_paths(command, R, None)  # the parser itself, not its fail-open wrapper
    assert all(p == "/p" or p.startswith("/p/") for p in paths)
    assert len(paths) <= 5


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.text(),
        st.lists(st.text(), max_size=4),
        st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    )
)
def test_any_codex_command_value_is_extracted_without_raising(value: Any) -> None:
    payload = {"hook_event_name": "PostToolUse", "session_id": "s", "cwd": R, "tool_name": "Bash"}
    payload |= {"tool_input": {"command": value}, "tool_response": "x"}
    ev = adapters.normalize("codex", None, payload)
    assert ev is not None
    extract(ev)


# --- through the real hook ------------------------------------------------------------------


def events(project: Path) -> list[tuple[str, str, dict[str, Any]]]:
    with sqlite3.connect(project / ".context" / "context.db") as conn:
        rows = conn.execute("SELECT category, type, data FROM events ORDER BY id").fetchall()
    return [(c, t, json.loads(d)) for c, t, d in rows]


def send(agent: str, payload: dict[str, Any], project: Path) -> None:
    output_json(run_hook(event_name(payload), payload, cwd=project, agent=agent))


@pytest.fixture
def files(project: Path) -> Path:
    (project / "auth").mkdir()
    (project / "auth" / "config.py").write_text("ACCESS_TTL = 86400\n")
    (project / "src" / "auth").mkdir(parents=True)
    (project / "src" / "auth" / "tokens.py").write_text("import secrets\n")
    (project / "CLAUDE.md").write_text("# rules\n")
    return project


def test_codex_cat_is_stored_as_a_read_like_claude_read(files: Path) -> None:
    project = files
    payload = fixture("codex", "real.PostToolUse.Bash", project)  # ``cat auth/config.py``
    send("codex", payload, project)
    assert events(project) == [("data", "read", {"path": str(project / "auth" / "config.py")})]
    # wrapped, as an argv list, and within a chain: still a read (stored once: same record)
    for command in (["bash", "-lc", "cd auth && cat config.py"], "bash -lc 'cat auth/config.py'"):
        send("codex", {**payload, "tool_use_id": str(command), "tool_input": {"command": command}},
             project)  # fmt: skip
    assert [e for e in events(project) if e[1] == "read"] == [
        ("data", "read", {"path": str(project / "auth" / "config.py")})
    ]
    # reading an agent rule file is a rule read, as with a read tool
    send("codex", {**payload, "tool_use_id": "r", "tool_input": {"command": "head CLAUDE.md"}},
         project)  # fmt: skip
    assert events(project)[-1] == ("rule", "read", {"path": str(project / "CLAUDE.md")})


def test_a_failed_or_mixed_read_keeps_the_command(files: Path) -> None:
    project = files
    payload = fixture("codex", "real.PostToolUse.Bash", project)
    missing = {**payload, "tool_use_id": "m", "tool_input": {"command": "cat nope.py"},
               "tool_response": "cat: nope.py: No such file or directory\n"}  # fmt: skip
    send("codex", missing, project)
    assert events(project) == [("data", "command", {"command": "cat nope.py"})]
    mixed = {**payload, "tool_use_id": "x",
             "tool_input": {"command": "cat auth/config.py | python -c 'import sys'"}}  # fmt: skip
    send("codex", mixed, project)
    assert [t for _, t, _ in events(project)] == ["command", "command"]


def test_claude_bash_cat_after_its_read_tool_adds_no_second_read(files: Path) -> None:
    project = files
    send("claude-code", fixture("claude-code", "real.PostToolUse.Read", project), project)
    bash = fixture("claude-code", "real.PostToolUse.Bash", project, tool_use_id="b2")
    bash["tool_input"] = {"command": "sed -n '1,40p' src/auth/tokens.py"}
    bash["tool_response"] = {"stdout": "import secrets\n", "stderr": "", "interrupted": False}
    send("claude-code", bash, project)
    reads = [e for e in events(project) if e[1] == "read"]
    assert reads == [("data", "read", {"path": str(project / "src" / "auth" / "tokens.py")})]
    assert not [e for e in events(project) if e[1] == "command"]


def test_gemini_run_shell_command_reads_in_its_dir_path(files: Path) -> None:
    project = files
    shell = fixture("gemini-cli", "real.AfterTool.run_shell_command.commit", project)
    shell["tool_input"] = {"command": "cat config.py", "dir_path": "auth"}
    shell["tool_response"] = {"llmContent": "ACCESS_TTL = 86400\n", "returnDisplay": ""}
    send("gemini-cli", shell, project)
    assert events(project) == [("data", "read", {"path": str(project / "auth" / "config.py")})]
