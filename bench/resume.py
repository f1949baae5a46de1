"""How much of a session survives in the resume snapshot.

Scripted sessions with known facts are recorded through the real extraction and store code
(``sessions.events`` + ``sessions.records``), buried in noise (reads, searches, MCP calls...).
For snapshot budgets of 1, 2 and 4 KB it prints the share of P1 facts (edited files, tasks with
their status, the plan, rule files, the last three requests) and P2 facts (decisions, commits,
unresolved errors, constraints, blockers, rejected approaches, installs) found in the snapshot.
Target at 2 KB: P1 100 %, P2 >= 90 %.

Run: .venv/bin/python bench/resume.py
"""

from __future__ import annotations

import html
import random
import sys
import tempfile
from pathlib import Path

from ctxmode import Store
from ctxmode.sessions import records as sessions
from ctxmode.sessions import snapshot
from ctxmode.sessions.events import NormalizedHookEvent, extract

BUDGETS = (1024, 2048, 4096)


class Script:
    """Drives one session and remembers which facts it planted (marker, tier)."""

    def __init__(self, store: Store, sid: str) -> None:
        self.store = store
        self.base = NormalizedHookEvent(agent="claude-code", kind="post_tool_use", session_id=sid)
        self.facts: list[tuple[int, str, str]] = []  # (tier, kind, marker)
        self.n = 0

    def tool(self, tool: str, inp: dict[str, object], fail: str | None = None) -> None:
        self.n += 1
        kind = "post_tool_use_failure" if fail else "post_tool_use"
        ev = self.base._replace(
            kind=kind,
            tool_name=tool,
            tool_input=inp,
            error=fail,
            tool_use_id=f"t{self.n}",
        )
        sessions.record(self.store, ev, extract(ev), idempotency_key=f"k{self.n}")

    def prompt(self, text: str) -> None:
        self.n += 1
        ev = self.base._replace(kind="user_prompt", prompt=text)
        sessions.record(self.store, ev, extract(ev), idempotency_key=f"k{self.n}")

    def fact(self, tier: int, kind: str, marker: str) -> None:
        self.facts.append((tier, kind, marker))


def noise(s: Script, rng: random.Random, count: int) -> None:
    root = s.store.root
    for _ in range(count):
        r = rng.random()
        if r < 0.5:
            s.tool("Read", {"file_path": f"{root}/lib/mod{rng.randrange(400)}.py"})
        elif r < 0.75:
            s.tool("Grep", {"pattern": f"symbol{rng.randrange(1000)}"})
        elif r < 0.85:
            s.tool("mcp__docs__lookup", {"q": f"topic {rng.randrange(100)}"})
        elif r < 0.95:
            s.tool("Bash", {"command": f"ls lib/dir{rng.randrange(50)}"})
        else:
            s.tool("WebFetch", {"url": f"https://docs.example.com/page{rng.randrange(50)}"})


