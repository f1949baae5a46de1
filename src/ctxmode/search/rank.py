"""Rerank and snippets: the Python side of search, over a few dozen fused candidates.

The score of a candidate mixes its normalised fused rank with features computed on its text:
IDF-weighted coverage of the query terms (terms found only in the item's neighbour context
count ``W_CONTEXT`` as much), the same for the title, the largest IDF share of distinct terms
within ``PROXIMITY_WINDOW`` tokens, and the share of consecutive query words found next to each
other. Two features read the query as a question: query words that an item holds only inside
its own questions ("What inspired you?") lose ``W_ASKED`` of their weight, and that item lends
its reply (the next chunk) ``NEIGHBOUR_SHARE_REPLY`` more; a question about time ("When did
...", ``asks_when``) adds ``W_WHEN`` to items that say when ("last week", "in May").
Words are compared through the index's own porter stems (``query.light_stem`` for a
token it does not know) so that "painting" meets "paint"; CJK terms are compared as substrings.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxmode.search import query as sq
from ctxmode.search.cache import FieldTokens

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.search.cache import StoreCache

#: Rerank mix: fused rank, term coverage, title coverage, proximity, phrase adjacency.
W_FUSED = 0.5
W_COVERAGE = 2.0
W_TITLE = 2.0
W_PROXIMITY = 0.5
W_PHRASE = 0.3
#: Coverage by words found only in the neighbour context (the item just before) counts this
#: share of coverage by the item's own words.
W_CONTEXT = 0.6
#: Fused candidates that get reranked (bench/locomo.py R@5 0.718 at 20, 25 and 30, DevBench the
#: same, but bench/search.py's corpus lost 0.007 at 25; each one costs a cold search the
#: analysis of its fields).
RERANK_POOL = 30
#: The best candidates lend this share of their score to adjacent chunks of the same source.
NEIGHBOUR_SEEDS = 15
NEIGHBOUR_SHARE = 0.3
#: The share lent to the chunk just after a seed (the reply to a question, the paragraph that
#: follows a heading's first lines).
NEIGHBOUR_SHARE_NEXT = 0.3
#: What a seed that asks about the query's words ("What inspired you?", see ``W_ASKED``) lends
#: on top to the chunk just after it, its likely answer.
NEIGHBOUR_SHARE_REPLY = 0.2
#: Chunks this many places before and after a seed are its neighbours; the share lent to one
#: ``k`` places away is divided by ``k``.
NEIGHBOUR_SPAN = 2
#: Query words matched only inside questions of an item ("What inspired you?") count this much
#: less coverage: an item that asks about something rarely holds the answer, the one that says
#: it does.
W_ASKED = 1.0
#: Item types whose "?" is syntax (``a ? b : c``, a URL's query string), not a question:
#: ``W_ASKED`` leaves them alone.
NOT_PROSE = frozenset({"code", "json"})
#: A question about time ("when did ...", "how long ...", "what year ...") adds this to items
#: that say when something happened ("last week", "yesterday", "in May", "2021").
W_WHEN = 0.2
#: Tokens within which matched terms count as "near" each other.
PROXIMITY_WINDOW = 12
#: Superseded contexts keep this share of their score (they stay findable, below live ones).
SUPERSEDED_FACTOR = 0.5
SNIPPET_CHARS = 180
#: Matches marked in one snippet (each adds four characters of markup).
MAX_HIGHLIGHTS = 6
#: Latin words this long also match inside longer words (as the trigram list finds them).
SUBSTRING_MIN = 4
_SPACE = re.compile(r"\s+")


@dataclass
class Candidate:
    """A fused candidate and its rerank score."""

    row_id: int
    fused: float = 0.0
    score: float = 0.0
    coverage: float = 0.0
    #: What ``W_ASKED`` took off the score: the item still lends its full score to neighbours
    #: (the reply to a question is the likely answer).
    asked: float = 0.0

    @property
    def lending(self) -> float:
        """The score this candidate lends from when it is a seed."""
        return self.score + self.asked


def idf(df: int, n_items: int) -> float:
    """BM25-style inverse document frequency (never negative).

    A word found nowhere counts as if found once: otherwise one unknown phrasing word ("choose")
    would outweigh every word that did match and hide a good hit behind "no confident match".
    """
    df = max(df, 1)
    return math.log(1.0 + (n_items - df + 0.5) / (df + 0.5))


ROW_SQL = (
    "SELECT s.id, s.item_kind, s.ref_id, s.title, s.body, s.source, s.type, s.created_at, "
    "c.superseded_by, s.context, "
    # Whose a teammate's shared context is (``exchange.team`` marks shared ones).
    "CASE WHEN json_extract(c.metadata, '$.shared_id') IS NOT NULL "
    "THEN COALESCE(json_extract(c.metadata, '$.shared_by'), c.owner) END "
    "FROM search_items s "
    "LEFT JOIN contexts c ON s.item_kind = 'context' AND c.id = s.ref_id"
)


#: Word -> porter stem, as the index computes it, and stem -> the words seen with it; shared by
#: every store (the stemmer is fixed) and emptied when they grow past ``MAX_STEMMED_WORDS``,
#: which starts a new generation (``FieldTokens.stemmed`` names the one it was stemmed in).
_PORTER: dict[str, str] = {}
_SURFACES: dict[str, set[str]] = {}
_GENERATION = [0]
MAX_STEMMED_WORDS = 200_000


def porter_of(conn: sqlite3.Connection, words: Sequence[str]) -> list[str]:
    """The index's porter stem of each of ``words`` (a word it drops stands for itself)."""
    _learn_stems(conn, set(words))
    return [_PORTER.get(w, w) for w in words]


