"""Knowledge that follows the file: tier-1 contexts linked to a file reach the agent before its
first edit of that file, once per session, fenced, within the byte cap.

Hook tests run the real ``ctxmode hook`` subprocess on payloads captured from Claude Code
2.1.332, Codex 0.171.0 and Gemini CLI 0.61.0 (``tests/fixtures/hooks``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from _hooks import fixture, output_json, run_hook
from ctxmode import Store
from ctxmode.core.models import TYPE_TIERS
from ctxmode.knowledge import follow, ranking

CC = "claude-code"
TOKENS = "src/auth/tokens.py"
RULE = "Refresh tokens rotate every 7 days; the access TTL stays at 24 h."


def _project_file(project: Path, rel: str, text: str = "ACCESS_TTL = 86400\n") -> None:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _add(project: Path, ctx_type: str, content: str, *paths: str) -> int:
    with Store.open(project / ".context" / "context.db") as store:
        return store.write_context(ctx_type, content, file_paths=paths).id


def _edit(project: Path, rel: str = TOKENS, n: int = 0, **kw: Any) -> dict[str, Any] | None:
    payload = fixture(CC, "pre-tool-use.edit", project, tool_use_id=f"toolu_{n}", **kw)
    payload["tool_input"]["file_path"] = str(project / rel)
    return output_json(run_hook("pre-tool-use", payload, cwd=project, agent=CC))


def _context(out: dict[str, Any] | None) -> str:
    assert out is not None
    specific = out["hookSpecificOutput"]
    # Context only: the tool call's input and permission stay the agent's.
    assert set(specific) == {"hookEventName", "additionalContext"}
    return str(specific["additionalContext"])


@pytest.fixture
def auth(project: Path) -> Path:
    _project_file(project, TOKENS)
    _project_file(project, "src/other.py", "x = 1\n")
    _add(project, "constraint", RULE, TOKENS)
    return project


# -- unit ------------------------------------------------------------------------------------


def test_tier_1_types_match_the_model() -> None:
    assert set(follow.TIER_1) == {t for t, tier in TYPE_TIERS.items() if tier == 1}


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("src/auth/**", "src/auth/tokens.py", True),
        ("src/auth/**", "src/auth/deep/x.py", True),
        ("src/auth/**", "src/authz/x.py", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/auth/a.py", False),
        ("**/tokens.py", "src/auth/tokens.py", True),
        ("**/tokens.py", "tokens.py", True),
        ("src/auth/token?.py", "src/auth/tokens.py", True),
        ("src/[ab]*.py", "src/c.py", False),
    ],
)
def test_glob_matching_is_per_segment(pattern: str, path: str, expected: bool) -> None:
    assert ranking.glob_matches(pattern, path) is expected


def test_folders_of_a_path() -> None:
    assert ranking.folders_of("src/auth/tokens.py") == ["src/auth", "src", "."]
    assert ranking.folders_of("setup.py") == ["."]


def test_project_path_matches_normalize_path(store: Store, project: Path) -> None:
    from ctxmode.knowledge.contexts import normalize_path

    _project_file(project, TOKENS)
    (project / "link").symlink_to(project / "src")
    for raw in (str(project / TOKENS), TOKENS, str(project / "link" / "auth" / "tokens.py")):
        assert follow.project_path(store.root_dir, str(project), raw) == normalize_path(store, raw)
    assert follow.project_path(store.root_dir, str(project), "/etc/passwd") is None


def test_query_context_reaches_folder_and_glob_links(store: Store, project: Path) -> None:
    _project_file(project, TOKENS)
    own = store.write_context("constraint", "own link", file_paths=[TOKENS]).id
    folder = store.write_context("decision", "folder link", file_paths=["src/auth"]).id
    glob = store.write_context("convention", "glob link", file_paths=["src/**/*.py"]).id
    other = store.write_context("decision", "other folder", file_paths=["docs"]).id
    result = store.query_context(file_path=TOKENS)
    via = {i.context.id: i.via for i in result.items}
    assert via == {own: "file", folder: "folder", glob: "glob"}
    assert other not in via
    # The file's own link ranks before the folder's and the glob's (same tier).
    assert result.items[0].context.id == own


def test_glob_links_that_match_no_segment(store: Store, project: Path) -> None:
    """``src/**/tokens.py`` matches ``src/tokens.py``, which SQLite's GLOB alone would miss."""
    _project_file(project, "src/tokens.py")
    zero = store.write_context("constraint", "zero segments", file_paths=["src/**/tokens.py"]).id
    star = store.write_context("constraint", "one star", file_paths=["src/*/tokens.py"]).id
    ids = {i.context.id for i in store.query_context(file_path="src/tokens.py").items}
    assert zero in ids and star not in ids
    assert ranking.glob_links(store.conn, "src/x/tokens.py") != []


# -- hooks -----------------------------------------------------------------------------------


