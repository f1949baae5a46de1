"""Tasks in search: a task is found by its name (often the one name people remember), and
``task:N`` reads back as its place in the tree with its linked knowledge. Task names are few
and short, so they are matched in Python rather than through the full-text index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxmode.core.redact import redact
from ctxmode.search import query as sq
from ctxmode.search import rank as sr
from ctxmode.search.results import Hit, Item

if TYPE_CHECKING:
    from ctxmode.core.db import Database

#: Tasks whose name holds every query word, listed first, at most this many.
MAX_TASK_HITS = 3


def task_hits(store: Database, parsed: sq.ParsedQuery) -> list[Hit]:
    """Tasks whose name holds every query word (CJK runs as substrings), as hits: a task is
    often the one name people remember ("认证重构"), and its knowledge is one query away."""
    terms = [t for t in parsed.terms if t.text]
    if not terms:
        return []
    conn = store.conn
    # Names are matched here, and the linked contexts counted for the few hits only: a count
    # per task in the query cost ~25 ms a search on a store of 5,000 tasks.
    rows = conn.execute(
        "SELECT id, name, status, created_at FROM tasks ORDER BY updated_at DESC, id DESC"
    )
    hits: list[Hit] = []
    for task_id, name, status, created in rows:
        lowered = str(name).lower()
        if not all(any(w in lowered for w in t.spellings) for t in terms):
            continue
        (linked,) = conn.execute(
            "SELECT COUNT(*) FROM context_task_map WHERE task_id = ?", (task_id,)
        ).fetchone()
        hits.append(
            Hit(
                id=f"task:{task_id}",
                kind="task",
                title=str(name),
                source="tasks",
                type=str(status),
                created_at=int(created),
                snippet=(
                    f"task #{task_id} {name} ({status}), {linked} linked "
                    f"{'context' if linked == 1 else 'contexts'}: ctxmode query --task {task_id}"
                ),
                score=1.0,
            )
        )
        if len(hits) == MAX_TASK_HITS:
            break
    return hits


def task_item(store: Database, task_id: int) -> Item | None:
    """A task as a full item: its path in the tree, status, and its linked contexts."""
    conn = store.conn
    row = conn.execute(
        "SELECT name, status, parent_id, created_at FROM tasks WHERE id = ?", (task_id,)
    ).fetchone()
    if row is None:
        return None
    name, status, parent, created = row
    path = [str(name)]
    seen = {task_id}
    while parent is not None and parent not in seen:
        seen.add(parent)
        up = conn.execute("SELECT name, parent_id FROM tasks WHERE id = ?", (parent,)).fetchone()
        if up is None:
            break
        path.insert(0, str(up[0]))
        parent = up[1]
    lines = [f"task #{task_id}: {' > '.join(path)} ({status})"]
    for cid, ctype, content in conn.execute(
        "SELECT c.id, c.type, c.content FROM context_task_map m JOIN contexts c "
        "ON c.id = m.context_id WHERE m.task_id = ? AND c.superseded_by IS NULL "
        "AND c.archived_at IS NULL ORDER BY c.id",
        (task_id,),
    ):
        first = str(content).strip().splitlines()[0] if str(content).strip() else ""
        lines.append(f"ctx:{cid} {ctype}: {sr.clip(first, 160)}")
    return Item(
        id=f"task:{task_id}",
        kind="task",
        title=str(name),
        source="tasks",
        type=str(status),
        created_at=int(created),
        text=redact("\n".join(lines)),
    )
