"""Full-text search over contexts, session events and indexed document chunks.

Pipeline (``search``):
1. ``query.parse`` cuts the text into quoted terms (no user text reaches FTS5 syntax);
   a word with irregular forms ("go": "went", "gone"; ``forms``) searches for all of them;
2. up to four ranked lists from ``search_items`` (``lists``): BM25 on ``search_fts``
   (porter, titles weighted ``TITLE_WEIGHT`` times the body, and the neighbour ``context`` of
   a document chunk, the ends of the two chunks before it, ``CONTEXT_WEIGHT`` times; summed
   from cached per-word scores when the filters allow), BM25 on ``search_trigram``
   (substrings of Latin words; those found as whole words in
   ``TRIGRAM_SKIP_MIN_DF`` items or more are left out, as the costliest and least useful part of
   that list; skipped when the porter list already fills the rerank pool), BM25 on
   ``search_cjk`` (the bigrams of CJK runs) and a substring scan for lone CJK characters; with
   a ``source`` filter the full-text lists only look at that source's row-id span;
3. reciprocal rank fusion (``RRF_K`` = 60) of those lists;
4. a rerank of the best ``RERANK_POOL`` by IDF-weighted term coverage (words found only in the
   context count ``rank.W_CONTEXT`` as much), title match, term proximity and phrase
   adjacency; the best candidates lend part of their score to the chunks up to
   ``rank.NEIGHBOUR_SPAN`` places around them; superseded contexts are multiplied by
   ``SUPERSEDED_FACTOR`` and flagged;
5. when nothing matched at all, each unknown word is corrected against the indexed vocabulary
   (edit distance over ``fts5vocab``), the search runs again and ``corrected_query`` says so.

Per-store data reused between queries lives in ``cache``: store-wide numbers are
dropped as soon as the store changes, rows and term counts survive writes that only add items,
and stemmed and redacted item texts are kept while their item holds the same text.

``warm`` does ahead, for the items of a source, the per-item work a search does on first
touching an item (an MCP server calls it in idle moments after a search); results never change.

Results are compact hits (id, title, short highlighted snippet, score) within ``budget_chars``;
``get_items`` returns full text by id (progressive disclosure). Every string returned passes
through ``redact`` again, whatever was stored. Ids are ``ctx:N`` (contexts), ``evt:N`` (events)
and ``doc:N`` (document chunks), N being the row id in the owning table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ctxmode.core import config
from ctxmode.core.errors import InvalidInput, NotFound
from ctxmode.core.redact import redact
from ctxmode.search import cache as sc
from ctxmode.search import query as sq
from ctxmode.search import rank as sr
from ctxmode.search.forms import forms_of
from ctxmode.search.lists import RRF_K, source_span, trigram_skip
from ctxmode.search.lists import fuse as _fuse
from ctxmode.search.results import Hit as Hit
from ctxmode.search.results import Item as Item
from ctxmode.search.results import SearchResult as SearchResult
from ctxmode.search.tasks import task_hits, task_item

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.core.db import Database

__all__ = ["Hit", "Item", "SearchResult", "get_items", "search", "warm"]

#: The best hit must cover this share of the query's IDF weight for a confident match.
CONFIDENT_COVERAGE = 0.4
MAX_LIMIT = config.SEARCH_MAX_LIMIT
MIN_BUDGET = config.SEARCH_MIN_BUDGET
#: Fixed cost charged per hit against the budget (ids, field names, punctuation).
HIT_OVERHEAD = 90
#: Places named per hit where the same text occurs again (``Hit.also``).
MAX_ALSO = 5

_PREFIX = {"context": "ctx", "event": "evt", "chunk": "doc"}
_KIND = {**{v: k for k, v in _PREFIX.items()}, "task": "task"}
_ID = re.compile(r"^\s*(ctx|evt|doc|task):(\d{1,18})\s*$")
_SPACE = re.compile(r"\s+")


# -- public entry points ------------------------------------------------------------------------


def search(
    store: Database,
    query: str,
    *,
    limit: int = 10,
    source: str | None = None,
    type: str | None = None,
    session_id: str | None = None,
    task_id: int | None = None,
    file_path: str | None = None,
    since: int | None = None,
    until: int | None = None,
    budget_chars: int = 4000,
    extra_lists: Sequence[tuple[Sequence[int], float]] = (),
) -> SearchResult:
    """Search every indexed item; any text is a valid query (it is sanitised, never parsed).

    Filters combine with AND: ``source`` label, item ``type`` (context type, event category or
    chunk kind), ``session_id``, ``task_id`` and ``file_path`` (contexts linked to them), and
    ``since``/``until`` (Unix seconds, inclusive) on the creation time.

    ``extra_lists``: more ranked lists of ``search_items`` row ids (best first), each with its
    weight, fused by reciprocal rank with the full-text lists before the rerank: the seam an
    experimental arm (``bench/locomo_dense.py``'s embeddings) plugs into.
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    if budget_chars < MIN_BUDGET:
        raise InvalidInput(f"budget_chars must be at least {MIN_BUDGET}, got {budget_chars}")
    text = query if isinstance(query, str) else ""
    where, params = _filter_sql(store, source, type, session_id, task_id, file_path, since, until)
    parsed = sq.parse(text)
    if not parsed.terms:
        return SearchResult(query=text, corrected_query=None, hits=(), total=0, truncated=False)
    conn = store.conn
    cache = sc.for_store(store)
    n_items = cache.item_count(conn)
    df = _document_frequencies(cache, conn, parsed, n_items)
    span, alone = source_span(cache, conn, source)
    # Per-word scores stand for the porter list when the row-id span is the only filter.
    others = (type, session_id, task_id, file_path, since, until)
    lists_cache = cache if alone and all(f is None for f in others) else None
    fused = _fuse(conn, parsed, where, params, span, trigram_skip(parsed, df), lists_cache)
    for ids, weight in extra_lists:
        for rank, item in enumerate(ids, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (RRF_K + rank)

    def near(ids: list[int]) -> dict[int, list[tuple[int, int]]]:
        return _adjacent_chunks(conn, ids, where, params, cache.neighbours_for(where, params))

    ranked, rows = sr.rerank(conn, parsed, fused, df, n_items, near, cache)
    corrected: str | None = None
    confident = _is_confident(ranked)
    if not confident or any(n == 0 for n in df.values()):
        # Trigger: a word is found nowhere, or the best match is weak. Outcome: the corrected
        # query replaces it only when its best hit covers more of the query, and says so. When
        # the other words already match well, only a one-letter slip is corrected: a real word
        # the store lacks ("patriotic") is otherwise "corrected" into another ("patrick").
        better = _correct(cache, conn, parsed, df, span, max_edits=2 if not confident else 1)
        if better is not None:
            df2 = _document_frequencies(cache, conn, better, n_items)
            fused2 = _fuse(
                conn, better, where, params, span, trigram_skip(better, df2), lists_cache
            )
            ranked2, rows2 = sr.rerank(conn, better, fused2, df2, n_items, near, cache)
            if ranked2 and (not ranked or ranked2[0].coverage > ranked[0].coverage):
                parsed, fused, ranked, rows = better, fused2, ranked2, rows2
                corrected = better.text
    cache.settle(conn)
    hits, truncated = _render_hits(cache, parsed, ranked, rows, limit, budget_chars)
    # Neighbour chunks join the ranking after fusion; only those holding a query word count.
    total = len(fused.keys() | {c.row_id for c in ranked if c.coverage > 0})
    confident = _is_confident(ranked)
    if all(f is None for f in (source, type, session_id, task_id, file_path, since, until)):
        tasks = task_hits(store, sq.parse(text))
        if tasks:
            truncated = truncated or len(tasks) + len(hits) > limit
            hits = (tasks + hits)[:limit]
            total += len(tasks)
            confident = True
    return SearchResult(
        query=text,
        corrected_query=corrected,
        hits=tuple(hits),
        total=total,
        truncated=truncated or total > len(hits),
        confident=confident,
    )


def _is_confident(ranked: list[sr.Candidate]) -> bool:
    return bool(ranked) and ranked[0].coverage >= CONFIDENT_COVERAGE


def get_items(store: Database, ids: Sequence[str], budget_chars: int = 20000) -> list[Item]:
    """Full text of items by id (``ctx:12``, ``evt:34``, ``doc:56``), in the order asked.

    Texts are cut so that together they stay within ``budget_chars``; a cut item has
    ``truncated=True`` and ends with a note saying how much was left out. An id asked twice is
    returned once; ids left when the budget is spent are not returned, and the last item's note
    names how many (ask for them again, alone or with a larger budget).
    """
    if isinstance(ids, str):
        ids = [ids]
    if not ids:
        raise InvalidInput("give at least one id such as ctx:12, evt:34 or doc:56")
    if budget_chars < MIN_BUDGET:
        raise InvalidInput(f"budget_chars must be at least {MIN_BUDGET}, got {budget_chars}")
    keys: dict[str, tuple[str, int]] = {}
    for raw in ids:
        m = _ID.match(str(raw))
        if not m:
            raise InvalidInput(
                f"not an item id: {sr.clip(str(raw), 40)!r}; ids look like ctx:12, evt:34, "
                "doc:56 or task:7 (as printed by search)"
            )
        keys.setdefault(f"{m.group(1)}:{int(m.group(2))}", (_KIND[m.group(1)], int(m.group(2))))
    rows: dict[str, sqlite3.Row | tuple[Any, ...]] = {}
    missing = []
    tasks: dict[str, Item] = {}
    for key, (kind, ref) in keys.items():
        if kind == "task":
            task = task_item(store, ref)
            if task is None:
                missing.append(key)
            else:
                tasks[key] = task
            continue
        row = store.conn.execute(
            sr.ROW_SQL + " WHERE s.item_kind = ? AND s.ref_id = ?", (kind, ref)
        ).fetchone()
        if row is None:
            missing.append(key)
        else:
            rows[key] = row
    if missing:
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise NotFound(
            f"no item {', '.join(missing[:10])}{more}; run a search to get current ids "
            "(they change when a source is re-indexed)"
        )
    items: list[Item] = []
    remaining = budget_chars
    for index, key in enumerate(keys):
        if key in tasks:
            items.append(tasks[key])
            remaining -= len(tasks[key].text) + HIT_OVERHEAD
            continue
        _rid, kind, _ref_id, title, body, source, typ, created, superseded, *rest = rows[key]
        if items and remaining < HIT_OVERHEAD + len(str(title)):
            left = len(keys) - index
            last = items[-1]
            note = (
                f"\n[{left} more {'id' if left == 1 else 'ids'} not shown: the budget is "
                "spent; ask for them again, alone or with a larger budget]"
            )
            items[-1] = replace(last, text=last.text + note, truncated=True)
            break
        text = redact(str(body))
        cut = False
        room = max(0, remaining - len(str(title)) - HIT_OVERHEAD)
        if len(text) > room:
            left = len(text) - room
            text = text[:room] + (
                f"\n[... {left} more characters not shown; ask for this id alone or with a "
                "larger budget]"
            )
            cut = True
        remaining -= len(text) + len(str(title)) + HIT_OVERHEAD
        items.append(
            Item(
                id=key,
                kind=str(kind),
                title=redact(str(title)),
                source=redact(str(source)),
                type=str(typ),
                created_at=int(created),
                text=text,
                truncated=cut,
                superseded=superseded is not None,
                shared_by=rest[1] if len(rest) > 1 else None,
            )
        )
    return items


#: Items one ``warm`` call analyses at most (a few milliseconds: one slice of a server's idle
#: time), and ids it looks through for them.
WARM_ITEMS = 32
WARM_SCAN = 512


def warm(
    store: Database, source: str | None = None, *, below: int | None = None, limit: int = WARM_ITEMS
) -> int | None:
    """Analyse ahead, newest first, up to ``limit`` items (of ``source``, else any) with row ids
    under ``below`` that the store's search cache does not hold yet: what a search would do on
    first touching them (tokens, stems, redacted fields; and, while they fit beside what
    searches cached, their rows and neighbour lists, which last until an item is edited).
    Results do not change, searches that touch them get faster.

    Returns the ``below`` to pass next, or ``None`` when no item is left or the cache has no
    room (warming never pushes out what searches cached). A server calls it repeatedly, in
    idle moments after a search (``mcp.tools.common.StoreRunner.warm_later``).
    """
    cache = sc.for_store(store)
    conn = store.conn
    where = "WHERE 1"
    params: list[Any] = []
    if below is not None:
        where += " AND id < ?"
        params.append(below)
    if source is not None:
        where += " AND source = ?"
        params.append(source)
    ids = [
        int(r[0])
        for r in conn.execute(
            f"SELECT id FROM search_items {where} ORDER BY id DESC LIMIT {WARM_SCAN}", params
        )
    ]
    if not ids:
        return None
    todo = [i for i in ids if (i, 1) not in cache.tokens_at or (i, 1) not in cache.redacted]
    todo = todo[:limit]
    # Rows are kept for the searches to come while they fit beside what searches cached.
    keep = cache if len(cache.rows) + len(todo) <= sc.MAX_ROWS else None
    rows = list(sr.fetch_rows(conn, todo, keep).values()) if todo else []
    fits: list[tuple[Any, ...]] = []
    planned = 0
    for row in rows:
        planned += sum(map(len, sr.field_texts(row))) + len(str(row[5]))
        if not cache.has_room(planned, entries=6 * (len(fits) + 1)):
            break
        fits.append(row)
    sr.analyse(conn, cache, fits)  # one batch of stems for the slice
    for row in fits:  # what a hit shows: title, body, source (``_render_hits``)
        for field, text in ((0, row[3]), (1, row[4]), (2, row[5])):
            _redacted(cache, int(row[0]), field, str(text))
    if keep is not None:  # the neighbours a search of this scope would look up
        where, params = _filter_sql(store, source, None, None, None, None, None, None)
        chunks = [int(r[0]) for r in fits if r[1] == "chunk"]
        _adjacent_chunks(conn, chunks, where, params, cache.neighbours_for(where, params))
    cache.settle(conn)  # stemming wrote temporary tables only
    if len(fits) < len(rows):
        return None  # the cache is nearly full
    if len(todo) == limit and todo[-1] != ids[-1]:
        return todo[-1]  # ids after it in this scan are still to be looked at
    return ids[-1] if len(ids) == WARM_SCAN else None


# -- filters ------------------------------------------------------------------------------------


def _check_type(store: Database, type: str) -> None:
    """``NotFound`` for a type that no item has and that is no known type either (a typo);
    a known type (context type, event category, chunk kind) with no items finds nothing."""
    from ctxmode.core.models import CONTEXT_TYPES
    from ctxmode.search.chunking import CHUNK_KINDS
    from ctxmode.sessions.events import CATEGORIES

    if type in CONTEXT_TYPES or type in CATEGORIES or type in CHUNK_KINDS:
        return
    conn = store.conn
    if conn.execute("SELECT 1 FROM search_items WHERE type = ?", (type,)).fetchone() is None:
        known = [r[0] for r in conn.execute("SELECT DISTINCT type FROM search_items ORDER BY 1")]
        raise NotFound(
            f"no searchable item has type {sr.clip(type, 80)!r}; types in this store: "
            + (", ".join(known) if known else "none (nothing is indexed yet)")
        )


def _filter_sql(
    store: Database,
    source: str | None,
    type: str | None,
    session_id: str | None,
    task_id: int | None,
    file_path: str | None,
    since: int | None,
    until: int | None,
) -> tuple[str, list[Any]]:
    """SQL conditions on ``search_items s`` (a leading `` AND `` per condition) and parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if source is not None:
        parts.append("s.source = ?")
        params.append(source)
    if type is not None:
        _check_type(store, type)
        parts.append("s.type = ?")
        params.append(type)
    if session_id is not None:
        parts.append("s.session_id = ?")
        params.append(session_id)
    if task_id is not None:
        from ctxmode.knowledge.contexts import _require_task

        _require_task(store.conn, int(task_id))
        parts.append(
            "s.item_kind = 'context' AND s.ref_id IN "
            "(SELECT context_id FROM context_task_map WHERE task_id = ?)"
        )
        params.append(int(task_id))
    if file_path is not None:
        from ctxmode.knowledge.contexts import normalize_path

        rel = normalize_path(store, file_path)
        # A folder matches the contexts of every file below it.
        parts.append(
            "s.item_kind = 'context' AND s.ref_id IN (SELECT m.context_id FROM context_file_map m "
            "JOIN files f ON f.id = m.file_id WHERE f.path = ? OR substr(f.path, 1, ?) = ?)"
        )
        params.extend([rel, len(rel) + 1, rel.rstrip("/") + "/"])
    for name, value in (("since", since), ("until", until)):
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInput(f"{name} must be Unix seconds (an integer), got {value!r}")
        if not config.SQLITE_INT_MIN <= value <= config.SQLITE_INT_MAX:
            raise InvalidInput(f"{name} {value} is out of range; pass Unix seconds")
    if since is not None:
        parts.append("s.created_at >= ?")
        params.append(since)
    if until is not None:
        parts.append("s.created_at <= ?")
        params.append(until)
    return "".join(f" AND ({p})" for p in parts), params


# -- neighbours and counts ----------------------------------------------------------------------


def _adjacent_chunks(
    conn: sqlite3.Connection,
    ids: list[int],
    where: str,
    params: list[Any],
    known: dict[int, list[tuple[int, int]]],
) -> dict[int, list[tuple[int, int]]]:
    """``(row id, offset)`` of the chunks up to ``rank.NEIGHBOUR_SPAN`` places before
    (negative offset) and after each chunk in ``ids`` (same source and file) that pass the
    filters; ``known`` holds (and gets) the lists already read under these filters."""
    missing = [i for i in ids if i not in known]
    if missing:
        known.update(_read_adjacent(conn, missing, where, params))
    return {i: known[i] for i in ids if known[i]}


def _read_adjacent(
    conn: sqlite3.Connection, ids: list[int], where: str, params: list[Any]
) -> dict[int, list[tuple[int, int]]]:
    marks = ",".join("?" * len(ids))
    span = int(sr.NEIGHBOUR_SPAN)
    # "+a.item_kind": without the unary plus SQLite walks every chunk of the item_kind index
    # instead of looking the few seed ids up by primary key.
    sql = (
        "SELECT a.id, s.id, c2.ordinal - c.ordinal FROM search_items a "
        "JOIN chunks c ON +a.item_kind = 'chunk' AND c.id = a.ref_id "
        "JOIN chunks c2 ON c2.source_id = c.source_id AND c2.path IS c.path AND c2.id != c.id "
        f"AND c2.ordinal BETWEEN c.ordinal - {span} AND c.ordinal + {span} "
        "JOIN search_items s ON s.item_kind = 'chunk' AND s.ref_id = c2.id "
        f"WHERE a.id IN ({marks}){where}"
    )
    out: dict[int, list[tuple[int, int]]] = {i: [] for i in ids}
    for seed, neighbour, offset in conn.execute(sql, [*ids, *params]):
        out[int(seed)].append((int(neighbour), int(offset)))
    return out


def _document_frequencies(
    cache: sc.StoreCache, conn: sqlite3.Connection, parsed: sq.ParsedQuery, n_items: int
) -> dict[sq.Term, int]:
    """How many items hold each term (porter words; ``search_cjk`` rows for CJK bigrams)."""
    df: dict[sq.Term, int] = {}
    for term in parsed.terms:
        if term.cjk and len(term.text) == 1:
            df[term] = max(1, n_items // 10)  # a scan would cost more than the estimate is worth
            continue
        if term.cjk:
            df[term] = cache.doc_count(conn, "search_cjk", sq.quote(term.text))
        else:
            # The item's own text only: a word in a neighbour's text says little about it.
            df[term] = cache.doc_count(conn, "search_fts", sq.own_text(term))
    return df


# -- correction ---------------------------------------------------------------------------------


def _correct(
    cache: sc.StoreCache,
    conn: sqlite3.Connection,
    parsed: sq.ParsedQuery,
    df: dict[sq.Term, int],
    span: tuple[int, int] | None = None,
    max_edits: int = 2,
) -> sq.ParsedQuery | None:
    """The query with each unknown word replaced by its nearest indexed word, if any changed
    (``span``: the source filter's row ids, where a written word is looked for; at most
    ``max_edits`` edits, fewer for short words)."""

    def edits(word: str) -> int:
        return min(max_edits, sq.allowed_edits(word))

    unknown = tuple(
        t.text for t in parsed.terms if not t.cjk and df.get(t, 0) == 0 and edits(t.text) > 0
    )
    if not unknown:
        return None
    replacements: dict[str, str] = {}
    stems = sr.porter_of(conn, unknown)
    letters = {stem[0] for stem in stems if stem}
    vocab = cache.vocabulary(conn, letters=letters)
    for word, stem in zip(unknown, stems, strict=True):
        candidates = sq.nearest_terms(vocab, stem, edits(word))
        if not candidates and cache.vocab_stale:
            # the word may have just been written
            vocab = cache.vocabulary(conn, current=True, letters=letters)
            candidates = sq.nearest_terms(vocab, stem, edits(word))
        if candidates:
            surface = _surface_form(conn, candidates[0][2], word)
            # Stems are close more often than the words are ("prompted"/"promotions" are one
            # edit apart as "prompt"/"promot"): with a one-edit budget the words must be too.
            if max_edits > 1 or sq.edit_distance(word, surface, 1) <= 1:
                replacements[word] = surface
        else:
            near = _nearest_written_word(conn, word, edits(word), span)
            if near is not None:
                replacements[word] = near
    if not replacements:
        return None
    terms = tuple(
        t
        if t.cjk or t.text not in replacements
        else sq.Term(replacements[t.text], forms=forms_of(replacements[t.text]))
        for t in parsed.terms
    )
    text = " ".join(t.text for t in terms)
    return sq.ParsedQuery(text=text, terms=terms)


#: Items whose words ``_nearest_written_word`` compares with a typo, and the shortest typo
#: it looks at.
TYPO_ITEMS = 20
TYPO_MIN_LETTERS = 8


def _nearest_written_word(
    conn: sqlite3.Connection, word: str, limit: int, span: tuple[int, int] | None = None
) -> str | None:
    """The word as written in the index nearest to ``word``, found through shared trigrams.

    The vocabulary holds porter stems, so a typo in a suffix can sit farther from every stem
    than from the written word: "frobnicatr" is 3 edits from "frobnic" and 1 from
    "frobnicator". The items sharing most of the typo's trigrams hold the written word; their
    words of a similar length are compared with it, at most ``limit`` edits away (the most
    frequent wins a tie). Only for
    words of ``TYPO_MIN_LETTERS`` or more: shorter ones keep short suffixes, which the stems'
    comparison allows for, and the trigram query is the costly part of a correction.
    """
    if len(word) < TYPO_MIN_LETTERS or limit == 0:
        return None
    grams = sq.trigrams(word)
    band = f" AND search_trigram.rowid BETWEEN {span[0]} AND {span[1]}" if span else ""
    expression = " OR ".join(sq.quote(g) for g in dict.fromkeys(grams))
    rows = conn.execute(
        "SELECT s.title || ' ' || s.body FROM search_trigram JOIN search_items s "
        f"ON s.id = search_trigram.rowid WHERE search_trigram MATCH ?{band} "
        f"ORDER BY bm25(search_trigram) LIMIT {TYPO_ITEMS}",
        (expression,),
    ).fetchall()
    # Documents' words are in the name vocabulary (every word of LONG_WORD+ letters is a name);
    # ties go by name: the names' row ids follow the order an index happened to write them in.
    rows += conn.execute(
        "SELECT n.name FROM search_names_fts f JOIN search_names n ON n.id = f.rowid "
        "WHERE search_names_fts MATCH ? ORDER BY bm25(search_names_fts), n.name "
        f"LIMIT {TYPO_ITEMS}",
        (expression,),
    ).fetchall()
    counts = _word_counts(rows, lambda tok: abs(len(tok) - len(word)) <= limit and tok != word)
    scored = [
        (d, -n, w) for w, n in counts.items() if (d := sq.edit_distance(word, w, limit)) <= limit
    ]
    return min(scored)[2] if scored else None


def _word_counts(rows: list[Any], keep: Callable[[str], bool]) -> dict[str, int]:
    """How often each word that ``keep`` accepts occurs in the texts of ``rows`` (1-tuples)."""
    counts: dict[str, int] = {}
    for (text,) in rows:
        for tok in sq.tokens(str(text)):
            if keep(tok):
                counts[tok] = counts.get(tok, 0) + 1
    return counts


def _surface_form(conn: sqlite3.Connection, stem: str, typed: str) -> str:
    """A word as written in the indexed text whose porter stem is ``stem`` (else the stem):
    the one nearest to the ``typed`` word, then the most frequent ("curent" -> "current",
    not "currently", which has the same stem and was the more frequent form)."""
    rows = conn.execute(
        "SELECT s.title || ' ' || s.body FROM search_fts JOIN search_items s "
        "ON s.id = search_fts.rowid WHERE search_fts MATCH ? LIMIT 5",
        (sq.own_text(sq.Term(stem)),),
    ).fetchall()
    counts = _word_counts(rows, lambda tok: tok[:3] == stem[:3])
    far = len(typed) + 8
    words = sorted(counts, key=lambda w: (sq.edit_distance(typed, w, far), -counts[w], w))
    for word, word_stem in zip(words, sr.porter_of(conn, words), strict=True):
        if word_stem == stem:
            return word
    return stem


# -- rendering ----------------------------------------------------------------------------------


def _redacted(cache: sc.StoreCache, row_id: int, field: int, text: str) -> str:
    """``redact(text)`` for one field of an item, kept in the store's cache between queries."""
    key = (row_id, field)
    got = cache.redacted.get(key)
    if got is not None and got[0] == text:
        return got[1]
    out = redact(text)
    # Most texts hold no secret and ``redact`` returns the very same string, which the row and
    # the field's tokens already hold: only a redacted copy adds to the cache's size.
    cache.charge(0 if out is text else len(out))
    cache.redacted[key] = (text, out)
    return out


def _render_hits(
    cache: sc.StoreCache,
    parsed: sq.ParsedQuery,
    ranked: list[sr.Candidate],
    rows: dict[int, tuple[Any, ...]],
    limit: int,
    budget: int,
) -> tuple[list[Hit], bool]:
    hits: list[Hit] = []
    used = 0
    shown: dict[str, int] = {}  # normalised body -> index of its hit
    for cand in ranked:
        _rid, kind, ref_id, title, body, source, typ, created, superseded, *rest = rows[cand.row_id]
        row_id = cand.row_id
        same = _SPACE.sub(" ", str(body)).strip().lower()
        first = shown.get(same)
        if first is not None:
            # A repeated section, a file indexed twice: one hit, saying where else it is.
            hit = hits[first]
            if len(hit.also) < MAX_ALSO:
                place = f"{_PREFIX[str(kind)]}:{ref_id} ({sr.clip(str(title), 60)})"
                place = _redacted(cache, row_id, 3, place)
                hits[first] = replace(hit, also=(*hit.also, place))
                used += len(place) + 4
            continue
        if len(hits) == limit:
            return hits, True
        shown[same] = len(hits)
        title_text = sr.clip(_SPACE.sub(" ", _redacted(cache, row_id, 0, str(title))).strip(), 120)
        source_text = _redacted(cache, row_id, 2, str(source))
        snippet = sr.snippet_for(parsed, _redacted(cache, row_id, 1, str(body)))
        cost = len(title_text) + len(snippet) + len(source_text) + HIT_OVERHEAD
        if used + cost > budget:
            if hits:
                return hits, True
            snippet = sr.clip(snippet, max(0, budget - cost + len(snippet)))
            cost = budget
        used += cost
        hits.append(
            Hit(
                id=f"{_PREFIX[str(kind)]}:{ref_id}",
                kind=str(kind),
                title=title_text,
                source=source_text,
                type=str(typ),
                created_at=int(created),
                snippet=snippet,
                score=cand.score,
                superseded=superseded is not None,
                shared_by=rest[1] if len(rest) > 1 else None,
                matched=cand.coverage > 0,
            )
        )
    return hits, False
