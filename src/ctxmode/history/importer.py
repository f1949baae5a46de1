"""``ctxmode history import``: record the project's past agent sessions as the hooks would have.

Every call a transcript holds goes through the hooks' own path: the agent's adapter
(``sessions.adapters.normalize``), extraction (``sessions.events.extract``: categories,
summaries, limits, redaction) and ``sessions.records.record`` with the hooks' idempotency key
(``adapters.call_key``: the agent's tool call id where it gives one) and the time the
transcript gives the call. So a session the hooks recorded live gains nothing but what they
missed, and importing twice stores nothing twice.

Invariants:
- progress is kept per transcript in ``history_files`` (offset read, size and mtime): an
  unchanged file is skipped unread, a grown one (a session still being written) continued;
- writes go in short transactions (``BATCH_CALLS`` calls each), so a hook never waits long
  and a killed import resumes where its last transaction ended;
- a transcript that cannot be read is skipped with its reason, never fatal;
- only this project's transcripts are read (``sources.match``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxmode.core import config
from ctxmode.core.db import Database
from ctxmode.core.errors import InvalidInput
from ctxmode.history import sources
from ctxmode.history.readers import Chunk, Unreadable, read_claude, read_codex, read_gemini
from ctxmode.history.sources import AGENTS, Transcript
from ctxmode.sessions import adapters, events, records

#: Calls recorded per write transaction.
BATCH_CALLS = 200

Progress = Callable[[int, int], None]
#: Agents whose sessions are read whole each time they change (not from an offset).
_WHOLE = frozenset({"gemini-cli", "opencode"})


@dataclass(frozen=True)
class Found:
    """One transcript of this project, and how it was matched."""

    transcript: Transcript
    matched_by: str


@dataclass(frozen=True)
class ImportReport:
    """What one import did (or, with ``dry_run``, would do)."""

    sessions: int = 0
    new_sessions: int = 0
    events: int = 0
    calls: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    unchanged: int = 0
    other_projects: int = 0
    candidates: int = 0
    dry_run: bool = False
    agents: dict[str, int] = field(default_factory=dict)
    matched_by: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "new_sessions": self.new_sessions,
            "events": self.events,
            "calls": self.calls,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "unchanged": self.unchanged,
            "other_projects": self.other_projects,
            "candidates": self.candidates,
            "dry_run": self.dry_run,
            "agents": self.agents,
            "matched_by": self.matched_by,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }

    def summary(self) -> str:
        """The final figures line."""
        verb = "would import" if self.dry_run else "imported"
        mb = self.bytes_read / 1e6
        rate = f", {mb / self.seconds:.0f} MB/s" if self.seconds > 0.05 and mb > 1 else ""
        return (
            f"{verb} {self.sessions} sessions ({self.new_sessions} new), {self.events} events; "
            f"read {mb:.1f} MB in {self.seconds:.1f} s{rate}; {self.unchanged} unchanged, "
            f"{len(self.skipped)} skipped, {self.other_projects} of other projects left alone"
            + (
                f"; {self.candidates} knowledge candidates in `ctxmode inbox`"
                if self.candidates
                else ""
            )
        )


def agents_of(choice: str | None) -> tuple[str, ...]:
    """``--agent`` as a tuple of agents (``all`` or None: every one)."""
    if choice in (None, "", "all"):
        return AGENTS
    if choice not in AGENTS:
        raise InvalidInput(f"unknown agent {choice!r}; use one of: all, {', '.join(AGENTS)}")
    return (choice,)


def transcripts_of(agent: str) -> list[Transcript]:
    """Every past session of ``agent`` on this machine, whatever its project."""
    if agent == "opencode":
        from ctxmode.history.opencode import sessions

        return sessions(config.opencode_data_dir() / "opencode.db")
    return sources.find(agent)


def discover(
    root: str, agents: Sequence[str] = AGENTS, since_ms: int | None = None
) -> tuple[list[Found], int]:
    """This project's transcripts (newest last) and how many of other projects were seen."""
    project = sources.project_identity(root)
    found: list[Found] = []
    others = 0
    for agent in agents:
        for transcript in transcripts_of(agent):
            if since_ms is not None and transcript.mtime_ns // 1_000_000 < since_ms:
                continue
            how = sources.match(project, transcript.cwd, transcript.remote, transcript.slug)
            if how is None:
                others += 1
            else:
                found.append(Found(transcript, how))
    return found, others


def count_past_sessions(root: str) -> dict[str, int]:
    """Past sessions of the project per agent (for ``ctxmode install``'s offer); cheap."""
    found, _ = discover(root)
    out: dict[str, int] = {}
    for item in found:
        out[item.transcript.agent] = out.get(item.transcript.agent, 0) + 1
    return out


