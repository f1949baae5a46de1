"""The payloads the real agents sent in the e2e runs (``tests/fixtures/hooks/<agent>/real.*``,
captured from Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0, OpenCode 1.18.33 (what
ctxmode's plugin sends), Qwen Code 0.24.4, Copilot CLI 1.0.102 and Kimi Code 2.1.0; refreshed with
``tests/e2e/refresh_fixtures.py``), through the adapters and the real hook."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from _hooks import event_name, fixture, output_json, run_hook
from ctxmode.sessions import adapters
from ctxmode.sessions.events import NormalizedHookEvent, extract

P = Path("/work/proj")
GEM, CODEX, CC, OC, QWEN = "gemini-cli", "codex", "claude-code", "opencode", "qwen-code"
COP, KIMI = "copilot-cli", "kimi-code"


def norm(agent: str, name: str) -> NormalizedHookEvent:
    payload = fixture(agent, name, P)
    ev = adapters.normalize(agent, event_name(payload), payload)
    assert ev is not None
    return ev


def hook(agent: str, name: str, project: Path, **overrides: Any) -> dict[str, Any] | None:
    payload = fixture(agent, name, project, **overrides)
    return output_json(run_hook(event_name(payload), payload, cwd=project, agent=agent))


def _names_its_context(rec: Any) -> bool:
    """The result's structured id, or (an agent handing hooks the reply's text only) the
    store's content hash of what was stored, which ``records`` turns into its id."""
    return rec.data.get("id") == 1 or str(rec.data.get("content_hash", "")).startswith("sha256:")


def test_gemini_mcp_tools_are_named_like_the_others() -> None:
    ev = norm(GEM, "real.AfterTool.mcp_ctxmode_write_context")
    assert ev.tool_name == "mcp__ctxmode__write_context"
    assert ev.raw_tool_name == "mcp_ctxmode_write_context"
    # ctxmode's own write_context is the context it stored (type, id, text), not an MCP call.
    (rec,) = extract(ev)
    assert (rec.category, rec.type) == ("knowledge", "decision") and _names_its_context(rec)
    assert rec.data["text"] == "Use Google OAuth 2.0 rather than Passport"


def test_a_gemini_shell_result_with_a_nonzero_exit_code_is_a_failure() -> None:
    ev = norm(GEM, "real.AfterTool.run_shell_command")  # the failing pytest run
    assert ev.failed and ev.error is not None
    assert ev.error.startswith("Exit code 1\n")
    assert "FAILED tests/test_refresh.py::test_rotation" in ev.error
    assert any(r.category == "error" for r in extract(ev))
    assert not norm(GEM, "real.AfterTool.run_shell_command.commit").failed
    assert norm(GEM, "real.AfterTool.run_shell_command.commit-failed").failed


def test_gemini_prompts_lose_the_injected_hook_context() -> None:
    ev = norm(GEM, "real.BeforeAgent.after-resume")
    assert ev.prompt == "Now find the cause of the rotation failure."
    for rec in extract(ev):
        assert "ctxmode" not in str(rec.data) and "hook_context" not in str(rec.data)


def test_codex_resume_then_compact_injects_one_snapshot(project: Path) -> None:
    hook(CODEX, "real.PostToolUse.apply_patch", project)
    hook(CODEX, "real.PreCompact", project)
    first = hook(CODEX, "real.SessionStart.resume.after-compact", project)
    assert first is not None and "session_knowledge" in str(first)
    assert hook(CODEX, "real.SessionStart.compact", project) is None
    assert hook(CODEX, "real.SessionStart.resume", project) is None  # a later plain resume


def test_claude_resume_after_compact_adds_no_second_copy(project: Path) -> None:
    hook(CC, "real.PostToolUse.Edit", project)
    hook(CC, "real.PreCompact.manual", project)
    assert "session_knowledge" in str(hook(CC, "real.SessionStart.compact", project))
    assert hook(CC, "real.SessionStart.resume", project) is None


