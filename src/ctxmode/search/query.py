"""Turn any user text into safe FTS5 queries, and correct misspelled words.

Invariants:
- Every FTS5 expression built here quotes each token (``"tok"``), so user text never reaches the
  FTS5 grammar: ``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``^``, ``:``, parentheses and quotes are
  plain words or separators. Tokens are cut from the text with the same notion of a word that
  the ``unicode61`` tokenizer uses (letters and digits; everything else separates).
- Runs of CJK characters are kept apart from Latin words: ``unicode61`` would index a whole CJK
  run as one token, so a run of 2+ characters becomes its distinct overlapping bigrams
  (``core.cjk``: "孤儿进程" -> 孤儿, 儿进, 进程), each a term searched in the ``search_cjk``
  index; a lone CJK character (a 1-character run) stays one term, found by a substring scan.
- Input is bounded: at most ``MAX_QUERY_CHARS`` characters and ``MAX_TERMS`` distinct terms
  are looked at, so a 10k-character paste costs the same as a short query.

Pure functions except ``porter_stems``, which uses SQLite (temporary tables only).
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxmode.core import cjk
from ctxmode.search.forms import forms_of

MAX_QUERY_CHARS = 2000
MAX_TERMS = 24
#: Shortest Latin word sent to the trigram index: as a substring, a 3-letter word matches far
#: too much ("art" inside "start", "heart"); the porter index already has whole words.
TRIGRAM_MIN_WORD = 4
_CJK = (
    r"\u3040-\u30ff"  # hiragana, katakana
    r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    r"\uac00-\ud7af"  # hangul syllables
)
#: One character of a Latin token (letters and digits; CJK runs are tokens of their own).
LATIN_WORD_CHAR = rf"[^\W_{_CJK}]"
TOKEN = re.compile(rf"[{_CJK}]+|{LATIN_WORD_CHAR}+")
#: ``TOKEN`` on lowercase ASCII text is the runs of ``[a-z0-9]``: every other ASCII character
#: becomes a space and ``str.split`` cuts the rest (2.5x faster than the regex on 800
#: characters of README, timed with ``timeit``; a hypothesis check gave the same tokens).
_ASCII_SEPARATORS = str.maketrans(
    {c: " " for c in map(chr, range(128)) if not ("a" <= c <= "z" or "0" <= c <= "9")}
)
#: Non-ASCII separators common in prose and titles (typographic quotes and dashes, the middle
#: dot, bullets, arrows, no-break space...): replaced by spaces, text holding no other non-ASCII
#: character takes the ASCII path (on LoCoMo's titles and turns, 1.7x faster than ``findall``).
_COMMON_SEPARATORS = tuple(
    c
    for c in "\u00b7\u2019\u2013\u2014\u201c\u201d\u2026\u2022\u00a0\u2018\u2192\u203a"
    "\u00ab\u00bb\u2010\u2011\u2012\u2015\u2032\u2033\u00a9\u00ae\u2122\u00b0"
    if not TOKEN.fullmatch(c)
)
_CJK_RUN = re.compile(rf"^[{_CJK}]+$")

#: Function words that carry no topic. Question words are included: "when did X ..." asks about
#: X, and the word "when" rarely appears in the answer.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don
    down during each few for from further had hadn has hasn have haven having he her here hers
    herself him himself his how i if in into is isn it its itself just let me more most my
    myself no nor not now of off on once only or other ought our ours ourselves out over own
    same shan she should shouldn so some such than that the their theirs them themselves then
    there these they this those through to too under until up very was wasn we were weren what
    when where which while who whom why will with won would wouldn you your yours yourself
    yourselves s t d ll m re ve y ever also get got tell us thing things kind
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class Term:
    """One query term: a lowercase Latin word, or a CJK run (``cjk=True``).

    ``forms`` are other spellings that count as the same term: the irregular forms of a word
    (``forms``: "went" for "go"), searched and matched alongside it.
    """

    text: str
    cjk: bool = False
    forms: tuple[str, ...] = ()

    @property
    def spellings(self) -> tuple[str, ...]:
        """``text`` and its ``forms``."""
        return (self.text, *self.forms)


@dataclass(frozen=True)
class ParsedQuery:
    """A query cut into terms; ``terms`` keeps the order of first appearance (for adjacency)."""

    text: str
    terms: tuple[Term, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(t.text for t in self.terms if not t.cjk)

    @property
    def cjk(self) -> tuple[str, ...]:
        return tuple(t.text for t in self.terms if t.cjk)


def tokens(text: str) -> list[str]:
    """Lowercase word tokens and CJK runs of ``text``, in order."""
    return [m.group(0).lower() for m in TOKEN.finditer(text)]


def lowered_tokens(lowered: str) -> list[str]:
    """The tokens of text already lowercased (``TOKEN.findall``, faster on ASCII text and on
    text whose only non-ASCII characters are ``_COMMON_SEPARATORS``)."""
    if not lowered.isascii():
        for sep in _COMMON_SEPARATORS:
            if sep in lowered:
                lowered = lowered.replace(sep, " ")
        if not lowered.isascii():
            return TOKEN.findall(lowered)
    return lowered.translate(_ASCII_SEPARATORS).split()


def is_cjk(token: str) -> bool:
    return bool(_CJK_RUN.match(token))


def parse(text: str) -> ParsedQuery:
    """Cut ``text`` into distinct terms; stopwords are dropped unless nothing else is left."""
    text = (text or "")[:MAX_QUERY_CHARS]
    raw: list[Term] = []
    for tok in tokens(text):
        if is_cjk(tok):
            grams = cjk.tokens(tok)
            raw.extend(Term(g, cjk=True) for g in grams or [tok])
        else:
            raw.append(Term(tok))
    seen: set[Term] = set()
    distinct = [t for t in raw if not (t in seen or seen.add(t))]  # type: ignore[func-returns-value]
    content = [t for t in distinct if t.cjk or t.text not in STOPWORDS]
    chosen = content or distinct
    terms = tuple(t if t.cjk else Term(t.text, forms=forms_of(t.text)) for t in chosen)
    return ParsedQuery(text=text, terms=terms[:MAX_TERMS])


def quote(token: str) -> str:
    """An FTS5 string literal: the token taken verbatim, never as syntax."""
    return '"' + token.replace('"', '""') + '"'


def own_text(term: Term) -> str:
    """An FTS5 query for ``term`` (any spelling) in an item's title or body, not its context."""
    return "{title body} : (" + " OR ".join(quote(w) for w in term.spellings) + ")"


