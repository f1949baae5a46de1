"""Team knowledge through git: shared contexts as one file each under ``.context/shared``.

``share`` writes a context's file, ``unshare`` removes it, ``status`` says how each file and
its local context stand, ``sync`` brings both sides together. The store keeps, per stable id,
the hash of the shared fields both sides agreed on at the last sync (``shared_items``), so a
difference is known to come from here (the file is rewritten, the change shows in
``git diff``), from the repository (it is imported), or from both (a conflict: neither side is
overwritten until ``prefer`` names the side to keep).

Invariants:
- a file is imported under its stable id: never duplicated, never written back as new;
- a file with merge conflict markers or that does not validate is never imported, and its
  item is left as it was (not archived);
- a file that is deleted archives its item; a file that comes back restores it;
- only tier 1-2 types outside a session are shared, and an item that still looks like it
  holds a credential is refused, not silently stripped; hand-written files are redacted on
  import like anything else written to the store;
- who shared an item is what git says (the author of the last commit that touched its file;
  you, for a file not committed yet), kept as ``shared_by`` in the context's metadata: the
  file's ``owner:`` is the author's claim, shown as such, never as who shared it;
- a file that supersedes an item someone else shared is held for review: nothing is hidden
  until ``sync --accept ID`` applies it; ``ctxmode team`` lists it, ``sync`` reports it;
- a file's task path is at most ``MAX_TASK_DEPTH`` names deep.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ctxmode.core import config
from ctxmode.core.errors import InvalidInput, NotFound
from ctxmode.exchange import team_files as tf
from ctxmode.exchange import team_items as ti
from ctxmode.exchange import team_review as tr
from ctxmode.exchange.team_files import SharedFile
from ctxmode.exchange.team_items import ItemState, ShareResult, SyncReport, TeamStatus
from ctxmode.knowledge import contexts as knowledge

if TYPE_CHECKING:
    from ctxmode.core.db import Database

# -- planning --------------------------------------------------------------------------------


def _conflict_help(store: Database, name: str) -> str:
    rel = ti.rel(store, name)
    return (
        f"{rel} holds merge conflict markers and is not imported; edit it to keep the text you "
        f"want (remove the <<<<<<<, ======= and >>>>>>> lines), then `git add {rel}`; ctxmode "
        "imports it on the next command"
    )


def _both_help(sid: str, what: str) -> str:
    return (
        f"{what}; neither side was overwritten: keep the repository's with "
        f"`ctxmode sync --theirs {sid}`, or yours with `ctxmode sync --ours {sid}`"
    )


def plan(
    store: Database, prefer: Mapping[str, str] | None = None, *, full: bool = False
) -> list[ti.Plan]:
    """What a sync would do to each item (nothing is changed). Contexts that did not move
    since the last sync are not read again unless ``full`` (a status shows their fields)."""
    prefer = prefer or {}
    rows = ti.rows_of(store)
    seen_by_id: dict[str, ti.Seen] = {}
    plans: list[ti.Plan] = []
    for seen in ti.scan(store, rows):
        other = seen_by_id.get(seen.stable_id)
        if other is not None:
            seen.error = (
                f"{seen.name}: id {seen.stable_id} is also the id of {other.name}; give one of "
                "them another id (or delete the copy)"
            )
            plans.append(ti.Plan(seen.stable_id, None, seen, None, "invalid", "none", seen.error))
            continue
        seen_by_id[seen.stable_id] = seen
    for sid in sorted(set(seen_by_id) | set(rows)):
        row, found = rows.get(sid), seen_by_id.get(sid)
        db = None
        db_hash = None
        if row is not None and row.context_id is not None and row.removed_at is None:
            if full or row.dirty or row.item_hash is None:
                db = ti.db_item(store, sid, row.context_id, bool(row.with_task))
            db_hash = db.item_hash() if db is not None else row.item_hash
        p = _plan_one(store, sid, row, found, prefer.get(sid), db_hash)
        p.db = db
        p.db_hash = db_hash
        plans.append(p)
    return [p for p in plans if p.state != "removed"]


def _plan_one(
    store: Database,
    sid: str,
    row: ti.Row | None,
    seen: ti.Seen | None,
    side: str | None,
    db_hash: str | None,
) -> ti.Plan:
    """Classify one item; ``db_hash`` is its local context's hash (None: no live context)."""
    if seen is not None and seen.error:
        state = "conflicted" if seen.conflict else "invalid"
        message = _conflict_help(store, seen.name) if seen.conflict else seen.error
        if not seen.conflict:
            message += "; the file is not imported until it is fixed"
        return ti.Plan(sid, row, seen, None, state, "none", message)
    if seen is not None and (row is None or row.removed_at is not None):
        return ti.Plan(sid, row, seen, None, "new_in_repo", "import")
    if seen is not None and row is not None and row.context_id is None:
        if seen.file_hash != row.file_hash:
            msg = _both_help(sid, "deleted here and changed in the repository")
            action = {"theirs": "import", "ours": "delete_file"}.get(side or "", "none")
            return ti.Plan(sid, row, seen, None, "conflicted", action, msg)
        return ti.Plan(sid, row, seen, None, "deleted_locally", "delete_file")
    if seen is not None and row is not None and db_hash is not None:
        if db_hash == seen.file_hash:
            same = row.item_hash == db_hash and row.file_hash == seen.file_hash
            same = same and row.file_stat == seen.stat_key
            return ti.Plan(sid, row, seen, None, "in_sync", "none" if same else "record")
        local = db_hash != row.item_hash
        repo = seen.file_hash != row.file_hash
        if local and repo:
            msg = _both_help(sid, "changed here and in the repository")
            action = {"theirs": "import", "ours": "write"}.get(side or "", "none")
            return ti.Plan(sid, row, seen, None, "conflicted", action, msg)
        if repo:
            return ti.Plan(sid, row, seen, None, "changed_in_repo", "import")
        if local:
            return ti.Plan(sid, row, seen, None, "changed_locally", "write")
        return ti.Plan(sid, row, seen, None, "in_sync", "record")
    assert row is not None
    if row.removed_at is not None:
        return ti.Plan(sid, row, None, None, "removed", "none")
    if db_hash is None:
        return ti.Plan(sid, row, None, None, "deleted_locally", "forget")
    if db_hash != row.item_hash:
        msg = _both_help(sid, "changed here and deleted in the repository")
        action = {"theirs": "archive", "ours": "write"}.get(side or "", "none")
        return ti.Plan(sid, row, None, None, "conflicted", action, msg)
    return ti.Plan(sid, row, None, None, "deleted_in_repo", "archive")


