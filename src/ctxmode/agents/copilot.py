"""GitHub Copilot CLI's folder trust, read and written as Copilot CLI 1.0.102 does it.

Copilot CLI loads a repository's hooks and MCP servers (``.github/copilot/settings*.json``,
``.github/hooks/``, ``.github/mcp.json``) only in a folder it trusts; ``copilot -p`` asks
nobody, so in an untrusted folder ctxmode's project-scope hooks never run. Trust lives in
``trustedFolders`` (a list of absolute paths) of ``$COPILOT_HOME/config.json`` (default
``~/.copilot``), a JSON-with-comments file Copilot CLI manages; ``trustedFolders`` in
``settings.json`` is not read for this. User-scope settings (``~/.copilot/settings.json``,
``mcp-config.json``) apply in any folder. Checked against the real binary in
``tests/e2e/test_copilot_cli.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ctxmode.agents.files import dump_json, load_json_object, read_text
from ctxmode.core import config
from ctxmode.core.errors import CtxmodeError, InvalidInput

FIX = (
    "run `ctxmode install copilot-cli --trust`, or start `copilot` in the project and trust "
    "the folder when it asks (or install with --scope user)"
)


def _folders(path: Path, text: str | None) -> list[str]:
    data = load_json_object(path, text) or {}
    folders = data.get("trustedFolders", [])
    if not isinstance(folders, list):
        raise InvalidInput(f'{path}: "trustedFolders" must be a list; fix it and run again')
    return [f for f in folders if isinstance(f, str)]


def _same(a: str, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def trusted(root: Path, home: Path) -> bool:
    """Whether Copilot CLI trusts ``root`` (False when its config cannot be read)."""
    path = config.copilot_home(home) / "config.json"
    try:
        return any(_same(f, root) for f in _folders(path, read_text(path)))
    except CtxmodeError:
        return False


def plan(root: Path, home: Path) -> tuple[Path, str | None, str, str]:
    """``(config.json, old text, new text, what)`` trusting ``root``; new == old when it is
    trusted already. ``InvalidInput`` (nothing to write) for a file that cannot be edited."""
    path = config.copilot_home(home) / "config.json"
    old = read_text(path)
    folders = _folders(path, old)
    what = f"Copilot CLI folder trust of {root}"
    if any(_same(f, root) for f in folders):
        return path, old, old or "", what
    data: dict[str, Any] = dict(load_json_object(path, old) or {})
    data["trustedFolders"] = [*folders, str(root)]
    return path, old, dump_json(data, old, path), what


def problems(root: Path, home: Path, project_installed: bool) -> list[str]:
    """What keeps Copilot CLI from running ctxmode's hooks in ``root``, with the fix."""
    out: list[str] = []
    for path in (config.copilot_home(home) / "settings.json",
                 root / ".github" / "copilot" / "settings.local.json"):  # fmt: skip
        try:
            doc = load_json_object(path, read_text(path)) or {}
        except CtxmodeError:
            continue  # reported by ``install.status`` itself
        if doc.get("disableAllHooks") is True:
            out.append(f"{path} turns Copilot CLI hooks off (disableAllHooks)")
    vscode = root / ".github" / "hooks" / "ctxmode.json"
    if vscode.exists():
        out.append(
            f"Copilot CLI also runs the VS Code hooks in {vscode}, so it records events twice; "
            "uninstall one of vscode and copilot-cli"
        )
    if not project_installed:
        return out
    path = config.copilot_home(home) / "config.json"
    try:
        folders = _folders(path, read_text(path))
    except CtxmodeError as exc:
        return [*out, f"Copilot CLI cannot read its folder trust: {exc}"]
    if not any(_same(f, root) for f in folders):
        out.append(
            f"Copilot CLI does not trust {root}, so it ignores the project's hooks and MCP "
            f"server (.github/copilot/settings.local.json, .github/mcp.json); {FIX}"
        )
    return out
