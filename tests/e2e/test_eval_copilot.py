"""``ctxmode eval --agent copilot-cli``: the real GitHub Copilot CLI 1.0.102 in both arms, in its
offline BYOK mode against a scripted OpenAI Chat Completions server (the user's own
``COPILOT_*`` environment is the only model configuration)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import harness as h
import pytest
from mock_openai_chat import MockChat, call, text
from test_eval_qwen import SED, TASKS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    exe = h.cli("copilot")
    root = tmp_path_factory.mktemp("eval-copilot")
    proj, home = h.make_project(root)
    tasks = root / "tasks.toml"
    tasks.write_text(TASKS)
    mock = MockChat(root / "requests.jsonl").start()
    step = [call("bash", command=SED, description="Shorten the TTL"), text("Done.")]
    mock.load("eval", step + step)  # one edit and one answer per arm
    env = {**h.git_env(home), "COPILOT_OFFLINE": "true",
           "COPILOT_PROVIDER_BASE_URL": mock.base_url,
           "COPILOT_PROVIDER_API_KEY": "dummy-key-e2e", "COPILOT_MODEL": "mock-model",
           "COPILOT_AUTO_UPDATE": "false",
           "XDG_CACHE_HOME": str(h.CACHE / "copilot-xdg")}  # fmt: skip
    try:
        proc = subprocess.run(
            [h.CTXMODE, "eval", str(tasks), "--agent", "copilot-cli", "--agent-bin", str(exe),
             "--runs", "1", "--out", str(root / "runs"), "--json"],
            cwd=proj, env=env, capture_output=True, text=True, timeout=800,
        )  # fmt: skip
    finally:
        mock.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_both_arms_ran_the_real_agent_and_passed(report: dict[str, Any]) -> None:
    assert report["agent"] == "copilot-cli" and "1.0.102" in report["agent_version"]
    runs = {r["arm"]: r for r in report["runs"]}
    assert set(runs) == {"with", "without"}
    for run in runs.values():
        assert run["error"] is None and run["passed"], run
        assert run["turns"] == 2 and run["tool_calls"] == 1 and run["tools"] == ["bash"]
        assert run["session_id"] and run["input_tokens"] is None  # Copilot CLI reports none


def test_only_the_with_arm_had_ctxmode(report: dict[str, Any]) -> None:
    runs = {r["arm"]: r for r in report["runs"]}
    assert "ctxmode" in runs["with"]["mcp_servers"]  # the project's server, trusted for the run
    assert runs["with"]["store"]["exists"] and runs["with"]["store"]["session_events"] >= 1
    assert runs["without"]["mcp_servers"] == [] and runs["without"]["ctxmode_traces"] == []
