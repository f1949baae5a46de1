"""The CJK analyser of the search index: text -> overlapping character bigrams.

``unicode61`` indexes a whole run of Han, kana or hangul as one token, so a word inside a
sentence cannot be matched. ``bigrams`` cuts every such run of 2+ characters into its
overlapping 2-character pieces (as Lucene's ``CJKAnalyzer`` and Elasticsearch's ``cjk`` do;
"孤儿进程" -> "孤儿 儿进 进程"); a lone CJK character is dropped (particles such as 的 do not
drive ranking); other words and numbers are kept, lowercased. The result, space-separated, is
what the ``search_cjk`` FTS5 table (``schema.m008_search_cjk``) indexes, filled by triggers
for contexts and events and by the indexer for chunks (``search.prepare.rows_of``), through
the SQL function ``ctxmode_bigrams`` that every connection registers
(``db.connect``); search cuts queries with the same function. ``search_cjk`` is contentless:
a row is deleted by giving its bigrams again, so the output for a given text must never change
under an existing table (a new analyser needs a migration that rebuilds the table).

Standard library only and nothing compiled at import: the hook path loads this module on every
tool call, and only a store write holding CJK text calls it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

#: Han (extension A, unified, compatibility), hiragana, katakana (without U+30FB, the middle
#: dot, which ``unicode61`` reads as punctuation) and hangul syllables.
CJK_CLASS = "\u3040-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
#: A GLOB pattern true for text holding a CJK character (the triggers' guard: text without
#: one gets no ``search_cjk`` row).
CJK_GLOB = f"*[{CJK_CLASS}]*"
#: Name of the SQL function (one text argument, deterministic).
SQL_FUNCTION = "ctxmode_bigrams"

_TOKEN: list[re.Pattern[str]] = []


def _token() -> re.Pattern[str]:
    if not _TOKEN:
        import re

        _TOKEN.append(re.compile(rf"[{CJK_CLASS}]+|[^\W_{CJK_CLASS}]+"))
    return _TOKEN[0]


def is_cjk_char(ch: str) -> bool:
    """Whether the character ``ch`` belongs to ``CJK_CLASS``."""
    o = ord(ch)
    return (
        0x3040 <= o <= 0x30FF
        and o != 0x30FB
        or 0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or 0xAC00 <= o <= 0xD7AF
    )


def tokens(text: str) -> list[str]:
    """The bigrams of each CJK run of ``text`` and its other words (lowercased), in order."""
    out: list[str] = []
    for tok in _token().findall(text.lower()):
        first = tok[0]
        if first < "\u3040" or not is_cjk_char(first):
            out.append(tok)
        elif len(tok) > 1:
            out.extend(map(str.__add__, tok, tok[1:]))
    return out


_HAS_CJK: list[re.Pattern[str]] = []


def _has_cjk_pattern() -> re.Pattern[str]:
    if not _HAS_CJK:
        import re

        _HAS_CJK.append(re.compile(f"[{CJK_CLASS}]"))
    return _HAS_CJK[0]


#: Name of the SQL function ``has_cjk`` (two text arguments, deterministic).
HAS_CJK_FUNCTION = "ctxmode_has_cjk"


def has_cjk(title: object, body: object) -> int:
    """1 when ``title`` or ``body`` holds a ``CJK_CLASS`` character (what ``CJK_GLOB`` tests,
    at the speed of one regex scan): the guard of a chunk's ``search_cjk`` row."""
    pattern = _has_cjk_pattern()
    for text in (title, body):
        if isinstance(text, str) and pattern.search(text):
            return 1
    return 0


def bigrams(text: object) -> str:
    """``tokens(text)`` joined by spaces: the text ``search_cjk`` indexes (``''`` for NULL)."""
    if not isinstance(text, str) or not text:
        return ""
    return " ".join(tokens(text))
