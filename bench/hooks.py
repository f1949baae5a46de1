"""Full-process wall time of ``ctxmode hook`` next to the Python floor and context-mode.

For pre-tool-use (an Edit of a file nothing is linked to, and of a file with linked knowledge,
which is injected: each run is a new session), post-tool-use, user-prompt-submit, pre-compact
and session-start(compact) it times, in the same run and interleaved round by round:
- floor: ``<venv python> -c "import sqlite3, json"`` (starting Python and loading SQLite);
- ctxmode: ``<venv>/bin/ctxmode hook EVENT`` with a Claude Code payload on stdin, on a store
  already holding 10 000 events of the same session;
- context-mode: the npm package ``context-mode`` (installed here into bench/.cache, which git
  ignores), its hooks run as ``node <pkg>/hooks/<event>.mjs`` with the same payloads and HOME
  set to a temporary folder.
Prints the median of ``--runs`` (default 15, at least 10) runs per command and the ratios.
Then, in-process (no process start-up noise), the median time of the edit hook's knowledge
lookup (``handlers._file_knowledge``) for the unlinked and the linked file: what it adds to
pre-tool-use. Targets: ctxmode <= 0.2x context-mode and <= 1.3x the floor; lookup <= 2 ms.
Last, the redactor's own cost (``core.redact.redact``) on what the hooks pass it: every string
of every captured hook payload (all agents) plus an English/Chinese prose sample and a 64 KB
command output: the first pass in a fresh process (pattern compiles included) and the warm
median per pass, in-process. ``--redactor-only`` prints just that.

Run: .venv/bin/python bench/hooks.py [--runs N] [--no-context-mode] [--redactor-only]
     [--redactor-baseline OLD_REDACT_PY]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "bench" / ".cache" / "context-mode"
PKG = CACHE / "node_modules" / "context-mode"
FIXTURES = REPO / "tests" / "fixtures" / "hooks" / "claude-code"
PYTHON = sys.executable
CTXMODE = str(Path(PYTHON).parent / "ctxmode")
SEED_EVENTS = 10_000
#: Files of the seeded project; the linked one has ``LINKED_CONTEXTS`` contexts on it, and
#: ``SEED_LINKS`` other links (files, folders, globs) fill the link tables.
LINKED_FILE, UNLINKED_FILE = "src/auth/tokens.py", "src/util/strings.py"
LINKED_CONTEXTS, SEED_LINKS = 3, 2000

#: event -> (our CLI event name, fixture, context-mode hook script)
EVENTS: dict[str, tuple[str, str, str]] = {
    "pre-tool-use(unlinked)": ("pre-tool-use", "pre-tool-use.edit", "pretooluse.mjs"),
    "pre-tool-use(linked)": ("pre-tool-use", "pre-tool-use.edit", "pretooluse.mjs"),
    "post-tool-use": ("post-tool-use", "post-tool-use.edit", "posttooluse.mjs"),
    "user-prompt-submit": ("user-prompt-submit", "user-prompt-submit", "userpromptsubmit.mjs"),
    "pre-compact": ("pre-compact", "pre-compact", "precompact.mjs"),
    "session-start(compact)": ("session-start", "session-start.compact", "sessionstart.mjs"),
}


def payload(fixture: str, project: Path, n: int, label: str = "") -> bytes:
    """The fixture pointed at ``project``; tool ids and texts vary so nothing is a retry."""
    text = (FIXTURES / f"{fixture}.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text.replace("/home/user/my-project", str(project)))
    if label.startswith("pre-tool-use"):
        linked = label == "pre-tool-use(linked)"
        data["tool_input"]["file_path"] = str(project / (LINKED_FILE if linked else UNLINKED_FILE))
        data["tool_use_id"] = f"toolu_bench_{n}"
        # A new session each run: the linked knowledge is injected every time, not once.
        data["session_id"] = f"bench-pre-{n}"
        data.pop("transcript_path", None)
        return json.dumps(data).encode()
    if "tool_use_id" in data:
        data["tool_use_id"] = f"toolu_bench_{n}"
        data["tool_input"]["new_string"] = f"def get(url, retries={n}):"
    if "prompt" in data:
        data["prompt"] = f"{data['prompt']} (run {n})"
    return json.dumps(data).encode()


def seed_store(project: Path, session_id: str) -> None:
    """Fill the project's store with ``SEED_EVENTS`` events (FTS triggers on).

    They are spread over ten sessions, the benchmarked one included, because one session keeps
    at most ``Settings.max_session_events`` (2000) events.
    """
    from ctxmode import Store
    from ctxmode.sessions.events import CATEGORIES

    rng = random.Random(7)
    cats = list(CATEGORIES)
    now = int(time.time())
    sessions = [session_id] + [f"older-{k}" for k in range(9)]
    per = SEED_EVENTS // len(sessions)
    rows = []
    for i in range(SEED_EVENTS):
        sid = sessions[i // per]
        cat = rng.choice(cats)
        data = {"path": f"{project}/src/mod{i % 300}.py", "text": f"seed event {i} {cat}"}
        if cat == "task":
            data = {"key": f"todo:task {i % 40}", "subject": f"task {i % 40}", "status": "pending"}
        rows.append(
            (
                sid,
                "claude-code",
                cat,
                "seed",
                CATEGORIES[cat],
                json.dumps(data),
                f"sha256:{i:064x}",
                None,
                now - SEED_EVENTS + i,
            )
        )
    (project / ".context").mkdir(exist_ok=True)
    for rel in (LINKED_FILE, UNLINKED_FILE):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("ACCESS_TTL = 86400\n", encoding="utf-8")
    with Store.open(project / ".context" / "context.db") as store:
        for k in range(LINKED_CONTEXTS):
            store.write_context(
                ("constraint", "decision", "convention")[k % 3],
                f"Knowledge {k} about tokens: refresh tokens rotate every 7 days.",
                file_paths=[LINKED_FILE],
            )
        for k in range(SEED_LINKS):
            where = (f"lib/m{k}.py", f"lib/pkg{k}", f"lib/pkg{k}/**")[k % 3]
            store.write_context("decision", f"Other knowledge {k}.", file_paths=[where])
    with Store.open(project / ".context" / "context.db") as store, store.transaction() as conn:
        conn.executemany(
            "INSERT INTO events(session_id, agent, category, type, priority, data, content_hash, "
            "idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        for k, sid in enumerate(reversed(sessions)):
            conn.execute(
                "INSERT INTO sessions(session_id, agent, project_dir, started_at, last_event_at, "
                "event_count) VALUES (?, 'claude-code', ?, ?, ?, ?)",
                (sid, str(project), now - SEED_EVENTS, now - 100 + k, per),
            )


def ensure_context_mode() -> str | None:
    """Install context-mode into the cache folder if needed; return why it is unusable."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    if (PKG / "hooks" / "posttooluse.mjs").exists():
        return _link_native()
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed"
    CACHE.mkdir(parents=True, exist_ok=True)
    print(f"installing context-mode into {CACHE} (npm) ...", file=sys.stderr)
    try:
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), "context-mode"],
            capture_output=True,
            text=True,
            timeout=1800,
        )
    except subprocess.TimeoutExpired:
        return "npm install context-mode timed out"
    if proc.returncode != 0 or not (PKG / "hooks" / "posttooluse.mjs").exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return "npm install context-mode failed: " + " | ".join(tail)
    return _link_native()


