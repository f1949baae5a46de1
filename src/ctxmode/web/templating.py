"""Jinja2 environment of the viewer: autoescaping on, strict undefined, display filters.

The only markup built in Python is search highlighting, which escapes the snippet first.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from ctxmode.web.i18n import Loader

TEMPLATES_DIR = Path(__file__).parent / "templates"


def _fmt_time(ts: int | None) -> str:
    if not ts:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _first_line(text: str, width: int = 120) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def _compact_json(value: Any, width: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


_MARKED = re.compile(r"\*\*(.+?)\*\*", re.S)


def highlight(snippet: str) -> Markup:
    """Escape a search snippet and turn its ``**match**`` markers into ``<mark>`` elements."""
    out: list[str] = []
    last = 0
    for m in _MARKED.finditer(snippet):
        out.append(str(escape(snippet[last : m.start()])))
        out.append(f"<mark>{escape(m.group(1))}</mark>")
        last = m.end()
    out.append(str(escape(snippet[last:])))
    return Markup("".join(out))


def _event_sentence(event: Any) -> str:
    from ctxmode.store import Store

    return Store.describe_event(event, limit=300)


def snapshot_card(text: str) -> list[tuple[str, list[str]]]:
    """A resume snapshot as (section, lines) for a readable card: each element of
    ``<session_knowledge>`` is a section, each child a line (its text, then its attributes).
    Empty when the text does not parse: the page then shows the raw XML alone."""
    import xml.etree.ElementTree as ET

    start, end = text.find("<session_knowledge"), text.rfind("</session_knowledge>")
    if start < 0 or end < 0:
        return []
    try:
        root = ET.fromstring(text[start : end + len("</session_knowledge>")])
    except ET.ParseError:
        return []
    card: list[tuple[str, list[str]]] = []
    for section in root:
        lines = []
        for item in section if len(section) else [section]:
            attrs = ", ".join(f"{k} {v}" for k, v in item.attrib.items())
            body = (item.text or "").strip()
            lines.append(" · ".join(p for p in (body, attrs) if p) or item.tag)
        card.append((section.tag.replace("_", " "), lines))
    return card


def make_env() -> jinja2.Environment:
    """The template environment: autoescape everything, fail on undefined names."""
    env = jinja2.Environment(
        loader=Loader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["dt"] = _fmt_time
    env.filters["size"] = _fmt_bytes
    env.filters["first_line"] = _first_line
    env.filters["highlight"] = highlight
    env.filters["compact_json"] = _compact_json
    env.filters["sentence"] = _event_sentence
    env.filters["snapshot_card"] = snapshot_card
    return env
