"""Paths, environment and limits: the one place that reads environment variables.

Project root = the enclosing git work tree of a directory (the nearest ancestor holding a
``.git`` entry, file or folder, so each git worktree is its own project), else the directory
itself. The store lives at ``<root>/.context/context.db`` unless ``CTXMODE_DB`` or an explicit
path says otherwise. Per-project settings come from ``<root>/.context/config.toml``.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, NamedTuple
else:
    from ctxmode.core._lean import NamedTuple

CONTEXT_DIR = ".context"
#: The committed folder of team knowledge, under ``CONTEXT_DIR`` (see ``exchange.team``).
SHARED_DIR = "shared"
DB_NAME = "context.db"
CONFIG_NAME = "config.toml"
LOG_NAME = "hooks.log"

#: Environment variables ctxmode honours.
ENV_DB = "CTXMODE_DB"
ENV_DISABLE = "CTXMODE_DISABLE"
#: ``0`` (or false/no/off) stops the MCP server from analysing searched items ahead.
ENV_SEARCH_WARMUP = "CTXMODE_SEARCH_WARMUP"
#: Set by Claude Code for the hooks and MCP servers it spawns: the project the agent works in.
ENV_CLAUDE_PROJECT_DIR = "CLAUDE_PROJECT_DIR"
#: The Claude Code executable ``ctxmode install claude-code`` checks (else ``claude`` on PATH).
ENV_CLAUDE_EXECUTABLE = "CTXMODE_CLAUDE"
#: Largest damaged store a hook repairs itself (bytes; default ``HOOK_REPAIR_MAX_BYTES``):
#: a larger one is repaired by a ``ctxmode doctor --repair`` the hook starts in the background.
ENV_HOOK_REPAIR_MAX_BYTES = "CTXMODE_HOOK_REPAIR_MAX_BYTES"

#: SQLite waits this long for a competing writer before reporting "locked".
BUSY_TIMEOUT_MS = 5000
#: Attempts (with exponential backoff) for a write that still finds the database locked.
LOCKED_RETRIES = 6
LOCKED_BACKOFF_S = 0.05

#: Largest context body accepted, in characters.
MAX_CONTENT_CHARS = 100_000
#: The most hits one search returns; the least characters a search may budget.
SEARCH_MAX_LIMIT = 100
SEARCH_MIN_BUDGET = 200
#: Longest a sandboxed run may be given (seconds).
SANDBOX_MAX_TIMEOUT_S = 600.0
#: Days after its session ended that an event is kept (``ctxmode gc``).
EVENT_RETENTION_DAYS = 90
#: How long a fetched page is reused before it is fetched again (seconds; ``search.fetch``).
FETCH_TTL_S = 24 * 3600
#: The agents whose past sessions ``history import`` reads, in the order it reads them.
HISTORY_AGENTS: tuple[str, ...] = (
    "claude-code", "codex", "gemini-cli", "opencode", "qwen-code", "copilot-cli",
)  # fmt: skip

#: SQLite's INTEGER range: a number outside it cannot be stored, nor even bound to a query
#: (``OverflowError``), so ids, times and limits are checked or clamped against it.
SQLITE_INT_MIN, SQLITE_INT_MAX = -(2**63), 2**63 - 1


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
    #: Knowledge linked to a file, injected before the agent first edits it.
    file_knowledge: bool = True
    #: Largest such injection, fence included (UTF-8 bytes).
    file_knowledge_bytes: int = 600


def find_root(start: str | os.PathLike[str] | None = None) -> str:
    """The nearest folder at or above ``start`` (default: cwd) that is a git work tree or
    already holds a store (``.context/context.db``: a project without git that ran ``init``),
    else ``start``, resolved.

    ``os.path`` rather than pathlib: the hook path must not import pathlib (see ``_lean``).
    """
    if start is None:
        try:
            start = os.getcwd()
        except FileNotFoundError:
            from ctxmode.core.errors import InvalidInput

            raise InvalidInput(
                "the current directory no longer exists (deleted or moved)", hint="choose_store"
            ) from None
    here = os.path.realpath(start)
    candidate = here
    while True:
        if os.path.exists(os.path.join(candidate, ".git")) or os.path.exists(
            os.path.join(candidate, CONTEXT_DIR, DB_NAME)
        ):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return here
        candidate = parent


def find_project_root(start: Path | None = None) -> Path:
    """Return the enclosing git work tree of ``start`` (default: cwd), else ``start``."""
    from pathlib import Path

    return Path(find_root(start))


#: See ``ENV_HOOK_REPAIR_MAX_BYTES``: a larger copy would take a hook past its timeout.
HOOK_REPAIR_MAX_BYTES = 64 * 1024 * 1024


def hook_repair_max_bytes() -> int:
    """The largest damaged store a hook repairs itself (``ENV_HOOK_REPAIR_MAX_BYTES``)."""
    value = os.environ.get(ENV_HOOK_REPAIR_MAX_BYTES, "").strip()
    try:
        return int(value) if value else HOOK_REPAIR_MAX_BYTES
    except ValueError:
        return HOOK_REPAIR_MAX_BYTES


def repair_marker_for(db_path: str | os.PathLike[str]) -> str:
    """The file that says a repair of the store at ``db_path`` is under way
    (``core.repair.repair``): while it names a live process, hooks keep their calls in the
    spool."""
    return f"{os.fspath(db_path)}.repair"


def spool_dir_for(db_path: str | os.PathLike[str]) -> str:
    """Where hooks keep their calls while the store at ``db_path`` is locked
    (``ctxmode.sessions.spool``), next to the store file."""
    return f"{os.fspath(db_path)}.spool"


def shared_dir_for(root: str | os.PathLike[str]) -> str:
    """The folder of team knowledge files of the project at ``root``."""
    return os.path.join(root, CONTEXT_DIR, SHARED_DIR)


#: A folder changed less than this long ago may change again within the same timestamp tick
#: (file times are coarse), so its fingerprint is not trusted yet (git's "racy" rule).
RACY_NS = 2_000_000_000


def folder_fingerprint(path: str, now_ns: int | None = None) -> str:
    """One ``stat`` of ``path`` as a string that moves when an entry is added, removed or
    replaced (git writes a changed file as a new one): ``absent`` when there is no folder,
    ``racy:...`` (never equal to a stored one) when it changed too recently to be trusted."""
    try:
        st = os.stat(path)
    except OSError:
        return "absent"
    stamp = f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    now = time.time_ns() if now_ns is None else now_ns
    return f"racy:{stamp}" if now - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS else stamp


def db_path_for(root: str | os.PathLike[str]) -> str:
    """``$CTXMODE_DB`` (expanded, resolved), else the default store path under ``root``."""
    env = os.environ.get(ENV_DB)
    if env:
        return os.path.realpath(os.path.expanduser(env))
    return os.path.join(root, CONTEXT_DIR, DB_NAME)


def default_db_path(root: Path) -> Path:
    """The store path for a project root."""
    return root / CONTEXT_DIR / DB_NAME


def resolve_db_path(
    explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None
) -> Path:
    """Explicit path, else ``$CTXMODE_DB``, else the default under the project root of ``cwd``."""
    from pathlib import Path

    if explicit:
        return Path(explicit).expanduser().resolve()
    return Path(db_path_for(find_root(cwd)))


def root_dir_for_db(db_path: str | os.PathLike[str]) -> str:
    """Default project root of a store file: the parent of ``.context``, else its folder."""
    parent = os.path.dirname(os.path.realpath(db_path))
    return os.path.dirname(parent) if os.path.basename(parent) == CONTEXT_DIR else parent


def root_for_db(db_path: Path) -> Path:
    """Default project root of a store file: the parent of ``.context``, else its folder."""
    from pathlib import Path

    return Path(root_dir_for_db(db_path))


def claude_project_dir() -> Path | None:
    """``$CLAUDE_PROJECT_DIR`` as a path when set (the agent's project), else None."""
    from pathlib import Path

    value = os.environ.get(ENV_CLAUDE_PROJECT_DIR, "").strip()
    return Path(value).expanduser() if value else None


def claude_executable() -> str | None:
    """``$CTXMODE_CLAUDE``: the Claude Code the installer checks, when not the one on PATH."""
    value = os.environ.get(ENV_CLAUDE_EXECUTABLE, "").strip()
    return os.path.expanduser(value) if value else None


def is_disabled() -> bool:
    """``CTXMODE_DISABLE=1`` (or true/yes) turns every hook into a no-op."""
    return os.environ.get(ENV_DISABLE, "").strip().lower() in {"1", "true", "yes", "on"}


#: Worker processes that prepare files for ``ctxmode index`` (``search.prepare``): a number,
#: 0 for none; unset: one per core but one, at most ``MAX_INDEX_WORKERS``, and only for a
#: large folder.
ENV_INDEX_WORKERS = "CTXMODE_INDEX_WORKERS"
MAX_INDEX_WORKERS = 4


def index_workers() -> tuple[int, bool]:
    """(worker processes for indexing, whether the user set that number)."""
    value = os.environ.get(ENV_INDEX_WORKERS, "").strip()
    if value.isdigit():
        return min(int(value), 32), True
    return max(0, min(MAX_INDEX_WORKERS, (os.cpu_count() or 1) - 1)), False


def search_warmup_enabled() -> bool:
    """Whether the MCP server analyses searched items ahead in idle moments (on unless
    ``CTXMODE_SEARCH_WARMUP=0``): it costs CPU once per item and cache memory (bounded by the
    search cache's caps), and makes later searches of them faster."""
    return os.environ.get(ENV_SEARCH_WARMUP, "").strip().lower() not in {"0", "false", "no", "off"}


def load_settings(root: str | os.PathLike[str]) -> Settings:
    """Settings for a project; a missing or unreadable config file gives the defaults."""
    try:
        with open(os.path.join(root, CONTEXT_DIR, CONFIG_NAME), encoding="utf-8") as handle:
            text = handle.read()
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
    from pathlib import Path

    home = os.environ.get("HOME")
    return Path(home) if home else Path.home()


def codex_home(home: Path | None = None) -> Path:
    """Codex's own folder ($CODEX_HOME, else ``home``/.codex): where it keeps its trust."""
    from pathlib import Path

    value = os.environ.get("CODEX_HOME", "").strip()
    return Path(value) if value else (home or home_dir()) / ".codex"


def copilot_home(home: Path | None = None) -> Path:
    """GitHub Copilot CLI's own folder ($COPILOT_HOME, else ``home``/.copilot)."""
    from pathlib import Path

    value = os.environ.get("COPILOT_HOME", "").strip()
    return Path(value) if value else (home or home_dir()) / ".copilot"


def kimi_home(home: Path | None = None) -> Path:
    """Kimi Code's own folder ($KIMI_CODE_HOME, else ``home``/.kimi-code)."""
    from pathlib import Path

    value = os.environ.get("KIMI_CODE_HOME", "").strip()
    return Path(value) if value else (home or home_dir()) / ".kimi-code"


def qwen_runtime_dir(home: Path | None = None) -> Path:
    """Where Qwen Code keeps its sessions (``projects/<folder>/chats``): $QWEN_RUNTIME_DIR,
    else $QWEN_HOME, else ``home``/.qwen."""
    from pathlib import Path

    for name in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        value = os.environ.get(name, "").strip()
        if value:
            return Path(value).expanduser()
    return (home or home_dir()) / ".qwen"


def gemini_home(home: Path | None = None) -> Path:
    """The folder holding Gemini CLI's ``.gemini/`` user folder: $GEMINI_CLI_HOME, else ``home``."""
    from pathlib import Path

    value = os.environ.get("GEMINI_CLI_HOME", "").strip()
    return Path(value) if value else (home or home_dir())


def gemini_trusted_folders(home: Path | None = None) -> Path:
    """Gemini CLI's folder trust file: $GEMINI_CLI_TRUSTED_FOLDERS_PATH, else
    ``.gemini/trustedFolders.json`` in ``gemini_home``."""
    from pathlib import Path

    value = os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH", "").strip()
    return Path(value) if value else gemini_home(home) / ".gemini" / "trustedFolders.json"


def gemini_system_settings() -> tuple[Path, Path]:
    """Gemini CLI's system settings and system defaults files (both override-able by env)."""
    import sys
    from pathlib import Path

    value = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "").strip()
    if value:
        system = Path(value)
    elif sys.platform == "darwin":
        system = Path("/Library/Application Support/GeminiCli/settings.json")
    elif sys.platform == "win32":
        system = Path("C:\\ProgramData\\gemini-cli\\settings.json")
    else:
        system = Path("/etc/gemini-cli/settings.json")
    defaults = os.environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "").strip()
    return system, Path(defaults) if defaults else system.parent / "system-defaults.json"


def claude_config_dir(home: Path | None = None) -> Path:
    """Claude Code's user folder ($CLAUDE_CONFIG_DIR, else ``home``/.claude): its transcripts
    are under ``projects/``."""
    from pathlib import Path

    value = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(value) if value else (home or home_dir()) / ".claude"


def opencode_data_dir(home: Path | None = None) -> Path:
    """OpenCode's data folder ($XDG_DATA_HOME/opencode, else ``home``/.local/share/opencode):
    where its ``opencode.db`` keeps the sessions."""
    from pathlib import Path

    value = os.environ.get("XDG_DATA_HOME", "").strip()
    return (Path(value) if value else (home or home_dir()) / ".local" / "share") / "opencode"
