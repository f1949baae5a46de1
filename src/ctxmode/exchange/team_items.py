"""The two sides of a shared item, and the values that describe it (``exchange.team``).

The store side is a context read back as the fields its file would hold (``db_item``); the
folder side is each ``*.md`` file, parsed and normalised as the store would keep it (``scan``):
redacted, its file paths project-relative. Their ``item_hash`` values are what a sync compares.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxmode.core import config
from ctxmode.core.errors import InvalidInput
from ctxmode.exchange import team_files as tf
from ctxmode.exchange.team_files import SharedFile
from ctxmode.knowledge import contexts as knowledge

if TYPE_CHECKING:
    from ctxmode.core.db import Database

#: States of a shared item (``ItemState.state``).
STATES = (
    "in_sync",
    "changed_locally",
    "changed_in_repo",
    "new_in_repo",
    "deleted_in_repo",
    "deleted_locally",
    "conflicted",
    "invalid",
    "held",
)
#: ``prefer`` values: keep the local version, or the repository's.
SIDES = ("ours", "theirs")


@dataclass(frozen=True)
class ItemState:
    """How one shared item stands; ``message`` says what to do when something is wrong."""

    stable_id: str
    file: str
    state: str
    context_id: int | None = None
    type: str | None = None
    owner: str | None = None
    title: str = ""
    message: str = ""
    uncommitted: bool = False
    #: Who shared it, as git says (``owner`` is what the file claims).
    shared_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "stable_id": self.stable_id,
            "file": self.file,
            "state": self.state,
            "context_id": self.context_id,
            "type": self.type,
            "owner": self.owner,
            "title": self.title,
            "message": self.message,
            "uncommitted": self.uncommitted,
            "shared_by": self.shared_by,
        }


@dataclass(frozen=True)
class TeamStatus:
    folder: str
    items: tuple[ItemState, ...]

    @property
    def problems(self) -> tuple[ItemState, ...]:
        return tuple(i for i in self.items if i.state in ("conflicted", "invalid"))

    def to_dict(self) -> dict[str, Any]:
        counts = {s: sum(1 for i in self.items if i.state == s) for s in STATES}
        return {
            "folder": self.folder,
            "counts": {k: v for k, v in counts.items() if v},
            "items": [i.to_dict() for i in self.items],
        }


@dataclass(frozen=True)
class SyncReport:
    """What one sync changed, by stable id, and the items it left alone (conflicts, invalid)."""

    imported: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    archived: tuple[str, ...] = ()
    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()
    problems: tuple[ItemState, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(
            self.imported or self.updated or self.archived or self.written or self.removed
        ) or bool(self.shared)

    def summary(self) -> str:
        parts = [
            f"{len(v)} {k}"
            for k, v in (
                ("imported", self.imported),
                ("updated", self.updated),
                ("archived", self.archived),
                ("written", self.written),
                ("removed", self.removed),
                ("shared", self.shared),
            )
            if v
        ]
        held = sum(1 for w in self.warnings if w.startswith("held for review"))
        if held:
            parts.append(f"{held} held for review (ctxmode team)")
        if self.problems:
            parts.append(f"{len(self.problems)} need attention (ctxmode team)")
        return ", ".join(parts) or "nothing changed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "imported": list(self.imported),
            "updated": list(self.updated),
            "archived": list(self.archived),
            "written": list(self.written),
            "removed": list(self.removed),
            "shared": list(self.shared),
            "problems": [p.to_dict() for p in self.problems],
            "warnings": list(self.warnings),
            "summary": self.summary(),
        }


@dataclass(frozen=True)
class ShareResult:
    shared: tuple[ItemState, ...]
    already: tuple[ItemState, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "shared": [i.to_dict() for i in self.shared],
            "already": [i.to_dict() for i in self.already],
        }


class Row(NamedTuple):
    stable_id: str
    context_id: int | None
    file_name: str
    item_hash: str | None
    file_stat: str | None
    file_hash: str | None
    with_task: int
    removed_at: int | None
    #: A context this row depends on changed since the last sync (set by triggers).
    dirty: int = 0


@dataclass
class Seen:
    """One ``*.md`` file of the folder, parsed (or why not)."""

    name: str
    stable_id: str
    stat_key: str | None
    parsed: SharedFile | None = None
    file_hash: str | None = None
    error: str = ""
    conflict: bool = False


@dataclass
class Plan:
    stable_id: str
    row: Row | None
    seen: Seen | None
    db: SharedFile | None
    state: str
    action: str  # none, record, import, write, archive, delete_file, forget
    message: str = ""
    #: The local context's hash now (the stored one when it did not move), None without one.
    db_hash: str | None = None


# -- paths and rows --------------------------------------------------------------------------


def folder(store: Database) -> str:
    return config.shared_dir_for(store.root_dir)


def rel(store: Database, name: str) -> str:
    return f"{config.CONTEXT_DIR}/{config.SHARED_DIR}/{name}"


def rows_of(store: Database) -> dict[str, Row]:
    return {
        r[0]: Row(*r)
        for r in store.conn.execute(
            "SELECT stable_id, context_id, file_name, item_hash, file_stat, file_hash, "
            "with_task, removed_at, dirty FROM shared_items"
        )
    }


def save_row(store: Database, row: Row, now: int) -> None:
    store.conn.execute(
        "INSERT INTO shared_items(stable_id, context_id, file_name, item_hash, file_stat, "
        "file_hash, with_task, removed_at, synced_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(stable_id) DO UPDATE SET context_id = excluded.context_id, "
        "file_name = excluded.file_name, item_hash = excluded.item_hash, "
        "file_stat = excluded.file_stat, file_hash = excluded.file_hash, "
        "with_task = excluded.with_task, removed_at = excluded.removed_at, "
        "synced_at = excluded.synced_at",
        (*row[:8], now),
    )


def stat_key(st: os.stat_result, now_ns: int) -> str | None:
    """Identity of a file's version, or None when it changed too recently to be trusted."""
    if now_ns - max(st.st_mtime_ns, st.st_ctime_ns) < config.RACY_NS:
        return None
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


