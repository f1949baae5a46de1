"""Where each agent keeps its past sessions, and which of them belong to this project.

A transcript belongs to the project when the working directory it records is the project
root or a folder inside it. A checkout that moved (its old folder gone, or a clone elsewhere)
is matched by git: by the remote the agent recorded (Codex records ``repository_url``), or,
when the recorded folder still exists as a git checkout, by its root commit. Claude Code,
Gemini CLI, OpenCode, Qwen Code and Copilot CLI record no remote: a moved checkout of theirs
whose old folder is gone cannot be told from another project, so it is not imported.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from ctxmode.core import config

#: The agents whose past sessions can be imported, in the order they are read.
AGENTS = config.HISTORY_AGENTS
#: Most of a transcript's start read to find the working directory it records (bytes).
PEEK_BYTES = 256 * 1024


@dataclass(frozen=True)
class Transcript:
    """One past session's file (OpenCode: its database, one row per session)."""

    agent: str
    path: Path
    size: int
    mtime_ns: int
    session_id: str | None
    cwd: str | None
    remote: str | None = None
    #: The key of the file's row in ``history_files`` (OpenCode: the database and session).
    key: str = ""
    #: Claude Code, Qwen Code: the name of the project's folder holding the transcript.
    slug: str | None = None

    def with_cwd(self, cwd: str | None, slug: str) -> Transcript:
        return replace(self, cwd=cwd, slug=slug)


@dataclass(frozen=True)
class Project:
    """What identifies this project: its folder and its git history."""

    root: str
    root_commits: frozenset[str]
    remotes: frozenset[str]


def project_identity(root: str) -> Project:
    """The project at ``root``: its real path, root commits and remotes (none outside git)."""
    real = os.path.realpath(root)
    return Project(real, _root_commits(real), _remotes(real))


