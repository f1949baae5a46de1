"""Qwen Code settings that keep ctxmode's hooks from running, checked against Qwen Code 0.24.

- ``"disableAllHooks": true`` in a settings file turns every hook off.
- Folder trust is off by default (``security.folderTrust.enabled`` in the user settings); when
  on, a project's ``.qwen/settings.json`` (ctxmode's project-scope hooks and MCP server) loads
  only in a folder that ``~/.qwen/trustedFolders.json`` trusts, a file in Gemini CLI's format
  (``agents.gemini_trust``). User-scope settings load everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ctxmode.agents import gemini_trust
from ctxmode.agents.files import load_json_object, read_text
from ctxmode.core.errors import CtxmodeError


def _doc(path: Path) -> dict[str, Any]:
    try:
        return load_json_object(path, read_text(path)) or {}
    except CtxmodeError:
        return {}  # reported by ``install.status`` itself


def problems(root: Path, home: Path) -> list[str]:
    """What stops Qwen Code from running ctxmode's hooks in ``root``, with the fix."""
    out: list[str] = []
    project, user = root / ".qwen" / "settings.json", home / ".qwen" / "settings.json"
    for path in (project, user):
        if _doc(path).get("disableAllHooks") is True:
            out.append(f"{path} turns Qwen Code hooks off (disableAllHooks)")
    if "ctxmode" not in (read_text(project) or ""):
        return out
    security = _doc(user).get("security")
    trust = security.get("folderTrust") if isinstance(security, dict) else None
    if not (isinstance(trust, dict) and trust.get("enabled") is True):
        return out
    trusted = home / ".qwen" / "trustedFolders.json"
    try:
        rules = gemini_trust.load_rules(trusted, read_text(trusted))
    except CtxmodeError as exc:
        return [*out, f"Qwen Code cannot read its folder trust: {exc}"]
    if gemini_trust.decision(rules, root) is not True:
        out.append(
            f"Qwen Code has folder trust on and does not trust {os.path.realpath(root)}, so it "
            "ignores .qwen/settings.json (ctxmode's hooks and MCP server); trust the folder "
            "with /permissions in Qwen Code, or run `ctxmode install qwen-code --scope user`"
        )
    return out
