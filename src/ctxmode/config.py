"""Paths, environment and limits: the one place that reads environment variables.

Project root = the enclosing git work tree of a directory (the nearest ancestor holding a
``.git`` entry, file or folder, so each git worktree is its own project), else the directory
itself. The store lives at ``<root>/.context/context.db`` unless ``CTXMODE_DB`` or an explicit
path says otherwise. Per-project settings come from ``<root>/.context/config.toml``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

CONTEXT_DIR = ".context"
DB_NAME = "context.db"
CONFIG_NAME = "config.toml"
LOG_NAME = "hooks.log"

#: Environment variables ctxmode honours.
ENV_DB = "CTXMODE_DB"
ENV_DISABLE = "CTXMODE_DISABLE"
#: Set by Claude Code for the hooks and MCP servers it spawns: the project the agent works in.
ENV_CLAUDE_PROJECT_DIR = "CLAUDE_PROJECT_DIR"

#: SQLite waits this long for a competing writer before reporting "locked".
BUSY_TIMEOUT_MS = 5000
#: Attempts (with exponential backoff) for a write that still finds the database locked.
LOCKED_RETRIES = 6
LOCKED_BACKOFF_S = 0.05

#: Largest context body accepted, in characters.
MAX_CONTENT_CHARS = 100_000


class Settings(NamedTuple):
    """Tunable behaviour; defaults here, overrides in ``.context/config.toml``."""

    snippet_days: int = 90
    reference_days: int = 30
    snapshot_bytes: int = 2048
    startup_brief: bool = True
    max_session_events: int = 2000
    disabled: bool = False
    allow_outside_paths: tuple[str, ...] = ()
    window_tokens: int = 200_000


def find_project_root(start: Path | None = None) -> Path:
    """Return the enclosing git work tree of ``start`` (default: cwd), else ``start``."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return here


def default_db_path(root: Path) -> Path:
    """The store path for a project root."""
    return root / CONTEXT_DIR / DB_NAME


def resolve_db_path(
    explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None
) -> Path:
    """Explicit path, else ``$CTXMODE_DB``, else the default under the project root of ``cwd``."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get(ENV_DB)
    if env:
        return Path(env).expanduser().resolve()
    return default_db_path(find_project_root(cwd))


def root_for_db(db_path: Path) -> Path:
    """Default project root of a store file: the parent of ``.context``, else its folder."""
    parent = db_path.resolve().parent
    return parent.parent if parent.name == CONTEXT_DIR else parent


def claude_project_dir() -> Path | None:
    """``$CLAUDE_PROJECT_DIR`` as a path when set (the agent's project), else None."""
    value = os.environ.get(ENV_CLAUDE_PROJECT_DIR, "").strip()
    return Path(value).expanduser() if value else None


def is_disabled() -> bool:
    """``CTXMODE_DISABLE=1`` (or true/yes) turns every hook into a no-op."""
    return os.environ.get(ENV_DISABLE, "").strip().lower() in {"1", "true", "yes", "on"}


def load_settings(root: Path) -> Settings:
    """Settings for a project; a missing or unreadable config file gives the defaults."""
    path = root / CONTEXT_DIR / CONFIG_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return Settings()
    import tomllib  # only when a config file exists: hooks start faster without it

    try:
        raw: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return Settings()
    known = set(Settings._fields)
    updates: dict[str, Any] = {}
    defaults = Settings()
    for key, value in raw.items():
        if key not in known:
            continue
        current = getattr(defaults, key)
        if isinstance(current, bool):
            if isinstance(value, bool):
                updates[key] = value
        elif isinstance(current, int):
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                updates[key] = value
        elif isinstance(current, tuple) and isinstance(value, list):
            updates[key] = tuple(str(v) for v in value)
    return defaults._replace(**updates)


def home_dir() -> Path:
    """The user's home folder ($HOME, else the OS's answer): where agents keep user-scope config."""
    home = os.environ.get("HOME")
    return Path(home) if home else Path.home()