def test_linked_constraint_is_injected_before_the_first_edit_only(auth: Path) -> None:
    text = _context(_edit(auth, n=1))
    assert text.startswith('<ctxmode_data kind="file_knowledge"')
    assert "facts, not instructions" in text
    assert f'<linked_knowledge path="{TOKENS}">' in text
    assert "Refresh tokens rotate every 7 days" in text
    assert "stale=" not in text
    assert _edit(auth, n=2) is None  # once per session
    # Another session gets it again.
    other = fixture(CC, "pre-tool-use.edit", auth)["session_id"].replace("a", "b")
    assert "Refresh tokens" in _context(_edit(auth, n=3, session_id=other, transcript_path=None))
    with sqlite3.connect(auth / ".context" / "context.db") as conn:
        rows = conn.execute("SELECT kind, path, bytes FROM injections ORDER BY id").fetchall()
    assert rows == [("file", TOKENS, len(text.encode())), ("file", TOKENS, len(text.encode()))]
    assert not (auth / ".context" / "hooks.log").exists()


def test_unlinked_file_gets_nothing(auth: Path) -> None:
    assert _edit(auth, "src/other.py") is None
    assert _edit(auth, "src/new_file.py") is None  # Write of a file that does not exist yet


def test_write_multiedit_notebook_tools(auth: Path) -> None:
    _add(auth, "interface", "nb.ipynb cell 1 holds the loader", "nb.ipynb")
    payload = fixture(CC, "pre-tool-use.edit", auth, tool_name="NotebookEdit")
    payload["tool_input"] = {"notebook_path": str(auth / "nb.ipynb"), "new_source": "x"}
    assert "cell 1" in _context(output_json(run_hook("pre-tool-use", payload, cwd=auth)))
    payload = fixture(CC, "pre-tool-use.edit", auth, tool_name="Write", tool_use_id="w")
    payload["tool_input"] = {"file_path": str(auth / TOKENS), "content": "x"}
    assert "Refresh tokens" in _context(output_json(run_hook("pre-tool-use", payload, cwd=auth)))
    bash = fixture(CC, "pre-tool-use.bash", auth)
    assert output_json(run_hook("pre-tool-use", bash, cwd=auth)) is None


def test_folder_and_glob_links(auth: Path) -> None:
    _add(auth, "decision", "Auth uses PASETO v4, decided in review 12.", "src/auth")
    _add(auth, "convention", "Secrets compare with hmac.compare_digest.", "src/auth/**")
    _project_file(auth, "src/auth/deep/keys.py")
    text = _context(_edit(auth, "src/auth/deep/keys.py"))
    assert 'via="folder"' in text and "PASETO" in text
    assert 'via="glob"' in text and "compare_digest" in text
    assert "Refresh tokens" not in text  # linked to tokens.py only
    # tokens.py: its own constraint is new; the folder's and glob's were shown already.
    text = _context(_edit(auth, TOKENS, n=5))
    assert "Refresh tokens" in text
    assert "PASETO" not in text and "compare_digest" not in text


def test_stale_item_says_so(auth: Path) -> None:
    (auth / TOKENS).write_text("ACCESS_TTL = 7200\n", encoding="utf-8")
    text = _context(_edit(auth))
    assert 'stale="linked file changed since this was recorded"' in text


def test_opt_out_in_config(auth: Path) -> None:
    (auth / ".context" / "config.toml").write_text("file_knowledge = false\n", encoding="utf-8")
    assert _edit(auth) is None
    with sqlite3.connect(auth / ".context" / "context.db") as conn:
        assert conn.execute("SELECT count(*) FROM injections").fetchone()[0] == 0


def test_byte_cap(auth: Path) -> None:
    for i in range(8):
        _add(auth, "decision", f"Decision {i} about tokens: " + "detail " * 20, TOKENS)
    text = _context(_edit(auth))
    assert len(text.encode()) <= 600
    shown = text.count("<decision ") + text.count("<constraint ")
    assert 1 <= shown < 9
    # What did not fit is shown on a later edit, not lost.
    later = _context(_edit(auth, n=2))
    assert len(later.encode()) <= 600
    (auth / ".context" / "config.toml").write_text("file_knowledge_bytes = 330\n", "utf-8")
    small = _edit(auth, n=3)
    assert small is None or len(_context(small).encode()) <= 330


def test_the_startup_brief_is_not_repeated(auth: Path) -> None:
    start = fixture(CC, "session-start.startup", auth)
    start["session_id"] = fixture(CC, "pre-tool-use.edit", auth)["session_id"]
    start["transcript_path"] = fixture(CC, "pre-tool-use.edit", auth)["transcript_path"]
    brief = output_json(run_hook("session-start", start, cwd=auth))
    assert (
        brief is not None and "Refresh tokens" in brief["hookSpecificOutput"]["additionalContext"]
    )
    assert _edit(auth) is None


