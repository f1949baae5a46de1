"""Whether a name holds a secret and whether a value looks like one (``core.redact``).

A name's parts (``DB_PASSWORD`` -> db, password) say what it holds: a password-like part makes
any literal value a secret, a key-like part (token, key, auth, salt...) a random-looking one; a
last part that describes a secret (TTL, limit, URL, id, hasher...) makes the name hold none. A
value is random-looking by its shape: letters and digits mixed like a generated key, not a
number, a word, a path, a URL or a slug. Pure functions; standard library only (hook path).
"""

from __future__ import annotations

from ctxmode.core._lean import LazyRegex

#: An unquoted value: printable ASCII up to a space, quote, comma, semicolon or backslash; any
#: non-ASCII character ends it too (``密码：S3cret，然后`` ends at ``，``). A positive class: a
#: negated one spanning the non-ASCII range costs ~2 ms to compile on every hook.
BARE = r"[!#-&(-+\--:<-\[\]-~]+"


#: Name parts that make a value a secret when it is not code (``PASSWORD=hunter``).
_PASSWORD_PARTS = frozenset(
    {"password", "passwd", "passphrase", "pwd", "pass", "passcode", "secret"}
)
#: Name parts that make a value a secret when it also looks like one (random-looking).
_KEY_PARTS = frozenset(
    {
        "token", "key", "apikey", "accesskey", "secretkey", "privatekey", "credential",
        "credentials", "auth", "dsn", "salt", "signing", "connstr", "connectionstring",
        "cookie", "sig", "signature", "webhook", "bearer",
    }
)  # fmt: skip
#: Suffixes of one-word names (``dbpassword``, ``authtoken``) that count as the part above.
_PASSWORD_SUFFIXES = ("password", "passwd", "passphrase", "secret")
_KEY_SUFFIXES = ("token", "apikey", "accesskey", "secretkey", "privatekey", "credentials")
#: A last name part that makes the name describe a secret rather than hold one:
#: ``REFRESH_TOKEN_TTL``, ``TOKEN_LIMIT``, ``PASSWORD_HASHER``, ``OAUTH_CALLBACK_URL``.
_META_TAILS = frozenset(
    {
        "ttl", "limit", "limits", "length", "len", "count", "size", "max", "min", "url", "uri",
        "urls", "endpoint", "id", "ids", "name", "names", "path", "paths", "file", "files",
        "dir", "type", "types", "hasher", "hashers", "expiry", "expires", "expiration",
        "timeout", "header", "headers", "prefix", "suffix", "env", "var", "field", "fields",
        "format", "mode", "policy", "enabled", "disabled", "version", "algorithm", "alg",
        "label", "kind", "scope", "scopes", "issuer", "audience", "lifetime", "age", "seconds",
        "secs", "ms", "minutes", "mins", "hours", "days", "rounds", "iterations", "budget",
        "window", "rate", "interval", "index", "offset", "error", "errors", "exception",
        "warning", "failure", "required", "missing", "invalid", "expired", "reused", "denied",
        "mismatch", "found", "usage", "used", "provider", "service", "host", "port", "region",
        "user", "username", "email", "method", "strategy", "storage", "hint", "help",
        "description", "desc", "doc", "docs", "example", "pattern", "regex", "rotation",
        "location", "source", "schema", "class", "store", "manager", "handler", "validator",
        "generator", "callback", "redirect", "bucket", "table", "column", "key_id", "keyid",
        "fingerprint", "hash", "digest", "checksum", "reset", "test", "tests",
        "flag", "option", "options", "config", "settings", "setting", "level", "status",
        "state", "strength", "complexity", "chars", "bytes", "bits", "encoding", "type_",
    }
)  # fmt: skip