def run(
    store: Database,
    *,
    agents: Sequence[str] = AGENTS,
    since_ms: int | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    now: Callable[[], float] = time.monotonic,
) -> ImportReport:
    """Import this project's past sessions into ``store`` (see the module docstring)."""
    started = now()
    found, others = discover(store.root_dir, agents, since_ms)
    done_rows = _rows(store)
    todo: list[tuple[Found, dict[str, Any] | None]] = []
    unchanged = 0
    skipped: list[tuple[str, str]] = []
    for item in found:
        row = done_rows.get(item.transcript.key)
        t = item.transcript
        if row is not None and row["size"] == t.size and row["mtime_ns"] == t.mtime_ns:
            if row["skipped"]:
                skipped.append((str(t.path), str(row["skipped"])))  # still unreadable
            else:
                unchanged += 1
        else:
            todo.append((item, row))
    total = sum(max(0, t.transcript.size - int((row or {}).get("offset") or 0)) for t, row in todo)
    stats = _Tally(skipped=skipped)
    report_progress = progress or (lambda done, total: None)
    report_progress(0, total)
    for item, row in todo:
        t = item.transcript
        try:
            _import_one(store, t, row, since_ms, dry_run, stats, total, report_progress)
        except Unreadable as exc:
            stats.skipped.append((str(t.path), str(exc)))
            if not dry_run:
                _save_row(store, t, t.session_id, 0, {}, str(exc))
            continue
        stats.matched_by[item.matched_by] = stats.matched_by.get(item.matched_by, 0) + 1
    report_progress(total, total)
    candidates = 0
    if not dry_run:
        from ctxmode.history import inbox

        # Nothing new imported: the candidates stand as they are (no scan of the events).
        candidates = inbox.propose(store) if stats.events else inbox.open_count(store)
    return ImportReport(
        candidates=candidates,
        sessions=len(stats.sessions),
        new_sessions=len(stats.new_sessions),
        events=stats.events,
        calls=stats.calls,
        bytes_read=stats.nbytes,
        seconds=now() - started,
        unchanged=unchanged,
        other_projects=others,
        dry_run=dry_run,
        agents=stats.agents,
        matched_by=stats.matched_by,
        skipped=stats.skipped,
    )


@dataclass
class _Tally:
    events: int = 0
    calls: int = 0
    nbytes: int = 0
    sessions: set[str] = field(default_factory=set)
    new_sessions: set[str] = field(default_factory=set)
    agents: dict[str, int] = field(default_factory=dict)
    matched_by: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _rows(store: Database) -> dict[str, dict[str, Any]]:
    rows = store.conn.execute(
        "SELECT path, session_id, offset, size, mtime_ns, state, skipped FROM history_files"
    ).fetchall()
    return {
        r[0]: {"session_id": r[1], "offset": r[2], "size": r[3], "mtime_ns": r[4],
               "state": json.loads(r[5]), "skipped": r[6]}
        for r in rows
    }  # fmt: skip


def _save_row(
    store: Database,
    t: Transcript,
    session_id: str | None,
    offset: int,
    state: dict[str, Any],
    skipped: str | None = None,
) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO history_files(path, agent, session_id, offset, size, mtime_ns, state, "
            "skipped, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO "
            "UPDATE SET session_id = excluded.session_id, offset = excluded.offset, "
            "size = excluded.size, mtime_ns = excluded.mtime_ns, state = excluded.state, "
            "skipped = excluded.skipped, imported_at = excluded.imported_at",
            (t.key, t.agent, session_id, offset, t.size, t.mtime_ns, json.dumps(state),
             skipped, int(time.time())),
        )  # fmt: skip


def _read(t: Transcript, offset: int, state: dict[str, Any]) -> Chunk:
    if t.agent == "claude-code":
        return read_claude(t.path, offset, state)
    if t.agent == "codex":
        return read_codex(t.path, offset, state)
    if t.agent == "gemini-cli":
        return read_gemini(t.path, offset, state)
    if t.agent == "qwen-code":
        from ctxmode.history.qwen import read_qwen

        return read_qwen(t.path, offset, state)
    if t.agent == "copilot-cli":
        from ctxmode.history.copilot import read_copilot

        return read_copilot(t.path, offset, state)
    from ctxmode.history.opencode import read_opencode

    return read_opencode(t)


