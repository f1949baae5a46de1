"""Knowledge that follows the file: the tier-1 contexts linked to a file the agent is about to
edit, fitted into one small injection, each context at most once per session.

What is looked up: ``ranking.select`` for the file in ``normal`` mode over the tier-1 types
(its own links, a folder's or a glob's, then those of its tasks, in ``query_context``'s
order). What is left out: contexts already injected in this session since its last
compaction (the ``injections`` table, shared by every hook process; the startup brief is
recorded there too) and contexts whose first line is already in the session's last stored
snapshot. A context linked to the file directly is marked stale when the file's bytes no
longer match the hash stored when it was linked, or when ``refresh_files`` marked it.

This runs in the edit hook (``Store.file_knowledge``): standard library and ``core`` only,
no dataclasses; a file that nothing is linked to costs three indexed reads and no write.
"""

from __future__ import annotations

import json
import os
import time

from ctxmode.knowledge import ranking

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ctxmode.core.db import Database

#: The tier-1 context types (``core.models.TYPE_TIERS``; a test keeps the two equal).
TIER_1 = ("constraint", "decision", "convention", "interface")
#: Contexts considered per file (``query_context``'s normal-mode limit).
PER_FILE = 15
#: Characters of a context shown (its first line).
ITEM_CHARS = 240
#: Files larger than this are not re-hashed for the stale check (bytes).
HASH_MAX_BYTES = 8 * 1024 * 1024
#: ``kind`` of the rows this module writes to ``injections``.
KIND = "file"
STALE_NOTE = "linked file changed since this was recorded"


def project_path(root: str, cwd: str | None, path: str) -> str | None:
    """``path`` relative to the project ``root`` (POSIX, symlinks resolved, as ``normalize_path``
    stores it); relative paths are read from ``cwd``; None outside the project."""
    if not path or "\0" in path:
        return None
    full = path if os.path.isabs(path) else os.path.join(cwd or root, path)
    real = os.path.realpath(full)
    rel = os.path.relpath(real, os.path.realpath(root))
    if rel == ".." or rel.startswith(".." + os.sep):
        return None
    return rel.replace(os.sep, "/")


