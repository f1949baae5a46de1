"""Rerank and snippets: the Python side of search, over a few dozen fused candidates.

The score of a candidate mixes its normalised fused rank with four features computed on its
text: IDF-weighted coverage of the query terms, the same for the title, the largest IDF share
of distinct terms within ``PROXIMITY_WINDOW`` tokens, and the share of consecutive query words
found next to each other. Words are compared through ``search_query.light_stem`` so that
"painting" meets "paint"; CJK terms are compared as substrings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxmode import search_query as sq

if TYPE_CHECKING:
    import sqlite3

#: Rerank mix: fused rank, term coverage, title coverage, proximity, phrase adjacency.
W_FUSED = 0.5
W_COVERAGE = 2.0
W_TITLE = 0.6
W_PROXIMITY = 0.5
W_PHRASE = 0.3
#: Fused candidates that get reranked.
RERANK_POOL = 100
#: The best candidates lend this share of their score to adjacent chunks of the same source.
NEIGHBOUR_SEEDS = 10
NEIGHBOUR_SHARE = 0.3
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


def idf(df: int, n_items: int) -> float:
    """BM25-style inverse document frequency (never negative).

    A word found nowhere counts as if found once: otherwise one unknown phrasing word ("choose")
    would outweigh every word that did match and hide a good hit behind "no confident match".
    """
    df = max(df, 1)
    return math.log(1.0 + (n_items - df + 0.5) / (df + 0.5))


ROW_SQL = (
    "SELECT s.id, s.item_kind, s.ref_id, s.title, s.body, s.source, s.type, s.created_at, "
    "c.superseded_by FROM search_items s "
    "LEFT JOIN contexts c ON s.item_kind = 'context' AND c.id = s.ref_id"
)


def rerank(
    conn: sqlite3.Connection,
    parsed: sq.ParsedQuery,
    fused: dict[int, float],
    df: dict[sq.Term, int],
    n_items: int,
    neighbours: Callable[[list[int]], dict[int, list[int]]] | None = None,
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
    scorer = _Scorer(parsed, df, n_items, max(fused.values()))
    rows = _fetch(conn, pool)
    scored = {i: scorer.score(i, fused[i], rows[i]) for i in pool if i in rows}
    if neighbours is not None and scored:
        seeds = sorted(scored.values(), key=lambda c: (-c.score, c.row_id))[:NEIGHBOUR_SEEDS]
        links = neighbours([c.row_id for c in seeds])
        fresh = sorted({n for ns in links.values() for n in ns} - scored.keys())
        rows.update(_fetch(conn, fresh))
        for n in fresh:
            if n in rows:
                scored[n] = scorer.score(n, fused.get(n, 0.0), rows[n])
        lent: dict[int, float] = {}
        for seed in seeds:
            for n in links.get(seed.row_id, ()):
                lent[n] = max(lent.get(n, 0.0), NEIGHBOUR_SHARE * seed.score)
        for n, bonus in lent.items():
            if n in scored:
                scored[n].score += bonus
    out = sorted(scored.values(), key=lambda c: (-c.score, c.row_id))
    return out, rows


def _fetch(conn: sqlite3.Connection, ids: list[int]) -> dict[int, tuple[Any, ...]]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {int(r[0]): tuple(r) for r in conn.execute(ROW_SQL + f" WHERE s.id IN ({marks})", ids)}


class _Scorer:
    """The per-query part of the rerank: term weights and stems, computed once."""

    def __init__(
        self, parsed: sq.ParsedQuery, df: dict[sq.Term, int], n_items: int, top: float
    ) -> None:
        self.parsed = parsed
        self.weights = {t: idf(df.get(t, 0), n_items) for t in parsed.terms}
        self.total = sum(self.weights.values()) or 1.0
        self.stems = {t: sq.light_stem(t.text) for t in parsed.terms if not t.cjk}
        self.top = top or 1.0

    def score(self, row_id: int, fused: float, row: tuple[Any, ...]) -> Candidate:
        title, body = str(row[3]), str(row[4])
        in_title = _matched_terms(self.parsed, self.stems, title)[0]
        in_body, positions = _matched_terms(self.parsed, self.stems, body)
        weights, total = self.weights, self.total
        cand = Candidate(row_id=row_id, fused=fused)
        cand.coverage = sum(weights[t] for t in in_title | in_body) / total
        title_cov = sum(weights[t] for t in in_title) / total
        cand.score = (
            W_FUSED * fused / self.top
            + W_COVERAGE * cand.coverage
            + W_TITLE * title_cov
            + W_PROXIMITY * _proximity(positions, weights, total)
            + W_PHRASE * _adjacency(self.parsed, positions)
        )
        if row[8] is not None:
            cand.score *= SUPERSEDED_FACTOR
        return cand


def _matched_terms(
    parsed: sq.ParsedQuery, stems: dict[sq.Term, str], text: str
) -> tuple[set[sq.Term], dict[sq.Term, list[int]]]:
    """Query terms present in ``text`` and their token positions (Latin words only)."""
    found: set[sq.Term] = set()
    positions: dict[sq.Term, list[int]] = {}
    by_stem = {s: t for t, s in stems.items()}
    if by_stem:
        for pos, tok in enumerate(sq.tokens(text)):
            term = by_stem.get(sq.light_stem(tok))
            if term is not None:
                found.add(term)
                positions.setdefault(term, []).append(pos)
    lowered: str | None = None
    for term in parsed.terms:
        if term in found:
            continue
        if term.cjk:
            if term.text in text:
                found.add(term)
        elif len(term.text) >= SUBSTRING_MIN:
            # What the trigram list found: the word inside a longer one (PoolManager).
            lowered = text.lower() if lowered is None else lowered
            if term.text in lowered:
                found.add(term)
    return found, positions


def _proximity(
    positions: dict[sq.Term, list[int]], weights: dict[sq.Term, float], total: float
) -> float:
    """Largest IDF share of distinct terms found within ``PROXIMITY_WINDOW`` tokens."""
    if len(positions) < 2:
        return 0.0
    events = sorted((p, t) for t, ps in positions.items() for p in ps)
    best = 0.0
    start = 0
    inside: dict[sq.Term, int] = {}
    for pos, term in events:
        inside[term] = inside.get(term, 0) + 1
        while pos - events[start][0] >= PROXIMITY_WINDOW:
            old = events[start][1]
            inside[old] -= 1
            if inside[old] == 0:
                del inside[old]
            start += 1
        if len(inside) >= 2:
            best = max(best, sum(weights[t] for t in inside) / total)
    return best


def _adjacency(parsed: sq.ParsedQuery, positions: dict[sq.Term, list[int]]) -> float:
    """Share of consecutive query word pairs that appear next to each other (one gap allowed)."""
    words = [t for t in parsed.terms if not t.cjk]
    pairs = list(zip(words, words[1:], strict=False))
    if not pairs:
        return 0.0
    hits = 0
    for a, b in pairs:
        pa, pb = positions.get(a), positions.get(b)
        if pa and pb:
            set_b = set(pb)
            if any(p + 1 in set_b or p + 2 in set_b for p in pa):
                hits += 1
    return hits / len(pairs)


def clip(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= n else text[: max(0, n - 1)] + "…"


def snippet_for(parsed: sq.ParsedQuery, text: str, width: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the densest run of query terms, matches in ``**bold**``."""
    flat = _SPACE.sub(" ", text).strip()
    spans = _match_spans(parsed, flat)
    if not spans:
        return clip(flat, width)
    # Window start: the match span that has the most other matches within ``width`` after it.
    best_start, best_count = spans[0][0], 0
    for i, (start, _end) in enumerate(spans):
        count = sum(1 for s, _e in spans[i:] if s - start < width)
        if count > best_count:
            best_start, best_count = start, count
    lo = max(0, best_start - width // 4)
    hi = min(len(flat), lo + width)
    lo = max(0, min(lo, hi - width))
    out: list[str] = ["…" if lo > 0 else ""]
    cursor = lo
    marked = 0
    for s, e in spans:
        if s < cursor or e > hi or marked == MAX_HIGHLIGHTS:
            continue
        marked += 1
        out.append(flat[cursor:s])
        out.append(f"**{flat[s:e]}**")
        cursor = e
    out.append(flat[cursor:hi])
    out.append("…" if hi < len(flat) else "")
    return "".join(out)


def _match_spans(parsed: sq.ParsedQuery, text: str) -> list[tuple[int, int]]:
    stems = {sq.light_stem(t.text): t for t in parsed.terms if not t.cjk}
    spans: list[tuple[int, int]] = []
    seen: set[sq.Term] = set()
    if stems:
        for m in sq.TOKEN.finditer(text):
            term = stems.get(sq.light_stem(m.group(0).lower()))
            if term is not None:
                spans.append((m.start(), m.end()))
                seen.add(term)
    lowered = text.lower()
    for term in parsed.terms:
        if term in seen or not (term.cjk or len(term.text) >= SUBSTRING_MIN):
            continue
        haystack = text if term.cjk else lowered
        start = haystack.find(term.text)
        while start != -1:
            spans.append((start, start + len(term.text)))
            start = haystack.find(term.text, start + len(term.text))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged
