"""Recording events in the store: dedupe, idempotency, cap, detectors, task mirroring."""

from __future__ import annotations

from pathlib import Path

from ctxmode import Store
from ctxmode.core.models import Event, Session
from ctxmode.sessions import records as sessions
from ctxmode.sessions.events import EventRecord, NormalizedHookEvent, extract

SID = "s-1"


def tool_event(tool: str, inp: dict[str, object], **kw: object) -> NormalizedHookEvent:
    values: dict[str, object] = {
        "agent": "claude-code",
        "kind": "post_tool_use",
        "session_id": SID,
        "tool_name": tool,
        "tool_input": inp,
    }
    values.update(kw)
    return NormalizedHookEvent(**values)  # type: ignore[arg-type]


def rec(
    store: Store, ev: NormalizedHookEvent, key: str | None = None, now_ms: int | None = None
) -> sessions.RecordResult:
    return sessions.record(store, ev, extract(ev), idempotency_key=key, now_ms=now_ms)


def categories(store: Store) -> list[str]:
    return [e.category for e in reversed(sessions.list_events(store, SID, limit=1000))]


def test_record_stores_events_and_session(store: Store) -> None:
    result = rec(
        store, tool_event("Edit", {"file_path": "/p/a.py", "old_string": "a", "new_string": "b"})
    )
    assert result.inserted == 1
    (event,) = sessions.list_events(store)
    assert isinstance(event, Event) and event.category == "file" and event.priority == 1
    assert event.data == {"path": "/p/a.py", "old": "a", "new": "b"}
    (session,) = sessions.list_sessions(store)
    assert isinstance(session, Session)
    assert (session.session_id, session.agent, session.event_count) == (SID, "claude-code", 1)
    # The search index sees events through the m003 trigger.
    assert (
        store.conn.execute("SELECT count(*) FROM search_items WHERE item_kind='event'").fetchone()[
            0
        ]
        == 1
    )


def test_duplicates_among_recent_events_are_skipped(store: Store) -> None:
    ev = tool_event("Read", {"file_path": "/p/x.py"})
    assert rec(store, ev, now_ms=1_000).inserted == 1
    assert rec(store, ev._replace(tool_use_id="other"), now_ms=2_000).inserted == 0
    assert len(sessions.list_events(store)) == 1


def test_retried_hook_with_the_same_idempotency_key_is_a_no_op(store: Store) -> None:
    ev = tool_event("Bash", {"command": "git commit -m 'x' && pip install y"})
    first = rec(store, ev, key="k1")
    assert first.inserted == 2  # git commit + install (no raw command beside the git record)
    again = rec(store, ev, key="k1")
    assert again.inserted == 0
    assert len(sessions.list_events(store)) == 2
    assert sessions.list_sessions(store)[0].event_count == 2


def test_cap_evicts_lowest_priority_oldest_first(project: Path) -> None:
    (project / ".context").mkdir(exist_ok=True)
    (project / ".context" / "config.toml").write_text("max_session_events = 20\n")
    with Store.open(project / ".context" / "context.db") as store:
        for i in range(5):
            rec(
                store,
                tool_event(
                    "Edit", {"file_path": f"/p/f{i}.py", "old_string": "a", "new_string": "b"}
                ),
            )
        for i in range(40):
            rec(store, tool_event("Read", {"file_path": f"/p/read{i}.py"}))
        kept = sessions.list_events(store, SID, limit=100)
        assert len(kept) <= 20
        assert sum(1 for e in kept if e.category == "file") == 5  # P1 kept
        reads = sorted(int(e.data["path"][7:-3]) for e in kept if e.category == "data")
        assert reads == list(range(40 - len(reads), 40))  # oldest P4 went first
        assert sessions.list_sessions(store)[0].event_count == len(kept)


def test_error_then_success_on_same_target_is_a_resolution(store: Store) -> None:
    fail = tool_event(
        "Bash",
        {"command": "pytest tests/x.py"},
        kind="post_tool_use_failure",
        error="Exit code 1\nValueError: bad",
    )
    rec(store, fail, key="f1")
    rec(store, tool_event("Bash", {"command": "ls"}), key="ok0")
    rec(store, tool_event("Bash", {"command": "pytest tests/x.py -x"}), key="ok1")
    resolutions = sessions.list_events(store, SID, category="error_resolution")
    assert len(resolutions) == 1
    assert resolutions[0].data["error"] == "ValueError"
    rec(store, tool_event("Bash", {"command": "pytest tests/x.py -q"}), key="ok2")
    assert len(sessions.list_events(store, SID, category="error_resolution")) == 1