def _learn_stems(conn: sqlite3.Connection, words: set[str]) -> None:
    """Stem the ``words`` not stemmed yet, in one batch (``query.porter_stems``)."""
    # A C-level filter over ``words``: ``words - _PORTER.keys()`` would copy every known word.
    new = set(itertools.filterfalse(_PORTER.__contains__, words))
    if not new:
        return
    if len(_PORTER) + len(new) > MAX_STEMMED_WORDS:
        _PORTER.clear()
        _SURFACES.clear()
        _GENERATION[0] += 1
        new = set(words)
    ordered = sorted(new)
    got = sq.porter_stems(conn, ordered)
    for word in ordered:
        stem = _PORTER[word] = got.get(word, word)
        _SURFACES.setdefault(stem, set()).add(word)


def rerank(
    conn: sqlite3.Connection,
    parsed: sq.ParsedQuery,
    fused: dict[int, float],
    df: dict[sq.Term, int],
    n_items: int,
    neighbours: Callable[[list[int]], dict[int, list[tuple[int, int]]]] | None,
    cache: StoreCache,
) -> tuple[list[Candidate], dict[int, tuple[Any, ...]]]:
    """Score the best fused candidates on coverage, title, proximity and adjacency.

    With ``neighbours`` (seed row ids -> adjacent row ids), each of the ``NEIGHBOUR_SEEDS``
    best candidates lends ``NEIGHBOUR_SHARE`` of its score to its neighbours, which join the
    pool if they were not in it: the next paragraph of a matching section, or the reply to a
    matching question, is often the piece that holds the answer.
    """
    if not fused:
        return [], {}
    pool = sorted(fused, key=lambda i: (-fused[i], i))[:RERANK_POOL]
    scorer = _Scorer(conn, parsed, df, n_items, max(fused.values()), cache)
    rows = fetch_rows(conn, pool, cache)
    scorer.prepare(rows)
    scored = {i: scorer.score(i, fused[i], rows[i]) for i in pool if i in rows}
    if neighbours is not None and scored:
        seeds = sorted(scored.values(), key=lambda c: (-c.lending, c.row_id))[:NEIGHBOUR_SEEDS]
        links = neighbours([c.row_id for c in seeds])
        fresh = sorted({n for ns in links.values() for n, _ in ns} - scored.keys())
        rows.update(fetch_rows(conn, fresh, cache))
        scorer.prepare({n: rows[n] for n in fresh if n in rows})
        for n in fresh:
            if n in rows:
                scored[n] = scorer.score(n, fused.get(n, 0.0), rows[n])
        lent: dict[int, float] = {}
        for seed in seeds:
            for n, offset in links.get(seed.row_id, ()):
                share = (NEIGHBOUR_SHARE_NEXT if offset > 0 else NEIGHBOUR_SHARE) / abs(offset)
                if offset == 1 and seed.asked:
                    share += NEIGHBOUR_SHARE_REPLY
                lent[n] = max(lent.get(n, 0.0), share * seed.lending)
        for n, bonus in lent.items():
            if n in scored:
                scored[n].score += bonus
    out = sorted(scored.values(), key=lambda c: (-c.score, c.row_id))
    return out, rows


