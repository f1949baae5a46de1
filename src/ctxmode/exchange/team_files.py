"""The files of team knowledge: one Markdown file per shared context, ``.context/shared/*.md``.

A file is a small front matter between ``---`` lines, then the content as the body::

    ---
    id: 01JQ3Z8V6X4T2N5K7M9P0R1S2T
    type: decision
    scope: global
    owner: alice
    created: 2026-03-01T12:00:00Z
    updated: 2026-03-02T09:30:00Z
    files: ["src/billing.py (defines)", "src/invoice.py"]
    task: ["Release 2", "Billing"]
    supersedes: 01JQ3Z2B4C6D8E0F1G2H3J4K5M
    ---
    Billing amounts are integer cents.

A ``files`` entry names its link's relation in brackets unless it is ``related``. Only
``type`` is required of a hand-written file: ``id`` defaults to the file name without
``.md``, ``scope`` to ``global``, ``owner`` to ``team``. Lists are JSON arrays, YAML flow lists
(``[a, b]``) or YAML block lists (``- a`` lines). Parsing is strict (an unknown key is an error,
named with the line) so that a typo never silently drops a field. Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ctxmode.core.errors import InvalidInput
from ctxmode.core.models import TYPE_TIERS
from ctxmode.core.redact import redact, secret_kinds

#: Name of the shared folder under ``.context``, and the suffix of its files.
SHARED_DIR = "shared"
SUFFIX = ".md"
#: A shared file larger than this is refused (a context holds at most 100 000 characters).
MAX_FILE_BYTES = 1 << 20
#: Context types that may be shared: tiers 1 and 2 (decisions, constraints, conventions,
#: interfaces, issues, snippets); references and session knowledge stay local.
SHAREABLE_TYPES: tuple[str, ...] = tuple(t for t, tier in TYPE_TIERS.items() if tier <= 2)
SHAREABLE_SCOPES = ("global", "task")
KEYS = ("id", "type", "scope", "owner", "created", "updated", "files", "task", "supersedes")
_LIST_KEYS = frozenset({"files", "task"})
#: Owner of a hand-written file that names none.
DEFAULT_OWNER = "team"
#: A ``files`` entry other than a plain ``related`` link carries its relation after the path:
#: ``"src/billing.py (defines)"``.
_RELATION = re.compile(r"^(.*\S) \((defines|uses|modifies)\)$")


def file_entry(path: str, relation: str) -> str:
    """The ``files`` entry of a link: the path, with its relation unless it is ``related``."""
    return path if relation == "related" else f"{path} ({relation})"


def split_entry(entry: str) -> tuple[str, str]:
    """(path, relation) of a ``files`` entry."""
    m = _RELATION.match(entry)
    return (m.group(1), m.group(2)) if m else (entry, "related")


_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_PLAIN = re.compile(r"^[A-Za-z0-9_@+][A-Za-z0-9 ._@+/:-]*$")
_ID_LINE = re.compile(r"^id:\s*\"?([A-Za-z0-9][A-Za-z0-9._-]{0,99})\"?\s*$", re.MULTILINE)
_MARKERS = re.compile(r"^(?:<{7}|>{7}|\|{7})(?: |$)", re.MULTILINE)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


@dataclass(frozen=True)
class SharedFile:
    """The fields of one shared item, as a file holds them (or as the store would write them)."""

    stable_id: str
    type: str
    content: str
    scope: str = "global"
    owner: str = DEFAULT_OWNER
    created: int | None = None
    updated: int | None = None
    files: tuple[str, ...] = ()
    task: tuple[str, ...] = ()
    supersedes: str | None = None

    def item_hash(self) -> str:
        """Hash of what the team shares (times and the id left out), with its algorithm."""
        fields = [
            self.type,
            self.scope,
            self.owner,
            self.content.strip(),
            sorted(self.files),
            list(self.task),
            self.supersedes,
        ]
        data = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(data.encode()).hexdigest()

    def redacted(self) -> SharedFile:
        """The same item with secrets masked, as the store keeps it."""
        return replace(
            self,
            content=redact(self.content).strip(),
            owner=redact(self.owner),
            task=tuple(redact(name)[:500] for name in self.task),
        )


def new_stable_id(now_ms: int | None = None) -> str:
    """A ULID: 48 bits of milliseconds then 80 random bits, Crockford base 32 (sortable)."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms & ((1 << 48) - 1)) << 80 | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def file_name(stable_id: str) -> str:
    return stable_id + SUFFIX