# -- applying --------------------------------------------------------------------------------


#: Names at most in a shared file's ``task:`` path (a file cannot fill the task tree).
MAX_TASK_DEPTH = 8


def _task_for(store: Database, path: Sequence[str]) -> int:
    if len(path) > MAX_TASK_DEPTH:
        raise InvalidInput(
            f"its task path has {len(path)} names; at most {MAX_TASK_DEPTH} are imported: "
            "shorten the `task:` list"
        )
    parent: int | None = None
    for name in path:
        row = store.conn.execute(
            "SELECT id FROM tasks WHERE name = ? AND parent_id IS ? ORDER BY id LIMIT 1",
            (name, parent),
        ).fetchone()
        parent = int(row[0]) if row else knowledge.create_task(store, name, parent).id
    assert parent is not None
    return parent


def _link_entries(store: Database, context_id: int, entries: Sequence[str]) -> None:
    """Link a context to a shared file's ``files`` entries, each with its own relation."""
    by_relation: dict[str, list[str]] = {}
    for path, relation in map(tf.split_entry, entries):
        by_relation.setdefault(relation, []).append(path)
    for relation, paths in sorted(by_relation.items()):
        knowledge.link_files(store, context_id, paths, relation)


def _import(store: Database, item: SharedFile, row: ti.Row | None, now: int) -> int:
    """Create or update the local context of a file; return its id."""
    conn = store.conn
    task_id = _task_for(store, item.task) if item.task else None
    context_id = row.context_id if row is not None else None
    if context_id is None:
        result = knowledge.write_context(
            store,
            item.type,
            item.content,
            task_id=task_id,
            scope=item.scope,
            owner=item.owner,
            now=now,
        )
        context_id = result.id
        _link_entries(store, context_id, item.files)
        taken = conn.execute(
            "SELECT stable_id FROM shared_items WHERE context_id = ? AND stable_id != ?",
            (context_id, item.stable_id),
        ).fetchone()
        if taken is not None:
            raise InvalidInput(
                f"{item.stable_id} holds the same {item.type} as shared item {taken[0]}; "
                "delete one of the two files"
            )
    else:
        knowledge.update_context(store, context_id, content=item.content, type=item.type, now=now)
        conn.execute("DELETE FROM context_file_map WHERE context_id = ?", (context_id,))
        _link_entries(store, context_id, item.files)
        if row is not None and (row.with_task or item.scope == "task"):
            conn.execute("DELETE FROM context_task_map WHERE context_id = ?", (context_id,))
        if task_id is not None:
            knowledge.link_task(store, context_id, task_id)
    conn.execute(
        "UPDATE contexts SET owner = ?, scope = ?, created_at = COALESCE(?, created_at), "
        "updated_at = COALESCE(?, updated_at), archived_at = NULL, "
        "metadata = json_set(metadata, '$.shared_id', ?) WHERE id = ?",
        (item.owner, item.scope, item.created, item.updated, item.stable_id, context_id),
    )
    if item.created is not None:
        conn.execute(
            "UPDATE search_items SET created_at = ? WHERE item_kind = 'context' AND ref_id = ? "
            "AND created_at != ?",
            (item.created, context_id, item.created),
        )
    return context_id


