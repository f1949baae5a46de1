"""Contexts, tasks, files and the links between them: the write side of the store.

Invariants kept here:
- content and metadata are redacted before they are written;
- file paths are stored relative to the project root (POSIX separators) and never point
  outside it unless the project allows that location;
- a write either completes with all its links or leaves nothing behind (one transaction);
- writing the same type and content again reuses the existing live context (adding links).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxmode.core import cjk, config
from ctxmode.core.errors import InvalidInput, NotFound, PathOutsideProject
from ctxmode.core.models import (
    DECISION_FIELDS,
    Context,
    ContextDetail,
    FileLink,
    LinkCheck,
    Task,
    TaskLink,
    WriteResult,
    check_relation,
    check_scope,
    check_status,
    check_type,
    tier_of,
)
from ctxmode.core.redact import redact, redact_value

if TYPE_CHECKING:
    import sqlite3

    from ctxmode.core.db import Database

CONTEXT_COLUMNS = (
    "id, type, content, metadata, scope, owner, content_hash, superseded_by, created_at, "
    "updated_at, last_accessed_at, access_count, session_id, stale, archived_at"
)


def content_hash(context_type: str, content: str) -> str:
    """Stable hash of a context's identity, with its algorithm as prefix."""
    digest = hashlib.sha256(f"{context_type}\0{content.strip()}".encode()).hexdigest()
    return f"sha256:{digest}"


def file_hash(path: Path) -> str | None:
    """``sha256:<hex>`` of a file's bytes, or None when it is missing, unreadable or not a
    regular file (opening a named pipe would wait for a writer)."""
    if not path.is_file():
        return None
    try:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 16), b""):
                h.update(block)
        return f"sha256:{h.hexdigest()}"
    except OSError:
        return None


def row_to_context(row: Sequence[Any]) -> Context:
    return Context(
        id=row[0],
        type=row[1],
        content=row[2],
        metadata=json.loads(row[3]) if row[3] else {},
        scope=row[4],
        owner=row[5],
        content_hash=row[6],
        superseded_by=row[7],
        created_at=row[8],
        updated_at=row[9],
        last_accessed_at=row[10],
        access_count=row[11],
        session_id=row[12],
        stale=bool(row[13]),
        archived_at=row[14],
    )


def row_to_task(row: Sequence[Any]) -> Task:
    return Task(
        id=row[0],
        name=row[1],
        status=row[2],
        parent_id=row[3],
        created_at=row[4],
        updated_at=row[5],
    )


# -- paths -----------------------------------------------------------------------------------


#: Longest path and file name most filesystems accept (Linux PATH_MAX, NAME_MAX), in bytes.
_PATH_MAX, _NAME_MAX = 4095, 255


def normalize_path(store: Database, path: str) -> str:
    """Project-relative POSIX path for ``path`` (absolute inside the root, or relative to it).

    Symlinks are resolved, so a link inside the project that points outside is refused too.
    """
    if not isinstance(path, str) or not path.strip():
        raise InvalidInput("file path must be a non-empty string")
    if "\0" in path:
        raise InvalidInput("file path contains a NUL character")
    root = store.root
    raw = Path(path.strip()).expanduser()
    candidate = raw if raw.is_absolute() else root / raw
    resolved = Path(os.path.realpath(candidate))
    if len(os.fsencode(resolved)) > _PATH_MAX or any(
        len(os.fsencode(part)) > _NAME_MAX for part in resolved.parts
    ):
        raise InvalidInput(
            f"file path is too long ({len(path)} characters); pass an existing project path"
        )
    root_real = Path(os.path.realpath(root))
    try:
        return resolved.relative_to(root_real).as_posix() or "."
    except ValueError:
        for allowed in store.settings.allow_outside_paths:
            allowed_real = Path(os.path.realpath(Path(allowed).expanduser()))
            if resolved == allowed_real or allowed_real in resolved.parents:
                return resolved.as_posix()
        raise PathOutsideProject(
            f"{path!r} resolves outside the project root {root}; pass a path inside the project "
            "(or list its folder under allow_outside_paths in .context/config.toml)"
        ) from None


