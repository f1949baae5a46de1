"""Read and rewrite agents' config files (JSON, TOML, whole text files) without losing user content.

Invariants:
- A file that cannot be parsed is refused with ``InvalidInput``; it is never rewritten. JSON with
  comments or trailing commas (JSONC, which the agents accept) is edited with ``agents.jsonc``:
  only the top-level entries that change are rewritten, every comment elsewhere stays; an entry
  to change that holds a comment itself is refused, with nothing changed.
- Unchanged data keeps the original bytes: callers compare parsed data and only re-serialise when
  it differs. Re-serialised JSON keeps the file's indentation, line endings and final newline.
- TOML is edited as text (one ``[a.b]`` table block replaced, appended or removed) and the result
  is parsed back and compared with the intended data before anyone may write it.
- Writes are atomic (a temporary file in the same folder, then ``os.replace``) and keep the mode
  of the file they replace.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ctxmode.agents import jsonc
from ctxmode.core.errors import InvalidInput

__all__ = [
    "dump_json",
    "load_json_object",
    "load_toml",
    "read_text",
    "render_toml_table",
    "toml_remove_table",
    "toml_set_array",
    "toml_set_table",
    "write_atomic",
]


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path} ({exc}); fix its permissions or encoding") from exc


def load_json_object(path: Path, text: str | None) -> dict[str, Any] | None:
    """Parse ``text`` (the content of ``path``) as a JSON object; None when the file is absent.

    An empty file counts as ``{}``. Anything else that is not a plain JSON object is refused.
    """
    if text is None:
        return None
    if not text.strip():
        return {}
    try:
        data = jsonc.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it or move it away, then run again. Nothing was changed"
        ) from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} must hold a JSON object, found {type(data).__name__}")
    return data


def dump_json(data: dict[str, Any], previous: str | None, path: Path | None = None) -> str:
    """Serialise ``data`` in the style of ``previous`` (indent, newline style, final newline).

    When ``previous`` is JSONC, only its changed top-level entries are rewritten (comments
    stay); ``InvalidInput`` (naming ``path``) when such an entry holds a comment.
    """
    indent: int | str | None = 2
    if previous is not None and previous.strip():
        indent = _detect_indent(previous)
    if previous is not None and jsonc.has_comments(previous):
        try:
            return jsonc.splice(previous, jsonc.loads(previous), data, indent)
        except InvalidInput as exc:
            raise InvalidInput(f"{path or 'the file'}: {exc}") from exc
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    if previous is None or previous.endswith("\n") or not previous.strip():
        text += "\n"
    if previous is not None and "\r\n" in previous:
        text = text.replace("\n", "\r\n")
    return text


def _detect_indent(text: str) -> int | str | None:
    """Indentation unit of a JSON document; None for a one-line document."""
    for line in text.splitlines()[1:]:
        match = re.match(r"^([ \t]+)\S", line)
        if match:
            unit = match.group(1)
            return "\t" if unit.startswith("\t") else len(unit)
    return None if "\n" not in text.strip() else 2


# --- TOML -------------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]#]+?)\s*\]\]?\s*(#.*)?$")


def load_toml(path: Path, text: str | None) -> dict[str, Any] | None:
    """Parse ``text`` (the content of ``path``) as TOML; None when the file is absent."""
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid TOML ({exc}); fix it or move it away, then run again. "
            "Nothing was changed"
        ) from exc


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # JSON string escapes are a subset of TOML basic-string escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # a user's sub-table (env = {...}) kept inside our table
        items = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise TypeError(f"cannot render {type(value).__name__} as TOML")


def _toml_key(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)


def render_toml_table(keys: tuple[str, ...], body: dict[str, Any]) -> str:
    """``[a.b]`` followed by ``key = value`` lines (tables become inline tables)."""
    lines = ["[" + ".".join(_toml_key(k) for k in keys) + "]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def _header_keys(line: str) -> tuple[str, ...] | None:
    match = _HEADER.match(line)
    if not match:
        return None
    parts: list[str] = []
    for raw in re.findall(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^.]+', match.group(1)):
        raw = raw.strip()
        if raw.startswith('"'):
            parts.append(json.loads(raw))
        elif raw.startswith("'"):
            parts.append(raw[1:-1])
        elif raw:
            parts.append(raw)
    return tuple(parts)


def _table_span(lines: list[str], keys: tuple[str, ...]) -> tuple[int, int] | None:
    """Line range of the ``[keys]`` block and its sub-tables, without trailing comments/blanks."""
    start = next((i for i, line in enumerate(lines) if _header_keys(line) == keys), None)
    if start is None:
        return None
    end = len(lines)
    for i in range(start + 1, len(lines)):
        found = _header_keys(lines[i])
        if found is not None and found[: len(keys)] != keys:
            end = i
            break
    # Comments and blank lines just above the next table belong to that table.
    while end > start + 1 and (
        not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
    ):
        end -= 1
    return start, end


def _without(doc: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """A copy of ``doc`` without ``keys``, dropping parents that only held it."""
    head, *rest = keys
    if head not in doc:
        return doc
    out = dict(doc)
    if not rest:
        del out[head]
        return out
    child = out[head]
    if not isinstance(child, dict):
        return out
    reduced = _without(child, tuple(rest))
    if reduced:
        out[head] = reduced
    else:
        del out[head]
    return out


def _lookup(doc: dict[str, Any], keys: Iterable[str]) -> Any:
    node: Any = doc
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _verify(
    path: Path, before: dict[str, Any], text: str, keys: tuple[str, ...], expect: Any, block: str
) -> None:
    """Refuse an edit unless it parses and changed nothing but ``keys``."""
    try:
        after = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        after = None
    ok = (
        after is not None
        and _without(after, keys) == _without(before, keys)
        and _lookup(after, keys) == expect
    )
    if not ok:
        raise InvalidInput(
            f"cannot edit {path} safely (its [{'.'.join(keys)}] entry or a table around it is "
            f"written in a form ctxmode does not edit). Nothing was changed; edit it by hand:\n"
            f"{block}"
        )


def toml_set_table(
    path: Path, text: str | None, keys: tuple[str, ...], body: dict[str, Any]
) -> str:
    """Return ``text`` with the ``[keys]`` table replaced by (or appended as) ``body``.

    Keys the user added to the existing table are kept after ours. The result is verified.
    """
    before = load_toml(path, text) or {}
    current = _lookup(before, keys)
    merged = dict(body)
    if isinstance(current, dict):
        merged = {**body, **{k: v for k, v in current.items() if k not in body}}
    if current == merged and text is not None:
        return text
    block = render_toml_table(keys, merged)
    source = text or ""
    lines = source.splitlines(keepends=True)
    span = _table_span(lines, keys)
    if current is not None and span is None:
        raise _inline_table_error(path, keys, block)
    if span is None:
        prefix = source
        if prefix and not prefix.endswith("\n"):
            prefix += "\n"
        if prefix.strip() and not prefix.endswith("\n\n"):
            prefix += "\n"
        new = prefix + block
    else:
        start, end = span
        new = "".join(lines[:start]) + block + "".join(lines[end:])
    _verify(path, before, new, keys, merged, block)
    return new


def _inline_table_error(path: Path, keys: tuple[str, ...], block: str) -> InvalidInput:
    return InvalidInput(
        f"{path} defines {'.'.join(keys)} inline or with dotted keys, which ctxmode does not "
        f"edit. Nothing was changed; replace it by hand with:\n{block}"
    )


def toml_remove_table(path: Path, text: str, keys: tuple[str, ...]) -> str:
    """Return ``text`` without the ``[keys]`` table (and its sub-tables). Verified."""
    before = load_toml(path, text) or {}
    if _lookup(before, keys) is None:
        return text
    lines = text.splitlines(keepends=True)
    span = _table_span(lines, keys)
    if span is None:
        raise _inline_table_error(path, keys, "(nothing: remove the entry)")
    start, end = span
    kept = lines[:start] + lines[end:]
    # Undo the blank separator line that an append added.
    if (
        start > 0
        and not kept[start - 1].strip()
        and (start == len(kept) or not kept[start].strip())
    ):
        del kept[start - 1]
    new = "".join(kept)
    _verify(path, before, new, keys, None, f"remove the [{'.'.join(keys)}] table")
    return new


def _array_spans(lines: list[str], key: str) -> list[tuple[int, int]]:
    """Line ranges of the ``[[key]]`` blocks, without trailing comments and blank lines."""
    starts = [
        i
        for i, line in enumerate(lines)
        if line.lstrip().startswith("[[") and _header_keys(line) == (key,)
    ]
    spans = []
    for start in starts:
        end = len(lines)
        for i in range(start + 1, len(lines)):
            if _header_keys(lines[i]) is not None:
                end = i
                break
        while end > start + 1 and (
            not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
        ):
            end -= 1
        spans.append((start, end))
    return spans


def toml_set_array(
    path: Path,
    text: str | None,
    key: str,
    entries: list[dict[str, Any]],
    ours: Callable[[Any], bool],
) -> str:
    """Return ``text`` with the ``[[key]]`` tables that ``ours`` accepts replaced by
    ``entries``, appended at the end (none: removed). Every other line stays as written,
    comments included; the result is verified like ``toml_set_table``'s."""
    before = load_toml(path, text) or {}
    current = before.get(key, [])
    source = text or ""
    lines = source.splitlines(keepends=True)
    spans = _array_spans(lines, key)
    blocks = "\n".join(render_toml_array_table(key, entry) for entry in entries)
    if not isinstance(current, list) or len(spans) != len(current):
        raise InvalidInput(
            f"{path} defines {key} in a form ctxmode does not edit (inline or dotted). Nothing "
            f"was changed; edit it by hand:\n{blocks}"
        )
    kept_items = [item for item in current if not ours(item)]
    if [item for item in current if ours(item)] == entries:
        return source
    for (start, end), item in reversed(list(zip(spans, current, strict=True))):
        if not ours(item):
            continue
        del lines[start:end]
        # Undo the blank separator line an append added.
        if (
            start > 0
            and not lines[start - 1].strip()
            and (start == len(lines) or not lines[start].strip())
        ):
            del lines[start - 1]
    new = "".join(lines)
    if entries:
        if new and not new.endswith("\n"):
            new += "\n"
        if new.strip() and not new.endswith("\n\n"):
            new += "\n"
        new += blocks
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    others = {k: v for k, v in before.items() if k != key}
    ok = (
        after is not None
        and {k: v for k, v in after.items() if k != key} == others
        and after.get(key, []) == kept_items + entries
    )
    if not ok:
        raise InvalidInput(
            f"cannot edit {path} safely (its [[{key}]] tables are written in a form ctxmode "
            f"does not edit). Nothing was changed; edit it by hand:\n{blocks}"
        )
    return new


def render_toml_array_table(key: str, body: dict[str, Any]) -> str:
    """``[[key]]`` followed by ``name = value`` lines."""
    lines = [f"[[{_toml_key(key)}]]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


# --- writing ----------------------------------------------------------------------------------


def write_atomic(path: Path, text: str, new_mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` atomically, keeping the old file's permission bits
    (``new_mode``, when given, for a file that did not exist)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.ctxmode-{os.getpid()}.tmp")
    mode: int | None
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = new_mode
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
