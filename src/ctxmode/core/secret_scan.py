"""Redaction of long texts: the result that ``secret_patterns`` defines, found without scanning
the whole text once per trigger and running every triggered pattern over all of it.

The rules (``secret_patterns``): a pattern runs when the lowered text holds one of its
triggers, in pattern order, each over the previous one's result; a ``PER_LINE`` pattern only on
the lines (of that result) holding a trigger. Applied as written, a document about security
costs ~95 scans of the whole text for the triggers, then a whole-text pass per pattern.

Here each pattern first looks for a *candidate*: something every match of it must contain, found
in one of a few shared scans. No candidate: the pattern cannot change the text, whatever its
trigger says, and its trigger is never looked for. A candidate: the pattern's trigger is tested
exactly as the rules say, and the pattern runs, on the candidate lines only when it cannot match
across a line end (its matches hold no newline and its boundaries see a line end as they see
the text's end), over the whole text otherwise. The facts this rests on, checked by
``tests/test_redact_scan.py``:

- replacements are ``[REDACTED:kind]`` (and ``[private]``) kept within one line, so a match of a
  later pattern that needs a literal (``eyJ``, ``://``, ``-u``...) finds it in the text as it was
  before any pattern ran (no literal holds ``[`` or ``]``), on the same line;
- the shared scans: five over the lowered text find every keyword (``token``, ``key``,
  ``pass``...; one anchor letter each, the rest checked around it), five over the text find
  every literal prefix of a token (``AKIA``, ``ghp_``, ``sk-``, ``ya29.``...), each by an anchor
  character that most text holds rarely;
- a line that an earlier pattern changed is judged again as it is now (``[REDACTED:secret]``
  holds the keyword ``secret``).

``unchanged`` tests the same candidates on a short text, for the many short texts of a busy
process (chunk titles), most of which no pattern can change.
"""

from __future__ import annotations

from ctxmode.core import secret_patterns as sp
from ctxmode.core._lean import LazyRegex

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from collections.abc import Set

    from ctxmode.core.secret_patterns import Replacement

#: Tags of a keyword hit.
_KW, _AUTH, _BEARER, _AWS = 1, 2, 4, 8

#: Every keyword of ``secret_patterns.KEYWORDS`` (and ``aws``) by one anchor letter: what follows
#: the anchor is matched (it never holds the anchor letter, so no anchor is skipped), what
#: precedes it is a look-behind. At one anchor the alternatives exclude each other.
_KEYWORD_ANCHORS: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (
    ("k", (("en(?<=token)", _KW), ("ey", _KW), ("ie(?<=cookie)", _KW), ("(?<=webhook)", _KW))),
    ("d", (("sn", _KW), ("ential(?<=credential)", _KW), ("(?<=pwd)", _KW))),
    (
        "a",
        (
            ("uth(?=orization)", _KW | _AUTH),
            ("uth", _KW),
            ("ss(?<=pass)", _KW),
            ("lt(?<=salt)", _KW),
            ("rer(?<=bearer)", _KW | _BEARER),
            ("ws", _AWS),
        ),
    ),
    ("c", (("ret(?<=secret)", _KW | _AWS), ("onn", _KW))),
    ("g", (("(?<=sig)", _KW),)),
)

#: Anchor characters of the token literals, rare in ordinary text: each literal is found by the
#: first of these it holds.
_TOKEN_ANCHOR_CHARS = "JA_-."

#: Lines of a text holding a Slack webhook URL (its pattern starts with this literal).
_SLACK_HOOK = LazyRegex(r"https://hooks\.slack\.com/")
#: What every match of ``url_token_param`` starts with (``[?&]name=``).
_PARAM_HEAD = LazyRegex(
    r"(?i)[?&](?:access_token|token|api_key|apikey|key|secret|password|sig|signature"
    r"|client_secret|auth)="
)
#: Something every match of ``secret_flag`` holds (``--password``, ``-api-key``...).
_FLAG_HEAD = LazyRegex(
    r"-(?i:password|passwd|pass|passphrase|token|api-?key|secret|client-secret|access-token"
    r"|auth-token|refresh-token|private-key|secret-key|access-key)[\s=]"
)
#: What every match of ``cli_credentials`` holds (``-u ``, ``--user=``, ``--proxy-user ``).
_CLI_HEAD = LazyRegex(r"-u(?:ser)?[\s=]")
#: What every match of ``mysql_password`` holds (``-p`` after a space or at the start).
_MYSQL_HEAD = LazyRegex(r"-p(?<!\S-p)")
#: Something every match of ``cjk_secret`` holds.
_CJK_CHARS = "密口秘私令凭授"
#: Where a match of ``cjk_secret``'s English form starts, in the lowered text (``ſ`` is an
#: ``s`` to the pattern's case-insensitive match and stays ``ſ`` when lowered).
_PASSWORD_IS = LazyRegex(r"pa[sſ][sſ](?:word|phra[sſ]e)\s+(?:is|was)")

