"""``ctxmode eval --agent qwen-code``: the real Qwen Code 0.24.4 (Node 22 from npm) in both arms
against a scripted OpenAI Chat Completions server, with the user's own environment
(``OPENAI_BASE_URL``) as the only model configuration."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import harness as h
import pytest
from mock_openai_chat import MockChat, call, text

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

#: An edit by shell (each scratch copy has its own path; Qwen refuses ``sed -i`` on a file it
#: has not read).
SED = (
    "python3 -c \"import pathlib; p = pathlib.Path('auth/config.py'); "
    "p.write_text(p.read_text().replace('ACCESS_TTL = 86400', 'ACCESS_TTL = 7200'))\""
)
TASKS = """[[task]]
name = "ttl"
prompt = "Shorten the access token TTL to 2 hours"
check = "grep -q 'ACCESS_TTL = 7200' auth/config.py"
timeout_s = 300
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    node, exe = h.cli("node22"), h.cli("qwen")
    root = tmp_path_factory.mktemp("eval-qwen")
    proj, home = h.make_project(root)
    wrapper = root / "qwen"
    wrapper.write_text(f'#!/bin/sh\nexec "{node}" "{exe}" "$@"\n')
    wrapper.chmod(0o755)
    (home / ".qwen").mkdir()
    (home / ".qwen" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "openai"}}})
    )
    tasks = root / "tasks.toml"
    tasks.write_text(TASKS)
    mock = MockChat(root / "requests.jsonl").start()
    # One edit and one answer per arm (the with-arm runs first in run 1).
    step = [call("run_shell_command", command=SED, description="Shorten the TTL"), text("Done.")]
    mock.load("eval", step + step)
    env = {**h.git_env(home), "OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "dummy",
           "OPENAI_MODEL": "mock-model", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}  # fmt: skip
    try:
        proc = subprocess.run(
            [h.CTXMODE, "eval", str(tasks), "--agent", "qwen-code", "--agent-bin", str(wrapper),
             "--runs", "1", "--out", str(root / "runs"), "--json"],
            cwd=proj, env=env, capture_output=True, text=True, timeout=800,
        )  # fmt: skip
    finally:
        mock.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    data: dict[str, Any] = json.loads(proc.stdout)
    data["_requests"] = mock.requests
    return data


def test_both_arms_ran_the_real_agent_and_passed(report: dict[str, Any]) -> None:
    assert report["agent"] == "qwen-code" and report["agent_version"].startswith("0.24.4")
    runs = {r["arm"]: r for r in report["runs"]}
    assert set(runs) == {"with", "without"}
    for run in runs.values():
        assert run["error"] is None and run["passed"], run
        assert run["turns"] and run["tool_calls"] == 1 and run["tools"] == ["run_shell_command"]
        assert run["input_tokens"] and run["session_id"]


def test_only_the_with_arm_had_ctxmode(report: dict[str, Any]) -> None:
    runs = {r["arm"]: r for r in report["runs"]}
    assert "ctxmode" in runs["with"]["mcp_servers"]
    assert runs["with"]["store"]["exists"] and runs["with"]["store"]["session_events"] >= 1
    assert runs["without"]["mcp_servers"] == [] and runs["without"]["ctxmode_traces"] == []
    assert "not counted" in report["injected_bytes_source"]
