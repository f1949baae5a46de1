"""Sandbox limits (issue 28): no process the code starts outlives the call, a ``setsid`` or
double-forked one included; memory is capped and the result says when the cap ended a run;
a timeout that is not a finite positive number of seconds within the limit is refused."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import run_cli

linux = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="child subreapers are Linux only (see docs)"
)


def _running(marker: str) -> list[int]:
    """Pids whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(name))
    return found


def _escapers(seconds: str) -> str:
    """Shell code leaving a ``setsid`` child, a double-forked one and a plain background one."""
    return (
        f"setsid sleep {seconds} >/dev/null 2>&1 </dev/null &\n"
        f"(setsid sh -c 'sleep {seconds}1 & exit' &)\n"
        f"nohup sleep {seconds}2 >/dev/null 2>&1 &\n"
        "sleep 0.3; echo started\n"
    )


@pytest.fixture
def marker() -> str:
    # A sleep duration nobody else uses: the processes' command lines carry it.
    return f"300.{uuid.uuid4().int % 10**8:08d}"


@linux
def test_no_descendant_outlives_a_finished_run(project: Path, marker: str) -> None:
    proc = run_cli("exec", "shell", _escapers(marker), cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "started" in proc.stdout
    time.sleep(0.2)
    assert _running(marker) == []


@linux
def test_no_descendant_outlives_a_timed_out_run(project: Path, marker: str) -> None:
    code = _escapers(marker) + "sleep 30\n"
    started = time.monotonic()
    proc = run_cli("exec", "shell", code, "--timeout", "2", cwd=project)
    assert time.monotonic() - started < 15
    assert "timed out" in proc.stdout + proc.stderr
    time.sleep(0.2)
    assert _running(marker) == []


@linux
def test_memory_is_capped_and_the_result_says_so(project: Path) -> None:
    code = "data = bytearray(8 * 1024**3)\nprint(len(data))\n"
    proc = run_cli("exec", "python", code, cwd=project)
    out = proc.stdout + proc.stderr
    assert "MemoryError" in out
    assert "ran out of memory" in out and "capped at" in out
    small = run_cli("exec", "python", "print(len(bytearray(50 * 1024**2)))", cwd=project)
    assert small.returncode == 0 and "52428800" in small.stdout
    assert "out of memory" not in small.stdout


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "1e9", "601"])
def test_bad_timeouts_are_refused(project: Path, value: str) -> None:
    started = time.monotonic()
    proc = run_cli("exec", "shell", "sleep 5; echo done", "--timeout", value, cwd=project)
    assert proc.returncode == 1
    assert "timeout" in proc.stderr and "done" not in proc.stdout
    assert time.monotonic() - started < 4


@linux
def test_exit_codes_and_signals_come_through_the_reaper(project: Path) -> None:
    three = run_cli("exec", "shell", "exit 3", cwd=project)
    assert three.returncode == 3 and "[exit code 3]" in three.stderr
    killed = run_cli("exec", "shell", "kill -KILL $$", cwd=project)
    assert killed.returncode != 0 and "exit code -9" in killed.stderr