_BY_KIND: dict[str, tuple[LazyRegex, Replacement]] = {k: (p, r) for k, p, r in sp.PATTERNS}
_TOKEN_KINDS = tuple(kind for kind, _ in sp.TOKEN_LITERALS)

#: Built on first use: (regex, tags by group) per keyword anchor; (regex, [(kind, literal,
#: offset of the anchor)]) per token anchor.
_KEYWORD_RX: list[tuple[LazyRegex, tuple[int, ...]]] = []
_TOKEN_RX: list[tuple[LazyRegex, tuple[tuple[str, str, int], ...]]] = []


#: The token anchors in one regex (``unchanged``).
_TOKENS_ANY: list[LazyRegex] = []


def _build() -> None:
    """Fill the tables above (each assigned whole at the end: two threads building at once
    leave them complete, never doubled)."""
    import re

    keyword_rx: list[tuple[LazyRegex, tuple[int, ...]]] = []
    token_rx: list[tuple[LazyRegex, tuple[tuple[str, str, int], ...]]] = []

    for anchor, alternatives in _KEYWORD_ANCHORS:
        body = "|".join(f"{alt}()" for alt, _ in alternatives)
        tags = (0, *(tag for _, tag in alternatives))
        keyword_rx.append((LazyRegex(f"{anchor}(?:{body})"), tags))
    by_anchor: dict[str, list[tuple[str, str, int]]] = {c: [] for c in _TOKEN_ANCHOR_CHARS}
    for kind, literals in sp.TOKEN_LITERALS:
        for literal in literals:
            anchor = next(c for c in _TOKEN_ANCHOR_CHARS if c in literal)
            by_anchor[anchor].append((kind, literal, literal.index(anchor)))
    for anchor, table in by_anchor.items():
        behind = []  # alternatives with a part before the anchor
        ahead = []  # the others: what follows the anchor, tested in one look-ahead
        for _, literal, at in table:
            rest = re.escape(literal[at + 1 :])
            if at:
                behind.append(
                    f"(?<={re.escape(literal[: at + 1])})" + (f"(?={rest})" if rest else "")
                )
            else:
                ahead.append(rest)
        alts = [*behind, *([f"(?={'|'.join(ahead)})"] if ahead else [])]
        # A look-behind on the character before the anchor first: most anchors fail it.
        before = "".join(sorted({literal[at - 1] for _, literal, at in table if at}))
        guard = f"(?<=[{re.escape(before)}]{re.escape(anchor)})" if not ahead else ""
        rx = LazyRegex(f"{re.escape(anchor)}{guard}(?:{'|'.join(alts)})")
        token_rx.append((rx, tuple(table)))
    _TOKENS_ANY[:] = [LazyRegex("|".join(rx.pattern for rx, _ in token_rx))]
    _TOKEN_RX[:] = token_rx
    _KEYWORD_RX[:] = keyword_rx  # last: the tables are built once this is set


def _line_numbers(text: str, positions: list[int]) -> list[int]:
    """The line (0-based) of each position of ``positions`` (ascending) in ``text``."""
    out = []
    line = prev = 0
    for at in positions:
        line += text.count("\n", prev, at)
        prev = at
        out.append(line)
    return out


def _keyword_lines(low: str) -> tuple[dict[int, list[int]], set[int], int]:
    """(the lines holding a keyword, each with where its keywords are, lines holding ``aws``
    or ``secret``, tags found) in the lowered text ``low``."""
    hits: list[tuple[int, int]] = []
    for rx, tags in _KEYWORD_RX:
        hits.extend((m.start(), tags[m.lastindex or 0]) for m in rx.finditer(low))
    if not hits:
        return {}, set(), 0
    hits.sort()
    keyword: dict[int, list[int]] = {}
    aws: set[int] = set()
    found = 0
    line = prev = 0
    for at, tag in hits:
        line += low.count("\n", prev, at)
        prev = at
        found |= tag
        if tag & _KW:
            keyword.setdefault(line, []).append(at)
        if tag & _AWS:
            aws.add(line)
    return keyword, aws, found


