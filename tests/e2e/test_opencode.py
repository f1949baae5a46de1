"""OpenCode 1.18.33 (``opencode run --format json``) driven for real against a scripted OpenAI
Chat Completions server (its ``@ai-sdk/openai-compatible`` provider), with ctxmode installed by
``ctxmode install opencode --scope project`` (a plugin in ``.opencode/plugins/`` and the MCP
server in ``opencode.json``)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import harness as h
import pytest
from harness import (  # noqa: F401 - shared tests, collected here with this module's run
    test_a_commit_that_failed_is_not_a_commit,
    test_the_failure_is_an_error_that_says_what_failed,
    test_the_history_import_gives_back_what_the_hooks_recorded,
    test_the_mcp_write_context_call_stored_the_decision,
)
from mock_openai_chat import MockChat, call, text, tool, tool_names, usage

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

#: The model's window (opencode.json ``limit``): a reply reporting more than the usable part
#: (context - output) makes OpenCode compact before its next model call.
CONTEXT, OUTPUT = 100_000, 4_000
#: Knowledge linked to a file (``ctxmode add --file``) that the agent reads in p2.
CONSTRAINT = "Refresh tokens are single use: rotation revokes the old one"


def configure(proj: Path, base_url: str) -> None:
    """Add the scripted provider to the ``opencode.json`` ctxmode's installer wrote."""
    path = proj / "opencode.json"
    cfg = json.loads(path.read_text())
    cfg.update({
        "model": "mock/m", "small_model": "mock/m", "autoupdate": False, "share": "disabled",
        "permission": {"*": "allow"},
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": base_url, "apiKey": "dummy"},
            "models": {"m": {"name": "Mock", "tool_call": True,
                             "limit": {"context": CONTEXT, "output": OUTPUT}}},
        }},
    })  # fmt: skip
    path.write_text(json.dumps(cfg, indent=2))


def capture(proj: Path, root: Path, env: dict[str, str]) -> None:
    """With CTXMODE_E2E_CAPTURE: tee the plugin's hook payloads, and keep what OpenCode hands
    its plugins (``opencode_capture.js``) beside them."""
    if not h.CAPTURE:
        return
    out = Path(h.CAPTURE) / "opencode"
    raw = Path(h.CAPTURE) / "opencode-raw"
    for folder in (out, raw):
        folder.mkdir(parents=True, exist_ok=True)
    env["CTXMODE_E2E_OPENCODE_RAW"] = str(raw)
    tee = root / "tee-python"
    tee.write_text(
        "#!/bin/sh\nexec "
        + shlex.join([h.PYTHON, str(h.HERE / "tee_hook.py"), str(out), "--", h.PYTHON])
        + ' "$@"\n'
    )
    tee.chmod(0o755)
    plugin = proj / ".opencode" / "plugins" / "ctxmode.js"
    body = re.sub(
        r'const PYTHON = ".*?";', f"const PYTHON = {json.dumps(str(tee))};", plugin.read_text()
    )
    plugin.write_text(body)
    shutil.copy(h.HERE / "opencode_capture.js", plugin.parent / "capture.js")


