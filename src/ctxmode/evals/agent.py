"""The agent under test, run headlessly with the user's own environment.

Claude Code: ``claude -p --output-format stream-json --verbose --include-hook-events``, the
prompt on stdin. Qwen Code: ``qwen -o stream-json --approval-mode MODE -p PROMPT``, whose
stream has Claude Code's shape (``system``/``assistant``/``result`` lines) but no hook lines,
so what ctxmode injected is not counted there (the store's figures still are). GitHub Copilot
CLI: ``copilot -p PROMPT --output-format json --allow-all[-tools] --trust-folder`` (the
folder trust for this run only: the with-arm's hooks are project hooks); its JSON events give
turns, tool calls and the session, no token figures and no hook output. The agent's
login, ``ANTHROPIC_BASE_URL``/``OPENAI_BASE_URL`` and the like come from the environment the
eval was started in; only ctxmode's own variables (and the ones a parent Claude Code sets for
its children) are replaced, so neither arm can reach the user's store.

Every figure is read from the agent's own stream: turns, tokens and cost from its ``result``
line, tool calls from its ``tool_use`` blocks, and what ctxmode injected from its
``hook_response`` lines (the ``additionalContext`` that holds a ``<ctxmode_data`` fence).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ctxmode.core import config
from ctxmode.core.errors import InvalidInput

__all__ = [
    "AGENTS",
    "AgentRun",
    "agent_env",
    "parse_copilot_events",
    "parse_stream",
    "preflight",
    "resolve_binary",
    "run_agent",
]

#: Agents ``ctxmode eval`` can drive, and their default binary.
AGENTS = {"claude-code": "claude", "qwen-code": "qwen", "copilot-cli": "copilot"}
#: Tools that change a file: "tool calls before the first edit" counts up to one of these
#: (Claude Code's, Qwen Code's).
EDIT_TOOLS = frozenset(
    {"Edit", "MultiEdit", "Write", "NotebookEdit", "edit", "write_file", "create"}
)
#: Claude Code's permission modes as Qwen Code approval modes.
_QWEN_APPROVAL = {"bypassPermissions": "yolo", "dontAsk": "yolo", "acceptEdits": "auto-edit",
                  "default": "default", "plan": "plan"}  # fmt: skip
#: Variables a parent Claude Code session sets; inherited, they would point a child's hooks at
#: the user's project (or stop Claude Code from starting inside another one).
_DROPPED = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", config.ENV_CLAUDE_PROJECT_DIR)
_FENCE = "<ctxmode_data"


def resolve_binary(agent: str, agent_bin: str | None) -> str:
    if agent not in AGENTS:
        known = ", ".join(AGENTS)
        raise InvalidInput(f"ctxmode eval cannot drive {agent!r} yet; supported: {known}")
    name = agent_bin or AGENTS[agent]
    found = shutil.which(name)
    if found is None:
        hint = (
            f"{name} does not exist or is not executable"
            if agent_bin
            else f"{name!r} is not on PATH; install {agent} or pass --agent-bin PATH"
        )
        raise InvalidInput(f"cannot run the agent: {hint}")
    return found


def preflight(binary: str, env: dict[str, str], agent: str = "claude-code") -> str:
    """The agent's version; ``InvalidInput`` when it does not start or is not logged in.

    Cheap: ``--version`` and ``auth status --json`` are local, no model request is made. Qwen
    Code has no local login check: a run without credentials fails and is reported as such.
    """

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [binary, *args], env=env, capture_output=True, text=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InvalidInput(f"cannot run {binary} {' '.join(args)}: {exc}") from None

    version = run(["--version"])
    if version.returncode:
        raise InvalidInput(f"{binary} --version failed: {version.stderr.strip()[:300]}")
    if agent != "claude-code":
        return version.stdout.strip()
    status = run(["auth", "status", "--json"])
    try:
        logged_in = bool(json.loads(status.stdout).get("loggedIn"))
    except (ValueError, AttributeError):
        logged_in = status.returncode == 0
    if not logged_in:
        raise InvalidInput(
            f"{binary} is not logged in: run `claude auth login`, or set ANTHROPIC_API_KEY "
            "(or ANTHROPIC_AUTH_TOKEN with ANTHROPIC_BASE_URL) in this shell"
        )
    return version.stdout.strip()


def agent_env(overrides: dict[str, str]) -> dict[str, str]:
    """The user's environment, minus ctxmode's and a parent agent's variables, plus ours."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _DROPPED and k not in {config.ENV_DB, config.ENV_DISABLE}
    }
    env.update(overrides)
    return env


@dataclass
class AgentRun:
    """What one headless agent session did, read from its stream."""

    exit_code: int | None = None
    timed_out: bool = False
    session_id: str | None = None
    is_error: bool = False
    turns: int | None = None
    tool_calls: int = 0
    tool_calls_before_edit: int | None = None
    tools: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cache_read_tokens: int | None = None
    cost_usd: float | None = None
    wall_s: float = 0.0
    injected_bytes: int = 0
    injections: int = 0
    mcp_servers: list[str] = field(default_factory=list)
    result_text: str = ""


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _injected(line: dict[str, Any]) -> str:
    """The ctxmode-fenced ``additionalContext`` a hook returned, or ''."""
    try:
        out = json.loads(str(line.get("output") or line.get("stdout") or ""))
    except ValueError:
        return ""
    spec = out.get("hookSpecificOutput") if isinstance(out, dict) else None
    text = spec.get("additionalContext") if isinstance(spec, dict) else None
    return text if isinstance(text, str) and _FENCE in text else ""


