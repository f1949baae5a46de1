"""The benchmark scripts still run (tiny sizes, no network): figures are only claimed from them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize(
    ("script", "args", "expect"),
    [
        ("knowledge.py", ["--contexts", "2000", "--samples", "5"], "write_context"),
        ("resume.py", [], "2 KB: P1"),
        ("hooks.py", ["--no-context-mode", "--runs", "3"], "post-tool-use"),
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