def absolute_path(store: Database, rel: str) -> Path:
    p = Path(rel)
    return p if p.is_absolute() else store.root / p


def _file_id(conn: sqlite3.Connection, store: Database, rel: str, now: int) -> int:
    row = conn.execute("SELECT id FROM files WHERE path = ?", (rel,)).fetchone()
    if row:
        return int(row[0])
    digest = file_hash(absolute_path(store, rel))
    cur = conn.execute(
        "INSERT INTO files(path, hash, last_indexed) VALUES (?, ?, ?)", (rel, digest, now)
    )
    return int(cur.lastrowid or 0)


# -- contexts --------------------------------------------------------------------------------


def _check_content(content: object) -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content must be a non-empty string")
    if len(content) > config.MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"content is {len(content)} characters, over the {config.MAX_CONTENT_CHARS} limit; "
            "split it into several contexts or index it as a document (ctxmode index)"
        )
    return content


def _check_metadata(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput('metadata must be a JSON object, e.g. {"source": "review"}')
    try:
        json.dumps(metadata)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"metadata is not JSON-serialisable: {exc}") from exc
    return metadata


def _check_relevance(relevance: object) -> float:
    if isinstance(relevance, bool) or not isinstance(relevance, int | float):
        raise InvalidInput("relevance must be a number between 0 and 1")
    value = float(relevance)
    if not 0.0 <= value <= 1.0:
        raise InvalidInput(f"relevance {value} is outside 0..1")
    return value


def write_context(
    store: Database,
    context_type: str,
    content: str,
    *,
    task_id: int | None = None,
    file_paths: Sequence[str] = (),
    relation: str = "related",
    scope: str = "global",
    owner: str | None = None,
    metadata: dict[str, Any] | None = None,
    supersedes: int | None = None,
    session_id: str | None = None,
    relevance: float = 1.0,
    now: int | None = None,
) -> WriteResult:
    check_type(context_type)
    check_scope(scope)
    check_relation(relation)
    rel_weight = _check_relevance(relevance)
    text = redact(_check_content(content)).strip()
    meta = redact_value(_check_metadata(metadata))
    if isinstance(file_paths, str):
        file_paths = (file_paths,)
    paths = [normalize_path(store, p) for p in file_paths]
    if scope == "task" and task_id is None:
        raise InvalidInput("scope 'task' needs a task id, or scope 'global'", hint="task_id")
    if scope == "session" and not session_id:
        raise InvalidInput("scope 'session' needs a session id; or use scope 'global'")
    who = owner or store.default_owner
    ts = int(now if now is not None else time.time())
    digest = content_hash(context_type, text)
    with store.transaction() as conn:
        if task_id is not None:
            _require_task(conn, task_id)
        if supersedes is not None:
            _require_context(conn, supersedes)
        existing = conn.execute(
            "SELECT id FROM contexts WHERE content_hash = ? AND superseded_by IS NULL "
            "AND scope = ? AND IFNULL(session_id, '') = ? ORDER BY id LIMIT 1",
            (digest, scope, session_id or ""),
        ).fetchone()
        deduplicated = existing is not None and existing[0] != supersedes
        if deduplicated:
            new_id = int(existing[0])
            conn.execute("UPDATE contexts SET updated_at = ? WHERE id = ?", (ts, new_id))
        else:
            cur = conn.execute(
                "INSERT INTO contexts(type, tier, content, metadata, scope, session_id, owner, "
                "content_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    context_type,
                    tier_of(context_type),
                    text,
                    json.dumps(meta, ensure_ascii=False, sort_keys=True),
                    scope,
                    session_id,
                    who,
                    digest,
                    ts,
                    ts,
                ),
            )
            new_id = int(cur.lastrowid or 0)
        if task_id is not None:
            _link_task(conn, new_id, task_id, rel_weight)
        for rel in paths:
            _link_file(conn, store, new_id, rel, relation, ts)
        if supersedes is not None and supersedes != new_id:
            _supersede(conn, supersedes, new_id, ts)
        checks = _verify(conn, new_id, task_id, paths)
    return WriteResult(
        id=new_id,
        verified=all(c.found for c in checks),
        checks=checks,
        deduplicated=deduplicated,
        superseded=supersedes if supersedes != new_id else None,
        missing_files=missing_files(store, paths),
    )


