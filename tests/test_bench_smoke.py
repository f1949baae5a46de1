"""The benchmark scripts still run (tiny sizes, no network): figures are only claimed from them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("script", "args", "expect"),
    [
        ("knowledge.py", ["--contexts", "2000", "--samples", "5"], "write_context"),
        ("resume.py", ["-k", "cc-tasks", "--no-cm", "-j", "1"], "P1 recall"),
        ("hooks.py", ["--no-context-mode", "--runs", "3"], "post-tool-use"),
        ("cli.py", ["--runs", "2"], "all modules"),
        ("cmrc.py", ["--data", "/nonexistent/cmrc2018"], "skipped: "),
        ("team.py", ["--files", "50", "--runs", "3"], "freshness check"),
        ("history.py", ["--mb", "1", "--runs", "1"], "history import"),
        (
            "chunking.py",
            ["--root", str(BENCH.parent / "docs"), "--baseline-src", str(BENCH.parent / "src")],
            "speed-up:",
        ),
        (
            "redact.py",
            ["--root", str(BENCH.parent / "tests" / "fixtures"), "--runs", "1", "--passes", "1"]
            + ["--baseline-src", str(BENCH.parent / "src")],
            "outputs identical: yes",
        ),
    ],
)
def test_bench_script_runs(script: str, args: list[str], expect: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expect in proc.stdout


@pytest.mark.skipif(
    not (BENCH.parent.parent / "shared" / "bench-data" / "cmrc2018").is_dir(),
    reason="CMRC 2018 data not found in ../shared/bench-data",
)
def test_cmrc_bench_prints_every_system() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "cmrc.py"), "--paragraphs", "20", "--limit", "30"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ctxmode Store.search" in proc.stdout and "char-bigram BM25" in proc.stdout


def test_search_bench_runs_both_ctxmode_servers(tmp_path: Path) -> None:
    """bench/search.py without context-mode: ctxmode as shipped and with its warm-up off."""
    data = BENCH.parent.parent / "shared" / "bench-data" / "locomo" / "locomo10.json"
    if not data.exists():
        pytest.skip(f"{data} not found: the LoCoMo data lives in ../shared/bench-data")
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "search.py"),
            *("--queries", "10", "--no-install", "--cm-dir", str(tmp_path / "none")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    ours = next(line for line in lines if line.startswith("ctxmode "))
    cold = next(line for line in lines if "no warm-up :" in line)
    assert ours.split("median")[0].split("R@5")[1] == cold.split("median")[0].split("R@5")[1]
    assert "context-mode : not measured" in proc.stdout


def test_locomo_bench_prints_turn_and_session_level_figures() -> None:
    """bench/locomo.py on one conversation: turn-level tables and the whole-corpus session level."""
    data = BENCH.parent.parent / "shared" / "bench-data" / "locomo" / "locomo10.json"
    if not data.exists():
        pytest.skip(f"{data} not found: the LoCoMo data lives in ../shared/bench-data")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "locomo.py"), "--convs", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("session level, whole corpus ("))
    overall = next(line for line in lines[at:] if line.strip().startswith("overall"))
    n, *figures = overall.split()[1:]
    assert int(n) > 100  # conversation 0 alone: 152 questions with evidence in categories 1-4
    assert all(0.0 <= float(f) <= 1.0 for f in figures)
    assert float(figures[1]) > 0.5  # session-level R@5 of a working search
    every = next(line for line in lines if "all five categories" in line)
    assert "n=" in every and "R@5" in every


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_agent_bench_times_the_in_agent_hook_path() -> None:
    """bench/agent.py, one counted run: plain vs in-agent hooks in the real Claude Code."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "agent.py"), "--runs", "1", "--setups", "in-agent"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode == 0 and "skipped: " in proc.stdout:
        pytest.skip(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "claude exited" not in proc.stdout and "hooks.log" not in proc.stdout, proc.stdout
    lines = proc.stdout.splitlines()
    assert any(line.startswith("in-agent ") and "x " in line for line in lines)
    timed = next(line for line in lines if line.split()[:2] == ["in-agent", "mcp_tool"])
    assert float(timed.split()[2]) > 0
    stored = next(line for line in lines if line.startswith("events stored per session:"))
    assert "in-agent [0]" not in stored and "in-agent [" in stored
