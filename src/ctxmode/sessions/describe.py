"""Events as sentences for people: what was edited, run, failed or decided (``ctxmode events``
and the viewer's timeline), instead of their JSON. Pure functions."""

from __future__ import annotations

import json
from typing import Any

#: Verbs of file events by type; other types are shown as "<type> <path>".
_FILE_VERBS = {"read": "read", "write": "wrote", "edit": "edited", "create": "created",
               "delete": "deleted", "move": "moved", "update": "updated"}  # fmt: skip
#: Data keys that hold an event's main text, the first present wins.
_MAIN_KEYS = (
    "text", "message", "summary", "command", "subject", "name", "query", "url", "ref", "path",
    "branch",
)  # fmt: skip


def describe(category: str, type_: str, data: dict[str, Any], limit: int = 200) -> str:
    """One readable line for an event: what was edited, run, failed or decided, instead of
    its JSON (``ctxmode events``, the viewer's timeline). Newlines become " ⏎ "."""

    def flat(value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        text = " ⏎ ".join(line.strip() for line in text.strip().splitlines() if line.strip())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    main = next((flat(data[k]) for k in _MAIN_KEYS if data.get(k)), "")
    if category == "file":
        verb = _FILE_VERBS.get(type_, type_)
        change = ""
        if data.get("old") or data.get("new"):
            change = f": {flat(data.get('old', '')) or '∅'} → {flat(data.get('new', '')) or '∅'}"
        return f"{verb} {flat(data.get('path', '?'))}{change}"
    if category == "prompt":
        return f"asked: {main}"
    if category == "error":
        tool = f" ({flat(data['tool'])})" if data.get("tool") else ""
        return f"failed{tool}: {main or flat(data)}"
    if category == "task":
        status = f" [{flat(data['status'])}]" if data.get("status") else ""
        return f"task: {main}{status}"
    if category == "git":
        return f"git {type_}" + (f": {main}" if main else "")
    if type_ == "command" or "command" in data and category in ("data", "environment"):
        return f"ran: {flat(data['command'])}" if data.get("command") else f"ran: {main}"
    label = category.replace("_", " ")
    if type_ and type_ != category:
        label += f" ({type_.replace('_', ' ')})"
    if main:
        return f"{label}: {main}"
    rest = ", ".join(f"{k}={flat(v)}" for k, v in data.items())
    return f"{label}: {rest}" if rest else label
