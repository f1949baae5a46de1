"""Form and query-string parsing: turn request text into typed values or ``InvalidInput``.

Only the shapes are checked here (numbers, JSON, yes/no); the core validates meaning.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.datastructures import FormData

from ctxmode.core.config import SQLITE_INT_MAX, SQLITE_INT_MIN
from ctxmode.core.errors import InvalidInput


def opt_int(value: str | None, name: str) -> int | None:
    """A whole number, or None for an empty field."""
    raw = (value or "").strip()
    if not raw:
        return None
    if not raw.lstrip("-").isdigit() or not SQLITE_INT_MIN <= int(raw) <= SQLITE_INT_MAX:
        raise InvalidInput(f"{name} must be a whole number, got {raw[:40]!r}")
    return int(raw)


def text(form: FormData, name: str) -> str:
    """A text field ("" when absent or an upload)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


def metadata(raw: str) -> dict[str, Any] | None:
    """A JSON object, or None for an empty field."""
    if not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f'metadata is not valid JSON ({exc.msg}); write an object such as {{"key": "value"}}'
        ) from exc
    if not isinstance(value, dict):
        raise InvalidInput('metadata must be a JSON object such as {"key": "value"}')
    return value


def paths(raw: str) -> list[str]:
    """File paths, one per line or comma-separated."""
    return [p.strip() for p in re.split(r"[\n,]", raw) if p.strip()]


def stale_flag(value: str | None) -> bool | None:
    """The stale filter: "yes", "no" or "" (either)."""
    match (value or "").strip():
        case "":
            return None
        case "yes":
            return True
        case "no":
            return False
        case other:
            raise InvalidInput(f"stale must be yes, no or empty, got {other[:20]!r}")