def _archive(store: Database, row: ti.Row, now: int) -> None:
    conn = store.conn
    if row.context_id is not None:
        conn.execute(
            "UPDATE contexts SET archived_at = COALESCE(archived_at, ?), "
            "metadata = json_remove(metadata, '$.shared_id') WHERE id = ?",
            (now, row.context_id),
        )
        # What it replaced comes back, as when a teammate's superseding file is gone.
        conn.execute(
            "UPDATE contexts SET superseded_by = NULL WHERE superseded_by = ? "
            "AND id IN (SELECT context_id FROM shared_items WHERE context_id IS NOT NULL)",
            (row.context_id,),
        )


def sync(
    store: Database,
    prefer: Mapping[str, str] | None = None,
    now: int | None = None,
    accept: Sequence[str] = (),
) -> SyncReport:
    """Import what changed in the folder, write what changed here; report both. ``accept``
    names held items (``ctxmode team``) whose supersession to apply."""
    for sid, side in (prefer or {}).items():
        if side not in ti.SIDES:
            raise InvalidInput(f"unknown side {side!r} for {sid}; use ours or theirs")
    ts = int(time.time() if now is None else now)
    out: dict[str, list[str]] = {k: [] for k in ("imported", "updated", "archived", "written")}
    out.update(removed=[], shared=[])
    problems: list[ItemState] = []
    warnings: list[str] = []
    authors = tr.Authors(store)
    with store.transaction() as conn:
        plans = plan(store, prefer)
        unknown = set(prefer or {}) - {p.stable_id for p in plans}
        if unknown:
            raise NotFound(f"no shared item {', '.join(sorted(unknown))}; see `ctxmode team`")
        accepted = [tr.accept(store, sid) for sid in dict.fromkeys(accept)]
        for p in plans:
            if p.action == "none":
                if p.state in ("conflicted", "invalid"):
                    problems.append(_state(store, p))
                continue
            try:
                with store.transaction():
                    _apply(store, p, ts, out, authors)
            except InvalidInput as exc:
                problems.append(_state(store, p, state="invalid", message=str(exc)))
        warnings.extend(accepted)
        warnings.extend(tr.follow_supersession(store, plans))
        warnings.extend(_share_successors(store, ts, out))
        # The ``shared_id`` metadata marks shared contexts in listings; an edit of the
        # metadata (the viewer replaces it whole) must not drop the mark.
        conn.execute(
            "UPDATE contexts SET metadata = json_set(metadata, '$.shared_id', "
            "(SELECT stable_id FROM shared_items s WHERE s.context_id = contexts.id)) "
            "WHERE id IN (SELECT context_id FROM shared_items WHERE removed_at IS NULL) "
            "AND json_extract(metadata, '$.shared_id') IS NOT "
            "(SELECT stable_id FROM shared_items s WHERE s.context_id = contexts.id)"
        )
        # Every row is read as it now stands, but those left in conflict: their local side
        # must still count as changed at the next sync.
        conn.execute("UPDATE shared_items SET dirty = 0 WHERE dirty = 1")
        kept = [p.stable_id for p in plans if p.state in ("conflicted", "invalid")]
        kept += [p.stable_id for p in problems]
        conn.executemany(
            "UPDATE shared_items SET dirty = 1 WHERE stable_id = ?", [(k,) for k in set(kept)]
        )
        edits = conn.execute("SELECT edits FROM team_state WHERE id = 1").fetchone()[0]
        conn.execute(
            "UPDATE team_state SET fingerprint = ?, synced_edits = ? WHERE id = 1",
            (config.folder_fingerprint(ti.folder(store)), edits),
        )
    return SyncReport(
        **{k: tuple(v) for k, v in out.items()},
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


def _apply(
    store: Database, p: ti.Plan, ts: int, out: dict[str, list[str]], authors: tr.Authors
) -> None:
    sid, row, seen = p.stable_id, p.row, p.seen
    if p.action == "import":
        assert seen is not None and seen.parsed is not None
        if row is not None and row.removed_at is not None and row.context_id is None:
            row = None  # the file came back after its context was deleted here
        existed = row is not None and row.context_id is not None
        context_id = _import(store, seen.parsed, row, ts)
        tr.set_meta(store, context_id, shared_by=authors.of(seen.name))
        with_task = 1 if row is None else row.with_task
        db = ti.db_item(store, sid, context_id, bool(with_task))
        ti.save_row(
            store,
            ti.Row(
                sid,
                context_id,
                seen.name,
                db.item_hash(),
                seen.stat_key,
                seen.file_hash,
                with_task,
                None,
            ),  # fmt: skip
            ts,
        )
        out["updated" if existed else "imported"].append(sid)
    elif p.action == "write":
        assert row is not None and row.context_id is not None
        if p.db is None:
            p.db = ti.db_item(store, sid, row.context_id, bool(row.with_task))
        ti.save_row(store, ti.written_row(store, row, p.db, ts), ts)
        out["written"].append(sid)
    elif p.action == "record":
        assert row is not None and seen is not None and p.db_hash is not None
        digest = p.db_hash
        new = row._replace(item_hash=digest, file_hash=seen.file_hash, file_stat=seen.stat_key)
        ti.save_row(store, new._replace(file_name=seen.name), ts)
    elif p.action == "archive":
        assert row is not None
        _archive(store, row, ts)
        ti.save_row(store, row._replace(file_stat=None, file_hash=None, removed_at=ts), ts)
        out["archived"].append(sid)
    elif p.action == "delete_file":
        assert row is not None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(ti.folder(store), row.file_name))
        store.conn.execute("DELETE FROM shared_items WHERE stable_id = ?", (sid,))
        out["removed"].append(sid)
    elif p.action == "forget":
        store.conn.execute("DELETE FROM shared_items WHERE stable_id = ?", (sid,))


