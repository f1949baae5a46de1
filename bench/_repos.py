"""The real repository the scale benchmarks read (``../shared/bench-data/repos``).

``ARCHIVE`` is the fastapi snapshot of issue 27: ``../shared`` of the main checkout, or of a
worktree's parent; benchmarks skip, saying why, when it is absent. ``SKIP_DIRS``: folders no
index would read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_NAME = Path("shared") / "bench-data" / "repos" / "fastapi-c3f316b.tar.xz"
ARCHIVE = next(
    (p for base in (REPO.parent, REPO.parent.parent) if (p := base / _NAME).exists()),
    REPO.parent / _NAME,
)
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".context", ".venv", "node_modules", "__pycache__"})


def text_files(root: Path) -> Iterator[tuple[str, str]]:
    """Every file under ``root`` that indexing reads as text, as (relative path, text), in
    a stable order (``SKIP_DIRS`` left out)."""
    from ctxmode.search.files import read_text

    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(names):
            path = Path(folder) / name
            try:
                text, _, _ = read_text(path)
            except OSError:
                continue
            if text is not None:
                yield path.relative_to(root).as_posix(), text


#: Why a benchmark that needs the repository skipped it.
MISSING = f"{ARCHIVE} not found (the repository lives in ../shared/bench-data)"


def unpack(tmp: Path) -> Path | None:
    """The repository unpacked into ``tmp/fastapi`` (``None`` when the archive is absent)."""
    import tarfile

    if not ARCHIVE.exists():
        return None
    root = tmp / "fastapi"
    root.mkdir()
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(root, filter="data")
    return root
