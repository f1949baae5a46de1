"""Retention rules, each evaluated at an explicit ``now``."""

from __future__ import annotations

from pathlib import Path

from ctxmode import Store

DAY = 86_400
T0 = 1_700_000_000


def _alive(store: Store) -> set[int]:
    return {r[0] for r in store.conn.execute("SELECT id FROM contexts")}


def test_decisions_kept_until_superseded_then_archived(store: Store) -> None:
    old = store.write_context("decision", "v1", now=T0).id
    new = store.write_context("decision", "v2", supersedes=old, now=T0).id
    report = store.cleanup(now=T0 + 3650 * DAY)
    assert report.counts() == {"decision": {"archive": 1}}
    assert _alive(store) == {old, new}
    archived = store.get_context(old)
    assert archived.archived_at == T0 + 3650 * DAY and archived.content == "v1"


def test_constraints_go_only_when_every_linked_task_is_completed(store: Store) -> None:
    a = store.create_task("a")
    b = store.create_task("b")
    linked = store.write_context("constraint", "no sync IO", task_id=a.id, now=T0).id
    store.link_task(linked, b.id)
    free = store.write_context("constraint", "python 3.11+", now=T0).id
    store.update_task(a.id, "completed")
    assert store.cleanup(now=T0 + DAY).actions == ()
    store.update_task(b.id, "completed")
    report = store.cleanup(now=T0 + DAY)
    assert [(a.context_id, a.action) for a in report.actions] == [(linked, "delete")]
    assert _alive(store) == {free}


def test_snippets_expire_after_90_days_unless_an_open_task_holds_them(store: Store) -> None:
    task = store.create_task("open")
    old = store.write_context("snippet", "old code", now=T0).id
    held = store.write_context("snippet", "held code", task_id=task.id, now=T0).id
    recent = store.write_context("snippet", "new code", now=T0 + 80 * DAY).id
    dry = store.cleanup(now=T0 + 91 * DAY, dry_run=True)
    assert [a.context_id for a in dry.actions] == [old]
    assert _alive(store) == {old, held, recent}  # dry run changed nothing
    store.cleanup(now=T0 + 91 * DAY)
    assert _alive(store) == {held, recent}


def test_a_changed_file_never_deletes_a_deleted_one_archives(store: Store, project: Path) -> None:
    (project / "a.py").write_text("one")
    (project / "b.py").write_text("two")
    on_a = store.write_context("snippet", "a notes", file_paths=["a.py"], now=T0).id
    on_b = store.write_context("snippet", "b notes", file_paths=["b.py"], now=T0).id
    assert store.cleanup(now=T0 + DAY).actions == ()
    (project / "a.py").write_text("changed")
    (project / "b.py").unlink()
    report = store.cleanup(now=T0 + DAY, dry_run=True)
    assert [(a.context_id, a.action, a.reason) for a in report.actions] == [
        (on_b, "archive", "linked file b.py deleted")
    ]
    store.cleanup(now=T0 + DAY)
    assert _alive(store) == {on_a, on_b}
    assert store.get_context(on_a).stale and store.get_context(on_a).archived_at is None
    assert store.get_context(on_b).archived_at == T0 + DAY


def test_references_expire_30_days_after_last_read(store: Store) -> None:
    unread = store.write_context("reference", "docs link unread", now=T0 - 1).id
    read = store.write_context("reference", "docs link read", now=T0).id
    result = store.query_context(context_type="reference", now=T0 + 20 * DAY, limit=1)
    assert [i.context.id for i in result.items] == [read]  # newest first
    assert store.cleanup(now=T0 + 35 * DAY).counts() == {"reference": {"delete": 1}}
    assert _alive(store) == {read}
    store.cleanup(now=T0 + 51 * DAY)
    assert unread not in _alive(store) and read not in _alive(store)


def test_periods_are_configurable(project: Path) -> None:
    (project / ".context" / "config.toml").write_text("snippet_days = 7\nreference_days = 1\n")
    with Store.open(project / ".context" / "context.db") as store:
        store.write_context("snippet", "short lived", now=T0)
        assert store.cleanup(now=T0 + 8 * DAY).counts() == {"snippet": {"delete": 1}}


def test_refresh_files_marks_stale(store: Store, project: Path) -> None:
    (project / "m.py").write_text("1")
    cid = store.write_context("decision", "m design", file_paths=["m.py"]).id
    assert store.refresh_files() == []
    (project / "m.py").write_text("2")
    assert store.refresh_files() == ["m.py"]
    assert store.get_context(cid).stale


def test_stale_means_differs_from_when_linked(store: Store, project: Path) -> None:
    (project / "c.py").write_text("one")
    (project / "d.py").write_text("dee")
    cid = store.write_context("snippet", "c notes", file_paths=["c.py", "d.py"], now=T0).id
    (project / "c.py").write_text("two")
    assert store.query_context(file_path="c.py").items[0].context.stale
    # gc --dry-run keeps a stale item (it used to plan a delete here).
    assert store.cleanup(now=T0 + DAY, dry_run=True).actions == ()
    # Reverted byte for byte: no longer stale, without any command to clear it.
    (project / "c.py").write_text("one")
    assert not store.query_context(file_path="c.py").items[0].context.stale
    # Linking again keeps the baseline; accepting the new content moves it.
    (project / "c.py").write_text("three")
    store.link_files(cid, ["c.py"])
    assert store.context_detail(cid).context.stale
    assert store.accept_file_content(cid, ["c.py"]) == ["c.py"]
    assert not store.context_detail(cid).context.stale
    (project / "c.py").write_text("one")  # now the old content is the change
    assert store.context_detail(cid).context.stale
    store.accept_file_content(cid)
    assert not store.get_context(cid).stale


def test_a_planned_file_takes_its_first_content_as_baseline(store: Store, project: Path) -> None:
    cid = store.write_context("decision", "new module layout", file_paths=["later.py"]).id
    assert not store.context_detail(cid).context.stale
    (project / "later.py").write_text("v1")
    assert not store.context_detail(cid).context.stale
    (project / "later.py").write_text("v2")
    assert store.context_detail(cid).context.stale


def test_editing_the_text_accepts_the_files_as_they_are(store: Store, project: Path) -> None:
    (project / "e.py").write_text("one")
    cid = store.write_context("decision", "e design", file_paths=["e.py"]).id
    (project / "e.py").write_text("two")
    assert store.context_detail(cid).context.stale
    store.update_context(cid, content="e design, for the new e.py")
    assert not store.context_detail(cid).context.stale