def _escape(text: str) -> str:
    keep = "".join(ch for ch in text if ch >= " " or ch == "\t")
    return (
        keep.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _first_line(content: str) -> str:
    line = content.strip().split("\n", 1)[0].strip()
    return line if len(line) <= ITEM_CHARS else line[: ITEM_CHARS - 1] + "…"


def _compactions(db: Database, session_id: str) -> int:
    row = db.conn.execute(
        "SELECT compact_count FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def injected_ids(db: Database, session_id: str, compactions: int) -> set[int]:
    """Context ids injected into the session since its last compaction."""
    seen: set[int] = set()
    for (raw,) in db.conn.execute(
        "SELECT context_ids FROM injections WHERE session_id = ? AND compact_count = ?",
        (session_id, compactions),
    ):
        try:
            seen.update(int(i) for i in json.loads(raw))
        except (ValueError, TypeError):
            continue
    return seen


def record(
    db: Database,
    session_id: str,
    kind: str,
    context_ids: Sequence[int],
    nbytes: int,
    path: str | None = None,
    now: int | None = None,
) -> None:
    """Remember one injection (its contexts are not injected again in this session)."""
    ts = int(now if now is not None else time.time())
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO injections(session_id, kind, path, context_ids, bytes, compact_count, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                kind,
                path,
                json.dumps([int(i) for i in context_ids]),
                int(nbytes),
                _compactions(db, session_id),
                ts,
            ),
        )


def _changed(db: Database, rel: str, context_id: int) -> bool:
    """True when ``rel``'s bytes differ from the content the context was linked against
    (deleted included)."""
    from ctxmode.core._lean import sha256_hex

    baselines = {
        r[0]
        for r in db.conn.execute(
            "SELECT m.linked_hash FROM context_file_map m JOIN files f ON f.id = m.file_id "
            "WHERE f.path = ? AND m.context_id = ?",
            (rel, context_id),
        )
        if r[0] is not None
    }
    if not baselines:
        return False  # a folder or glob link, or a file missing when it was linked
    full = os.path.join(db.root_dir, rel)
    try:
        if os.path.getsize(full) > HASH_MAX_BYTES:
            return False
        with open(full, "rb") as handle:
            current = "sha256:" + sha256_hex(handle.read())
    except OSError:
        return True
    return any(current != baseline for baseline in baselines)


def _in_snapshot(db: Database, session_id: str) -> str:
    row = db.conn.execute(
        "SELECT snapshot FROM session_resume WHERE session_id = ? ORDER BY id DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    return str(row[0]) if row else ""


def _candidates(
    db: Database, rels: Sequence[str], session_id: str, skip: set[int]
) -> list[tuple[str, int, str]]:
    """(path, context id, via) in rank order per file, files in the order given."""
    vis = ranking.Visible(TIER_1, None, session_id, (), False)
    out: list[tuple[str, int, str]] = []
    for rel in rels:
        for cid, cand in ranking.select(
            db.conn,
            rel=rel,
            task_id=None,
            chain_depth={},
            vis=vis,
            mode="normal",
            limit=PER_FILE,
        ):
            if cid not in skip:
                skip.add(cid)
                out.append((rel, cid, cand.via))
    return out


def _render(items: Sequence[tuple[str, str]], chars: int | None = None) -> str:
    """``<linked_knowledge path=...>`` blocks; ``items``: (path, element) in order."""
    blocks: list[str] = []
    current: str | None = None
    for path, element in items:
        if path != current:
            if current is not None:
                blocks.append("</linked_knowledge>")
            blocks.append(f'<linked_knowledge path="{_escape(path)}">')
            current = path
        blocks.append(element)
    if current is not None:
        blocks.append("</linked_knowledge>")
    return "\n".join(blocks)


def _element(ctx_type: str, cid: int, via: str, text: str, stale: bool) -> str:
    attrs = f'id="{cid}" via="{via}"' + (f' stale="{STALE_NOTE}"' if stale else "")
    return f"<{ctx_type} {attrs}>{_escape(text)}</{ctx_type}>"


def lookup(
    db: Database,
    paths: Sequence[str],
    session_id: str,
    *,
    cwd: str | None = None,
    cap_bytes: int,
    wrap: Callable[[str], str],
    now: int | None = None,
) -> str | None:
    """The injection for an edit of ``paths`` (absolute, or relative to ``cwd``), recorded;
    None if nothing new is linked to them (paths outside the project are ignored).

    ``wrap`` fences the inner XML (the hook passes the snapshot's fence); the wrapped text is
    at most ``cap_bytes`` UTF-8 bytes: lower-ranked contexts are left out first (they stay
    eligible for a later edit), then the one left is shortened.
    """
    rels = list(dict.fromkeys(r for p in paths if (r := project_path(db.root_dir, cwd, p))))
    if not rels:
        return None
    compactions = _compactions(db, session_id)
    seen = injected_ids(db, session_id, compactions)
    found = _candidates(db, rels, session_id, set(seen))
    if not found:
        return None
    ids = [cid for _rel, cid, _via in found]
    rows = {
        int(r[0]): (str(r[1]), str(r[2]), bool(r[3]))
        for r in db.conn.execute(
            f"SELECT id, type, content, stale FROM contexts WHERE id IN "
            f"({ranking.placeholders(ids)})",
            ids,
        )
    }
    snapshot = _in_snapshot(db, session_id)
    items: list[tuple[str, int, str, str, str, bool]] = []
    for rel, cid, via in found:
        if cid not in rows:
            continue
        ctx_type, content, stale = rows[cid]
        text = _first_line(content)
        if snapshot and _escape(text[:80]) in snapshot:
            continue
        if not stale and via == "file":
            stale = _changed(db, rel, cid)
        items.append((rel, cid, via, ctx_type, text, stale))
    return _fit(db, session_id, items, cap_bytes, wrap, now)


def _fit(
    db: Database,
    session_id: str,
    items: list[tuple[str, int, str, str, str, bool]],
    cap_bytes: int,
    wrap: Callable[[str], str],
    now: int | None,
) -> str | None:
    def build(chosen: list[tuple[str, int, str, str, str, bool]]) -> str:
        return wrap(_render([(r, _element(t, c, v, x, s)) for r, c, v, t, x, s in chosen]))

    chosen: list[tuple[str, int, str, str, str, bool]] = []
    text = ""
    for item in items:
        attempt = build([*chosen, item])
        if len(attempt.encode("utf-8")) <= cap_bytes:
            chosen.append(item)
            text = attempt
    if not chosen and items:
        # Not even the best one fits whole: shorten it until it does.
        rel, cid, via, ctx_type, body, stale = items[0]
        while len(body) > 20:
            body = body[: max(20, len(body) * 3 // 4)].rstrip() + "…"
            attempt = build([(rel, cid, via, ctx_type, body, stale)])
            if len(attempt.encode("utf-8")) <= cap_bytes:
                chosen, text = [(rel, cid, via, ctx_type, body, stale)], attempt
                break
            body = body[:-1]
    if not chosen:
        return None
    nbytes = len(text.encode("utf-8"))
    record(db, session_id, KIND, [c[1] for c in chosen], nbytes, chosen[0][0], now)
    return text
