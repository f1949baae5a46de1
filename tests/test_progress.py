"""Progress display: drawn on a terminal's stderr, silent when piped or with ``--json``."""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path

import pytest

from conftest import CTXMODE, run_cli

pty = pytest.importorskip("pty", reason="needs a pseudo-terminal (POSIX)")


def _stderr_on_a_terminal(args: list[str], cwd: Path) -> tuple[str, bytes]:
    """Run ctxmode with stderr on a pseudo-terminal; return (stdout, terminal bytes)."""
    master, slave = pty.openpty()
    assert CTXMODE
    env = dict(os.environ, TERM="xterm", COLUMNS="100")
    proc = subprocess.Popen(
        [CTXMODE, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=slave, env=env, text=True
    )
    out, _ = proc.communicate(timeout=60)
    os.close(slave)
    data = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    assert proc.returncode == 0, out
    return out, data


def test_import_and_gc_show_progress_only_on_a_terminal(project: Path, tmp_path: Path) -> None:
    assert run_cli("add", "decision", "Use SQLite", cwd=project).returncode == 0
    export = tmp_path / "export.jsonl"
    export.write_text(run_cli("export", cwd=project).stdout, encoding="utf-8")
    other = tmp_path / "other.db"
    assert run_cli("--db", str(other), "init", cwd=project).returncode == 0

    out, term = _stderr_on_a_terminal(["--db", str(other), "import", str(export)], project)
    assert "Imported 1 contexts" in out
    assert b"Importing 2 lines" in term

    out, term = _stderr_on_a_terminal(
        ["--db", str(other), "import", "--json", str(export)], project
    )
    assert json.loads(out)["contexts_skipped"] == 1
    assert term == b""

    out, term = _stderr_on_a_terminal(["gc", "--dry-run"], project)
    assert b"Applying retention rules" in term

    assert run_cli("--db", str(tmp_path / "third.db"), "init", cwd=project).returncode == 0
    piped = run_cli("--db", str(tmp_path / "third.db"), "import", str(export), cwd=project)
    assert piped.returncode == 0 and piped.stderr == ""


def test_index_shows_a_bar_per_path_only_on_a_terminal(project: Path) -> None:
    for name in ("guides", "specs"):
        (project / name).mkdir()
        for i in range(3):
            (project / name / f"{i}.md").write_text(f"# {name} {i}\ntext\n", encoding="utf-8")

    _, term = _stderr_on_a_terminal(["index", "guides", "specs"], project)
    assert b"indexing guides" in term and b"indexing specs" in term

    out, term = _stderr_on_a_terminal(["index", "--json", "guides", "specs"], project)
    data = json.loads(out)
    assert [s["label"] for s in data["sources"]] == ["guides", "specs"]
    assert data["store_bytes"] > 0 and term == b""
