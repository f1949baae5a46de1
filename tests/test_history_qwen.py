"""``ctxmode history import`` of Qwen Code sessions, from the chats Qwen Code 0.24.4 wrote in the
e2e run (``tests/fixtures/history/qwen-code``), laid out in a scratch HOME where Qwen Code
keeps them, imported by the real CLI into a real store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _history import (
    _git_project,
    check_the_scripted_session,
    compactions,
    ctx,
    events,
    kinds,
    lay_out,
    prompts,
)

QWEN_SID = "69fc2617-cd7a-413a-b3cb-905288a685c1"


@pytest.fixture(autouse=True)
def _no_agent_homes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return _git_project(tmp_path / "proj")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


# -- Qwen Code -------------------------------------------------------------------------------


def test_qwen_sessions_come_back_as_its_hooks_recorded_them(proj: Path, home: Path) -> None:
    lay_out("qwen-code", home, proj)
    report = ctx(proj, "history", "import", "--agent", "qwen-code")
    assert report["sessions"] == 2 and report["agents"] == {"qwen-code": 2}, report
    assert report["matched_by"] == {"path": 2} and report["skipped"] == []
    evs = events(proj, QWEN_SID)
    assert {e["agent"] for e in evs} == {"qwen-code"}
    assert prompts(evs) == [
        "Shorten the access token TTL to 2 hours, test, commit, record the decision",
        "Now fix the rotation",
        "Check the log",
        "Where are we?",
    ]
    check_the_scripted_session(evs, proj)
    # The call after the compaction, continued in the same file, comes back too.
    assert ("data", "command") in kinds(evs)
    assert compactions(proj) == {QWEN_SID: 1, "b12e4742-0e10-491e-b5ea-43457b47707f": 0}
    again = ctx(proj, "history", "import")
    assert (
        again["events"] == 0 and again["bytes_read"] == 0 and len(events(proj)) == len(events(proj))
    )


def test_a_qwen_call_whose_result_is_not_written_yet_is_read_with_it_next_time(
    proj: Path, home: Path
) -> None:
    """Cut right after the model asked for the failing test run: the call is not recorded
    half (no result), and the next import records it once, with its failure."""
    (path, *_) = [p for p in lay_out("qwen-code", home, proj) if QWEN_SID in p.name]
    full = path.read_bytes()
    lines = full.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b"tests/test_refresh.py" in line) + 1
    path.write_bytes(b"".join(lines[:cut]))
    ctx(proj, "history", "import")
    before = events(proj, QWEN_SID)
    assert not [e for e in before if e["category"] == "error"]
    path.write_bytes(full)
    ctx(proj, "history", "import")
    after = events(proj, QWEN_SID)
    fresh = _git_project(proj.parent / "fresh")
    lay_out("qwen-code", home, fresh)
    ctx(fresh, "history", "import")
    whole = events(fresh, QWEN_SID)
    strip = str(proj), str(fresh)
    assert [(e["category"], e["type"], json.dumps(e["data"]).replace(strip[0], "P"))
            for e in after] == [
        (e["category"], e["type"], json.dumps(e["data"]).replace(strip[1], "P")) for e in whole
    ]  # fmt: skip
    assert compactions(proj)[QWEN_SID] == 1


def test_qwen_sessions_of_another_project_are_left_alone(proj: Path, home: Path) -> None:
    other = _git_project(proj.parent / "other", "# another project\n")
    lay_out("qwen-code", home, other)
    report = ctx(proj, "history", "import")
    assert report["sessions"] == 0 and report["other_projects"] == 2
    assert events(proj) == []


def test_qwen_runtime_dir_moves_where_the_sessions_are(
    proj: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lay_out("qwen-code", home, proj)
    (home / ".qwen").rename(tmp_path / "qwen-runtime")
    assert ctx(proj, "history", "import")["sessions"] == 0
    monkeypatch.setenv("QWEN_RUNTIME_DIR", str(tmp_path / "qwen-runtime"))
    assert ctx(proj, "history", "import")["sessions"] == 2


def test_an_unreadable_qwen_chat_is_skipped_with_its_reason(proj: Path, home: Path) -> None:
    (path, *_) = lay_out("qwen-code", home, proj)
    (path.parent / "22222222-3333-4444-8555-666666666666.jsonl").write_bytes(b"\x00\xff nope\n")
    report = ctx(proj, "history", "import")
    assert report["sessions"] == 2
    assert [(Path(s["path"]).name, s["reason"]) for s in report["skipped"]] == [
        ("22222222-3333-4444-8555-666666666666.jsonl", "no line is JSON")
    ]


def test_qwen_prompts_are_what_the_user_typed(proj: Path, home: Path) -> None:
    """A prompt hook's context rides in the recorded message: the prompt is the text Qwen
    Code shows (``displayText``); cron prompts and notifications (``provenance: system``) are
    not the user's words."""
    (path, *_) = [p for p in lay_out("qwen-code", home, proj) if QWEN_SID in p.name]
    base = {"sessionId": QWEN_SID, "cwd": str(proj), "timestamp": "2026-12-02T07:00:00.000Z"}
    injected = '<qwen:user-prompt-submit-context>[ctxmode_data kind="x"]'
    with path.open("a", encoding="utf-8") as handle:
        for entry in (
            {**base, "type": "user", "provenance": "real_user",
             "message": {"role": "user", "parts": [{"text": f"Ship it\n\n{injected}"}]},
             "systemPayload": {"displayText": "Ship it", "hookContext": injected}},
            {**base, "type": "user", "subtype": "cron", "provenance": "system",
             "message": {"role": "user", "parts": [{"text": "Run the nightly check"}]}},
        ):  # fmt: skip
            handle.write(json.dumps(entry) + "\n")
    ctx(proj, "history", "import")
    said = prompts(events(proj, QWEN_SID))
    assert said[-1] == "Ship it" and "Run the nightly check" not in said
