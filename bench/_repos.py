"""The real repository the scale benchmarks read (``../shared/bench-data/repos``).

``ARCHIVE`` is the fastapi snapshot of issue 27: ``../shared`` of the main checkout, or of a
worktree's parent; benchmarks skip, saying why, when it is absent. ``SKIP_DIRS``: folders no
index would read.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_NAME = Path("shared") / "bench-data" / "repos" / "fastapi-c3f316b.tar.xz"
ARCHIVE = next(
    (p for base in (REPO.parent, REPO.parent.parent) if (p := base / _NAME).exists()),
    REPO.parent / _NAME,
)
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".context", ".venv", "node_modules", "__pycache__"})
