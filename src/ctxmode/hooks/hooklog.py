"""``<project root>/.context/hooks.log``: where every hook path writes what went wrong.

One line a problem (``<UTC time> LEVEL message``), mode 0600, moved to ``hooks.log.1`` at
``MAX_LOG_BYTES``; writing it never raises. Standard library only.
"""

from __future__ import annotations

#: ``hooks.log`` past this size is moved to ``hooks.log.1`` (replacing the previous one), so a
#: store that fails on every tool call for months keeps at most twice this on disk (bytes).
MAX_LOG_BYTES = 1024 * 1024


def log(root: object, level: str, message: str) -> None:
    """Append one line to ``<root>/.context/hooks.log`` (0600, rotated at ``MAX_LOG_BYTES``);
    never raises."""
    import os
    import time

    try:
        folder = os.path.join(str(root), ".context")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = f"{stamp} {level} {' '.join(message.split())[:2000]}\n"
        path = os.path.join(folder, "hooks.log")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if os.fstat(fd).st_size >= MAX_LOG_BYTES:
            os.close(fd)
            os.replace(path, path + ".1")
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - logging must never break the hook
        pass
