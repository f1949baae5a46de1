"""Secret redaction: applied before anything is written and again before it is returned.

Pure functions over text. Each pattern (``secret_patterns``) replaces the secret part with
``[REDACTED:<kind>]`` and keeps enough around it (variable names, URL hosts) for the text to stay
useful. Text between ``<private>`` and ``</private>`` is removed entirely. A short text is
redacted by the rules as written; a long one by ``secret_scan``, which gives the same result
without a scan of the whole text per trigger and pattern.
"""

from __future__ import annotations

from ctxmode.core._lean import LazyRegex
from ctxmode.core.secret_patterns import plain_redact, plain_secret_kinds

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any

#: Texts longer than this (characters) go to ``secret_scan``: below it, the ~95 substring tests
#: and whole-text passes cost less than the scan's fixed work (``bench/redact.py``).
SCAN_CHARS = 200


#: Short texts of a process from this one on are first tested by ``secret_scan.unchanged``
#: (most are unchanged, e.g. indexing's chunk titles: 2x the rules' substring tests); before it,
#: its ~1 ms of regex compiling would cost a hook more than its few texts save.
QUICK_AFTER = 200
_short_texts = [0]


def _unchanged(text: str) -> bool:
    """True when ``text`` is known to come out of redaction as it is."""
    if _short_texts[0] < QUICK_AFTER:
        _short_texts[0] += 1
        return False
    from ctxmode.core import secret_scan

    return secret_scan.unchanged(text)


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced and ``<private>`` sections removed."""
    if not text:
        return text
    if len(text) > SCAN_CHARS:
        from ctxmode.core import secret_scan  # not imported by a hook that redacts no long text

        return secret_scan.redact(text)
    return text if _unchanged(text) else plain_redact(text)


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret (pattern names, ``private`` for a ``<private>`` section) that
    ``redact`` would replace in ``text``, in pattern order; empty when it would change nothing.
    """
    if not text:
        return []
    if len(text) > SCAN_CHARS:
        from ctxmode.core import secret_scan

        return secret_scan.secret_kinds(text)
    return [] if _unchanged(text) else plain_secret_kinds(text)


def is_env_file(name: str) -> bool:
    """``.env``, ``.env.local``, ``prod.env``: files whose every value is a secret."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return base == ".env" or base.startswith(".env.") or base.endswith(".env")


_ENV_LINE = LazyRegex(r"^(\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*[=:]\s*)\S.*$")


def redact_env_file(text: str) -> str:
    """Mask every value of a ``.env``-style file (``NAME=value`` lines), whatever the name."""
    lines = []
    for line in text.splitlines():
        m = _ENV_LINE.match(line)
        lines.append(m.group(1) + "[REDACTED:env]" if m else redact(line))
    return "\n".join(lines)


#: Characters at most that ``drop_cut_tail`` removes: any token that began further back kept
#: enough of itself for its pattern to match.
CUT_TAIL_CHARS = 256

_TAIL_WORD = LazyRegex(r"\S*\Z")


def drop_cut_tail(text: str) -> str:
    """Text cut at a size cap, without the word the cut fell in (at most ``CUT_TAIL_CHARS``).

    Call it before ``redact`` on anything cut at a byte cap: a secret cut in two no longer
    matches its pattern, so its head would be stored and returned in clear.
    """
    body = text.rstrip()
    tail = body[-CUT_TAIL_CHARS:]
    match = _TAIL_WORD.search(tail)
    return body[: len(body) - (match.end() - match.start())] if match else body


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dict keys are kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


_SURROGATE = LazyRegex(r"[\ud800-\udfff]")


def scrub_surrogates(value: Any) -> Any:
    """Replace lone UTF-16 surrogates (from ``\\udc80`` JSON escapes or undecodable argv bytes)
    with U+FFFD in every string of a JSON-like value; SQLite and UTF-8 output reject them."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {scrub_surrogates(k): scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_surrogates(v) for v in value]
    return value