def field_texts(row: tuple[Any, ...]) -> tuple[str, str, str]:
    """Title, body and neighbour context of a ``ROW_SQL`` row."""
    return str(row[3]), str(row[4]), str(row[9] or "")


def fetch_rows(
    conn: sqlite3.Connection, ids: list[int], cache: StoreCache | None = None
) -> dict[int, tuple[Any, ...]]:
    """``ROW_SQL`` rows of the items ``ids`` (those that exist), by row id, in ``ids`` order;
    with ``cache``, rows read since the store last changed are not read again."""
    known = cache.rows if cache is not None else {}
    found = {i: row for i in ids if (row := known.get(i)) is not None}
    missing = [i for i in ids if i not in found]
    if missing:
        marks = ",".join("?" * len(missing))
        sql = ROW_SQL + f" WHERE s.id IN ({marks})"
        fetched = {int(r[0]): tuple(r) for r in conn.execute(sql, missing)}
        if cache is not None:
            cache.keep_rows(fetched)
        found.update(fetched)
    return {i: found[i] for i in ids if i in found}


def field_tokens(cache: StoreCache, row_id: int, field: int, text: str) -> FieldTokens:
    """``text`` (field ``field`` of item ``row_id``: 0 title, 1 body, 2 context) lowercased and
    cut into tokens (and its questions found, but for the context), kept in the store's cache
    between queries while the item holds that text."""
    key = (row_id, field)
    got = cache.tokens_at.get(key)
    if got is None or got.text != text:
        lowered = text.lower()
        # Interned: a cache full of fields holds each distinct word once, not once per use
        # (LoCoMo's 5,882 turns warmed: +45 MB of process memory without, see search.warm).
        tokens = tuple(map(sys.intern, sq.lowered_tokens(lowered)))
        asked = _questions(lowered) if field != 2 and "?" in text else ()
        got = FieldTokens(text, lowered, tokens, asked)
        cache.charge(len(text))  # may empty the cache: store after it
        cache.tokens_at[key] = got
    return got


def row_fields(
    cache: StoreCache, row: tuple[Any, ...]
) -> tuple[FieldTokens, FieldTokens, FieldTokens]:
    """The title, body and context of a ``ROW_SQL`` row, cut into tokens (``field_tokens``)."""
    row_id = int(row[0])
    title, body, context = field_texts(row)
    return (
        field_tokens(cache, row_id, 0, title),
        field_tokens(cache, row_id, 1, body),
        field_tokens(cache, row_id, 2, context),
    )


def analyse(
    conn: sqlite3.Connection, cache: StoreCache, rows: Iterable[tuple[Any, ...]]
) -> list[tuple[FieldTokens, FieldTokens, FieldTokens]]:
    """What the rerank works out on first touching the items of ``rows`` (``ROW_SQL`` rows),
    done ahead: their fields cut into tokens, and the tokens of fields not stemmed yet stemmed
    in one batch. Returns each row's fields."""
    out = [row_fields(cache, row) for row in rows]
    new = [f for fields in out for f in fields if f.stemmed != _GENERATION[0]]
    if new:
        _learn_stems(conn, set().union(*(f.tokens for f in new)))
        for f in new:
            f.stemmed = _GENERATION[0]
    return out