def _import_one(
    store: Database,
    t: Transcript,
    row: dict[str, Any] | None,
    since_ms: int | None,
    dry_run: bool,
    stats: _Tally,
    total: int,
    progress: Progress,
) -> None:
    state: dict[str, Any] = dict((row or {}).get("state") or {})
    offset = int((row or {}).get("offset") or 0)
    session_id = (row or {}).get("session_id") or t.session_id
    cwd = state.get("cwd") or t.cwd
    compactions = int(state.get("compactions") or 0)
    fallback_ms = t.mtime_ns // 1_000_000
    known = bool(
        session_id
        and store.conn.execute(
            "SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
    )
    while True:
        chunk = _read(t, offset, state)
        session_id = session_id or chunk.session_id
        cwd = cwd or chunk.cwd
        if not session_id:
            raise Unreadable("no session id in the transcript or its name")
        stats.nbytes += chunk.nbytes
        progress(min(stats.nbytes, total), total)
        calls = [
            (ms, p) for ms, p in chunk.calls if since_ms is None or (ms or fallback_ms) >= since_ms
        ]
        stats.calls += len(calls)
        # Files read whole each time count their compactions afresh; the others add on.
        compactions = chunk.compactions if t.agent in _WHOLE else compactions + chunk.compactions
        next_offset = chunk.resume
        state = {"cwd": cwd, "compactions": compactions}

        def finish(
            sid: str = session_id,
            n: int = compactions,
            at: int = next_offset,
            state: dict[str, Any] = state,
        ) -> None:
            """The chunk's bookkeeping, in the transaction of its last calls (a kill
            before it commits reads the chunk again: its calls are stored once)."""
            if n:
                store.conn.execute(
                    "UPDATE sessions SET compact_count = max(compact_count, ?) "
                    "WHERE session_id = ?",
                    (n, sid),
                )
            _save_row(store, t, sid, at, state)

        stats.events += _record_calls(
            store, t.agent, session_id, cwd, calls, fallback_ms, dry_run, finish
        )
        if chunk.done or next_offset <= offset:
            break
        offset = next_offset
    if calls or known or chunk.calls:
        stats.sessions.add(session_id)
        if not known:
            stats.new_sessions.add(session_id)
        stats.agents[t.agent] = stats.agents.get(t.agent, 0) + 1


def _record_calls(
    store: Database,
    agent: str,
    session_id: str,
    cwd: str | None,
    calls: list[tuple[int, dict[str, Any]]],
    fallback_ms: int,
    dry_run: bool,
    finish: Callable[[], None],
) -> int:
    """Record rebuilt hook payloads as the hooks would, ``BATCH_CALLS`` per transaction,
    ``finish`` in the last one; the number of events stored (``dry_run``: extracted, and
    nothing written)."""
    stored = 0
    if dry_run:
        for _, rebuilt in calls:
            ev = adapters.normalize(agent, None, {**rebuilt, "session_id": session_id})
            stored += len(events.extract(ev)) if ev is not None else 0
        return stored
    if not calls:
        with store.transaction():
            finish()
        return 0
    for start in range(0, len(calls), BATCH_CALLS):
        batch = calls[start : start + BATCH_CALLS]
        with store.transaction():
            for ms, rebuilt in batch:
                payload = {**rebuilt, "session_id": session_id, "cwd": cwd or store.root_dir}
                ev = adapters.normalize(agent, None, payload)
                if ev is None:
                    continue
                result = records.record(
                    store, ev, events.extract(ev),
                    idempotency_key=adapters.call_key(ev.kind, payload),
                    project_dir=store.root_dir, now_ms=ms or fallback_ms, detect=False,
                    dedupe_window=None,
                )  # fmt: skip
                stored += result.inserted
            if start + BATCH_CALLS >= len(calls):
                finish()
    return stored


def imported_sessions(store: Database) -> dict[str, str]:
    """Session id -> agent of every session read from a transcript."""
    rows = store.conn.execute(
        "SELECT session_id, agent FROM history_files WHERE session_id IS NOT NULL "
        "AND skipped IS NULL"
    ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def session_refs(store: Database, event_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """For search hits on session events: event id -> its session, agent, the session's
    start and whether it was imported (``origin``), so a hit says when and by whom."""
    if not event_ids:
        return {}
    marks = ",".join("?" * len(event_ids))
    rows = store.conn.execute(
        f"SELECT e.id, e.session_id, e.agent, s.started_at, "
        f"EXISTS (SELECT 1 FROM history_files h WHERE h.session_id = e.session_id) "
        f"FROM events e LEFT JOIN sessions s ON s.session_id = e.session_id "
        f"WHERE e.id IN ({marks})",
        list(event_ids),
    ).fetchall()
    return {
        int(r[0]): {"session": r[1], "agent": r[2], "session_started_at": r[3],
                    "origin": "imported" if r[4] else "live"}
        for r in rows
    }  # fmt: skip
