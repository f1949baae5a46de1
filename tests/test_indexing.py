"""Indexing files, folders and content; refresh; .gitignore; binaries; redaction; the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli
from ctxmode import InvalidInput, PathOutsideProject, Store
from ctxmode.search.files import MAX_FILE_BYTES
from ctxmode.search.indexing import index_content, index_path, refresh_sources
from ctxmode.search.sources import list_sources, remove_source, source_chunks


def search_items(store: Store, source: str) -> list[str]:
    rows = store.query(
        "SELECT title FROM search_items WHERE item_kind = 'chunk' AND source = ? ORDER BY id",
        (source,),
    )
    return [r["title"] for r in rows]


@pytest.fixture
def docs(project: Path) -> Path:
    d = project / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "guide.md").write_text("# Guide\nintro\n## Setup\nrun make\n", encoding="utf-8")
    (d / "sub" / "api.py").write_text("def handler():\n    return 1\n", encoding="utf-8")
    (d / "debug.log").write_text("noise\n", encoding="utf-8")
    (d / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (project / ".gitignore").write_text("*.log\n", encoding="utf-8")
    (d / "sub" / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (d / "sub" / "generated").mkdir()
    (d / "sub" / "generated" / "out.md").write_text("# Generated\n", encoding="utf-8")
    return d


def test_folder_is_one_source_and_chunks_reach_search(store: Store, docs: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    report = index_path(store, str(docs), progress=lambda d, t, p: seen.append((d, t, p)))
    (src,) = report.sources
    assert src.label == "docs" and src.kind == "file" and src.files == 2
    titles = search_items(store, "docs")
    assert "docs/guide.md > Guide > Setup" in titles
    assert "docs/sub/api.py > def handler" in titles
    assert not any("debug.log" in t or "Generated" in t for t in titles)  # .gitignore
    assert {s.path: s.reason for s in report.skipped} == {"docs/logo.png": "binary"}
    assert seen[-1][0] == seen[-1][1] == 3 and {p for _, _, p in seen} >= {"docs/guide.md"}


def test_reindexing_replaces_the_source(store: Store, docs: Path) -> None:
    index_path(store, str(docs / "guide.md"), source="guide")
    before = store.query("SELECT count(*) AS n FROM search_items")[0]["n"]
    (docs / "guide.md").write_text("# Other\nnew\n", encoding="utf-8")
    index_path(store, str(docs / "guide.md"), source="guide")
    assert search_items(store, "guide") == ["Other"]
    assert store.query("SELECT count(*) AS n FROM search_items")[0]["n"] == before - 1
    assert len(list_sources(store)) == 1


def test_refresh_reindexes_only_changed_files(store: Store, docs: Path) -> None:
    (docs / "keep.md").write_text("# Keep\nsame\n", encoding="utf-8")
    index_path(store, "docs")
    keep_ids = [r["id"] for r in store.query("SELECT id FROM chunks WHERE path = 'docs/keep.md'")]
    unchanged = refresh_sources(store)
    assert [s.status for s in unchanged.sources] == ["unchanged"]
    guide = docs / "guide.md"
    guide.write_text("# Guide\nintro\n## Deploy\nship it\n", encoding="utf-8")
    os.utime(guide, (guide.stat().st_atime, guide.stat().st_mtime + 5))
    (docs / "new.md").write_text("# Fresh\nnew file\n", encoding="utf-8")
    (docs / "sub" / "api.py").unlink()
    report = refresh_sources(store)
    assert [s.status for s in report.sources] == ["refreshed"]
    titles = search_items(store, "docs")
    assert "docs/guide.md > Guide > Deploy" in titles
    assert "docs/guide.md > Guide > Setup" not in titles
    assert "docs/new.md > Fresh" in titles
    assert not any("api.py" in t for t in titles)
    assert not store.query("SELECT 1 FROM chunks WHERE path = 'docs/sub/api.py'")
    # The file that did not change kept its chunks (same rows, not re-inserted).
    assert keep_ids == [
        r["id"] for r in store.query("SELECT id FROM chunks WHERE path = 'docs/keep.md'")
    ]


def test_touched_but_identical_file_is_not_rechunked(store: Store, docs: Path) -> None:
    index_path(store, "docs/guide.md")
    ids = [r["id"] for r in store.query("SELECT id FROM chunks ORDER BY id")]
    guide = docs / "guide.md"
    os.utime(guide, (guide.stat().st_atime, guide.stat().st_mtime + 10))
    assert refresh_sources(store).sources[0].status == "unchanged"
    assert [r["id"] for r in store.query("SELECT id FROM chunks ORDER BY id")] == ids


def test_refresh_empties_a_source_whose_file_vanished(store: Store, docs: Path) -> None:
    index_path(store, "docs/guide.md")

    (docs / "guide.md").unlink()
    assert refresh_sources(store).sources[0].status == "missing"
    (info,) = list_sources(store)
    assert info.label == "docs/guide.md" and info.chunks == 0 and info.missing
    assert search_items(store, "docs/guide.md") == []
    assert refresh_sources(store).sources[0].status == "missing"  # no write the second time


def test_a_folder_back_after_a_branch_switch_is_indexed_again(store: Store, docs: Path) -> None:
    report = index_path(store, "docs")
    chunks = report.chunks
    assert chunks > 0 and store.search("make setup").hits
    moved = docs.parent / "docs-elsewhere"
    docs.rename(moved)  # what `git switch` to a branch without the folder does
    assert store.search("make setup").hits  # not refreshed yet
    assert refresh_sources(store).sources[0].status == "missing"
    assert not store.search("make setup").hits
    moved.rename(docs)
    back = refresh_sources(store).sources[0]
    assert back.status == "refreshed" and back.chunks == chunks
    assert store.search("make setup").hits
    assert not list_sources(store)[0].missing


def test_paths_outside_the_project_are_refused(store: Store, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Secret plans\n", encoding="utf-8")
    with pytest.raises(PathOutsideProject):
        index_path(store, str(outside))
    with pytest.raises(PathOutsideProject):
        index_path(store, "../elsewhere.md")
    (project / "link.md").symlink_to(outside)
    with pytest.raises(PathOutsideProject):
        index_path(store, "link.md")
    # A symlink met during a folder walk is skipped, not followed out.
    (project / "d").mkdir()
    (project / "d" / "ok.md").write_text("# Fine\n", encoding="utf-8")
    (project / "d" / "escape.md").symlink_to(outside)
    report = index_path(store, "d")
    assert report.sources[0].files == 1
    assert any(s.path == "d/escape.md" for s in report.skipped)


def test_secrets_are_redacted_and_env_files_masked(store: Store, project: Path) -> None:
    (project / "notes.md").write_text(
        "# Ops\nexport GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n", encoding="utf-8"
    )
    (project / ".env").write_text("DATABASE_URL=postgres://u:p@h/db\nPLAIN=hello\n")
    index_path(store, "notes.md")
    index_path(store, ".env")
    stored = json.dumps(store.query("SELECT title, body FROM search_items").__repr__())
    bodies = " ".join(r["body"] for r in store.query("SELECT body FROM search_items"))
    assert "ghp_abc" not in bodies and "ghp_abc" not in stored
    assert "postgres://" not in bodies and "hello" not in bodies
    assert "DATABASE_URL=" in bodies


def test_large_and_binary_files(store: Store, project: Path) -> None:
    (project / "huge.txt").write_text("x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(InvalidInput, match="larger than"):
        index_path(store, "huge.txt")
    (project / "noise.bin").write_bytes(bytes(range(1, 256)) * 8)  # not UTF-8, no NUL
    with pytest.raises(InvalidInput, match="binary"):
        index_path(store, "noise.bin")
    with pytest.raises(InvalidInput, match="neither"):
        index_path(store, "missing.md")


def test_legacy_and_utf16_text_files_are_indexed(store: Store, project: Path) -> None:
    """Old docs in Windows-1252 or Latin-1, and UTF-16 files with a BOM (what Windows tools
    write), are text: they are indexed, not skipped as binary."""
    (project / "latin.txt").write_bytes("Le caf\xe9 ouvre \xe0 huit heures.".encode("latin-1"))
    (project / "quotes.txt").write_bytes(
        "The \u201cflux capacitor\u201d \u2013 ok".encode("cp1252")
    )
    (project / "wide.txt").write_text("Rotate the gizmo keys weekly.", encoding="utf-16")
    for name in ("latin.txt", "quotes.txt", "wide.txt"):
        assert index_path(store, name).chunks == 1
    assert [h.source for h in store.search("café huit").hits] == ["latin.txt"]
    assert "\u201cflux capacitor\u201d" in source_chunks(store, "quotes.txt")[0][1]
    assert [h.source for h in store.search("gizmo weekly").hits] == ["wide.txt"]


def test_index_content_and_remove(store: Store) -> None:
    report = index_content(store, "# Runbook\nrestart the queue\n", "runbook")
    assert report.chunks == 1
    assert source_chunks(store, "runbook") == [("Runbook", "# Runbook\nrestart the queue")]
    index_content(store, "plain replacement", "runbook")
    assert len(source_chunks(store, "runbook")) == 1
    assert remove_source(store, "runbook") and not remove_source(store, "runbook")
    assert store.query("SELECT count(*) AS n FROM search_items")[0]["n"] == 0
    with pytest.raises(InvalidInput):
        index_content(store, "   ", "x")
    with pytest.raises(InvalidInput):
        index_content(store, "text", "")


def test_search_finds_indexed_chunks(store: Store, docs: Path) -> None:
    from ctxmode.search.engine import search

    index_path(store, "docs")
    result = search(store, "make", source="docs")
    assert result.hits and result.hits[0].title == "docs/guide.md > Guide > Setup"


def test_cli_index_json_summary(project: Path, docs: Path) -> None:
    proc = run_cli("index", "docs", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["sources"][0]["label"] == "docs" and data["chunks"] >= 3
    assert "\x1b" not in proc.stderr  # no progress bar when piped
    again = run_cli("index", "docs/guide.md", "docs", "--source", "x", cwd=project)
    assert again.returncode == 1 and "single PATH" in again.stderr
    human = run_cli("sources", cwd=project)
    assert "docs\tfile" in human.stdout


def test_names_that_are_not_utf8_are_skipped_with_a_reason(project: Path, docs: Path) -> None:
    """A file or folder name with undecodable bytes (``os.walk`` gives lone surrogates) is
    reported and left out; the rest of the folder is indexed and refreshes, over the CLI too."""
    bad_file = os.fsencode(docs) + b"/caf\xe9.md"
    with open(bad_file, "wb") as fh:
        fh.write(b"# Latin-1 name\nbody\n")
    os.mkdir(os.fsencode(docs) + b"/dir\xff")
    with open(os.fsencode(docs) + b"/dir\xff/inner.md", "wb") as fh:
        fh.write(b"# Inner\n")
    proc = run_cli("index", "docs", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    assert skipped["docs/caf\ufffd.md"].startswith("name is not valid UTF-8")
    assert skipped["docs/dir\ufffd/"].startswith("name is not valid UTF-8")
    assert data["sources"][0]["files"] == 2  # guide.md and sub/api.py
    with Store.open(project / ".context" / "context.db", root=project) as store:
        assert "Guide" in " ".join(search_items(store, "docs"))
        (docs / "guide.md").write_text("# Guide\nchanged\n", encoding="utf-8")
        report = refresh_sources(store)
        assert sorted(s.path for s in report.skipped if "UTF-8" in s.reason) == [
            "docs/caf\ufffd.md",
            "docs/dir\ufffd/",
        ]
        assert [h.title for h in store.search("changed", source="docs").hits] == [
            "docs/guide.md > Guide"
        ]


def test_pipes_and_sockets_are_skipped_not_read(project: Path, docs: Path) -> None:
    """Reading a named pipe would wait for a writer for good: indexing (and the refresh before
    a search) must pass over pipes and sockets."""
    import socket

    os.mkfifo(docs / "pipe.md")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(docs / "sock.md"))
        proc = run_cli("index", "docs", "--json", cwd=project)
        assert proc.returncode == 0, proc.stderr
        skipped = {s["path"]: s["reason"] for s in json.loads(proc.stdout)["skipped"]}
        assert skipped["docs/pipe.md"].startswith("not a regular file")
        assert skipped["docs/sock.md"].startswith("not a regular file")
        (docs / "guide.md").write_text("# Guide\nrefreshed\n", encoding="utf-8")
        found = run_cli("search", "refreshed", "--json", cwd=project)
        assert found.returncode == 0, found.stderr
        assert [h["title"] for h in json.loads(found.stdout)["hits"]] == ["docs/guide.md > Guide"]


def test_store_indexes_several_paths_into_one_report_with_progress(
    store: Store, docs: Path, project: Path
) -> None:
    """``Store.index_paths``: one source per path, one report, progress named by path; then
    ``disk_bytes`` folds the log into the file and measures what stays on disk."""
    (project / "notes.md").write_text("# Notes\nrotate the keys\n", encoding="utf-8")
    seen: list[tuple[str, int, int]] = []
    report = store.index_paths(
        [str(docs), str(project / "notes.md")], progress=lambda p, d, t: seen.append((p, d, t))
    )
    assert [s.label for s in report.sources] == ["docs", "notes.md"]
    assert report.files == 3 and report.chunks == sum(s.chunks for s in report.sources)
    assert {p for p, _, _ in seen} == {str(docs), str(project / "notes.md")}
    assert all(d <= t for _, d, t in seen)
    size = store.disk_bytes()
    wal = Path(store.db_file + "-wal")
    assert size == os.path.getsize(store.db_file) + (wal.stat().st_size if wal.exists() else 0)
    assert not wal.exists() or wal.stat().st_size == 0  # nobody else reads: folded in
    with pytest.raises(InvalidInput, match="single path"):
        store.index_paths([str(docs), str(project / "notes.md")], "both")


def test_store_labels_indexed_text_by_its_content(store: Store) -> None:
    first = store.index_text("# Runbook\nrestart the queue\n")
    again = store.index_text("# Runbook\nrestart the queue\n")
    other = store.index_text("# Runbook\nrestart the workers\n")
    label = first.sources[0].label
    assert label.startswith("content:") and again.sources[0].label == label
    assert other.sources[0].label != label
    labels = [s.label for s in store.sources("content")]
    assert sorted(labels) == sorted([label, other.sources[0].label])  # the same text: once
    assert store.index_text("named", "runbook").sources[0].label == "runbook"
    assert store.remove_source("runbook") and not store.remove_source("runbook")