class _Scorer:
    """The per-query part of the rerank: term weights and stems, computed once.

    Terms are numbered (their order in the query) so that the per-candidate work is list and
    dict lookups on small ints. A candidate's fields are cut into tokens once (kept in the
    store's cache between queries); every token is stemmed once per process (``_PORTER``), and
    a query finds the tokens that stand for its terms through the words known per stem
    (``_SURFACES``), in ``hit_of``, so the per-token work is one dict lookup.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        parsed: sq.ParsedQuery,
        df: dict[sq.Term, int],
        n_items: int,
        top: float,
        cache: StoreCache,
    ) -> None:
        self.parsed = parsed
        self.conn = conn
        self.cache = cache
        terms = parsed.terms
        self.weights = [idf(df.get(t, 0), n_items) for t in terms]
        self.total = sum(self.weights) or 1.0
        _learn_stems(conn, {w for t in terms if not t.cjk for w in t.spellings})
        self.by_stem = {
            _PORTER.get(w, w): i for i, t in enumerate(terms) if not t.cjk for w in t.spellings
        }
        #: Token -> the term it stands for: every word known to stem like a query word.
        self.hit_of: dict[str, int] = {}
        #: Rows whose tokens went through ``_learn`` (``prepare``): their title, body and
        #: context fields.
        self.prepared: dict[int, tuple[FieldTokens, FieldTokens, FieldTokens]] = {}
        #: Terms found by substring when not found as a word: CJK runs, and Latin words of
        #: ``SUBSTRING_MIN``+ letters (what the trigram list finds: "pool" in "PoolManager").
        self.substring = [
            (i, t.text, t.cjk) for i, t in enumerate(terms) if t.cjk or len(t.text) >= SUBSTRING_MIN
        ]
        words = [i for i, t in enumerate(terms) if not t.cjk]
        self.pairs = list(zip(words, words[1:], strict=False))
        self.top = top or 1.0
        self.when = asks_when(parsed.text)

    def score(self, row_id: int, fused: float, row: tuple[Any, ...]) -> Candidate:
        fields = self.prepared.get(row_id)
        if fields is None:
            self.prepare({row_id: row})
            fields = self.prepared[row_id]
        head, main, around = fields
        body, context = main.text, around.text
        in_title, title_positions = self._matched(head)
        in_body, positions = self._matched(main)
        weights, total = self.weights, self.total
        cand = Candidate(row_id=row_id, fused=fused)
        own = in_title | in_body
        cand.coverage = sum(weights[t] for t in own) / total
        title_cov = sum(weights[t] for t in in_title) / total
        context_cov = 0.0
        if context:
            in_context = self._present(around) - own
            context_cov = sum(weights[t] for t in in_context) / total
        cand.score = (
            W_FUSED * fused / self.top
            + W_COVERAGE * (cand.coverage + W_CONTEXT * context_cov)
            + W_TITLE * title_cov
            + W_PROXIMITY * self._near(positions, in_title)
            + W_PHRASE * self._adjacency(positions)
        )
        if self.when:
            if main.says_when is None:
                main.says_when = bool(_WHEN_TEXT.search(body))
            if main.says_when:
                cand.score += W_WHEN
        if W_ASKED and row[6] not in NOT_PROSE and (main.asked or head.asked):
            # Words of the query that the item only asks about, in its title and its body.
            matched = positions.keys() | title_positions.keys()
            asked = _unstated(main.asked, positions, matched) & _unstated(
                head.asked, title_positions, matched
            )
            cand.asked = W_ASKED * sum(weights[t] for t in asked) / total
            cand.score -= cand.asked
        if row[8] is not None:
            cand.score *= SUPERSEDED_FACTOR
        return cand

    def prepare(self, rows: dict[int, tuple[Any, ...]]) -> None:
        """Tokenise the rows' fields (title, body, context), stem the tokens never stemmed, and
        map to the query's terms every word known to stem like one of them (a field's tokens
        are all stemmed by now, so that covers every token that can match)."""
        todo = [(row_id, row) for row_id, row in rows.items() if row_id not in self.prepared]
        if not todo:
            return
        for (row_id, _row), fields in zip(
            todo, analyse(self.conn, self.cache, (row for _, row in todo)), strict=True
        ):
            self.prepared[row_id] = fields
        hit_of = self.hit_of
        for stem, term in self.by_stem.items():
            for tok in _SURFACES.get(stem, ()):
                hit_of[tok] = term

    def _matched(self, field: FieldTokens) -> tuple[set[int], dict[int, list[int]]]:
        """Query terms present in a field and their token positions (Latin words only)."""
        positions: dict[int, list[int]] = {}
        hit_of = self.hit_of
        tokens = field.tokens
        # C loops: the query's tokens in the field (most fields hold none), then where each one
        # is (``tuple.index``), instead of a Python loop over every token of the field. Terms
        # enter ``positions`` in the order they first occur, whatever the hash seed.
        for tok in sorted(hit_of.keys() & tokens, key=tokens.index):
            at = positions.setdefault(hit_of[tok], [])
            pos = tokens.index(tok)
            while True:
                at.append(pos)
                try:
                    pos = tokens.index(tok, pos + 1)
                except ValueError:
                    break
        for at in positions.values():
            at.sort()  # several tokens of one term ("paint", "painting") interleave
        return self._with_substrings(set(positions), field.lowered), positions

    def _present(self, field: FieldTokens) -> set[int]:
        """Query terms present in a field, without positions."""
        hit_of = self.hit_of
        found = {hit_of[tok] for tok in hit_of.keys() & field.tokens}
        return self._with_substrings(found, field.lowered)

    def _with_substrings(self, found: set[int], lowered: str) -> set[int]:
        for term, needle, _cjk in self.substring:
            if term not in found and needle in lowered:
                found.add(term)
        return found

    def _near(self, positions: dict[int, list[int]], in_title: set[int]) -> float:
        """``_proximity`` in the body, the title's terms counting as near every body word.

        A title names what its body is about ("D3:7 · Caroline · 9 June", a markdown heading),
        so a query word in the title and another in the body are as related as two words side
        by side. LoCoMo (audited): R@1 0.458 -> 0.471, MRR 0.635 -> 0.647, R@5 0.718 -> 0.721,
        up on both halves and in every category; DevBench unchanged.
        """
        if not in_title:
            return _proximity(positions, self.weights, self.total)
        rest = {t: ps for t, ps in positions.items() if t not in in_title}
        if not rest:
            return 0.0
        extra = sum(self.weights[t] for t in in_title)
        return _proximity(rest, self.weights, self.total, extra)

    def _adjacency(self, positions: dict[int, list[int]]) -> float:
        """Share of consecutive query word pairs found next to each other (one gap allowed)."""
        if not self.pairs:
            return 0.0
        hits = 0
        for a, b in self.pairs:
            pa, pb = positions.get(a), positions.get(b)
            if pa and pb:
                set_b = set(pb)
                if any(p + 1 in set_b or p + 2 in set_b for p in pa):
                    hits += 1
        return hits / len(self.pairs)


_WHEN_QUERY = re.compile(
    r"^\W*(?:when\b|how\s+long\b|since\s+when\b|(?:what|which)\s+(?:year|month|day|date|time)\b)",
    re.IGNORECASE,
)
#: "may" is left out: far more often the verb than the month (LoCoMo recall is the same).
_MONTHS = "january february march april june july august september october november december"
_WHEN_WORDS = (
    "yesterday today tonight tomorrow ago recently lately earlier week weeks weekend weekends "
    "month months year years monday tuesday wednesday thursday friday saturday sunday "
    "summer winter spring autumn morning evening night " + _MONTHS
)
_WHEN_TEXT = re.compile(
    r"\b(?:" + "|".join(_WHEN_WORDS.split()) + r"|(?:19|20)\d\d|\d{1,2}(?:st|nd|rd|th))\b",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """Whether ``query`` is a question about time ("When did ...", "How long has ...")."""
    return bool(_WHEN_QUERY.match(query))


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


def _questions(lowered: str) -> tuple[tuple[int, int], ...]:
    """Token ranges ``[lo, hi)`` of the sentences of ``lowered`` that end in "?".

    The text is cut into sentences at ``.``, ``!`` and ``?``; those characters separate tokens
    too, so counting each sentence's tokens gives the positions the tokenisation gave.
    """
    asked: list[tuple[int, int]] = []
    at = 0
    for m in _SENTENCE.finditer(lowered):
        n = len(sq.lowered_tokens(m.group(0)))
        if "?" in m.group(0)[-3:] and n:
            asked.append((at, at + n))
        at += n
    return tuple(asked)


def _unstated(
    asked: tuple[tuple[int, int], ...], positions: dict[int, list[int]], terms: set[int]
) -> set[int]:
    """The ``terms`` that a field does not state: absent from it, or only inside its questions
    (``asked``, from ``_questions``); ``positions`` are the terms' token positions in it."""
    out = terms - positions.keys()
    if not asked:
        return out
    for t, ps in positions.items():
        if t in terms and all(any(lo <= p < hi for lo, hi in asked) for p in ps):
            out.add(t)
    return out