def provide_plugin_package(*folders: Path) -> None:
    """``@opencode-ai/plugin`` from the cache in each config folder (its node_modules linked):
    OpenCode installs it from npm into every one that has none, before it loads plugins."""
    installed = h.cli("opencode-plugin").parents[3]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(installed / name, folder / name)
        (folder / "node_modules").symlink_to(installed / "node_modules")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    exe = h.cli("opencode")
    root = tmp_path_factory.mktemp("opencode")
    proj, home = h.make_project(root)
    mock = MockChat(root / "requests.jsonl").start()
    assert h.ctxmode(proj, home, "init").returncode == 0
    installed = h.ctxmode(proj, home, "install", "opencode", "--scope", "project")
    assert installed.returncode == 0, installed.stderr
    configure(proj, mock.base_url)
    provide_plugin_package(proj / ".opencode", home / ".config" / "opencode")
    # OpenCode's data, config, cache and state follow XDG (not HOME alone): all in the temp HOME.
    env = {**h.git_env(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_STATE_HOME": str(home / ".local" / "state"),
           "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
           "NO_COLOR": "1", "TERM": "dumb"}  # fmt: skip
    capture(proj, root, env)
    out: dict[str, Any] = {"proj": proj, "home": home, "mock": mock, "rcs": [], "marks": {},
                           "install": installed.stdout, "sids": {}}  # fmt: skip
    cfg = str(proj / "auth" / "config.py")

    def opencode(phase: str, prompt: str, steps: list[dict[str, Any]], *args: str) -> None:
        mock.load(phase, steps)
        out["marks"][phase] = len(mock.requests)
        argv = [str(exe), "run", "--format", "json", *args, prompt]
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
        out[phase + ".seconds"] = round(time.monotonic() - started, 1)
        out["rcs"].append(proc.returncode)
        out[phase + ".stdout"] = proc.stdout
        out[phase + ".stderr"] = proc.stderr[-3000:]
        for line in proc.stdout.splitlines():
            if line.startswith("{") and json.loads(line).get("sessionID"):
                out["sids"][phase] = json.loads(line)["sessionID"]
                break

    try:
        opencode("s1", "Fix the refresh-token rotation in auth/", [
            call("read", filePath=cfg),
            call("edit", filePath=cfg, oldString="ACCESS_TTL = 86400",
                 newString="ACCESS_TTL = 7200"),
            call("bash", command=h.PYTEST, description="Run the rotation test"),
            call("bash", command=h.COMMIT, description="Commit"),
            call("bash", command=h.EMPTY_COMMIT, description="Commit again"),
            tool("write_context", type="decision", content=h.DECISION,
                 file_paths=["auth/config.py"]),
            text("ACCESS_TTL is 7200; the rotation test still fails; decision recorded."),
        ])  # fmt: skip
        sid = out["sids"]["s1"]
        # Knowledge linked to a file the agent has not touched yet, and reads in p2.
        added = h.ctxmode(proj, home, "add", "constraint", CONSTRAINT, "--file", "auth/refresh.py")
        assert added.returncode == 0, added.stderr
        opencode("p2", "What did we commit?", [
            call("bash", command="git log --oneline", description="Log"),
            call("read", filePath=str(proj / "auth" / "refresh.py")),
            text("One commit.", usage=usage(CONTEXT - 1000)),
        ], "--session", sid)  # fmt: skip
        # The last reply's usage nears the window: OpenCode compacts at once, then continues
        # on its own (one more main request in p2).
        opencode("resume", "Status?", [text("Resumed.")], "--continue")
        opencode("new", "New session: what was decided about auth?", [text("Google OAuth 2.0.")])
        time.sleep(1)
    finally:
        mock.stop()
    return out


def _main(run: dict[str, Any], *phases: str) -> list[dict[str, Any]]:
    return [r for r in run["mock"].requests if r["kind"] == "main" and r["phase"] in phases]


def _compaction_n(run: dict[str, Any]) -> int:
    (req,) = run["mock"].of_kind("compaction")
    return int(req["n"])


def test_every_run_ends_cleanly_and_no_hook_failed(run: dict[str, Any]) -> None:
    assert run["rcs"] == [0, 0, 0, 0], run
    assert "ERROR" not in h.hooks_log(run["proj"]), h.hooks_log(run["proj"])
    assert h.serve_processes(run["proj"]) == []


def test_the_first_request_offers_ctxmode_tools(run: dict[str, Any]) -> None:
    first = _main(run, "s1")[0]
    assert "ctxmode_write_context" in tool_names(first["body"])


def test_knowledge_linked_to_a_file_comes_with_its_first_read(run: dict[str, Any]) -> None:
    at = _compaction_n(run)
    p2 = [r for r in _main(run, "p2") if r["n"] < at]
    copies = [h.strings_of(r["body"]).count(CONSTRAINT) for r in _main(run, "s1") + p2]
    # Nothing before the read (the prompt, the git log), then once, kept once in the history.
    assert copies[-3:] == [0, 0, 1] and copies.count(1) == 1, copies
    read_result = [m for m in p2[-1]["body"]["messages"] if m["role"] == "tool"][-1]
    assert CONSTRAINT in read_result["content"] and "auth/refresh.py" in read_result["content"]


def test_tool_calls_land_in_their_categories(run: dict[str, Any]) -> None:
    evs = [e for e in h.events(run["proj"], run["home"]) if e["session_id"] == run["sids"]["s1"]]
    kinds = {(e["category"], e["type"]) for e in evs}
    assert ("file", "edit") in kinds, evs
    assert ("data", "read") in kinds or ("file", "read") in kinds, evs
    h.check_the_commit_and_the_decision(evs)


def test_one_compaction_one_snapshot(run: dict[str, Any]) -> None:
    _compaction_n(run)  # exactly one compaction request
    sid = run["sids"]["s1"]
    (row,) = [s for s in h.sessions(run["proj"], run["home"]) if s["session_id"] == sid]
    assert row["compact_count"] == 1
    sql = f"SELECT count(*) FROM session_resume WHERE session_id = '{sid}'"
    assert h.db_rows(run["proj"], sql) == [(1,)]


def test_the_snapshot_reaches_the_model_once_in_every_later_request(run: dict[str, Any]) -> None:
    at = _compaction_n(run)
    after = [r for r in _main(run, "p2", "resume") if r["n"] > at]
    assert [r["phase"] for r in after] == ["p2", "resume"], after
    for req in after:
        assert h.snapshot_copies(req["body"]) == 1, h.strings_of(req["body"])[-3000:]
    assert h.readable(h.snapshot_block(after[0]["body"]))


def test_no_snapshot_before_the_compaction_or_in_a_new_session(run: dict[str, Any]) -> None:
    at = _compaction_n(run)
    before = [r for r in _main(run, "s1", "p2") if r["n"] < at]
    assert before
    for req in before + _main(run, "new"):
        assert h.snapshot_copies(req["body"]) == 0


def test_a_new_session_gets_the_project_brief_once(run: dict[str, Any]) -> None:
    (first, *later) = _main(run, "new")
    text = h.strings_of(first["body"])
    assert text.count('kind="project_brief"') == 1, text[-3000:]
    assert h.DECISION in text[text.find('kind="project_brief"') :]
    for req in later:
        assert h.strings_of(req["body"]).count('kind="project_brief"') == 1


def test_nothing_injected_is_stored_as_user_input(run: dict[str, Any]) -> None:
    evs = h.events(run["proj"], run["home"])
    for text_ in h.stored_user_text(evs):
        assert not any(mark in text_ for mark in h.INJECTED_MARKS), text_
    prompts = [e["data"].get("text") for e in evs if e["category"] == "prompt"]
    # As typed: not with the quotes ``opencode run`` puts around a message holding spaces.
    assert "What did we commit?" in prompts, prompts
    assert "New session: what was decided about auth?" in prompts, prompts
