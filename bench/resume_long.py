"""Writes the long sessions of ``bench/resume.py``: one story, three agents' payload shapes.

A developer moves user sessions from Redis to SQLite over several hundred hook calls with
three automatic compactions: twenty-odd prompts in English and Chinese, two corrections that
reverse earlier instructions (one in each language), a task list that grows to eleven and is
mostly checked off (one task deleted), tests that fail several times and then pass, a
TypeScript error, decisions stored through ``write_context``, a subagent's finding, commits, a
branch, a planted secret, questions, a hypothetical and a quoted rule, and about seventy files
read around eighteen edited.

Each compaction carries the facts true at that point: ``p1`` (must keep), ``p2`` (should
keep), ``traps`` (never true: a question stated as a constraint, a read-only file shown as
edited, a secret) and ``stale`` (true once, not any more: a resolved error, a finished or
deleted task shown as open, an instruction a correction reversed shown as current).

Payload shapes follow the captured ones (``tests/fixtures/hooks``,
``/work/shared/agent-payloads``): Claude Code (TaskCreate/TaskUpdate, Agent, Read/Edit/Write,
PostToolUseFailure), Codex (Bash output without an exit code, ``apply_patch``, no task tool),
Gemini CLI (BeforeAgent/AfterTool, ``write_todos`` with the whole list, ``llmContent``).

Run: .venv/bin/python bench/resume_long.py   (rewrites bench/resume_sessions/48-50-*.json)
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROJECT = "/home/user/my-project"
CC_DIR = "/home/user/.claude/projects/-home-user-my-project"
CODEX_DIR = "/home/user/.codex/sessions/2026/12/01"
GEMINI_DIR = "/home/user/.gemini/tmp/my-project/chats"
#: Codex's apply_patch answer.
PATCHED = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n"
#: How many unrelated calls per unit of ``Story.noise``: sets the session's length.
NOISE_SCALE = 2.3
OUT = {
    "claude-code": "48-cc-long-3x.json",
    "codex": "49-codex-long-3x.json",
    "gemini-cli": "50-gem-long-3x.json",
}
SESSION_IDS = {
    "claude-code": "5b1f7c2e-9a44-4e8e-b1d3-2f6a0c9e7d51",
    "codex": "019ad3c1-77e2-7a30-9c15-4be0f2d6a8c3",
    "gemini-cli": "c3e8a1f0-52d7-4b9e-8f6a-0d1e2b3c4a59",
}

# -- the story ---------------------------------------------------------------------------------

GOAL = (
    "Move user sessions from Redis to SQLite behind the SessionStore interface in "
    "src/sessions/; remove the Redis client entirely once the SQLite store works."
)
TTL_30 = "会话过期时间用 30 分钟，写在 config/settings.py 里。"
QUESTION = (
    "Should we also drop the redis dependency from requirements.txt, or must it stay for ops/cron?"
)
FIX_EN = (
    "Actually, don't remove the Redis client: keep Redis as a read-through fallback when "
    "SQLite is locked."
)
TTS = "Also update the web client types in web/src/api/session.ts for the new expires_at field."
FIX_ZH = "不对，会话过期时间改回 24 小时，不要用 30 分钟。"
ZH_NEXT = "先把 web 客户端的类型错误修掉，再继续处理并发。"
HYPO_EN = "If we ever need multi-region, what would the fallback look like?"
HYPO_ZH = "如果以后要支持多区域部署，这个回退方案还能用吗？"
QUOTED = "The release checklist says every migration must be reversible: is 0007 reversible?"
LAST = "Run the concurrency test again, fix the locking, then commit."

D1 = "Key the sessions table by sha256 of the token; never store the raw session token"
D2 = "Retry BEGIN IMMEDIATE 3 times, 50 ms apart, before falling back to Redis"
FINDING = (
    "ops/cron/cleanup.py calls redis_client.flushdb() every night at 03:00; it would wipe the "
    "fallback cache. Nothing else outside src/sessions/ touches redis_client."
)
SECRET = "rds-pw-9f3KxQ2mZt7LwP4v"

TASKS = {
    "1": "Add SqliteSessionStore",
    "2": "Write the sessions table migration",
    "3": "Port the session tests to SQLite",
    "4": "Remove the Redis client",
    "5": "Add the Redis fallback on SQLITE_BUSY",
    "6": "Handle SQLITE_BUSY with BEGIN IMMEDIATE retries",
    "7": "Stop the nightly flushdb in ops/cron/cleanup.py",
    "8": "Load-test with 50 concurrent writers",
    "9": "Document the fallback in docs/sessions.md",
    "10": "Add expires_at to the web client types",
    "11": "Wire the store into the app factory",
}

READ_POOL = [
    "src/app/__init__.py",
    "src/app/factory.py",
    "src/app/middleware.py",
    "src/app/views/login.py",
    "src/app/views/logout.py",
    "src/app/views/profile.py",
    "src/app/views/admin.py",
    "src/app/views/health.py",
    "src/app/views/billing.py",
    "src/app/templates.py",
    "src/app/errors.py",
    "src/app/csrf.py",
    "src/app/cors.py",
    "src/app/ratelimit.py",
    "src/db/__init__.py",
    "src/db/pool.py",
    "src/db/migrate.py",
    "src/db/pragmas.py",
    "src/cache/__init__.py",
    "src/cache/redis_client.py",
    "src/cache/keys.py",
    "src/auth/tokens.py",
    "src/auth/password.py",
    "src/auth/oauth.py",
    "src/users/models.py",
    "src/users/repo.py",
    "src/users/service.py",
    "src/util/clock.py",
    "src/util/ids.py",
    "src/util/jsonenc.py",
    "tests/conftest.py",
    "tests/test_login.py",
    "tests/test_logout.py",
    "tests/test_redis_store.py",
    "tests/test_middleware.py",
    "tests/fixtures/users.json",
    "migrations/0005_users.sql",
    "migrations/0006_audit.sql",
    "docs/architecture.md",
    "docs/ops.md",
    "docs/config.md",
    "ops/cron/cleanup.py",
    "ops/deploy.sh",
    "ops/docker-compose.yml",
    "pyproject.toml",
    "requirements.txt",
    "web/src/api/client.ts",
    "web/src/api/user.ts",
    "web/src/hooks/useSession.ts",
    "web/src/pages/Login.tsx",
    "web/tsconfig.json",
    "web/package.json",
    "lib/vendor/msgpack_compat.py",
    "lib/vendor/backoff.py",
    "README.md",
    "Makefile",
]
#: Read many times, never edited (the "read-only file shown as edited" trap).
INTERFACE = "src/sessions/interface.py"
REDIS_STORE = "src/sessions/redis_store.py"


def pytest_fail(test: str, body: list[str], e_line: str, summary_tail: str) -> str:
    """A pytest failure as the terminal prints it (the summary line cut at 80 columns)."""
    file, name = test.split("::")
    short = f"FAILED {test} - {summary_tail}"
    if len(short) > 80:
        short = short[:77] + "..."
    return "\n".join(
        [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.12.7, pytest-8.3.4, pluggy-1.5.0",
            "rootdir: /home/user/my-project",
            "collected 14 items",
            "",
            f"{file} ....F.....                                          [100%]",
            "",
            "=================================== FAILURES ===================================",
            f"{'_' * 20} {name} {'_' * 20}",
            "",
            *[f"    {line}" for line in body],
            e_line,
            "",
            f"{file}:41: {summary_tail.split(':')[0].split('.')[-1]}",
            "=========================== short test summary info ============================",
            short,
            "========================= 1 failed, 13 passed in 0.81s =========================",
        ]
    )


def pytest_pass(n: int) -> str:
    return (
        "============================= test session starts ==============================\n"
        f"collected {n} items\n\n"
        + "." * n
        + "   [100%]\n\n"
        + f"============================== {n} passed in 0.74s =============================="
    )


class Story:
    """Abstract steps; each agent renders them into its payloads."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, dict[str, Any]]] = []
        self.rng = random.Random(33)
        self.read_count = 0

    def add(self, kind: str, **kw: Any) -> None:
        self.steps.append((kind, kw))

    def prompt(self, text: str) -> None:
        self.add("prompt", text=text)

    def read(self, path: str, content: str | None = None) -> None:
        self.read_count += 1
        self.add("read", path=path, content=content or f"# {path}\n...\n")

    def noise(self, n: int) -> None:
        """Unrelated reads, greps and listings, as agents do between the real steps."""
        for _ in range(round(n * NOISE_SCALE)):
            roll = self.rng.random()
            if roll < 0.62:
                self.read(self.rng.choice(READ_POOL))
            elif roll < 0.78:
                word = self.rng.choice(
                    ["SessionStore", "redis_client", "expires_at", "ttl", "get_session"]
                )
                self.add("grep", pattern=word)
            elif roll < 0.9:
                folder = self.rng.choice(
                    ["src/sessions", "src/app", "tests", "migrations", "web/src/api"]
                )
                self.add("bash", command=f"ls {folder}", output="__init__.py\nstore.py\n", ok=True)
            else:
                self.add(
                    "bash",
                    command="git status --short",
                    output=" M src/sessions/sqlite_store.py\n",
                    ok=True,
                )

    def edit(self, path: str, old: str, new: str) -> None:
        self.add("edit", path=path, old=old, new=new)

    def write(self, path: str, content: str) -> None:
        self.add("write", path=path, content=content)

    def bash(self, command: str, output: str, ok: bool = True) -> None:
        self.add("bash", command=command, output=output, ok=ok)

    def tasks(self, changes: dict[str, str]) -> None:
        """Create or move tasks: id -> pending / in_progress / completed / deleted."""
        self.add("tasks", changes=changes)

    def decide(self, content: str, files: list[str]) -> None:
        self.add("write_context", type="decision", content=content, files=files)

    def subagent(self, description: str, prompt: str, result: str) -> None:
        self.add("agent", description=description, prompt=prompt, result=result)

    def stop(self, text: str) -> None:
        self.add("stop", text=text)

    def compact(self, facts: dict[str, Any]) -> None:
        self.add("compact", facts=facts)


