"""Secret redaction: applied before anything is written and again before it is returned.

Pure functions over text. Each pattern replaces the secret part with ``[REDACTED:<kind>]`` and
keeps enough around it (variable names, URL hosts) for the text to stay useful. Text between
``<private>`` and ``</private>`` is removed entirely.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ctxmode.core._lean import LazyRegex

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any

Replacement = str | Callable[[re.Match[str]], str]


#: Lower-case fragments of the secret-looking names ``_SECRET_NAME`` matches.
_KEYWORDS = ("pass", "pwd", "secret", "token", "key", "credential", "auth", "dsn", "conn")

_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|API_?KEY|APIKEY|ACCESS_?KEY|"
    r"PRIVATE_?KEY|CREDENTIALS?|AUTH|SESSION_?KEY|CLIENT_?SECRET|DSN|CONN(?:ECTION)?_?STR(?:ING)?)"
    r"[A-Za-z0-9_.-]*"
)

#: An unquoted assignment value that is code, not a literal: a call or subscript
#: (``getpass.getpass()``, ``os.environ['X']``), a variable reference (``$TOKEN``, ``%PASS%``),
#: a dotted name (``self.token``, ``settings.api_key``) or a number of at most 4 digits
#: (``MIN_LENGTH = 12``).
_CODE_VALUE = LazyRegex(
    r"^(?:[^\"']*[(\[{].*|[$%].*|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\.?|\d{1,4})$"
)


#: Words after a secret-looking name and a colon that make it an identifier or prose, not a
#: credential field: ``TokenExpiredError: session expired``, ``RefreshTokenReused: old token``.
_NAME_TAILS = (
    "error",
    "exception",
    "warning",
    "failure",
    "reused",
    "expired",
    "invalid",
    "denied",
    "missing",
    "mismatch",
    "required",
    "found",
    "count",
    "limit",
    "type",
)


_FILE_NAME = LazyRegex(
    r"\.(?:py|pyi|js|jsx|ts|tsx|mjs|cjs|go|rs|rb|java|kt|c|h|cc|cpp|cs|php|sh|md|json|ya?ml"
    r"|toml)$"
)


def _credential_like(value: str) -> bool:
    """Could an unquoted word after ``name:`` be a credential? At least 8 characters with a
    digit, a symbol of encodings (``+/=_-``) or an inner capital: ``hunter2pass``, ``sk-...``,
    ``plainAssignToken55``; ordinary words (``session``, ``prefix``, ``Received``) are not."""
    if len(value) < 8:
        return False
    if any(c.isdigit() for c in value) or any(c in "+/=_-." for c in value):
        return True
    return any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)


def _assignment(m: re.Match[str]) -> str:
    head, value = m.group(1), m.group(2)
    if _CODE_VALUE.match(value):
        return m.group(0)
    if "=" not in head and value[:1] not in "\"'":
        # ``name: word`` is YAML, a header or prose: a credential only if the value looks like
        # one, and never after an error or exception class name.
        name = head.split(":", 1)[0].strip().lower()
        if (
            name.endswith(_NAME_TAILS)
            or _FILE_NAME.search(name)  # tests/test_password.py::test_x, auth.js:12
            or value.startswith(":")
            or not _credential_like(value)
        ):
            return m.group(0)
    return head + "[REDACTED:secret]"


_PATTERNS: tuple[tuple[str, LazyRegex, Replacement], ...] = (
    (
        "private_key",
        LazyRegex(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        "[REDACTED:private_key]",
    ),
    (
        "jwt",
        LazyRegex(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        "[REDACTED:jwt]",
    ),
    (
        "aws_access_key",
        LazyRegex(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
        "[REDACTED:aws]",
    ),
    (
        "github_token",
        LazyRegex(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
        "[REDACTED:github]",
    ),
    ("gitlab_token", LazyRegex(r"\bglpat-[A-Za-z0-9_-]{20,}"), "[REDACTED:gitlab]"),
    ("slack_token", LazyRegex(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), "[REDACTED:slack]"),
    (
        "slack_webhook",
        LazyRegex(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"),
        "[REDACTED:slack_webhook]",
    ),
    ("anthropic_key", LazyRegex(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), "[REDACTED:anthropic]"),
    (
        "openai_key",
        LazyRegex(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        "[REDACTED:openai]",
    ),
    (
        "stripe_key",
        LazyRegex(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        "[REDACTED:stripe]",
    ),
    ("google_api_key", LazyRegex(r"\bAIza[0-9A-Za-z_-]{35}\b"), "[REDACTED:google]"),
    ("npm_token", LazyRegex(r"\bnpm_[A-Za-z0-9]{36}\b"), "[REDACTED:npm]"),
    (
        "authorization",
        # Also as a JSON key ("Authorization": "...") and in JSON-escaped text (\"...\").
        LazyRegex(
            r"(?i)\b((?:proxy-)?authorization(?:\\?[\"'])?\s*[:=]\s*(?:\\?[\"'])?)"
            r"(?:(?:bearer|basic|token|digest)\s+)?[^\s\"',;\\]+"
        ),
        r"\1[REDACTED:auth]",
    ),
    (
        "bearer",
        LazyRegex(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}"),
        r"\1[REDACTED:auth]",
    ),
    (
        "url_credentials",
        LazyRegex(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)"),
        r"\1[REDACTED:url_password]\2",
    ),
    (
        "url_token_param",
        LazyRegex(
            r"(?i)([?&](?:access_token|token|api_key|apikey|key|secret|password|sig|signature)=)"
            r"[^&\s#\"']+"
        ),
        r"\1[REDACTED:url_param]",
    ),
    (
        "assignment",
        LazyRegex(
            r"(?i)\b((?:export\s+|set\s+|\$env:)?" + _SECRET_NAME + r"\s*[:=]\s*)"
            r"(\\\"[^\"\n\\]*\\\"|\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;\\]+)"
        ),
        _assignment,
    ),
    (
        "json_secret",
        # Plain JSON and JSON-escaped inside another string (a dumped payload, a log line).
        LazyRegex(r"(?i)(\\?\"" + _SECRET_NAME + r"\\?\"\s*:\s*)(\\?\")(?:[^\"\n\\]|\\[^\"\n])*\2"),
        r"\1\2[REDACTED:secret]\2",
    ),
)

_PRIVATE = LazyRegex(r"<private>.*?(?:</private>|\Z)", re.DOTALL | re.IGNORECASE)

#: Lower-case substrings at least one of which every match of a pattern contains. A text
#: without any of them skips the pattern (and never compiles it).
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "private_key": ("private key",),
    "jwt": ("eyj",),
    "aws_access_key": ("akia", "asia", "agpa", "aida", "aroa"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-",),
    "slack_token": ("xox",),
    "slack_webhook": ("hooks.slack.com",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "stripe_key": ("_live_", "_test_"),
    "google_api_key": ("aiza",),
    "npm_token": ("npm_",),
    "authorization": ("authorization",),
    "bearer": ("bearer",),
    "url_credentials": ("://",),
    "url_token_param": ("token", "key", "secret", "password", "sig"),
    "assignment": _KEYWORDS,
    "json_secret": _KEYWORDS,
}
#: Patterns applied line by line, to lines holding a trigger: their leading name part would
#: otherwise be retried at every position of a large text (seconds on megabytes of logs).
_PER_LINE = frozenset({"assignment", "json_secret"})


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced and ``<private>`` sections removed."""
    if not text:
        return text
    lower = text.lower()
    out = _PRIVATE.sub("[private]", text) if "<private" in lower else text
    for kind, pattern, replacement in _PATTERNS:
        triggers = _TRIGGERS.get(kind, ())
        if triggers and not any(t in lower for t in triggers):
            continue
        if kind in _PER_LINE:
            out = _per_line(out, pattern, replacement, triggers)
        else:
            out = pattern.sub(replacement, out)
    return out


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret (pattern names, ``private`` for a ``<private>`` section) that
    ``redact`` would replace in ``text``, in pattern order; empty when it would change nothing.
    """
    if not text:
        return []
    lower = text.lower()
    kinds = ["private"] if "<private" in lower and _PRIVATE.search(text) else []
    for kind, pattern, replacement in _PATTERNS:
        triggers = _TRIGGERS.get(kind, ())
        if triggers and not any(t in lower for t in triggers):
            continue
        if kind in _PER_LINE:
            changed = _per_line(text, pattern, replacement, triggers) != text
        else:
            changed = pattern.sub(replacement, text) != text
        if changed:
            kinds.append(kind)
    return kinds


def _per_line(
    text: str, pattern: LazyRegex, replacement: Replacement, triggers: tuple[str, ...]
) -> str:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        low = line.lower()
        if any(t in low for t in triggers):
            lines[i] = pattern.sub(replacement, line)
    return "\n".join(lines)


def redact_env_file(text: str) -> str:
    """Mask every value of a ``.env``-style file (``NAME=value`` lines), whatever the name."""
    lines = []
    for line in text.splitlines():
        m = re.match(r"^(\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*\s*=\s*).+$", line)
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
