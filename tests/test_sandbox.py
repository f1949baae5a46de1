"""The sandbox: real subprocesses, process-group kills, output caps, digests, accounting."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from conftest import run_cli
from ctxmode import InvalidInput, PathOutsideProject, Store
from ctxmode import sandbox as sb
from ctxmode.search.sources import list_sources, source_chunks
from ctxmode.stats import sandbox_stats


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waiting for its parent counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def test_small_output_is_returned_as_is(store: Store, project: Path) -> None:
    res = sb.execute(store, "shell", "pwd; echo out; echo oops >&2; exit 3")
    assert res.exit_code == 3 and not res.indexed and res.source is None
    assert res.output.splitlines()[0] == str(project.resolve())  # cwd = project root
    assert "out" in res.output and "[stderr]\noops" in res.output
    assert res.bytes_produced == len(f"{project.resolve()}\nout\noops\n")
    py = sb.execute(store, "python", "import sys; print(sys.version_info[0])")
    assert py.output == "3"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_javascript_runs_with_node(store: Store) -> None:
    assert sb.execute(store, "js", "console.log(6 * 7)").output == "42"


def test_large_output_with_intent_returns_a_digest(store: Store) -> None:
    code = (
        "for i in range(2000):\n"
        "    print(f'PASSED tests/test_mod{i}.py::test_case ok')\n"
        "print('## Failures')\n"
        "print('FAILED tests/test_billing.py::test_refund - AssertionError: 3 != 4')\n"
    )
    res = sb.execute(store, "python", code, intent="refund failure assertion")
    assert res.indexed and res.source and res.source.startswith("exec:python:")
    assert res.bytes_produced > 50_000
    assert res.bytes_returned == len(res.output.encode()) < 5_000
    assert "test_refund" in res.output  # the matching section
    assert res.matches and res.matches[0].startswith("doc:")
    assert res.source in res.output and "search" in res.output
    assert res.terms and res.sections
    assert any("test_refund" in c for _, c in source_chunks(store, res.source))


def test_threshold_depends_on_intent(store: Store) -> None:
    code = "print('word ' * 2000)"  # ~10 KB
    plain = sb.execute(store, "python", code)
    assert not plain.indexed and plain.bytes_returned == plain.bytes_produced - 1  # no newline
    digested = sb.execute(store, "python", code, intent="word")
    assert digested.indexed


def test_timeout_kills_the_whole_process_group(store: Store, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    code = f"sleep 60 & echo $! > {pidfile}; echo started; wait"
    res = sb.execute(store, "shell", code, timeout=1)
    assert res.timed_out and res.exit_code is None
    assert "started" in res.output and "timed out" in res.output
    child = int(pidfile.read_text().strip())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(child)
    if alive:  # clean up before failing
        os.kill(child, signal.SIGKILL)
    assert not alive, "the background child survived the timeout"


def test_background_children_do_not_outlive_a_normal_run(store: Store, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    res = sb.execute(store, "shell", f"sleep 60 & echo $! > {pidfile}; echo done")
    assert res.exit_code == 0 and res.output == "done"
    child = int(pidfile.read_text().strip())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_output_cap_stops_the_process(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sb.process, "MAX_OUTPUT_BYTES", 200_000)
    res = sb.execute(store, "python", "while True: print('y' * 1000)", timeout=20)
    assert res.truncated and not res.timed_out
    assert res.bytes_produced == 200_000
    assert res.indexed  # 200 KB is over the plain threshold


def test_unknown_language_and_bad_arguments(store: Store) -> None:
    with pytest.raises(InvalidInput, match="unknown language 'cobol'.*shell"):
        sb.execute(store, "cobol", "DISPLAY 'HI'")
    with pytest.raises(InvalidInput):
        sb.execute(store, "shell", "   ")
    with pytest.raises(InvalidInput):
        sb.execute(store, "shell", "echo", timeout=0)
    with pytest.raises(InvalidInput):
        sb.execute(store, "shell", "echo", timeout=10_000)


def test_missing_interpreter_is_a_clear_error(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(InvalidInput, match="needs ruby on PATH"):
        sb.execute(store, "ruby", "puts 1")


def test_execute_file_reads_the_file_without_returning_it(store: Store, project: Path) -> None:
    data = project / "data.csv"
    data.write_text("".join(f"{i},value{i}\n" for i in range(5000)), encoding="utf-8")
    code = (
        "import os, sys\nrows = sys.stdin.read().splitlines()\n"
        "print(len(rows), os.environ['FILE_REL'])"
    )
    res = sb.execute_file(store, "data.csv", "python", code)
    assert res.output == "5000 data.csv"
    assert res.bytes_returned < 100
    shell = sb.execute_file(store, str(data), "shell", 'wc -l < "$FILE_PATH"')
    assert shell.output.strip() == "5000"


def test_execute_file_refuses_paths_outside_the_project(
    store: Store, project: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    with pytest.raises(PathOutsideProject):
        sb.execute_file(store, str(secret), "shell", "cat")
    with pytest.raises(PathOutsideProject):
        sb.execute_file(store, "../secret.txt", "shell", "cat")
    (project / "link.txt").symlink_to(secret)
    with pytest.raises(PathOutsideProject):
        sb.execute_file(store, "link.txt", "shell", "cat")


def test_secrets_in_output_are_redacted(store: Store) -> None:
    token = "ghp_" + "a1B2c3D4e5" * 4
    res = sb.execute(store, "shell", f"echo GITHUB_TOKEN={token}; echo key: {token}")
    assert token not in res.output and "REDACTED" in res.output
    big = sb.execute(
        store, "python", f"print('filler line\\n' * 3000)\nprint('{token}')", intent="token"
    )
    assert big.indexed and token not in big.output
    assert all(token not in c for _, c in source_chunks(store, big.source or ""))


def test_output_is_what_a_terminal_would_show(store: Store) -> None:
    """Colours, titles and progress redraws (``\\r``, npm's erase-line) cost an agent tokens and
    say nothing: the output keeps each line's final state, in the returned and indexed text."""
    code = (
        "import sys\n"
        "w = sys.stdout.write\n"
        "w('\\x1b]0;build\\x07\\x1b[1;32mcompiled\\x1b[0m ok\\n')\n"
        "for i in range(0, 101): w(f'\\rdownloading {i}%')\n"
        "w('\\n')\n"
        "for i in range(1, 4): w(f'\\x1b[2K\\x1b[1Gfetch {i}/3')\n"
        "w('\\r\\ndone\\r\\n')\n"
    )
    res = sb.execute(store, "python", code)
    assert res.output == "compiled ok\ndownloading 100%\nfetch 3/3\ndone"
    assert res.bytes_returned < res.bytes_produced / 10
    big = sb.execute(store, "python", code + "print('filler line\\n' * 3000)", intent="downloading")
    assert big.indexed
    chunks = " ".join(c for _, c in source_chunks(store, big.source or ""))
    assert "downloading 100%" in chunks and "downloading 99%" not in chunks
    assert "\x1b" not in chunks and "\r" not in chunks


def test_bytes_accounting(store: Store) -> None:
    small = sb.execute(store, "shell", "echo hello")
    large = sb.execute(store, "python", "print('z' * 150_000)")
    totals = sandbox_stats(store)
    assert totals.runs == 2
    assert totals.bytes_produced == small.bytes_produced + large.bytes_produced == 6 + 150_001
    assert totals.bytes_returned == small.bytes_returned + large.bytes_returned
    assert totals.bytes_kept_out == totals.bytes_produced - totals.bytes_returned
    rows = store.query("SELECT kind, source_label FROM sandbox_runs ORDER BY id")
    assert [r["kind"] for r in rows] == ["execute", "execute"]
    assert rows[1]["source_label"] == large.source


def test_batch_execute_indexes_and_answers_queries(store: Store) -> None:
    res = sb.batch_execute(
        store,
        ["echo alpha config loaded", "python3 -c \"print('gamma ' * 3000)\" || true", "exit 4"],
        ["alpha config"],
    )
    assert [r.exit_code for r in res.runs] == [0, 0, 4]
    assert res.source and res.source.startswith("batch:shell:")
    assert res.matches["alpha config"]
    assert "alpha config loaded" in res.output
    assert res.bytes_returned < res.bytes_produced
    with pytest.raises(InvalidInput):
        sb.batch_execute(store, [], ["q"])


def test_sandbox_sources_are_pruned(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sb.runs, "SANDBOX_KEEP", 2)
    for i in range(4):
        sb.execute(store, "python", f"print('{i} ' * 60_000)")
    assert len(list_sources(store, "sandbox")) == 2


def test_cli_exec_json(project: Path) -> None:
    proc = run_cli("exec", "shell", "echo from-cli", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["output"] == "from-cli" and data["exit_code"] == 0
    bad = run_cli("exec", "cobol", "x", cwd=project)
    assert bad.returncode == 1 and "unknown language" in bad.stderr
