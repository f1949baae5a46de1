"""Retrieval: file narrows, task orders and gates visibility, tier ranks; modes; packing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxmode import InvalidInput, Store


def ids(result: object) -> list[int]:
    return [i.context.id for i in result.items]  # type: ignore[attr-defined]


def test_task_scope_isolated_between_sibling_tasks(store: Store) -> None:
    parent = store.create_task("feature")
    a = store.create_task("a", parent.id)
    b = store.create_task("b", parent.id)
    only_a = store.write_context("decision", "A detail", task_id=a.id, scope="task").id
    only_b = store.write_context("decision", "B detail", task_id=b.id, scope="task").id
    assert ids(store.query_context(task_id=a.id)) == [only_a]
    assert ids(store.query_context(task_id=b.id)) == [only_b]
    # task-scoped knowledge is invisible without a task, even in broad mode
    assert store.query_context(mode="broad").items == ()
    # ... but visible from a subtask of its task
    sub = store.create_task("a.1", a.id)
    assert only_a in ids(store.query_context(task_id=sub.id))
    assert only_b not in ids(store.query_context(task_id=sub.id, mode="broad"))


def test_ancestors_rank_below_the_task_and_reach_depends_on_mode(store: Store) -> None:
    root = store.create_task("root")
    mid = store.create_task("mid", root.id)
    leaf = store.create_task("leaf", mid.id)
    at_root = store.write_context("decision", "root decision", task_id=root.id, now=300).id
    at_mid = store.write_context("decision", "mid decision", task_id=mid.id, now=200).id
    at_leaf = store.write_context("decision", "leaf decision", task_id=leaf.id, now=100).id
    assert ids(store.query_context(task_id=leaf.id, mode="focused")) == [at_leaf]
    normal = store.query_context(task_id=leaf.id, mode="normal")
    assert ids(normal) == [at_leaf, at_mid]  # direct above parent although older
    assert [i.via for i in normal.items] == ["task", "ancestor"]
    assert ids(store.query_context(task_id=leaf.id, mode="broad")) == [at_leaf, at_mid, at_root]


def test_tier_then_recency_then_relevance(store: Store) -> None:
    task = store.create_task("t")
    ref = store.write_context("reference", "ref", task_id=task.id, now=500).id
    snip = store.write_context("snippet", "snip", task_id=task.id, now=400).id
    old_dec = store.write_context("decision", "old", task_id=task.id, now=100).id
    new_dec = store.write_context("decision", "new", task_id=task.id, now=200).id
    low = store.write_context("constraint", "low", task_id=task.id, now=200, relevance=0.2).id
    result = store.query_context(task_id=task.id)
    order = ids(result)
    assert order.index(new_dec) < order.index(old_dec)  # recency within the tier
    assert order.index(new_dec) < order.index(low)  # same tier and time: relevance
    assert order[-2:] == [snip, ref]  # tier 2 then tier 3 despite being newest


def test_one_row_per_context_however_many_links(store: Store, project: Path) -> None:
    task = store.create_task("t")
    cid = store.write_context(
        "decision", "x", task_id=task.id, file_paths=["a.py", "b.py"], relation="uses"
    ).id
    store.link_files(cid, ["a.py"], "defines")
    assert ids(store.query_context(task_id=task.id, mode="broad")) == [cid]
    assert ids(store.query_context(file_path="a.py", mode="broad")) == [cid]


def test_mode_limits_and_explicit_limit(store: Store) -> None:
    task = store.create_task("t")
    for n in range(40):
        store.write_context("decision", f"decision {n}", task_id=task.id, now=1000 + n)
    assert len(store.query_context(task_id=task.id, mode="focused").items) == 5
    assert len(store.query_context(task_id=task.id, mode="normal").items) == 15
    assert len(store.query_context(task_id=task.id, mode="broad").items) == 30
    assert len(store.query_context(task_id=task.id, mode="broad", limit=38).items) == 38
    with pytest.raises(InvalidInput, match="limit"):
        store.query_context(limit=0)
    with pytest.raises(InvalidInput, match="mode"):
        store.query_context(mode="wide")


def test_focused_keeps_tier1_and_snippets_only(store: Store) -> None:
    task = store.create_task("t")
    keep = {
        store.write_context(t, f"{t} text", task_id=task.id).id
        for t in ("constraint", "decision", "convention", "interface", "snippet")
    }
    store.write_context("issue", "issue text", task_id=task.id)
    store.write_context("reference", "ref text", task_id=task.id)
    assert set(ids(store.query_context(task_id=task.id, mode="focused"))) == keep


def test_normal_adds_one_hop_broad_adds_global(store: Store) -> None:
    task = store.create_task("t")
    direct = store.write_context("decision", "direct", task_id=task.id, file_paths=["x.py"]).id
    neighbour = store.write_context("snippet", "same file", file_paths=["x.py"]).id
    unrelated = store.write_context("convention", "global convention").id
    assert ids(store.query_context(task_id=task.id, mode="focused")) == [direct]
    normal = store.query_context(task_id=task.id, mode="normal")
    assert ids(normal) == [direct, neighbour]
    assert normal.items[1].via == "hop"
    broad = ids(store.query_context(task_id=task.id, mode="broad"))
    assert set(broad) == {direct, neighbour, unrelated}
    assert broad.index(direct) < broad.index(unrelated)  # direct link above global in tier 1


def test_file_narrows_first_then_task_orders(store: Store, project: Path) -> None:
    t1 = store.create_task("t1")
    t2 = store.create_task("t2")
    on_file_t1 = store.write_context("decision", "file+t1", task_id=t1.id, file_paths=["m.py"])
    on_file_t2 = store.write_context("decision", "file+t2", task_id=t2.id, file_paths=["m.py"])
    store.write_context("decision", "t1 only", task_id=t1.id)
    got = ids(store.query_context(file_path=str(project / "m.py"), task_id=t1.id, mode="focused"))
    assert got == [on_file_t1.id, on_file_t2.id]


def test_superseded_excluded_unless_asked_and_access_recorded(store: Store) -> None:
    old = store.write_context("decision", "old way").id
    new = store.write_context("decision", "new way", supersedes=old).id
    assert ids(store.query_context()) == [new]
    assert set(ids(store.query_context(include_superseded=True))) == {old, new}
    store.query_context(now=12345)
    ctx = store.get_context(new)
    assert ctx.access_count == 3 and ctx.last_accessed_at == 12345
    assert store.get_context(old).access_count == 1


def test_owner_and_type_filters(store: Store) -> None:
    mine = store.write_context("decision", "mine", owner="ana").id
    store.write_context("decision", "theirs", owner="bo")
    store.write_context("snippet", "code", owner="ana")
    assert ids(store.query_context(owner="ana", context_type="decision")) == [mine]
    with pytest.raises(InvalidInput, match="unknown context type"):
        store.query_context(context_type="note")


def test_changed_file_marks_contexts_stale(store: Store, project: Path) -> None:
    target = project / "svc.py"
    target.write_text("v1")
    cid = store.write_context("snippet", "svc v1 notes", file_paths=["svc.py"]).id
    assert store.query_context(file_path="svc.py").items[0].context.stale is False
    target.write_text("v2")
    item = store.query_context(file_path="svc.py").items[0]
    assert item.context.id == cid and item.context.stale
    assert "stale" in store.query_context(file_path="svc.py").text


def test_session_scope_visible_only_to_its_session(store: Store) -> None:
    cid = store.write_context("snippet", "scratch", scope="session", session_id="s1").id
    assert ids(store.query_context(session_id="s1")) == [cid]
    assert ids(store.query_context(session_id="s2")) == []
    assert ids(store.query_context()) == []


def test_budget_packs_high_tiers_and_digests_the_rest(store: Store) -> None:
    task = store.create_task("t")
    big = "Decision text that is fairly long. " * 10
    for n in range(3):
        store.write_context("decision", f"D{n}. {big}", task_id=task.id, now=100 + n)
    refs = [
        store.write_context("reference", f"Reference {n} is about caching. More detail.",
                            task_id=task.id, now=100 + n).id
        for n in range(6)
    ]  # fmt: skip
    result = store.query_context(task_id=task.id, mode="broad", budget_tokens=260)
    pack = result.pack
    assert pack.tokens <= 260
    assert pack.included and all(store.get_context(i).type == "decision" for i in pack.included)
    assert "[6 more references, first words]" in pack.text
    assert set(pack.digested) | set(pack.omitted) >= set(refs)
    assert "Reference 5 is about caching." in pack.text
    again = store.query_context(task_id=task.id, mode="broad", budget_tokens=260)
    assert again.pack.text == pack.text  # deterministic


def test_window_tokens_sets_a_30_percent_budget(store: Store) -> None:
    store.write_context("decision", "x")
    assert store.query_context(window_tokens=1000).pack.budget_tokens == 300
