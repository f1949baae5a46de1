"""Extraction: payload fixtures of every agent -> normalized events -> event records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _hooks import fixture, fixture_names
from ctxmode import Store
from ctxmode.sessions import adapters
from ctxmode.sessions import records as session_records
from ctxmode.sessions.events import (
    CATEGORIES,
    EventRecord,
    NormalizedHookEvent,
    extract,
    prompt_records,
)

P = Path("/work/proj")


def norm(agent: str, name: str, **overrides: object) -> NormalizedHookEvent:
    payload = fixture(agent, name, P, **overrides)
    event = payload.get("hook_event_name") or payload.get("hookEventName")
    ev = adapters.normalize(agent, str(event), payload)
    assert ev is not None
    return ev


def records(agent: str, name: str, **overrides: object) -> list[EventRecord]:
    return extract(norm(agent, name, **overrides))


def by_category(recs: list[EventRecord]) -> dict[str, list[EventRecord]]:
    out: dict[str, list[EventRecord]] = {}
    for r in recs:
        out.setdefault(r.category, []).append(r)
    return out


def test_there_are_24_categories_with_the_issue_priorities() -> None:
    # 23 from the design, plus knowledge (contexts stored through ctxmode's MCP tools).
    assert len(CATEGORIES) == 24
    assert [c for c, p in CATEGORIES.items() if p == 1] == [
        "file",
        "task",
        "plan",
        "rule",
        "prompt",
    ]
    assert sum(1 for p in CATEGORIES.values() if p == 2) == 11
    assert sum(1 for p in CATEGORIES.values() if p == 3) == 6
    assert [c for c, p in CATEGORIES.items() if p == 4] == ["intent", "data"]


@pytest.mark.parametrize(
    "agent", ["claude-code", "gemini-cli", "codex", "cursor", "vscode", "opencode"]
)
def test_every_fixture_normalizes_and_extracts_bounded_records(agent: str) -> None:
    for name in fixture_names(agent):
        ev = norm(agent, name)
        assert ev.agent == agent
        for rec in extract(ev):
            assert rec.category in CATEGORIES
            assert rec.priority == CATEGORIES[rec.category]
            assert len(json.dumps(rec.data, ensure_ascii=False)) < 1000, (name, rec)


def test_edit_keeps_path_operation_and_first_100_chars() -> None:
    long_old = "x" * 500
    ev = norm("claude-code", "post-tool-use.edit")
    ev = NormalizedHookEvent(
        **{**ev._asdict(), "tool_input": {**ev.tool_input, "old_string": long_old}}
    )
    (rec,) = extract(ev)
    assert (rec.category, rec.type) == ("file", "edit")
    assert rec.data["path"] == str(P / "src/client.py")
    assert len(rec.data["old"]) <= 100
    assert rec.data["new"].startswith("def get(url, retries=3):")


def test_write_of_a_huge_file_stores_a_summary() -> None:
    ev = norm("claude-code", "post-tool-use.write")
    ev = NormalizedHookEvent(
        **{**ev._asdict(), "tool_input": {**ev.tool_input, "content": "y" * 10**6}}
    )
    (rec,) = extract(ev)
    assert rec.type == "write" and len(rec.data["new"]) <= 100


def test_reading_rule_files_is_a_rule_and_other_reads_are_data() -> None:
    assert [(r.category, r.type) for r in records("claude-code", "post-tool-use.read-rules")] == [
        ("rule", "read")
    ]
    assert [(r.category, r.type) for r in records("claude-code", "post-tool-use.read")] == [
        ("data", "read")
    ]
    assert (
        by_category(records("cursor", "postToolUse"))["rule"][0].data["path"].endswith("AGENTS.md")
    )


def test_git_commands_give_branch_and_commit_message_not_output() -> None:
    cats = by_category(records("claude-code", "post-tool-use.bash-git"))
    git = {r.type: r.data for r in cats["git"]}
    assert git["checkout"]["branch"] == "feature/retry"
    assert git["commit"]["message"] == "Add retry to client (#42)"
    assert "abc123" not in json.dumps([r.data for r in cats["git"]])
    assert cats["external_ref"][0].data == {"ref": "#42"}


def test_environment_cd_install_and_export_with_masked_value() -> None:
    recs = records("claude-code", "post-tool-use.bash-env")
    env = {r.type: r.data for r in recs if r.category == "environment"}
    assert env["cwd"] == {"path": "backend"}
    assert env["export"] == {"name": "DATABASE_URL", "value": "[masked]"}
    assert env["install"]["command"] == "pip install requests"
    dumped = json.dumps([r.data for r in recs])
    assert "pw@db" not in dumped and "postgres://u" not in dumped


def test_todowrite_gives_one_task_record_per_item_with_status() -> None:
    tasks = [r.data for r in records("claude-code", "post-tool-use.todowrite")]
    assert [(t["subject"], t["status"]) for t in tasks] == [
        ("Write retry helper", "completed"),
        ("Wire retry into client", "in_progress"),
        ("Document retry option", "pending"),
    ]
    gem = records("gemini-cli", "AfterTool.write_todos")
    assert gem[0].data["subject"] == "Split tokenizer" and gem[0].data["status"] == "in_progress"


def test_task_tools_share_the_task_key() -> None:
    (created,) = records("claude-code", "post-tool-use.taskcreate")
    (updated,) = records("claude-code", "post-tool-use.taskupdate")
    assert created.data["key"] == updated.data["key"] == "task:7"
    assert updated.data["status"] == "in_progress"


def test_plan_decision_subagent_mcp_skill_and_refs() -> None:
    assert records("claude-code", "post-tool-use.exitplanmode")[0].category == "plan"
    (decision,) = records("claude-code", "post-tool-use.askuserquestion")
    assert decision.category == "decision" and "exponential" in decision.data["text"]
    agent = by_category(records("claude-code", "post-tool-use.agent"))
    assert agent["subagent"][0].type == "completed"
    assert "src/sync.py:40" in agent["agent_finding"][0].data["text"]
    (mcp,) = records("claude-code", "post-tool-use.mcp")
    assert (mcp.category, mcp.data["server"], mcp.data["tool"]) == (
        "mcp_tool",
        "github",
        "create_issue",
    )
    assert records("claude-code", "post-tool-use.skill")[0].data == {"name": "pdf"}
    assert records("claude-code", "post-tool-use.webfetch")[0].category == "external_ref"
    assert records("claude-code", "post-tool-use.grep")[0].category == "data"


def test_tool_failure_gives_error_type_and_message() -> None:
    (err,) = records("claude-code", "post-tool-use-failure.bash")
    assert err.category == "error" and err.type == "AssertionError"
    assert "expected 3 retries" in err.data["message"] or "FAILED" in err.data["message"]
    gem = records("gemini-cli", "AfterTool.error")
    assert gem[0].category == "error" and gem[0].type == "TypeError"


def test_prompt_heuristics_in_english() -> None:
    cats = by_category(records("claude-code", "user-prompt-submit"))
    assert cats["prompt"][0].data["text"].startswith("Add retry support")
    assert "constraint" in cats and "intent" in cats
    assert {r.type for r in cats["external_ref"]} == {"url", "issue"}


def test_prompt_heuristics_in_chinese() -> None:
    cats = by_category(records("claude-code", "user-prompt-submit.zh"))
    assert {"prompt", "decision", "constraint", "rejected_approach"} <= set(cats)
    role = by_category(prompt_records("你是一名资深的后端工程师，帮我看看这个接口"))
    assert "role" in role
    blocker = by_category(prompt_records("I'm stuck: blocked by the missing staging credentials"))
    assert "blocker" in blocker


def test_stop_decision_needs_keywords_and_length_and_respects_stop_hook_active() -> None:
    (dec,) = records("claude-code", "stop.decision")
    assert dec.category == "decision" and dec.type == "assistant"
    assert records("claude-code", "stop.active") == []
    assert records("claude-code", "stop.decision", last_assistant_message="Chose A.") == []
    assert records("gemini-cli", "AfterAgent")[0].category == "decision"


def test_codex_apply_patch_gives_one_file_record_per_file() -> None:
    recs = records("codex", "PostToolUse.apply_patch")
    assert [(r.type, r.data["path"]) for r in recs] == [
        ("update", "src/login.py"),
        ("create", "src/auth.py"),
    ]
    assert "check_password" in recs[0].data["new"]


def test_cursor_vscode_opencode_shapes() -> None:
    shell = by_category(records("cursor", "afterShellExecution"))
    assert shell["environment"][0].type == "install"
    (edit,) = records("cursor", "afterFileEdit")
    assert edit.data["path"].endswith("Sidebar.css") and "transition" in edit.data["new"]
    (mcp,) = records("cursor", "afterMCPExecution")
    assert mcp.data["tool"] == "search_docs" and "css transitions" in mcp.data["args"]
    (vs_edit,) = records("vscode", "PostToolUse.replace_string_in_file")
    assert vs_edit.data["old"] == "class UserStore"
    assert records("vscode", "PostToolUse.create_file")[0].type == "write"
    (oc_edit,) = records("opencode", "tool.execute.after.edit")
    assert oc_edit.data["path"].endswith("cli.py")


def test_session_id_prefers_the_transcript_uuid() -> None:
    ev = norm("claude-code", "post-tool-use.edit", session_id="other")
    assert ev.session_id == "5f0c1e2a-7b3d-4c8e-9a10-2b3c4d5e6f70"
    assert norm("cursor", "afterFileEdit").session_id == "conv-7f3a"
    assert norm("vscode", "UserPromptSubmit").session_id == "vs-sess-42"
    assert norm("opencode", "chat.message").session_id == "ses_abc123"
    assert norm("cursor", "afterFileEdit").cwd == str(P)


def test_event_names_of_every_agent_map_to_kinds() -> None:
    assert adapters.event_kind("post-tool-use") == "post_tool_use"
    assert adapters.event_kind("AfterTool") == "post_tool_use"
    assert adapters.event_kind("afterShellExecution") == "post_tool_use"
    assert adapters.event_kind("BeforeAgent") == "user_prompt"
    assert adapters.event_kind("PreCompress") == "pre_compact"
    assert adapters.event_kind("tool.execute.after") == "post_tool_use"
    assert adapters.event_kind("Notification") is None
    assert adapters.normalize("claude-code", "Notification", {"message": "x"}) is None


def test_secrets_are_redacted_in_every_record() -> None:
    token = "ghp_" + "a" * 36
    recs = records(
        "claude-code",
        "post-tool-use.bash-git",
        tool_input={
            "command": f"git commit -m 'token {token}' && curl -H 'Authorization: Bearer {token}'"
        },
    )
    assert token not in json.dumps([r.data for r in recs])
    prompt = prompt_records(f"use api key sk-ant-{'b' * 30} please")
    assert "bbbbbbbbbbbb" not in json.dumps([r.data for r in prompt])


# -- issue 16: a cue quotes what the sentence states, never the whole prompt again ------------


def cues(text: str) -> list[tuple[str, str]]:
    return [
        (r.category, str(r.data.get("text", r.type)))
        for r in prompt_records(text)
        if r.category not in ("prompt", "external_ref")
    ]


def test_instead_of_rejects_the_phrase_not_the_request() -> None:
    text = "Refactor the auth module: access tokens should live 2 hours instead of 24"
    assert cues(text) == [("rejected_approach", "instead of 24"), ("intent", "refactor")]
    email = (
        "Please make sure the signup form validates email addresses properly instead of "
        "only checking for an @"
    )
    # The constraint would be the whole request: not repeated.
    assert cues(email) == [("rejected_approach", "instead of only checking for an @")]
    both = (
        "Use a regex from the validator package rather than writing our own; "
        "don't touch the login form"
    )
    assert cues(both) == [
        ("rejected_approach", "rather than writing our own"),
        ("constraint", "don't touch the login form"),
    ]


def test_chinese_and_mixed_prompts_quote_their_clauses() -> None:
    assert cues("重构登录模块：不要修改公开的 API，用 bcrypt 而不是 md5 来存储密码") == [
        ("constraint", "不要修改公开的 API"),
        ("rejected_approach", "而不是 md5 来存储密码"),
        ("intent", "refactor"),
    ]
    assert cues("错误信息要改成中文，别动数据库结构") == [("constraint", "别动数据库结构")]
    assert cues(
        "把 ACCESS_TTL 改成 7200 秒，不要改 REFRESH_TTL；测试用 pytest 而不是 unittest"
    ) == [
        ("constraint", "不要改 REFRESH_TTL"),
        ("rejected_approach", "而不是 unittest"),
    ]


def test_nouns_and_questions_are_not_intents_or_decisions() -> None:
    assert cues("Make the error message for an expired reset link friendlier") == []
    assert cues("New session: what was decided about auth?") == []
    assert cues("Which option did we choose for caching?") == []
    assert ("intent", "fix") in cues("Run the tests and fix what fails")
    # A condition stays with what it conditions.
    assert ("constraint", "If the build fails, don't retry") in cues(
        "If the build fails, don't retry. Add retry support to the client."
    )


def test_ctxmode_write_context_is_knowledge_with_its_id_not_an_mcp_call(store: Store) -> None:
    """The id comes from the result's structured content, or from the store itself (the
    context whose content the call stored), never from parsing ctxmode's reply text."""
    text = "Use Google OAuth 2.0 rather than Passport"
    stored = store.write_context("decision", text).id
    shapes = [
        json.dumps({"id": stored, "verified": True, "deduplicated": False, "checks": []}),
        {
            "content": [{"type": "text", "text": "Stored decision #999. Verified."}],
            "structuredContent": {"id": stored},
            "isError": False,
        },
        {
            "llmContent": [
                {"text": "<untrusted_context>\nStored decision #999.\n</untrusted_context>"}
            ]
        },
        "Stored decision #999.",
    ]
    for n, resp in enumerate(shapes):
        ev = NormalizedHookEvent(
            agent="claude-code",
            kind="post_tool_use",
            session_id=f"s{n}",
            tool_name="mcp__ctxmode__write_context",
            tool_input={"type": "decision", "content": text},
            tool_response=resp,
        )
        (rec,) = extract(ev)
        assert (rec.category, rec.type, rec.data["text"]) == ("knowledge", "decision", text)
        session_records.record(store, ev, [rec])
        (event,) = session_records.list_events(store, f"s{n}")
        assert event.data == {"id": stored, "text": text}, resp