def _git(folder: str, *args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", folder, *args], capture_output=True, text=True, timeout=10,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout if proc.returncode == 0 else ""


@functools.lru_cache(maxsize=256)
def _root_commits(folder: str) -> frozenset[str]:
    return frozenset(_git(folder, "rev-list", "--max-parents=0", "HEAD").split())


def _remotes(folder: str) -> frozenset[str]:
    urls = _git(folder, "config", "--get-regexp", r"^remote\..*\.url$").splitlines()
    return frozenset(normal_remote(line.split(None, 1)[1]) for line in urls if " " in line)


def normal_remote(url: str) -> str:
    """A remote URL without scheme, user, ``.git`` or case: ``git@github.com:o/r.git`` and
    ``https://github.com/O/r`` are the same repository."""
    text = url.strip().lower().removesuffix("/").removesuffix(".git")
    for scheme in ("https://", "http://", "ssh://", "git://", "git+ssh://"):
        text = text.removeprefix(scheme)
    text = text.split("@", 1)[-1]
    return text.replace(":", "/", 1) if "/" not in text.split(":", 1)[0] else text


def match(
    project: Project, cwd: str | None, remote: str | None, slug: str | None = None
) -> str | None:
    """How a transcript that records ``cwd`` (and ``remote``; Claude Code, Qwen Code: kept in
    folder ``slug``) belongs to the project: ``path``, ``remote`` or ``root commit``; None when it
    does not."""
    if (
        cwd is None
        and slug is not None
        and slug in (claude_slug(project.root), qwen_slug(project.root))
    ):
        return "path"
    if cwd:
        real = os.path.realpath(cwd)
        if real == project.root or real.startswith(project.root.rstrip(os.sep) + os.sep):
            return "path"
    if remote and project.remotes and normal_remote(remote) in project.remotes:
        return "remote"
    if (
        cwd
        and project.root_commits
        and os.path.isdir(cwd)
        and _root_commits(os.path.realpath(cwd)) & project.root_commits
    ):
        return "root commit"
    return None


# -- finding transcripts ---------------------------------------------------------------------


def find(agent: str, home: Path | None = None) -> list[Transcript]:
    """Every past session of ``agent`` on this machine, whatever its project (OpenCode's live
    in its database: ``history.opencode.sessions``, which ``importer.transcripts_of`` calls)."""
    if agent == "claude-code":
        return _claude_transcripts(config.claude_config_dir(home) / "projects")
    if agent == "codex":
        base = config.codex_home(home) / "sessions"
        return [_peeked(agent, p, _peek_codex) for p in _files(base, "*/*/*/rollout-*.jsonl")]
    if agent == "gemini-cli":
        base = config.gemini_home(home) / ".gemini" / "tmp"
        found = _files(base, "*/chats/*.jsonl") + _files(base, "*/chats/*.json")
        return [_peeked(agent, p, _peek_gemini) for p in found]
    if agent == "qwen-code":
        base = config.qwen_runtime_dir(home) / "projects"
        return [
            replace(_peeked(agent, p, _peek_claude), slug=p.parent.parent.name)
            for p in _files(base, "*/chats/*.jsonl")
        ]
    if agent == "copilot-cli":
        base = config.copilot_home(home) / "session-state"
        return [_peeked(agent, p, _peek_copilot) for p in _files(base, "*/events.jsonl")]
    raise ValueError(agent)


def claude_slug(folder: str) -> str:
    """The folder name Claude Code keeps a project's transcripts in (``/a/b.c`` -> ``-a-b-c``)."""
    return "".join(c if c.isalnum() else "-" for c in folder)


def qwen_slug(folder: str) -> str:
    """The folder name Qwen Code keeps a project's chats in (ASCII letters and digits kept)."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in folder)


def _claude_transcripts(base: Path) -> list[Transcript]:
    """Claude Code's transcripts, one folder per working directory: the folder's first
    transcript that records one gives it to all (one peek per folder, not per file); a
    folder where none does keeps its name, which ``match`` compares with the project's."""
    out: list[Transcript] = []
    try:
        folders = sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return out
    for folder in folders:
        files = _files(folder, "*.jsonl")
        cwd = None
        for path in files[:5]:
            peeked = _peeked("claude-code", path, _peek_claude)
            if peeked.cwd:
                cwd = peeked.cwd
                break
        for path in files:
            found = _peeked("claude-code", path, None)
            out.append(found.with_cwd(cwd, folder.name))
    return out


def _files(base: Path, pattern: str) -> list[Path]:
    try:
        return sorted(p for p in base.glob(pattern) if p.is_file())
    except OSError:
        return []


Peek = tuple[str | None, str | None, str | None]


def _peeked(agent: str, path: Path, peek: object) -> Transcript:
    try:
        stat = path.stat()
    except OSError:
        return Transcript(agent, path, 0, 0, None, None, key=str(path))
    if peek is None:
        return Transcript(agent, path, stat.st_size, stat.st_mtime_ns, None, None, None, str(path))
    try:
        head = _head(path)
        sid, cwd, remote = peek(path, head)  # type: ignore[operator]
    except (OSError, ValueError):
        sid = cwd = remote = None
    return Transcript(agent, path, stat.st_size, stat.st_mtime_ns, sid, cwd, remote, str(path))


def _head(path: Path) -> bytes:
    """The file's first lines: 16 KB, more (up to ``PEEK_BYTES``) until a whole line names
    the working directory."""
    with path.open("rb") as handle:
        head = handle.read(16 * 1024)
        while len(head) < PEEK_BYTES:
            at = head.find(b'"cwd"')
            if at != -1 and head.find(b"\n", at) != -1:
                break
            more = handle.read(len(head))
            if not more:
                break
            head += more
    return head


def _lines(head: bytes) -> list[dict[str, object]]:
    out = []
    for raw in head.split(b"\n"):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue  # the cut last line, or a bad one
        if isinstance(entry, dict):
            out.append(entry)
    return out


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _peek_claude(path: Path, head: bytes) -> Peek:
    sid = cwd = None
    for entry in _lines(head):
        sid = sid or _str(entry.get("sessionId"))
        cwd = cwd or _str(entry.get("cwd"))
        if sid and cwd:
            break
    return sid, cwd, None


def _peek_copilot(path: Path, head: bytes) -> Peek:
    """Copilot CLI: ``session.start`` names the session and its folder (``context.cwd``);
    ``workspace.yaml`` beside the events says the same."""
    for entry in _lines(head):
        data = entry.get("data")
        if entry.get("type") == "session.start" and isinstance(data, dict):
            context = data.get("context")
            cwd = _str(context.get("cwd")) if isinstance(context, dict) else None
            return _str(data.get("sessionId")) or path.parent.name, cwd, None
    return path.parent.name, _yaml_value(path.parent / "workspace.yaml", "cwd"), None


def _yaml_value(path: Path, key: str) -> str | None:
    """A top-level ``key: value`` of a small YAML file (plain or quoted scalars)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name == key:
            value = value.strip()
            if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return value or None
    return None


def _peek_codex(path: Path, head: bytes) -> Peek:
    for entry in _lines(head):
        payload = entry.get("payload")
        if entry.get("type") == "session_meta" and isinstance(payload, dict):
            git = payload.get("git")
            remote = _str(git.get("repository_url")) if isinstance(git, dict) else None
            return _str(payload.get("id")), _str(payload.get("cwd")), remote
    return None, None, None


def _peek_gemini(path: Path, head: bytes) -> Peek:
    try:
        cwd = (path.parent.parent / ".project_root").read_text(encoding="utf-8").strip()
    except OSError:
        cwd = ""
    sid = None
    for entry in _lines(head) if path.suffix == ".jsonl" else []:
        sid = _str(entry.get("sessionId"))
        if sid:
            break
    if path.suffix == ".json" and b'"sessionId"' in head:
        at = head.find(b'"sessionId"')
        piece = head[at : at + 120].split(b'"')
        sid = piece[3].decode("utf-8", "replace") if len(piece) > 3 else None
    return sid, cwd or None, None
