"""The names analyser of substring search: a chunk's text -> its distinct names.

Substring search finds "current_us" inside ``get_current_user`` and "tokenizer" inside
"pretokenizers", and typo correction finds near spellings. Over the whole text of every
indexed document a trigram index was the largest and slowest part of the store, while the
substrings people look for sit in names. A name is a distinct word that holds an underscore,
a digit next to a letter or an inner capital (``getCurrentUser``), or has 8+ characters, or a
Latin or digit run (3+) inside a run of CJK (``1998`` of ``1998年``); words over ``MAX_NAME``
characters (hashes, base64) are left out. Each distinct name of any chunk is stored once per
store, in the vocabulary ``search_names`` with its own trigram index
(``index_schema.m015_name_vocabulary``); contexts and events keep whole-text substring search.

``new_names`` gives an indexing run the names of the words it has not judged yet; ``vocab``
(the SQL function ``ctxmode_vocab``) the names of a chunk written with its text, for its
trigger; ``names`` (``ctxmode_names``) is what ``m013_lean_chunks`` indexed, kept for stores
that migrate through it: its output for a given text must never change. Standard library
only, nothing compiled at import (hook path: ``db.connect`` registers the functions).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterable

#: Name of the SQL function (one text argument, deterministic).
SQL_FUNCTION = "ctxmode_names"
#: Longer words are not names but hashes, keys or base64 (characters).
MAX_NAME = 48
#: Plain words (letters only, no inner capital) of this many characters or more are kept.
LONG_WORD = 8

_WORD: list[re.Pattern[str]] = []


def _patterns() -> list[re.Pattern[str]]:
    if not _WORD:
        import re

        from ctxmode.core.cjk import CJK_CLASS

        _WORD.append(re.compile(r"\w{3,}"))
        _WORD.append(re.compile(r"[a-z][A-Z]|_|[A-Za-z][0-9]|[0-9][A-Za-z]"))
        _WORD.append(re.compile(r"[0-9A-Za-z]{3,}"))
        _WORD.append(re.compile(f"[{CJK_CLASS}]"))
    return _WORD


#: Name of the SQL function that gives a chunk's names for the vocabulary (``search_names``).
VOCAB_FUNCTION = "ctxmode_vocab"


def new_names(texts: Iterable[str], seen: set[str]) -> list[str]:
    """The names of ``texts`` among the words not in ``seen``, which grows by those words
    (an indexing run judges each distinct word once: a folder's files share most of them)."""
    word = _patterns()[0]
    found: dict[str, None] = {}
    for text in texts:
        tokens = set(word.findall(text))
        tokens.difference_update(seen)
        if tokens:
            seen.update(tokens)
            found.update(_judge(tokens))
    return list(found)


def vocab(text: object) -> str:
    """The names of ``text`` as a JSON array, for ``json_each`` in the triggers that index a
    chunk written with its text (``index_schema.m015_name_vocabulary``)."""
    if not isinstance(text, str) or not text:
        return "[]"
    import json

    return json.dumps(list(_judge(dict.fromkeys(_patterns()[0].findall(text)))))


def names(text: object) -> str:
    """The distinct names of ``text``, space-separated (``''`` for NULL or no name)."""
    if not isinstance(text, str) or not text:
        return ""
    # Each distinct word once, in order of first appearance (a repeated word adds nothing):
    # the same output as judging every occurrence, at a fraction of the cost on code.
    return " ".join(_judge(dict.fromkeys(_patterns()[0].findall(text))))


def _judge(tokens: Iterable[str]) -> dict[str, None]:
    """The names among ``tokens`` (words of 3+ word characters), in their order."""
    _word, marked, latin, cjk = _patterns()
    seen: dict[str, None] = {}
    for tok in tokens:
        if tok in seen:
            continue
        if not tok.isascii() and cjk.search(tok):
            # Latin inside a run of CJK ("1998年", "FastAPI框架"): unicode61 keeps the run as
            # one token, so only this index finds the Latin part, kept alone.
            for part in latin.findall(tok):
                if len(part) <= MAX_NAME:
                    seen.setdefault(part, None)
            continue
        n = len(tok)
        if n > MAX_NAME:
            continue
        if n >= LONG_WORD:
            seen[tok] = None
        elif tok.isalpha() and (tok.islower() or tok.isupper() or tok.istitle()):
            continue  # a plain short word: no inner capital, digit or underscore (fast path)
        elif marked.search(tok):
            seen[tok] = None
    return seen
