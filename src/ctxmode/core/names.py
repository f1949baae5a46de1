"""The names analyser of the substring index: a chunk's text -> its distinct names.

``search_trigram`` finds substrings ("current_us" inside ``get_current_user``, "tokenizer"
inside "pretokenizers") and near spellings. Over the whole text of every indexed document it
was the largest and slowest part of the store (on a 3,139-file repository: 86 of 208 MB and
about a third of the indexing time), while the substrings people look for sit in names. So a
document chunk's title and body are indexed there as their *names*: the distinct words that
hold an underscore, a digit next to a letter, an inner capital (``getCurrentUser``), Latin next
to non-ASCII (``1998年``), or 8+ characters, each kept once, in order of first appearance;
words over ``MAX_NAME`` characters (hashes, base64) are left out. Contexts and events keep
their whole text (``index_schema.m011``).

The trigger calls it as the SQL function ``ctxmode_names`` (registered by ``db._connect``);
``search_trigram`` is contentless, so a row is deleted by giving its names again: the output
for a given text must never change under an existing table (a new rule needs a migration that
rebuilds the table). Standard library only, nothing compiled at import (hook path).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

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

        _WORD.append(re.compile(r"\w+"))
        # An inner capital, an underscore, a digit next to a letter, or Latin next to
        # non-ASCII ("1998年", "FastAPI框架": unicode61 keeps such a run as one token, so only
        # the substring index finds the Latin part).
        _WORD.append(
            re.compile(
                r"[a-z][A-Z]|_|[A-Za-z][0-9]|[0-9][A-Za-z]|[0-9A-Za-z][^\x00-\x7f]|[^\x00-\x7f][0-9A-Za-z]"
            )
        )
    return _WORD


def names(text: object) -> str:
    """The distinct names of ``text``, space-separated (``''`` for NULL or no name)."""
    if not isinstance(text, str) or not text:
        return ""
    word, marked = _patterns()
    seen: dict[str, None] = {}
    for tok in word.findall(text):
        n = len(tok)
        if n < 3 or n > MAX_NAME or tok in seen:
            continue
        if n >= LONG_WORD or marked.search(tok):
            seen[tok] = None
    return " ".join(seen)
