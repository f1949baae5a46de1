"""The one installer of the external tools the tests run (agent CLIs, the MCP Inspector), and
its one cache folder.

Each package is installed from npm at a pinned version into its own folder of the cache,
``$CTXMODE_E2E_CACHE`` or ``~/.cache/ctxmode-e2e`` of the user running the tests (found from the
user database: the tests point ``$HOME`` at a temporary folder). An install that failed leaves
nothing behind. Without npm, or when the registry cannot be reached, the test skips saying why;
``CTXMODE_E2E_REQUIRED=1`` (set by ``.ci/run``) makes that a failure instead.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

CACHE = Path(
    os.environ.get("CTXMODE_E2E_CACHE")
    or Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "ctxmode-e2e"
)


def unavailable(reason: str) -> NoReturn:
    """Skip (or, on CI, fail) a test whose external tool cannot be had."""
    if os.environ.get("CTXMODE_E2E_REQUIRED") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def npm_env() -> dict[str, str]:
    """The environment for npm and the tools it installed: npm's own cache inside ours."""
    return {
        **os.environ,
        "npm_config_cache": str(CACHE / "npm-cache"),
        "npm_config_update_notifier": "false",
    }


def npm_tool(name: str, package: str, version: str, rel: str, *, scripts: bool = True) -> Path:
    """``CACHE/<name>-<version>/<rel>``, installing ``package@version`` there on first use.

    ``scripts=False`` installs with ``--ignore-scripts`` (a postinstall that writes into the real
    HOME, say)."""
    folder = CACHE / f"{name}-{version}"
    exe = folder / rel
    if exe.exists():
        return exe
    npm = shutil.which("npm")
    if npm is None:
        unavailable(f"npm not found: cannot install {package}@{version}")
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists():
            return exe
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        proc = subprocess.run(
            [npm, "install", "--prefix", str(partial), "--no-audit", "--no-fund",
             "--loglevel=error", *([] if scripts else ["--ignore-scripts"]),
             f"{package}@{version}"],
            capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL, env=npm_env(),
        )  # fmt: skip
        if proc.returncode or not (partial / rel).exists():
            shutil.rmtree(partial, ignore_errors=True)
            tail = " ".join((proc.stderr or proc.stdout).split())[-400:]
            unavailable(f"npm install {package}@{version} failed (rc {proc.returncode}): {tail}")
        partial.rename(folder)
    return exe
