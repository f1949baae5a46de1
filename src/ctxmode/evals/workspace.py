"""Scratch copies of the project, one per arm and run, that leave the user's checkout alone.

In a git work tree the copy is a ``git clone --shared --no-checkout`` (it borrows the objects,
writes nothing into the source repository, unlike ``git worktree add``), checked out at the
source's HEAD; then the uncommitted changes (``git diff --binary HEAD``, staged and not) are
applied and the untracked, not ignored files copied. Elsewhere the folder is copied as is.
Either way the copy holds no ``.context`` folder: each arm decides its own store.

The project's store is copied with SQLite's backup API from a read-only connection, so a
store in use by the user's agent is neither locked for long nor written.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

from ctxmode.core import config
from ctxmode.core.errors import InvalidInput

__all__ = ["copy_project", "copy_store", "is_git_repo", "remove_copy"]

_GIT_TIMEOUT_S = 300


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise InvalidInput("git is not installed; it is needed to copy a git project") from None
    except subprocess.TimeoutExpired:
        raise InvalidInput(f"git {args[0]} took over {_GIT_TIMEOUT_S} s in {cwd}") from None
    if done.returncode:
        err = done.stderr.decode("utf-8", "replace").strip()
        raise InvalidInput(f"git {' '.join(args[:2])} failed in {cwd}: {err}")
    return done.stdout


def is_git_repo(root: Path) -> bool:
    """Whether ``root`` is inside a git work tree that has at least one commit."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"],
            cwd=root,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _inside(path: Path, folders: tuple[Path, ...]) -> bool:
    return any(path.absolute().is_relative_to(f.absolute()) for f in folders)


def copy_project(root: Path, dest: Path, exclude: tuple[Path, ...] = ()) -> Path:
    """Copy ``root`` (HEAD plus uncommitted changes) to the new folder ``dest``.

    Untracked files inside ``exclude`` (the eval's own output folder, say) are left out.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    if is_git_repo(root):
        top = Path(_git(["rev-parse", "--show-toplevel"], root).decode().strip())
        head = _git(["rev-parse", "HEAD"], top).decode().strip()
        _git(["clone", "-q", "--shared", "--no-checkout", str(top), str(dest)], dest.parent)
        _git(["checkout", "-q", "--detach", head], dest)
        diff = _git(["diff", "--binary", "HEAD"], top)
        if diff.strip():
            _git(["apply", "--whitespace=nowarn", "-"], dest, stdin=diff)
        listing = _git(["ls-files", "--others", "--exclude-standard", "-z"], top)
        for rel in filter(None, listing.decode("utf-8", "surrogateescape").split("\0")):
            src, out = top / rel, dest / rel
            if _inside(src, exclude):
                continue
            if src.is_file() or src.is_symlink():
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, out, follow_symlinks=False)
    else:

        def ignore(folder: str, names: list[str]) -> set[str]:
            return {
                n for n in names if n == config.CONTEXT_DIR or _inside(Path(folder, n), exclude)
            }

        shutil.copytree(root, dest, symlinks=True, ignore=ignore)
    shutil.rmtree(dest / config.CONTEXT_DIR, ignore_errors=True)
    return dest


def copy_store(source: Path, dest: Path) -> bool:
    """Copy the store at ``source`` into ``dest`` (a new file); False when there is none."""
    if not source.is_file():
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"{source.absolute().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        out = sqlite3.connect(dest)
        try:
            src.backup(out)
        finally:
            out.close()
    except sqlite3.Error as exc:
        raise InvalidInput(f"cannot copy the project's store {source}: {exc}") from None
    finally:
        src.close()
    return True


def remove_copy(path: Path) -> None:
    """Delete a scratch copy (files git made read-only go too: their folders are ours)."""
    shutil.rmtree(path, ignore_errors=True)
