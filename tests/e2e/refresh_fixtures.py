"""Copy hook payloads captured from the real agents into ``tests/fixtures/hooks/<agent>/``.

    CTXMODE_E2E_CAPTURE=/tmp/cap .venv/bin/python -m pytest -m e2e tests/e2e
    .venv/bin/python tests/e2e/refresh_fixtures.py /tmp/cap

Each ``NN-Event-Detail.json`` becomes ``real.Event.detail.json`` (the first of each name), with
the scratch project rewritten to ``/home/user/my-project``, the temp HOME to ``/home/user``
and interpreter paths to ``python``: no machine paths, and the payloads hold no secrets (the
model servers are scripted).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

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
            project = str(payload.get("cwd") or "")
            if not project:
                continue
            parent = str(Path(project).parent)
            swaps = [(project, PROJECT), (parent + "/home", "/home/user"), (parent, "/home/user")]
            name = path.stem.split("-", 1)[1]
            event, _, detail = name.partition("-")
            fixture = f"real.{event}" + (f".{detail}" if detail else "")
            if fixture in seen:
                fixture += f".{path.stem.split('-', 1)[0]}"
            seen.add(fixture)
            out = FIXTURES / agent_dir.name / f"{fixture}.json"
            out.write_text(json.dumps(neutral(payload, swaps), indent=2, ensure_ascii=False) + "\n")
            print(out.relative_to(FIXTURES))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
