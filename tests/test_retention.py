"""Events retention (``gc``) and what takes the space (``stats``), on real store files."""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import run_cli
from ctxmode import Store

DAY = 86_400


def _seed(db: Path, now: int) -> None:
    with Store.open(db) as store, store.transaction() as conn:
        for sid, ended, last in (
            ("ended-old", now - 120 * DAY, now - 120 * DAY),
            ("idle-old", None, now - 100 * DAY),  # never sent its end: over when this old
            ("ended-recent", now - 10 * DAY, now - 10 * DAY),
            ("live", None, now - 60),
        ):
            conn.execute(
                "INSERT INTO sessions(session_id, agent, started_at, last_event_at, ended_at) "
                "VALUES (?, 'claude-code', ?, ?, ?)",
                (sid, last - 3600, last, ended),
            )
            conn.executemany(
                "INSERT INTO events(session_id, agent, category, type, priority, data, "
                "content_hash, created_at) VALUES (?, 'claude-code', 'file', 'edit', 2, ?, ?, ?)",
                [
                    (sid, json.dumps({"path": f"src/{sid}/{i}.py"}), f"sha256:{sid}{i}", last)
                    for i in range(700)
                ],
            )
            conn.execute(
                "INSERT INTO session_resume(session_id, snapshot, bytes, created_at) "
                "VALUES (?, 'snap', 4, ?)",
                (sid, last),
            )
        store.write_context("decision", "Keep the events of live sessions.")


def test_gc_drops_events_of_sessions_over_for_90_days(project: Path) -> None:
    db = project / ".context" / "context.db"
    now = int(time.time())
    _seed(db, now)
    dry = json.loads(run_cli("gc", "--dry-run", "--json", cwd=project).stdout)
    assert dry["events"] == {"sessions": 2, "events": 1400}
    with Store.open(db) as store:
        assert store.query("SELECT count(*) AS n FROM events")[0]["n"] == 2800
    done = run_cli("gc", cwd=project)
    assert "drop 1400 event(s) of 2 session(s)" in done.stdout, done.stdout
    with Store.open(db) as store:
        left = {r["session_id"] for r in store.query("SELECT DISTINCT session_id FROM events")}
        assert left == {"ended-recent", "live"}
        assert store.query("SELECT count(*) AS n FROM session_resume")[0]["n"] == 4
        assert store.query("SELECT count(*) AS n FROM sessions")[0]["n"] == 4
        assert store.query("SELECT count(*) AS n FROM contexts")[0]["n"] == 1
        # Their search rows went with them.
        assert (
            store.query("SELECT count(*) AS n FROM search_items WHERE item_kind = 'event'")[0]["n"]
            == 1400
        )
    shorter = json.loads(run_cli("gc", "--json", "--events-days", "5", cwd=project).stdout)
    assert shorter["events"] == {"sessions": 1, "events": 700}


def test_stats_shows_what_takes_the_space(project: Path) -> None:
    db = project / ".context" / "context.db"
    _seed(db, int(time.time()))
    data = json.loads(run_cli("stats", "--json", cwd=project).stdout)
    space = data["space"]
    assert space and list(space.values()) == sorted(space.values(), reverse=True)
    assert space["events"] > space["knowledge"] > 0
    assert "events" in run_cli("stats", cwd=project).stdout.splitlines()[1]
