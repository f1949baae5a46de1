"""Secret redaction: applied before anything is written and again before it is returned.

Pure functions over text. Each pattern replaces the secret part with ``[REDACTED:<kind>]`` and
keeps enough around it (variable names, URL hosts) for the text to stay useful. Text between
``<private>`` and ``</private>`` is removed entirely.
"""

from __future__ import annotations

import re
from typing import Any

_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|API_?KEY|APIKEY|ACCESS_?KEY|"
    r"PRIVATE_?KEY|CREDENTIALS?|AUTH|SESSION_?KEY|CLIENT_?SECRET|DSN|CONN(?:ECTION)?_?STR(?:ING)?)"
    r"[A-Za-z0-9_.-]*"
)

_PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        "[REDACTED:private_key]",
    ),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        "[REDACTED:jwt]",
    ),
    (
        "aws_access_key",
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
        "[REDACTED:aws]",
    ),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
        "[REDACTED:github]",
    ),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), "[REDACTED:gitlab]"),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), "[REDACTED:slack]"),
    (
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"),
        "[REDACTED:slack_webhook]",
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), "[REDACTED:anthropic]"),
    (
        "openai_key",
        re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        "[REDACTED:openai]",
    ),
    (
        "stripe_key",
        re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        "[REDACTED:stripe]",
    ),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), "[REDACTED:google]"),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), "[REDACTED:npm]"),
    (
        "authorization",
        re.compile(
            r"(?i)\b((?:proxy-)?authorization\s*[:=]\s*[\"']?)"
            r"(?:(?:bearer|basic|token|digest)\s+)?[^\s\"',;]+"
        ),
        r"\1[REDACTED:auth]",
    ),
    (
        "bearer",
        re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}"),
        r"\1[REDACTED:auth]",
    ),
    (
        "url_credentials",
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)"),
        r"\1[REDACTED:url_password]\2",
    ),
    (
        "url_token_param",
        re.compile(
            r"(?i)([?&](?:access_token|token|api_key|apikey|key|secret|password|sig|signature)=)"
            r"[^&\s#\"']+"
        ),
        r"\1[REDACTED:url_param]",
    ),
    (
        "assignment",
        re.compile(
            r"(?i)\b((?:export\s+|set\s+|\$env:)?" + _SECRET_NAME + r"\s*[:=]\s*)"
            r"(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;]+)"
        ),
        r"\1[REDACTED:secret]",
    ),
    (
        "json_secret",
        re.compile(r"(?i)(\"" + _SECRET_NAME + r"\"\s*:\s*)\"[^\"\n]*\""),
        r'\1"[REDACTED:secret]"',
    ),
)

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.DOTALL | re.IGNORECASE)


def redact(text: str) -> str:
    """Return ``text`` with secrets replaced and ``<private>`` sections removed."""
    if not text:
        return text
    out = _PRIVATE.sub("[private]", text)
    for _kind, pattern, replacement in _PATTERNS:
        out = pattern.sub(replacement, out)
    return out


def redact_env_file(text: str) -> str:
    """Mask every value of a ``.env``-style file (``NAME=value`` lines), whatever the name."""
    lines = []
    for line in text.splitlines():
        m = re.match(r"^(\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*\s*=\s*).+$", line)
        lines.append(m.group(1) + "[REDACTED:env]" if m else redact(line))
    return "\n".join(lines)


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dict keys are kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value