def test_opencode_mcp_tools_are_named_like_the_others() -> None:
    ev = norm(OC, "real.PostToolUse.ctxmode_write_context")
    assert (ev.tool_name, ev.raw_tool_name) == (
        "mcp__ctxmode__write_context",
        "ctxmode_write_context",
    )
    (rec,) = extract(ev)
    assert (rec.category, rec.type) == ("knowledge", "decision") and _names_its_context(rec)
    # A built-in tool's name is not mistaken for one (its result is text, not an MCP result).
    assert norm(OC, "real.PostToolUse.read").tool_name == "Read"


def test_an_opencode_bash_exit_code_makes_the_failure() -> None:
    ev = norm(OC, "real.PostToolUse.bash.pytest-failed")
    assert ev.failed and ev.error is not None and ev.error.startswith("Exit code 1\n")
    errors = [r for r in extract(ev) if r.category == "error"]
    assert errors and "FAILED tests/test_refresh.py::test_rotation" in str(errors[0].data)
    ok = norm(OC, "real.PostToolUse.bash.commit")
    assert not ok.failed
    assert [(r.category, r.type) for r in extract(ok)] == [("git", "commit")]
    failed = norm(OC, "real.PostToolUse.bash.commit-failed")
    assert failed.failed
    assert ("git", "commit") not in [(r.category, r.type) for r in extract(failed)]


def test_opencode_prompts_lose_the_quotes_opencode_run_adds() -> None:
    assert norm(OC, "real.UserPromptSubmit").prompt == "Fix the refresh-token rotation in auth/"
    payload = fixture(OC, "real.UserPromptSubmit", P)
    for sent, typed in [
        ('"say \\"hi\\" now"', 'say "hi" now'),  # OpenCode escapes the quotes inside
        ('fix "the bug"', 'fix "the bug"'),  # several arguments: not one quoted message
        ('"a" or "b"', '"a" or "b"'),
        ('"single"', '"single"'),  # no space: OpenCode would not have quoted it
    ]:
        ev = adapters.normalize(OC, "UserPromptSubmit", {**payload, "prompt": sent})
        assert ev is not None and ev.prompt == typed, sent


def test_opencode_compaction_injects_one_snapshot(project: Path) -> None:
    hook(OC, "real.PostToolUse.edit", project)
    assert hook(OC, "real.PreCompact.auto", project) is None
    restored = hook(OC, "real.SessionStart.compact", project)
    assert restored is not None and "session_knowledge" in str(restored)
    # The plugin puts it in the compaction summary: the next prompt adds no second copy.
    assert "session_knowledge" not in str(hook(OC, "real.UserPromptSubmit", project))


def test_qwen_tool_ids_map_to_the_shared_categories() -> None:
    assert norm(QWEN, "real.PostToolUse.read_file").tool_name == "Read"
    edit = norm(QWEN, "real.PostToolUse.edit")
    assert (edit.agent, edit.tool_name, edit.duration_ms) == (QWEN, "Edit", edit.duration_ms)
    assert [(r.category, r.type) for r in extract(edit)] == [("file", "edit")]
    ok = norm(QWEN, "real.PostToolUse.run_shell_command.commit")
    assert ok.tool_name == "Bash" and not ok.failed
    assert [(r.category, r.type) for r in extract(ok)] == [("git", "commit")]
    (rec,) = extract(norm(QWEN, "real.PostToolUse.mcp__ctxmode__write_context"))
    assert (rec.category, rec.type) == ("knowledge", "decision") and _names_its_context(rec)


def test_a_qwen_shell_failure_says_what_failed() -> None:
    ev = norm(QWEN, "real.PostToolUseFailure.run_shell_command")
    assert ev.failed and ev.error is not None and "Exit Code: 1" in ev.error
    errors = [r for r in extract(ev) if r.category == "error"]
    assert errors and "FAILED tests/test_refresh.py::test_rotation" in str(errors[0].data)
    failed = norm(QWEN, "real.PostToolUseFailure.run_shell_command.commit-failed")
    assert ("git", "commit") not in [(r.category, r.type) for r in extract(failed)]