def trigrams(run: str) -> list[str]:
    """Overlapping 3-character pieces of a CJK run or a word (itself when shorter)."""
    if len(run) <= 3:
        return [run]
    return [run[i : i + 3] for i in range(len(run) - 2)]


def porter_words(query: ParsedQuery) -> list[str]:
    """The Latin words (and their ``forms``) for the ``porter unicode61`` index, once each."""
    return list(dict.fromkeys(w for t in query.terms if not t.cjk for w in t.spellings))


def porter_expression(query: ParsedQuery) -> str | None:
    """OR of the quoted ``porter_words`` (FTS5 phrases, in that order)."""
    words = porter_words(query)
    return " OR ".join(quote(w) for w in words) if words else None


def trigram_expression(query: ParsedQuery, skip: frozenset[str] = frozenset()) -> str | None:
    """OR of the quoted Latin words of ``TRIGRAM_MIN_WORD``+ letters for the trigram index
    (substrings: "tokenizer" inside "pretokenizers"); CJK goes to ``bigram_expression``.

    Latin words in ``skip`` are left out (the caller passes the words the porter index already
    finds as whole words, where the trigram list would mostly repeat it at a higher cost).
    """
    unique = trigram_words(query, skip)
    return " OR ".join(quote(p) for p in unique) if unique else None


def trigram_words(query: ParsedQuery, skip: frozenset[str] = frozenset()) -> list[str]:
    """The words of ``trigram_expression``, once each, in query order."""
    return list(
        dict.fromkeys(
            t.text
            for t in query.terms
            if not t.cjk and len(t.text) >= TRIGRAM_MIN_WORD and t.text not in skip
        )
    )


def short_cjk_terms(query: ParsedQuery) -> tuple[str, ...]:
    """Lone CJK characters (1-character runs): no bigram holds them, a substring scan finds
    them."""
    return tuple(t for t in query.cjk if len(t) == 1)


def bigram_terms(query: ParsedQuery) -> tuple[str, ...]:
    """The CJK bigram terms, for the ``search_cjk`` index."""
    return tuple(t for t in query.cjk if len(t) == 2)


def bigram_expression(query: ParsedQuery) -> str | None:
    """OR of the quoted ``bigram_terms`` (``None`` without one)."""
    grams = bigram_terms(query)
    return " OR ".join(quote(g) for g in grams) if grams else None