def missing_files(store: Database, rels: Sequence[str]) -> tuple[str, ...]:
    """The project-relative paths (glob patterns aside) with nothing on disk."""
    return tuple(
        rel
        for rel in rels
        if not any(ch in rel for ch in "*?[") and not absolute_path(store, rel).exists()
    )


def _verify(
    conn: sqlite3.Connection, context_id: int, task_id: int | None, paths: Sequence[str]
) -> tuple[LinkCheck, ...]:
    """Read the new row back through the same joins retrieval uses."""
    checks: list[LinkCheck] = []
    found = conn.execute("SELECT 1 FROM contexts WHERE id = ?", (context_id,)).fetchone()
    if task_id is not None:
        row = conn.execute(
            "SELECT 1 FROM context_task_map m JOIN contexts c ON c.id = m.context_id "
            "WHERE m.task_id = ? AND c.id = ?",
            (task_id, context_id),
        ).fetchone()
        checks.append(LinkCheck("task", str(task_id), row is not None))
    for rel in paths:
        row = conn.execute(
            "SELECT 1 FROM files f JOIN context_file_map m ON m.file_id = f.id "
            "JOIN contexts c ON c.id = m.context_id WHERE f.path = ? AND c.id = ?",
            (rel, context_id),
        ).fetchone()
        checks.append(LinkCheck("file", rel, row is not None))
    if not checks:
        checks.append(LinkCheck("row", str(context_id), found is not None))
    return tuple(checks)


def render_decision(fields: dict[str, str]) -> str:
    """Render decision-template fields as readable text (fixed field order)."""
    missing = [f for f in ("decision",) if not str(fields.get(f, "")).strip()]
    if missing:
        raise InvalidInput("the decision template needs at least the 'decision' field")
    unknown = sorted(set(fields) - set(DECISION_FIELDS))
    if unknown:
        raise InvalidInput(
            f"unknown decision field(s) {', '.join(unknown)}; use: {', '.join(DECISION_FIELDS)}"
        )
    lines = [str(fields["decision"]).strip()]
    # Labels in the language of the content: Chinese text reads with Chinese labels.
    zh = any(cjk.is_cjk_char(ch) for value in fields.values() for ch in str(value))
    for name in DECISION_FIELDS[1:]:
        value = str(fields.get(name, "")).strip()
        if value:
            lines.append(f"{_ZH_LABELS[name]}：{value}" if zh else f"{name.capitalize()}: {value}")
    return "\n".join(lines)


_ZH_LABELS = {"background": "背景", "options": "选项", "choice": "选择", "rationale": "理由",
              "impact": "影响"}  # fmt: skip


def write_decision(
    store: Database,
    fields: dict[str, str],
    *,
    task_id: int | None = None,
    file_paths: Sequence[str] = (),
    scope: str = "global",
    owner: str | None = None,
    supersedes: int | None = None,
) -> WriteResult:
    content = render_decision(fields)
    template = {k: str(v).strip() for k, v in fields.items() if str(v).strip()}
    return write_context(
        store,
        "decision",
        content,
        task_id=task_id,
        file_paths=file_paths,
        scope=scope,
        owner=owner,
        metadata={"template": "decision", "fields": template},
        supersedes=supersedes,
    )


def _require_context(conn: sqlite3.Connection, context_id: int) -> None:
    if not isinstance(context_id, int) or isinstance(context_id, bool):
        raise InvalidInput(f"context id must be an integer, got {context_id!r}")
    if (
        not config.SQLITE_INT_MIN <= context_id <= config.SQLITE_INT_MAX
        or not conn.execute("SELECT 1 FROM contexts WHERE id = ?", (context_id,)).fetchone()
    ):
        raise NotFound(f"no context with id {context_id}", hint="list_contexts")


