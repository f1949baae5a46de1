"""Paths: file links, indexing and ``execute_file`` stay inside the project.

Refused: ``..`` traversal, absolute paths elsewhere, symlinks inside the project that point out
(also when met while walking a folder). Allowed again only when the user lists the location
under ``allow_outside_paths`` in ``.context/config.toml``. Checked through the core, the CLI
and the MCP server.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from mcp import Client

from conftest import run_cli
from ctxmode import PathOutsideProject, Store, sandbox
from ctxmode.mcp.sdk.server import build_server
from ctxmode.search import indexing

MARKER = "OUTSIDE-SECRET-MARKER-42"


@pytest.fixture
def layout(project: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{MARKER}\n", encoding="utf-8")
    (project / "link_out").symlink_to(outside, target_is_directory=True)
    docs = project / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("# Inside\n\nThe retry policy lives here.\n", encoding="utf-8")
    (docs / "leak.md").symlink_to(outside / "secret.txt")
    (docs / "leakdir").symlink_to(outside, target_is_directory=True)
    return outside


ESCAPES = ["../outside/secret.txt", "link_out/secret.txt", "docs/leak.md", "docs/../../outside"]


def _db_has_marker(project: Path) -> bool:
    db = project / ".context" / "context.db"
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    data = db.read_bytes() + (Path(f"{db}-wal").read_bytes() if Path(f"{db}-wal").exists() else b"")
    return MARKER.encode() in data


def test_core_refuses_paths_outside_the_project(project: Path, layout: Path) -> None:
    with Store.open(project / ".context" / "context.db") as store:
        cid = store.write_context("convention", "paths stay inside").id
        for path in [*ESCAPES, str(layout / "secret.txt")]:
            with pytest.raises(PathOutsideProject):
                store.link_files(cid, [path])
            with pytest.raises(PathOutsideProject):
                indexing.index_path(store, path)
            with pytest.raises(PathOutsideProject):
                sandbox.execute_file(store, path, "shell", "cat")
        with pytest.raises(PathOutsideProject):
            store.write_context("convention", "x", file_paths=["../outside/secret.txt"])
        # Walking a folder skips links that lead out instead of following them.
        report = indexing.index_path(store, "docs")
        assert sum(s.files for s in report.sources) == 1
    assert not _db_has_marker(project)


def test_allow_outside_paths_opens_the_listed_location(project: Path, layout: Path) -> None:
    (project / ".context").mkdir(exist_ok=True)
    (project / ".context" / "config.toml").write_text(
        f'allow_outside_paths = ["{layout}"]\n', encoding="utf-8"
    )
    with Store.open(project / ".context" / "context.db") as store:
        cid = store.write_context("convention", "allowed").id
        store.link_files(cid, ["../outside/secret.txt"])
        assert indexing.index_path(store, "link_out/secret.txt").sources[0].chunks >= 1
        result = sandbox.execute_file(store, str(layout / "secret.txt"), "shell", "cat")
        assert MARKER in result.output
        # Only the listed location: its parent is still refused.
        with pytest.raises(PathOutsideProject):
            store.link_files(cid, [str(layout.parent)])


def test_cli_refuses_with_a_clear_error(project: Path, layout: Path) -> None:
    assert run_cli("init", cwd=project).returncode == 0
    for args in (
        ("index", "../outside"),
        ("index", "link_out"),
        ("add", "convention", "x", "--file", "../outside/secret.txt"),
    ):
        proc = run_cli(*args, cwd=project)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("Error: ") and "outside the project" in proc.stderr, (
            args,
            proc.stderr,
        )
    assert not _db_has_marker(project)


@pytest.mark.anyio
async def test_mcp_refuses_with_a_tool_error(project: Path, layout: Path) -> None:
    db = project / ".context" / "context.db"
    async with Client(build_server(db, project), mode="legacy") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        calls = [
            ("write_context", {"type": "convention", "content": "x", "file_paths": ESCAPES[:1]}),
            ("index", {"path": "link_out"}),
            ("execute_file", {"path": "docs/leak.md", "language": "shell", "code": "cat"}),
            ("execute_file", {"path": "../outside/secret.txt", "language": "shell", "code": "cat"}),
        ]
        for tool, args in calls:
            if tool not in tools:
                continue
            result = await client.call_tool(tool, args)
            text = result.content[0].text
            assert result.is_error, (tool, text)
            assert "outside the project" in text, text
            assert MARKER not in text
    assert not _db_has_marker(project)