_NAME_PARTS = LazyRegex(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def name_tier(name: str) -> str | None:
    """``password`` when any value a name holds is a secret, ``key`` when a random-looking
    one is, None when the name says nothing about secrets (or describes one: a TTL, a URL)."""
    parts = [p.lower() for p in _NAME_PARTS.findall(name)]
    if not parts or parts[-1] in _META_TAILS:
        return None
    tier = None
    for part in parts:
        if part in _PASSWORD_PARTS or part.endswith(_PASSWORD_SUFFIXES):
            return "password"
        if part in _KEY_PARTS or part.endswith(_KEY_SUFFIXES):
            tier = "key"
    return tier


#: An unquoted assignment value that is code, not a literal: a call or subscript
#: (``getpass.getpass()``, ``os.environ['X']``), a variable reference (``$TOKEN``, ``%PASS%``,
#: ``{{ .Values.pw }}``), a dotted name (``self.token``, ``settings.api_key``) or a number of at
#: most 4 digits (``MIN_LENGTH = 12``).
_CODE_VALUE = LazyRegex(
    r"^(?:[^\"']*[(\[{].*|[$%].*|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\.?|\d{1,4})$"
)
#: Values that stand for a secret without being one.
PLACEHOLDERS = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "yes", "no", "on", "off",
        "required", "optional", "redacted", "hidden", "masked", "secret", "password", "token",
        "changeme_later", "example", "placeholder", "todo", "tbd", "n/a", "empty",
    }
)  # fmt: skip
FILE_NAME = LazyRegex(
    r"\.(?:py|pyi|js|jsx|ts|tsx|mjs|cjs|go|rs|rb|java|kt|c|h|cc|cpp|cs|php|sh|md|json|ya?ml"
    r"|toml|txt|cfg|ini|conf|pem|key|crt|model|bin|lock|log)$"
)
_TOKEN_CHARS = LazyRegex(r"[A-Za-z0-9+/=_\-.~:!@#%^&*?]+")
_SEGMENTS = LazyRegex(r"[_\-.:/]+")
_TRANSITION = LazyRegex(r"[a-z](?=[A-Z0-9])|[A-Z](?=[a-z0-9])|[0-9](?=[A-Za-z])")


def is_path_or_url(value: str) -> bool:
    return (
        value.startswith(("/", "~/", "./", "../", "\\\\"))
        or "://" in value
        or (len(value) > 2 and value[1] == ":" and value[2] in "\\/")
        or bool(FILE_NAME.search(value.lower()))
    )


def random_like(value: str) -> bool:
    """Does ``value`` look like a generated credential rather than a word, number or slug?

    At least 10 characters of one token with letters and digits (``9f8e7d6c5b4a3f2e1d0c``,
    ``plainAssignToken55667788``), or 16 mixed-case letters changing case often (base64). Not:
    numbers, paths, URLs, file names, dotted names, and slugs whose parts are lower-case or
    upper-case words and numbers (``user_profile_cache_2024``, ``sentencepiece-v2``).
    """
    if len(value) < 10 or value.isdigit() or not _TOKEN_CHARS.fullmatch(value):
        return False
    if is_path_or_url(value):
        return False
    segments = [s for s in _SEGMENTS.split(value) if s]
    if all(s.isdigit() or (s.isalpha() and (s.islower() or s.isupper())) for s in segments):
        return False
    if (
        len(segments) > 1
        and sum(c.isdigit() for c in value) <= 3
        and all(
            s.isdigit() or s.isalpha() or (s[:-1].isalpha() and s[-1].isdigit()) for s in segments
        )
    ):  # sentencepiece-v2.model, release-2024.v3
        return False
    digits = any(c.isdigit() for c in value)
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    changes = len(_TRANSITION.findall(value))
    if digits and (lower or upper):
        return len(value) >= 12 or changes >= 3
    return lower and upper and len(value) >= 16 and changes >= 5


def credential_like(value: str) -> bool:
    """Could an unquoted word after ``password:`` be a credential? At least 8 characters with
    a digit, a symbol or an inner capital: ``hunter2pass``, ``P@ssword!``, ``plainAssign``;
    ordinary words (``required``, ``Received``) and paths are not."""
    if len(value) < 8 or is_path_or_url(value):
        return False
    if any(c.isdigit() for c in value) or any(not c.isalnum() for c in value):
        return True
    return any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)


#: An identifier holding a secret keyword: the head of an assignment of its own.
_KEYWORD_NAME = LazyRegex(
    r"[A-Za-z][A-Za-z0-9_.-]*(?i:pass|pwd|secret|token|key|credential|auth|dsn|conn|salt|sig"
    r"|cookie|webhook|bearer)[A-Za-z0-9_.-]*"
)


def secret_value(raw: str, tier: str, colon: bool, spaced: bool) -> bool:
    quoted = raw[:1] in "\"'" or raw.startswith('\\"')
    value = raw.strip("\\\"'")
    if not value or value.startswith("[REDACTED") or value.lower() in PLACEHOLDERS:
        return False
    inner = value.find("=")
    if inner > 0 and _KEYWORD_NAME.fullmatch(value[:inner]):
        return False  # ``API_KEY=…`` inside the value: judged on its own (``_sub_assignments``)
    if not quoted and _CODE_VALUE.match(raw):
        return False
    if value.startswith(("<", "${", "{{", "***", "xxx", "XXX", "...")) or "://" in value:
        return False
    if tier == "key":
        return random_like(value)
    if is_path_or_url(value):
        return False
    if colon and not quoted:
        return credential_like(value)
    if spaced and not quoted and value.isidentifier():
        return False  # ``password = default_password``: a variable
    if value.isdigit():
        return len(value) >= 6
    return len(value) >= 4
