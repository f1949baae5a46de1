"""Who shared a team item, and the review of what a teammate's file would replace.

Who shared an item is what git says: the author of the last commit that touched its file (you,
for a file not committed yet), kept as ``shared_by`` in the context's metadata. A file that
supersedes an item someone else shared is held (``supersedes_held`` in its context's metadata)
until ``sync --accept ID`` applies it (``supersedes_accepted``): nothing is hidden silently.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ctxmode.core.errors import InvalidInput, NotFound
from ctxmode.exchange import team_items as ti
from ctxmode.knowledge import contexts as knowledge

if TYPE_CHECKING:
    from ctxmode.core.db import Database


def git_authors(store: Database) -> dict[str, str]:
    """File name in the shared folder -> the author of the last commit that touched it."""
    try:
        proc = subprocess.run(
            ["git", "log", "--format=%x00%an", "--name-only", "--", ti.folder(store)],
            cwd=store.root_dir,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    authors: dict[str, str] = {}
    author = ""
    for line in proc.stdout.splitlines() if proc.returncode == 0 else ():
        if line.startswith("\x00"):
            author = line[1:].strip()
        elif line.strip() and author:
            authors.setdefault(os.path.basename(line.strip()), author)
    return authors


def local_author(store: Database) -> str:
    """Who you are to git here (``user.name``), ``you`` when git does not say."""
    try:
        proc = subprocess.run(
            ["git", "config", "user.name"],
            cwd=store.root_dir,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "you"
    return proc.stdout.strip() or "you"


class Authors:
    """Git authors of shared files, read once per sync and only when needed."""

    def __init__(self, store: Database) -> None:
        self.store = store
        self._files: dict[str, str] | None = None
        self._local: str | None = None

    def local(self) -> str:
        if self._local is None:
            self._local = local_author(self.store)
        return self._local

    def of(self, file_name: str) -> str:
        if self._files is None:
            self._files = git_authors(self.store)
        return self._files.get(os.path.basename(file_name)) or self.local()


def _shared_by(store: Database, context_id: int) -> str | None:
    row = store.conn.execute(
        "SELECT json_extract(metadata, '$.shared_by') FROM contexts WHERE id = ?", (context_id,)
    ).fetchone()
    return str(row[0]) if row and row[0] else None


def set_meta(store: Database, context_id: int, **values: str | None) -> None:
    for key, value in values.items():
        if value is None:
            store.conn.execute(
                "UPDATE contexts SET metadata = json_remove(metadata, ?) WHERE id = ?",
                (f"$.{key}", context_id),
            )
        else:
            store.conn.execute(
                "UPDATE contexts SET metadata = json_set(metadata, ?, ?) WHERE id = ?",
                (f"$.{key}", value, context_id),
            )


def follow_supersession(store: Database, plans: Iterable[ti.Plan]) -> list[str]:
    """Apply each valid file's ``supersedes`` to the local contexts (a teammate's newer
    decision hides the one it replaces, as locally) when the file's author shared the item
    it replaces; hold it for review otherwise (someone else's item: yours or a teammate's)."""
    rows = ti.rows_of(store)
    warnings: list[str] = []
    for p in plans:
        item = p.seen.parsed if p.seen is not None else None
        if item is None or item.supersedes is None:
            continue
        new, old = rows.get(p.stable_id), rows.get(item.supersedes)
        if old is None or old.context_id is None:
            warnings.append(f"{p.stable_id} supersedes {item.supersedes}, which is not shared")
            continue
        if new is None or new.context_id is None or new.removed_at is not None:
            continue
        current = store.conn.execute(
            "SELECT superseded_by, json_extract(metadata, '$.supersedes_accepted') "
            "FROM contexts WHERE id = ?",
            (new.context_id,),
        ).fetchone()
        target = store.conn.execute(
            "SELECT superseded_by FROM contexts WHERE id = ?", (old.context_id,)
        ).fetchone()
        if not target or target[0] == new.context_id:
            continue
        by_new, by_old = _shared_by(store, new.context_id), _shared_by(store, old.context_id)
        if by_new != by_old and (current is None or current[1] != item.supersedes):
            set_meta(store, new.context_id, supersedes_held=item.supersedes)
            warnings.append(
                f"held for review: {p.stable_id} (committed by {by_new or 'unknown'}) "
                f"supersedes {item.supersedes} (shared by {by_old or 'you'}); nothing is "
                f"hidden until `ctxmode sync --accept {p.stable_id}`"
            )
            continue
        try:
            knowledge.supersede(store, old.context_id, new.context_id)
            set_meta(store, new.context_id, supersedes_held=None)
        except InvalidInput as exc:
            warnings.append(f"{p.stable_id}: {exc}")
    return warnings


def accept(store: Database, sid: str) -> str:
    """Apply the supersession a held item asks for; the note saying so."""
    rows = ti.rows_of(store)
    row = rows.get(sid)
    held = (
        store.conn.execute(
            "SELECT json_extract(metadata, '$.supersedes_held') FROM contexts WHERE id = ?",
            (row.context_id,),
        ).fetchone()
        if row is not None and row.context_id is not None
        else None
    )
    if row is None or row.context_id is None or not held or not held[0]:
        raise NotFound(f"{sid} is not held for review; see `ctxmode team`")
    target = rows.get(str(held[0]))
    if target is None or target.context_id is None:
        raise NotFound(f"{sid} supersedes {held[0]}, which is no longer shared")
    knowledge.supersede(store, target.context_id, row.context_id)
    set_meta(store, row.context_id, supersedes_held=None, supersedes_accepted=str(held[0]))
    return f"accepted: {sid} supersedes {held[0]}"