def _share_successors(store: Database, ts: int, out: dict[str, list[str]]) -> list[str]:
    """Share the local context that superseded a shared one: the team would otherwise keep
    following the replaced item."""
    warnings: list[str] = []
    for _ in range(100):  # a chain of successors, one link per round
        rows = store.conn.execute(
            "SELECT s.stable_id, c.superseded_by FROM shared_items s JOIN contexts c "
            "ON c.id = s.context_id WHERE s.removed_at IS NULL AND c.superseded_by IS NOT NULL "
            "AND c.superseded_by NOT IN (SELECT context_id FROM shared_items "
            "WHERE context_id IS NOT NULL)"
        ).fetchall()
        if not rows:
            break
        for sid, successor in rows:
            refusal = _refusal(store, int(successor))
            if refusal:
                warnings.append(f"#{successor} supersedes shared item {sid} but {refusal}")
                continue
            out["shared"].append(_share_one(store, int(successor), True, ts).stable_id)
        if warnings:
            break
    return warnings


def _state(store: Database, p: ti.Plan, **changes: Any) -> ItemState:
    item = p.db or (p.seen.parsed if p.seen else None)
    name = p.seen.name if p.seen else (p.row.file_name if p.row else tf.file_name(p.stable_id))
    base = ItemState(
        stable_id=p.stable_id,
        file=ti.rel(store, name),
        state=p.state,
        context_id=p.row.context_id if p.row else None,
        type=item.type if item else None,
        owner=item.owner if item else None,
        title=ti.title(item),
        message=p.message,
    )
    return ItemState(**{**base.__dict__, **changes})


