"""Benchmark: MCP server spawn -> initialize reply and a query call, ctxmode vs context-mode.

Both servers are spawned the same way (their interpreter + entry script, stdio pipes, a fresh
HOME and project folder), sent the same raw JSON-RPC: ``initialize``, ``notifications/
initialized``, ``tools/list``, one write (``write_context`` / ``ctx_index``) and one query
(``query_context`` / ``ctx_search``). Printed: medians over ``--runs`` spawns of spawn ->
initialize reply, of the first tool call (ctxmode answers everything from its registry, without
the SDK: the first call pays the tool bodies' imports, since the warm-up waits for a pause of
the client that this benchmark does not leave), of the query round trip
and the server's CPU time until then, and the ratios ctxmode / context-mode. Target:
initialize <= 1.0x. Then the in-agent hook path: ``record_hook`` round trips on one running
ctxmode server and its CPU time per call.

context-mode (npm ``context-mode``) is installed into ``~/.cache/ctxmode-bench/context-mode``
on first use. ``python -X importtime`` then shows what the handshake imports
(``ctxmode.mcp.front``) and what the tool calls load (``ctxmode.mcp.tools.*``); the SDK is
never imported by ``ctxmode serve`` (its server, ``ctxmode.mcp.sdk``, is the tests' oracle).

    .venv/bin/python bench/mcp.py [--runs 10] [--baseline OTHER_CHECKOUT/.venv/bin/ctxmode]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
CACHE = Path.home() / ".cache" / "ctxmode-bench"
CONTEXT_MODE_DIR = CACHE / "context-mode"
CONTEXT_MODE_ENTRY = CONTEXT_MODE_DIR / "node_modules" / "context-mode" / "cli.bundle.mjs"
TIMEOUT_S = 60.0
CONTENT = "Benchmarks compare medians measured in the same run, never stored figures."


def request(rid: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode() + b"\n"


INITIALIZE = request(
    1,
    "initialize",
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "ctxmode-bench", "version": "0"},
    },
)
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


def tool_call(rid: int, name: str, args: dict[str, Any]) -> bytes:
    return request(rid, "tools/call", {"name": name, "arguments": args})


class Server:
    """One spawned server speaking newline-delimited JSON-RPC over pipes."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.buf = b""

    def send(self, data: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        self.proc.stdin.flush()

    def reply(self, rid: int) -> dict[str, Any]:
        """Read messages until the response to ``rid`` (notifications are skipped)."""
        assert self.proc.stdout
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if not line.strip():
                    continue
                msg: dict[str, Any] = json.loads(line)
                if msg.get("id") == rid:
                    return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply to request {rid} within {TIMEOUT_S} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"server exited before replying to request {rid}")
                self.buf += chunk

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def one_run(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    write: tuple[str, dict[str, Any]],
    query: tuple[str, dict[str, Any]],
) -> tuple[float, float, float, float]:
    """(spawn -> initialize reply, first tool call, query round trip, the server's CPU time
    until then) in seconds."""
    start = time.perf_counter()
    server = Server(argv, env, cwd)
    try:
        server.send(INITIALIZE)
        init = server.reply(1)
        t_init = time.perf_counter() - start
        assert "result" in init, init
        server.send(INITIALIZED)
        server.send(request(9, "tools/list"))  # as agents do; ctxmode then warms its SDK server
        server.reply(9)
        t0 = time.perf_counter()
        server.send(tool_call(2, *write))
        wrote = server.reply(2)
        t_first = time.perf_counter() - t0
        assert not wrote["result"].get("isError"), wrote
        t0 = time.perf_counter()
        server.send(tool_call(3, *query))
        found = server.reply(3)
        t_query = time.perf_counter() - t0
        text = json.dumps(found["result"])
        assert not found["result"].get("isError") and "medians" in text, text[:500]
        cpu = cpu_seconds(server.proc.pid)
        return t_init, t_first, t_query, cpu if cpu is not None else float("nan")
    finally:
        server.close()


#: A Claude Code PostToolUse payload as the ``mcp_tool`` hook substitution delivers it.
HOOK_ARGUMENTS = {
    "event": "post-tool-use",
    "agent": "claude-code",
    "payload": {
        "hook_event_name": "PostToolUse",
        "session_id": "0b6c3f8e-4a8e-4d61-9a43-5f2f6f0c2a11",
        "tool_name": "Bash",
        "tool_use_id": "",
        "tool_input": json.dumps({"command": "git status", "description": "status"}),
        "tool_response": json.dumps({"stdout": "On branch main\nnothing to commit", "stderr": ""}),
        "duration_ms": "40",
    },
}


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of ``pid`` so far (Linux ``/proc``), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def record_hook_calls(
    env: dict[str, str], cwd: Path, calls: int, warm: int = 5
) -> tuple[list[float], float | None]:
    """Round trips of ``record_hook`` calls (the in-agent hook path) on one running server,
    and the server's CPU time per call after the first ``warm`` (None without ``/proc``)."""
    server = Server([str(VENV_BIN / "ctxmode"), "serve"], env, cwd)
    times = []
    cpu0: float | None = None
    try:
        server.send(INITIALIZE)
        server.reply(1)
        server.send(INITIALIZED)
        for i in range(calls):
            if i == warm:
                cpu0 = cpu_seconds(server.proc.pid)
            args = json.loads(json.dumps(HOOK_ARGUMENTS))
            args["payload"]["tool_use_id"] = f"toolu_{i}"  # a new call each time
            t0 = time.perf_counter()
            server.send(tool_call(100 + i, "record_hook", args))
            reply = server.reply(100 + i)
            times.append(time.perf_counter() - t0)
            assert "result" in reply and not reply["result"].get("isError"), reply
        cpu1 = cpu_seconds(server.proc.pid)
    finally:
        server.close()
    per_call = (cpu1 - cpu0) / (calls - warm) if cpu0 is not None and cpu1 is not None else None
    return times[warm:], per_call