def test_same_call_three_times_in_a_row_is_an_iteration_loop(store: Store) -> None:
    call = tool_event("Bash", {"command": "make build"})
    rec(store, call._replace(tool_use_id="a"), key="a")
    rec(store, call._replace(tool_use_id="a"), key="a-retry")  # retried delivery: not a repetition
    rec(store, call._replace(tool_use_id="b"), key="b")
    assert sessions.list_events(store, SID, category="iteration_loop") == []
    rec(store, call._replace(tool_use_id="c"), key="c")
    (loop,) = sessions.list_events(store, SID, category="iteration_loop")
    assert loop.data["count"] == 3 and loop.data["tool"] == "Bash"


def test_latency_between_pre_and_post_tool_use(store: Store) -> None:
    slow = tool_event("Bash", {"command": "sleep 9"}, tool_use_id="t-slow", kind="pre_tool_use")
    sessions.note_pre_tool_use(store, slow, now_ms=10_000)
    rec(store, slow._replace(kind="post_tool_use"), now_ms=16_500)
    fast = tool_event("Bash", {"command": "true"}, tool_use_id="t-fast", kind="pre_tool_use")
    sessions.note_pre_tool_use(store, fast, now_ms=20_000)
    rec(store, fast._replace(kind="post_tool_use"), now_ms=20_100)
    (lat,) = sessions.list_events(store, SID, category="latency")
    assert lat.data["ms"] == 6500
    rec(store, tool_event("Read", {"file_path": "/p/big"}, duration_ms=7000))
    assert len(sessions.list_events(store, SID, category="latency")) == 2


def test_tasks_are_mirrored_into_the_tasks_table(store: Store) -> None:
    todos = [
        {"content": "one", "status": "pending"},
        {"content": "two", "status": "in_progress"},
    ]
    rec(store, tool_event("TodoWrite", {"todos": todos}))
    rows = dict(store.conn.execute("SELECT name, status FROM tasks").fetchall())
    assert rows == {"one": "pending", "two": "in_progress"}
    todos = [{"content": "one", "status": "completed"}]
    rec(store, tool_event("TodoWrite", {"todos": todos}))
    rows = dict(store.conn.execute("SELECT name, status FROM tasks").fetchall())
    assert rows == {"one": "completed", "two": "cancelled"}
    keys = [r[0] for r in store.conn.execute("SELECT external_key FROM tasks")]
    assert all(k.startswith(f"claude-code:{SID}:todo:") for k in keys)
    # A status that flips back is recorded again (tasks compare with their latest event).
    rec(store, tool_event("TodoWrite", {"todos": [{"content": "one", "status": "pending"}]}))
    rec(store, tool_event("TodoWrite", {"todos": [{"content": "one", "status": "completed"}]}))
    one = [
        e.data["status"]
        for e in sessions.list_events(store, SID, "task")
        if e.data["subject"] == "one"
    ]
    assert one[:2] == ["completed", "pending"]


def test_list_events_filters_and_orders_newest_first(store: Store) -> None:
    rec(store, tool_event("Read", {"file_path": "/p/1"}))
    rec(store, tool_event("Edit", {"file_path": "/p/2", "old_string": "a", "new_string": "b"}))
    other = tool_event("Read", {"file_path": "/p/3"})._replace(session_id="s-2")
    sessions.record(store, other, extract(other))
    assert [e.data["path"] for e in sessions.list_events(store)] == ["/p/3", "/p/2", "/p/1"]
    assert [e.data["path"] for e in sessions.list_events(store, SID)] == ["/p/2", "/p/1"]
    assert [e.category for e in sessions.list_events(store, category="file")] == ["file"]
    assert len(sessions.list_events(store, limit=1)) == 1
    assert {s.session_id for s in sessions.list_sessions(store)} == {SID, "s-2"}


def test_unknown_category_records_are_ignored(store: Store) -> None:
    ev = tool_event("Read", {"file_path": "/p/1"})
    result = sessions.record(store, ev, [EventRecord("nonsense", "x", {})])
    assert result.inserted == 0
