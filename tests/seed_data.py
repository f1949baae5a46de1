"""Realistic store contents for the viewer, doctor and stats tests, written through the core API."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ctxmode import Store
from ctxmode.sessions import records as sessions
from ctxmode.sessions import snapshot
from ctxmode.sessions.events import EventRecord, NormalizedHookEvent

SESSION = "sess-alpha-0001"
OTHER_SESSION = "sess-beta-0002"


@dataclass(frozen=True)
class Seeded:
    root_task: int
    child_task: int
    other_task: int
    decision: int
    old_decision: int
    constraint: int
    snippet: int
    reference: int
    stale: int


def _event(kind: str, session_id: str, **kw: object) -> NormalizedHookEvent:
    return NormalizedHookEvent(agent="claude-code", kind=kind, session_id=session_id, **kw)  # type: ignore[arg-type]


def seed(store: Store, now: int | None = None) -> Seeded:
    """Tasks (a tree), contexts of every type with links, supersession, staleness, two sessions
    with events, a stored snapshot. Times are relative to ``now``."""
    ts = int(now if now is not None else time.time())
    root = store.root
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "src" / "auth.py").write_text("def login(): ...\n", encoding="utf-8")
    (root / "src" / "db.py").write_text("POOL = 5\n", encoding="utf-8")
    (root / "src" / "cache.py").write_text("TTL = 60\n", encoding="utf-8")

    auth = store.create_task("Ship the login flow", status="in_progress")
    tokens = store.create_task("Rotate refresh tokens", auth.id)
    other = store.create_task("Tune the database pool", status="pending")

    old = store.write_context(
        "decision", "Sessions are stored in cookies", task_id=auth.id, now=ts - 5 * 86_400
    )
    new = store.write_context(
        "decision",
        "Sessions live in Redis with a 24h TTL\nRationale: cookies hit the 4KB limit",
        task_id=auth.id,
        file_paths=["src/auth.py"],
        supersedes=old.id,
        owner="alice",
        now=ts - 4 * 86_400,
    )
    constraint = store.write_context(
        "constraint",
        "Passwords are hashed with argon2id, never bcrypt",
        task_id=tokens.id,
        file_paths=["src/auth.py"],
        relation="defines",
        owner="bob",
        now=ts - 3 * 86_400,
    )
    snippet = store.write_context(
        "snippet",
        "db pool: POOL = 5 connections per worker",
        task_id=other.id,
        file_paths=["src/db.py"],
        owner="alice",
        now=ts - 2 * 86_400,
    )
    reference = store.write_context(
        "reference", "Redis docs: https://redis.io/docs/ for TTL semantics", owner="bob"
    )
    stale = store.write_context(
        "convention", "Cache keys are prefixed with the tenant id", file_paths=["src/cache.py"]
    )
    (root / "src" / "cache.py").write_text("TTL = 120\n", encoding="utf-8")
    store.refresh_files(now=ts)

    for sid, prompts in ((SESSION, 3), (OTHER_SESSION, 1)):
        ev = _event("user_prompt", sid, prompt="Fix the login redirect")
        sessions.record(
            store,
            ev,
            [
                EventRecord("prompt", "user_prompt", {"text": f"Fix the login redirect #{i}"})
                for i in range(prompts)
            ],
            now_ms=(ts - 86_400) * 1000,
        )
    tool = _event(
        "post_tool_use",
        SESSION,
        tool_name="Edit",
        tool_input={"file_path": str(root / "src" / "auth.py")},
    )
    sessions.record(
        store,
        tool,
        [
            EventRecord("file", "edit", {"path": "src/auth.py"}),
            EventRecord("error", "tool_error", {"message": "TypeError in <login>"}),
            EventRecord("intent", "investigate", {"text": "look at <redirects> & cookies"}),
        ],
        now_ms=ts * 1000,
    )
    snapshot.save(store, snapshot.build_snapshot(store, session_id=SESSION), now=ts)
    return Seeded(
        root_task=auth.id,
        child_task=tokens.id,
        other_task=other.id,
        decision=new.id,
        old_decision=old.id,
        constraint=constraint.id,
        snippet=snippet.id,
        reference=reference.id,
        stale=stale.id,
    )


def seed_path(project: Path) -> Path:
    return project / ".context" / "context.db"