def ensure_context_mode() -> Path | None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        print("context-mode: node/npm missing, baseline skipped")
        return None
    if not CONTEXT_MODE_ENTRY.exists():
        CONTEXT_MODE_DIR.mkdir(parents=True, exist_ok=True)
        print(f"installing context-mode into {CONTEXT_MODE_DIR} ...", flush=True)
        proc = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(CONTEXT_MODE_DIR),
                "--no-audit",
                "--no-fund",
                "context-mode",
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0 or not CONTEXT_MODE_ENTRY.exists():
            print(f"context-mode install failed, baseline skipped:\n{proc.stderr[-2000:]}")
            return None
    return CONTEXT_MODE_ENTRY


def importtime_report(module: str, top: int = 12) -> None:
    """Where importing ``module`` spends its time (``python -X importtime``)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4)))
    total = sum(r[0] for r in rows)
    by_package: dict[str, int] = defaultdict(int)
    for self_us, _cum, _depth, name in rows:
        by_package[name.split(".")[0]] += self_us
    print(f"\nimport {module}: {total / 1000:.0f} ms of imports (self times summed)")
    print("by top-level package (self time):")
    for name, us in sorted(by_package.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {name:<24} {us / 1000:7.0f} ms  {100 * us / total:4.1f} %")
    print("largest single modules (cumulative, incl. what they import):")
    for _self, cum, depth, name in sorted(rows, key=lambda r: -r[1])[:top]:
        print(f"  {name:<48} {cum / 1000:7.0f} ms  (depth {depth // 2})")


def phases_report() -> None:
    """The interpreter's start, the floor of any spawn -> initialize."""
    bare = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t0)
    print(f"python -c pass (interpreter start): {statistics.median(bare) * 1000:.0f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--baseline",
        metavar="CTXMODE",
        help="another ctxmode executable (an older checkout's venv) run interleaved as "
        "'baseline', with the ratios to it",
    )
    opts = parser.parse_args()
    if opts.runs < 10:
        parser.error("--runs must be at least 10")
    ctxmode = VENV_BIN / "ctxmode"
    entry = ensure_context_mode()
    results: dict[str, tuple[list[float], list[float], list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = root / "project"
        (project / ".git").mkdir(parents=True)
        home = root / "home"
        home.mkdir()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "CLAUDE_PROJECT_DIR": str(project),
        }
        servers: dict[str, tuple[list[str], tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]]
        servers = {
            "ctxmode": (
                [str(ctxmode), "serve"],
                ("write_context", {"type": "convention", "content": CONTENT}),
                ("query_context", {}),
            )
        }
        if opts.baseline:
            servers["baseline"] = ([opts.baseline, "serve"], *servers["ctxmode"][1:])
        if entry is not None:
            servers["context-mode"] = (
                [shutil.which("node") or "node", str(entry)],
                ("ctx_index", {"content": CONTENT, "source": "bench"}),
                ("ctx_search", {"queries": ["medians"]}),
            )
        # Warm-up (bytecode, page cache), then interleave the servers run by run so both see
        # the same machine state.
        for argv, write, query in servers.values():
            one_run(argv, env, project, write, query)
        for name in servers:
            results[name] = ([], [], [], [])
        for _ in range(opts.runs):
            for name, (argv, write, query) in servers.items():
                for column, value in zip(
                    results[name], one_run(argv, env, project, write, query), strict=True
                ):
                    column.append(value)
        hook_times, hook_cpu = record_hook_calls(env, project, 55)
    print(f"\nMCP server over stdio, median of {opts.runs} spawns (after one warm-up each)")
    print(
        f"{'server':<14} {'spawn->initialize':>18} {'first call':>12} {'query call':>12} "
        f"{'server CPU':>12}"
    )
    for name, (inits, firsts, queries, cpus) in results.items():
        init_ms, first_ms = statistics.median(inits) * 1000, statistics.median(firsts) * 1000
        query_ms, cpu_ms = statistics.median(queries) * 1000, statistics.median(cpus) * 1000
        print(
            f"{name:<14} {init_ms:15.0f} ms {first_ms:9.0f} ms {query_ms:9.1f} ms {cpu_ms:9.0f} ms"
        )
    for other in ("context-mode", "baseline"):
        if other not in results:
            continue
        ours, theirs = results["ctxmode"], results[other]
        init_ratio, first_ratio, query_ratio, cpu_ratio = (
            statistics.median(a) / statistics.median(b) for a, b in zip(ours, theirs, strict=True)
        )
        verdict = " (meets <= 1.0x)" if init_ratio <= 1.0 else " (MISSES <= 1.0x)"
        print(
            f"ratio ctxmode / {other}: initialize {init_ratio:.2f}x"
            f"{verdict if other == 'context-mode' else ''}, first call {first_ratio:.2f}x, "
            f"query {query_ratio:.2f}x, server CPU {cpu_ratio:.2f}x"
        )
    hook_ms = statistics.median(hook_times) * 1000
    cpu = f", server CPU {hook_cpu * 1000:.1f} ms per call" if hook_cpu is not None else ""
    print(
        f"in-agent hook (record_hook PostToolUse), median of {len(hook_times)} round trips: "
        f"{hook_ms:.1f} ms{cpu}"
    )
    importtime_report("ctxmode.mcp.front")
    importtime_report("ctxmode.mcp.tools.knowledge")
    phases_report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
