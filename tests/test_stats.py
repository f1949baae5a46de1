"""``ctxmode stats``: every figure counted from a real store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from conftest import run_cli
from ctxmode import Store, sandbox, stats
from ctxmode.core.models import CONTEXT_TYPES, TASK_STATUSES
from ctxmode.sessions import snapshot
from seed_data import SESSION, seed


def test_empty_store(store: Store) -> None:
    st = stats.collect(store, days=7, now=1_800_000_000)
    assert list(st.contexts_by_type) == list(CONTEXT_TYPES)
    assert st.contexts_total == 0 and st.events_total == 0 and st.sessions == 0
    assert list(st.tasks_by_status) == list(TASK_STATUSES)
    assert st.snapshots.built == 0 and st.snapshots.last_bytes is None
    assert st.sandbox.bytes_kept_out == 0
    assert len(st.events_per_day) == 7 and all(n == 0 for _, n in st.events_per_day)
    assert st.events_per_day[-1][0] == "2027-01-15"
    assert st.db_bytes >= store.path.stat().st_size > 0
    json.dumps(st.to_dict())


def test_seeded_store_counts(store: Store) -> None:
    now = int(datetime(2026, 6, 10, 12, tzinfo=UTC).timestamp())
    seeded = seed(store, now=now)
    store.update_task(seeded.other_task, "completed")
    st = stats.collect(store, days=5, now=now)
    assert st.contexts_by_type["decision"] == 2
    assert st.contexts_by_type["snippet"] == 1 and st.contexts_by_type["interface"] == 0
    assert st.contexts_by_tier == {1: 4, 2: 1, 3: 1}
    assert (st.contexts_live, st.contexts_superseded, st.contexts_stale) == (5, 1, 1)
    assert st.tasks_by_status["in_progress"] == 1 and st.tasks_by_status["completed"] == 1
    assert st.events_by_category == {"error": 1, "file": 1, "intent": 1, "prompt": 4}
    assert st.sessions == 2 and st.files == 3
    saved = snapshot.latest_stored(store, session_id=SESSION)
    assert saved is not None
    assert st.snapshots.built == 1 and st.snapshots.last_bytes == saved.bytes
    assert st.snapshots.total_bytes == saved.bytes == st.snapshots.max_bytes
    assert st.events_per_day == (
        ("2026-06-06", 0),
        ("2026-06-07", 0),
        ("2026-06-08", 0),
        ("2026-06-09", 4),
        ("2026-06-10", 3),
    )
    data = st.to_dict()
    assert data["contexts"]["by_tier"] == {"1": 4, "2": 1, "3": 1}
    assert data["events"]["total"] == 7


def test_sandbox_bytes_kept_out_are_measured(store: Store) -> None:
    result = sandbox.execute(store, "python", "print('line of output ' * 8000)")
    assert result is not None
    st = stats.collect(store)
    produced = len(("line of output " * 8000 + "\n").encode())
    assert st.sandbox.runs == 1
    assert st.sandbox.bytes_produced == produced
    assert 0 < st.sandbox.bytes_returned < produced
    assert st.sandbox.bytes_kept_out == produced - st.sandbox.bytes_returned


def test_cli_stats(bare_project: Path) -> None:
    project = bare_project
    r = run_cli("stats", cwd=project)
    assert r.returncode == 1 and "ctxmode init" in r.stderr
    with Store.open(project / ".context" / "context.db") as store:
        seed(store)
    r = run_cli("stats", "--json", cwd=project)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["contexts"]["total"] == 6 and data["sessions"] == 2
    assert len(data["events_per_day"]) == stats.DEFAULT_DAYS
    r = run_cli("stats", "--days", "3", cwd=project)
    assert r.returncode == 0
    assert "decision 2" in r.stdout and "1 built" in r.stdout
