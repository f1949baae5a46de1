"""Benchmark: what ctxmode costs inside a real Claude Code session.

A scripted session (prompts 1 and 2 of the Claude Code harness: ToolSearch, TaskCreate, Read,
Edit, a failing pytest, two commits, an MCP write_context, TaskUpdate, Read, Write: 11 tool
calls, 4 UserPromptSubmit/Stop events) is played against a local stand-in for the model, so
what is timed is the agent and what runs inside it. Three set-ups, interleaved run by run:

- ``plain``: no ctxmode;
- ``command``: ``ctxmode install claude-code`` as shipped (every hook a ``ctxmode hook`` process);
- ``mcp_tool``: the same install with PostToolUse, PostToolUseFailure, UserPromptSubmit and Stop
  as ``"type": "mcp_tool"`` handlers calling ``record_hook`` in the running ``ctxmode serve``
  (``ctxmode.hooks.in_agent``).

Printed, medians of ``--runs`` sessions each: wall time and the ratio to ``plain``; spawn ->
first model request and the difference to ``plain``; per hook call, the time from Claude Code's
``hook_started`` to its ``hook_response`` event on its output stream (by handler type); and the
events each set-up stored (both ctxmode set-ups must store the same).
Targets (issue 21): session ratio <= 1.3x, first request <= +0.3 s, <= 5 ms per mcp_tool call.

The harness (mock Anthropic server, project, script, driver) is the Claude Code end-to-end
harness's own code, imported from ``--harness`` (default ``$CTXMODE_CLAUDE_HARNESS``, else
``tests/e2e/claude``, else ``/work/e2e/claude``); the Claude Code binary is the harness's
(``$CLAUDE_BIN``). Without either, the benchmark says so and exits 0.

    .venv/bin/python bench/agent.py [--runs 5] [--harness DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CTXMODE = Path(sys.executable).parent / "ctxmode"
SETUPS = ("plain", "command", "mcp_tool")
IN_AGENT_EVENTS = {
    "PostToolUse": "post-tool-use",
    "PostToolUseFailure": "post-tool-use-failure",
    "UserPromptSubmit": "user-prompt-submit",
    "Stop": "stop",
}


def find_harness(given: str | None) -> Path | None:
    candidates = [given, os.environ.get("CTXMODE_CLAUDE_HARNESS")]
    candidates += [str(REPO / "tests" / "e2e" / "claude"), "/work/e2e/claude"]
    for c in candidates:
        if (
            c
            and (Path(c) / "drive_claude.py").is_file()
            and (Path(c) / "mock_anthropic.py").is_file()
        ):
            return Path(c)
    return None


def use_mcp_tool_hooks(proj: Path) -> None:
    """Rewrite the installed Claude Code hooks of ``IN_AGENT_EVENTS`` as mcp_tool handlers."""
    from ctxmode.hooks.in_agent import TEMPLATE

    path = proj / ".claude" / "settings.local.json"
    settings = json.loads(path.read_text())
    for agent_event, event in IN_AGENT_EVENTS.items():
        arguments = {"event": event, "agent": "claude-code", "payload": TEMPLATE}
        handler = {"type": "mcp_tool", "server": "ctxmode", "tool": "record_hook"}
        settings["hooks"][agent_event] = [{"hooks": [{**handler, "input": arguments}]}]
    path.write_text(json.dumps(settings, indent=2))


def one_session(drive: Any, mock_mod: Any, setup: str, tmp: Path) -> dict[str, Any]:
    proj_s, home_s = drive.make_project(str(tmp))
    proj, home = Path(proj_s), Path(home_s)
    env_install = dict(os.environ, HOME=str(home))
    if setup != "plain":
        for args in (["init"], ["install", "claude-code", "--scope", "project"]):
            subprocess.run(
                [str(CTXMODE), *args],
                cwd=proj,
                env=env_install,
                check=True,
                capture_output=True,
                text=True,
            )
        if setup == "mcp_tool":
            use_mcp_tool_hooks(proj)
    script = drive.build_script(proj_s)
    stream = tmp / "stream.jsonl"
    with mock_mod.MockAnthropic(script, str(tmp / "requests.jsonl")) as mock:
        env = drive.base_env(str(home), mock.url)
        start = time.time()
        claude = drive.Claude(proj_s, env, [], str(stream), str(tmp / "stderr.txt"))
        for prompt in (drive.PROMPT1, drive.PROMPT2):
            claude.send(prompt)
            claude.wait_result()
        rc = claude.close()
        wall = time.time() - start
        first = (mock.state.first_request_t or 0) - claude.t0
    hook_ms: dict[str, list[float]] = {}
    started: dict[str, tuple[float, str]] = {}
    with open(stream) as f:
        lines = f.read().splitlines()
    # Arrival times of the stream's lines, written by the reader ``stamping`` installs.
    for stamp, ev in _stamped(tmp, lines):
        if ev.get("subtype") == "hook_started":
            started[ev["hook_id"]] = (stamp, ev.get("hook_event", ""))
        elif ev.get("subtype") == "hook_response" and ev.get("hook_id") in started:
            t0, event = started.pop(ev["hook_id"])
            kind = "mcp_tool" if setup == "mcp_tool" and event in IN_AGENT_EVENTS else "command"
            hook_ms.setdefault(kind, []).append((stamp - t0) * 1000)
    events = 0
    if setup != "plain":
        out = subprocess.run(
            [str(CTXMODE), "events", "--json", "--limit", "1000"],
            cwd=proj,
            env=env_install,
            capture_output=True,
            text=True,
            check=True,
        )
        events = json.loads(out.stdout)["count"]
    return {"rc": rc, "wall": wall, "first": first, "hooks": hook_ms, "events": events}


def _stamped(tmp: Path, lines: list[str]) -> list[tuple[float, dict[str, Any]]]:
    stamps_file = tmp / "stamps.txt"
    stamps = [float(x) for x in stamps_file.read_text().split()] if stamps_file.exists() else []
    out = []
    for i, line in enumerate(lines):
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        out.append((stamps[i] if i < len(stamps) else 0.0, ev))
    return out


def stamping(drive: Any) -> None:
    """Make the driver's stream reader write each line's arrival time next to the log."""

    def _reader(self: Any) -> None:
        stamps = open(Path(self.log.name).with_name("stamps.txt"), "a")  # noqa: SIM115
        for line in self.p.stdout:
            stamps.write(f"{time.monotonic()}\n")
            stamps.flush()
            self.log.write(line)
            self.log.flush()
            with contextlib.suppress(ValueError):
                self.q.put(json.loads(line))
        self.q.put(None)

    drive.Claude._reader = _reader


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--harness", default=None)
    parser.add_argument(
        "--setups",
        default=",".join(SETUPS),
        help="comma-separated subset of plain,command,mcp_tool (plain is always run)",
    )
    opts = parser.parse_args()
    setups = tuple(s for s in SETUPS if s == "plain" or s in opts.setups.split(","))
    if opts.runs < 5:
        parser.error("--runs must be at least 5")
    harness = find_harness(opts.harness)
    if harness is None:
        print("Claude Code harness not found (set --harness or CTXMODE_CLAUDE_HARNESS): skipped")
        return 0
    sys.path.insert(0, str(harness))
    import drive_claude as drive
    import mock_anthropic as mock_mod

    if not (os.path.isfile(drive.CLAUDE) and os.access(drive.CLAUDE, os.X_OK)):
        print(f"Claude Code binary {drive.CLAUDE} missing (install it or set CLAUDE_BIN): skipped")
        return 0
    if not os.access(drive.TESTPY, os.X_OK):
        print(f"{drive.TESTPY} (pytest for the scripted project) missing: skipped")
        return 0
    stamping(drive)
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in setups}
    for i in range(opts.runs + 1):  # run 0 warms caches and is not counted
        for setup in setups:
            tmp = Path(tempfile.mkdtemp(prefix=f"ctxmode-agent-{setup}-"))
            try:
                row = one_session(drive, mock_mod, setup, tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            if row["rc"] != 0:
                print(f"{setup} run {i}: claude exited {row['rc']}")
            if i:
                rows[setup].append(row)
            print(
                f"run {i} {setup:<9} wall {row['wall']:6.2f} s  first request "
                f"{row['first']:5.2f} s  events {row['events']}",
                flush=True,
            )
    med = {s: statistics.median(r["wall"] for r in rows[s]) for s in setups}
    first = {s: statistics.median(r["first"] for r in rows[s]) for s in setups}
    print(f"\nClaude Code session, median of {opts.runs} runs each (interleaved)")
    print(f"{'setup':<10} {'wall':>8} {'ratio':>7} {'first request':>14} {'vs plain':>9}")
    for s in setups:
        print(
            f"{s:<10} {med[s]:6.2f} s {med[s] / med['plain']:6.2f}x {first[s]:11.2f} s "
            f"{first[s] - first['plain']:+8.2f} s"
        )
    print("\nper hook call, hook_started -> hook_response on Claude Code's stream (median, ms):")
    for s in setups[1:]:
        for kind in ("command", "mcp_tool"):
            xs = [x for r in rows[s] for x in r["hooks"].get(kind, [])]
            if xs:
                print(f"  {s:<9} {kind:<9} {statistics.median(xs):7.1f} ms  ({len(xs)} calls)")
    stored = {s: sorted({r["events"] for r in rows[s]}) for s in ("command", "mcp_tool")}
    print(
        f"\nevents stored per session: command {stored['command']}, mcp_tool {stored['mcp_tool']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
