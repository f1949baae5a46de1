"""Copy hook payloads captured from the real agents into ``tests/fixtures/hooks/<agent>/``.

    CTXMODE_E2E_CAPTURE=/tmp/cap .venv/bin/python -m pytest -m e2e tests/e2e
    .venv/bin/python tests/e2e/refresh_fixtures.py /tmp/cap

Each ``NN-Event-Detail.json`` becomes ``real.Event.detail.json`` (the first of each name), with
the scratch project rewritten to ``/home/user/my-project``, the temp HOME to ``/home/user``
and interpreter paths to ``python``: no machine paths, and the payloads hold no secrets (the
model servers are scripted). OpenCode's ``opencode-raw/NNN-hook-detail.json`` (what OpenCode
hands its plugins, kept by ``opencode_capture.js``) become
``tests/fixtures/opencode-plugin/hook.detail.json``, what the plugin's unit test feeds it.
Later ones of a name get their number; the tests use a few, renamed by what they hold (e.g.
``real.PostToolUse.bash.pytest-failed``, ``experimental.text.complete.summary``): rename those
again and drop the other numbered ones.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from ctxmode.sessions.adapters import strip_injected

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
PROJECT = "/home/user/my-project"
_PYTHON = re.compile(r"/[^\s\"']*/bin/python3?(?:\.\d+)?")


def neutral(value: Any, swaps: list[tuple[str, str]]) -> Any:
    """``value`` with each (old, new) prefix swapped, in order, and interpreters as ``python``."""
    if isinstance(value, str):
        for old, new in swaps:
            value = value.replace(old, new)
        return _PYTHON.sub("python", value)
    if isinstance(value, dict):
        return {k: neutral(v, swaps) for k, v in value.items()}
    if isinstance(value, list):
        return [neutral(v, swaps) for v in value]
    return value


def main(capture: Path) -> None:
    for agent_dir in sorted(p for p in capture.iterdir() if p.is_dir()):
        seen: set[str] = set()
        for path in sorted(agent_dir.glob("*.json")):
            if path.name.endswith(".out.json"):
                continue
            payload = json.loads(path.read_text())
            project = str(payload.get("cwd") or payload.get("directory") or "")
            if not project:
                continue
            parent = str(Path(project).parent)
            swaps = [(project, PROJECT), (parent + "/home", "/home/user"), (parent, "/home/user")]
            name = path.stem.split("-", 1)[1]
            event, _, detail = name.partition("-")
            folder, fixture = FIXTURES / agent_dir.name, f"real.{event}"
            if agent_dir.name == "opencode-raw":
                folder, fixture = FIXTURES.parent / "opencode-plugin", event
                output = payload.get("output")
                if event == "experimental.text.complete" and isinstance(output, dict):
                    # The capture may run after ctxmode's plugin appended the snapshot.
                    output["text"] = strip_injected(str(output.get("text", "")))
            fixture += f".{detail}" if detail else ""
            if fixture in seen:
                fixture += f".{path.stem.split('-', 1)[0]}"
            seen.add(fixture)
            folder.mkdir(exist_ok=True)
            out = folder / f"{fixture}.json"
            out.write_text(json.dumps(neutral(payload, swaps), indent=2, ensure_ascii=False) + "\n")
            print(out.relative_to(FIXTURES.parent))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
