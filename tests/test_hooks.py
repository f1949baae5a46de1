"""The real ``ctxmode hook`` process: whole sessions per agent, fail-open, imports, logging."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from _hooks import event_name, fixture, fixture_names, output_json, run_hook
from conftest import CTXMODE, HOT_PATH
from ctxmode.core.db import GITIGNORE

CC = "claude-code"
CC_SID = "5f0c1e2a-7b3d-4c8e-9a10-2b3c4d5e6f70"
FORBIDDEN = ("click", "rich", "mcp", "pydantic", "httpx", "starlette")
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (INFO|WARN|ERROR) \S.*$")


def db(project: Path) -> sqlite3.Connection:
    return sqlite3.connect(project / ".context" / "context.db")


def count(project: Path, sql: str = "SELECT count(*) FROM events", *args: Any) -> int:
    with db(project) as conn:
        return int(conn.execute(sql, args).fetchone()[0])


def hook(agent: str, name: str, project: Path, **overrides: Any) -> dict[str, Any] | None:
    payload = fixture(agent, name, project, **overrides)
    return output_json(run_hook(event_name(payload), payload, cwd=project, agent=agent))


def context_of(out: dict[str, Any] | None) -> str:
    assert out is not None
    if "additional_context" in out:
        return str(out["additional_context"])
    return str(out["hookSpecificOutput"]["additionalContext"])


def snapshot_xml(text: str) -> ET.Element:
    m = re.search(r"<session_knowledge.*?</session_knowledge>", text, re.S)
    assert m, text
    assert len(m.group(0).encode("utf-8")) <= 2048
    return ET.fromstring(m.group(0))


def test_whole_claude_session_survives_compaction(project: Path) -> None:
    """Many tool calls -> pre-compact -> session-start(compact): the snapshot comes back."""
    sub = project / "sub"
    sub.mkdir()
    assert hook(CC, "session-start.startup", project) is None  # empty store: no brief
    hook(CC, "user-prompt-submit", project)
    for name in fixture_names(CC):
        if name.startswith(("post-tool-use", "pre-tool-use")):
            hook(CC, name, project)
    for i in range(12):  # noise: many reads of other files from a sub folder (same project)
        payload = fixture(CC, "post-tool-use.read", project, tool_use_id=f"r{i}", cwd=str(sub))
        payload["tool_input"]["file_path"] = f"{project}/docs/page{i}.md"
        output_json(run_hook("post-tool-use", payload, cwd=sub))
    hook(CC, "user-prompt-submit.zh", project)
    hook(CC, "stop.decision", project)
    assert (project / ".context" / ".gitignore").read_text() == GITIGNORE
    assert count(project) > 30

    assert hook(CC, "pre-compact", project) is None
    assert count(project, "SELECT count(*) FROM session_resume") == 1
    assert count(project, "SELECT compact_count FROM sessions") == 1

    text = context_of(hook(CC, "session-start.compact", project))
    assert text.startswith('<ctxmode_data kind="session_knowledge"')
    assert "ctxmode events --session " + CC_SID in text.splitlines()[-1]
    root = snapshot_xml(text)
    assert root.get("session") == CC_SID and root.get("agent") == CC
    files = {f.get("path") for f in root.iter("file")}
    assert {"src/client.py", "src/retry.py"} <= files
    tasks = {t.text: t.get("status") for t in root.iter("task")}
    assert tasks["Wire retry into client"] == "in_progress"
    assert tasks["Add backoff jitter"] == "in_progress"
    assert [r.text for r in root.iter("request")][-1].startswith("我们决定采用方案B")
    assert any("CLAUDE.md" in (r.get("path") or "") for r in root.iter("rule"))
    assert root.find("plans") is not None
    assert any(g.text == "Add retry to client (#42)" for g in root.iter("action"))
    assert root.find("errors") is None  # the pytest failure was resolved by a later success
    assert count(project, "SELECT consumed FROM session_resume") == 1
    # The mirrored tasks are visible to the knowledge queries.
    with db(project) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM tasks")}
    assert {"Wire retry into client", "Add backoff jitter"} <= names


def test_stop_decision_is_suggested_once_on_the_next_prompt(project: Path) -> None:
    assert hook(CC, "stop.active", project) is None
    assert count(project) == 0  # stop_hook_active: nothing recorded
    assert hook(CC, "stop.decision", project) is None
    text = context_of(hook(CC, "user-prompt-submit", project))
    assert "exponential backoff" in text and "ctxmode decision add" in text
    again = hook(CC, "user-prompt-submit", project, prompt="next thing please")
    assert again is None


def test_resume_injects_the_newest_unconsumed_snapshot(project: Path) -> None:
    hook(CC, "post-tool-use.edit", project)
    hook(CC, "pre-compact", project)
    text = context_of(hook(CC, "session-start.resume", project))
    assert "src/client.py" in text
    # The agent replays that copy on the next resume (the e2e runs show it): not a second one,
    # nor a SessionStart compact right after (Codex fires resume, then compact).
    assert hook(CC, "session-start.resume", project) is None
    assert hook(CC, "session-start.compact", project) is None
    # After the next compaction the snapshot comes again, once.
    hook(CC, "pre-compact", project)
    assert "src/client.py" in context_of(hook(CC, "session-start.compact", project))
    assert hook(CC, "session-start.resume", project) is None
    assert count(project, "SELECT count(*) FROM session_resume") == 2
    assert hook(CC, "session-start.clear", project) is None


def test_a_resume_without_compaction_injects_once_and_stores_nothing(project: Path) -> None:
    hook(CC, "post-tool-use.edit", project)
    assert "src/client.py" in context_of(hook(CC, "session-start.resume", project))
    assert hook(CC, "session-start.resume", project) is None
    assert count(project, "SELECT count(*) FROM session_resume") == 0


def test_startup_brief_and_its_opt_out(project: Path) -> None:
    hook(CC, "post-tool-use.todowrite", project)
    text = context_of(hook(CC, "session-start.startup", project))
    assert '<ctxmode_data kind="project_brief"' in text and "Wire retry into client" in text
    (project / ".context" / "config.toml").write_text("startup_brief = false\n")
    assert hook(CC, "session-start.startup", project) is None


@pytest.mark.parametrize(
    ("agent", "compact", "after"),
    [
        ("vscode", "PreCompact", "UserPromptSubmit"),
        ("cursor", "preCompact", "postToolUse"),
        ("opencode", "experimental.session.compacting", "chat.message"),
        ("codex", "PreCompact", "SessionStart.compact"),
    ],
)
def test_other_agents_whole_session(agent: str, compact: str, after: str, project: Path) -> None:
    for name in fixture_names(agent):
        if name not in (compact, after):
            hook(agent, name, project)
    with db(project) as conn:
        agents = {r[0] for r in conn.execute("SELECT DISTINCT agent FROM events")}
        kinds = {r[0] for r in conn.execute("SELECT DISTINCT category FROM events")}
    assert agents == {agent}
    assert "file" in kinds or "git" in kinds
    assert hook(agent, compact, project) is None
    out = hook(agent, after, project)
    text = context_of(out)
    root = snapshot_xml(text)
    assert root.get("agent") == agent
    if agent == "cursor":
        assert out is not None and set(out) == {"additional_context"}
    elif agent == "gemini-cli":
        assert out is not None and out["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    # Injected once only.
    assert (
        hook(agent, after, project, generation_id="again", prompt="more") in (None,)
        or agent == "codex"
    )


COMPRESSED = '{"$set":{"messages":[{"type":"user","content":[{"text":"<state_snapshot>x"}]}]}}\n'


def test_gemini_precompress_counts_only_a_compression_the_transcript_shows(
    project: Path, tmp_path: Path
) -> None:
    """Gemini 0.61 fires PreCompress before every model call; a real compression rewrites the
    transcript's messages with a ``<state_snapshot>`` (tests/e2e/test_gemini_cli.py)."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_text('{"sessionId":"gem-session-0001"}\n')
    path = {"transcript_path": str(transcript)}
    agent = "gemini-cli"
    hook(agent, "AfterTool.replace", project, **path)
    for _ in range(3):  # no compression: nothing counted, nothing injected
        assert hook(agent, "PreCompress", project, **path) is None
        hook(agent, "AfterTool.run_shell_command", project, **path)
    assert hook(agent, "BeforeAgent", project, **path) is None
    assert count(project, "SELECT compact_count FROM sessions") == 0
    assert count(project, "SELECT count(*) FROM session_resume") == 0
    hook(agent, "PreCompress", project, **path)
    with transcript.open("a") as fh:
        fh.write(COMPRESSED)
    hook(agent, "AfterAgent", project, **path)
    assert count(project, "SELECT compact_count FROM sessions") == 1
    out = hook(agent, "BeforeAgent", project, prompt="go on", **path)
    assert out is not None and out["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    text = context_of(out)
    # Plain text: Gemini escapes < and > in hook context.
    assert text.startswith('[ctxmode_data kind="session_knowledge"') and "<" not in text
    assert "agent=gemini-cli" in text and "files:" in text
    assert hook(agent, "BeforeAgent", project, prompt="more", **path) is None  # once only
    # A resume rewrites the compressed history: not a new compression.
    hook(agent, "PreCompress", project, **path)
    with transcript.open("a") as fh:
        fh.write(COMPRESSED)
    assert hook(agent, "SessionStart", project, source="resume", **path) is None
    assert count(project, "SELECT compact_count FROM sessions") == 1


def test_gemini_prompts_are_stored_without_the_injected_context(project: Path) -> None:
    injected = (
        '<hook_context>&lt;ctxmode_data kind="session_knowledge"&gt;\n&lt;request&gt;old'
        "&lt;/request&gt;\n&lt;/ctxmode_data&gt;\nMore detail on request: run `ctxmode "
        "snapshot`.</hook_context>\n\nWhere are we?"
    )
    hook("gemini-cli", "BeforeAgent", project, prompt=injected)
    with db(project) as conn:
        texts = [r[0] for r in conn.execute("SELECT json_extract(data, '$.text') FROM events")]
    assert "Where are we?" in texts
    assert not any("ctxmode" in (t or "") or "hook_context" in (t or "") for t in texts)


def test_retried_hook_records_nothing_new(project: Path) -> None:
    hook(CC, "post-tool-use.bash-git", project)
    before = count(project)
    hook(CC, "post-tool-use.bash-git", project)
    assert count(project) == before


@pytest.mark.parametrize(
    "stdin",
    [b"", b"not json", b"[1, 2]", b'{"hook_event_name": 3}', b"\xff\xfe garbage", b"null"],
)
def test_bad_payloads_fail_open(stdin: bytes, project: Path) -> None:
    proc = run_hook("post-tool-use", stdin, cwd=project)
    assert output_json(proc) is None


def test_oversized_payload_is_dropped_and_logged(bare_project: Path) -> None:
    project = bare_project
    payload = fixture(CC, "post-tool-use.write", project)
    payload["tool_input"]["content"] = "x" * (11 * 1024 * 1024)
    proc = run_hook("post-tool-use", payload, cwd=project)
    assert output_json(proc) is None
    assert not (project / ".context" / "context.db").exists()
    log = (project / ".context" / "hooks.log").read_text()
    assert "payload over" in log


def test_hooks_log_is_rotated_past_its_cap(bare_project: Path) -> None:
    project = bare_project
    """A store failing on every tool call for months must not fill the disk with log lines."""
    from ctxmode.hooks.runner import MAX_LOG_BYTES

    folder = project / ".context"
    folder.mkdir()
    old = b"2026-01-01T00:00:00Z ERROR an old failure\n" * (MAX_LOG_BYTES // 40 + 1)
    (folder / "hooks.log").write_bytes(old)
    payload = fixture(CC, "post-tool-use.write", project)
    payload["tool_input"]["content"] = "x" * (11 * 1024 * 1024)  # logged and dropped
    assert output_json(run_hook("post-tool-use", payload, cwd=project)) is None
    assert (folder / "hooks.log.1").read_bytes() == old
    fresh = (folder / "hooks.log").read_text()
    assert fresh.count("\n") == 1 and "payload over" in fresh
    assert stat.S_IMODE((folder / "hooks.log").stat().st_mode) == 0o600


def test_unknown_event_and_agent_and_no_event(project: Path) -> None:
    payload = fixture(CC, "post-tool-use.edit", project)
    assert output_json(run_hook("Notification", payload, cwd=project)) is None
    assert output_json(run_hook("post-tool-use", payload, cwd=project, agent="emacs")) is None
    assert count(project) == 1  # read as claude-code
    proc = subprocess.run(
        [CTXMODE, "hook"], input="{}", cwd=project, capture_output=True, text=True, timeout=60
    )
    assert output_json(proc) is None


def test_disabled_by_env_and_by_project_setting(bare_project: Path) -> None:
    project = bare_project
    payload = fixture(CC, "post-tool-use.edit", project)
    proc = run_hook("post-tool-use", payload, cwd=project, env={"CTXMODE_DISABLE": "1"})
    assert output_json(proc) is None
    assert not (project / ".context").exists()
    (project / ".context").mkdir()
    (project / ".context" / "config.toml").write_text("disabled = true\n")
    assert output_json(run_hook("post-tool-use", payload, cwd=project)) is None
    assert not (project / ".context" / "context.db").exists()


def test_corrupt_store_is_moved_aside_and_the_hook_keeps_working(bare_project: Path) -> None:
    project = bare_project
    (project / ".context").mkdir()
    (project / ".context" / "context.db").write_bytes(b"this is not sqlite" * 100)
    hook(CC, "post-tool-use.edit", project)
    assert count(project) == 1
    assert list((project / ".context").glob("context.db.bad-*"))
    assert "moved aside" in (project / ".context" / "hooks.log").read_text()


def _locked(project: Path) -> sqlite3.Connection:
    holder = sqlite3.connect(project / ".context" / "context.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


def test_a_locked_store_spools_the_call_and_the_next_hook_writes_it(project: Path) -> None:
    """A long writer (indexing a large folder) holds the write lock for seconds: the hook
    fails open after ~1.7 s, keeping the call's redacted records in ``<db>.spool/``; the next
    hook that gets the lock writes them, once."""
    hook(CC, "post-tool-use.edit", project)
    token = "ghp_" + "Zx9Yw8Vu7T" * 4
    prompt = fixture(CC, "user-prompt-submit", project, prompt=f"use the token {token} today")
    spool = project / ".context" / "context.db.spool"
    holder = _locked(project)
    try:
        proc = run_hook("user-prompt-submit", prompt, cwd=project)
        assert proc.returncode == 0 and output_json(proc) is None
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    (kept,) = spool.iterdir()
    saved = kept.read_bytes()
    assert token.encode() not in saved and b"REDACTED" in saved
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    log = (project / ".context" / "hooks.log").read_text().splitlines()
    assert all(LOG_LINE.match(line) for line in log)
    assert " WARN " in log[-1] and "store locked" in log[-1]
    assert count(project, "SELECT count(*) FROM events WHERE category = 'prompt'") == 0

    hook(CC, "post-tool-use.write", project)  # gets the lock: writes its own call, then the spool
    assert not spool.exists()
    assert "wrote 1 spooled hook call" in (project / ".context" / "hooks.log").read_text()
    texts = [
        json.loads(row[0])["text"]
        for row in db(project).execute("SELECT data FROM events WHERE category = 'prompt'")
    ]
    assert texts == ["use the token [REDACTED:github] today"]

    # The same spooled call written again (two hooks racing, a crash before the delete): no-op.
    spool.mkdir()
    (spool / kept.name).write_bytes(saved)
    hook(CC, "user-prompt-submit", project, prompt="and now the docs")
    assert not spool.exists()
    sql = "SELECT count(*) FROM events WHERE json_extract(data, '$.text') = ?"
    assert count(project, sql, "use the token [REDACTED:github] today") == 1
    assert count(project, sql, "and now the docs") >= 1


@pytest.mark.parametrize("pre_compact_ran", [True, False])
def test_a_locked_store_still_gets_the_resume_snapshot_injected(
    project: Path, pre_compact_ran: bool
) -> None:
    """After a compaction the snapshot is what the agent gets back: a store locked by another
    writer is read (WAL readers never wait), built on the fly when no pre-compact stored one."""
    hook(CC, "post-tool-use.edit", project)
    if pre_compact_ran:
        hook(CC, "pre-compact", project)
    holder = _locked(project)
    try:
        out = hook(CC, "session-start.compact", project)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    text = context_of(out)
    assert "session_knowledge" in text and "client.py" in text  # the edited file
    stored = count(project, "SELECT count(*) FROM session_resume")
    assert stored == (1 if pre_compact_ran else 0)  # nothing written while locked


def test_a_compaction_without_pre_compact_gets_a_fresh_snapshot_not_the_last_one(
    project: Path,
) -> None:
    hook(CC, "post-tool-use.edit", project)
    hook(CC, "pre-compact", project)
    assert "client.py" in context_of(hook(CC, "session-start.compact", project))
    later = fixture(CC, "post-tool-use.write", project)  # src/retry.py, after that compaction
    run_hook("post-tool-use", later, cwd=project)
    # The second compaction's pre-compact hook never ran (locked store, killed process ...).
    assert "retry.py" in context_of(hook(CC, "session-start.compact", project))


def test_the_spool_is_bounded_and_skips_unreadable_files(project: Path) -> None:
    from ctxmode.sessions.spool import MAX_FILES

    hook(CC, "post-tool-use.edit", project)
    spool = project / ".context" / "context.db.spool"
    spool.mkdir()
    for i in range(MAX_FILES):
        (spool / f"{i:015d}-1-junk.json").write_text("not json")
    holder = _locked(project)
    try:
        assert (
            output_json(
                run_hook(
                    "user-prompt-submit", fixture(CC, "user-prompt-submit", project), cwd=project
                )
            )
            is None
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(list(spool.iterdir())) == MAX_FILES  # full: the call is dropped, as before
    last = (project / ".context" / "hooks.log").read_text().splitlines()[-1]
    assert " ERROR " in last and "locked" in last
    hook(CC, "post-tool-use.write", project)  # replays (drops) the unreadable files, 50 a call
    assert len(list(spool.iterdir())) == MAX_FILES - 50


@pytest.mark.slow
def test_every_fixture_obeys_the_output_contract(project: Path) -> None:
    for agent in ("claude-code", "gemini-cli", "codex", "cursor", "vscode", "opencode"):
        for name in fixture_names(agent):
            payload = fixture(agent, name, project)
            out = output_json(run_hook(event_name(payload), payload, cwd=project, agent=agent))
            if out is not None:
                assert len(context_of(out)) <= 10_000
    assert not (project / ".context" / "hooks.log").exists()


def test_hook_path_imports_no_interface_libraries(project: Path) -> None:
    payload = json.dumps(fixture(CC, "post-tool-use.edit", project))
    for event in ("post-tool-use", "session-start"):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", str(CTXMODE), "hook", event],
            input=payload,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ},
        )
        assert proc.returncode == 0
        imported = {
            line.split("|")[-1].strip().split(".")[0]
            for line in proc.stderr.splitlines()
            if line.startswith("import time:")
        }
        assert "ctxmode" in imported and "sqlite3" in imported
        assert not imported & set(FORBIDDEN), imported & set(FORBIDDEN)


#: Standard-library modules that cost a hook 2-8 ms each to import (measured in ctxmode.core._lean).
SLOW_STDLIB = ("typing", "pathlib", "hashlib", "getpass", "contextlib", "dataclasses", "inspect")


def _imported(args: list[str], stdin: str, cwd: Path) -> set[str]:
    """Modules a fresh interpreter imports running ``args`` (from ``-X importtime``)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        input=stdin,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return {
        line.split("|")[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_hook_path_loads_no_slow_stdlib_modules(project: Path) -> None:
    """Every hook kind runs on what ``import sqlite3, json`` loads plus ctxmode's own modules."""
    floor = _imported(["-c", "import sqlite3, json"], "", project)
    assert "sqlite3" in floor
    cases = [
        ("post-tool-use", "post-tool-use.edit"),
        ("post-tool-use", "post-tool-use.bash-git"),
        ("post-tool-use", "post-tool-use.todowrite"),
        ("post-tool-use-failure", "post-tool-use-failure.bash"),
        ("user-prompt-submit", "user-prompt-submit"),
        ("pre-compact", "pre-compact"),
        ("session-start", "session-start.compact"),
        ("stop", "stop.decision"),
    ]
    ours: set[str] = set()
    for event, name in cases:
        payload = json.dumps(fixture(CC, name, project))
        loaded = _imported([str(CTXMODE), "hook", event], payload, project)
        ours |= {m for m in loaded if m.split(".")[0] == "ctxmode"}
        assert "ctxmode.sessions.records" in loaded or event == "session-start", (event, name)
        extra = {m for m in loaded - floor if not m.startswith("ctxmode")}
        slow = {m for m in extra if m.split(".")[0] in SLOW_STDLIB}
        assert not slow, (event, name, sorted(extra))
    assert ours <= set(HOT_PATH), (
        f"declare the hook path's modules in HOT_PATH: {ours - set(HOT_PATH)}"
    )
    assert count(project) > 0
    assert not (project / ".context" / "hooks.log").exists()