def _require_task(conn: sqlite3.Connection, task_id: int) -> None:
    if not isinstance(task_id, int) or isinstance(task_id, bool):
        raise InvalidInput(f"task id must be an integer, got {task_id!r}")
    if (
        not config.SQLITE_INT_MIN <= task_id <= config.SQLITE_INT_MAX
        or not conn.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone()
    ):
        raise NotFound(f"no task with id {task_id}", hint="list_tasks")


def get_context(store: Database, context_id: int) -> Context:
    _require_context(store.conn, context_id)
    row = store.conn.execute(
        f"SELECT {CONTEXT_COLUMNS} FROM contexts WHERE id = ?", (context_id,)
    ).fetchone()
    return row_to_context(row)


def context_detail(store: Database, context_id: int) -> ContextDetail:
    ctx = get_context(store, context_id)
    conn = store.conn
    tasks = tuple(
        TaskLink(r[0], r[1])
        for r in conn.execute(
            "SELECT task_id, relevance FROM context_task_map WHERE context_id = ? ORDER BY task_id",
            (context_id,),
        )
    )
    files = tuple(
        FileLink(r[0], r[1])
        for r in conn.execute(
            "SELECT f.path, m.relation_type FROM context_file_map m JOIN files f "
            "ON f.id = m.file_id WHERE m.context_id = ? ORDER BY f.path",
            (context_id,),
        )
    )
    return ContextDetail(ctx, tasks, files, supersession_chain(store, context_id))


def supersession_chain(store: Database, context_id: int) -> tuple[int, ...]:
    """Ids from the oldest predecessor through ``context_id`` to its newest successor."""
    conn = store.conn
    before: list[int] = []
    seen = {context_id}
    current = context_id
    while True:
        row = conn.execute(
            "SELECT id FROM contexts WHERE superseded_by = ? ORDER BY id LIMIT 1", (current,)
        ).fetchone()
        if not row or row[0] in seen:
            break
        current = int(row[0])
        seen.add(current)
        before.append(current)
    after: list[int] = []
    current = context_id
    while True:
        row = conn.execute("SELECT superseded_by FROM contexts WHERE id = ?", (current,)).fetchone()
        if not row or row[0] is None or row[0] in seen:
            break
        current = int(row[0])
        seen.add(current)
        after.append(current)
    return (*reversed(before), context_id, *after)


def update_context(
    store: Database,
    context_id: int,
    *,
    content: str | None = None,
    type: str | None = None,
    metadata: dict[str, Any] | None = None,
    now: int | None = None,
) -> Context:
    current = get_context(store, context_id)
    new_type = check_type(type) if type is not None else current.type
    new_content = (
        redact(_check_content(content)).strip() if content is not None else current.content
    )
    new_meta = redact_value(_check_metadata(metadata)) if metadata is not None else current.metadata
    ts = int(now if now is not None else time.time())
    with store.transaction() as conn:
        conn.execute(
            "UPDATE contexts SET type = ?, tier = ?, content = ?, metadata = ?, content_hash = ?, "
            "updated_at = ? WHERE id = ?",
            (
                new_type,
                tier_of(new_type),
                new_content,
                json.dumps(new_meta, ensure_ascii=False, sort_keys=True),
                content_hash(new_type, new_content),
                ts,
                context_id,
            ),
        )
    return get_context(store, context_id)


def delete_context(store: Database, context_id: int) -> None:
    with store.transaction() as conn:
        _require_context(conn, context_id)
        conn.execute("DELETE FROM contexts WHERE id = ?", (context_id,))


