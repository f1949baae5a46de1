"""Search warm-up: items analysed ahead (``search.warm``) and the MCP server's idle-time warming
(``StoreRunner.warm_later``). Warming only fills caches: results must not change."""

from __future__ import annotations

import time

import pytest

from ctxmode import Store
from ctxmode.mcp.tools.common import StoreRunner
from ctxmode.mcp.tools.search import search_many
from ctxmode.search import cache as search_cache
from ctxmode.search import engine as search
from ctxmode.search.indexing import index_content

QUERIES = ["retry budget of worker 7", "when does the cache expire", "ledger backup"]


def _index_notes(store: Store) -> None:
    for label, n in (("notes", 80), ("other", 40)):
        doc = "\n\n".join(
            f"## {label} part {i}\n\nThe retry budget of worker {i} is {i} seconds; the cache "
            f"expires after {i} minutes? The ledger backup runs at {i}:00."
            for i in range(n)
        )
        index_content(store, doc, label, fmt="markdown")


def _ranked(store: Store, source: str | None = None) -> list[list[tuple[str, float, str]]]:
    return [
        [(h.id, h.score, h.snippet) for h in store.search(q, limit=5, source=source).hits]
        for q in QUERIES
    ]


def _warm_fully(store: Store, source: str | None) -> int:
    calls, below = 0, None
    while True:
        calls += 1
        below = search.warm(store, source, below=below)
        if below is None:
            return calls


def _source_ids(store: Store, source: str) -> set[int]:
    rows = store.conn.execute("SELECT id FROM search_items WHERE source = ?", (source,))
    return {int(r[0]) for r in rows}


def test_warming_a_source_analyses_its_items_and_changes_no_result(store: Store) -> None:
    _index_notes(store)
    expected = _ranked(store, "notes")
    fresh = Store.open(store.path, root=store.root)
    try:
        calls = _warm_fully(fresh, "notes")
        assert calls > 80 // search.WARM_ITEMS  # it went slice by slice
        cache = search_cache.for_store(fresh)
        notes = _source_ids(fresh, "notes")
        assert {k for k, f in cache.tokens_at if f == 1} == notes  # only that source
        assert {k for k, f in cache.redacted if f == 1} == notes
        assert set(cache.rows) == notes
        (neighbours,) = cache.neighbours.values()  # under the source filter a search uses
        assert set(neighbours) == notes
        assert _ranked(fresh, "notes") == expected
        assert search.warm(fresh, "notes") is None  # nothing left to do
    finally:
        fresh.close()


def test_warming_everything_covers_every_source(store: Store) -> None:
    _index_notes(store)
    expected = _ranked(store)
    fresh = Store.open(store.path, root=store.root)
    try:
        _warm_fully(fresh, None)
        cache = search_cache.for_store(fresh)
        everything = _source_ids(fresh, "notes") | _source_ids(fresh, "other")
        assert {k for k, f in cache.tokens_at if f == 1} >= everything
        assert _ranked(fresh) == expected
    finally:
        fresh.close()


def test_warming_stops_short_of_the_cache_cap(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Warming never makes the cache drop what searches put in it."""
    _index_notes(store)
    expected = _ranked(store, "notes")
    monkeypatch.setattr(search_cache, "MAX_TEXT_CHARS", 20_000)
    fresh = Store.open(store.path, root=store.root)
    try:
        fresh.search(QUERIES[0], source="notes")
        cache = search_cache.for_store(fresh)
        searched = dict(cache.tokens_at)
        _warm_fully(fresh, "notes")
        assert cache._text_chars < 20_000
        assert all(cache.tokens_at.get(k) is v for k, v in searched.items())
        assert len(cache.tokens_at) < 3 * len(_source_ids(fresh, "notes"))  # stopped early
        assert _ranked(fresh, "notes") == expected
    finally:
        fresh.close()


def test_the_server_warms_what_it_searched_in_idle_moments(store: Store) -> None:
    """After a search call, the server's warming thread analyses the searched source while
    other calls still go through."""
    _index_notes(store)
    runner = StoreRunner(store.path, store.root)
    try:
        runner.run_sync(search_many, [QUERIES[0]], source="notes")
        runner.warm_later("notes")
        runner.warm_later("notes")  # asked twice: warmed once
        notes = set()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            # Other calls are served meanwhile (the warming holds the store only per slice).
            runner.run_sync(lambda s: s.search(QUERIES[1], source="other"))
            notes = runner.run_sync(lambda s: _source_ids(s, "notes"))
            cached = runner.run_sync(lambda s: set(search_cache.for_store(s).tokens_at))
            warmed = {k for k, f in cached if f == 1} >= notes
            idle = not runner.warming
            if warmed and idle:
                break
            time.sleep(0.2)  # idle moments: the warming works only between calls
        assert warmed and idle
    finally:
        runner.close()


def test_the_warming_thread_ends_when_the_store_closes(store: Store) -> None:
    _index_notes(store)
    runner = StoreRunner(store.path, store.root)
    runner.run_sync(search_many, [QUERIES[0]])
    runner.warm_later(None)
    runner.close()  # mid-warming: the thread must notice and stop
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and runner.warming:
        time.sleep(0.02)
    assert not runner.warming


@pytest.mark.parametrize(
    ("value", "enabled"), [(None, True), ("1", True), ("0", False), ("off", False), ("no", False)]
)
def test_warm_up_can_be_turned_off(
    value: str | None, enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxmode.core import config

    if value is None:
        monkeypatch.delenv(config.ENV_SEARCH_WARMUP, raising=False)
    else:
        monkeypatch.setenv(config.ENV_SEARCH_WARMUP, value)
    assert config.search_warmup_enabled() is enabled
