"""Codex CLI 0.171.0 (``codex exec --json``) driven for real against a scripted Responses API
server, with ctxmode installed by ``ctxmode install codex --scope project --trust``."""

from __future__ import annotations

import json
import subprocess
import threading
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
from mock_responses import MockResponses, patch, shell, text, tool, tool_search, usage

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

MODEL = "gpt-5.5"  # has plain function tools and apply_patch (gpt-6.* are code-mode only)
PATCH = """*** Begin Patch
*** Update File: auth/config.py
@@
-ACCESS_TTL = 86400
+ACCESS_TTL = 7200
*** End Patch
"""


def write_config(codex_home: Path, base_url: str) -> None:
    """The model provider only: project and hook trust come from ``ctxmode install --trust``."""
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{MODEL}"\nmodel_provider = "mock"\napproval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\ncheck_for_update_on_startup = false\n\n'
        f'[model_providers.mock]\nname = "mock"\nbase_url = "{base_url}"\n'
        'wire_api = "responses"\nenv_key = "MOCK_KEY"\nrequest_max_retries = 0\n'
        "stream_max_retries = 0\n"
    )


class AppServer:
    """``codex app-server`` over stdio JSON-RPC: enough for ``hooks/list``."""

    def __init__(self, exe: Path, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [str(exe), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True, bufsize=1,
        )  # fmt: skip
        self.replies: dict[int, dict[str, Any]] = {}
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.request(1, "initialize", {"clientInfo": {"name": "e2e", "version": "0"},
                                       "capabilities": {"experimentalApi": True}})  # fmt: skip
        self._send({"jsonrpc": "2.0", "method": "initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self.cv:
                if isinstance(msg.get("id"), int):
                    self.replies[msg["id"]] = msg
                self.cv.notify_all()

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, rid: int, method: str, params: Any) -> dict[str, Any]:
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        with self.cv:
            assert self.cv.wait_for(lambda: rid in self.replies, timeout=60), method
            return self.replies[rid]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def hooks_list(exe: Path, env: dict[str, str], proj: Path) -> list[dict[str, Any]]:
    server = AppServer(exe, env, proj)
    try:
        reply = server.request(2, "hooks/list", {"cwds": [str(proj)]})
    finally:
        server.close()
    return list(reply["result"]["data"][0]["hooks"])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    exe = h.cli("codex")
    # Codex skips its PATH helpers for a HOME under /tmp; the pytest temp folder is fine.
    root = tmp_path_factory.mktemp("codex")
    proj, home = h.make_project(root)
    codex_home = root / "codexhome"
    mock = MockResponses(root / "requests.jsonl").start()
    write_config(codex_home, mock.base_url)
    env = {**h.git_env(home), "CODEX_HOME": str(codex_home), "MOCK_KEY": "dummy"}
    out: dict[str, Any] = {"proj": proj, "home": home, "mock": mock, "marks": {}, "rcs": []}
    assert h.ctxmode(proj, home, "init").returncode == 0

    def ctx(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([h.CTXMODE, *args], cwd=proj, env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip

    plain = ctx("install", "codex", "--scope", "project")
    assert plain.returncode == 0, plain.stderr
    out["install_plain"] = plain.stdout
    out["agents_untrusted"] = ctx("agents", "--json").stdout
    out["doctor_untrusted"] = ctx("doctor").stdout
    out["hooks_before"] = hooks_list(exe, env, proj)
    trusted = ctx("install", "codex", "--scope", "project", "--trust")
    assert trusted.returncode == 0, trusted.stderr
    out["install_trust"] = trusted.stdout
    out["agents_trusted"] = ctx("agents", "--json").stdout
    out["hooks_after"] = hooks_list(exe, env, proj)
    if h.CAPTURE:
        hooks_path = proj / ".codex" / "hooks.json"
        settings = json.loads(hooks_path.read_text())
        h.wrap_hooks_for_capture(settings, "codex")
        hooks_path.write_text(json.dumps(settings, indent=2))

    def codex(mark: str, args: list[str], steps: list[dict[str, Any]]) -> str | None:
        mock.load(steps)
        out["marks"][mark] = len(mock.requests)
        argv = [str(exe), "exec"]
        if args[0] == "resume":
            argv.append("resume")
            args = args[1:]
        argv += ["--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]
        if h.CAPTURE:
            argv.append("--dangerously-bypass-hook-trust")
        proc = subprocess.run([*argv, *args], cwd=proj, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)  # fmt: skip
        out["rcs"].append(proc.returncode)
        for line in proc.stdout.splitlines():
            if line.startswith("{") and json.loads(line).get("type") == "thread.started":
                return str(json.loads(line)["thread_id"])
        return None

    try:
        thread = codex("s1", ["Fix the refresh-token rotation in auth/"], [
            shell("cat auth/config.py"), patch(PATCH), shell(h.PYTEST), shell(h.COMMIT),
            shell(h.EMPTY_COMMIT), tool_search("ctxmode write_context"),
            tool("write_context", {"type": "decision", "content": h.DECISION,
                                   "file_paths": ["auth/config.py"]}),
            text("ACCESS_TTL is 7200; the rotation test still fails; decision recorded."),
        ])  # fmt: skip
        assert thread
        out["thread"] = thread
        codex(
            "p2",
            ["resume", thread, "What did we commit?"],
            [shell("git log --oneline"), text("One commit.", usage=usage(400000))],
        )
        codex("compact", ["resume", "-c", "model_auto_compact_token_limit=5000", thread,
                          "Continue with the rotation fix"], [text("Continuing.")])  # fmt: skip
        codex("resume", ["resume", thread, "Status?"], [text("Resumed again.")])
        out["new_thread"] = codex("new", ["New session: what was decided about auth?"],
                                  [text("Google OAuth 2.0.")])  # fmt: skip
        time.sleep(1)
    finally:
        mock.stop()
    return out


def _main_after(run: dict[str, Any], mark: str, until: str | None = None) -> list[dict[str, Any]]:
    end = run["marks"][until] if until else None
    return [r for r in run["mock"].requests[run["marks"][mark] : end] if r["kind"] == "main"]


def test_install_without_trust_says_what_is_missing(run: dict[str, Any]) -> None:
    assert {hook["trustStatus"] for hook in run["hooks_before"]} != {"trusted"}
    assert "--trust" in run["install_plain"]
    (codex,) = [a for a in json.loads(run["agents_untrusted"]) if a["agent"] == "codex"]
    assert any("trust" in p for p in codex["problems"]), codex
    assert "trust" in run["doctor_untrusted"]


def test_install_trust_writes_the_hashes_codex_computes(run: dict[str, Any]) -> None:
    hooks = run["hooks_after"]
    assert len(hooks) >= 7
    assert {hook["trustStatus"] for hook in hooks} == {"trusted"}
    (codex,) = [a for a in json.loads(run["agents_trusted"]) if a["agent"] == "codex"]
    assert not any("trust" in p for p in codex["problems"]), codex


def test_every_run_ends_cleanly_and_no_hook_failed(run: dict[str, Any]) -> None:
    assert run["rcs"] == [0, 0, 0, 0, 0]
    assert "ERROR" not in h.hooks_log(run["proj"]), h.hooks_log(run["proj"])
    assert h.serve_processes(run["proj"]) == []


def test_tool_calls_land_in_their_categories(run: dict[str, Any]) -> None:
    evs = [e for e in h.events(run["proj"], run["home"]) if e["session_id"] == run["thread"]]
    files = [e for e in evs if e["category"] == "file"]
    assert any("auth/config.py" in json.dumps(e["data"]) for e in files), [
        (e["category"], e["type"], e["data"]) for e in evs
    ]
    h.check_the_commit_and_the_decision(evs)


def test_cat_is_a_read(run: dict[str, Any]) -> None:
    evs = h.events(run["proj"], run["home"])
    path = str(run["proj"] / "auth" / "config.py")
    reads = [e for e in evs if (e["category"], e["type"]) == ("data", "read")]
    assert [e["data"]["path"] for e in reads] == [path], evs
    # the read says what ``cat`` did: no second record of the command
    commands = [e["data"].get("command", "") for e in evs if e["type"] == "command"]
    assert not [c for c in commands if c.startswith("cat ")], commands


def test_one_compaction_one_snapshot(run: dict[str, Any]) -> None:
    assert run["mock"].of_kind("compaction")
    (row,) = [s for s in h.sessions(run["proj"], run["home"]) if s["session_id"] == run["thread"]]
    assert row["compact_count"] == 1
    sql = f"SELECT count(*) FROM session_resume WHERE session_id = '{run['thread']}'"
    assert h.db_rows(run["proj"], sql) == [(1,)]


def test_the_snapshot_reaches_the_model_once_after_the_compaction(run: dict[str, Any]) -> None:
    after = _main_after(run, "compact", "new")
    assert after
    for req in after:
        assert h.snapshot_copies(req["body"]) == 1, h.strings_of(req["body"])[-3000:]
    assert h.readable(h.snapshot_block(after[0]["body"]))


def test_a_resume_without_compaction_carries_at_most_one_snapshot(run: dict[str, Any]) -> None:
    for req in _main_after(run, "p2", "compact"):
        assert h.snapshot_copies(req["body"]) <= 1


def test_a_new_session_gets_no_snapshot(run: dict[str, Any]) -> None:
    for req in _main_after(run, "new"):
        assert h.snapshot_copies(req["body"]) == 0


def test_nothing_injected_is_stored_as_user_input(run: dict[str, Any]) -> None:
    for text_ in h.stored_user_text(h.events(run["proj"], run["home"])):
        assert not any(mark in text_ for mark in h.INJECTED_MARKS), text_