# -- the two sides ---------------------------------------------------------------------------


def task_path(store: Database, context_id: int) -> tuple[str, ...]:
    row = store.conn.execute(
        "SELECT task_id FROM context_task_map WHERE context_id = ? "
        "ORDER BY relevance DESC, task_id LIMIT 1",
        (context_id,),
    ).fetchone()
    if row is None:
        return ()
    ids = [*reversed(knowledge.ancestors(store.conn, int(row[0]))), int(row[0])]
    names = {
        r[0]: r[1]
        for r in store.conn.execute(
            f"SELECT id, name FROM tasks WHERE id IN ({','.join('?' * len(ids))})", ids
        )
    }
    return tuple(names[i] for i in ids if i in names)


def db_item(store: Database, stable_id: str, context_id: int, with_task: bool) -> SharedFile:
    """The shared fields of a local context, as its file would hold them."""
    conn = store.conn
    r = conn.execute(
        "SELECT type, content, scope, owner, created_at, updated_at FROM contexts WHERE id = ?",
        (context_id,),
    ).fetchone()
    files = tuple(
        tf.file_entry(p[0], p[1])
        for p in conn.execute(
            "SELECT f.path, m.relation_type FROM context_file_map m JOIN files f "
            "ON f.id = m.file_id WHERE m.context_id = ? ORDER BY f.path, m.relation_type",
            (context_id,),
        )
    )
    task = task_path(store, context_id) if with_task or r[2] == "task" else ()
    sup = conn.execute(
        "SELECT s.stable_id FROM contexts c JOIN shared_items s ON s.context_id = c.id "
        "WHERE c.superseded_by = ? ORDER BY s.stable_id LIMIT 1",
        (context_id,),
    ).fetchone()
    return SharedFile(
        stable_id=stable_id,
        type=r[0],
        content=r[1],
        scope=r[2] if r[2] in tf.SHAREABLE_SCOPES else "global",
        owner=r[3],
        created=r[4],
        updated=r[5],
        files=files,
        task=task,
        supersedes=sup[0] if sup else None,
    )


def normalized(store: Database, item: SharedFile) -> SharedFile:
    """A parsed file as the store would hold it: redacted, its paths project-relative."""
    clean = item.redacted()
    files = tuple(
        sorted(
            {
                tf.file_entry(knowledge.normalize_path(store, path), relation)
                for path, relation in map(tf.split_entry, clean.files)
            }
        )
    )
    return SharedFile(**{**clean.__dict__, "files": files})


def scan(store: Database, rows: Mapping[str, Row]) -> list[Seen]:
    """Every ``*.md`` file of the folder; unchanged ones (same stat) are not read again."""
    path = folder(store)
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    by_file = {r.file_name: r for r in rows.values() if r.removed_at is None}
    now_ns = time.time_ns()
    out: list[Seen] = []
    for entry in entries:
        name = entry.name
        if name.startswith(".") or not name.endswith(tf.SUFFIX):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            out.append(Seen(name, tf.guess_id("", name), None, error=f"{name}: {exc.strerror}"))
            continue
        key = stat_key(st, now_ns)
        known = by_file.get(name)
        if known is not None and key is not None and known.file_stat == key and known.file_hash:
            out.append(Seen(name, known.stable_id, key, file_hash=known.file_hash))
            continue
        out.append(read_file(store, entry.path, name, st, key))
    return out


def read_file(store: Database, path: str, name: str, st: os.stat_result, key: str | None) -> Seen:
    if not stat_mod.S_ISREG(st.st_mode):
        return Seen(name, tf.guess_id("", name), None, error=f"{name} is not a regular file")
    if st.st_size > tf.MAX_FILE_BYTES:
        return Seen(
            name,
            tf.guess_id("", name),
            None,
            error=f"{name} is {st.st_size} bytes, over the {tf.MAX_FILE_BYTES} limit",
        )
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        return Seen(name, tf.guess_id("", name), None, error=f"{name} cannot be read ({exc})")
    sid = tf.guess_id(text, name)
    if tf.has_conflict_markers(text):
        return Seen(name, sid, None, error=f"{name} holds merge conflict markers", conflict=True)
    try:
        item = normalized(store, tf.parse(text, name))
    except InvalidInput as exc:
        return Seen(name, sid, None, error=str(exc))
    return Seen(name, item.stable_id, key, parsed=item, file_hash=item.item_hash())


def write_file(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    os.replace(tmp, path)


def written_row(store: Database, row: Row, item: SharedFile, now: int) -> Row:
    """Write ``item``'s file and return the row that records it."""
    path = os.path.join(folder(store), row.file_name)
    write_file(path, tf.render(item))
    key = stat_key(os.stat(path), time.time_ns())
    digest = item.item_hash()
    return row._replace(item_hash=digest, file_hash=digest, file_stat=key, removed_at=None)


def title(item: SharedFile | None) -> str:
    return item.content.strip().split("\n", 1)[0][:80] if item else ""
