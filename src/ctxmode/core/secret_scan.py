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
"""

from __future__ import annotations

from ctxmode.core import secret_patterns as sp
from ctxmode.core._lean import LazyRegex

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from ctxmode.core.secret_patterns import Replacement

#: Tags of a keyword hit.
_KW, _AUTH, _PASS, _BEARER, _AWS = 1, 2, 4, 8, 16

#: Every keyword of ``secret_patterns.KEYWORDS`` (and ``aws``) by one anchor letter: what follows
#: the anchor is matched (it never holds the anchor letter, so no anchor is skipped), what
#: precedes it is a look-behind. At one anchor the alternatives exclude each other.
_KEYWORD_ANCHORS: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (
    ("k", (("en(?<=token)", _KW), ("ey", _KW), ("ie(?<=cookie)", _KW), ("(?<=webhook)", _KW))),
    ("d", (("sn", _KW), ("ential(?<=credential)", _KW), ("(?<=pwd)", _KW))),
    (
        "a",
        (
            ("uth", _KW | _AUTH),
            ("ss(?<=pass)", _KW | _PASS),
            ("lt(?<=salt)", _KW),
            ("rer(?<=bearer)", _KW | _BEARER),
            ("ws", _AWS),
        ),
    ),
    ("c", (("ret(?<=secret)", _KW | _AWS), ("onn", _KW))),
    ("g", (("(?<=sig)", _KW),)),
)

#: The literals every match of a token pattern starts with (case as in the text), by kind.
_TOKEN_LITERALS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("jwt", ("eyJ",)),
    ("aws_access_key", ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "APKA")),
    ("cloud_access_key", ("LTAI", "AKID")),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ("gitlab_token", ("glpat-", "gldt-", "glptt-", "glrt-")),
    ("slack_token", ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xapp-")),
    ("anthropic_key", ("sk-ant-",)),
    ("openai_key", ("sk-",)),
    (
        "stripe_key",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_", "whsec_"),
    ),
    ("google_api_key", ("AIza",)),
    ("google_oauth", ("ya29.",)),
    ("npm_token", ("npm_",)),
    ("pypi_token", ("pypi-AgE",)),
    ("huggingface_token", ("hf_",)),
    ("sendgrid_key", ("SG.",)),
    (
        "service_token",
        (
            "dop_v1_",
            "shpat_",
            "shpss_",
            "shpca_",
            "shppa_",
            "gsk_",
            "r8_",
            "pplx-",
            "tvly-",
            "lin_api_",
            "dp.st.",
            "dp.pt.",
            "dp.ct.",
            "dp.sa.",
            "ATATT3",
        ),
    ),  # fmt: skip
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
_FLAG_HEAD = LazyRegex(r"-(?i:pass|token|api|secret|access|auth|refresh|private)")
#: Something every match of ``cjk_secret`` holds.
_CJK_HEAD = LazyRegex(r"密码|口令|密钥|秘钥|私钥|令牌|凭证|凭据|授权码|(?i:password|passphrase)")

_BY_KIND: dict[str, tuple[LazyRegex, Replacement]] = {k: (p, r) for k, p, r in sp.PATTERNS}
_TOKEN_KINDS = tuple(kind for kind, _ in _TOKEN_LITERALS)

#: Built on first use: (regex, tags by group) per keyword anchor; (regex, [(kind, literal,
#: offset of the anchor)]) per token anchor.
_KEYWORD_RX: list[tuple[LazyRegex, tuple[int, ...]]] = []
_TOKEN_RX: list[tuple[LazyRegex, tuple[tuple[str, str, int], ...]]] = []


def _build() -> None:
    import re

    for anchor, alternatives in _KEYWORD_ANCHORS:
        body = "|".join(f"({alt})" for alt, _ in alternatives)
        tags = (0, *(tag for _, tag in alternatives))
        _KEYWORD_RX.append((LazyRegex(f"{anchor}(?:{body})"), tags))
    by_anchor: dict[str, list[tuple[str, str, int]]] = {c: [] for c in _TOKEN_ANCHOR_CHARS}
    for kind, literals in _TOKEN_LITERALS:
        for literal in literals:
            anchor = next(c for c in _TOKEN_ANCHOR_CHARS if c in literal)
            by_anchor[anchor].append((kind, literal, literal.index(anchor)))
    for anchor, table in by_anchor.items():
        alts = []
        for _, literal, at in table:
            alt = f"(?<={re.escape(literal[: at + 1])})" if at else ""
            alts.append(
                alt + (f"(?={re.escape(literal[at + 1 :])})" if at + 1 < len(literal) else "")
            )
        # One look-behind on the character before the anchor first: most anchors fail it.
        before = {literal[at - 1] for _, literal, at in table if at}
        guard = (
            f"(?<=[{re.escape(''.join(sorted(before)))}]{re.escape(anchor)})"
            if all(at for _, _, at in table)
            else ""
        )
        rx = LazyRegex(f"{re.escape(anchor)}{guard}(?:{'|'.join(alts)})")
        _TOKEN_RX.append((rx, tuple(table)))


def _line_numbers(text: str, positions: list[int]) -> list[int]:
    """The line (0-based) of each position of ``positions`` (ascending) in ``text``."""
    out = []
    line = prev = 0
    for at in positions:
        line += text.count("\n", prev, at)
        prev = at
        out.append(line)
    return out


def _keyword_lines(low: str) -> tuple[set[int], set[int], int]:
    """(lines holding a keyword, lines holding ``aws`` or ``secret``, tags found) in the
    lowered text ``low``."""
    hits: list[tuple[int, int]] = []
    for rx, tags in _KEYWORD_RX:
        hits.extend((m.start(), tags[m.lastindex or 0]) for m in rx.finditer(low))
    if not hits:
        return set(), set(), 0
    hits.sort()
    keyword: set[int] = set()
    aws: set[int] = set()
    found = 0
    line = prev = 0
    for at, tag in hits:
        line += low.count("\n", prev, at)
        prev = at
        found |= tag
        if tag & _KW:
            keyword.add(line)
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


class _Unaligned(Exception):
    """A whole-text pattern changed the number of lines (never expected): start over."""


class _Text:
    """The text being redacted, as lines, with the lines changed so far."""

    __slots__ = ("_joined", "_lines", "base", "collect", "touched")

    def __init__(self, base: str, collect: list[str] | None) -> None:
        self.base = base
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

    def on_lines(self, kind: str, indices: set[int]) -> None:
        """A pattern whose matches stay within a line, on the lines ``indices``."""
        pattern, replacement = _BY_KIND[kind]
        lines = self.lines
        for i in sorted(indices):
            old = lines[i]
            if pattern is sp.ASSIGNMENT:
                new = sp.sub_assignments(pattern, old)
            else:
                new = pattern.sub(replacement, old)
            if new != old:
                if self.collect is not None:
                    self.collect.append(kind)
                    return
                lines[i] = new
                self.touched.add(i)
                self._joined = None

    def whole(self, kind: str) -> None:
        """A pattern that may match across lines, over the whole text."""
        pattern, replacement = _BY_KIND[kind]
        old = self.text()
        if kind in sp.PER_LINE:
            new = sp.per_line(old, pattern, replacement, sp.TRIGGERS[kind])
        else:
            new = pattern.sub(replacement, old)
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

    def holding(self, tagged: set[int], triggers: tuple[str, ...]) -> set[int]:
        """The lines that hold one of ``triggers`` now: ``tagged`` (those of the text before
        any change) that are unchanged, and changed lines that hold one."""
        if not self.touched:
            return tagged
        out = tagged - self.touched
        for i in self.touched:
            low = self.lines[i].lower()
            if any(trigger in low for trigger in triggers):
                out.add(i)
        return out


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

    def gate(kind: str) -> bool:
        """The rule: does the lowered text hold one of the pattern's triggers?"""
        found = gates.get(kind)
        if found is None:
            found = gates[kind] = any(trigger in low0 for trigger in sp.TRIGGERS[kind])
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
    state = _Text(base, collect)

    tokens = _token_lines(base)
    for kind in _TOKEN_KINDS:
        lines = tokens.get(kind)
        if lines and gate(kind):
            state.on_lines(kind, lines)
        if kind == "slack_token":  # slack_webhook comes next in pattern order
            lines = tokens.get("slack_webhook")
            if lines and gate("slack_webhook"):
                state.on_lines("slack_webhook", lines)
    if found & _AUTH and gate("authorization"):
        state.whole("authorization")
    if found & _BEARER and gate("bearer"):
        state.whole("bearer")
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
    if "-u" in base and gate("cli_credentials"):
        state.whole("cli_credentials")
    if _FLAG_HEAD.search(base) and gate("secret_flag"):
        state.whole("secret_flag")
    if "-p" in base and gate("mysql_password"):
        state.whole("mysql_password")  # per line, the lines naming the tool: rare, as written
    if gate("aws_secret_key"):
        lines = state.holding(aws, sp.TRIGGERS["aws_secret_key"])
        if lines:
            state.on_lines("aws_secret_key", lines)
    for kind in ("assignment", "json_secret"):
        if gate(kind):
            lines = state.holding(keyword, sp.KEYWORDS)
            if lines:
                state.on_lines(kind, lines)
    cjk = found & _PASS if base.isascii() else _CJK_HEAD.search(base)
    if cjk and gate("cjk_secret"):
        state.whole("cjk_secret")
    return state.text()