def _link_native() -> str | None:
    """context-mode's hooks look for better-sqlite3 inside their own package folder.

    npm hoists it to the top-level node_modules; without a link every hook call would run its
    own ``npm install better-sqlite3`` (tens of seconds), which is an install artefact, not
    context-mode's real cost.
    """
    hoisted = CACHE / "node_modules" / "better-sqlite3"
    nested = PKG / "node_modules" / "better-sqlite3"
    if not list(hoisted.glob("build/Release/*.node")):
        return "better-sqlite3 (native) was not built by npm install"
    if not nested.exists():
        nested.parent.mkdir(parents=True, exist_ok=True)
        nested.symlink_to(hoisted, target_is_directory=True)
    return None


def run(cmd: list[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, cwd=cwd, env=env, capture_output=True, timeout=120)
    return time.perf_counter() - start, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-context-mode", action="store_true")
    parser.add_argument("--redactor-only", action="store_true")
    parser.add_argument("--redactor-baseline", type=Path, help="another redact.py to compare")
    args = parser.parse_args()
    runs = max(10, args.runs)
    if args.redactor_only:
        print_redactor_cost(runs, args.redactor_baseline)
        return 0

    why_not = "skipped (--no-context-mode)" if args.no_context_mode else ensure_context_mode()
    with tempfile.TemporaryDirectory(prefix="ctxmode-bench-") as tmp:
        project = Path(tmp) / "proj"
        (project / ".git").mkdir(parents=True)
        home = Path(tmp) / "home"
        home.mkdir()
        sid = json.loads((FIXTURES / "pre-compact.json").read_text())["transcript_path"]
        sid = Path(sid).stem
        seed_store(project, sid)

        # Installed packages carry compiled bytecode (pip compiles at install time); a
        # PYTHONDONTWRITEBYTECODE environment would make every hook recompile ctxmode.
        import ctxmode

        package = str(Path(ctxmode.__file__).parent)
        subprocess.run([PYTHON, "-m", "compileall", "-q", package], check=False)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("CTXMODE_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        node_env = {**env, "HOME": str(home), "CLAUDE_PROJECT_DIR": str(project)}
        times: dict[tuple[str, str], list[float]] = {}
        failures: dict[tuple[str, str], int] = {}
        n = 0
        for round_ in range(runs + 2):  # two warm-up rounds, not counted
            for label, (event, fixture, script) in EVENTS.items():
                n += 1
                stdin = payload(fixture, project, n, label)
                cmds = {
                    "floor": [PYTHON, "-c", "import sqlite3, json"],
                    "ctxmode": [CTXMODE, "hook", event],
                }
                if why_not is None:
                    cmds["context-mode"] = ["node", str(PKG / "hooks" / script)]
                for name, cmd in cmds.items():
                    elapsed, rc = run(
                        cmd, stdin, project, node_env if name == "context-mode" else env
                    )
                    if rc != 0:
                        failures[(label, name)] = failures.get((label, name), 0) + 1
                    if round_ >= 2:
                        times.setdefault((label, name), []).append(elapsed)

        with_cm = why_not is None
        head = f"{'event':<24}{'floor ms':>10}{'ctxmode ms':>12}{'x floor':>9}"
        if with_cm:
            head += f"{'context-mode ms':>17}{'x context-mode':>16}"
        print(f"median of {runs} runs each, venv interpreter {PYTHON}")
        print(f"store: {SEED_EVENTS} seeded events ({SEED_EVENTS // 10} in the hooked session)")
        print(head)
        for label in EVENTS:
            floor = statistics.median(times[(label, "floor")]) * 1000
            ours = statistics.median(times[(label, "ctxmode")]) * 1000
            line = f"{label:<24}{floor:>10.1f}{ours:>12.1f}{ours / floor:>9.2f}"
            if with_cm:
                theirs = statistics.median(times[(label, "context-mode")]) * 1000
                line += f"{theirs:>17.1f}{ours / theirs:>16.2f}"
            print(line)
        if not with_cm:
            print(f"context-mode: not measured: {why_not}")
        else:
            stored = sorted(p.name for p in home.rglob("*.db"))
            print(f"context-mode databases under the temp HOME: {stored or 'none'}")
        for (label, name), count in sorted(failures.items()):
            print(f"note: {name} exited non-zero {count}x on {label}")
        with __import__("sqlite3").connect(project / ".context" / "context.db") as conn:
            total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
            resumes = conn.execute("SELECT count(*) FROM session_resume").fetchone()[0]
        print(f"ctxmode store after the run: {total} events, {resumes} stored snapshots")
        lookup_ms = lookup_medians(project, runs * 20)
        print(
            "edit hook's knowledge lookup, in-process, median of "
            f"{runs * 20}: unlinked {lookup_ms[0]:.3f} ms, linked (injected) {lookup_ms[1]:.3f} ms"
        )
        print("targets: ctxmode <= 1.3x floor, <= 0.2x context-mode; lookup <= 2 ms")
    print_redactor_cost(runs, args.redactor_baseline)
    return 0


#: Text the hooks redact besides payload fields: prose mixing English and Chinese, and a large
#: command output (logs with paths, numbers and the odd key name).
_PROSE = (
    "我们决定把 token 缓存放到 Redis 里，REFRESH_TOKEN_TTL = 604800，max_tokens = 4096。\n"
    "The auth middleware checks the session key before each handler; see docs/auth.md.\n"
)
_LOG_LINE = "2026-12-02T05:54:29Z INFO worker=3 path=/srv/app/src/auth/tokens.py took=12ms ok\n"


def _hook_texts() -> list[str]:
    texts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for fixture in sorted((REPO / "tests" / "fixtures" / "hooks").glob("*/*.json")):
        walk(json.loads(fixture.read_text(encoding="utf-8")))
    return [*texts, _PROSE * 10, _LOG_LINE * (65536 // len(_LOG_LINE))]


_COLD = """
import importlib.util, json, sys, time
texts = json.load(sys.stdin)
start = time.perf_counter()
if sys.argv[1]:
    spec = importlib.util.spec_from_file_location("redact_baseline", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
else:
    import ctxmode.core.redact as module
for t in texts:
    module.redact(t)
print((time.perf_counter() - start) * 1000)
"""


def _load(path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("redact_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def print_redactor_cost(runs: int, baseline: Path | None = None) -> None:
    """Print the redactor's cost on hook texts: cold first pass and warm median per pass;
    with ``baseline`` (another ``redact.py``, e.g. ``git show REV:src/ctxmode/core/redact.py``)
    the same figures for it, measured interleaved in the same run."""
    import ctxmode.core.redact as current

    texts = _hook_texts()
    blob = json.dumps(texts).encode()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subjects: dict[str, tuple[str, Any]] = {"current": ("", current)}
    if baseline is not None:
        subjects["baseline"] = (str(baseline), _load(baseline))
    cold: dict[str, list[float]] = {name: [] for name in subjects}
    warm: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(runs):
        for name, (arg, _module) in subjects.items():
            proc = subprocess.run(
                [PYTHON, "-c", _COLD, arg], input=blob, capture_output=True, env=env
            )
            cold[name].append(float(proc.stdout))
    for _ in range(runs * 2):
        for name, (_arg, module) in subjects.items():
            start = time.perf_counter()
            for t in texts:
                module.redact(t)
            warm[name].append(time.perf_counter() - start)
    size = sum(len(t) for t in texts)
    print(f"redactor on {len(texts)} hook texts ({size // 1024} KB), medians of {runs}:")
    for name in subjects:
        print(
            f"  {name:<9} first pass in a fresh process (import + compiles) "
            f"{statistics.median(cold[name]):.2f} ms, warm "
            f"{statistics.median(warm[name]) * 1000:.2f} ms per pass"
        )


def lookup_medians(project: Path, n: int) -> tuple[float, float]:
    """Median ms of ``handlers._file_knowledge`` on an open store: unlinked, linked file."""
    from ctxmode.hooks import handlers
    from ctxmode.sessions import adapters
    from ctxmode.store import Store

    out: list[float] = []
    with Store.open(project / ".context" / "context.db", root=project) as store:
        for label in ("pre-tool-use(unlinked)", "pre-tool-use(linked)"):
            samples = []
            for i in range(n):
                data = json.loads(payload("pre-tool-use.edit", project, 10**6 + i, label))
                ev = adapters.normalize("claude-code", "pre-tool-use", data)
                assert ev is not None
                start = time.perf_counter()
                result = handlers._file_knowledge(store, ev)
                samples.append(time.perf_counter() - start)
                assert (result is not None) == (label == "pre-tool-use(linked)")
            out.append(statistics.median(samples) * 1000)
    return out[0], out[1]


if __name__ == "__main__":
    sys.exit(main())
