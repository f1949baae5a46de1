"""Helpers for hook tests: payload fixtures rewritten to a test project, and the real hook."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import CTXMODE

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hooks"
#: The project path the fixtures were written with; tests swap in their own.
FIXTURE_PROJECT = "/home/user/my-project"


def _rewrite(value: Any, project: Path) -> Any:
    if isinstance(value, str):
        return value.replace(FIXTURE_PROJECT, str(project))
    if isinstance(value, dict):
        return {k: _rewrite(v, project) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, project) for v in value]
    return value


def fixture(agent: str, name: str, project: Path, **overrides: Any) -> dict[str, Any]:
    """A payload fixture with its project path pointing at ``project``."""
    data = json.loads((FIXTURES / agent / f"{name}.json").read_text(encoding="utf-8"))
    data = _rewrite(data, project)
    data.update(overrides)
    return dict(data)


def fixture_names(agent: str) -> list[str]:
    return sorted(p.stem for p in (FIXTURES / agent).glob("*.json"))


def event_name(payload: dict[str, Any]) -> str:
    return str(payload.get("hook_event_name") or payload.get("hookEventName"))


def run_hook(
    event: str,
    payload: dict[str, Any] | bytes | str,
    *,
    cwd: Path,
    agent: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``ctxmode hook EVENT [--agent A]`` in a subprocess with ``payload`` on stdin."""
    assert CTXMODE, "ctxmode console script not installed"
    args = [CTXMODE, "hook", event]
    if agent:
        args += ["--agent", agent]
    if isinstance(payload, dict):
        data = json.dumps(payload)
    elif isinstance(payload, bytes):
        data = payload.decode("utf-8", "replace")
    else:
        data = payload
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        args, input=data, cwd=cwd, capture_output=True, text=True, env=full_env, timeout=timeout
    )


def output_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any] | None:
    """Assert the hook contract (exit 0; nothing or one JSON object) and return the object."""
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.strip()
    if not text:
        return None
    assert "\n" not in text, f"more than one line on stdout: {text!r}"
    value = json.loads(text)
    assert isinstance(value, dict)
    return value
