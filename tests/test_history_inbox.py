"""``ctxmode inbox``: knowledge candidates from imported sessions, never promoted unasked.

``tests/fixtures/history/inbox`` is a session Claude Code really recorded
(``tests/e2e/test_history_inbox.py``): ten prompts stating decisions, rejections, a
constraint and a convention, asking and supposing, and a failing test fixed. The precision
figure below is measured on it: candidates that are true statements the session made,
over all candidates proposed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from _history import CLAUDE_SID, FIXTURES, HOME, PROJ, _git_project, ctx
from ctxmode import Store
from ctxmode.history.inbox import statements

INBOX_SID = "41f0df5a-5515-437b-be8e-4c5a2f88496b"
#: What the recorded session truly stated: (kind, subject).
TRUTH = {
    ("decision", "redis"),
    ("rejection", "memcached"),
    ("rejection", "pickle"),
    ("constraint", "never commit the env file"),
    ("decision", "fastapi"),
    ("rejection", "flask"),
    ("convention", "by convention test files are named test_ py"),
    ("fix", "pytest"),
}


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """A git project where ``ctxmode init`` ran (only init creates a store)."""
    root = _git_project(tmp_path / "proj")
    Store.open(root / ".context" / "context.db").close()
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def lay_out_inbox(home: Path, proj: Path) -> Path:
    slug = str(proj).replace("/", "-")
    src = FIXTURES / "inbox" / "-home-dev-proj" / f"{INBOX_SID}.jsonl"
    dest = home / ".claude" / "projects" / slug / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = src.read_text().replace(PROJ, str(proj)).replace(HOME, str(home))
    dest.write_text(text)
    (proj / "auth").mkdir(exist_ok=True)
    (proj / "auth" / "refresh.py").write_text("# the fixed rotation\n")
    return dest


def subject(c: dict[str, Any]) -> str:
    return "pytest" if c["kind"] == "fix" and "pytest" in c["text"] else str(c["subject"])


def test_precision_on_a_session_claude_code_recorded(proj: Path, home: Path) -> None:
    lay_out_inbox(home, proj)
    ctx(proj, "history", "import")
    candidates = ctx(proj, "inbox")["candidates"]
    got = {(c["kind"], subject(c)) for c in candidates}
    true_positives = got & TRUTH
    precision = len(true_positives) / len(got)
    recall = len(true_positives) / len(TRUTH)
    print(
        f"inbox precision {precision:.2f} ({len(true_positives)}/{len(got)}), recall {recall:.2f}"
    )
    assert precision == 1.0, got - TRUTH
    assert recall == 1.0, TRUTH - got
    # The evidence is the session, its agent and date, and the user's exact words.
    lines = (FIXTURES / "inbox" / "-home-dev-proj" / f"{INBOX_SID}.jsonl").open()
    said = [json.loads(line).get("message") for line in lines if '"type":"user"' in line]
    prompts = {m["content"] for m in said if isinstance(m.get("content"), str)}
    for c in candidates:
        (ev,) = c["evidence"]
        assert ev["session"] == INBOX_SID and ev["agent"] == "claude-code"
        assert ev["at"] > 1_700_000_000
        if c["kind"] != "fix":
            assert ev["by"] == "user" and ev["quote"] in prompts, ev


def test_nothing_is_promoted_until_accepted(proj: Path, home: Path) -> None:
    lay_out_inbox(home, proj)
    ctx(proj, "history", "import")
    assert ctx(proj, "inbox")["count"] == len(TRUTH)
    assert ctx(proj, "query", "--mode", "broad")["items"] == []


def test_accept_stores_a_context_linked_to_the_files_the_session_edited(
    proj: Path, home: Path
) -> None:
    lay_out_inbox(home, proj)
    ctx(proj, "history", "import")
    listed = ctx(proj, "inbox")["candidates"]
    fix = next(c for c in listed if c["kind"] == "fix")
    done = ctx(proj, "inbox", "accept", str(fix["id"]))
    assert done["type"] == "issue" and done["files"] == ["auth/refresh.py"]
    shown = ctx(proj, "show", str(done["context_id"]))
    assert shown["content"] == fix["text"]
    assert shown["metadata"]["source"] == "inbox"
    assert shown["metadata"]["evidence"][0]["session"] == INBOX_SID
    redis = next(c for c in listed if (c["kind"], c["subject"]) == ("decision", "redis"))
    chosen = ctx(proj, "inbox", "accept", str(redis["id"]), "--type", "convention",
                 "--file", "README.md")  # fmt: skip
    assert chosen["type"] == "convention" and chosen["files"] == ["README.md"]
    left = {c["id"] for c in ctx(proj, "inbox")["candidates"]}
    assert fix["id"] not in left and redis["id"] not in left


def test_a_rejected_candidate_is_not_proposed_again(proj: Path, home: Path) -> None:
    lay_out_inbox(home, proj)
    ctx(proj, "history", "import")
    first = ctx(proj, "inbox")["candidates"][0]
    ctx(proj, "inbox", "reject", str(first["id"]))
    (home / ".claude" / "projects").rename(home / "moved")
    lay_out_inbox(home, proj)  # the same session again, as a new file: evidence again
    shutil.rmtree(home / "moved")
    ctx(proj, "history", "import")
    assert first["id"] not in {c["id"] for c in ctx(proj, "inbox")["candidates"]}
    everything = ctx(proj, "inbox", "--all")["candidates"]
    assert {c["status"] for c in everything if c["id"] == first["id"]} == {"rejected"}


def test_repeated_across_sessions_ranks_higher_and_a_later_contradiction_lower(
    proj: Path, home: Path
) -> None:
    lay_out_inbox(home, proj)
    later = lay_out_inbox(home, proj)
    # A second session, a day later, repeats the Redis decision and rejects FastAPI.
    lines = later.read_text().replace(INBOX_SID, CLAUDE_SID).replace("2026-12-02T", "2026-12-03T")
    lines = lines.replace("不要用 Flask", "不要用 FastAPI").replace("我们选用 FastAPI，", "")
    (later.parent / f"{CLAUDE_SID}.jsonl").write_text(lines)
    ctx(proj, "history", "import")
    listed = ctx(proj, "inbox")["candidates"]
    by = {(c["kind"], c["subject"]): c for c in listed}
    assert listed[0]["subject"] in {"redis", "memcached", "pickle", "never commit the env file"}
    assert len(by[("decision", "redis")]["evidence"]) == 2
    assert by[("decision", "redis")]["score"] == 4.0
    fastapi = by[("decision", "fastapi")]
    assert fastapi["score"] < 1 and fastapi["evidence"][0]["contradicted"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We'll use Redis for the session cache, not Memcached.",
         {("decision", "redis"), ("rejection", "memcached")}),
        ("Let's go with the JWT approach", {("decision", "jwt approach")}),
        ("We decided to use ULIDs for ids", {("decision", "ulids")}),
        ("Use Google OAuth 2.0 rather than Passport", {("rejection", "passport")}),
        ("Don't use pickle for cache values", {("rejection", "pickle")}),
        ("我们选用 FastAPI，不要用 Flask", {("decision", "fastapi"), ("rejection", "flask")}),
        ("以后都用 pnpm", {("decision", "pnpm")}),
        ("禁止直接推送到 main 分支", {("constraint", "禁止直接推送到 main 分支")}),
        # Asking, supposing and one-off instructions are not candidates.
        ("Should we use Postgres?", set()),
        ("If we used Kafka, would it help?", set()),
        ("Maybe we should use SQLite", set()),
        ("要不要用 Django？", set()),
        ("如果用 Kafka 会不会更简单", set()),
        ("use the helper in utils to parse it", set()),
        ("make sure the tests pass", set()),
        ("fix the bug, don't forget the tests", set()),
        ("What did we decide about the refresh token?", set()),
        ("We don't use Redis yet, do we?", set()),
        ("let's use a quick script to check the counts", set()),
        ("we use it to parse the config", set()),
        ("Don't use that, it is slow", set()),
        ("Let's use Postgres for the audit log", {("decision", "postgres")}),
    ],
)  # fmt: skip
def test_what_a_prompt_states(text: str, expected: set[tuple[str, str]]) -> None:
    assert {(s.kind, s.subject) for s in statements(text)} == expected


def test_an_unknown_candidate_is_a_clear_error(proj: Path) -> None:
    from click.testing import CliRunner

    from ctxmode.cli import cli

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(proj)
        result = CliRunner().invoke(cli, ["inbox", "accept", "99"])
    assert result.exit_code == 1 and "no candidate #99" in result.output


def test_the_viewer_lists_accepts_and_rejects_candidates(proj: Path, home: Path) -> None:
    import re

    from starlette.testclient import TestClient

    from ctxmode.web.app import create_app

    lay_out_inbox(home, proj)
    ctx(proj, "history", "import")
    db = proj / ".context" / "context.db"
    with TestClient(create_app(db, proj), base_url="http://127.0.0.1:8765") as client:
        page = client.get("/inbox").text
        assert "We&#39;ll use Redis for the session cache, not Memcached." in page
        assert "不要用 Flask" in page and INBOX_SID[:8] in page
        token = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert token
        ids = [int(i) for i in re.findall(r'id="candidate-(\d+)"', page)]
        assert len(ids) == len(TRUTH)
        gone = client.post(f"/inbox/{ids[0]}/reject", data={"csrf_token": token.group(1)},
                           follow_redirects=False)  # fmt: skip
        assert gone.status_code == 303
        kept = client.post(f"/inbox/{ids[1]}/accept",
                           data={"csrf_token": token.group(1), "type": "", "files": ""},
                           follow_redirects=False)  # fmt: skip
        assert kept.status_code == 303 and kept.headers["location"].startswith("/contexts/")
        page = client.get("/inbox").text
        assert f'id="candidate-{ids[0]}"' not in page and f'id="candidate-{ids[1]}"' not in page
        forged = client.post(f"/inbox/{ids[2]}/reject", data={}, follow_redirects=False)
        assert forged.status_code == 403
        sessions = client.get("/sessions").text
        assert "imported" in sessions
