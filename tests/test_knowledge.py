"""Writing contexts: validation, links, write-then-verify, dedupe, supersession, redaction."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ctxmode import InvalidInput, NotFound, PathOutsideProject, Store
from ctxmode.core.models import CONTEXT_TYPES


def test_write_links_and_verifies(store: Store, project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "auth.py").write_text("def login(): ...\n")
    task = store.create_task("auth")
    result = store.write_context(
        "decision",
        "Use JWT.",
        task_id=task.id,
        file_paths=[str(project / "src" / "auth.py"), "docs/auth.md"],
        relation="defines",
    )
    assert result.verified
    assert [(c.kind, c.target, c.found) for c in result.checks] == [
        ("task", str(task.id), True),
        ("file", "src/auth.py", True),
        ("file", "docs/auth.md", True),
    ]
    detail = store.context_detail(result.id)
    assert [f.path for f in detail.files] == ["docs/auth.md", "src/auth.py"]
    assert {f.relation for f in detail.files} == {"defines"}
    assert [t.task_id for t in detail.tasks] == [task.id]
    row = store.conn.execute("SELECT hash FROM files WHERE path = 'src/auth.py'").fetchone()
    assert row[0].startswith("sha256:")


def test_unknown_type_lists_the_valid_ones_and_writes_nothing(store: Store) -> None:
    with pytest.raises(InvalidInput) as err:
        store.write_context("opinion", "x")
    for name in CONTEXT_TYPES:
        assert name in str(err.value)
    assert store.conn.execute("SELECT COUNT(*) FROM contexts").fetchone()[0] == 0


def test_missing_task_writes_nothing(store: Store) -> None:
    with pytest.raises(NotFound, match="no task with id 42") as err:
        store.write_context("decision", "x", task_id=42, file_paths=["a.py"])
    assert err.value.hint == "list_tasks"
    assert store.conn.execute("SELECT COUNT(*) FROM contexts").fetchone()[0] == 0
    assert store.conn.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scope": "team"}, "unknown scope"),
        ({"relation": "likes"}, "unknown relation"),
        ({"scope": "task"}, "needs a task id"),
        ({"scope": "session"}, "needs a session id"),
        ({"metadata": ["x"]}, "JSON object"),
        ({"relevance": 3}, "outside 0..1"),
    ],
)
def test_bad_arguments_are_rejected(store: Store, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        store.write_context("decision", "x", **kwargs)  # type: ignore[arg-type]


def test_empty_and_oversized_content_rejected(store: Store) -> None:
    with pytest.raises(InvalidInput, match="non-empty"):
        store.write_context("decision", "   ")
    with pytest.raises(InvalidInput, match="limit"):
        store.write_context("snippet", "x" * 100_001)


def test_paths_outside_the_project_are_refused(store: Store, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x")
    with pytest.raises(PathOutsideProject):
        store.write_context("snippet", "x", file_paths=[str(outside)])
    with pytest.raises(PathOutsideProject):
        store.write_context("snippet", "x", file_paths=["../elsewhere.py"])
    (project / "link.py").symlink_to(outside)
    with pytest.raises(PathOutsideProject):
        store.write_context("snippet", "x", file_paths=["link.py"])
    assert store.conn.execute("SELECT COUNT(*) FROM contexts").fetchone()[0] == 0


def test_same_content_is_deduplicated_and_gains_links(store: Store) -> None:
    t1 = store.create_task("a")
    t2 = store.create_task("b")
    first = store.write_context("constraint", "No network in tests.", task_id=t1.id)
    second = store.write_context("constraint", "No network in tests.", task_id=t2.id)
    assert second.deduplicated and second.id == first.id
    assert {t.task_id for t in store.context_detail(first.id).tasks} == {t1.id, t2.id}
    # same text as another type is a different context
    assert store.write_context("convention", "No network in tests.").id != first.id


def test_supersede_chain_and_cycle_refused(store: Store) -> None:
    a = store.write_context("decision", "Use REST.").id
    b = store.write_context("decision", "Use gRPC.", supersedes=a).id
    c = store.write_context("decision", "Use gRPC with JSON gateway.", supersedes=b).id
    assert store.get_context(a).superseded_by == b
    assert store.context_detail(b).history == (a, b, c)
    with pytest.raises(InvalidInput, match="no cycles"):
        store.supersede(c, a)
    with pytest.raises(InvalidInput, match="itself"):
        store.supersede(c, c)


def test_decision_template_renders_and_keeps_fields(store: Store) -> None:
    result = store.write_decision(
        {
            "decision": "Store timestamps as Unix seconds",
            "background": "Hooks compare times across processes",
            "options": "ISO text; Unix seconds",
            "choice": "Unix seconds",
            "rationale": "cheap comparisons",
            "impact": "all tables",
        }
    )
    ctx = store.get_context(result.id)
    assert ctx.type == "decision"
    assert ctx.content.splitlines() == [
        "Store timestamps as Unix seconds",
        "Background: Hooks compare times across processes",
        "Options: ISO text; Unix seconds",
        "Choice: Unix seconds",
        "Rationale: cheap comparisons",
        "Impact: all tables",
    ]
    assert ctx.metadata["fields"]["choice"] == "Unix seconds"
    with pytest.raises(InvalidInput, match="decision"):
        store.write_decision({"background": "no decision"})
    with pytest.raises(InvalidInput, match="unknown decision field"):
        store.write_decision({"decision": "x", "mood": "good"})


def test_secrets_are_redacted_before_writing(store: Store, project: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5" * 4
    store.write_context(
        "snippet",
        f"export GITHUB_TOKEN={token}\ncurl -H 'Authorization: Bearer abcdefghijklmnop1234'",
        metadata={"note": f"token {token}"},
    )
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = (project / ".context" / "context.db").read_bytes()
    assert token.encode() not in raw
    assert b"abcdefghijklmnop1234" not in raw
    ctx = store.list_contexts()[0]
    assert "[REDACTED" in ctx.content and "[REDACTED" in json.dumps(ctx.metadata)


def test_store_file_is_private(project: Path) -> None:
    path = project / ".context" / "context.db"
    Store.open(path).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_task_tree_and_status(store: Store) -> None:
    root = store.create_task("root")
    child = store.create_task("child", root.id)
    store.create_task("grandchild", child.id)
    other = store.create_task("other")
    assert [t.name for t in store.list_tasks()] == ["root", "child", "grandchild", "other"]
    store.update_task(child.id, "in_progress")
    assert [t.id for t in store.list_tasks("in_progress")] == [child.id]
    with pytest.raises(InvalidInput, match="completed"):
        store.update_task(other.id, "done")
    with pytest.raises(NotFound):
        store.create_task("orphan", 999)
    with pytest.raises(NotFound):
        store.update_task(999, "completed")


def test_update_and_delete(store: Store) -> None:
    cid = store.write_context("issue", "Flaky test on CI").id
    updated = store.update_context(cid, content="Flaky test on CI: fixed by seeding")
    assert updated.content.endswith("seeding")
    store.delete_context(cid)
    with pytest.raises(NotFound):
        store.get_context(cid)


def test_session_scope_dropped_when_session_ends(store: Store) -> None:
    kept = store.write_context("decision", "global one").id
    store.write_context("snippet", "scratch", scope="session", session_id="s1")
    assert store.end_session("s1") == 1
    assert [c.id for c in store.list_contexts()] == [kept]


def test_decision_labels_follow_the_language_of_the_content(store: Store) -> None:
    zh = store.write_decision({"decision": "刷新令牌采用轮换机制", "background": "旧令牌可被重放",
                               "rationale": "降低泄露风险"})  # fmt: skip
    assert (
        store.get_context(zh.id).content
        == "刷新令牌采用轮换机制\n背景：旧令牌可被重放\n理由：降低泄露风险"
    )
    en = store.write_decision({"decision": "Use SQLite", "rationale": "local-first"})
    assert store.get_context(en.id).content == "Use SQLite\nRationale: local-first"
