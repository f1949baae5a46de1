"""Secrets: planted through every entry point, found nowhere afterwards.

Every kind of credential ``ctxmode.core.redact`` knows is planted through the CLI, the Python API,
the hooks of every agent (each captured payload shape, secrets in every free-text field), the
MCP tools, indexing (a ``.env`` file included), sandbox output (small and large) and a fetch
from a local HTTP server. Then the raw store bytes (WAL before and after a checkpoint),
the hook log, snapshots, search results, ``get``, MCP results, ``events`` and the export are
searched for each secret: zero matches. A second test guards against the opposite failure:
ordinary prose and code must come through redaction unchanged.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from _hardening import hook_inprocess, hook_process
from _hooks import FIXTURES, _rewrite, event_name
from conftest import run_cli, serve_body
from ctxmode import Store
from ctxmode.core.redact import redact
from ctxmode.mcp.sdk.server import build_server

# (planted text, the secret part that must never come back). Built by concatenation so that
# this file itself does not look like a leaked credential to scanners.
_PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
SECRETS: list[tuple[str, str]] = [
    (
        "-----BEGIN RSA PRIVATE KEY-----\n" + _PEM_BODY + "\nVOuDLnH0oTkz7bXs\n"
        "-----END RSA PRIVATE KEY-----",
        _PEM_BODY,
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB"
        "\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ),
    (
        "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    ("aws key " + "AKIA" + "Z7QWERTYUIOP1234", "Z7QWERTYUIOP1234"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9EXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9EXAMPLEKEY",
    ),
    (
        "gh " + "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    ),
    (
        "pat "
        + "github_pat_"
        + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS",
        "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    ("gl " + "glpat-" + "Xy9zAbCdEfGhIjKlMnOp", "Xy9zAbCdEfGhIjKlMnOp"),
    (
        "slack " + "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    (
        "hook https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    (
        "openai " + "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
        "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    ),
    (
        "anthropic " + "sk-ant-api03-" + "Zz98Yy76Xx54Ww32Vv10UuTtSsRrQq",
        "Zz98Yy76Xx54Ww32Vv10UuTtSsRrQq",
    ),
    ("stripe " + "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("db postgres://admin:Hunter2Pa55word@db.internal:5432/app", "Hunter2Pa55word"),
    ("url https://api.example.com/v1?access_token=Tok3nInTheUrl998877&x=1", "Tok3nInTheUrl998877"),
    ("export DATABASE_PASSWORD=CorrectHorseBatteryStaple77", "CorrectHorseBatteryStaple77"),
    ('export OPENAI_API_KEY="quotedKeyValue0011223344"', "quotedKeyValue0011223344"),
    ("MY_SERVICE_TOKEN=plainAssignToken55667788 ./run.sh", "plainAssignToken55667788"),
    ("curl -H 'Authorization: Bearer BearerTok99887766554433'", "BearerTok99887766554433"),
    (
        'headers = {"Authorization": "Basic dXNlcjpzM2NyZXRwYXNzd29yZA=="}',
        "dXNlcjpzM2NyZXRwYXNzd29yZA",
    ),
    ('{"client_secret": "JsonClientSecret31415926"}', "JsonClientSecret31415926"),
    ("db_password: YamlPassw0rd5544", "YamlPassw0rd5544"),
    ("note <private>diary entry PRIVATE-MARKER-7777</private> end", "PRIVATE-MARKER-7777"),
]
NEEDLES = [needle for _, needle in SECRETS]
#: A value that only a .env file makes secret: its name does not look secret at all.
ENV_ONLY = "EnvFileOnlyValue24680"
BLOB = "\n".join(text for text, _ in SECRETS)
#: Short enough to survive the hook's per-field clipping whole (one secret per string).
SHORT = [text for text, _ in SECRETS if len(text) < 190 and "\n" not in text]


def _leaks(text: str | bytes) -> list[str]:
    hay = text.lower() if isinstance(text, str) else text.decode("utf-8", "replace").lower()
    found = [n for n in NEEDLES if n.lower() in hay]
    if ENV_ONLY.lower() in hay:
        found.append(ENV_ONLY)
    return found


# -- planting ---------------------------------------------------------------------------------

SKIP_KEYS = {
    "session_id",
    "sessionId",
    "sessionID",
    "conversation_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "hookEventName",
    "tool_name",
    "toolName",
    "tool",
    "workspace_roots",
    "source",
    "tool_use_id",
    "callID",
    "generation_id",
    "file_path",
    "filePath",
    "path",
    "directory",
    "worktree",
    "status",
    "event",
}


def _salt(value: Any, secret: str, key: str = "") -> Any:
    """Append ``secret`` to every free-text string of a payload (ids and paths untouched)."""
    if isinstance(value, dict):
        return {k: _salt(v, secret, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_salt(v, secret, key) for v in value]
    if isinstance(value, str) and key not in SKIP_KEYS:
        return f"{secret} {value}"
    return value


def _plant_hooks(project: Path) -> None:
    n = 0
    for agent_dir in sorted(FIXTURES.iterdir()):
        for fixture in sorted(agent_dir.glob("*.json")):
            base = _rewrite(json.loads(fixture.read_text(encoding="utf-8")), project)
            for secret in SHORT:
                n += 1
                payload = _salt(base, secret)
                for key in ("tool_use_id", "callID", "generation_id"):
                    if key in payload:
                        payload[key] = f"{payload[key]}-{n}"
                code, out, _ = hook_inprocess(
                    event_name(base),
                    json.dumps(payload).encode(),
                    cwd=project,
                    agent=agent_dir.name,
                )
                assert code == 0
    # A few through the real process, multi-line secrets included.
    for event, payload in (
        ("UserPromptSubmit", {"prompt": BLOB}),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": BLOB}}),
        (
            "PostToolUseFailure",
            {"tool_name": "Bash", "tool_input": {"command": "deploy"}, "error": BLOB},
        ),
        ("Stop", {"last_assistant_message": "We decided to rotate keys. " + BLOB}),
    ):
        full = {"session_id": "secret-session", "cwd": str(project), "hook_event_name": event}
        full.update(payload)
        assert hook_process(event, json.dumps(full).encode(), cwd=project).returncode == 0


@pytest.fixture
def page_url() -> Iterator[str]:
    page = "<html><body><h1>Deploy notes</h1><pre>" + BLOB + "</pre></body></html>"
    with serve_body(page.encode(), "text/html; charset=utf-8", "/notes") as url:
        yield url


async def _mcp_plant_and_read(project: Path) -> list[str]:
    db = project / ".context" / "context.db"
    texts: list[str] = []
    async with Client(build_server(db, project), mode="legacy") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        plant: list[tuple[str, dict[str, Any]]] = [
            ("write_context", {"type": "convention", "content": BLOB, "metadata": {"k": BLOB}}),
            ("create_task", {"name": SHORT[3]}),
            ("index", {"content": BLOB, "source": "mcp-notes"}),
            ("execute", {"language": "shell", "code": "cat secrets.txt"}),
            (
                "execute",
                {
                    "language": "shell",
                    "code": "for i in $(seq 1 400); do cat secrets.txt; done",
                    "intent": "password",
                },
            ),
            ("execute_file", {"path": "secrets.txt", "language": "shell", "code": "cat"}),
        ]
        for tool, args in plant:
            if tool in tools:
                result = await client.call_tool(tool, args)
                assert not result.is_error, (tool, result.content[0].text)
                texts.append(result.content[0].text + json.dumps(result.structured_content))
        reads: list[tuple[str, dict[str, Any]]] = [
            ("query_context", {"budget_tokens": 100000}),
            ("session_events", {"limit": 500}),
            ("session_snapshot", {}),
            ("list_tasks", {}),
            ("search", {"queries": ["password", "token", "key", "secret", "private", "deploy"]}),
        ]
        for tool, args in reads:
            if tool in tools:
                result = await client.call_tool(tool, args)
                texts.append(result.content[0].text + json.dumps(result.structured_content))
        if "get" in tools:
            with Store.open(db) as store:
                ids = [f"ctx:{r[0]}" for r in store.conn.execute("SELECT id FROM contexts")]
                ids += [f"evt:{r[0]}" for r in store.conn.execute("SELECT id FROM events")]
                ids += [f"doc:{r[0]}" for r in store.conn.execute("SELECT id FROM chunks")]
            for start in range(0, len(ids), 50):
                result = await client.call_tool("get", {"ids": ids[start : start + 50]})
                texts.append(result.content[0].text)
    return texts


def _raw_store_bytes(db: Path) -> bytes:
    wal = Path(f"{db}-wal")
    before = wal.read_bytes() if wal.exists() else b""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    after = wal.read_bytes() if wal.exists() else b""
    return db.read_bytes() + before + after


@pytest.mark.slow
@pytest.mark.anyio
async def test_planted_secrets_are_found_nowhere(project: Path, page_url: str) -> None:
    (project / "secrets.txt").write_text(BLOB + "\n", encoding="utf-8")
    (project / "notes.md").write_text("# Notes\n\n" + BLOB + "\n", encoding="utf-8")
    (project / ".env").write_text(f"PLAIN_SETTING={ENV_ONLY}\nDEBUG=1\n", encoding="utf-8")
    (project / ".gitignore").write_text("", encoding="utf-8")

    # CLI
    assert run_cli("add", "convention", "-", cwd=project, input=BLOB).returncode == 0
    meta = json.dumps({"token": SHORT[0], "note": SHORT[1]})
    assert run_cli("add", "reference", SHORT[2], "--meta", meta, cwd=project).returncode == 0
    assert run_cli("task", "add", SHORT[4], cwd=project).returncode == 0
    for args in (("index", "notes.md"), ("index", ".env"), ("fetch", page_url)):
        proc = run_cli(*args, cwd=project)
        assert proc.returncode == 0, (args, proc.stderr)
    exec_small = run_cli("exec", "shell", "cat secrets.txt", cwd=project)
    exec_large = run_cli(
        "exec", "shell", "for i in $(seq 1 400); do cat secrets.txt; done", cwd=project
    )
    # Python API
    with Store.open(project / ".context" / "context.db") as store:
        res = store.write_context("decision", BLOB, metadata={"nested": {"list": [BLOB]}})
        store.update_context(res.id, content="updated " + BLOB)
        store.write_decision({"decision": SHORT[5], "background": BLOB, "rationale": SHORT[6]})
        store.create_task(SHORT[7])
    # Hooks of every agent
    _plant_hooks(project)
    # MCP: plant and read back
    mcp_texts = await _mcp_plant_and_read(project)

    outputs: dict[str, str | bytes] = {
        "exec small": exec_small.stdout + exec_small.stderr,
        "exec large": exec_large.stdout + exec_large.stderr,
    }
    for i, text in enumerate(mcp_texts):
        outputs[f"mcp result {i}"] = text
    for args in (
        ("export",),
        ("events", "--json", "--limit", "1000"),
        ("snapshot", "--session", "secret-session", "--json"),
        ("snapshot", "--json"),
        ("search", "password token key secret private", "--json"),
        ("search", "deploy notes", "--json"),
        ("query", "--json"),
        ("task", "list", "--json"),
        ("sources", "--json"),
    ):
        proc = run_cli(*args, cwd=project)
        outputs[" ".join(args)] = proc.stdout + proc.stderr
    start = {
        "session_id": "secret-session",
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "resume",
    }
    hook_process(
        "PreCompact", json.dumps({**start, "hook_event_name": "PreCompact"}).encode(), cwd=project
    )
    resumed = hook_process("SessionStart", json.dumps(start).encode(), cwd=project)
    outputs["session-start resume"] = resumed.stdout
    startup = hook_process(
        "SessionStart", json.dumps({**start, "source": "startup"}).encode(), cwd=project
    )
    outputs["session-start startup"] = startup.stdout
    log = project / ".context" / "hooks.log"
    if log.exists():
        outputs["hooks.log"] = log.read_bytes()
    outputs["store file + WAL"] = _raw_store_bytes(project / ".context" / "context.db")

    leaks = {where: found for where, text in outputs.items() if (found := _leaks(text))}
    assert not leaks, json.dumps(leaks, indent=0)
    # The planting really reached the store (a test that stores nothing proves nothing).
    with Store.open(project / ".context" / "context.db") as store:
        counts = {
            t: store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("contexts", "events", "chunks", "tasks")
        }
    assert all(n > 0 for n in counts.values()), counts
    assert counts["events"] > 100, counts


BENIGN = [
    "The password reset flow sends an email with a one-time link.",
    "Tokens are counted with a 4-characters-per-token estimate.",
    "def get_token(self) -> str:\n    return self._token",
    "token = tokenizer.next_token()",
    "api_key = os.environ['OPENAI_API_KEY']",
    "password = getpass.getpass()",
    "secret = load_secret(name)",
    "Authorization is checked by the middleware before the handler runs.",
    "See https://docs.example.com/auth?page=2#tokens for details.",
    "Use scikit-learn (sk-learn) for the baseline model.",
    "The task-manager service restarts workers every 5 minutes.",
    "export PATH=$HOME/.local/bin:$PATH",
    "export NODE_ENV=production",
    "git commit -m 'Rotate the session key handling'",
    "SELECT id, token_count FROM usage WHERE user_id = ?",
    "if password_hash != expected_hash: raise AuthError",
    "PASSWORD_MIN_LENGTH = 12",
    "The key insight: keep the store small.",
    "AKIA prefixes identify AWS access keys.",
    "ssh-keygen -t ed25519 -C 'me@example.com'",
    "https://github.com/encode/httpx/pull/1234",
    # Error text and prose from real test runs (issue 16): a name with Token, Auth or Key
    # followed by ": word" is not a credential field.
    "TokenExpiredError: session expired at 12:00",
    "FAILED tests/test_refresh.py::test_rotation - RefreshTokenReused: old token accepted",
    "E       RefreshTokenReused: old token accepted after rotation",
    "Rename AuthKeyStore to KeyRing and keep the token: prefix in cache keys",
    "AuthError: Unauthorized access to /admin",
    "KeyError: 'user_id'",
    "Expected token: Received",
    "FAILED tests/test_password.py::test_legacy_hash - ValueError: Invalid salt",
]


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_prose_and_code_survive_redaction(text: str) -> None:
    assert redact(text) == text