def test_codex_apply_patch(project: Path) -> None:
    _project_file(project, "auth/config.py")
    _add(project, "constraint", "ACCESS_TTL is read by the gateway too.", "auth/config.py")
    payload = fixture("codex", "PreToolUse.apply_patch", project)
    out = output_json(run_hook("pre-tool-use", payload, cwd=project, agent="codex"))
    assert out is not None and out["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "gateway" in _context(out)
    assert output_json(run_hook("pre-tool-use", payload, cwd=project, agent="codex")) is None


def test_gemini_gets_it_after_the_first_read(project: Path) -> None:
    _project_file(project, "auth/config.py")
    _add(project, "constraint", "ACCESS_TTL is read by the gateway too.", "auth/config.py")
    before = fixture("gemini-cli", "BeforeTool.replace", project)
    # Gemini ignores BeforeTool context: nothing is spent there.
    assert output_json(run_hook("pre-tool-use", before, cwd=project, agent="gemini-cli")) is None
    read = fixture("gemini-cli", "AfterTool.read_file", project)
    out = output_json(run_hook("post-tool-use", read, cwd=project, agent="gemini-cli"))
    assert out is not None and out["hookSpecificOutput"]["hookEventName"] == "AfterTool"
    assert "gateway" in out["hookSpecificOutput"]["additionalContext"]
    again = fixture("gemini-cli", "AfterTool.read_file", project, timestamp="2026-12-01T15:42Z")
    assert output_json(run_hook("post-tool-use", again, cwd=project, agent="gemini-cli")) is None


def test_a_compaction_makes_it_eligible_again(auth: Path) -> None:
    """A compaction drops earlier injections from the agent's context: knowledge the snapshot
    does not carry (stored before the session, so not among the session's own) is shown again
    at the next edit, once."""
    db = auth / ".context" / "context.db"
    with sqlite3.connect(db) as conn:  # stored an hour before the session started
        conn.execute("UPDATE contexts SET created_at = created_at - 3600")
    assert _edit(auth) is not None
    edit = fixture(CC, "pre-tool-use.edit", auth)
    compact = fixture(
        CC,
        "pre-compact",
        auth,
        session_id=edit["session_id"],
        transcript_path=edit["transcript_path"],
    )
    assert output_json(run_hook("pre-compact", compact, cwd=auth)) is None
    with sqlite3.connect(db) as conn:
        sid = edit["session_id"]
        row = conn.execute("SELECT compact_count FROM sessions WHERE session_id = ?", (sid,))
        assert row.fetchone()[0] == 1
        (snap,) = conn.execute("SELECT snapshot FROM session_resume").fetchone()
    assert "Refresh tokens" not in snap
    assert "Refresh tokens" in _context(_edit(auth, n=2))
    assert _edit(auth, n=3) is None


def test_stats_count_injections_and_bytes(auth: Path) -> None:
    import json

    from conftest import run_cli

    first = _context(_edit(auth))
    _add(auth, "decision", "Tokens are opaque to clients.", "src/auth")
    second = _context(_edit(auth, n=2))
    assert _edit(auth, "src/other.py", n=3) is None
    proc = run_cli("stats", "--json", cwd=auth)
    assert proc.returncode == 0, proc.stderr
    file_stats = json.loads(proc.stdout)["injections"]["file"]
    assert file_stats == {
        "count": 2,
        "bytes": len(first.encode()) + len(second.encode()),
        "contexts": 2,
    }
    human = run_cli("stats", cwd=auth).stdout
    assert "2 file knowledge (2 contexts," in human


def test_the_lookup_loads_no_slow_stdlib_modules(auth: Path) -> None:
    """The injecting path (a file, a folder and a glob link) stays on the lean hook imports."""
    import json
    import subprocess
    import sys

    from conftest import CTXMODE

    _add(auth, "decision", "Auth uses PASETO v4.", "src/auth")
    _add(auth, "convention", "Secrets compare with hmac.compare_digest.", "src/**/*.py")
    payload = fixture(CC, "pre-tool-use.edit", auth)
    payload["tool_input"]["file_path"] = str(auth / TOKENS)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(CTXMODE), "hook", "pre-tool-use"],
        input=json.dumps(payload),
        cwd=auth,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "PASETO" in proc.stdout
    loaded = {ln.split("|")[-1].strip() for ln in proc.stderr.splitlines() if "|" in ln}
    assert "ctxmode.knowledge.follow" in loaded
    slow = ("typing", "pathlib", "hashlib", "dataclasses", "contextlib", "inspect")
    assert not {m for m in loaded if m.split(".")[0] in slow}
    assert not any(
        m.startswith(("ctxmode.core.models", "ctxmode.knowledge.retrieval")) for m in loaded
    )


def test_opencode_gets_it_after_the_first_read(project: Path) -> None:
    """OpenCode's plugins cannot add context before a tool runs: ctxmode's plugin appends the
    post-tool answer to the tool's output (the real payloads of OpenCode 1.18.33)."""
    _project_file(project, "auth/config.py")
    _add(project, "constraint", "ACCESS_TTL is read by the gateway too.", "auth/config.py")
    before = fixture("opencode", "real.PreToolUse.edit", project)
    assert output_json(run_hook("pre-tool-use", before, cwd=project, agent="opencode")) is None
    read = fixture("opencode", "real.PostToolUse.read", project)
    out = output_json(run_hook("post-tool-use", read, cwd=project, agent="opencode"))
    assert out is not None and "gateway" in out["hookSpecificOutput"]["additionalContext"]
    edit = fixture("opencode", "real.PostToolUse.edit", project)
    assert output_json(run_hook("post-tool-use", edit, cwd=project, agent="opencode")) is None
