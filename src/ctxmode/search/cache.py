"""Per-store data that search reuses between queries, dropped when a write makes it wrong.

An MCP server keeps one ``Store`` open and answers many searches on it (the web viewer opens
one per request, so it starts cold each time); the item count, the document frequency of each
query term and the indexed vocabulary (for spelling correction) are the same for all of them
until something is written. They are kept here, one
``StoreCache`` per ``Store`` (held weakly: a closed and dropped store frees its cache).

Invariants: store-wide numbers (the item count, per-word BM25 scores, source spans) are only
used while the store's version is unchanged; item rows, neighbour lists and document frequencies
also outlive writes that only added items (``refresh``: the ``search_edits`` counter of schema
m006 did not move), the frequencies completed with the new items' counts; the vocabulary, which
only feeds spelling suggestions, may lag behind the last writes (``StoreCache.vocabulary``).
The version is ``(PRAGMA data_version, connection.total_changes)``: the first moves when another
connection commits, the second when this one writes anything (even in a transaction not yet
committed, or rolled back, which only costs a needless refresh). ``search``
itself writes to temporary tables (porter stems), so it calls ``settle`` when done to record the
version it leaves behind. What is derived from one item's text (its tokens, its redacted form)
survives writes: each entry keeps the text it was made from and is used only while the item
still holds that same text, so an agent's hooks writing events do not empty the cache of an MCP
server between two searches. Porter stems of words depend on no data and are never dropped.
"""

from __future__ import annotations

import sqlite3
import time
import weakref
from array import array
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeAlias

from ctxmode.search.query import index_terms

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ctxmode.core.db import Database

__all__ = ["FieldTokens", "StoreCache", "WordScores", "for_store"]

#: Cached document frequencies kept at most (a dict of short strings: a few MB at worst).
MAX_DF_ENTRIES = 50_000
#: Item fields (tokenised for the rerank, redacted for hits) kept at most, and their total size
#: (the characters of the tokenised texts, and of redacted copies that differ from their text:
#: an unchanged one is the same string). Measured: all of LoCoMo warmed, 3.45 M cached
#: characters, added 26.5 MB to the process (~8 bytes a character, tokens interned), so the
#: size cap is ~30 MB; the entry cap is high enough for every field (title, body, context) of
#: ~40,000 items. Reaching a cap drops the older half of the cached texts.
MAX_TEXT_ENTRIES = 120_000
MAX_TEXT_CHARS = 4_000_000
#: Rows of per-word BM25 scores kept at most (``lists.word_scores``; 16 bytes a row in
#: arrays, so ~16 MB). Reaching it drops the older half of the lists.
MAX_SCORED_ROWS = 1_000_000
#: Item rows (``rank.ROW_SQL``) and neighbour lists kept at most between writes; their
#: texts are mostly the very strings ``tokens_at`` holds. Reaching it empties them.
MAX_ROWS = 10_000

#: Row ids and, aligned, their BM25 scores for one word (``lists.word_scores``).
WordScores: TypeAlias = "tuple[array[int], array[float]]"


class FieldTokens:
    """What the rerank keeps of one field of an item (built by ``rank``).

    ``asked``: token ranges ``[lo, hi)`` of the field's questions (sentences ending in "?");
    ``says_when``: whether it names a time, worked out on first use (``None`` until then);
    ``stemmed``: the generation of ``rank``'s stem table that holds every token's stem
    (-1: not stemmed yet).
    """

    __slots__ = ("asked", "lowered", "says_when", "stemmed", "text", "tokens")

    def __init__(
        self, text: str, lowered: str, tokens: tuple[str, ...], asked: tuple[tuple[int, int], ...]
    ) -> None:
        self.text = text
        self.lowered = lowered
        self.tokens = tokens
        self.asked = asked
        self.says_when: bool | None = None
        self.stemmed = -1