def _proximity(
    positions: dict[int, list[int]], weights: list[float], total: float, extra: float = 0.0
) -> float:
    """Largest IDF share of distinct terms found within ``PROXIMITY_WINDOW`` tokens (``extra``:
    the weight of terms near every position, which makes one term in a window enough)."""
    need = 1 if extra else 2
    if len(positions) < need:
        return 0.0
    events = sorted((p, t) for t, ps in positions.items() for p in ps)
    best = 0.0
    start = 0
    inside: dict[int, int] = {}
    for pos, term in events:
        inside[term] = inside.get(term, 0) + 1
        while pos - events[start][0] >= PROXIMITY_WINDOW:
            old = events[start][1]
            inside[old] -= 1
            if inside[old] == 0:
                del inside[old]
            start += 1
        if len(inside) >= need:
            best = max(best, (extra + sum(weights[t] for t in inside)) / total)
    return best


def clip(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= n else text[: max(0, n - 1)] + "…"


def snippet_for(parsed: sq.ParsedQuery, text: str, width: int = SNIPPET_CHARS) -> str:
    """The window of ``text`` that covers the most distinct query terms (CJK bigrams each
    count), the tightest cluster of them first; matches in ``**bold**``."""
    flat = _SPACE.sub(" ", text).strip()
    found = _term_spans(parsed, flat)
    spans = _merged(found)
    if not spans:
        return clip(flat, width)
    # Window start: the match followed, within the part of the window shown after it, by the
    # most distinct terms, packed the tightest (the first such match wins a tie); one pass.
    reach = width - width // 4
    best_start, best = spans[0][0], (0, -reach)
    counts: dict[sq.Term, int] = {}
    j = 0
    for start, _end, term in found:
        while j < len(found) and found[j][0] - start < reach:
            counts[found[j][2]] = counts.get(found[j][2], 0) + 1
            j += 1
        key = (len(counts), start - found[j - 1][0])
        if key > best:
            best_start, best = start, key
        counts[term] -= 1
        if not counts[term]:
            del counts[term]
    best_start = next(s for s, e in spans if s <= best_start < e)  # its merged match
    lo = max(0, best_start - width // 4)
    hi = min(len(flat), lo + width)
    lo = max(0, min(lo, hi - width))
    # Bold already in the text is left alone: a match inside it gets no marks of its own,
    # which would cut the bold run into fragments ("**「**依赖注入**」**").
    bold = [(m.start(), m.end()) for m in _BOLD.finditer(flat)]
    shown = [
        (s, e)
        for s, e in spans
        if s >= lo and e <= hi and not any(bs <= s and e <= be for bs, be in bold)
    ]
    # The best cluster is marked first, then the matches just before it.
    after = [span for span in shown if span[0] >= best_start]
    before = [span for span in shown if span[0] < best_start]
    keep = set(after[:MAX_HIGHLIGHTS])
    keep.update(before[len(before) - max(0, MAX_HIGHLIGHTS - len(keep)) :])
    out: list[str] = ["…" if lo > 0 else ""]
    cursor = lo
    for s, e in shown:
        if (s, e) not in keep:
            continue
        out.append(flat[cursor:s])
        out.append(f"**{flat[s:e]}**")
        cursor = e
    out.append(flat[cursor:hi])
    out.append("…" if hi < len(flat) else "")
    return "".join(out)


#: A run the text itself marks bold (Markdown ``**...**``).
_BOLD = re.compile(r"\*\*(?=\S)(?:(?!\*\*).)+?(?<=\S)\*\*")

#: One Latin word character (``query.LATIN_WORD_CHAR``), to find where a token starts.
_WORD_CHAR = re.compile(sq.LATIN_WORD_CHAR)


def _tokens_starting(lowered: str, prefixes: set[str]) -> list[tuple[int, int, str]]:
    """(start, end, token) of the Latin tokens of ``lowered`` (as ``query.TOKEN`` cuts
    them) that start with one of ``prefixes`` (non-empty), in text order."""
    found: dict[int, tuple[int, int, str]] = {}
    for prefix in prefixes:
        at = lowered.find(prefix)
        while at != -1:
            if at not in found and (at == 0 or not _WORD_CHAR.match(lowered, at - 1)):
                m = sq.TOKEN.match(lowered, at)
                if m is not None:
                    found[at] = (at, m.end(), m.group(0))
            at = lowered.find(prefix, at + 1)
    return [found[k] for k in sorted(found)]


def _match_spans(parsed: sq.ParsedQuery, text: str) -> list[tuple[int, int]]:
    """Where ``text`` matches the query's terms, overlapping matches merged, in text order."""
    return _merged(_term_spans(parsed, text))


def _merged(found: list[tuple[int, int, sq.Term]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e, _term in found:
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _term_spans(parsed: sq.ParsedQuery, text: str) -> list[tuple[int, int, sq.Term]]:
    """(start, end, term) of every match of a query term in ``text``, sorted by position."""
    stems = {sq.light_stem(w): t for t in parsed.terms if not t.cjk for w in t.spellings}
    spans: list[tuple[int, int, sq.Term]] = []
    seen: set[sq.Term] = set()
    lowered = text.lower()
    if stems:
        # ``light_stem`` only cuts a word's end (or ends it in "y" for "ies"), so a token can
        # only meet a stem if it starts with it: those tokens are found with ``str.find``, not
        # by stemming every token of the text.
        starts = {k[:-1] if k.endswith("y") else k for k in stems}
        if "" in starts or len(lowered) != len(text):  # rare: read every token
            tokens = [(m.start(), m.end(), m.group(0).lower()) for m in sq.TOKEN.finditer(text)]
        else:
            tokens = _tokens_starting(lowered, starts)
        for start, end, token in tokens:
            term = stems.get(sq.light_stem(token))
            if term is not None:
                spans.append((start, end, term))
                seen.add(term)
    for term in parsed.terms:
        if term in seen or not (term.cjk or len(term.text) >= SUBSTRING_MIN):
            continue
        haystack = text if term.cjk else lowered
        start = haystack.find(term.text)
        while start != -1:
            spans.append((start, start + len(term.text), term))
            start = haystack.find(term.text, start + len(term.text))
    spans.sort(key=lambda span: (span[0], span[1]))
    return spans
