"""JSON with comments and trailing commas (JSONC): read it, and edit it keeping the comments.

Agents read their settings as JSONC (VS Code's ``mcp.json``, Gemini's ``settings.json``...), so
users put comments in them. ``json`` would drop every comment on a rewrite; instead, ``splice``
replaces, inserts or removes only the top-level members whose value changed and leaves every
other byte where it was. A changed member whose old value holds a comment cannot be rewritten
without losing it: ``splice`` refuses (``InvalidInput`` naming the key) and changes nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from ctxmode.core.errors import InvalidInput

__all__ = ["has_comments", "loads", "splice"]


class _Member(NamedTuple):
    """One top-level ``"key": value`` of an object, by offsets into the text."""

    key: str
    start: int  # the key's opening quote
    value_start: int
    value_end: int
    end: int  # after the member's comma, or value_end when it has none
    commented: bool  # a comment inside the value


def _skip_string(text: str, i: int) -> int:
    """Offset after the string literal starting at ``text[i] == '"'``."""
    j = i + 1
    n = len(text)
    while j < n and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _skip_comment(text: str, i: int) -> int:
    """Offset after the comment at ``i``, or ``i`` when there is none."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    return i


def _skip_blank(text: str, i: int) -> int:
    """Offset of the next character that is neither whitespace nor inside a comment."""
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        after = _skip_comment(text, i)
        if after == i:
            return i
        i = after
    return i


def strip_comments(text: str) -> str:
    """``text`` without comments and trailing commas: plain JSON if it was valid JSONC."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j = _skip_string(text, i)
            out.append(text[i:j])
            i = j
            continue
        after = _skip_comment(text, i)
        if after != i:
            out.append(" ")
            i = after
            continue
        out.append(text[i])
        i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def loads(text: str) -> Any:
    """Parse JSONC; ``json.JSONDecodeError`` when it is not valid even so."""
    return json.loads(strip_comments(text))


def has_comments(text: str) -> bool:
    """True when ``text`` is not plain JSON but is valid JSONC."""
    try:
        json.loads(text)
    except json.JSONDecodeError:
        try:
            loads(text)
        except json.JSONDecodeError:
            return False
        return True
    return False


def _value_end(text: str, i: int) -> tuple[int, bool]:
    """End offset of the JSON value starting at ``i`` and whether a comment sits inside it."""
    n = len(text)
    depth = 0
    commented = False
    while i < n:
        ch = text[i]
        if ch == '"':
            i = _skip_string(text, i)
            if depth == 0:
                return i, commented
            continue
        after = _skip_comment(text, i)
        if after != i:
            if depth == 0:
                return i, commented
            commented = True
            i = after
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            if depth == 0:
                return i, commented
            depth -= 1
            if depth == 0:
                return i + 1, commented
        elif depth == 0 and (ch == "," or ch.isspace()):
            return i, commented
        i += 1
    return i, commented


def _members(text: str) -> tuple[int, int, list[_Member]]:
    """(offset of ``{``, offset of the closing ``}``, members) of the top-level object."""
    i = _skip_blank(text, 0)
    if i >= len(text) or text[i] != "{":
        raise InvalidInput("the document is not a JSON object")
    open_at = i
    members: list[_Member] = []
    i = _skip_blank(text, i + 1)
    while i < len(text) and text[i] != "}":
        start = i
        key_end = _skip_string(text, i)
        key = json.loads(text[i:key_end])
        i = _skip_blank(text, key_end)
        i = _skip_blank(text, i + 1)  # past ':'
        value_start = i
        value_end, commented = _value_end(text, i)
        i = _skip_blank(text, value_end)
        end = value_end
        if i < len(text) and text[i] == ",":
            end = i + 1
            i = _skip_blank(text, i + 1)
        members.append(_Member(key, start, value_start, value_end, end, commented))
    return open_at, i, members


def _render(value: Any, indent: int | str | None, level: int) -> str:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if indent is None:
        return text
    unit = indent if isinstance(indent, str) else " " * indent
    return text.replace("\n", "\n" + unit * level)


def splice(text: str, old: dict[str, Any], new: dict[str, Any], indent: int | str | None) -> str:
    """``text`` (JSONC holding ``old``) edited to hold ``new``; comments outside changes stay.

    Raises ``InvalidInput`` when a member to replace or remove has a comment inside its value.
    """
    open_at, _close_at, members = _members(text)
    by_key = {m.key: m for m in members}
    unit = "" if indent is None else indent if isinstance(indent, str) else " " * indent
    edits: list[tuple[int, int, str]] = []
    for key, member in by_key.items():
        if key in new and new[key] == old.get(key):
            continue
        if member.commented:
            raise InvalidInput(
                f"the {key!r} entry has comments inside it, which a rewrite would lose; remove "
                "them (or add ctxmode's entries by hand) and run again. Nothing was changed"
            )
        if key in new:
            edits.append((member.value_start, member.value_end, _render(new[key], indent, 1)))
        else:
            start = member.start
            line_start = text.rfind("\n", 0, start)
            if line_start >= 0 and not text[line_start + 1 : start].strip():
                start = line_start  # the member's own line goes with it
            edits.append((start, member.end, ""))
    added = [key for key in new if key not in by_key]
    if added:
        sep = "\n" + unit if indent is not None else " "
        body = "".join(
            f"{sep}{json.dumps(key, ensure_ascii=False)}: {_render(new[key], indent, 1)},"
            for key in added
        )
        body = body.rstrip(",")
        remaining = [m for m in members if m.key in new]
        if not remaining:
            insert_at = open_at + 1
            body += "\n" if indent is not None else " "
        else:
            last = remaining[-1]
            insert_at = last.end
            line_end = text.find("\n", insert_at)
            if line_end >= 0 and text[insert_at:line_end].strip().startswith("//"):
                insert_at = line_end  # after the member's own end-of-line comment
            if last.end == last.value_end:  # no comma after the last member yet
                if insert_at == last.value_end:
                    body = "," + body
                else:
                    edits.append((last.value_end, last.value_end, ","))
        edits.append((insert_at, insert_at, body))
    out = text
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + replacement + out[end:]
    return out