def story() -> Story:  # noqa: PLR0915 - one long script, read top to bottom
    s = Story()
    sqlite = "src/sessions/sqlite_store.py"
    settings = "config/settings.py"
    # -- phase 1: the SQLite store ---------------------------------------------------------
    s.prompt(GOAL)
    s.tasks({"1": "pending", "2": "pending", "3": "pending", "4": "pending"})
    s.read("CLAUDE.md", "Run tests with pytest -q. Never commit to main directly.\n")
    s.read(INTERFACE, "class SessionStore(Protocol):\n    def get(self, token: str): ...\n")
    s.read(REDIS_STORE, "class RedisSessionStore:\n    def get(self, token): ...\n")
    s.noise(14)
    s.tasks({"1": "in_progress"})
    s.write(sqlite, "import hashlib\nimport sqlite3\n\nclass SqliteSessionStore:\n    ...\n")
    s.read(INTERFACE)
    s.noise(8)
    s.prompt(TTL_30)
    s.read(settings, "SESSION_TTL = 86400\nREDIS_URL = 'redis://localhost:6379/0'\n")
    s.edit(settings, "SESSION_TTL = 86400", "SESSION_TTL = 1800")
    s.bash(
        f"export REDIS_PASSWORD={SECRET} && python -m pytest -q tests/test_sqlite_store.py",
        pytest_fail(
            "tests/test_sqlite_store.py::test_expired_session_is_gone",
            [
                "def test_expired_session_is_gone(store, clock):",
                "    store.put('t1', user='u1')",
                "    clock.advance(1801)",
                ">   assert store.get('t1') is None",
            ],
            "E       AssertionError: assert <Session user='u1' expires_at=1801> is None",
            "AssertionError: assert <Session user='u1' expires_at=1801> is None",
        ),
        ok=False,
    )
    s.noise(3)
    s.edit(sqlite, "return row", "return row if row['expires_at'] > now else None")
    s.bash(
        f"export REDIS_PASSWORD={SECRET} && python -m pytest -q tests/test_sqlite_store.py",
        pytest_pass(14),
    )
    s.tasks({"1": "completed", "2": "in_progress"})
    s.write(
        "migrations/0007_sessions.sql",
        "CREATE TABLE sessions (token_hash TEXT PRIMARY KEY, user_id INTEGER, expires_at INT);",
    )
    s.decide(D1, [sqlite])
    s.noise(10)
    s.bash("python -m ctxmode_migrate check migrations/", "0007_sessions.sql: ok\n")
    s.tasks({"2": "completed"})
    s.edit(
        "src/sessions/__init__.py",
        "from .redis_store import RedisSessionStore",
        "from .sqlite_store import SqliteSessionStore",
    )
    s.bash(
        "git add -A && git commit -m 'sessions: add SqliteSessionStore and the 0007 migration'",
        "[main 3c1d9e0] sessions: add SqliteSessionStore and the 0007 migration\n"
        " 3 files changed, 88 insertions(+), 2 deletions(-)",
    )
    s.stop("SqliteSessionStore passes its 14 tests; the migration creates the sessions table.")
    s.noise(12)
    s.prompt(QUESTION)
    s.read("requirements.txt", "redis==5.0.8\nflask==3.0.3\n")
    s.stop("The redis package is still imported by src/cache/redis_client.py and ops/cron.")
    s.compact(
        {
            "p1": [
                {"all": ["drop the redis dependency"], "in": ["requests"]},
                {"all": ["remove the Redis client entirely"]},
                {"all": ["过期时间用 30 分钟"]},
                {"all": [TASKS["3"]], "in": ["tasks"], "agents": ["claude-code", "gemini-cli"]},
                {"all": [TASKS["4"]], "in": ["tasks"], "agents": ["claude-code", "gemini-cli"]},
                {"all": ["sha256 of the token"], "in": ["decisions"]},
            ],
            "p2": [
                {"all": [sqlite], "in": ["files"]},
                {"all": [settings, "SESSION_TTL = 1800"], "in": ["files"]},
                {"all": ["add SqliteSessionStore and the 0007 migration"], "in": ["git"]},
                {"all": ["migrations/0007_sessions.sql"], "in": ["files"]},
            ],
            "traps": [
                {
                    "all": ["drop the redis dependency"],
                    "in": ["constraints", "decisions", "rules"],
                    "why": "a question, not a decision or constraint",
                },
                {"all": [INTERFACE], "in": ["files"], "why": "only read, never edited"},
                {"all": [SECRET], "why": "the planted secret"},
            ],
            "stale": [
                {"all": ["expires_at=1801"], "in": ["errors"], "why": "fixed by the next edit"},
                {"all": [TASKS["1"], "pending"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["1"], "in_progress"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["2"], "in_progress"], "in": ["tasks"], "why": "completed"},
            ],
        }
    )
    # -- phase 2: corrections, the fallback, the web client -----------------------------------
    s.prompt(FIX_EN)
    s.tasks({"4": "deleted", "5": "in_progress"})
    s.subagent(
        "Find every caller of redis_client",
        "List every module outside src/sessions/ that uses redis_client and how.",
        FINDING,
    )
    s.noise(8)
    s.write(
        "src/sessions/fallback.py",
        "class FallbackSessionStore:\n    def __init__(self, primary, redis): ...\n",
    )
    s.read(REDIS_STORE)
    s.noise(6)
    s.bash(
        "python -m pytest -q tests/test_fallback.py",
        pytest_fail(
            "tests/test_fallback.py::test_fallback_on_busy",
            [
                "def test_fallback_on_busy(busy_sqlite, redis):",
                "    store = FallbackSessionStore(busy_sqlite, redis)",
                ">   assert store.get('t9').user == 'u9'",
            ],
            "E       AttributeError: 'NoneType' object has no attribute 'user'",
            "AttributeError: 'NoneType' object has no attribute 'user'",
        ),
        ok=False,
    )
    s.edit(
        "src/sessions/fallback.py",
        "except sqlite3.DatabaseError:",
        "except sqlite3.OperationalError:",
    )
    s.bash(
        "python -m pytest -q tests/test_fallback.py",
        pytest_fail(
            "tests/test_fallback.py::test_fallback_on_busy",
            [
                "def test_fallback_on_busy(busy_sqlite, redis):",
                ">   assert redis.calls == ['get t9']",
            ],
            "E       AssertionError: assert [] == ['get t9']",
            "AssertionError: assert [] == ['get t9']",
        ),
        ok=False,
    )
    s.noise(4)
    s.edit("src/sessions/fallback.py", "return None", "return self.redis.get(token)")
    s.bash("python -m pytest -q tests/test_fallback.py", pytest_pass(6))
    s.tasks({"5": "completed", "3": "in_progress", "10": "pending", "11": "pending"})
    s.stop("We decided to keep the Redis client as the fallback; test_fallback_on_busy passes.")
    s.prompt(TTS)
    s.read("web/src/api/session.ts", "export interface Session { user: string }\n")
    s.edit(
        "web/src/api/session.ts",
        "export interface Session { user: string }",
        "export interface Session { user: string; expires_at?: string }",
    )
    s.bash(
        "cd web && npx tsc --noEmit",
        "src/api/session.ts(42,7): error TS2322: Type 'string | undefined' is not assignable "
        "to type 'string'.\n\nFound 1 error in src/api/session.ts:42\n",
        ok=False,
    )
    s.noise(7)
    s.prompt(FIX_ZH)
    s.edit(settings, "SESSION_TTL = 1800", "SESSION_TTL = 86400")
    s.bash(
        "git checkout -b feat/sqlite-sessions", "Switched to a new branch 'feat/sqlite-sessions'"
    )
    s.bash(
        "git add -A && git commit -m 'sessions: Redis read-through fallback when SQLite is busy'",
        "[feat/sqlite-sessions 8e41b2a] sessions: Redis read-through fallback when SQLite is busy\n"
        " 4 files changed, 61 insertions(+), 9 deletions(-)",
    )
    s.edit("tests/test_sqlite_store.py", "clock.advance(1801)", "clock.advance(86401)")
    s.bash("python -m pytest -q tests/test_sqlite_store.py", pytest_pass(14))
    s.tasks({"3": "completed"})
    s.noise(10)
    s.prompt(ZH_NEXT)
    s.read("web/src/api/session.ts")
    s.noise(5)
    s.compact(
        {
            "p1": [
                {"all": ["keep Redis as a read-through fallback"]},
                {"all": ["过期时间改回 24 小时"]},
                {"all": ["先把 web 客户端的类型错误修掉"], "in": ["requests"]},
                {"all": ["error TS2322", "session.ts(42,7)"], "in": ["errors"]},
                {"all": ["sha256 of the token"], "in": ["decisions"]},
                {"all": [TASKS["10"]], "in": ["tasks"], "agents": ["claude-code", "gemini-cli"]},
                {"all": [TASKS["11"]], "in": ["tasks"], "agents": ["claude-code", "gemini-cli"]},
            ],
            "p2": [
                {"all": ["flushdb"], "in": ["findings"], "agents": ["claude-code"]},
                {"all": ["feat/sqlite-sessions"], "in": ["git"]},
                {"all": ["Redis read-through fallback when SQLite is busy"], "in": ["git"]},
                {"all": [settings, "SESSION_TTL = 86400"], "in": ["files"]},
                {"all": ["web/src/api/session.ts"], "in": ["files"]},
                {"all": ["src/sessions/fallback.py"], "in": ["files"]},
            ],
            "traps": [
                {
                    "all": ["drop the redis dependency"],
                    "in": ["constraints", "decisions", "rules"],
                    "why": "a question, not a decision or constraint",
                },
                {"all": [INTERFACE], "in": ["files"], "why": "only read, never edited"},
                {"all": [REDIS_STORE], "in": ["files"], "why": "only read, never edited"},
                {"all": [SECRET], "why": "the planted secret"},
            ],
            "stale": [
                {
                    "all": ["remove the Redis client entirely"],
                    "in": ["requests", "constraints", "decisions", "corrections", "rules"],
                    "why": "reversed by the English correction",
                },
                {
                    "all": ["过期时间用 30 分钟"],
                    "in": ["requests", "constraints", "decisions", "corrections", "rules"],
                    "why": "reversed by the Chinese correction",
                },
                {"all": [TASKS["4"]], "in": ["tasks"], "why": "deleted"},
                {"all": ["has no attribute 'user'"], "in": ["errors"], "why": "fixed"},
                {"all": ["assert [] == ['get t9']"], "in": ["errors"], "why": "fixed"},
                {"all": ["expires_at=1801"], "in": ["errors"], "why": "fixed"},
                {"all": [TASKS["5"], "in_progress"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["3"], "pending"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["3"], "in_progress"], "in": ["tasks"], "why": "completed"},
            ],
        }
    )
    # -- phase 3: locking, retries, the long tail -------------------------------------------
    s.edit("web/src/api/session.ts", "expires_at?: string", "expires_at: string")
    s.bash("cd web && npx tsc --noEmit", "")
    s.tasks({"10": "completed", "6": "in_progress", "7": "pending", "8": "pending", "9": "pending"})
    s.noise(9)
    s.prompt(HYPO_EN)
    s.stop("Multi-region would need a replicated store; the Redis fallback is per region.")
    s.prompt(HYPO_ZH)
    s.stop("可以，但每个区域需要自己的 Redis 实例。")
    s.decide(D2, [sqlite])
    s.edit(sqlite, "self.conn.execute('BEGIN')", "self.conn.execute('BEGIN IMMEDIATE')")
    s.noise(8)
    s.edit("ops/cron/cleanup.py", "redis_client.flushdb()", "redis_client.delete(*stale_keys())")
    s.tasks({"7": "completed"})
    s.prompt(QUOTED)
    s.read("migrations/0007_sessions.sql")
    s.stop("0007 has no down step; I added DROP TABLE sessions as its down migration.")
    s.edit("migrations/0007_sessions.sql", "-- down: none", "-- down: DROP TABLE sessions;")
    s.write("docs/sessions.md", "# Sessions\n\nSQLite first, Redis read-through fallback.\n")
    s.tasks({"9": "completed", "11": "in_progress"})
    s.edit(
        "src/app/factory.py",
        "store = RedisSessionStore(redis_client)",
        "store = FallbackSessionStore(SqliteSessionStore(db), redis_client)",
    )
    s.tasks({"11": "completed"})
    s.noise(10)
    s.write("tests/test_concurrency.py", "def test_concurrent_writes(tmp_path):\n    ...\n")
    lock_body = [
        "def test_concurrent_writes(tmp_path):",
        "    store = SqliteSessionStore(tmp_path / 's.db')",
        "    with ThreadPoolExecutor(50) as pool:",
        ">       list(pool.map(write_one, range(500)))",
    ]
    s.bash(
        "python -m pytest -q tests/test_concurrency.py",
        pytest_fail(
            "tests/test_concurrency.py::test_concurrent_writes",
            lock_body,
            "E       sqlite3.OperationalError: database is locked",
            "sqlite3.OperationalError: database is locked",
        ),
        ok=False,
    )
    s.edit(sqlite, "sqlite3.connect(path)", "sqlite3.connect(path, timeout=5.0)")
    s.bash(
        "python -m pytest -q tests/test_concurrency.py",
        pytest_fail(
            "tests/test_concurrency.py::test_concurrent_writes",
            lock_body,
            "E       sqlite3.OperationalError: database is locked",
            "sqlite3.OperationalError: database is locked",
        ),
        ok=False,
    )
    s.noise(6)
    s.bash(
        "git add -A && git commit -m 'sessions: retry BEGIN IMMEDIATE before the Redis fallback'",
        "[feat/sqlite-sessions 51f0c7d] sessions: retry BEGIN IMMEDIATE before the Redis fallback\n"
        " 6 files changed, 74 insertions(+), 12 deletions(-)",
    )
    s.stop("Committed the retries; test_concurrent_writes still fails with database is locked.")
    s.edit(sqlite, "RETRIES = 1", "RETRIES = 3  # 50 ms apart, then the Redis fallback")
    s.noise(5)
    s.prompt(LAST)
    s.read(sqlite)
    s.compact(
        {
            "p1": [
                {"all": ["Run the concurrency test again"], "in": ["requests"]},
                {"all": ["keep Redis as a read-through fallback"]},
                {"all": ["过期时间改回 24 小时"]},
                {"all": ["database is locked"], "in": ["errors"]},
                {"all": [TASKS["6"]], "in": ["tasks"], "agents": ["claude-code", "gemini-cli"]},
                {"all": [TASKS["8"]], "in": ["tasks"], "agents": ["claude-code", "gemini-cli"]},
                {"all": ["Retry BEGIN IMMEDIATE 3 times"], "in": ["decisions"]},
                {"all": [sqlite], "in": ["files"]},
            ],
            "p2": [
                {"all": ["test_concurrent_writes"], "in": ["errors"]},
                {"all": ["sha256 of the token"], "in": ["decisions"]},
                {"all": [sqlite, "RETRIES = 3"], "in": ["files"]},
                {"all": ["retry BEGIN IMMEDIATE before the Redis fallback"], "in": ["git"]},
                {"all": ["flushdb"], "in": ["findings"], "agents": ["claude-code"]},
                {"all": ["feat/sqlite-sessions"], "in": ["git"]},
                {"all": ["ops/cron/cleanup.py"], "in": ["files"]},
                {"all": ["src/app/factory.py"], "in": ["files"]},
            ],
            "traps": [
                {
                    "all": ["multi-region"],
                    "in": ["constraints", "decisions", "rules"],
                    "why": "a hypothetical question",
                },
                {
                    "all": ["多区域"],
                    "in": ["constraints", "decisions", "rules"],
                    "why": "a hypothetical question",
                },
                {
                    "all": ["every migration must be reversible"],
                    "in": ["constraints", "decisions", "rules"],
                    "why": "a quoted rule inside a question",
                },
                {
                    "all": ["drop the redis dependency"],
                    "in": ["constraints", "decisions", "rules"],
                    "why": "a question, not a decision or constraint",
                },
                {"all": [INTERFACE], "in": ["files"], "why": "only read, never edited"},
                {"all": [REDIS_STORE], "in": ["files"], "why": "only read, never edited"},
                {"all": [SECRET], "why": "the planted secret"},
            ],
            "stale": [
                {
                    "all": ["remove the Redis client entirely"],
                    "in": ["requests", "constraints", "decisions", "corrections", "rules"],
                    "why": "reversed by the English correction",
                },
                {
                    "all": ["过期时间用 30 分钟"],
                    "in": ["requests", "constraints", "decisions", "corrections", "rules"],
                    "why": "reversed by the Chinese correction",
                },
                {"all": ["TS2322"], "in": ["errors"], "why": "fixed, tsc passes"},
                {"all": ["has no attribute 'user'"], "in": ["errors"], "why": "fixed"},
                {"all": ["expires_at=1801"], "in": ["errors"], "why": "fixed"},
                {"all": [TASKS["4"]], "in": ["tasks"], "why": "deleted"},
                {"all": [TASKS["10"], "pending"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["7"], "pending"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["9"], "pending"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["11"], "in_progress"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["11"], "pending"], "in": ["tasks"], "why": "completed"},
                {"all": [TASKS["5"], "in_progress"], "in": ["tasks"], "why": "completed"},
            ],
        }
    )
    return s


