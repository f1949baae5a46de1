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