def _token_lines(base: str) -> dict[str, set[int]]:
    """The lines of ``base`` holding a literal of each token pattern, by kind."""
    hits: list[tuple[int, str]] = []
    for rx, table in _TOKEN_RX:
        for m in rx.finditer(base):
            at = m.start()
            for kind, literal, offset in table:
                if at >= offset and base.startswith(literal, at - offset):
                    hits.append((at - offset, kind))
    hits.extend((m.start(), "slack_webhook") for m in _SLACK_HOOK.finditer(base))
    if not hits:
        return {}
    hits.sort()
    out: dict[str, set[int]] = {}
    for (_, kind), line in zip(hits, _line_numbers(base, [at for at, _ in hits]), strict=True):
        out.setdefault(kind, set()).add(line)
    return out


def _lines_of(base: str, needle: str) -> set[int]:
    positions = []
    at = base.find(needle)
    while at >= 0:
        positions.append(at)
        at = base.find(needle, at + 1)
    return set(_line_numbers(base, positions))


#: Lines longer than this (characters) are searched around their keywords for ``assignment``.
_LONG_LINE = 400
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _assignment_starts(text: str, anchors: list[int]) -> list[int] | None:
    """Where a match of ``assignment`` may start on the line of ``text`` holding the keyword
    letters ``anchors`` (positions in ``text``), relative to that line; None: search it all.

    A match's name is a whole run of name characters (at most 80) holding a keyword, preceded
    by nothing, ``$env:``, or ``export``/``set`` and spaces: from each keyword, back to the start
    of its run, then over the spaces before it."""
    line_start = text.rfind("\n", 0, anchors[0]) + 1
    out: set[int] = set()
    for at in anchors:
        start = at
        while start > line_start and text[start - 1] in _NAME_CHARS:
            start -= 1
            if at - start > 80:
                break
        else:
            spaces = start
            while spaces > line_start and text[spaces - 1].isspace():
                spaces -= 1
                if start - spaces > 200:
                    return None
            out.update((start,))
            continue
        # a run longer than a name: no match holds this keyword
    return sorted(s - line_start for s in out if s >= line_start)


def _finds(text: str, needle: str) -> list[int]:
    """Every position of ``needle`` in ``text``, ascending."""
    out = []
    at = text.find(needle)
    while at >= 0:
        out.append(at)
        at = text.find(needle, at + 1)
    return out


def _sub_at(pattern: LazyRegex, replacement: Replacement, text: str, starts: list[int]) -> str:
    """``pattern.sub(replacement, text)`` when no match can start outside ``starts``
    (ascending): the same left-to-right scan, trying only those positions."""
    pieces: list[str] = []
    last = 0
    for start in starts:
        if start < last:
            continue
        m = pattern.match(text, start)
        if m is None:
            continue
        pieces += (
            text[last : m.start()],
            m.expand(replacement) if isinstance(replacement, str) else replacement(m),
        )
        last = m.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _starts(hits: list[int], offsets: tuple[int, ...]) -> list[int]:
    """Where a match may start, given where the literal it holds was found and its offsets."""
    return sorted({hit - offset for hit in hits for offset in offsets if hit >= offset})


class _Unaligned(Exception):
    """A whole-text pattern changed the number of lines (never expected): start over."""


