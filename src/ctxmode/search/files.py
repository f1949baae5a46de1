"""Reading the project's files for the index: folder walks, ignore rules, text decoding.

Walks honour ``.gitignore`` files (each one for its own subtree; a negation cannot re-include
what a parent folder's file ignored), skip VCS/tool folders, binaries and files over
``MAX_FILE_BYTES``; text is read as UTF-8, UTF-16 with a BOM, or else a legacy single-byte
encoding (``decode_text``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

from ctxmode.core.errors import PathOutsideProject
from ctxmode.core.redact import is_env_file, scrub_surrogates
from ctxmode.knowledge.contexts import absolute_path, normalize_path

if TYPE_CHECKING:
    from ctxmode.core.db import Database


#: Files larger than this are skipped (bytes).
MAX_FILE_BYTES = 1_000_000


#: Why a file or folder whose name is not valid UTF-8 is left out (SQLite text, JSON and the
#: terminal cannot hold the undecodable bytes, and a path shown with U+FFFD cannot be reopened).
NOT_UTF8_NAME = "name is not valid UTF-8; rename it to index it"


#: At most this many files are indexed per call; the rest are reported as skipped.
MAX_FILES = 20_000


#: Folders never walked into, whatever .gitignore says.
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".context", "node_modules", "__pycache__", ".venv", "venv",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".idea", ".DS_Store",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Skipped:
    """A file left out, and why."""

    path: str
    reason: str


def read_text(path: Path) -> tuple[str | None, str | None, bytes]:
    """(text, skip reason, raw bytes) of a file as indexing reads it (size cap, binary check,
    legacy encodings: ``decode_text``); text is None when the file is skipped."""
    try:
        info = path.stat()
        if not S_ISREG(info.st_mode):  # a named pipe would block the read for good
            return None, "not a regular file (a pipe, socket or device)", b""
        size = info.st_size
        if size > MAX_FILE_BYTES:
            return None, f"larger than {MAX_FILE_BYTES // 1000} KB", b""
        raw = path.read_bytes()
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})", b""
    text = decode_text(raw)
    if text is None:
        return None, "binary", raw
    return text, None, raw


#: Share of control characters (other than tab, newlines and form feed) above which bytes that
#: are not UTF-8 are taken for binary rather than for text in a legacy encoding.
MAX_CONTROL_SHARE = 0.01


def decode_text(raw: bytes) -> str | None:
    """The text of a file's bytes, or ``None`` for binary data.

    UTF-8 (with or without a BOM) and UTF-16 with a BOM are decoded as such. Other bytes with no
    NUL in their first 8 KB are text in a legacy single-byte encoding (Windows-1252, else
    Latin-1: old docs and logs), unless control characters make up more than
    ``MAX_CONTROL_SHARE`` of them.
    """
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\0" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        text = raw.decode("cp1252")
    except UnicodeDecodeError:  # bytes cp1252 leaves undefined
        text = raw.decode("latin-1")
    controls = len(_CONTROLS.findall(text))
    return text if controls <= MAX_CONTROL_SHARE * len(text) else None


#: Control characters but tab, newlines and form feed (what ``decode_text`` counts).
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")


class _Ignore:
    """The .gitignore files that apply below a folder, each scoped to its own directory."""

    def __init__(self) -> None:
        self._specs: list[tuple[str, Any]] = []

    def add_file(self, base: str, gitignore: Path) -> None:
        import pathspec

        try:
            lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        if lines:
            self._specs.append((base, pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for base, spec in self._specs:
            if base and not (rel == base or rel.startswith(base + "/")):
                continue
            sub = rel[len(base) + 1 :] if base else rel
            if sub and spec.match_file(sub + "/" if is_dir else sub):
                return True
        return False


def walk_files(
    store: Database, rel_dir: str, seen: dict[str, int] | None = None
) -> tuple[list[str], list[Skipped]]:
    """Files under a project folder (project-relative, sorted), honouring .gitignore.

    ``seen``, when given, receives the stamp (``stamp``) of every folder walked and of every
    .gitignore file that applied or could apply: while none of them changes, the walk would
    give the same files (``walk_unchanged``)."""
    root = store.root
    top = absolute_path(store, rel_dir)
    outside = Path(rel_dir).is_absolute()  # a location allowed by allow_outside_paths
    # Ignore rules are matched against paths relative to the project root (or to the walked
    # folder when it lies outside the project); ``key_prefix`` is the walked folder's key.
    key_prefix = "" if outside or rel_dir == "." else rel_dir
    ignore = _Ignore()
    ancestors: list[str] = []
    if not outside:
        # .gitignore files of the folders from the project root down to the walked one apply.
        parts = key_prefix.split("/") if key_prefix else []
        ancestors = ["/".join(parts[:i]) for i in range(len(parts))]
        for base in ancestors:
            gitignore = root / base / ".gitignore" if base else root / ".gitignore"
            ignore.add_file(base, gitignore)
            if seen is not None:
                seen[str(gitignore)] = stamp(str(gitignore))
    files: list[str] = []
    skipped: list[Skipped] = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        here_rel = here.relative_to(top).as_posix()
        if here_rel == ".":
            cur = key_prefix
        else:
            cur = f"{key_prefix}/{here_rel}" if key_prefix else here_rel
        if seen is not None:
            seen[dirpath] = stamp(dirpath)
            seen[os.path.join(dirpath, ".gitignore")] = stamp(os.path.join(dirpath, ".gitignore"))
        if (here / ".gitignore").is_file() and cur not in ancestors:
            ignore.add_file(cur, here / ".gitignore")
        keep = []
        for d in sorted(dirnames):
            sub = f"{cur}/{d}" if cur else d
            if d in SKIP_DIRS or ignore.ignored(sub, True) or (here / d).is_symlink():
                continue
            if scrub_surrogates(d) != d:
                shown = scrub_surrogates(f"{rel_dir}/{sub}" if outside else sub)
                skipped.append(Skipped(shown + "/", NOT_UTF8_NAME))
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            key = f"{cur}/{name}" if cur else name
            if name == ".gitignore" or ignore.ignored(key, False):
                continue
            out = f"{rel_dir}/{key}" if outside else key
            if scrub_surrogates(name) != name:
                skipped.append(Skipped(scrub_surrogates(out), NOT_UTF8_NAME))
                continue
            if (here / name).is_symlink():
                try:
                    out = normalize_path(store, str(here / name))
                except PathOutsideProject:
                    skipped.append(Skipped(out, "symlink pointing outside the project"))
                    continue
                if not absolute_path(store, out).is_file():
                    continue
            files.append(out)
    if len(files) > MAX_FILES:
        skipped.extend(Skipped(f, f"over the {MAX_FILES}-file limit") for f in files[MAX_FILES:])
        files = files[:MAX_FILES]
    return files, skipped


#: A folder or file changed less than this long before it was stamped (nanoseconds) gets no
#: stamp: a file added in the same clock tick as the walk (coarse file systems) is not missed.
SETTLE_NS = 2_000_000_000


def stamp(path: str) -> int:
    """What ``walk_unchanged`` compares: the path's mtime in nanoseconds, ``-1`` when it is
    missing, ``-2`` when it changed too recently to be trusted (always counts as changed)."""
    import time

    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return -1
    return -2 if time.time_ns() - mtime < SETTLE_NS else mtime


def walk_unchanged(seen: dict[str, int]) -> bool:
    """Whether a walk that recorded ``seen`` would list the same files now: no folder it
    walked gained, lost or renamed an entry (each changes the folder's mtime) and no
    .gitignore that applied appeared, changed or went. One ``stat`` per folder: on a 3,139-file
    repository ~5 ms instead of the walk's ~350 ms. A file edited in place changes no folder;
    ``indexing`` compares every listed file's size and mtime for that."""
    if not seen:
        return False
    for path, mtime in seen.items():
        if mtime == -2:
            return False
        try:
            now = os.stat(path).st_mtime_ns
        except OSError:
            now = -1
        if now != mtime:
            return False
    return True


__all__ = [
    "Skipped",
    "decode_text",
    "is_env_file",
    "read_text",
    "stamp",
    "walk_files",
    "walk_unchanged",
]
