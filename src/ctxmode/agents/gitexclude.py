"""Keep an agent's per-machine project file out of git: a line in the clone's own
``.git/info/exclude`` (never the shared ``.gitignore``), written by install, removed by uninstall.

Only the files the agents mean for one machine (``specs.LOCAL_FILES``: Claude Code's and
Copilot CLI's ``settings.local.json``) are listed, and only when git does not already ignore
them. ctxmode's lines follow its marker comment, so uninstall takes out exactly those.
Standard library only.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

MARK = "# ctxmode install: this machine's agent settings (absolute interpreter paths)"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None


def exclude_file(root: Path) -> Path | None:
    """The clone's ``info/exclude`` (worktrees included); None unless ``root`` is the top
    folder of a git repository."""
    done = _git(root, "rev-parse", "--show-toplevel", "--git-path", "info/exclude")
    lines = done.stdout.splitlines() if done is not None and done.returncode == 0 else []
    if len(lines) != 2 or os.path.realpath(lines[0]) != os.path.realpath(root):
        return None
    path = Path(lines[1])
    return path if path.is_absolute() else root / path


def _line(rel: str) -> str:
    return "/" + rel


def _ours(lines: list[str], rel: str) -> int | None:
    """Index of ctxmode's line for ``rel`` (right after the marker), if present."""
    for i, line in enumerate(lines[:-1]):
        if line == MARK and lines[i + 1] == _line(rel):
            return i
    return None


def listed(text: str | None, rel: str) -> bool:
    """Whether ctxmode's line for ``rel`` is in the exclude file's ``text``."""
    return _ours((text or "").splitlines(), rel) is not None


def plan(root: Path, rel: str, old: str | None, *, uninstall: bool) -> str | None:
    """The new text of the exclude file (``old``: its current text) listing ``rel``, or
    without ctxmode's line for it; ``old`` when nothing changes."""
    lines = (old or "").splitlines()
    at = _ours(lines, rel)
    if uninstall:
        if at is None:
            return old
        rest = lines[:at] + lines[at + 2 :]
        return "\n".join(rest) + "\n" if rest else ""
    if at is not None:
        return old
    done = _git(root, "check-ignore", "-q", "--no-index", rel)
    if done is not None and done.returncode == 0:
        return old  # already ignored (.gitignore, a global excludes file ...)
    text = old or ""
    if text and not text.endswith("\n"):
        text += "\n"
    return text + f"{MARK}\n{_line(rel)}\n"