def test_a_git_command_is_recorded_once_and_staging_not_at_all() -> None:
    ev = NormalizedHookEvent(
        agent="claude-code",
        kind="post_tool_use",
        session_id="s",
        tool_name="Bash",
        tool_input={"command": 'git add -A && git commit -q -m "Shorten access token lifetime"'},
    )
    assert [(r.category, r.type, r.data) for r in extract(ev)] == [
        ("git", "commit", {"op": "commit", "message": "Shorten access token lifetime"})
    ]


def test_edit_snippets_keep_their_lines() -> None:
    ev = NormalizedHookEvent(
        agent="claude-code",
        kind="post_tool_use",
        session_id="s",
        tool_name="Write",
        tool_input={"file_path": "/p/notes.md", "content": "# Notes\n\nrotate   refresh tokens\n"},
    )
    assert extract(ev)[0].data["new"] == "# Notes\nrotate refresh tokens"


@pytest.mark.parametrize(
    "text",
    [
        "Should we drop the redis dependency, or must it stay for ops/cron?",
        "If we ever need multi-region, what would the fallback look like?",
        "如果以后要支持多区域部署，这个回退方案还能用吗？",
        "The release checklist says every migration must be reversible: is 0007 reversible?",
        "文档里规定必须用 UTC，这里也要吗？",
    ],
)
def test_questions_hypotheticals_and_quoted_rules_state_nothing(text: str) -> None:
    assert [c for c, _ in cues(text) if c != "intent"] == []


def test_a_rule_the_user_states_next_to_a_question_is_kept() -> None:
    assert ("constraint", "never SQLAlchemy") in cues("Use sqlite3, never SQLAlchemy. Can you?")
    assert ("constraint", "If the tests fail, never push to main") in cues(
        "If the tests fail, never push to main."
    )
