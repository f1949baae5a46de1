"""Hook events kept on disk while the store is locked, written by the next hook that gets in.

A hook waits ~1.7 s at most for the write lock, then fails open. A long writer (indexing an
18 MB folder held the lock for ~9 s) would otherwise cost the events of every tool call in
that window; so would a repair of a damaged store (``core.repair.repair``), for as long as it
runs. Instead the hook keeps what it would have written, the redacted records and the
few fields of the call that ``sessions.record`` needs (never the raw payload), as one file in
``<store file>.spool/``; the next hook whose own events were written writes up to
``REPLAY_BATCH`` of them, oldest first. Each keeps its idempotency key, so a file written twice
stores nothing new; the events keep the time of their call, not of their replay, but come after
the ones written meanwhile in id order. Replay skips the detectors (loops, latency), which
compare a call with the ones just before it.

Bounded: past ``MAX_FILES`` files the hook drops the event as before, with a log line. Core,
not hook code: the hooks write and replay the spool, ``doctor`` counts what waits in it.
Standard library only: this runs on the hook path.
"""

from __future__ import annotations

import contextlib
import json
import os

from ctxmode.core import config
from ctxmode.sessions import records as sessions
from ctxmode.sessions.events import EventRecord, NormalizedHookEvent

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from ctxmode.core.db import Database

#: Spooled calls kept at most; a store locked for good must not fill the disk.
MAX_FILES = 500
#: Spooled calls one hook writes after its own, at most (each ~1-2 ms).
REPLAY_BATCH = 50
#: How long a replay waits for the write lock: the spool can wait for a later hook, the agent
#: should not (a hook that only read, on a store still locked, replays too).
REPLAY_WAIT_MS = 100
#: The hook kinds whose records are worth keeping (the others only read or inject).
KINDS = frozenset({"post_tool_use", "post_tool_use_failure", "user_prompt", "stop"})
_SUFFIX = ".json"


class Spooled(Exception):
    """The store was locked: the call's records were kept in the spool instead."""


def folder(store: Database) -> str:
    return config.spool_dir_for(store.db_file)


def waiting(where: str) -> list[str]:
    """The file names of the calls spooled in ``where``, oldest first (none without a spool;
    files still being written, or claimed by a replaying hook, are not listed)."""
    try:
        return sorted(n for n in os.listdir(where) if n.endswith(_SUFFIX) and n[0] != ".")
    except OSError:
        return []


def keep(
    db_file: str,
    ev: NormalizedHookEvent,
    records: list[EventRecord],
    key: str,
    project: str | None,
    ms: int,
) -> bool:
    """Write one call's redacted records to the spool of the store file ``db_file``; False
    when it is full or unwritable."""
    where = config.spool_dir_for(db_file)
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        if len(os.listdir(where)) >= MAX_FILES:
            return False
        doc = {
            "agent": ev.agent,
            "kind": ev.kind,
            "session_id": ev.session_id,
            "tool_name": ev.tool_name,
            "key": key,
            "project": project,
            "ms": ms,
            "records": [list(sessions.redact_record(r)) for r in records],
        }
        name = f"{ms:015d}-{os.getpid()}-{key[:12]}{_SUFFIX}"
        tmp = os.path.join(where, "." + name)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, ensure_ascii=False)
        os.replace(tmp, os.path.join(where, name))  # whole files only, for replaying hooks
    except (OSError, ValueError):
        return False
    return True


def replay(store: Database, limit: int = REPLAY_BATCH) -> int:
    """Write up to ``limit`` spooled calls, oldest first; return how many were written.

    A file is claimed by renaming it first, so two hooks never write the same one; one that
    cannot be read is dropped. A failure to write (the lock is gone again) puts the file back
    and raises.
    """
    where = folder(store)
    names = waiting(where)
    if not names:
        return 0
    store.limit_lock_wait(REPLAY_WAIT_MS, 1)
    written = 0
    for name in names[:limit]:
        path = os.path.join(where, name)
        claimed = f"{path}.{os.getpid()}"
        try:
            os.rename(path, claimed)
        except OSError:
            continue  # another hook took it
        try:
            with open(claimed, encoding="utf-8") as fh:
                doc = json.load(fh)
            ev = NormalizedHookEvent(
                agent=str(doc["agent"]),
                kind=str(doc["kind"]),
                session_id=str(doc["session_id"]),
                tool_name=doc.get("tool_name"),
            )
            records = [EventRecord(str(c), str(t), dict(d)) for c, t, d in doc["records"]]
            key, project, ms = str(doc["key"]), doc.get("project"), int(doc["ms"])
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                os.remove(claimed)
            continue
        try:
            sessions.record(
                store, ev, records, idempotency_key=key, project_dir=project, now_ms=ms,
                detect=False,
            )  # fmt: skip
        except BaseException:
            with contextlib.suppress(OSError):
                os.rename(claimed, path)
            raise
        with contextlib.suppress(OSError):
            os.remove(claimed)
        written += 1
    with contextlib.suppress(OSError):
        os.rmdir(where)  # only when empty
    return written
