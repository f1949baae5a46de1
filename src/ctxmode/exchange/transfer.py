"""Export to and import from JSON Lines: a lossless, diffable copy of the knowledge.

Line 1 is a header ``{"kind": "ctxmode-export", "format": 1, ...}``; then one ``task`` line per
task (id order) and one ``context`` line per context (id order) with its task and file links.
Ids are the database ids, so two exports of the same store are identical.

Import runs in one transaction: a malformed line aborts it with the line number and nothing is
written. Contexts whose content hash already exists are skipped; ids are kept when free and
remapped otherwise (links and supersession follow the remap).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from ctxmode.core.errors import InvalidInput
from ctxmode.core.models import check_relation, check_scope, check_status, check_type, tier_of
from ctxmode.core.redact import redact, redact_value
from ctxmode.core.schema import SCHEMA_VERSION
from ctxmode.knowledge.contexts import CONTEXT_COLUMNS, content_hash, row_to_context

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.core.db import Database

FORMAT = 1


@dataclass(frozen=True)
class ImportReport:
    tasks_added: int
    tasks_skipped: int
    contexts_added: int
    contexts_skipped: int

    def to_dict(self) -> dict[str, int]:
        return {
            "tasks_added": self.tasks_added,
            "tasks_skipped": self.tasks_skipped,
            "contexts_added": self.contexts_added,
            "contexts_skipped": self.contexts_skipped,
        }


def export_lines(store: Database) -> Iterator[str]:
    """Yield the export, one JSON document per line (no trailing newlines)."""
    conn = store.conn
    yield json.dumps({"kind": "ctxmode-export", "format": FORMAT, "schema": SCHEMA_VERSION})
    for row in conn.execute(
        "SELECT id, name, status, parent_id, external_key, created_at, updated_at "
        "FROM tasks ORDER BY id"
    ):
        yield json.dumps(
            {
                "kind": "task",
                "id": row[0],
                "name": row[1],
                "status": row[2],
                "parent_id": row[3],
                "external_key": row[4],
                "created_at": row[5],
                "updated_at": row[6],
            },
            ensure_ascii=False,
        )
    task_links: dict[int, list[dict[str, Any]]] = {}
    for cid, tid, rel in conn.execute(
        "SELECT context_id, task_id, relevance FROM context_task_map ORDER BY context_id, task_id"
    ):
        task_links.setdefault(cid, []).append({"task_id": tid, "relevance": rel})
    file_links: dict[int, list[dict[str, Any]]] = {}
    for cid, path, relation in conn.execute(
        "SELECT m.context_id, f.path, m.relation_type FROM context_file_map m "
        "JOIN files f ON f.id = m.file_id ORDER BY m.context_id, f.path, m.relation_type"
    ):
        file_links.setdefault(cid, []).append({"path": path, "relation": relation})
    for row in conn.execute(f"SELECT {CONTEXT_COLUMNS} FROM contexts ORDER BY id"):
        ctx = row_to_context(row)
        data = ctx.to_dict()
        data.pop("tier")
        data = {"kind": "context", **data}
        data["content"] = redact(ctx.content)
        data["tasks"] = task_links.get(ctx.id, [])
        data["files"] = file_links.get(ctx.id, [])
        yield json.dumps(data, ensure_ascii=False)


def _records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"line {number} is not valid JSON ({exc.msg}); nothing imported"
            ) from exc
        if not isinstance(record, dict) or "kind" not in record:
            raise InvalidInput(f"line {number} is not a ctxmode export record; nothing imported")
        yield number, record


def _int(record: dict[str, Any], key: str, number: int, optional: bool = False) -> int | None:
    value = record.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"line {number}: {key!r} must be an integer; nothing imported")
    return value


def _str(record: dict[str, Any], key: str, number: int) -> str:
    value = record.get(key)
    if not isinstance(value, str):
        raise InvalidInput(f"line {number}: {key!r} must be a string; nothing imported")
    return value


def import_lines(store: Database, lines: Iterable[str]) -> ImportReport:
    """Import an export; see the module docstring for the rules."""
    records = list(_records(lines))
    if records and records[0][1].get("kind") == "ctxmode-export":
        header = records.pop(0)[1]
        if header.get("format") != FORMAT:
            raise InvalidInput(
                f"unsupported export format {header.get('format')!r}; expected {FORMAT}"
            )
    tasks = [(n, r) for n, r in records if r["kind"] == "task"]
    contexts = [(n, r) for n, r in records if r["kind"] == "context"]
    unknown = [n for n, r in records if r["kind"] not in {"task", "context"}]
    if unknown:
        raise InvalidInput(f"line {unknown[0]}: unknown record kind; nothing imported")
    with store.transaction() as conn:
        task_map, t_added, t_skipped = _import_tasks(conn, tasks)
        c_added, c_skipped = _import_contexts(conn, store, contexts, task_map)
    return ImportReport(t_added, t_skipped, c_added, c_skipped)


def _free(conn: sqlite3.Connection, table: str, wanted: int) -> bool:
    return conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (wanted,)).fetchone() is None


def _import_tasks(
    conn: sqlite3.Connection, tasks: list[tuple[int, dict[str, Any]]]
) -> tuple[dict[int, int], int, int]:
    mapping: dict[int, int] = {}
    parents: list[tuple[int, int, int]] = []
    added = skipped = 0
    for number, r in tasks:
        old_id = _int(r, "id", number)
        assert old_id is not None
        name = _str(r, "name", number)
        status = check_status(r.get("status"))
        row = conn.execute("SELECT name FROM tasks WHERE id = ?", (old_id,)).fetchone()
        if row and row[0] == name:
            mapping[old_id] = old_id
            skipped += 1
            continue
        created = _int(r, "created_at", number) or 0
        updated = _int(r, "updated_at", number) or created
        external = r.get("external_key") if isinstance(r.get("external_key"), str) else None
        if (
            external
            and conn.execute("SELECT 1 FROM tasks WHERE external_key = ?", (external,)).fetchone()
        ):
            external = None
        cur = conn.execute(
            "INSERT INTO tasks(id, name, status, parent_id, external_key, created_at, updated_at) "
            "VALUES (?, ?, ?, NULL, ?, ?, ?)",
            (
                old_id if _free(conn, "tasks", old_id) else None,
                redact(name),
                status,
                external,
                created,
                updated,
            ),
        )
        mapping[old_id] = int(cur.lastrowid or 0)
        parent = _int(r, "parent_id", number, optional=True)
        if parent is not None:
            parents.append((mapping[old_id], parent, number))
        added += 1
    for new_id, parent, number in parents:
        if parent not in mapping and _free(conn, "tasks", parent):
            raise InvalidInput(f"line {number}: parent task {parent} is missing; nothing imported")
        conn.execute(
            "UPDATE tasks SET parent_id = ? WHERE id = ?", (mapping.get(parent, parent), new_id)
        )
    for new_id, _parent, number in parents:
        _refuse_cycle(conn, new_id, number)
    return mapping, added, skipped


def _refuse_cycle(conn: sqlite3.Connection, task_id: int, number: int) -> None:
    """A task whose parent chain comes back to itself would vanish from every task list."""
    seen = {task_id}
    row = conn.execute("SELECT parent_id FROM tasks WHERE id = ?", (task_id,)).fetchone()
    while row and row[0] is not None:
        if row[0] in seen:
            raise InvalidInput(
                f"line {number}: task parents form a cycle (task {task_id} is its own "
                "ancestor); nothing imported"
            )
        seen.add(row[0])
        row = conn.execute("SELECT parent_id FROM tasks WHERE id = ?", (row[0],)).fetchone()


#: A line of an export longer than this is not one (a context holds at most 100 000
#: characters); the whole file is bounded too. ``/dev/zero`` or a binary file is refused fast.
MAX_LINE_CHARS = 4_000_000
MAX_IMPORT_CHARS = 1_000_000_000


def read_export(stream: TextIO) -> list[str]:
    """The lines of an export file or stream, read within ``MAX_LINE_CHARS`` per line and
    ``MAX_IMPORT_CHARS`` in all; ``InvalidInput`` past either (nothing is imported)."""
    lines: list[str] = []
    total = 0
    while True:
        line = stream.readline(MAX_LINE_CHARS + 1)
        if not line:
            return lines
        total += len(line)
        if len(line) > MAX_LINE_CHARS:
            raise InvalidInput(
                f"line {len(lines) + 1} is over {MAX_LINE_CHARS} characters: this is not a "
                "ctxmode export; nothing imported"
            )
        if total > MAX_IMPORT_CHARS:
            raise InvalidInput(
                f"the input is over {MAX_IMPORT_CHARS} characters; split it; nothing imported"
            )
        lines.append(line)


def _import_contexts(
    conn: sqlite3.Connection,
    store: Database,
    contexts: list[tuple[int, dict[str, Any]]],
    task_map: dict[int, int],
) -> tuple[int, int]:
    from ctxmode.knowledge.contexts import _link_file, normalize_path

    mapping: dict[int, int] = {}
    supersessions: list[tuple[int, int]] = []
    added = skipped = 0
    for number, r in contexts:
        old_id = _int(r, "id", number)
        assert old_id is not None
        ctype = check_type(r.get("type"))
        content = redact(_str(r, "content", number)).strip()
        if not content:
            raise InvalidInput(f"line {number}: empty content; nothing imported")
        digest = content_hash(ctype, content)
        existing = conn.execute(
            "SELECT id FROM contexts WHERE content_hash = ? ORDER BY id LIMIT 1", (digest,)
        ).fetchone()
        if existing:
            mapping[old_id] = int(existing[0])
            skipped += 1
            continue
        metadata = r.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise InvalidInput(f"line {number}: metadata must be an object; nothing imported")
        scope = check_scope(r.get("scope", "global"))
        created = _int(r, "created_at", number) or 0
        updated = _int(r, "updated_at", number) or created
        cur = conn.execute(
            "INSERT INTO contexts(id, type, tier, content, metadata, scope, session_id, owner, "
            "content_hash, archived_at, stale, created_at, updated_at, last_accessed_at, "
            "access_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                old_id if _free(conn, "contexts", old_id) else None,
                ctype,
                tier_of(ctype),
                content,
                json.dumps(redact_value(metadata), ensure_ascii=False, sort_keys=True),
                scope,
                r.get("session_id") if isinstance(r.get("session_id"), str) else None,
                str(r.get("owner") or store.default_owner),
                digest,
                _int(r, "archived_at", number, optional=True),
                1 if r.get("stale") else 0,
                created,
                updated,
                _int(r, "last_accessed_at", number, optional=True),
                _int(r, "access_count", number, optional=True) or 0,
            ),
        )
        new_id = int(cur.lastrowid or 0)
        mapping[old_id] = new_id
        added += 1
        successor = _int(r, "superseded_by", number, optional=True)
        if successor is not None:
            supersessions.append((new_id, successor))
        for link in r.get("tasks") or []:
            if not isinstance(link, dict):
                raise InvalidInput(f"line {number}: task links must be objects; nothing imported")
            tid = _int(link, "task_id", number)
            assert tid is not None
            target = task_map.get(tid, tid)
            if _free(conn, "tasks", target):
                raise InvalidInput(f"line {number}: linked task {tid} is missing; nothing imported")
            rel = link.get("relevance", 1.0)
            conn.execute(
                "INSERT OR REPLACE INTO context_task_map(context_id, task_id, relevance) "
                "VALUES (?, ?, ?)",
                (new_id, target, float(rel) if isinstance(rel, int | float) else 1.0),
            )
        for link in r.get("files") or []:
            if not isinstance(link, dict):
                raise InvalidInput(f"line {number}: file links must be objects; nothing imported")
            path = normalize_path(store, _str(link, "path", number))
            relation = check_relation(link.get("relation", "related"))
            _link_file(conn, store, new_id, path, relation, updated)
    for new_id, successor in supersessions:
        target = mapping.get(successor, successor)
        if not _free(conn, "contexts", target):
            conn.execute("UPDATE contexts SET superseded_by = ? WHERE id = ?", (target, new_id))
    return added, skipped