def has_conflict_markers(text: str) -> bool:
    """Whether ``text`` holds git's merge conflict lines (``<<<<<<<``, ``>>>>>>>``)."""
    return _MARKERS.search(text) is not None


def guess_id(text: str, name: str) -> str:
    """The id a file that cannot be parsed is about: its ``id:`` line, else its name's stem."""
    match = _ID_LINE.search(text)
    return match.group(1) if match else name.removesuffix(SUFFIX)


# -- writing ---------------------------------------------------------------------------------


def _iso(ts: int | None) -> str:
    when = int(time.time()) if ts is None else ts
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _scalar(value: str) -> str:
    return value if _PLAIN.match(value) and value == value.strip() else json.dumps(value)


def render(item: SharedFile) -> str:
    """The file text of ``item`` (keys in a fixed order; empty ones left out)."""
    lines = [
        "---",
        f"id: {item.stable_id}",
        f"type: {item.type}",
        f"scope: {item.scope}",
        f"owner: {_scalar(item.owner)}",
        f"created: {_iso(item.created)}",
        f"updated: {_iso(item.updated)}",
    ]
    if item.files:
        lines.append(f"files: {json.dumps(sorted(item.files), ensure_ascii=False)}")
    if item.task:
        lines.append(f"task: {json.dumps(list(item.task), ensure_ascii=False)}")
    if item.supersedes:
        lines.append(f"supersedes: {item.supersedes}")
    lines.append("---")
    return "\n".join(lines) + "\n" + item.content.strip() + "\n"


# -- reading ---------------------------------------------------------------------------------