def test_qwen_prompts_are_what_the_user_typed() -> None:
    first = norm(QWEN, "real.UserPromptSubmit")
    assert first.prompt and first.prompt.startswith("Shorten the access token TTL")
    # Qwen fires UserPromptSubmit before every tool-result continuation too: no prompt there.
    assert norm(QWEN, "real.UserPromptSubmit.continuation").prompt is None
    payload = fixture(QWEN, "real.UserPromptSubmit.continuation", P)
    injected = (
        'Go on\n\n<qwen:user-prompt-submit-context>\n[ctxmode_data kind="x"] a [/ctxmode_data]'
        "\n</qwen:user-prompt-submit-context>"
    )
    ev = adapters.normalize(QWEN, "UserPromptSubmit", {**payload, "prompt": injected})
    assert ev is not None and ev.prompt == "Go on"


def test_qwen_gets_a_plain_snapshot_after_compaction_and_at_every_resume(project: Path) -> None:
    """Qwen keeps SessionStart context in the process's system prompt (escaping ``<``/``>``):
    plain text, and again for every resumed process."""
    hook(QWEN, "real.PostToolUse.edit", project)
    assert hook(QWEN, "real.PreCompact.auto", project) is None
    for name in (
        "real.SessionStart.compact",
        "real.SessionStart.resume",
        "real.SessionStart.resume",
    ):
        out = hook(QWEN, name, project)
        assert out is not None, name
        context = out["hookSpecificOutput"]["additionalContext"]
        assert context.startswith('[ctxmode_data kind="session_knowledge"') and "<" not in context


def test_copilot_tools_and_results_map_to_the_shared_categories() -> None:
    assert norm(COP, "real.PostToolUse.Read").tool_name == "Read"
    edit = norm(COP, "real.PostToolUse.Edit")
    assert edit.tool_input["file_path"].endswith("auth/config.py")
    assert edit.tool_input["old_string"] == "ACCESS_TTL = 86400"
    assert [(r.category, r.type) for r in extract(edit)] == [("file", "edit")]
    mcp = norm(COP, "real.PostToolUse.ctxmode-write_context")
    assert (mcp.tool_name, mcp.raw_tool_name) == (
        "mcp__ctxmode__write_context",
        "ctxmode-write_context",
    )
    (rec,) = extract(mcp)
    assert (rec.category, rec.type) == ("knowledge", "decision") and _names_its_context(rec)
    start = norm(COP, "real.SessionStart.new")
    assert start.source == "startup"


def test_a_copilot_shell_exit_code_makes_the_failure() -> None:
    ev = norm(COP, "real.PostToolUse.Bash.pytest-failed")
    assert ev.failed and ev.error is not None and ev.error.startswith("Exit code 1\n")
    errors = [r for r in extract(ev) if r.category == "error"]
    assert errors and "FAILED tests/test_refresh.py::test_rotation" in str(errors[0].data)
    ok = norm(COP, "real.PostToolUse.Bash.commit")
    assert not ok.failed
    assert [(r.category, r.type) for r in extract(ok)] == [("git", "commit")]
    failed = norm(COP, "real.PostToolUse.Bash.commit-failed")
    assert failed.failed
    assert ("git", "commit") not in [(r.category, r.type) for r in extract(failed)]


def test_copilot_context_is_top_level_at_start_and_prompt(project: Path) -> None:
    """Copilot CLI reads only a top-level ``additionalContext`` on SessionStart and
    UserPromptSubmit; nothing fires after a compaction, so the snapshot waits for the next
    prompt, or a resumed run's SessionStart, once."""
    hook(COP, "real.PostToolUse.Edit", project)
    assert hook(COP, "real.PreCompact.manual", project) is None
    resumed = hook(COP, "real.SessionStart.resume", project)
    assert resumed is not None and set(resumed) == {"additionalContext"}
    assert 'kind="session_knowledge"' in resumed["additionalContext"]
    assert hook(COP, "real.UserPromptSubmit", project) is None  # not a second copy
    hook(COP, "real.PreCompact.manual", project)
    prompt = hook(COP, "real.UserPromptSubmit", project)  # no resume: the prompt brings it
    assert prompt is not None and 'kind="session_knowledge"' in prompt["additionalContext"]
    again = hook(COP, "real.SessionStart.resume", project)  # a later run starts without it
    assert again is not None and "session_knowledge" in again["additionalContext"]