def _supersede(conn: sqlite3.Connection, old_id: int, new_id: int, ts: int) -> None:
    if old_id == new_id:
        raise InvalidInput("a context cannot supersede itself")
    # Refuse cycles: walking forward from new_id must not reach old_id.
    current: int | None = new_id
    hops = 0
    while current is not None and hops < 10_000:
        if current == old_id:
            raise InvalidInput(f"context {new_id} already descends from {old_id}; no cycles")
        row = conn.execute("SELECT superseded_by FROM contexts WHERE id = ?", (current,)).fetchone()
        current = row[0] if row else None
        hops += 1
    conn.execute(
        "UPDATE contexts SET superseded_by = ?, updated_at = ? WHERE id = ?", (new_id, ts, old_id)
    )


def supersede(store: Database, old_id: int, new_id: int, now: int | None = None) -> None:
    ts = int(now if now is not None else time.time())
    with store.transaction() as conn:
        _require_context(conn, old_id)
        _require_context(conn, new_id)
        _supersede(conn, old_id, new_id, ts)


def list_contexts(
    store: Database,
    *,
    context_type: str | None = None,
    scope: str | None = None,
    owner: str | None = None,
    task_id: int | None = None,
    file_path: str | None = None,
    stale: bool | None = None,
    include_superseded: bool = True,
    limit: int = 200,
    offset: int = 0,
) -> list[Context]:
    where: list[str] = []
    params: list[Any] = []
    if context_type:
        where.append("c.type = ?")
        params.append(check_type(context_type))
    if scope:
        where.append("c.scope = ?")
        params.append(check_scope(scope))
    if owner:
        where.append("c.owner = ?")
        params.append(owner)
    if task_id is not None:
        _require_task(store.conn, task_id)
        where.append("c.id IN (SELECT context_id FROM context_task_map WHERE task_id = ?)")
        params.append(task_id)
    if file_path:
        where.append(
            "c.id IN (SELECT m.context_id FROM context_file_map m JOIN files f "
            "ON f.id = m.file_id WHERE f.path = ?)"
        )
        params.append(normalize_path(store, file_path))
    if stale is not None:
        where.append("c.stale = ?")
        params.append(1 if stale else 0)
    if not include_superseded:
        where.append("c.superseded_by IS NULL")
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = store.conn.execute(
        f"SELECT {', '.join('c.' + c.strip() for c in CONTEXT_COLUMNS.split(','))} "
        f"FROM contexts c {clause} ORDER BY c.updated_at DESC, c.id DESC LIMIT ? OFFSET ?",
        (*params, max(1, min(limit, 10_000)), max(0, min(offset, config.SQLITE_INT_MAX))),
    ).fetchall()
    return [row_to_context(r) for r in rows]


# -- links -----------------------------------------------------------------------------------


def _link_task(conn: sqlite3.Connection, context_id: int, task_id: int, relevance: float) -> None:
    conn.execute(
        "INSERT INTO context_task_map(context_id, task_id, relevance) VALUES (?, ?, ?) "
        "ON CONFLICT(context_id, task_id) DO UPDATE SET relevance = excluded.relevance",
        (context_id, task_id, relevance),
    )


def _link_file(
    conn: sqlite3.Connection, store: Database, context_id: int, rel: str, relation: str, now: int
) -> None:
    file_id = _file_id(conn, store, rel, now)
    # The link keeps the content it was made against (``lifecycle.refresh_files``).
    conn.execute(
        "INSERT OR IGNORE INTO context_file_map(context_id, file_id, relation_type, linked_hash) "
        "VALUES (?, ?, ?, ?)",
        (context_id, file_id, relation, file_hash(absolute_path(store, rel))),
    )


def link_files(
    store: Database, context_id: int, paths: Sequence[str], relation: str
) -> tuple[str, ...]:
    """Link a context to files; returns the linked paths with nothing on disk (planned)."""
    check_relation(relation)
    if isinstance(paths, str):
        paths = (paths,)
    if not paths:
        raise InvalidInput("give at least one file path to link")
    rels = [normalize_path(store, p) for p in paths]
    ts = int(time.time())
    with store.transaction() as conn:
        _require_context(conn, context_id)
        for rel in rels:
            _link_file(conn, store, context_id, rel, relation, ts)
    return missing_files(store, rels)