def scenario(store: Store, sid: str, files: int, noise_per_step: int, seed: int) -> Script:
    rng = random.Random(seed)
    s = Script(store, sid)
    root = store.root
    s.prompt("Start: we are adding rate limiting to the public API gateway")
    s.tool("Read", {"file_path": f"{root}/CLAUDE.md"})
    s.fact(1, "rule", "CLAUDE.md")
    s.tool("Read", {"file_path": f"{root}/AGENTS.md"})
    s.fact(1, "rule", "AGENTS.md")
    s.prompt("You must keep the v1 endpoints backwards compatible")
    s.fact(2, "constraint", "keep the v1 endpoints backwards compatible")
    s.tool(
        "ExitPlanMode", {"plan": "PLANMARK: token bucket per API key, Redis backed, 429 on excess"}
    )
    s.fact(1, "plan", "PLANMARK")
    todos = [
        {"content": "TASKA design bucket store", "status": "completed"},
        {"content": "TASKB implement limiter middleware", "status": "in_progress"},
        {"content": "TASKC add 429 response docs", "status": "pending"},
        {"content": "TASKD load test the limiter", "status": "pending"},
    ]
    s.tool("TodoWrite", {"todos": todos})
    for t in todos:
        s.fact(1, "task", f'status="{t["status"]}">{t["content"]}')
    noise(s, rng, noise_per_step)
    decisions = [
        "DECA Redis over memcached",
        "DECB fixed window rejected",
        "DECC 429 with Retry-After",
    ]
    for i in range(files):
        path = f"src/gateway/limit{i}.py"
        s.tool(
            "Edit",
            {"file_path": f"{root}/{path}", "old_string": f"old {i}", "new_string": f"new {i}"},
        )
        s.fact(1, "file", path)
        if i % 3 == 0:
            noise(s, rng, noise_per_step)
        if i < len(decisions):
            s.tool(
                "AskUserQuestion",
                {"questions": [{"question": decisions[i]}], "answers": {decisions[i]: "yes"}},
            )
            s.fact(2, "decision", decisions[i])
    for msg in ("COMMITA add bucket store", "COMMITB limiter middleware", "COMMITC wire config"):
        s.tool("Bash", {"command": f"git commit -am '{msg}'"})
        s.fact(2, "git", msg)
        noise(s, rng, noise_per_step)
    s.tool("Bash", {"command": "pip install redis-py-cluster"})
    s.fact(2, "environment", "pip install redis-py-cluster")
    s.tool(
        "Bash",
        {"command": "pytest tests/test_limit.py"},
        fail="Exit code 1\nERRMARKA ConnectionError: redis down",
    )
    s.fact(2, "error", "ERRMARKA")
    s.tool("Bash", {"command": "npm run e2e"}, fail="Exit code 2\nERRMARKB TimeoutError: gateway")
    s.fact(2, "error", "ERRMARKB")
    s.prompt("Do not use a global lock; use per-key buckets instead of one shared counter")
    s.fact(2, "rejected", "per-key buckets instead of one shared counter")
    s.prompt("I'm blocked waiting for the staging Redis credentials")
    s.fact(2, "blocker", "staging Redis credentials")
    noise(s, rng, noise_per_step)
    last = [
        "REQ1 check the middleware ordering",
        "REQ2 also log rejected requests",
        "REQ3 now finish TASKB and run the load test",
    ]
    for text in last:
        s.prompt(text)
        noise(s, rng, noise_per_step // 2)
        s.fact(1, "request", text)
    return s


def survival(xml: str, facts: list[tuple[int, str, str]], tier: int) -> tuple[int, int, list[str]]:
    text = html.unescape(xml)
    wanted = [f for f in facts if f[0] == tier]
    missing = [f"{k}:{m}" for _t, k, m in wanted if html.unescape(m) not in text]
    return len(wanted) - len(missing), len(wanted), missing


def main() -> int:
    scenarios = [("small", 6, 5), ("busy", 10, 25), ("noisy", 12, 80)]
    totals: dict[tuple[int, int], list[int]] = {}
    verbose = "-v" in sys.argv
    print(
        f"{'scenario':<8} {'events':>6} " + " ".join(f"{b // 1024}KB P1    P2   " for b in BUDGETS)
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        (root / ".git").mkdir(parents=True)
        with Store.open(root / ".context" / "context.db") as store:
            for seed, (name, files, per_step) in enumerate(scenarios):
                sid = f"bench-{name}"
                script = scenario(store, sid, files, per_step, seed)
                events = sessions.list_sessions(store, 100)
                count = next(x.event_count for x in events if x.session_id == sid)
                cells = []
                for budget in BUDGETS:
                    xml = snapshot.build_snapshot(store, sid, budget).xml
                    row = []
                    for tier in (1, 2):
                        got, want, missing = survival(xml, script.facts, tier)
                        acc = totals.setdefault((budget, tier), [0, 0])
                        acc[0] += got
                        acc[1] += want
                        row.append(f"{got}/{want}")
                        if verbose and missing:
                            print(f"  {name} {budget} P{tier} missing: {missing}")
                    cells.append(f"{row[0]:>6} {row[1]:>6}")
                print(f"{name:<8} {count:>6} " + " ".join(f"    {c}" for c in cells))
                if verbose:
                    print(snapshot.build_snapshot(store, sid, 2048).xml)
    print()
    for budget in BUDGETS:
        p1 = totals[(budget, 1)]
        p2 = totals[(budget, 2)]
        print(
            f"{budget // 1024} KB: P1 {100 * p1[0] / p1[1]:.0f}% ({p1[0]}/{p1[1]})  "
            f"P2 {100 * p2[0] / p2[1]:.0f}% ({p2[0]}/{p2[1]})"
        )
    print("target at 2 KB: P1 100%, P2 >= 90%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
