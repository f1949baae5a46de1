"""Gemini CLI's folder trust, read and written the way Gemini CLI 0.61 does it.

In a folder it does not trust, Gemini CLI ignores the project's ``.gemini/settings.json`` (hooks,
MCP servers, every other setting) and ``gemini -p`` refuses to start ("not running in a trusted
directory"); user-scope settings (``~/.gemini/settings.json``) apply in any folder. Trust lives in
``~/.gemini/trustedFolders.json`` (``config.gemini_trusted_folders``): a JSON object (comments
allowed) ``{"<absolute path>": "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"}``. The rule with
the longest written path whose folder contains the workspace decides, both sides resolved
through symlinks; ``TRUST_PARENT`` stands for the rule's parent folder. A value that is not one
of the three levels, or a file that is not a JSON object, makes Gemini CLI refuse to start.

The feature is on unless ``security.folderTrust.enabled`` is false in the system settings, else
the user settings, else the system defaults (schema default ``true`` in 0.61); project settings
cannot turn it off. Checked against the real binary in ``tests/e2e/test_gemini_cli.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ctxmode.agents.files import dump_json, load_json_object, read_text
from ctxmode.core import config
from ctxmode.core.errors import CtxmodeError, InvalidInput

LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")
TRUSTED = "TRUST_FOLDER"
FIX = (
    "run `ctxmode install gemini-cli --trust`, or start `gemini` in the project and trust the "
    "folder when it asks (later: `/permissions trust` in Gemini CLI)"
)


def load_rules(path: Path, text: str | None) -> dict[str, str]:
    """The rules of a trust file's ``text`` (``{}`` when absent); ``InvalidInput`` when Gemini
    CLI would reject the file, saying how to fix it."""
    data = load_json_object(path, text) or {}
    bad = [f"{key!r}: {value!r}" for key, value in data.items() if value not in LEVELS]
    if bad:
        raise InvalidInput(
            f"{path} has trust levels Gemini CLI rejects ({', '.join(bad[:3])}; allowed: "
            f"{', '.join(LEVELS)}); fix or remove those entries, then run again. Nothing was "
            "changed"
        )
    return {str(key): str(value) for key, value in data.items()}


def _contains(folder: str, path: str) -> bool:
    rel = os.path.relpath(path, folder)
    return rel != ".." and not rel.startswith(".." + os.sep) and not os.path.isabs(rel)


def decision(rules: dict[str, str], folder: Path) -> bool | None:
    """Whether Gemini CLI trusts ``folder`` by these rules; None when no rule covers it."""
    where = os.path.realpath(folder)
    best_len, best = -1, None
    for rule, level in rules.items():
        base = os.path.abspath(rule)
        base = os.path.dirname(base) if level == "TRUST_PARENT" else base
        if _contains(os.path.realpath(base), where) and len(rule) > best_len:
            best_len, best = len(rule), level
    if best is None:
        return None
    return best != "DO_NOT_TRUST"


def _setting(path: Path) -> bool | None:
    try:
        doc = load_json_object(path, read_text(path)) or {}
    except CtxmodeError:
        return None  # Gemini CLI reports that file itself
    security = doc.get("security")
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    value = folder_trust.get("enabled") if isinstance(folder_trust, dict) else None
    return value if isinstance(value, bool) else None


def enabled(home: Path) -> bool:
    """Whether folder trust is on for Gemini CLI run by this user."""
    system, defaults = config.gemini_system_settings()
    user = config.gemini_home(home) / ".gemini" / "settings.json"
    for path in (system, user, defaults):
        value = _setting(path)
        if value is not None:
            return value
    return True


def plan(root: Path, home: Path) -> tuple[Path, str | None, str, str]:
    """``(trust file, old text, new text, what)`` trusting ``root``; new == old when Gemini CLI
    already trusts it. ``InvalidInput`` (nothing to write) for a file Gemini CLI would reject."""
    path = config.gemini_trusted_folders(home)
    old = read_text(path)
    rules = load_rules(path, old)
    folder = os.path.realpath(root)
    what = f"Gemini CLI folder trust of {folder}"
    if decision(rules, root) is True:
        return path, old, old or "", what
    was = rules.get(folder)
    data: dict[str, Any] = {**rules, folder: TRUSTED}
    return path, old, dump_json(data, old, path), what + (f" (was {was})" if was else "")


def problems(root: Path, home: Path) -> list[str]:
    """What keeps Gemini CLI from reading ``root``'s ``.gemini/settings.json``, with the fix."""
    if not enabled(home):
        return []
    path = config.gemini_trusted_folders(home)
    try:
        rules = load_rules(path, read_text(path))
    except CtxmodeError as exc:
        return [f"Gemini CLI refuses to start while {path} is invalid: {exc}"]
    if decision(rules, root) is True:
        return []
    why = "distrusts" if decision(rules, root) is False else "does not trust"
    return [
        f"Gemini CLI {why} {os.path.realpath(root)}, so it ignores .gemini/settings.json "
        f"(ctxmode's hooks and MCP server) and `gemini -p` refuses to start there; {FIX}"
    ]
