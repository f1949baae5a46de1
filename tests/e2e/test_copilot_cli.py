"""GitHub Copilot CLI 1.0.102 (``copilot -p --output-format json``, its official offline BYOK
mode: no GitHub login) driven for real against a scripted OpenAI Chat Completions server, with
ctxmode installed by ``ctxmode install copilot-cli --scope project --trust`` (hooks in
``.github/copilot/settings.local.json``, the server in ``.github/mcp.json``, the folder trust in
``~/.copilot/config.json``)."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import harness as h
import pytest
from harness import (  # noqa: F401 - shared tests, collected here with this module's run
    test_a_commit_that_failed_is_not_a_commit,
    test_the_failure_is_an_error_that_says_what_failed,
    test_the_history_import_gives_back_what_the_hooks_recorded,
    test_the_mcp_write_context_call_stored_the_decision,
)
from mock_openai_chat import MockChat, call, text

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

#: Knowledge linked to a file (``ctxmode add --file``) that the agent edits in p2.
CONSTRAINT = "Refresh tokens are single use: rotation revokes the old one"
FENCE = 'kind="file_knowledge"'


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    exe = h.cli("copilot")
    root = tmp_path_factory.mktemp("copilot")
    proj, home = h.make_project(root)
    mock = MockChat(root / "requests.jsonl").start()
    # The binary unpacks its JavaScript (~230 MB) into $XDG_CACHE_HOME/copilot on first start:
    # once, in the shared cache, rather than in every test's HOME.
    env = {**h.git_env(home), "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": mock.base_url,
           "COPILOT_PROVIDER_API_KEY": "dummy-key-e2e", "COPILOT_MODEL": "mock-model",
           "COPILOT_AUTO_UPDATE": "false", "XDG_CACHE_HOME": str(h.CACHE / "copilot-xdg"),
           "NO_COLOR": "1", "TERM": "dumb"}  # fmt: skip
    assert h.ctxmode(proj, home, "init").returncode == 0

    def ctx(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([h.CTXMODE, *args], cwd=proj, env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip

    out: dict[str, Any] = {"proj": proj, "home": home, "mock": mock, "rcs": [], "marks": {},
                           "sids": {}}  # fmt: skip

    def copilot(phase: str, prompt: str, steps: list[dict[str, Any]], *args: str) -> int:
        mock.load(phase, steps)
        out["marks"][phase] = len(mock.requests)
        argv = [str(exe), "-p", prompt, "--allow-all", "--output-format", "json", *args]
        proc = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
        out[phase + ".stdout"] = proc.stdout[-3000:]
        out[phase + ".stderr"] = proc.stderr[-3000:]
        for line in proc.stdout.splitlines():
            if line.startswith("{") and json.loads(line).get("type") == "result":
                out["sids"][phase] = json.loads(line).get("sessionId")
        return proc.returncode

    plain = ctx("install", "copilot-cli", "--scope", "project")
    assert plain.returncode == 0, plain.stderr
    out["install_plain"] = plain.stdout
    out["agents_untrusted"] = json.loads(ctx("agents", "--json").stdout)
    try:
        out["untrusted_rc"] = copilot("untrusted", "hello", [text("hi")])
        out["untrusted_sessions"] = h.sessions(proj, home)
        trusted = ctx("install", "copilot-cli", "--scope", "project", "--trust")
        assert trusted.returncode == 0, trusted.stderr
        out["install_trust"] = trusted.stdout
        out["agents"] = json.loads(ctx("agents", "--json").stdout)
        out["doctor"] = ctx("doctor").stdout
        if h.CAPTURE:
            path = proj / ".github" / "copilot" / "settings.local.json"
            settings = json.loads(path.read_text())
            wrapped = {"hooks": {e: [{"hooks": hs}] for e, hs in settings["hooks"].items()}}
            h.wrap_hooks_for_capture(wrapped, "copilot-cli")
            settings["hooks"] = {e: g[0]["hooks"] for e, g in wrapped["hooks"].items()}
            path.write_text(json.dumps(settings, indent=2))
        cfg = str(proj / "auth" / "config.py")
        refresh = str(proj / "auth" / "refresh.py")
        out["rcs"].append(copilot("s1", "Shorten the access token TTL to 2 hours, test, commit", [
            call("view", path=cfg),
            call("edit", path=cfg, old_str="ACCESS_TTL = 86400", new_str="ACCESS_TTL = 7200"),
            call("bash", command=h.PYTEST, description="Run the test"),
            call("bash", command=h.COMMIT, description="Commit"),
            call("bash", command=h.EMPTY_COMMIT, description="Commit again"),
            call("ctxmode-write_context", type="decision", content=h.DECISION,
                 file_paths=["auth/config.py"]),
            text("ACCESS_TTL is 7200 and committed; test_rotation still fails."),
        ]))  # fmt: skip
        added = h.ctxmode(proj, home, "add", "constraint", CONSTRAINT, "--file", "auth/refresh.py")
        assert added.returncode == 0, added.stderr
        out["rcs"].append(copilot("p2", "Now fix the rotation", [
            call("view", path=refresh),
            call("edit", path=refresh, old_str="        self.valid.add(new)\n",
                 new_str="        self.valid.discard(old)\n        self.valid.add(new)\n"),
            call("edit", path=refresh, old_str="the bug", new_str="fixed"),
            text("rotate() now revokes the old token."),
        ], "--continue"))  # fmt: skip
        out["rcs"].append(copilot("compact", "/compact", [], "--continue"))
        out["rcs"].append(copilot("resume", "Where are we?", [text("Fixed.")], "--continue"))
        out["rcs"].append(copilot("resume2", "And now?", [text("Still fixed.")], "--continue"))
        out["rcs"].append(copilot("new", "New session: what was decided about auth?",
                                  [text("Google OAuth 2.0.")]))  # fmt: skip
        time.sleep(1)
    finally:
        mock.stop()
    out["sid"] = out["sids"]["s1"]
    # The untrusted folder's session ran no hook: only Copilot's own transcript has it.
    out["unhooked"] = [out["sids"]["untrusted"]]
    return out


def _main(run: dict[str, Any], *phases: str) -> list[dict[str, Any]]:
    return [r for r in run["mock"].requests if r["kind"] == "main" and r["phase"] in phases]


def test_every_run_ends_cleanly_and_no_hook_failed(run: dict[str, Any]) -> None:
    assert run["rcs"] == [0] * 6, run
    assert "ERROR" not in h.hooks_log(run["proj"]), h.hooks_log(run["proj"])
    assert h.serve_processes(run["proj"]) == []


def _problems(agents: list[dict[str, Any]]) -> list[str]:
    (row,) = [a for a in agents if a["agent"] == "copilot-cli"]
    assert row["hooks_installed"] and row["mcp_installed"], row
    return list(row["problems"])


def test_without_folder_trust_copilot_runs_no_hook_and_ctxmode_says_so(run: dict[str, Any]) -> None:
    assert "ctxmode install copilot-cli --trust" in run["install_plain"]
    (problem,) = _problems(run["agents_untrusted"])
    assert "does not trust" in problem
    # the real binary agrees: it answers, but no hook of the project ran
    assert run["untrusted_rc"] == 0 and run["untrusted_sessions"] == []


def test_the_trust_ctxmode_records_is_what_copilot_reads(run: dict[str, Any]) -> None:
    assert "folder trust of" in run["install_trust"]
    assert _problems(run["agents"]) == []
    assert "copilot-cli" in run["doctor"]


def test_tool_calls_land_in_their_categories(run: dict[str, Any]) -> None:
    evs = [e for e in h.events(run["proj"], run["home"]) if e["session_id"] == run["sid"]]
    kinds = {(e["category"], e["type"]) for e in evs}
    assert ("file", "edit") in kinds, kinds
    assert ("data", "read") in kinds or ("file", "read") in kinds, kinds
    h.check_the_commit_and_the_decision(evs)


def test_one_compaction_one_snapshot(run: dict[str, Any]) -> None:
    assert len(run["mock"].of_kind("compaction")) == 1
    (row,) = [s for s in h.sessions(run["proj"], run["home"]) if s["session_id"] == run["sid"]]
    assert row["compact_count"] == 1
    sql = f"SELECT count(*) FROM session_resume WHERE session_id = '{run['sid']}'"
    assert h.db_rows(run["proj"], sql) == [(1,)]


def test_the_snapshot_reaches_the_model_once_after_the_compaction(run: dict[str, Any]) -> None:
    after = _main(run, "resume", "resume2")
    assert after
    for req in after:
        assert h.snapshot_copies(req["body"]) == 1, h.strings_of(req["body"])[-3000:]
    assert h.readable(h.snapshot_block(after[0]["body"]))


def test_a_new_session_gets_the_brief_and_no_snapshot(run: dict[str, Any]) -> None:
    for req in _main(run, "s1"):
        assert h.snapshot_copies(req["body"]) == 0
    new = _main(run, "new")
    assert new
    for req in new:
        text_ = h.strings_of(req["body"])
        assert h.snapshot_copies(req["body"]) == 0
        assert text_.count('kind="project_brief"') == 1, text_[-3000:]
        assert h.DECISION in text_[text_.find('kind="project_brief"') :]


def test_knowledge_linked_to_a_file_reaches_the_model_at_its_first_edit_once(
    run: dict[str, Any],
) -> None:
    copies = [h.strings_of(r["body"]).count(FENCE) for r in _main(run, "s1", "p2")]
    # s1 (7 requests), then p2: the prompt and the read carry nothing, the first edit brings
    # it (PreToolUse), the second edit does not repeat it.
    assert copies == [0] * 7 + [0, 0, 1, 1], copies
    assert CONSTRAINT in h.strings_of(_main(run, "p2")[2]["body"])


def test_nothing_injected_is_stored_as_user_input(run: dict[str, Any]) -> None:
    evs = h.events(run["proj"], run["home"])
    for text_ in h.stored_user_text(evs):
        assert not any(mark in text_ for mark in h.INJECTED_MARKS), text_
    prompts = [e["data"].get("text") for e in evs if e["category"] == "prompt"]
    assert "Where are we?" in prompts and "Now fix the rotation" in prompts, prompts
