"""``ctxmode snapshot``, ``events`` and ``sessions`` over a store filled by real hooks."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from _hooks import event_name, fixture, output_json, run_hook
from conftest import run_cli

CC = "claude-code"
SID = "5f0c1e2a-7b3d-4c8e-9a10-2b3c4d5e6f70"


def fill(project: Path) -> None:
    for name in (
        "user-prompt-submit",
        "post-tool-use.edit",
        "post-tool-use.todowrite",
        "post-tool-use.bash-git",
    ):
        payload = fixture(CC, name, project)
        output_json(run_hook(event_name(payload), payload, cwd=project))


def test_sessions_events_and_snapshot_json(project: Path) -> None:
    fill(project)
    proc = run_cli("sessions", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["count"] == 1 and data["sessions"][0]["session_id"] == SID
    assert data["sessions"][0]["agent"] == CC

    proc = run_cli("events", "--json", "--category", "file", cwd=project)
    events = json.loads(proc.stdout)["events"]
    assert [e["type"] for e in events] == ["edit"]
    assert events[0]["data"]["path"].endswith("src/client.py") and events[0]["priority"] == 1

    proc = run_cli("events", "--json", "--session", SID, "--limit", "2", cwd=project)
    assert json.loads(proc.stdout)["count"] == 2

    proc = run_cli("snapshot", "--json", "--budget", "1024", cwd=project)
    snap = json.loads(proc.stdout)
    assert snap["session_id"] == SID and snap["bytes"] <= 1024
    root = ET.fromstring(snap["xml"])
    assert "Wire retry into client" in [t.text for t in root.iter("task")]

    proc = run_cli("snapshot", "--session", SID, cwd=project)
    assert proc.stdout.startswith("<session_knowledge")


def test_human_output_and_errors(project: Path) -> None:
    proc = run_cli("sessions", cwd=project)
    assert proc.returncode == 0 and "No sessions." in proc.stderr
    fill(project)
    proc = run_cli("events", cwd=project)
    assert proc.returncode == 0 and "git commit: Add retry to client (#42)" in proc.stdout
    assert "edited " in proc.stdout and "src/client.py: def get(url): ⏎ return" in proc.stdout
    assert "asked: Add retry support" in proc.stdout and '{"' not in proc.stdout
    proc = run_cli("events", "--category", "nope", cwd=project)
    assert proc.returncode == 1 and "Error" in proc.stderr
    proc = run_cli("snapshot", "--budget", "10", cwd=project)
    assert proc.returncode == 1 and "Error" in proc.stderr