# -- commands --------------------------------------------------------------------------------


def status(store: Database) -> TeamStatus:
    """Each shared item and file with its state (nothing changes); uncommitted files flagged
    when the project is a git work tree."""
    dirty = _uncommitted(store)
    items = []
    for p in plan(store, full=True):
        item = _state(store, p)
        changes: dict[str, Any] = {"uncommitted": item.file in dirty}
        if item.context_id is not None:
            meta = store.conn.execute(
                "SELECT json_extract(metadata, '$.shared_by'), "
                "json_extract(metadata, '$.supersedes_held') FROM contexts WHERE id = ?",
                (item.context_id,),
            ).fetchone()
            if meta and meta[0]:
                changes["shared_by"] = str(meta[0])
            if meta and meta[1] and item.state == "in_sync":
                changes["state"] = "held"
                changes["message"] = (
                    f"supersedes {meta[1]}, which someone else shared: held for review; "
                    f"`ctxmode sync --accept {item.stable_id}` applies it"
                )
        items.append(ItemState(**{**item.__dict__, **changes}))
    return TeamStatus(ti.rel(store, ""), tuple(items))


def _uncommitted(store: Database) -> set[str]:
    try:
        proc = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", ti.folder(store)],
            cwd=store.root_dir,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    if proc.returncode != 0:
        return set()
    return {line[3:].strip().strip('"') for line in proc.stdout.splitlines() if len(line) > 3}


def _refusal(store: Database, context_id: int) -> str:
    """Why a context cannot be shared, or ``""``."""
    ctx = knowledge.get_context(store, context_id)
    if ctx.type not in tf.SHAREABLE_TYPES:
        return f"is a {ctx.type}: only {', '.join(tf.SHAREABLE_TYPES)} are shared"
    if ctx.scope == "session" or ctx.session_id:
        return "belongs to one session: session knowledge is never shared"
    if ctx.superseded_by is not None:
        return f"is superseded by #{ctx.superseded_by}: share that one instead"
    item = ti.db_item(store, "", context_id, True)
    found = tf.credential_findings(
        [
            ("content", ctx.content),
            ("owner", ctx.owner),
            *(("file path", tf.split_entry(f)[0]) for f in item.files),
            *(("task name", t) for t in item.task),
        ]
    )
    if found:
        return (
            f"still looks like it holds a credential ({'; '.join(found)}); write it again "
            f"without it (`ctxmode add ... --supersedes {context_id}`) and share the new one"
        )
    return ""


def _share_one(store: Database, context_id: int, with_task: bool, ts: int) -> ItemState:
    old = store.conn.execute(
        "SELECT stable_id FROM shared_items WHERE context_id = ?", (context_id,)
    ).fetchone()
    sid = old[0] if old else tf.new_stable_id()
    row = ti.Row(sid, context_id, tf.file_name(sid), None, None, None, int(with_task), None)
    item = ti.db_item(store, sid, context_id, with_task)
    ti.save_row(store, ti.written_row(store, row, item, ts), ts)
    store.conn.execute(
        "UPDATE contexts SET archived_at = NULL, metadata = json_set(metadata, "
        "'$.shared_id', ?, '$.shared_by', COALESCE(json_extract(metadata, '$.shared_by'), ?)) "
        "WHERE id = ?",
        (sid, tr.local_author(store), context_id),
    )
    return ItemState(
        sid,
        ti.rel(store, row.file_name),
        "in_sync",
        context_id,
        item.type,
        item.owner,
        ti.title(item),
    )