class _Text:
    """The text being redacted, as lines, with the lines changed so far."""

    __slots__ = ("_joined", "_lines", "_low", "base", "collect", "low", "touched")

    def __init__(self, base: str, low: str, collect: list[str] | None) -> None:
        self.base = base
        self.low = low
        self._low: str | None = None
        self.collect = collect  # secret_kinds: record what would change, change nothing
        self.touched: set[int] = set()
        self._lines: list[str] | None = None
        self._joined: str | None = base

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.base.split("\n")
        return self._lines

    def text(self) -> str:
        if self._joined is None:
            self._joined = "\n".join(self.lines)
        return self._joined

    def on_lines(
        self, kind: str, indices: Set[int], anchors: dict[int, list[int]] | None = None
    ) -> None:
        """A pattern whose matches stay within a line, on the lines ``indices``; with
        ``anchors`` (``assignment``), where the keywords of each line were in the text before
        any change: a long line unchanged since is searched around them only."""
        pattern, replacement = _BY_KIND[kind]
        lines = self.lines
        needs = sp.NEEDS.get(kind, ())
        for i in sorted(indices):
            old = lines[i]
            if needs and not sp.holds(old, needs):
                continue  # something every match holds is missing
            if pattern is sp.ASSIGNMENT:
                starts = None
                if anchors and len(old) > _LONG_LINE and i not in self.touched and i in anchors:
                    starts = _assignment_starts(self.base, anchors[i])
                new = sp.sub_assignments(pattern, old, starts)
            else:
                new = pattern.sub(replacement, old)
            if new != old:
                if self.collect is not None:
                    self.collect.append(kind)
                    return
                lines[i] = new
                self.touched.add(i)
                self._joined = self._low = None

    def lowered(self) -> str | None:
        """The current text lowered, None when lowering changes its length (``İ``)."""
        if self._low is None:
            text = self.text()
            self._low = self.low if text is self.base else text.lower()
        return self._low if len(self._low) == len(self.text()) else None

    def whole(self, kind: str, starts: list[int] | None = None) -> None:
        """A pattern that may match across lines, over the whole text; with ``starts``, the
        positions (ascending) where a match of it may start: ``pattern.sub`` tried there only."""
        pattern, replacement = _BY_KIND[kind]
        old = self.text()
        if kind in sp.PER_LINE:
            new = sp.per_line(old, pattern, replacement, sp.TRIGGERS[kind])
        elif starts is None:
            new = pattern.sub(replacement, old)
        else:
            new = _sub_at(pattern, replacement, old, starts)
        if new == old:
            return
        if self.collect is not None:
            self.collect.append(kind)
            return
        lines = new.split("\n")
        if len(lines) != len(self.lines):
            raise _Unaligned
        self.touched.update(
            i for i, (a, b) in enumerate(zip(self.lines, lines, strict=True)) if a != b
        )
        self._lines = lines
        self._joined = new
        self._low = None

    def holding(self, tagged: Set[int], triggers: tuple[str, ...]) -> Set[int]:
        """The lines that hold one of ``triggers`` now: ``tagged`` (those of the text before
        any change) that are unchanged, and changed lines that hold one."""
        if not self.touched:
            return tagged
        out = {i for i in tagged if i not in self.touched}
        for i in self.touched:
            low = self.lines[i].lower()
            if any(trigger in low for trigger in triggers):
                out.add(i)
        return out


def unchanged(text: str) -> bool:
    """True when no pattern can change ``text``: ``redact`` returns it as it is and
    ``secret_kinds`` finds nothing. The candidates of ``_scan`` (each a substring every match of
    a pattern holds), tested cheapest first, for the many short texts of a busy process (chunk
    titles: most hold none). False says nothing."""
    if not _KEYWORD_RX:
        _build()
    low = text.lower()
    if "<private" in low or "bearer" in low or "aws" in low or "secret" in low:
        return False  # private; bearer; aws_secret_key (its triggers)
    if (":" in text or "=" in text or "\uff1a" in text or "\uff1d" in text) and any(
        keyword in low for keyword in sp.KEYWORDS
    ):
        return False  # assignment, json_secret, authorization, url_token_param (its triggers
        # are keywords, its ``=`` a separator): a keyword and a separator
    if "://" in text and ("@" in text or "hooks.slack.com" in text):
        return False  # url_credentials, url_token, slack_webhook
    if "-" in text and (
        "-----BEGIN" in text
        or ("-u" in text and _CLI_HEAD.search(text))
        or ("-p" in text and _MYSQL_HEAD.search(text))
        or _FLAG_HEAD.search(text)
    ):
        return False
    if not text.isascii() and any(c in text for c in _CJK_CHARS):
        return False
    if "pa" in low and _PASSWORD_IS.search(low):
        return False
    return not _TOKENS_ANY[0].search(text)


def redact(text: str) -> str:
    """``core.redact.redact`` for a long text."""
    return _run(text, None)


def secret_kinds(text: str) -> list[str]:
    """``core.redact.secret_kinds`` for a long text."""
    kinds: list[str] = []
    _run(text, kinds)
    return kinds


def _run(text: str, collect: list[str] | None) -> str:
    try:
        return _scan(text, collect)
    except _Unaligned:
        if collect is not None:
            collect[:] = sp.plain_secret_kinds(text)
            return text
        return sp.plain_redact(text)


