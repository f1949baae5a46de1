"""User's-eye QA of issue 5 (search, indexing, sandbox): each test is a bug a user hit.

Everything runs for real: the ``ctxmode`` command in a subprocess, the MCP server through an
in-process JSON-RPC session, temporary SQLite stores.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli, serve_body
from ctxmode import NotFound, Store
from ctxmode.search.engine import MIN_BUDGET, get_items, search
from ctxmode.search.fetch import fetch_and_index
from ctxmode.search.indexing import index_content

TOKEN = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"


def _edit(path: Path, text: str) -> None:
    """Rewrite a file with a different size and an mtime that surely differs."""
    before = path.stat().st_mtime
    path.write_text(text)
    os.utime(path, (before + 10, before + 10))


def test_cli_search_sees_an_edited_file_without_reindexing(project: Path) -> None:
    # A user indexes docs/, edits a file, searches: the issue says file-backed sources refresh
    # themselves when the file's mtime/hash changes, so the new text must be found.
    (project / "docs").mkdir()
    page = project / "docs" / "guide.md"
    page.write_text("# Guide\n\nThe frobnicator spins.\n")
    assert run_cli("index", "docs", cwd=project).returncode == 0
    _edit(page, "# Guide\n\nThe quokkamatic now spins instead.\n")
    found = run_cli("search", "quokkamatic", "--json", cwd=project)
    assert found.returncode == 0, found.stderr
    assert [h["title"] for h in json.loads(found.stdout)["hits"]] == ["docs/guide.md > Guide"]
    gone = json.loads(run_cli("search", "frobnicator", "--json", cwd=project).stdout)
    assert gone["hits"] == []
    page.unlink()
    after = json.loads(run_cli("search", "quokkamatic", "--json", cwd=project).stdout)
    assert after["hits"] == []


@pytest.mark.anyio
async def test_mcp_search_sees_an_edited_file(mcp_client: Any, project: Path) -> None:
    page = project / "notes.md"
    page.write_text("# Notes\n\nold wording here\n")
    assert (await mcp_client.call_tool("index", {"path": "notes.md"})).is_error is False
    _edit(page, "# Notes\n\nthe zanzibarish wording is new\n")
    res = await mcp_client.call_tool("search", {"queries": ["zanzibarish"]})
    assert res.is_error is False
    assert res.structured_content["ids"], res.content[0].text


@pytest.mark.anyio
async def test_mcp_search_does_not_echo_a_huge_query_past_the_budget(mcp_client: Any) -> None:
    # Any text is a valid query, and output stays within its budget: a 10,000-character query
    # must not come back whole (twice) in the result.
    await mcp_client.call_tool("index", {"content": "# Notes\n\nqueue depth alarm", "source": "n"})
    query = "queue " * 2000
    res = await mcp_client.call_tool("search", {"queries": [query], "budget_chars": 1000})
    assert res.is_error is False
    text = res.content[0].text
    assert "queue depth" in text.replace("**", "")
    assert len(text) < 2000, len(text)
    assert len(json.dumps(res.structured_content)) < 4000


@pytest.mark.anyio
async def test_mcp_argument_errors_redact_secrets(mcp_client: Any) -> None:
    # A wrongly shaped call echoes the offending input back: a token in it must be redacted
    # (cutting the echo at 60 characters left a prefix the redactor no longer recognised).
    res = await mcp_client.call_tool(
        "batch_execute",
        {"commands": [{"label": "a", "command": f"echo {TOKEN}"}], "queries": []},
    )
    assert res.is_error is True
    text = res.content[0].text
    assert "invalid arguments for batch_execute" in text
    assert "ghp_1234" not in text, text


def test_cli_exec_exits_with_the_commands_status(project: Path) -> None:
    # `ctxmode exec shell 'make test' && git push` must not push when the tests failed.
    failed = run_cli("exec", "shell", "echo out; exit 3", cwd=project)
    assert failed.returncode == 3 and failed.stdout == "out\n", failed
    as_json = run_cli("exec", "shell", "exit 5", "--json", cwd=project)
    assert as_json.returncode == 5 and json.loads(as_json.stdout)["exit_code"] == 5
    slow = run_cli("exec", "shell", "sleep 30", "--timeout", "0.5", cwd=project)
    assert slow.returncode == 124 and "timed out" in slow.stdout + slow.stderr
    assert run_cli("exec", "shell", "true", cwd=project).returncode == 0


def test_digest_of_a_run_cut_at_the_output_cap_says_why_it_stopped(project: Path) -> None:
    # The digest said "exit code None" for a process killed at the output cap.
    proc = run_cli("exec", "shell", "yes abc", "--timeout", "30", "--json", cwd=project)
    data = json.loads(proc.stdout)
    assert data["truncated"] and data["indexed"]
    head = data["output"].splitlines()[0]
    assert "None" not in head and "output cap" in head, head


def _rows_with(store_path: Path, needle: str) -> list[str]:
    with sqlite3.connect(store_path) as conn:
        rows = conn.execute(
            "SELECT title || ' ' || body FROM search_items WHERE item_kind = 'chunk'"
        ).fetchall()
    return [r[0] for r in rows if needle in r[0]]


def test_output_cut_at_the_cap_does_not_store_half_a_secret(project: Path) -> None:
    # `yes <token>` fills the 2 MB cap; the cut fell inside a token, whose head (23 of its 36
    # characters) no longer matched the redaction pattern and was stored and returned.
    proc = run_cli("exec", "shell", f"yes {TOKEN}", "--timeout", "30", "--json", cwd=project)
    assert json.loads(proc.stdout)["truncated"]
    assert _rows_with(project / ".context" / "context.db", "ghp_") == []


def test_fetched_body_cut_at_the_cap_does_not_store_half_a_secret(store: Store) -> None:
    with serve_body((f"line {TOKEN}\n" * 200).encode(), "text/plain", "/t.txt") as url:
        report = fetch_and_index(store, url, max_bytes=len(f"line {TOKEN}\n") * 3 + 20)
    assert report.truncated
    assert _rows_with(store.path, "ghp_") == []


# -- search: get's budget, long-word typos, total ------------------------------------------


def _guide(store: Store) -> None:
    index_content(
        store,
        "# Guide\n\nIntro about the frobnicator.\n\n## Usage\n\nCall frob to run.\n\n"
        "## Advanced\n\nThe zanzibar feature.\n",
        "g",
        fmt="markdown",
    )


def test_get_stays_within_its_budget_whatever_the_number_of_ids(store: Store) -> None:
    _guide(store)
    first = search(store, "zanzibar").hits[0].id
    items = get_items(store, [first] * 100, budget_chars=MIN_BUDGET)
    shown = sum(len(i.text) + len(i.title) for i in items)
    assert shown <= 2 * MIN_BUDGET, shown


def test_a_one_letter_typo_of_a_long_word_is_corrected(store: Store) -> None:
    _guide(store)
    result = search(store, "frobnicatr")
    assert result.corrected_query == "frobnicator" and result.hits


def test_total_counts_at_least_the_hits_shown(store: Store) -> None:
    _guide(store)
    result = search(store, "zanzibar")
    matched = [h for h in result.hits if h.matched]  # neighbours shown for context aside
    assert result.total >= len(matched), (result.total, [h.id for h in result.hits])


def test_json_usage_errors_still_print_one_json_document(project: Path) -> None:
    proc = run_cli("search", "retry", "--limit", "0", "--json", cwd=project)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["kind"] == "UsageError" and "--limit" in doc["error"]


def test_searching_an_unknown_source_says_so(store: Store) -> None:
    index_content(store, "# Notes\n\nqueue depth alarm", "notes", fmt="markdown")
    assert search(store, "queue", source="notes").hits
    with pytest.raises(NotFound, match="no searchable item has source 'note'") as err:
        search(store, "queue", source="note")
    assert err.value.hint == "list_sources"


@pytest.mark.anyio
async def test_mcp_unknown_source_error_speaks_of_tools(mcp_client: Any) -> None:
    await mcp_client.call_tool("index", {"content": "# Notes\n\nqueue depth", "source": "notes"})
    res = await mcp_client.call_tool("search", {"queries": ["queue"], "source": "nope"})
    assert res.is_error is True
    text = res.content[0].text
    assert "'nope'" in text and "ctxmode sources" not in text