def share(
    store: Database, context_ids: Sequence[int], *, with_task: bool = True, now: int | None = None
) -> ShareResult:
    """Write a file for each context; all or nothing: one refusal shares none."""
    ts = int(time.time() if now is None else now)
    refused = [
        f"#{cid} {why}" for cid in dict.fromkeys(context_ids) if (why := _refusal(store, cid))
    ]
    if refused:
        raise InvalidInput("nothing shared: " + "; ".join(refused))
    ensure_gitignore(store)
    shared: list[ItemState] = []
    already: list[ItemState] = []
    with store.transaction():
        for cid in dict.fromkeys(context_ids):
            row = store.conn.execute(
                "SELECT stable_id, file_name FROM shared_items WHERE context_id = ? "
                "AND removed_at IS NULL",
                (cid,),
            ).fetchone()
            if row is not None and os.path.exists(os.path.join(ti.folder(store), row[1])):
                ctx = knowledge.get_context(store, cid)
                already.append(
                    ItemState(row[0], ti.rel(store, row[1]), "in_sync", cid, ctx.type, ctx.owner)
                )
                continue
            shared.append(_share_one(store, cid, with_task, ts))
    return ShareResult(tuple(shared), tuple(already))


def unshare(store: Database, context_id: int) -> ItemState:
    """Remove a context's file (teammates' copies are archived when they pull); the local
    context stays, unshared."""
    knowledge.get_context(store, context_id)
    row = store.conn.execute(
        "SELECT stable_id, file_name FROM shared_items WHERE context_id = ?", (context_id,)
    ).fetchone()
    if row is None:
        raise NotFound(
            f"context #{context_id} is not shared; list shared items with `ctxmode team`"
        )
    with store.transaction() as conn:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(ti.folder(store), row[1]))
        conn.execute("DELETE FROM shared_items WHERE stable_id = ?", (row[0],))
        conn.execute(
            "UPDATE contexts SET metadata = json_remove(metadata, '$.shared_id') WHERE id = ?",
            (context_id,),
        )
    return ItemState(row[0], ti.rel(store, row[1]), "unshared", context_id)


def ensure_gitignore(store: Database) -> None:
    from ctxmode.core.db import write_gitignore

    write_gitignore(os.path.join(store.root_dir, config.CONTEXT_DIR))


def file_problems(root: str) -> list[tuple[str, str]]:
    """``(file, problem)`` of every shared file that would not import (merge conflict
    markers, invalid front matter), read from the folder alone (``doctor``)."""
    out: list[tuple[str, str]] = []
    path = config.shared_dir_for(root)
    try:
        names = sorted(n for n in os.listdir(path) if n.endswith(tf.SUFFIX))
    except OSError:
        return out
    for name in names:
        if name.startswith("."):
            continue
        try:
            with open(os.path.join(path, name), encoding="utf-8") as fh:
                text = fh.read(tf.MAX_FILE_BYTES + 1)
            tf.parse(text, name)
        except (OSError, UnicodeDecodeError) as exc:
            out.append((name, f"cannot be read ({exc})"))
        except InvalidInput as exc:
            if tf.has_conflict_markers(text):
                rel = f"{config.CONTEXT_DIR}/{config.SHARED_DIR}/{name}"
                out.append((name, f"merge conflict markers: resolve them, then `git add {rel}`"))
            else:
                out.append((name, str(exc)))
    return out


def shared_ids(store: Database) -> dict[int, str]:
    """Context id -> stable id of every shared context."""
    return {
        int(r[0]): str(r[1])
        for r in store.conn.execute(
            "SELECT context_id, stable_id FROM shared_items WHERE context_id IS NOT NULL "
            "AND removed_at IS NULL"
        )
    }
