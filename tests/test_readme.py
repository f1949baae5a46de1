"""The README's first session (English and Chinese) runs as printed, output for output."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import CTXMODE, REPO

#: Minute-precision times differ from the day the README was written.
_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")


def _session(readme: Path, heading: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of the console block under ``heading``."""
    text = readme.read_text(encoding="utf-8")
    block = text.split(heading, 1)[1].split("```console\n", 1)[1].split("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


@pytest.mark.parametrize(
    ("name", "heading"), [("README.md", "## A first session"), ("README.zh-CN.md", "## 第一次使用")]
)
def test_the_first_session_runs_as_printed(bare_project: Path, name: str, heading: str) -> None:
    assert CTXMODE
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    init = subprocess.run([CTXMODE, "init"], cwd=bare_project, capture_output=True, env=env)
    assert init.returncode == 0
    for command, expected in _session(REPO / name, heading):
        argv = shlex.split(command)
        assert argv[0] == "ctxmode", command
        done = subprocess.run(
            [CTXMODE, *argv[1:]], cwd=bare_project, capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, (command, done.stderr)
        got = [_TIME.sub("T", line) for line in (done.stdout + done.stderr).splitlines()]
        assert got == [_TIME.sub("T", line) for line in expected], command
