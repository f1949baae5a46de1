"""The secret patterns of ``core.redact``: what each one matches and keeps, and the lower-case
substrings (triggers) that decide whether it runs on a text or a line.

Invariants:
- a boundary is an ASCII one: no pattern relies on ``\\b`` (a CJK character is a word character
  to Python's ``re``, so ``密钥sk-…`` has no ``\\b`` before ``sk``); ``(?<![A-Za-z0-9_])`` and
  ``(?![A-Za-z0-9_])`` treat CJK text and full-width punctuation (``，：＝``) as a boundary;
- a value is a secret by its shape (a known prefix, a random-looking token) or because a
  password-like name holds it; a name containing ``token``/``key``/``secret`` alone never makes
  a value secret (``max_tokens = 16384``, ``REFRESH_TOKEN_TTL = 604800``, ``author_id = 1234``
  and ``OAUTH_CALLBACK_URL=https://…`` stay as written).

The meaning of a text's redaction is fixed here: the patterns whose triggers the lowered text
holds run in this order, each over the result of the previous one, those of ``PER_LINE`` only on
the lines holding one of their triggers. ``plain_redact`` applies it as written (skipping a
pattern whose ``NEEDS`` the text lacks: it could not match), for short texts; ``core.secret_scan``
computes the same result on long ones without scanning for every trigger. Standard library
only, nothing compiled at import (hook path).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable

from ctxmode.core import secret_shapes as shapes
from ctxmode.core._lean import LazyRegex

Replacement = str | Callable[[re.Match[str]], str]

#: ASCII word boundaries: CJK text, full-width punctuation and symbols are a boundary.
_B = r"(?<![A-Za-z0-9_])"
_E = r"(?![A-Za-z0-9_])"
_BARE = shapes.BARE
#: Separators between a name and its value, full-width ones included.
_SEP = r"\s*(?::=|[:=\uff1a\uff1d])\s*"


def _assignment(m: re.Match[str]) -> str | None:
    """The redacted match, or None when its value is not a secret."""
    head, name, sep, raw = m.group(1), m.group(2), m.group(3), m.group(4)
    tier = shapes.name_tier(name)
    colon = "=" not in sep and "\uff1d" not in sep
    if (
        tier is None
        or shapes.FILE_NAME.search(name.lower())
        or not shapes.secret_value(raw, tier, colon, spaced=sep != sep.strip())
    ):
        return None
    return head + "[REDACTED:secret]"


#: The longest unquoted value an assignment match holds (the scan stays linear); a longer
#: secret value is replaced whole all the same (``_BARE_RUN``).
_VALUE_CHARS = 512
_BARE_RUN = LazyRegex(_BARE)


def sub_assignments(pattern: LazyRegex, text: str, starts: Iterable[int] | None = None) -> str:
    """``pattern.sub(_assignment, text)``, except that a match whose value is not a secret is
    searched again from its value on (``task:API_KEY=…``, ``TOKEN_TTL: API_KEY=…``), in one
    left-to-right pass. ``starts`` (ascending), when given, holds every position where a match
    may start: the pass tries those only (``core.secret_scan``, long lines)."""
    out: list[str] = []
    pos = last = 0
    candidates = None if starts is None else iter(starts)
    while True:
        if candidates is None:
            m = pattern.search(text, pos)
        else:
            m = None
            for start in candidates:
                if start >= pos and (m := pattern.match(text, start)) is not None:
                    break
        if m is None:
            break
        new = _assignment(m)
        if new is None:
            pos = max(m.start(4), m.start() + 1)
            continue
        end = m.end()
        if m.group(4)[:1] not in "\"'\\":
            run = _BARE_RUN.match(text, end)
            end = run.end() if run else end
        out += (text[last : m.start()], new)
        last = pos = end
    out.append(text[last:])
    return "".join(out)


def _json_secret(m: re.Match[str]) -> str:
    tier = shapes.name_tier(m.group(2))
    value = m.group(4)
    if tier is None or not shapes.secret_value(value, tier, colon=False, spaced=False):
        return m.group(0)
    return m.group(1) + m.group(3) + "[REDACTED:secret]" + m.group(3)


def _authorization(m: re.Match[str]) -> str:
    value = m.group(3)
    if (
        m.group(2)
        or shapes.random_like(value)
        or shapes.credential_like(value)
        and not value.isalpha()
    ):
        return m.group(1) + (m.group(2) or "") + "[REDACTED:auth]"
    return m.group(0)


def _bearer(m: re.Match[str]) -> str:
    value = m.group(2)
    if shapes.random_like(value) or (len(value) >= 12 and any(c.isdigit() for c in value)):
        return m.group(1) + "[REDACTED:auth]"
    return m.group(0)


def _url_userinfo(m: re.Match[str]) -> str:
    user = m.group(2)
    if "sentry" in m.group(3).lower() or shapes.random_like(user):
        return m.group(1) + "[REDACTED:url_token]@" + m.group(3)
    return m.group(0)


def _flag(m: re.Match[str]) -> str:
    value = m.group(3)
    if value.startswith(("$", "%", "[REDACTED", "<", "{{")) or shapes.is_path_or_url(value):
        return m.group(0)
    if value.lower() in shapes.PLACEHOLDERS or len(value) < 4:
        return m.group(0)
    return m.group(1) + m.group(2) + "[REDACTED:secret]" + m.group(2)


def _cjk_secret(m: re.Match[str]) -> str:
    value = m.group(2)
    if value.startswith("[REDACTED") or shapes.is_path_or_url(value):
        return m.group(0)
    word, connector = m.group(1), m.group(1).strip()
    numeric_ok = value.isdigit() and len(value) >= 6 and word.lstrip()[:2] in ("密码", "口令")
    numeric_ok = numeric_ok and connector[-1:] in "是为:：=＝"
    if (
        numeric_ok
        or shapes.random_like(value)
        or (shapes.credential_like(value) and any(c.isdigit() for c in value))
    ):
        return word + "[REDACTED:secret]"
    return m.group(0)


def _aws_secret(m: re.Match[str]) -> str:
    value = m.group(0)
    has = (any(c.isupper() for c in value), any(c.islower() for c in value))
    return "[REDACTED:aws]" if all(has) and any(c.isdigit() for c in value) else value


PATTERNS: tuple[tuple[str, LazyRegex, Replacement], ...] = (
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
        LazyRegex(_B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        "[REDACTED:jwt]",
    ),
    (
        "aws_access_key",
        LazyRegex(_B + r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|APKA)[0-9A-Z]{16}" + _E),
        "[REDACTED:aws]",
    ),
    (
        # Alibaba Cloud (LTAI…) and Tencent Cloud (AKID…) access key ids.
        "cloud_access_key",
        LazyRegex(_B + r"(?:LTAI[0-9A-Za-z]{12,24}|AKID[0-9A-Za-z]{28,36})" + _E),
        "[REDACTED:cloud_key]",
    ),
    (
        "github_token",
        LazyRegex(_B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
        "[REDACTED:github]",
    ),
    (
        "gitlab_token",
        LazyRegex(_B + r"gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_-]{20,}"),
        "[REDACTED:gitlab]",
    ),
    (
        "slack_token",
        LazyRegex(_B + r"(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})"),
        "[REDACTED:slack]",
    ),
    (
        "slack_webhook",
        LazyRegex(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/]+"),
        "[REDACTED:slack_webhook]",
    ),
    ("anthropic_key", LazyRegex(_B + r"sk-ant-[A-Za-z0-9_-]{20,}"), "[REDACTED:anthropic]"),
    (
        "openai_key",
        LazyRegex(_B + r"sk-(?:[a-z]{2,8}-)*[A-Za-z0-9_-]{20,}"),
        "[REDACTED:openai]",
    ),
    (
        "stripe_key",
        LazyRegex(
            _B + r"(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{16,})"
        ),
        "[REDACTED:stripe]",
    ),
    ("google_api_key", LazyRegex(_B + r"AIza[0-9A-Za-z_-]{35}" + _E), "[REDACTED:google]"),
    ("google_oauth", LazyRegex(_B + r"ya29\.[0-9A-Za-z_-]{20,}"), "[REDACTED:google]"),
    ("npm_token", LazyRegex(_B + r"npm_[A-Za-z0-9]{36}" + _E), "[REDACTED:npm]"),
    ("pypi_token", LazyRegex(_B + r"pypi-AgE[A-Za-z0-9_-]{50,}"), "[REDACTED:pypi]"),
    ("huggingface_token", LazyRegex(_B + r"hf_[A-Za-z0-9]{30,}" + _E), "[REDACTED:huggingface]"),
    (
        "sendgrid_key",
        LazyRegex(_B + r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{20,64}"),
        "[REDACTED:sendgrid]",
    ),
    (
        "service_token",
        # DigitalOcean, Shopify, Groq, Replicate, Perplexity, Tavily, Linear, Doppler, Atlassian.
        LazyRegex(
            _B + r"(?:dop_v1_[a-f0-9]{40,}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|gsk_[A-Za-z0-9]{40,}"
            r"|r8_[A-Za-z0-9]{30,}|pplx-[A-Za-z0-9]{40,}|tvly-[A-Za-z0-9-]{24,}"
            r"|lin_api_[A-Za-z0-9]{32,}|dp\.(?:st|pt|ct|sa)\.[A-Za-z0-9_-]{30,}"
            r"|ATATT3[A-Za-z0-9_=-]{40,})"
        ),
        "[REDACTED:token]",
    ),
    (
        "authorization",
        # Also as a JSON key ("Authorization": "...") and in JSON-escaped text (\"...\").
        LazyRegex(
            r"(?ai)(?<![A-Za-z0-9_])((?:proxy-)?authorization(?:\\?[\"'])?\s*[:=\uff1a]\s*"
            r"(?:\\?[\"'])?)((?:bearer|basic|token|digest|negotiate|apikey|sso-key)\s+)?"
            r"([^\s\"',;\\]+)"
        ),
        _authorization,
    ),
    (
        "bearer",
        LazyRegex(r"(?ai)(?<![A-Za-z0-9_])(bearer\s+)([A-Za-z0-9._~+/=-]{12,})"),
        _bearer,
    ),
    (
        "url_credentials",
        LazyRegex(r"(?<![A-Za-z0-9_])([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\[\]]*:)[^\s@/]+(@)"),
        r"\1[REDACTED:url_password]\2",
    ),
    (
        "url_token",
        # A user part alone holding a key: Sentry DSNs, ``https://<token>@host``.
        LazyRegex(r"(?<![A-Za-z0-9_])([A-Za-z][A-Za-z0-9+.-]*://)([A-Za-z0-9_-]{8,})@([^\s/@]+)"),
        _url_userinfo,
    ),
    (
        "url_token_param",
        LazyRegex(
            r"(?i)([?&](?:access_token|token|api_key|apikey|key|secret|password|sig|signature"
            r"|client_secret|auth)=)[^&\s#\"']+"
        ),
        r"\1[REDACTED:url_param]",
    ),
    (
        "cli_credentials",
        # ``curl -u user:pw``, ``--user=user:pw``.
        LazyRegex(
            r"(?<![A-Za-z0-9_-])((?:-u|--user|--proxy-user)(?:\s+|=)(['\"]?)[^\s:'\"]+:)([^\s'\"]+)"
        ),
        lambda m: (
            m.group(0) if m.group(3).startswith(("$", "%")) else m.group(1) + "[REDACTED:secret]"
        ),
    ),
    (
        "secret_flag",
        # ``--password PW``, ``--token=PW``, ``-p PW`` after mysql (see ``mysql_password``).
        LazyRegex(
            r"(?<![A-Za-z0-9_-])(--?(?i:password|passwd|pass|passphrase|token|api-?key"
            r"|secret|client-secret|access-token|auth-token|refresh-token|private-key"
            r"|secret-key|access-key)(?:\s+|=))(['\"]?)(?!-)(" + _BARE + r")\2"
        ),
        _flag,
    ),
    (
        "mysql_password",
        LazyRegex(r"(?<!\S)(-p)(['\"]?)([^\s'\"]{2,})\2(?=\s|$)"),
        lambda m: (
            m.group(0)
            if m.group(3).startswith(("$", "%", "["))
            else m.group(1) + m.group(2) + "[REDACTED:secret]" + m.group(2)
        ),
    ),
    (
        "aws_secret_key",
        LazyRegex(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        _aws_secret,
    ),
    (
        "assignment",
        LazyRegex(
            r"(?<![A-Za-z0-9_.-])((?i:export\s+|set\s+|\$env:)?"
            # A name followed by a separator, tested first: the keyword test below is the costly
            # part, and most words are not followed by one (the test changes no match).
            r"(?=[A-Za-z][A-Za-z0-9_.-]{0,79}\s*[:=\uff1a\uff1d])"
            # Only names holding a keyword: ``task:TOKEN=x`` must not be consumed as ``task:``.
            r"(?=[A-Za-z0-9_.-]{0,79}?(?i:pass|pwd|secret|token|key|credential|auth|dsn|conn"
            r"|salt|sig|cookie|webhook|bearer))"
            r"([A-Za-z][A-Za-z0-9_.-]{0,79})(" + _SEP + r"))"
            r"(\\\"[^\"\n\\]*\\\"|\"[^\"\n]*\"|'[^'\n]*'|" + _BARE[:-1] + "{1,512})"
        ),
        lambda m: _assignment(m) or m.group(0),
    ),
    (
        "json_secret",
        # Plain JSON and JSON-escaped inside another string (a dumped payload, a log line).
        LazyRegex(
            r"((\\?\")([A-Za-z][A-Za-z0-9_.-]{0,79})\\?\"\s*:\s*)(\\?\")"
            r"((?:[^\"\n\\]|\\[^\"\n])*)\4"
        ),
        lambda m: (
            m.group(0)
            if (tier := shapes.name_tier(m.group(3))) is None
            or not shapes.secret_value(m.group(5), tier, colon=False, spaced=False)
            else m.group(1) + m.group(4) + "[REDACTED:secret]" + m.group(4)
        ),
    ),
    (
        "cjk_secret",
        # 密码是 X, 数据库密码：X, 访问令牌=X; "the password is X".
        LazyRegex(
            r"((?:密码|口令|密钥|秘钥|私钥|令牌|凭证|凭据|授权码|(?i:password|passphrase)\s+(?:is|was))"
            r"(?:\s*(?:是|为|设为|设置为|改成|改为|用|使用)?\s*[:=\uff1a\uff1d]?\s*))"
            r"([!#-&*+\--:<-\[\]-~]{6,})"
        ),
        _cjk_secret,
    ),
)

PRIVATE = LazyRegex(r"<private>.*?(?:</private>|\Z)", re.DOTALL | re.IGNORECASE)

#: Keywords of the name-based patterns (lower case).
KEYWORDS = (
    "pass", "pwd", "secret", "token", "key", "credential", "auth", "dsn", "conn", "salt",
    "sig", "cookie", "webhook", "bearer",
)  # fmt: skip

#: Lower-case substrings at least one of which every match of a pattern contains. A text
#: without any of them skips the pattern (and never compiles it).
TRIGGERS: dict[str, tuple[str, ...]] = {
    "private_key": ("private key",),
    "jwt": ("eyj",),
    "aws_access_key": ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "apka"),
    "cloud_access_key": ("ltai", "akid"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-", "gldt-", "glptt-", "glrt-"),
    "slack_token": ("xox", "xapp-"),
    "slack_webhook": ("hooks.slack.com",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "stripe_key": ("_live_", "_test_", "whsec_"),
    "google_api_key": ("aiza",),
    "google_oauth": ("ya29.",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-age",),
    "huggingface_token": ("hf_",),
    "sendgrid_key": ("sg.",),
    "service_token": (
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
        "dp.",
        "atatt3",
    ),  # fmt: skip
    "authorization": ("authorization",),
    "bearer": ("bearer",),
    # Both need "://" and "@"; "@" is the rarer in hook text (every path-free URL has "://").
    "url_credentials": ("@",),
    "url_token": ("@",),
    "url_token_param": ("token", "key", "secret", "password", "sig", "auth"),
    "cli_credentials": ("-u ", "-u=", "-u'", '-u"', "--user", "--proxy-user"),
    "secret_flag": (
        "-pass",
        "-pwd",
        "-token",
        "-api",
        "-secret",
        "-client-secret",
        "-access",
        "-auth",
        "-refresh",
        "-private",
    ),  # fmt: skip
    "mysql_password": ("mysql", "mariadb"),
    "aws_secret_key": ("aws", "secret"),
    "assignment": KEYWORDS,
    "json_secret": KEYWORDS,
    "cjk_secret": (
        "密码",
        "口令",
        "密钥",
        "秘钥",
        "私钥",
        "令牌",
        "凭证",
        "凭据",
        "授权码",
        "password",
        "passphrase",
    ),  # fmt: skip
}
#: The literals every match of a token pattern starts with (case as in the text), by kind.
TOKEN_LITERALS: tuple[tuple[str, tuple[str, ...]], ...] = (
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
#: What every match of a pattern holds (one substring of each group, case as written): a text
#: or line without it is left alone before the pattern runs. ``TOKEN_LITERALS`` adds the token
#: patterns' prefixes.
NEEDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "slack_webhook": (("https://hooks.slack.com/",),),
    "authorization": ((":", "=", "\uff1a"),),
    "url_credentials": (("://",), ("@",)),
    "url_token": (("://",), ("@",)),
    "url_token_param": (("?", "&"), ("=",)),
    "cli_credentials": (("-u",),),
    "secret_flag": (("-",),),
    "mysql_password": (("-p",),),
    "assignment": ((":", "=", "\uff1a", "\uff1d"),),
    "json_secret": (('"',), (":",)),
}


def holds(text: str, needs: tuple[tuple[str, ...], ...]) -> bool:
    """Does ``text`` hold one substring of each group of ``needs``?"""
    for group in needs:  # loops, not generators: this runs once per candidate line
        for part in group:
            if part in text:
                break
        else:
            return False
    return True


#: Patterns applied line by line, to lines holding a trigger: a leading name part would
#: otherwise be retried at every position of a large text (seconds on megabytes of logs), and
#: ``mysql_password`` and ``aws_secret_key`` only apply on the line that names their tool.
ASSIGNMENT = next(p for k, p, _ in PATTERNS if k == "assignment")
PER_LINE = frozenset({"assignment", "json_secret", "mysql_password", "aws_secret_key"})


def per_line(
    text: str, pattern: LazyRegex, replacement: Replacement, triggers: tuple[str, ...]
) -> str:
    """``pattern`` applied to each line of ``text`` that holds one of ``triggers``.

    The lines are found by searching the lowered text for each trigger (C speed), skipping to
    the next line after a hit, instead of testing every trigger on every line in Python.
    """
    lower = text.lower()
    if "\n" not in lower:  # one line: the same result without the bookkeeping
        if not any(trigger in lower for trigger in triggers):
            return text
        if pattern is ASSIGNMENT:
            return sub_assignments(pattern, text)
        return pattern.sub(replacement, text)
    ends: list[int] = []  # index of each line's closing newline in ``lower``
    at = lower.find("\n")
    while at >= 0:
        ends.append(at)
        at = lower.find("\n", at + 1)
    hit: set[int] = set()
    for trigger in triggers:
        at = lower.find(trigger)
        while at >= 0:
            line = bisect_left(ends, at)
            hit.add(line)
            if line >= len(ends):
                break
            at = lower.find(trigger, ends[line] + 1)
    if not hit:
        return text
    lines = text.split("\n")
    for i in hit:
        if pattern is ASSIGNMENT:
            lines[i] = sub_assignments(pattern, lines[i])
        else:
            lines[i] = pattern.sub(replacement, lines[i])
    return "\n".join(lines)


#: (trigger, the patterns it starts), each trigger once; built on first use (import cost is
#: paid by every hook).
_TRIGGER_KINDS: list[tuple[str, frozenset[str]]] = []


def _patterns_for(lower: str) -> list[tuple[str, LazyRegex, Replacement]]:
    """The patterns whose triggers ``lower`` holds, in pattern order: one substring test per
    trigger (C speed) rather than one per trigger and pattern; most hook fields hold none."""
    if not _TRIGGER_KINDS:
        by_trigger: dict[str, set[str]] = {}
        for kind, triggers in TRIGGERS.items():
            for trigger in triggers:
                by_trigger.setdefault(trigger, set()).add(kind)
        _TRIGGER_KINDS.extend((t, frozenset(k)) for t, k in by_trigger.items())
    kinds: set[str] = set()
    for trigger, starts in _TRIGGER_KINDS:
        if trigger in lower:
            kinds |= starts
    return [p for p in PATTERNS if p[0] in kinds] if kinds else []


def plain_redact(text: str) -> str:
    """``redact`` by the rules as written (``secret_patterns``), whatever the text's size."""
    if not text:
        return text
    lower = text.lower()
    out = PRIVATE.sub("[private]", text) if "<private" in lower else text
    for kind, pattern, replacement in _patterns_for(lower):
        if kind in _ALL_NEEDS and not holds(out, _ALL_NEEDS[kind]):
            continue  # cannot match: the same result, without the pass
        if kind in PER_LINE:
            out = per_line(out, pattern, replacement, TRIGGERS[kind])
        else:
            out = pattern.sub(replacement, out)
    return out


def plain_secret_kinds(text: str) -> list[str]:
    """``secret_kinds`` by the rules as written, whatever the text's size."""
    if not text:
        return []
    lower = text.lower()
    kinds = ["private"] if "<private" in lower and PRIVATE.search(text) else []
    for kind, pattern, replacement in _patterns_for(lower):
        if kind in _ALL_NEEDS and not holds(text, _ALL_NEEDS[kind]):
            continue
        if kind in PER_LINE:
            changed = per_line(text, pattern, replacement, TRIGGERS[kind]) != text
        else:
            changed = pattern.sub(replacement, text) != text
        if changed:
            kinds.append(kind)
    return kinds


_ALL_NEEDS: dict[str, tuple[tuple[str, ...], ...]] = {
    **NEEDS,
    **{kind: (literals,) for kind, literals in TOKEN_LITERALS},
}