def test_kimi_payloads_map_to_the_shared_categories() -> None:
    edit = norm(KIMI, "real.PostToolUse.Edit")
    assert (edit.tool_name, edit.tool_input["file_path"]) == ("Edit", str(P / "auth/config.py"))
    assert [(r.category, r.type) for r in extract(edit)] == [("file", "edit")]
    (rec,) = extract(norm(KIMI, "real.PostToolUse.mcp__ctxmode__write_context"))
    assert (rec.category, rec.type) == ("knowledge", "decision") and _names_its_context(rec)
    failed = norm(KIMI, "real.PostToolUseFailure.Bash.pytest-failed")
    assert failed.failed and failed.error and "FAILED tests/test_refresh.py" in failed.error
    assert norm(KIMI, "real.UserPromptSubmit").prompt == (
        "Shorten the access token TTL to 2 hours, test, commit, record the decision"
    )


def test_kimi_context_waits_for_the_next_prompt(project: Path) -> None:
    """Kimi Code ignores SessionStart and tool-hook output: the snapshot (and the brief, and
    linked knowledge) go out with the next prompt, as ``message`` (its hook_result), once."""
    hook(KIMI, "real.PostToolUse.Edit", project)
    assert hook(KIMI, "real.PreCompact.auto", project) is None
    assert hook(KIMI, "real.SessionStart.resume", project) is None
    out = hook(KIMI, "real.UserPromptSubmit", project)
    assert out is not None and set(out) == {"message"}
    assert out["message"].count('<ctxmode_data kind="session_knowledge"') == 1
    assert hook(KIMI, "real.UserPromptSubmit", project) is None  # kept in Kimi's history
    assert hook(KIMI, "real.SessionStart.resume", project) is None
    assert hook(KIMI, "real.UserPromptSubmit", project) is None


def test_kimi_calls_whose_hooks_kimi_killed_are_read_back_at_stop(
    project: Path, tmp_path: Path
) -> None:
    """Kimi does not wait for PostToolUse hooks: Stop records the calls of its wire log,
    keyed as the hook keys them, so a call both paths saw is stored once."""
    sid = fixture(KIMI, "real.Stop", project)["session_id"]
    kimi_home = tmp_path / "kimi-home"
    wire = kimi_home / "sessions" / "wd_proj_1" / sid / "agents" / "main" / "wire.jsonl"
    wire.parent.mkdir(parents=True)
    edit = fixture(KIMI, "real.PostToolUse.Edit", project)
    commit = fixture(KIMI, "real.PostToolUse.Bash.commit", project)
    lines = []
    for n, payload in enumerate((edit, commit)):
        call = {"type": "tool.call", "uuid": f"u{n}", "toolCallId": payload["tool_call_id"],
                "name": payload["tool_name"], "args": payload["tool_input"]}  # fmt: skip
        done = {"type": "tool.result", "parentUuid": f"u{n}", "toolCallId": payload["tool_call_id"],
                "result": {"output": payload["tool_output"]}}  # fmt: skip
        lines += [{"type": "context.append_loop_event", "event": e} for e in (call, done)]
    pending = {"type": "tool.call", "uuid": "u9", "toolCallId": "c9", "name": "Bash",
               "args": {"command": "sleep 1"}}  # fmt: skip
    lines.append({"type": "context.append_loop_event", "event": pending})
    wire.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {"KIMI_CODE_HOME": str(kimi_home)}
    assert output_json(run_hook("PostToolUse", edit, cwd=project, agent=KIMI, env=env)) is None
    stop = fixture(KIMI, "real.Stop", project)
    assert output_json(run_hook("Stop", stop, cwd=project, agent=KIMI, env=env)) is None
    rows = db_rows(project, "SELECT category, type FROM events ORDER BY id")
    assert rows.count(("file", "edit")) == 1 and rows.count(("git", "commit")) == 1, rows
    output_json(run_hook("Stop", stop, cwd=project, agent=KIMI, env=env))
    assert db_rows(project, "SELECT category, type FROM events ORDER BY id") == rows


def db_rows(project: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(project / ".context" / "context.db")
    try:
        return list(conn.execute(sql).fetchall())
    finally:
        conn.close()