def link_task(store: Database, context_id: int, task_id: int, relevance: float = 1.0) -> None:
    weight = _check_relevance(relevance)
    with store.transaction() as conn:
        _require_context(conn, context_id)
        _require_task(conn, task_id)
        _link_task(conn, context_id, task_id, weight)


# -- tasks -----------------------------------------------------------------------------------


def create_task(
    store: Database,
    name: str,
    parent_id: int | None = None,
    *,
    status: str = "pending",
    external_key: str | None = None,
    now: int | None = None,
) -> Task:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("task name must be a non-empty string")
    check_status(status)
    ts = int(now if now is not None else time.time())
    with store.transaction() as conn:
        if parent_id is not None:
            _require_task(conn, parent_id)
        cur = conn.execute(
            "INSERT INTO tasks(name, status, parent_id, external_key, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (redact(name.strip())[:500], status, parent_id, external_key, ts, ts),
        )
        task_id = int(cur.lastrowid or 0)
    return get_task(store, task_id)


def get_task(store: Database, task_id: int) -> Task:
    _require_task(store.conn, task_id)
    row = store.conn.execute(
        "SELECT id, name, status, parent_id, created_at, updated_at FROM tasks WHERE id = ?",
        (task_id,),
    ).fetchone()
    return row_to_task(row)


def update_task(store: Database, task_id: int, status: str, now: int | None = None) -> Task:
    check_status(status)
    ts = int(now if now is not None else time.time())
    with store.transaction() as conn:
        _require_task(conn, task_id)
        conn.execute(
            "UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?", (status, ts, task_id)
        )
    return get_task(store, task_id)


def list_tasks(store: Database, status: str | None = None) -> list[Task]:
    """Tasks in depth-first tree order; with ``status``, only matching ones (same order)."""
    if status is not None:
        check_status(status)
    rows = store.conn.execute(
        "SELECT id, name, status, parent_id, created_at, updated_at FROM tasks ORDER BY id"
    ).fetchall()
    tasks = [row_to_task(r) for r in rows]
    ids = {t.id for t in tasks}
    children: dict[int | None, list[Task]] = {}
    for t in tasks:
        parent = t.parent_id if t.parent_id in ids else None
        children.setdefault(parent, []).append(t)
    ordered: list[Task] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        t = stack.pop()
        ordered.append(t)
        stack.extend(reversed(children.get(t.id, [])))
    return [t for t in ordered if status is None or t.status == status]


def task_depths(store: Database, tasks: Sequence[Task]) -> dict[int, int]:
    """Depth of each task in the tree (roots are 0)."""
    by_id = {t.id: t for t in tasks}
    depths: dict[int, int] = {}
    for t in tasks:
        depth, current, guard = 0, t.parent_id, 0
        while current is not None and current in by_id and guard < 1000:
            depth += 1
            current = by_id[current].parent_id
            guard += 1
        depths[t.id] = depth
    return depths


def ancestors(conn: sqlite3.Connection, task_id: int) -> list[int]:
    """Parent, grandparent ... of a task (nearest first), cycle-safe."""
    rows = conn.execute(
        "WITH RECURSIVE up(id, parent_id, depth) AS ("
        " SELECT id, parent_id, 0 FROM tasks WHERE id = ?"
        " UNION SELECT t.id, t.parent_id, up.depth + 1 FROM tasks t JOIN up ON t.id = up.parent_id"
        " WHERE up.depth < 64)"
        " SELECT id FROM up WHERE depth > 0 ORDER BY depth",
        (task_id,),
    ).fetchall()
    return [int(r[0]) for r in rows]


def end_session(store: Database, session_id: str, now: int | None = None) -> int:
    with store.transaction() as conn:
        cur = conn.execute(
            "DELETE FROM contexts WHERE scope = 'session' AND session_id = ?", (session_id,)
        )
        return int(cur.rowcount)