# -- payload shapes ------------------------------------------------------------------------------


class Render:
    """Turns story steps into one agent's hook calls."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.sid = SESSION_IDS[agent]
        self.n = 0
        self.todos: dict[str, str] = {}  # Gemini's whole list: id -> status
        self.clock = 1_764_600_000.0

    def base(self, event: str) -> dict[str, Any]:
        self.clock += 7.3
        if self.agent == "claude-code":
            return {
                "session_id": self.sid,
                "transcript_path": f"{CC_DIR}/{self.sid}.jsonl",
                "cwd": PROJECT,
                "permission_mode": "acceptEdits",
                "hook_event_name": event,
            }
        if self.agent == "codex":
            return {
                "session_id": self.sid,
                "turn_id": f"019ad3c1-{self.n // 20:04x}-7000-8000-000000000000",
                "transcript_path": f"{CODEX_DIR}/rollout-{self.sid}.jsonl",
                "cwd": PROJECT,
                "hook_event_name": event,
                "model": "gpt-5.5",
                "permission_mode": "bypassPermissions",
            }
        import time as _t

        stamp = _t.strftime("%Y-%m-%dT%H:%M:%S.000Z", _t.gmtime(self.clock))
        return {
            "session_id": self.sid,
            "transcript_path": f"{GEMINI_DIR}/session-{self.sid[:8]}.jsonl",
            "cwd": PROJECT,
            "hook_event_name": event,
            "timestamp": stamp,
        }

    def tool(
        self, name: str, inp: dict[str, Any], resp: Any, error: str | None = None
    ) -> dict[str, Any]:
        self.n += 1
        if self.agent == "gemini-cli":
            payload = {
                **self.base("AfterTool"),
                "tool_name": name,
                "tool_input": inp,
                "tool_response": resp,
            }
            return {"event": "AfterTool", "payload": payload}
        event = "PostToolUseFailure" if error is not None else "PostToolUse"
        payload = {**self.base(event), "tool_name": name, "tool_input": inp}
        if error is not None:
            payload.update(error=error, is_interrupt=False)
        else:
            payload["tool_response"] = resp
        payload["tool_use_id"] = (
            f"toolu_01{self.n:022d}" if self.agent == "claude-code" else f"call_{self.n}"
        )
        if self.agent == "claude-code":
            payload["duration_ms"] = 40 + self.n % 300
        return {"event": event, "payload": payload}

    def abs(self, path: str) -> str:
        return f"{PROJECT}/{path}"

    def step(self, kind: str, kw: dict[str, Any]) -> list[dict[str, Any]]:
        a = self.agent
        if kind == "prompt":
            event = "BeforeAgent" if a == "gemini-cli" else "UserPromptSubmit"
            return [{"event": event, "payload": {**self.base(event), "prompt": kw["text"]}}]
        if kind == "stop":
            if a == "gemini-cli":
                payload = {
                    **self.base("AfterAgent"),
                    "prompt": "",
                    "prompt_response": kw["text"],
                    "stop_hook_active": False,
                }
                return [{"event": "AfterAgent", "payload": payload}]
            payload = {
                **self.base("Stop"),
                "stop_hook_active": False,
                "last_assistant_message": kw["text"],
            }
            return [{"event": "Stop", "payload": payload}]
        if kind == "read":
            path, content = self.abs(kw["path"]), kw["content"]
            if a == "claude-code":
                lines = content.count("\n")
                resp = {
                    "type": "text",
                    "file": {
                        "filePath": path,
                        "content": content,
                        "numLines": lines,
                        "startLine": 1,
                        "totalLines": lines,
                    },
                }
                return [self.tool("Read", {"file_path": path}, resp)]
            if a == "codex":
                return [self.tool("Bash", {"command": f"sed -n '1,200p' {kw['path']}"}, content)]
            return [
                self.tool(
                    "read_file", {"file_path": path}, {"llmContent": content, "returnDisplay": ""}
                )
            ]
        if kind == "grep":
            pattern = kw["pattern"]
            if a == "claude-code":
                resp = {
                    "mode": "files_with_matches",
                    "filenames": ["src/sessions/store.py"],
                    "numFiles": 1,
                }
                return [
                    self.tool(
                        "Grep", {"pattern": pattern, "output_mode": "files_with_matches"}, resp
                    )
                ]
            if a == "codex":
                return [
                    self.tool(
                        "Bash", {"command": f"rg -n {pattern} src"}, "src/sessions/store.py:3:...\n"
                    )
                ]
            return [
                self.tool(
                    "grep_search",
                    {"pattern": pattern, "dir_path": "src"},
                    {"llmContent": "Found 1 match", "returnDisplay": "Found 1 match"},
                )
            ]
        if kind in ("edit", "write"):
            return self.file_change(kind, kw)
        if kind == "bash":
            return self.bash(kw["command"], kw["output"], kw["ok"])
        if kind == "tasks":
            return self.task_steps(kw["changes"])
        if kind == "write_context":
            return self.write_context(kw)
        if kind == "agent":
            if a != "claude-code":
                return []  # Codex and Gemini CLI report no subagent call to hooks
            resp = {
                "status": "completed",
                "agentId": "a7f3",
                "content": [{"type": "text", "text": kw["result"]}],
                "totalDurationMs": 41234,
                "totalTokens": 18422,
                "totalToolUseCount": 23,
            }
            inp = {
                "description": kw["description"],
                "prompt": kw["prompt"],
                "subagent_type": "Explore",
            }
            return [self.tool("Agent", inp, resp)]
        raise ValueError(kind)

    def file_change(self, kind: str, kw: dict[str, Any]) -> list[dict[str, Any]]:
        a, path = self.agent, self.abs(kw["path"])
        if kind == "edit":
            old, new = kw["old"], kw["new"]
            if a == "claude-code":
                resp = {
                    "filePath": path,
                    "oldString": old,
                    "newString": new,
                    "originalFile": None,
                    "structuredPatch": [
                        {
                            "oldStart": 3,
                            "oldLines": 1,
                            "newStart": 3,
                            "newLines": 1,
                            "lines": [f"-{old}", f"+{new}"],
                        }
                    ],
                    "userModified": False,
                    "replaceAll": False,
                }
                return [
                    self.tool(
                        "Edit",
                        {
                            "file_path": path,
                            "old_string": old,
                            "new_string": new,
                            "replace_all": False,
                        },
                        resp,
                    )
                ]
            if a == "codex":
                patch = (
                    f"*** Begin Patch\n*** Update File: {kw['path']}\n@@\n-{old}\n+{new}\n"
                    "*** End Patch\n"
                )
                out = f"{PATCHED}M {kw['path']}\n"
                return [self.tool("apply_patch", {"command": patch}, out)]
            resp = {
                "llmContent": f"Successfully modified file: {path} (1 replacements).",
                "returnDisplay": {
                    "fileDiff": f"-{old}\n+{new}\n",
                    "fileName": path.rsplit("/", 1)[-1],
                    "filePath": path,
                },
            }
            return [
                self.tool(
                    "replace",
                    {
                        "file_path": path,
                        "old_string": old,
                        "new_string": new,
                        "instruction": "apply the change",
                    },
                    resp,
                )
            ]
        content = kw["content"]
        if a == "claude-code":
            resp = {"type": "create", "filePath": path, "content": content, "structuredPatch": []}
            return [self.tool("Write", {"file_path": path, "content": content}, resp)]
        if a == "codex":
            body = "".join(f"+{line}\n" for line in content.splitlines())
            patch = f"*** Begin Patch\n*** Add File: {kw['path']}\n{body}*** End Patch\n"
            out = f"{PATCHED}A {kw['path']}\n"
            return [self.tool("apply_patch", {"command": patch}, out)]
        resp = {
            "llmContent": f"Successfully created and wrote to new file: {path}.",
            "returnDisplay": "",
        }
        return [self.tool("write_file", {"file_path": path, "content": content}, resp)]

    def bash(self, command: str, output: str, ok: bool) -> list[dict[str, Any]]:
        a = self.agent
        if a == "claude-code":
            if ok:
                resp = {
                    "stdout": output,
                    "stderr": "",
                    "interrupted": False,
                    "isImage": False,
                    "noOutputExpected": False,
                }
                return [self.tool("Bash", {"command": command, "description": "run"}, resp)]
            return [
                self.tool(
                    "Bash",
                    {"command": command, "description": "run"},
                    None,
                    error=f"Exit code 1\n{output}",
                )
            ]
        if a == "codex":
            return [self.tool("Bash", {"command": command}, output)]
        tail = "" if ok else "\nExit Code: 1"
        pgid = f"Process Group PGID: {4000 + self.n}"
        llm = f"<untrusted_context>\nOutput: {output}{tail}\n{pgid}\n</untrusted_context>"
        return [
            self.tool(
                "run_shell_command",
                {"command": command, "description": "run"},
                {"llmContent": llm, "returnDisplay": output},
            )
        ]

    def task_steps(self, changes: dict[str, str]) -> list[dict[str, Any]]:
        a = self.agent
        if a == "codex":
            return []  # Codex's plan tool reaches no hook
        if a == "gemini-cli":
            for task_id, status in changes.items():
                if status == "deleted":
                    self.todos.pop(task_id, None)
                else:
                    self.todos[task_id] = status
            todos = [{"description": TASKS[t], "status": st} for t, st in self.todos.items()]
            return [
                self.tool(
                    "write_todos",
                    {"todos": todos},
                    {"llmContent": "Successfully updated the todo list.", "returnDisplay": ""},
                )
            ]
        out = []
        for task_id, status in changes.items():
            if task_id not in self.todos:
                self.todos[task_id] = "pending"
                resp = {"task": {"id": task_id, "subject": TASKS[task_id]}}
                inp = {
                    "subject": TASKS[task_id],
                    "description": TASKS[task_id],
                    "activeForm": TASKS[task_id],
                }
                out.append(self.tool("TaskCreate", inp, resp))
            if status != "pending":
                before = self.todos[task_id]
                self.todos[task_id] = status
                resp = {
                    "success": True,
                    "taskId": task_id,
                    "updatedFields": ["status"],
                    "statusChange": {"from": before, "to": status},
                }
                out.append(self.tool("TaskUpdate", {"taskId": task_id, "status": status}, resp))
        return out

    def write_context(self, kw: dict[str, Any]) -> list[dict[str, Any]]:
        inp = {"type": kw["type"], "content": kw["content"], "file_paths": kw["files"]}
        if self.agent == "claude-code":
            resp = json.dumps(
                {
                    "id": 1,
                    "verified": True,
                    "deduplicated": False,
                    "superseded_id": None,
                    "checks": [f"file {kw['files'][0]}: found"],
                }
            )
            return [self.tool("mcp__ctxmode__write_context", inp, resp)]
        if self.agent == "codex":
            resp = {
                "content": [{"type": "text", "text": "Stored decision #1."}],
                "structuredContent": {
                    "id": 1,
                    "verified": True,
                    "deduplicated": False,
                    "superseded_id": None,
                    "checks": [],
                },
                "isError": False,
            }
            return [self.tool("mcp__ctxmode__write_context", inp, resp)]
        resp = {
            "llmContent": [
                {"text": "<untrusted_context>\nStored decision #1.\n</untrusted_context>"}
            ],
            "returnDisplay": "Stored decision #1.",
        }
        return [self.tool("mcp_ctxmode_write_context", inp, resp)]


def build(agent: str) -> dict[str, Any]:
    s = story()
    r = Render(agent)
    events: list[dict[str, Any]] = []
    if agent != "codex":  # Codex sends SessionStart too; kept short either way
        events.append(
            {"event": "SessionStart", "payload": {**r.base("SessionStart"), "source": "startup"}}
        )
    compactions = []
    for kind, kw in s.steps:
        if kind == "compact":
            compactions.append({"after": len(events), **facts_for(kw["facts"], agent)})
            continue
        events += r.step(kind, kw)
    name = OUT[agent].removesuffix(".json").split("-", 1)[1]
    return {"name": name, "agent": agent, "events": events, "compactions": compactions}


def facts_for(facts: dict[str, Any], agent: str) -> dict[str, Any]:
    out: dict[str, list[dict[str, Any]]] = {"p1": [], "p2": [], "traps": [], "stale": []}
    for tier, items in facts.items():
        for fact in items:
            if agent not in fact.get("agents", [agent]):
                continue
            clean = {k: v for k, v in fact.items() if k != "agents"}
            out[tier].append(clean)
    return out


def main() -> None:
    for agent, file in OUT.items():
        session = build(agent)
        (HERE / "resume_sessions" / file).write_text(
            json.dumps(session, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )
        print(f"{file}: {len(session['events'])} events, {len(session['compactions'])} compactions")


if __name__ == "__main__":
    main()