@functools.lru_cache(maxsize=65536)
def light_stem(word: str) -> str:
    """A cheap English suffix stripper for matching query words inside result text.

    Deliberately rougher than porter: it only has to make "painted", "painting" and "paints"
    meet "paint" when reranking a few dozen candidates in Python.
    """
    if len(word) <= 3 or not word.isascii():
        return word
    for suffix, repl in (
        ("ingly", ""),
        ("edly", ""),
        ("ies", "y"),
        ("ied", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("ly", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                break
            word = word[: len(word) - len(suffix)] + repl
            break
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of ``a`` and ``b``, or ``limit + 1`` once it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        best = i
        for j, cb in enumerate(b, start=1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            current.append(cost)
            best = min(best, cost)
        if best > limit:
            return limit + 1
        previous = current
    return previous[-1]


def allowed_edits(word: str) -> int:
    """How many edits a correction may make: none for short words, 1 up to 7 letters, then 2."""
    if len(word) < 4:
        return 0
    return 1 if len(word) <= 7 else 2


_WORD_TABLE = "ctxmode_words"


def porter_stems(conn: sqlite3.Connection, words: Sequence[str]) -> dict[str, str]:
    """The porter stem the index gives each of ``words``; words it drops are left out. Uses
    temporary tables only.

    Words of ASCII letters and digits are one token each for the tokenizer, so they are stemmed
    together, as one row whose token offsets follow the words (one row insert instead of one
    per word: LoCoMo's 5,973 words took 21 ms instead of 249 ms on a store's connection, timed
    by an ad hoc script). Any other word gets a row of its own,
    so that a word the tokenizer cuts differently from ``TOKEN`` cannot shift the others; so do
    all words if the one row does not give one token per word.
    """
    if not words:
        return {}
    plain = [w for w in words if w.isascii() and w.isalnum()]
    out = _stems_in_one_row(conn, plain) if len(plain) > 1 else None
    if out is None:
        return _stems_row_by_row(conn, words)
    rest = [w for w in words if not (w.isascii() and w.isalnum())]
    if rest:
        out.update(_stems_row_by_row(conn, rest))
    return out


def _tokenised(conn: sqlite3.Connection, texts: Sequence[str], query: str) -> list[Any]:
    """Rows of ``query`` (``{v}`` standing for the instance vocabulary of a temporary FTS5 table
    with the index's tokenizer) once ``texts`` are that table's rows 1, 2, ...; the table is
    emptied after."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_WORD_TABLE} USING fts5("
        "t, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_WORD_TABLE}_v "
        f"USING fts5vocab(temp, {_WORD_TABLE}, instance)"
    )
    conn.execute(f"DELETE FROM temp.{_WORD_TABLE}")
    conn.executemany(
        f"INSERT INTO temp.{_WORD_TABLE}(rowid, t) VALUES (?, ?)",
        list(enumerate(texts, start=1)),
    )
    rows = conn.execute(query.format(v=f"temp.{_WORD_TABLE}_v")).fetchall()
    conn.execute(f"DELETE FROM temp.{_WORD_TABLE}")
    return rows


def _stems_in_one_row(conn: sqlite3.Connection, words: list[str]) -> dict[str, str] | None:
    """Stems of ASCII letter-and-digit ``words`` from one row (``None``: the tokenizer did not
    give exactly one token per word)."""
    rows = _tokenised(conn, [" ".join(words)], "SELECT term, offset FROM {v}")
    if len(rows) != len(words):
        return None
    out: dict[str, str] = {}
    for term, offset in rows:
        if not 0 <= int(offset) < len(words):
            return None
        out[words[int(offset)]] = str(term)
    return out if len(out) == len(set(words)) else None


def _stems_row_by_row(conn: sqlite3.Connection, words: Sequence[str]) -> dict[str, str]:
    """Stems of ``words``, one row per word."""
    rows = _tokenised(conn, words, "SELECT term, doc FROM {v} WHERE offset = 0")
    return {words[int(doc) - 1]: str(term) for term, doc in rows}


def index_terms(conn: sqlite3.Connection, texts: Sequence[str]) -> dict[str, int]:
    """The terms the porter index makes of ``texts``, with the number of texts holding each
    (what ``fts5vocab`` row counts say for indexed items). Uses temporary tables only."""
    if not texts:
        return {}
    rows = _tokenised(conn, texts, "SELECT term, count(DISTINCT doc) FROM {v} GROUP BY term")
    return {str(term): int(n) for term, n in rows}


def nearest_terms(
    vocab: dict[tuple[str, int], list[tuple[str, int]]], stem: str, limit_edits: int
) -> list[tuple[int, int, str]]:
    """Terms of ``vocab`` ((first letter, length) -> [(term, doc count)]) within
    ``limit_edits`` of ``stem``.

    Sorted as ``(distance, -doc_count, term)``. Only terms of a similar length that start with
    the same letter are compared (as spelling correctors such as Lucene's do by default: a slip
    on the first letter is rare, and comparing one letter's bucket instead of the whole
    vocabulary makes a correction ~20x cheaper); a term sharing no letter with ``stem`` beyond
    what the edits allow is skipped unscored.
    """
    if not stem:
        return []
    letters = set(stem)
    found = []
    for length in range(len(stem) - limit_edits, len(stem) + limit_edits + 1):
        for term, doc in vocab.get((stem[0], length), ()):
            if term == stem or len(letters.difference(term)) > limit_edits:
                continue
            distance = edit_distance(stem, term, limit_edits)
            if distance <= limit_edits:
                found.append((distance, -doc, term))
    found.sort()
    return found