def _scan(text: str, collect: list[str] | None) -> str:
    if not _KEYWORD_RX:
        _build()
    low0 = text.lower()
    gates: dict[str, bool] = {}
    ascii_only = low0.isascii()  # then no trigger of another script can be in it

    def gate(kind: str) -> bool:
        """The rule: does the lowered text hold one of the pattern's triggers?"""
        found = gates.get(kind)
        if found is None:
            found = gates[kind] = any(
                trigger in low0 for trigger in sp.TRIGGERS[kind] if ascii_only <= trigger.isascii()
            )
        return found

    if "<private" in low0:
        if collect is None:
            text_out = sp.PRIVATE.sub("[private]", text)
        else:
            text_out = text
            if sp.PRIVATE.search(text):
                collect.append("private")
    else:
        text_out = text
    key, replacement = _BY_KIND["private_key"]
    if key.search(text_out) and gate("private_key"):
        new = key.sub(replacement, text_out)
        if collect is None:
            text_out = new
        elif new != text_out:
            collect.append("private_key")
    base = text_out
    low = low0 if base is text else base.lower()
    keyword, aws, found = _keyword_lines(low)
    if base is text:  # the keyword scan saw every trigger of these patterns
        gates["assignment"] = gates["json_secret"] = bool(keyword)
        gates["aws_secret_key"] = bool(aws)
        gates["bearer"] = bool(found & _BEARER)
        gates["authorization"] = bool(found & _AUTH)
    state = _Text(base, low, collect)
    aligned = len(low) == len(base)  # keyword positions are positions in the text

    tokens = _token_lines(base)
    for kind in _TOKEN_KINDS:
        lines = tokens.get(kind)
        if lines and gate(kind):
            state.on_lines(kind, lines)
        if kind == "slack_token":  # slack_webhook comes next in pattern order
            lines = tokens.get("slack_webhook")
            if lines and gate("slack_webhook"):
                state.on_lines("slack_webhook", lines)
    for kind, flag, needle, offsets in (
        ("authorization", _AUTH, "authorization", (0, 6)),  # (proxy-)authorization
        ("bearer", _BEARER, "bearer", (0,)),
    ):
        if found & flag and gate(kind):
            lowered = state.lowered()
            starts = None if lowered is None else _starts(_finds(lowered, needle), offsets)
            state.whole(kind, starts)
    if "@" in base and "://" in base:
        urls = (
            _lines_of(base, "://") if base.count("://") <= base.count("@") else _lines_of(base, "@")
        )
        urls = {i for i in urls if "@" in state.lines[i] and "://" in state.lines[i]}
        for kind in ("url_credentials", "url_token"):
            if urls and gate(kind):
                state.on_lines(kind, urls)
    if "?" in base or "&" in base:
        heads = [m.start() for m in _PARAM_HEAD.finditer(base)]
        if heads and gate("url_token_param"):
            state.on_lines("url_token_param", set(_line_numbers(base, heads)))
    if "-u" in base and _CLI_HEAD.search(base) and gate("cli_credentials"):
        state.whole("cli_credentials", _starts(_finds(state.text(), "-u"), (0, 1, 7)))
    # An ASCII text holds a flag's word only as a lowered keyword (``ſ`` is not ASCII).
    flags = keyword or not ascii_only
    if flags and _FLAG_HEAD.search(base) and gate("secret_flag"):  # -token, --password...
        heads = [m.start() for m in _FLAG_HEAD.finditer(state.text())]
        state.whole("secret_flag", _starts(heads, (0, 1)))
    if _MYSQL_HEAD.search(base) and gate("mysql_password"):
        state.whole("mysql_password")  # per line, the lines naming the tool: rare, as written
    if gate("aws_secret_key"):
        held = state.holding(aws, sp.TRIGGERS["aws_secret_key"])
        if held:
            state.on_lines("aws_secret_key", held)
    for kind in ("assignment", "json_secret"):
        if gate(kind):
            held = state.holding(keyword.keys(), sp.KEYWORDS)
            if held:
                state.on_lines(kind, held, keyword if aligned else None)
    lowered = state.lowered()
    if lowered is not None and (ascii_only or not any(c in base for c in _CJK_CHARS)):
        heads = [m.start() for m in _PASSWORD_IS.finditer(lowered)]
        if heads and gate("cjk_secret"):
            state.whole("cjk_secret", heads)
    elif gate("cjk_secret"):
        state.whole("cjk_secret")
    return state.text()
