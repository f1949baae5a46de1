"""The eval task file: ``[[task]]`` tables in TOML, checked field by field before any work.

    [[task]]
    name = "token-lifetime"                    # unique; letters, digits, . _ -
    prompt = "Shorten the access token lifetime to 2 hours"
    setup = ["git checkout -q main"]           # optional shell commands, run in the copy first
    check = "python -m pytest -q tests/test_tokens.py"   # exit status 0 = passed
    history = "sessions/auth.jsonl"            # optional ctxmode export for the with-arm store
    timeout_s = 600                            # optional, for the agent (and each command)

Relative ``history`` paths are relative to the task file. Every problem in the file is
reported at once, one line per field, so a long file is fixed in one pass.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxmode.core.errors import InvalidInput

__all__ = ["DEFAULT_TIMEOUT_S", "MAX_TIMEOUT_S", "Task", "load_tasks", "parse_tasks"]

DEFAULT_TIMEOUT_S = 600
MAX_TIMEOUT_S = 24 * 3600
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_FIELDS = {"name", "prompt", "setup", "check", "history", "timeout_s"}


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    check: str
    setup: tuple[str, ...] = ()
    history: Path | None = None
    timeout_s: int = DEFAULT_TIMEOUT_S

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "prompt": self.prompt,
            "check": self.check,
            "setup": list(self.setup),
            "history": str(self.history) if self.history else None,
            "timeout_s": self.timeout_s,
        }


def load_tasks(path: Path) -> list[Task]:
    """Read and check ``path``; ``InvalidInput`` listing every problem found."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"task file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read task file {path}: {exc}") from None
    return parse_tasks(text, base=path.parent, source=str(path))


def _str_field(table: dict[str, Any], key: str, where: str, problems: list[str]) -> str:
    value = table.get(key)
    if value is None:
        problems.append(f"{where}: {key} is missing")
        return ""
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{where}: {key} must be a non-empty string")
        return ""
    return value


def _setup(table: dict[str, Any], where: str, problems: list[str]) -> tuple[str, ...]:
    value = table.get("setup", [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        problems.append(f"{where}: setup must be a list of shell commands (strings)")
        return ()
    return tuple(value)


def _timeout(table: dict[str, Any], where: str, problems: list[str]) -> int:
    value = table.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.append(f"{where}: timeout_s must be a number of seconds")
        return DEFAULT_TIMEOUT_S
    if not 1 <= value <= MAX_TIMEOUT_S:
        problems.append(f"{where}: timeout_s must be between 1 and {MAX_TIMEOUT_S} seconds")
        return DEFAULT_TIMEOUT_S
    return int(value)


def _history(table: dict[str, Any], base: Path, where: str, problems: list[str]) -> Path | None:
    value = table.get("history")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{where}: history must be the path of a ctxmode export (.jsonl)")
        return None
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        problems.append(f"{where}: history file {path} does not exist")
        return None
    return path.absolute()


def parse_tasks(text: str, *, base: Path, source: str = "task file") -> list[Task]:
    """Parse TOML text into tasks; ``base`` resolves relative ``history`` paths."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{source} is not valid TOML: {exc}") from None
    problems = [f"{source}: unknown top-level key {k!r}" for k in doc if k != "task"]
    tables = doc.get("task")
    if not isinstance(tables, list) or not tables:
        problems.append(f"{source}: no [[task]] tables (each task is a [[task]] table)")
        raise InvalidInput("\n".join(problems))
    tasks: list[Task] = []
    seen: set[str] = set()
    for i, table in enumerate(tables, 1):
        if not isinstance(table, dict):
            problems.append(f"{source}: task {i} must be a [[task]] table")
            continue
        raw_name = table.get("name")
        where = f"{source}: task {i}" + (f" ({raw_name})" if isinstance(raw_name, str) else "")
        problems += [f"{where}: unknown field {k!r}" for k in sorted(set(table) - _FIELDS)]
        name = _str_field(table, "name", where, problems)
        if name and not _NAME.match(name):
            problems.append(
                f"{where}: name must be 1-80 letters, digits, '.', '_' or '-' (it names folders)"
            )
        elif name in seen:
            problems.append(f"{where}: name {name!r} is used by an earlier task")
        seen.add(name)
        task = Task(
            name=name,
            prompt=_str_field(table, "prompt", where, problems),
            check=_str_field(table, "check", where, problems),
            setup=_setup(table, where, problems),
            history=_history(table, base, where, problems),
            timeout_s=_timeout(table, where, problems),
        )
        tasks.append(task)
    if problems:
        raise InvalidInput("\n".join(problems))
    return tasks