def parse_stream(lines: list[str], run: AgentRun) -> AgentRun:
    """Fill ``run`` from the agent's stream-json lines (unparseable lines are skipped)."""
    seen: set[str] = set()
    for raw in lines:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict):
            continue
        kind, sub = line.get("type"), line.get("subtype")
        if kind == "system" and sub == "init":
            run.session_id = run.session_id or line.get("session_id")
            servers = line.get("mcp_servers") or []
            run.mcp_servers = sorted(str(s.get("name")) for s in servers if isinstance(s, dict))
        elif kind == "system" and sub == "hook_response":
            text = _injected(line)
            if text:
                run.injected_bytes += len(text.encode("utf-8"))
                run.injections += 1
        elif kind == "assistant":
            content = (line.get("message") or {}).get("content") or []
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                key = str(block.get("id") or len(seen))
                if key in seen:
                    continue
                seen.add(key)
                name = str(block.get("name"))
                if name in EDIT_TOOLS and run.tool_calls_before_edit is None:
                    run.tool_calls_before_edit = run.tool_calls
                run.tool_calls += 1
                run.tools.append(name)
        elif kind == "result":
            usage = line.get("usage") or {}
            run.is_error = bool(line.get("is_error"))
            run.turns = _int(line.get("num_turns"))
            run.input_tokens = _int(usage.get("input_tokens"))
            run.output_tokens = _int(usage.get("output_tokens"))
            run.cache_creation_tokens = _int(usage.get("cache_creation_input_tokens"))
            run.cache_read_tokens = _int(usage.get("cache_read_input_tokens"))
            cost = line.get("total_cost_usd")
            run.cost_usd = float(cost) if isinstance(cost, int | float) else None
            run.result_text = str(line.get("result") or "")[:2000]
            run.session_id = run.session_id or line.get("session_id")
    return run


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """End the agent and everything it started (its own process group)."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def run_agent(
    binary: str,
    prompt: str,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: int,
    raw_path: Path,
    stderr_path: Path,
    permission_mode: str,
    agent: str = "claude-code",
) -> AgentRun:
    """Run one headless session in ``cwd``; its stdout is saved to ``raw_path`` as it comes.

    Ctrl-C (``KeyboardInterrupt``) ends the agent's process group before it propagates.
    """
    args = [
        binary,
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-hook-events",
        "--permission-mode",
        permission_mode,
    ]
    if agent == "qwen-code":
        mode = _QWEN_APPROVAL.get(permission_mode, "default")
        args = [binary, "-o", "stream-json", "--approval-mode", mode, "-p", prompt]
        prompt = ""
    elif agent == "copilot-cli":
        allow = (
            "--allow-all"
            if permission_mode in ("bypassPermissions", "dontAsk")
            else (
                "--allow-all-tools"  # required by ``-p``
            )
        )
        args = [binary, "-p", prompt, "--output-format", "json", allow, "--trust-folder"]
        prompt = ""
    run = AgentRun()
    raw_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    out: IO[bytes]
    with raw_path.open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            start_new_session=True,  # Ctrl-C reaches us, not the agent: we end it ourselves
        )
        try:
            assert proc.stdin is not None
            try:
                proc.stdin.write(prompt.encode("utf-8"))
                proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                run.exit_code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                run.timed_out = True
                _kill(proc)
                run.exit_code = proc.returncode
        except BaseException:
            _kill(proc)
            raise
    run.wall_s = round(time.monotonic() - t0, 3)
    text = raw_path.read_text(encoding="utf-8", errors="replace")
    if agent == "copilot-cli":
        return parse_copilot_events(text.splitlines(), run)
    return parse_stream(text.splitlines(), run)


def parse_copilot_events(lines: list[str], run: AgentRun) -> AgentRun:
    """Fill ``run`` from Copilot CLI's ``--output-format json`` events (one JSON object a
    line; unparseable lines are skipped). ``turns`` is set once the ``result`` line came."""
    turns = 0
    for raw in lines:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict):
            continue
        kind, data = line.get("type"), line.get("data")
        data = data if isinstance(data, dict) else {}
        if kind == "session.mcp_servers_loaded":
            servers = data.get("servers") or []
            run.mcp_servers = sorted(
                str(s.get("name"))
                for s in servers
                if isinstance(s, dict) and s.get("status") == "connected"
            )
        elif kind == "assistant.turn_start":
            turns += 1
        elif kind == "assistant.message":
            for request in data.get("toolRequests") or []:
                if not isinstance(request, dict):
                    continue
                name = str(request.get("name"))
                if name in EDIT_TOOLS and run.tool_calls_before_edit is None:
                    run.tool_calls_before_edit = run.tool_calls
                run.tool_calls += 1
                run.tools.append(name)
            content = data.get("content")
            if isinstance(content, str) and content:
                run.result_text = content[:2000]
        elif kind == "result":
            run.turns = turns
            run.session_id = run.session_id or line.get("sessionId")
            run.is_error = _int(line.get("exitCode")) not in (0, None)
    return run