def parse(text: str, name: str) -> SharedFile:
    """Parse and validate one file's text; ``InvalidInput`` says what is wrong and where."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    if has_conflict_markers(text):
        raise InvalidInput(f"{name} holds merge conflict markers")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise InvalidInput(
            f"{name}: no front matter; start the file with a '---' line, then 'type: decision' "
            "(or another type), a closing '---' and the text"
        )
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise InvalidInput(f"{name}: the front matter has no closing '---' line") from None
    fields = _fields(lines[1:end], name)
    body = "\n".join(lines[end + 1 :]).strip()
    if not body:
        raise InvalidInput(f"{name}: the text after the front matter is empty")
    return _item(fields, body, name)


def _fields(lines: list[str], name: str) -> dict[str, str | list[str]]:
    fields: dict[str, str | list[str]] = {}
    block: list[str] | None = None  # the list a ``key:`` line with no value opened
    for number, raw in enumerate(lines, start=2):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        stripped = line.strip()
        if stripped.startswith("- ") or stripped == "-":
            if block is None:
                raise InvalidInput(f"{name} line {number}: a list item outside files/task")
            block.append(_unquote(stripped[1:].strip(), name, number))
            continue
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or key not in KEYS:
            raise InvalidInput(
                f"{name} line {number}: unknown key {key!r}; use: {', '.join(KEYS)}"
                if sep
                else f"{name} line {number}: expected 'key: value', got {stripped[:60]!r}"
            )
        if key in fields:
            raise InvalidInput(f"{name} line {number}: {key!r} appears twice")
        value = value.strip()
        block = None
        if key in _LIST_KEYS:
            fields[key] = _list(value, name, number) if value else []
            if not value:
                block = fields[key]  # type: ignore[assignment]
        else:
            fields[key] = _unquote(value, name, number)
    return fields


def _unquote(value: str, name: str, number: int) -> str:
    if value.startswith('"'):
        try:
            out = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{name} line {number}: bad quoted string ({exc.msg})") from None
        if not isinstance(out, str):
            raise InvalidInput(f"{name} line {number}: expected a string")
        return out
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def _list(value: str, name: str, number: int) -> list[str]:
    if not value.startswith("["):
        return [_unquote(value, name, number)]
    if not value.endswith("]"):
        raise InvalidInput(f"{name} line {number}: a list must end with ']' on the same line")
    try:
        out = json.loads(value)
    except json.JSONDecodeError:
        inner = value[1:-1].strip()
        return [_unquote(v.strip(), name, number) for v in inner.split(",")] if inner else []
    if not isinstance(out, list) or not all(isinstance(v, str) for v in out):
        raise InvalidInput(f"{name} line {number}: a list must hold strings")
    return out


def _time(value: str | list[str] | None, key: str, name: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, list):
        raise InvalidInput(f"{name}: {key} must be a date, not a list")
    if value.isdigit():
        return int(value)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"{name}: {key} {value!r} is not a date; write it as 2026-03-01T12:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp())


def _item(fields: dict[str, str | list[str]], body: str, name: str) -> SharedFile:
    def text(key: str, default: str = "") -> str:
        value = fields.get(key, default)
        if isinstance(value, list):
            raise InvalidInput(f"{name}: {key} must be one value, not a list")
        return value.strip()

    stable_id = text("id") or name.removesuffix(SUFFIX)
    if not _ID.match(stable_id):
        raise InvalidInput(
            f"{name}: id {stable_id!r} must be letters, digits, '.', '_' or '-' (at most 100)"
        )
    ctype = text("type")
    if not ctype:
        raise InvalidInput(f"{name}: no 'type:' line; use one of: {', '.join(SHAREABLE_TYPES)}")
    if ctype not in SHAREABLE_TYPES:
        raise InvalidInput(
            f"{name}: type {ctype!r} cannot be shared; use one of: {', '.join(SHAREABLE_TYPES)}"
        )
    scope = text("scope", "global") or "global"
    if scope not in SHAREABLE_SCOPES:
        raise InvalidInput(f"{name}: scope {scope!r} cannot be shared; use global or task")
    task = tuple(t.strip() for t in fields.get("task", []) if t.strip())
    if scope == "task" and not task:
        raise InvalidInput(f"{name}: scope 'task' needs a 'task:' line naming the task")
    files = tuple(f.strip() for f in fields.get("files", []) if f.strip())
    supersedes = text("supersedes") or None
    if supersedes is not None and not _ID.match(supersedes):
        raise InvalidInput(f"{name}: supersedes {supersedes!r} is not an id")
    return SharedFile(
        stable_id=stable_id,
        type=ctype,
        content=body,
        scope=scope,
        owner=text("owner") or DEFAULT_OWNER,
        created=_time(fields.get("created"), "created", name),
        updated=_time(fields.get("updated"), "updated", name),
        files=files,
        task=task,
        supersedes=supersedes,
    )


# -- credentials -----------------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z0-9+/_=-]{24,}")
_HEX = re.compile(r"^[0-9a-fA-F-]+$")


def _random_looking(token: str) -> bool:
    """A long token mixing upper case, lower case and digits with a high entropy per
    character: how API keys, passwords and signing secrets look, and names and paths do not."""
    core = token.strip("=")
    if len(core) < 24 or _HEX.match(core):
        return False
    if not (
        any(c.isupper() for c in core)
        and any(c.islower() for c in core)
        and any(c.isdigit() for c in core)
    ):
        return False
    counts: dict[str, int] = {}
    for c in core:
        counts[c] = counts.get(c, 0) + 1
    entropy = -sum(n / len(core) * math.log2(n / len(core)) for n in counts.values())
    return entropy >= 4.2


def credential_findings(parts: Iterable[tuple[str, str]]) -> list[str]:
    """What still looks like a credential in each ``(where, text)``: the redaction pattern
    that would fire, or a random-looking token (its first 4 characters), named with where."""
    found: list[str] = []
    for where, value in parts:
        found.extend(f"{kind} in {where}" for kind in secret_kinds(value))
        for match in _TOKEN.finditer(value):
            if _random_looking(match.group(0)):
                found.append(f"random-looking token {match.group(0)[:4]}... in {where}")
    return found
