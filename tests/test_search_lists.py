"""The porter list summed from cached per-word scores (``search_lists.porter_list``) must be
exactly the list FTS5 ranks for the whole OR query (``fts_list``): same rows, same order, ties
included, with and without a source's row-id span; and the cache must follow writes."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmode import Store
from ctxmode.search import cache as search_cache
from ctxmode.search import lists as sl
from ctxmode.search import query as sq
from ctxmode.search.indexing import index_content

WORDS = [
    "retry",
    "budget",
    "worker",
    "cache",
    "expire",
    "ledger",
    "backup",
    "queue",
    "timeout",
    "deploy",
    "rollback",
    "schema",
    "index",
    "token",
    "parser",
    "export",
    "import",
    "session",
    "snapshot",
    "lock",
    "retries",
    "budgets",
    "workers",
    "caching",
    "expired",
    "deploying",
]


def _seed(store: Store) -> None:
    """Three sources of chunks with random texts (repeated texts give equal scores), then
    contexts written between them so one band holds two sources."""
    rng = random.Random(7)
    for label in ("alpha", "beta", "gamma"):
        sections = []
        for i in range(60):
            n = rng.randint(3, 40)
            body = " ".join(rng.choice(WORDS) for _ in range(n))
            if i % 10 == 0:
                body = "retry budget worker"  # identical chunks: ties
            sections.append(f"## {label} {rng.choice(WORDS)} {i}\n\n{body}")
        index_content(store, "\n\n".join(sections), label, fmt="markdown")
    for i in range(20):
        store.write_context("decision", f"{WORDS[i]} rule {i}: " + " ".join(WORDS[i : i + 5]))


def _both(store: Store, words: list[str], span: tuple[int, int] | None) -> tuple[list[int], ...]:
    cache = search_cache.for_store(store)
    expression = " OR ".join(sq.quote(w) for w in words)
    expected = sl.fts_list(store.conn, "search_fts", expression, "", [], span)
    return sl.porter_list(cache, store.conn, words, span), expected


def test_summed_word_scores_give_the_fts5_list_exactly(store: Store) -> None:
    _seed(store)
    cache = search_cache.for_store(store)
    span, alone = sl.source_span(cache, store.conn, "beta")
    assert alone and span is not None
    rng = random.Random(11)
    for _ in range(150):
        words = rng.sample(WORDS, rng.randint(1, 6))
        for band in (None, span):
            got, expected = _both(store, words, band)
            assert got == expected, words
    assert cache.word_scores  # the second query of a word reused its scores


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    root = tmp_path_factory.mktemp("lists")
    with Store.open(root / "c.db", root=root) as store:
        _seed(store)
        yield store


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([*WORDS, "absent", "zzz"]), min_size=1, max_size=8, unique=True))
def test_any_word_list_matches_fts5(seeded: Store, words: list[str]) -> None:
    got, expected = _both(seeded, words, None)
    assert got == expected


def test_a_band_shared_by_two_sources_is_not_summed(store: Store) -> None:
    _seed(store)
    index_content(store, "## late beta\n\nretry budget", "beta-late", fmt="markdown")
    store.write_context("decision", "retry rule: retry budget worker")
    cache = search_cache.for_store(store)
    _span, alone = sl.source_span(cache, store.conn, "knowledge")
    assert not alone  # the chunk of "beta-late" sits between two contexts
    hits = store.search("retry budget", source="knowledge", limit=50).hits
    assert hits and all(h.source == "knowledge" for h in hits)
    assert not any(key[1] is not None for key in cache.word_scores)  # no band list was made


def test_word_scores_follow_writes(store: Store) -> None:
    _seed(store)
    before = store.search("ledger", limit=100)
    assert search_cache.for_store(store).word_scores
    index_content(store, "## ledger ledger\n\nledger ledger ledger", "delta", fmt="markdown")
    after = store.search("ledger", limit=100)
    assert after.hits[0].source == "delta"  # the new item, found through fresh scores
    assert after.total == before.total + 1


def test_scores_past_the_cap_drop_the_oldest_lists(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(store)
    cache = search_cache.for_store(store)
    sizes = [len(sl.word_scores(cache, store.conn, w, None)[0]) for w in WORDS[:12]]
    cap = sum(sizes[:3])
    monkeypatch.setattr(search_cache, "MAX_SCORED_ROWS", cap)
    cache.word_scores.clear()
    cache._scored_rows = 0
    for word in WORDS[:12]:
        sl.word_scores(cache, store.conn, word, None)
    kept = sum(len(ids) for ids, _ in cache.word_scores.values())
    assert 0 < kept <= cap
    assert (WORDS[0], None) not in cache.word_scores  # among the oldest, dropped
    assert (WORDS[11], None) in cache.word_scores


def test_cached_rows_and_neighbours_follow_another_connections_writes(store: Store) -> None:
    """Rows, neighbour lists and word scores are kept between searches only while the store is
    unchanged: an edit committed by another process shows in the next search."""
    doc = "## One\n\nthe heron waits\n\n## Two\n\nthe pond is still\n\n## Three\n\nfrogs sing"
    index_content(store, doc, "pond", fmt="markdown")
    first = store.search("heron", source="pond")
    assert first.hits[0].title == "One" and "heron" in first.hits[0].snippet
    cache = search_cache.for_store(store)
    assert cache.rows and cache.word_scores
    with Store.open(store.path, root=store.root) as writer:
        doc2 = "## One\n\nthe heron flies off\n\n## Four\n\nreeds bend"
        index_content(writer, doc2, "pond", fmt="markdown")
    again = store.search("heron", source="pond")
    assert "flies" in again.hits[0].snippet
    assert {h.title for h in store.search("reeds heron frogs", source="pond").hits} == {
        "One",
        "Four",
    }


def test_new_items_keep_cached_rows_and_counts_follow_them(store: Store) -> None:
    """Items only added since the last search (what an agent's hooks do between two searches):
    rows read before stay cached and term counts are completed from the new items; an edit
    (here a supersession) drops the rows, so the superseded flag shows at once."""
    doc = "## Heron\n\nthe heron waits by the pond\n\n## Reeds\n\nreeds bend over the pond"
    index_content(store, doc, "pond", fmt="markdown")
    first = store.write_context("decision", "Count the heron nests every spring").id
    before = store.search("heron pond")
    cache = search_cache.for_store(store)
    kept = dict(cache.rows)
    assert kept
    with Store.open(store.path, root=store.root) as writer:
        writer.write_context("snippet", "A heron took a fish from the river")
    after = store.search("heron pond")
    assert after.total == before.total + 1
    assert all(cache.rows[i] is row for i, row in kept.items())  # not read again
    with Store.open(store.path, root=store.root) as fresh:
        assert fresh.search("heron pond").to_dict() == after.to_dict()
    with Store.open(store.path, root=store.root) as writer:
        writer.write_context("decision", "Count heron nests each autumn", supersedes=first)
    flagged = {h.id: h.superseded for h in store.search("heron nests").hits}
    assert flagged[f"ctx:{first}"] is True


def test_the_edit_counter_moves_on_edits_not_on_new_items(store: Store) -> None:
    """``search_edits.n`` (schema m006) is what lets cached rows outlive new items: it must move
    on every change to an existing item and stay put when items are only added."""

    def edits() -> int:
        return int(store.conn.execute("SELECT n FROM search_edits").fetchone()[0])

    start = edits()
    first = store.write_context("decision", "Keep the heron log weekly").id
    store.write_context("snippet", "Another note")
    assert edits() == start  # new contexts
    store.update_context(first, content="Keep the heron log daily")
    assert edits() > start
    moved = edits()
    store.write_context("decision", "Keep the heron log hourly", supersedes=first)
    assert edits() > moved
    moved = edits()
    index_content(store, "## One\n\nheron", "pond", fmt="markdown")
    assert edits() > moved  # chunk inserts: their neighbours may change
    moved = edits()
    store.delete_context(first)
    assert edits() > moved
