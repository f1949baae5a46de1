"""The ranked lists a search starts from, and their reciprocal rank fusion.

Up to four lists of ``search_items`` row ids, best first, ``ARM_DEPTH`` deep:

- **porter**: BM25 (FTS5's ``bm25``) on ``search_fts``, the words and their irregular forms
  OR-ed; titles count ``TITLE_WEIGHT`` times the body, the neighbour ``context`` column
  ``CONTEXT_WEIGHT`` times;
- **trigram**: BM25 on ``search_trigram`` (substrings of Latin words), skipped when the porter
  list already fills the rerank pool;
- **bigram**: BM25 on ``search_cjk`` (``core.schema.m008_search_cjk``), the query's CJK
  bigrams OR-ed, titles weighted as in the porter list (CMRC 2018, bench/cmrc.py: R@5
  0.836 -> 0.995);
- **substring**: a scan for lone CJK characters (1-character runs: no bigram holds them).

``fuse`` adds ``weight / (RRF_K + rank)`` per list. With a ``source`` filter the full-text lists
only look at that source's row-id span (``source_span``).

**Per-word scores** (``word_scores``). FTS5's BM25 of an OR query is, for each row, the sum over
its phrases (in query order) of one phrase's BM25 term, and a phrase's term depends only on the
phrase, the row and table-wide counts (rows, tokens, rows holding the phrase). So the porter
list can be built from one cached list per word: each row's BM25 score for that word alone,
summed in the same order, gives the same double FTS5 computes for the whole query (floating
point addition in the same order; ties broken by row id, as FTS5 returns them). Checked on every
LoCoMo question (identical lists) and by a test against FTS5 on random queries. A word's list
costs one FTS5 query the first time; later queries with the word only add numbers: the porter
list of a LoCoMo question went from 2.6 ms (one FTS5 query) to 1.6 ms on first use and 0.8 ms
once its words are cached (an ad hoc script over all 1,536 questions). The lists are table-wide
counts, so they are dropped whenever the store changes (``cache``). They are used only
when the filters are none or a source whose row-id span holds no other source's items (the
common case: a document's chunks are written together); any other filter runs the one FTS5
query as before.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any

from ctxmode.core.errors import NotFound
from ctxmode.search import query as sq
from ctxmode.search import rank as sr

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.search.cache import StoreCache, WordScores

__all__ = [
    "ARM_DEPTH",
    "ARM_WEIGHTS",
    "BODY_WEIGHT",
    "CONTEXT_WEIGHT",
    "RRF_K",
    "TITLE_WEIGHT",
    "TRIGRAM_SKIP_MIN_DF",
    "fuse",
    "source_span",
    "trigram_skip",
]

RRF_K = 60
#: BM25 column weights (title, body): a word in the title counts this many times more.
TITLE_WEIGHT = 5.0
BODY_WEIGHT = 1.0
#: BM25 weight of the neighbour context column of ``search_fts`` (see
#: ``core.schema.m005_search_context``): words of the item just before count, but far less
#: than the item's own.
CONTEXT_WEIGHT = 0.3
#: Fusion weights of the ranked lists; porter words are the most precise signal.
ARM_WEIGHTS = {"porter": 1.0, "trigram": 0.6, "names": 0.6, "bigram": 1.0, "substring": 1.0}
#: Names of the vocabulary a substring query goes on with (the shortest: the closest to it).
NAMES_PER_QUERY = 48
#: A Latin word found as a whole word in this many items is left out of the trigram list: the
#: porter list already ranks that many items for it, and ranking its trigram phrase over every
#: item holding it was the costliest query of a search (LoCoMo and DevBench recall unchanged).
TRIGRAM_SKIP_MIN_DF = 50
#: Candidates fetched from each ranked list.
ARM_DEPTH = 200

_PORTER_WEIGHTS = f"{TITLE_WEIGHT}, {BODY_WEIGHT}, {CONTEXT_WEIGHT}"


def source_span(
    cache: StoreCache, conn: sqlite3.Connection, source: str | None
) -> tuple[tuple[int, int] | None, bool]:
    """The lowest and highest row id of a source's items (``None`` without a source filter),
    and whether no other source's item lies between them; ``NotFound`` when no item has that
    source.

    A source's items are mostly written together (a document's chunks), so their row ids form
    a narrow band; passed to FTS5 as a rowid range it skips the other sources' postings instead
    of scoring every match and dropping it in the join (the porter list of a LoCoMo query went
    from 2.35 to 1.5 ms, timed by an ad hoc script). It only narrows: the exact
    ``s.source = ?`` filter still applies, except to cached per-word lists of a band that holds
    this source alone. Kept per store version.
    """
    if source is None:
        return None, True
    found = cache.spans.get(source)
    if found is None:
        lo, hi, n = conn.execute(
            "SELECT min(id), max(id), count(*) FROM search_items WHERE source = ?", (source,)
        ).fetchone()
        if lo is None:
            raise NotFound(
                f"no searchable item has source {sr.clip(source, 80)!r} (labels match exactly; "
                "contexts are 'knowledge', session events 'events')",
                hint="list_sources",
            )
        (in_band,) = conn.execute(
            "SELECT count(*) FROM search_items WHERE id BETWEEN ? AND ?", (lo, hi)
        ).fetchone()
        found = (int(lo), int(hi), int(in_band) == int(n))
        cache.spans[source] = found
    lo, hi, alone = found
    return (lo, hi), alone


def fts_list(
    conn: sqlite3.Connection,
    table: str,
    expression: str,
    where: str,
    params: list[Any],
    span: tuple[int, int] | None,
) -> list[int]:
    """Row ids matching ``expression`` in ``table`` and the filters, best BM25 first."""
    weights = f"{TITLE_WEIGHT}, {BODY_WEIGHT}"
    if table == "search_fts":
        weights = _PORTER_WEIGHTS
    band = f" AND {table}.rowid BETWEEN {span[0]} AND {span[1]}" if span else ""
    sql = (
        f"SELECT s.id FROM {table} JOIN search_items s ON s.id = {table}.rowid "
        f"WHERE {table} MATCH ?{band}{where} "
        f"ORDER BY bm25({table}, {weights}) LIMIT {ARM_DEPTH}"
    )
    return [int(r[0]) for r in conn.execute(sql, [expression, *params])]


def matching_names(conn: sqlite3.Connection, words: list[str], limit: int) -> list[str]:
    """Names of the document vocabulary (``search_names``) holding one of ``words``, shortest
    first, at most ``limit``: from its trigram index, and from a scan of the names an indexer
    has added but not yet indexed (``search.writer.index_fresh_names``)."""
    expression = " OR ".join(sq.quote(w) for w in words)
    found = {
        str(r[0])
        for r in conn.execute(
            "SELECT n.name FROM search_names_fts f JOIN search_names n ON n.id = f.rowid "
            "WHERE search_names_fts MATCH ?",
            (expression,),
        )
    }
    like = " OR ".join("name LIKE ? ESCAPE '\\'" for _ in words)
    patterns = [
        "%" + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for w in words
    ]
    found.update(
        str(r[0])
        for r in conn.execute(
            f"SELECT name FROM search_names WHERE fresh = 1 AND ({like})", patterns
        )
    )
    return sorted(found, key=lambda n: (len(n), n))[:limit]


def names_list(
    conn: sqlite3.Connection,
    words: list[str],
    where: str,
    params: list[Any],
    span: tuple[int, int] | None,
) -> list[int]:
    """Document chunks holding a name that holds one of ``words``, best BM25 first: the
    trigram list of documents (``core.index_schema.m015_name_vocabulary``).

    The names come from the vocabulary; the items holding them from ``search_fts`` (a name is
    a phrase of its porter tokens, in the title or the body) and, for names written inside
    CJK text ("FastAPI框架"), from ``search_cjk``.
    """
    found = matching_names(conn, words, NAMES_PER_QUERY)
    if not found:
        return []
    phrases = " OR ".join(sq.quote(n) for n in found)
    ids = fts_list(conn, "search_fts", "{title body} : (" + phrases + ")", where, params, span)
    if _has_cjk_items(conn):
        seen = set(ids)
        more = fts_list(conn, "search_cjk", phrases, where, params, span)
        ids.extend(i for i in more if i not in seen)
    return ids[:ARM_DEPTH]


def _has_cjk_items(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM search_cjk LIMIT 1").fetchone() is not None


def word_scores(
    cache: StoreCache, conn: sqlite3.Connection, word: str, span: tuple[int, int] | None
) -> WordScores:
    """Row ids of ``span`` (or the whole table) holding ``word`` and the BM25 score each has
    for that word alone, as FTS5 computes it on ``search_fts``; cached until the store
    changes."""
    key = (word, span)
    found = cache.word_scores.get(key)
    if found is None:
        band = " AND rowid BETWEEN ? AND ?" if span else ""
        rows = conn.execute(
            f"SELECT rowid, bm25(search_fts, {_PORTER_WEIGHTS}) FROM search_fts "
            f"WHERE search_fts MATCH ?{band}",
            [sq.quote(word), *(span or ())],
        ).fetchall()
        found = (array("q", [r[0] for r in rows]), array("d", [r[1] for r in rows]))
        cache.keep_word_scores(key, found)
    return found


def porter_list(
    cache: StoreCache, conn: sqlite3.Connection, words: list[str], span: tuple[int, int] | None
) -> list[int]:
    """What ``fts_list`` returns for the OR of ``words`` on ``search_fts`` without filters
    (beyond ``span``), from per-word scores (see the module docstring)."""
    total: dict[int, float] = {}
    for word in words:
        ids, scores = word_scores(cache, conn, word, span)
        if not total:
            total = dict(zip(ids, scores, strict=True))
            continue
        get = total.get
        for row_id, score in zip(ids, scores, strict=True):
            total[row_id] = get(row_id, 0.0) + score
    # FTS5 scores are negative (better = lower); equal scores come back in row-id order.
    best = sorted(zip(total.values(), total.keys(), strict=True))[:ARM_DEPTH]
    return [row_id for _, row_id in best]


def substring_list(
    conn: sqlite3.Connection, terms: tuple[str, ...], where: str, params: list[Any]
) -> list[int]:
    """Items containing short CJK terms, most terms (title counting double) first."""
    score = " + ".join("(instr(s.title, ?) > 0) * 2 + (instr(s.body, ?) > 0)" for _ in terms)
    any_match = " OR ".join("instr(s.title, ?) > 0 OR instr(s.body, ?) > 0" for _ in terms)
    term_params = [t for t in terms for _ in (0, 1)]
    sql = (
        f"SELECT s.id, {score} AS sc FROM search_items s WHERE ({any_match}){where} "
        f"ORDER BY sc DESC, s.created_at DESC, s.id DESC LIMIT {ARM_DEPTH}"
    )
    return [int(r[0]) for r in conn.execute(sql, [*term_params, *term_params, *params])]


def trigram_skip(parsed: sq.ParsedQuery, df: dict[sq.Term, int]) -> frozenset[str]:
    """Common Latin words: found as whole words in ``TRIGRAM_SKIP_MIN_DF`` items or more.

    Phrase-matching the trigrams of a common word is the most expensive query of a search, and
    for such a word the trigram list mostly repeats the porter list; rarer words keep their
    substring matches ("tokenizer" inside "pretokenizers").
    """
    return frozenset(
        t.text for t in parsed.terms if not t.cjk and df.get(t, 0) >= TRIGRAM_SKIP_MIN_DF
    )


def fuse(
    conn: sqlite3.Connection,
    parsed: sq.ParsedQuery,
    where: str,
    params: list[Any],
    span: tuple[int, int] | None = None,
    skip: frozenset[str] = frozenset(),
    cache: StoreCache | None = None,
) -> dict[int, float]:
    """Reciprocal rank fusion: each list adds ``weight / (RRF_K + rank)`` to an item.

    Latin words in ``skip`` stay out of the trigram list (see ``trigram_skip``), which only
    runs when the porter list leaves room in the rerank pool; ``span`` (``source_span``)
    bounds the row ids the full-text lists look at. With ``cache``, the caller vouches that
    ``span`` alone stands for the filters (``where`` is ignored by the porter list, which is
    summed from cached per-word scores).
    """
    arms: list[tuple[str, list[int]]] = []
    words = sq.porter_words(parsed)
    if words and cache is not None:
        arms.append(("porter", porter_list(cache, conn, words, span)))
    elif words:
        porter = sq.porter_expression(parsed) or ""
        arms.append(("porter", fts_list(conn, "search_fts", porter, where, params, span)))
    trigram = sq.trigram_expression(parsed, skip)
    if trigram and not (arms and len(arms[0][1]) >= sr.RERANK_POOL):
        # With a full pool of porter matches, an item found only by the trigram list cannot
        # enter the rerank (its best fused score, 0.6 / 61, is below the 30th porter rank's
        # 1 / 90): the list would only reorder porter matches, at the cost of the search's
        # most expensive query. LoCoMo R@5 0.691 -> 0.692, DevBench unchanged.
        arms.append(("trigram", fts_list(conn, "search_trigram", trigram, where, params, span)))
        found = names_list(conn, sq.trigram_words(parsed, skip), where, params, span)
        if found:
            arms.append(("names", found))
    bigram = sq.bigram_expression(parsed)
    if bigram:
        arms.append(("bigram", fts_list(conn, "search_cjk", bigram, where, params, span)))
    short = sq.short_cjk_terms(parsed)
    if short:
        arms.append(("substring", substring_list(conn, short, where, params)))
    fused: dict[int, float] = {}
    for arm, ids in arms:
        weight = ARM_WEIGHTS[arm]
        for rank, row_id in enumerate(ids, start=1):
            fused[row_id] = fused.get(row_id, 0.0) + weight / (RRF_K + rank)
    return fused