#: Oldest a stale vocabulary (see ``StoreCache.vocabulary``) is used, in seconds, and the most
#: items written since that are added to it instead of reading it all again.
VOCAB_MAX_AGE_S = 600.0
VOCAB_NEW_ITEMS = 500


def _version(conn: sqlite3.Connection) -> tuple[int, int]:
    return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes


@dataclass
class StoreCache:
    """What one store's searches share; every field is derived from the indexed items."""

    version: tuple[int, int] = (-1, -1)
    n_items: int | None = None
    #: (table, quoted FTS5 expression) -> (number of matching items, the highest item row id
    #: when counted).
    df: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    #: ``search_edits.n`` (``None``: unknown) and the highest item row id at the last refresh.
    edits: int | None = None
    top: int = -1
    #: Indexed porter terms by first letter and length: (letter, length) -> [(term, document
    #: count)], built on demand.
    vocab: dict[tuple[str, int], list[tuple[str, int]]] | None = None
    #: When ``vocab`` was read (``time.monotonic()``), whether the store changed since, and
    #: the highest item row id it holds the words of.
    vocab_built: float = 0.0
    vocab_stale: bool = False
    vocab_max_id: int = 0
    #: The first letters whose terms ``vocab`` holds (``None``: every letter).
    vocab_letters: set[str] | None = None
    #: (row id, field) -> (the field's text, that text after ``redact``): what hits show.
    redacted: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)
    #: (row id, field) -> the field's text and tokens: rerank input.
    tokens_at: dict[tuple[int, int], FieldTokens] = field(default_factory=dict)
    _text_chars: int = 0
    #: Source label -> (lowest row id, highest row id, no other source in between).
    spans: dict[str, tuple[int, int, bool]] = field(default_factory=dict)
    #: (word, row-id span or None) -> the word's BM25 score in each row holding it.
    word_scores: dict[tuple[str, tuple[int, int] | None], WordScores] = field(default_factory=dict)
    _scored_rows: int = 0
    #: Row id -> its ``rank.ROW_SQL`` row.
    rows: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    #: (filter SQL, its parameters) -> seed row id -> (neighbour row id, offset) pairs.
    neighbours: dict[tuple[str, tuple[Any, ...]], dict[int, list[tuple[int, int]]]] = field(
        default_factory=dict
    )

    def refresh(self, conn: sqlite3.Connection) -> StoreCache:
        """Drop what the last writes may have changed since the last ``settle``; return self.

        Store-wide counts and scores go after any write. When items were only added since
        (``core.schema.m006_search_edits`` has not moved and no row id went down), item rows and
        neighbour lists stay, and document frequencies are brought up to date by counting the
        new items only (``doc_count``).
        """
        now = _version(conn)
        if now != self.version:
            self.version = now
            try:
                edits, top = conn.execute(
                    "SELECT (SELECT n FROM search_edits WHERE id = 1), "
                    "(SELECT coalesce(max(id), 0) FROM search_items)"
                ).fetchone()
            except sqlite3.Error:  # an unmigrated or damaged store: assume anything changed
                edits, top = None, -1
            only_added = edits is not None and edits == self.edits and top >= self.top >= 0
            self.edits, self.top = (int(edits) if edits is not None else None), int(top)
            self.n_items = None
            self.spans.clear()
            self.word_scores.clear()
            self._scored_rows = 0
            self.vocab_stale = True
            if not only_added:
                self.df.clear()
                self.rows.clear()
                self.neighbours.clear()
        return self

    def forget_texts(self) -> None:
        self.redacted.clear()
        self.tokens_at.clear()
        self._text_chars = 0

    def charge(self, chars: int) -> None:
        """Count ``chars`` more cached text; past a limit the older half of the cached texts
        is dropped (dicts keep insertion order), so a corpus larger than the cache keeps its
        recent half warm instead of starting cold again."""
        self._text_chars += chars
        if (
            self._text_chars > MAX_TEXT_CHARS
            or len(self.redacted) + len(self.tokens_at) > MAX_TEXT_ENTRIES
        ):
            for texts in (self.redacted, self.tokens_at):
                for key in list(islice(texts, (len(texts) + 1) // 2)):
                    del texts[key]
            # What is left, and the text the caller stores next (it charges before storing).
            self._text_chars = (
                sum(len(v[1]) for v in self.redacted.values() if v[1] is not v[0])
                + sum(len(v.text) for v in self.tokens_at.values())
                + chars
            )

    def has_room(self, chars: int, entries: int) -> bool:
        """Whether ``chars`` more cached characters in ``entries`` more entries stay well under
        the caps (work done ahead, ``engine.warm``, never pushes out what searches put in)."""
        return (
            self._text_chars + chars < MAX_TEXT_CHARS * 0.9
            and len(self.redacted) + len(self.tokens_at) + entries < MAX_TEXT_ENTRIES * 0.9
        )

    def keep_word_scores(self, key: tuple[str, tuple[int, int] | None], scores: WordScores) -> None:
        """Cache one word's scores; past ``MAX_SCORED_ROWS`` the older half of the lists goes
        (a list larger than the cap on its own is not kept)."""
        rows = len(scores[0])
        if rows > MAX_SCORED_ROWS:
            return
        while self.word_scores and self._scored_rows + rows > MAX_SCORED_ROWS:
            for old in list(islice(self.word_scores, (len(self.word_scores) + 1) // 2)):
                self._scored_rows -= len(self.word_scores.pop(old)[0])
        self.word_scores[key] = scores
        self._scored_rows += rows

    def keep_rows(self, rows: dict[int, tuple[Any, ...]]) -> None:
        """Cache item rows fetched for a search (until the store changes)."""
        if len(self.rows) + len(rows) > MAX_ROWS:
            self.rows.clear()
        self.rows.update(rows)

    def neighbours_for(self, where: str, params: list[Any]) -> dict[int, list[tuple[int, int]]]:
        """The neighbour lists of seed items under one filter, to read and fill (kept until
        the store changes)."""
        key = (where, tuple(params))
        if key not in self.neighbours and len(self.neighbours) >= 64:
            self.neighbours.clear()
        found = self.neighbours.setdefault(key, {})
        if len(found) > MAX_ROWS:
            found.clear()
        return found

    def settle(self, conn: sqlite3.Connection) -> None:
        """Record the version after a search's own temporary writes (which change no item)."""
        self.version = _version(conn)

    def item_count(self, conn: sqlite3.Connection) -> int:
        if self.n_items is None:
            row = conn.execute("SELECT count(*) FROM search_items").fetchone()
            self.n_items = max(1, int(row[0]))
        return self.n_items

    def doc_count(self, conn: sqlite3.Connection, table: str, expression: str) -> int:
        """Items of ``table`` (``search_fts``, ``search_trigram`` or ``search_cjk``) matching
        ``expression``; a count kept from before items were added is completed with the new
        items' count."""
        key = (table, expression)
        found = self.df.get(key)
        if found is not None and found[1] == self.top:
            return found[0]
        sql = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
        if found is None:
            count = int(conn.execute(sql, (expression,)).fetchone()[0])
        else:
            more = conn.execute(sql + " AND rowid > ?", (expression, found[1])).fetchone()
            count = found[0] + int(more[0])
        if len(self.df) >= MAX_DF_ENTRIES:
            self.df.clear()
        self.df[key] = (count, self.top)
        return count

    def vocabulary(
        self,
        conn: sqlite3.Connection,
        *,
        current: bool = False,
        letters: Iterable[str] | None = None,
    ) -> dict[tuple[str, int], list[tuple[str, int]]]:
        """The indexed porter terms (digits left out) with their document counts, by first
        letter and length: those starting with one of ``letters`` (``None``: all of them).

        A correction compares a word with the terms of its own first letter only
        (``query.nearest_terms``), so only those are read: on a 3,000-file repository a letter
        takes 2-10 ms to read against 240 ms for the whole vocabulary (160,000 terms).
        It may predate the last writes (``vocab_stale``) by up to ``VOCAB_MAX_AGE_S``: an
        agent's hooks write on every tool call, and reading the vocabulary again costs
        22-27 ms on a 6,000-item store for the few words those writes add. ``current=True``
        (``search`` asks for it when the stale one has no candidate for a word: the word may
        have just been written) adds the words of the items written since, up to
        ``VOCAB_NEW_ITEMS`` of them (more: the vocabulary is read again). Words that an
        edit put into an existing item wait for the next full read.
        """
        wanted = None if letters is None else set(letters)
        too_old = time.monotonic() - self.vocab_built > VOCAB_MAX_AGE_S
        if self.vocab_stale and too_old:
            self.vocab = None
        if (
            self.vocab is not None
            and self.vocab_stale
            and current
            and not self._add_new_words(conn)
        ):
            self.vocab = None
        if self.vocab is None:
            self.vocab_built = time.monotonic()
            self.vocab_stale = False
            (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM search_items").fetchone()
            self.vocab_max_id = int(top)
            self.vocab, self.vocab_letters = {}, set()
            self._read_terms(conn, wanted)
        elif self.vocab_letters is not None and (
            wanted is None or not wanted <= self.vocab_letters
        ):
            self._read_terms(conn, None if wanted is None else wanted - self.vocab_letters)
        return self.vocab

    def _read_terms(self, conn: sqlite3.Connection, letters: set[str] | None) -> None:
        """Add the terms starting with ``letters`` (``None``: all) to ``vocab``."""
        assert self.vocab is not None
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.ctxmode_vocab "
            "USING fts5vocab(main, search_fts, row)"
        )
        sql = "SELECT term, doc FROM temp.ctxmode_vocab"
        if letters is None:
            self.vocab.clear()
            ranges: list[tuple[Any, ...]] = [()]
        else:
            sql += " WHERE term >= ? AND term < ?"
            ranges = [(a, chr(ord(a) + 1)) for a in sorted(letters) if ord(a) < 0x10FFFF]
        for params in ranges:
            for term, doc in conn.execute(sql, params):
                text = str(term)
                if text and not text.isdigit():
                    self.vocab.setdefault((text[0], len(text)), []).append((text, int(doc)))
        if letters is None:
            self.vocab_letters = None
        elif self.vocab_letters is not None:
            self.vocab_letters |= letters

    def _add_new_words(self, conn: sqlite3.Connection) -> bool:
        """Add to ``vocab`` the terms of items with row ids above ``vocab_max_id``; False when
        there are more than ``VOCAB_NEW_ITEMS`` of them."""
        rows = conn.execute(
            "SELECT id, title || ' ' || body || ' ' || context FROM search_items WHERE id > ? "
            f"ORDER BY id LIMIT {VOCAB_NEW_ITEMS + 1}",
            (self.vocab_max_id,),
        ).fetchall()
        if len(rows) > VOCAB_NEW_ITEMS:
            return False
        assert self.vocab is not None
        loaded = self.vocab_letters
        for term, n in index_terms(conn, [str(r[1]) for r in rows]).items():
            if not term or term.isdigit() or (loaded is not None and term[0] not in loaded):
                continue  # a letter not read yet comes whole when it is
            bucket = self.vocab.setdefault((term[0], len(term)), [])
            for i, (known, count) in enumerate(bucket):
                if known == term:
                    bucket[i] = (known, count + n)
                    break
            else:
                bucket.append((term, n))
        if rows:
            self.vocab_max_id = int(rows[-1][0])
        self.vocab_stale = False
        return True


_CACHES: weakref.WeakKeyDictionary[Database, StoreCache] = weakref.WeakKeyDictionary()


def for_store(store: Database) -> StoreCache:
    """The cache of ``store``, emptied first if the store changed since it was last used."""
    cache = _CACHES.get(store)
    if cache is None:
        cache = StoreCache()
        _CACHES[store] = cache
    return cache.refresh(store.conn)
