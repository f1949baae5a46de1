"""Issue 31: the knowledge inbox, from a session Claude Code 2.1.332 really recorded before
ctxmode was installed (no hooks): decisions, rejections, a constraint, a convention and a fix
said or done in it, and questions and suppositions that must not become candidates.

``CTXMODE_E2E_HISTORY_FIXTURES=1`` also copies the transcript to
``tests/fixtures/history/inbox`` (paths replaced), where ``tests/test_history_inbox.py``
measures the inbox's precision on it without the agent.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import harness as h
import pytest
from mock_anthropic import MockAnthropic
from test_claude_code import Claude

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

#: (prompt, the candidates it truly states as (kind, subject)).
PROMPTS: list[tuple[str, set[tuple[str, str]]]] = [
    ("We'll use Redis for the session cache, not Memcached.",
     {("decision", "redis"), ("rejection", "memcached")}),
    ("Should we use Postgres for the audit log?", set()),
    ("If we used Kafka, would the queue be simpler?", set()),
    ("Don't use pickle for the cache values; JSON only.", {("rejection", "pickle")}),
    ("Never commit the .env file.", {("constraint", "never commit the env file")}),
    ("我们选用 FastAPI，不要用 Flask。", {("decision", "fastapi"), ("rejection", "flask")}),
    ("Run the rotation test and fix what fails", set()),
    ("Maybe we should switch to SQLite later, what do you think?", set()),
    ("By convention, test files are named test_*.py.",
     {("convention", "by convention test files are named test_ py")}),
    ("Fix the typo in the README", set()),
]  # fmt: skip
FIX = ("fix", "pytest")


def script(proj: Path) -> list[dict[str, Any]]:
    refresh = str(proj / "auth" / "refresh.py")

    def bash(cmd: str) -> dict[str, Any]:
        return {"tool_use": [{"name": "Bash", "input": {"command": cmd, "description": "run"}}]}

    fix = {
        "tool_use": [
            {
                "name": "Edit",
                "input": {
                    "file_path": refresh,
                    "old_string": "        self.valid.add(new)\n",
                    "new_string": "        self.valid.discard(old)\n        self.valid.add(new)\n",
                },
            }
        ]
    }
    episodes = []
    for prompt, _ in PROMPTS:
        turns: list[dict[str, Any]] = [{"text": "Noted."}]
        if prompt.startswith("Run the rotation test"):
            turns = [bash(h.PYTEST), fix, bash(h.PYTEST), {"text": "Fixed: rotate() revokes."}]
        episodes.append({"match": prompt, "turns": turns})
    return episodes


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    exe = h.cli("claude")
    root = tmp_path_factory.mktemp("inbox")
    proj, home = h.make_project(root)
    mock = MockAnthropic(script(proj), root / "requests.jsonl").start()
    try:
        agent = Claude(exe, proj, h.claude_env(home, mock.url), [])
        for prompt, _ in PROMPTS:
            agent.ask(prompt)
        rc = agent.close()
    finally:
        mock.stop()
    assert rc == 0
    if os.environ.get("CTXMODE_E2E_HISTORY_FIXTURES") == "1":
        subprocess.run(
            [h.PYTHON, str(h.HERE / "history_fixtures.py"), "inbox", str(root)], check=True
        )
    assert h.ctxmode(proj, home, "init").returncode == 0  # only init creates a store
    return {"proj": proj, "home": home, "sid": agent.session_id}


def test_the_inbox_proposes_what_the_session_said_and_nothing_else(run: dict[str, Any]) -> None:
    imported = h.ctxmode(run["proj"], run["home"], "history", "import", "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["sessions"] == 1
    listed = h.ctxmode(run["proj"], run["home"], "inbox", "--json")
    candidates = json.loads(listed.stdout)["candidates"]
    got = {(c["kind"], _subject(c)) for c in candidates}
    truth = set().union(*(said for _, said in PROMPTS)) | {FIX}
    assert got == truth, (got - truth, truth - got)
    for c in candidates:
        (ev,) = c["evidence"]
        assert ev["session"] == run["sid"] and ev["agent"] == "claude-code"
        if c["kind"] != "fix":
            assert ev["by"] == "user" and ev["quote"] in {p for p, _ in PROMPTS}


def test_accepting_a_candidate_stores_it_linked_to_the_files_the_session_edited(
    run: dict[str, Any],
) -> None:
    listed = json.loads(h.ctxmode(run["proj"], run["home"], "inbox", "--json").stdout)
    fix = next(c for c in listed["candidates"] if c["kind"] == "fix")
    accepted = h.ctxmode(run["proj"], run["home"], "inbox", "accept", str(fix["id"]), "--json")
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout)["files"] == ["auth/refresh.py"]
    rows = h.db_rows(run["proj"], "SELECT type, content FROM contexts")
    assert rows == [("issue", fix["text"])]
    again = json.loads(h.ctxmode(run["proj"], run["home"], "inbox", "--json").stdout)
    assert fix["id"] not in {c["id"] for c in again["candidates"]}


def _subject(candidate: dict[str, Any]) -> str:
    return FIX[1] if candidate["kind"] == "fix" else str(candidate["subject"])
