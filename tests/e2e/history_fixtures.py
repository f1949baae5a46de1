"""Copy the transcripts real agents wrote in an e2e run into ``tests/fixtures/history``, redacted.

    python tests/e2e/history_fixtures.py AGENT RUN_ROOT

``RUN_ROOT`` is the e2e run's folder holding ``proj`` and ``home`` (and ``codexhome``). The
copy replaces the run's paths with ``/home/dev/proj`` and ``/home/dev`` (tests put their own
back), the interpreter's with ``python``, and leaves out Claude Code's request-shape and
attachment lines (tens of KB each, nothing the import reads). OpenCode's database becomes
the SQL of its ``project``, ``session``, ``message`` and ``part`` tables.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "history"
PROJ, HOME = "/home/dev/proj", "/home/dev"
_DROPPED = frozenset({"attachment", "api-request-shape", "api-request-blob"})
#: Qwen Code's telemetry and attribution lines, Copilot CLI's system prompt, usage, hook and
#: model records: most of the bytes, nothing the import reads.
_QWEN_DROPPED = frozenset({"ui_telemetry", "attribution_snapshot"})
_COPILOT_KEPT = frozenset({
    "session.start", "session.resume", "user.message",
    "assistant.message", "tool.execution_start", "tool.execution_complete",
    "session.compaction_start", "session.compaction_complete",
})  # fmt: skip


def _redact(text: str, root: Path) -> str:
    text = text.replace(sys.executable, "python").replace(str(Path(sys.executable).parent), "")
    text = text.replace(str(root / "proj"), PROJ).replace(str(root / "codexhome"), HOME + "/.codex")
    return text.replace(str(root / "home"), HOME).replace(str(root), "/home/dev")


def _kept(entry: object) -> bool:
    if not isinstance(entry, dict):
        return True
    kind = entry.get("type")
    if kind in _DROPPED or entry.get("subtype") in _QWEN_DROPPED:
        return False
    return not (isinstance(kind, str) and "." in kind and kind not in _COPILOT_KEPT)


def _copy_lines(src: Path, dest: Path, root: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    kept = []
    for line in src.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if _kept(entry):
            kept.append(_redact(line, root))
    dest.write_text("\n".join(kept) + "\n", encoding="utf-8")


def main(agent: str, root: Path) -> None:
    out = FIXTURES / agent
    shutil.rmtree(out, ignore_errors=True)
    if agent in ("claude-code", "inbox"):  # inbox: test_history_inbox.py's Claude session
        for src in sorted((root / "home" / ".claude" / "projects").glob("*/*.jsonl")):
            _copy_lines(src, out / "-home-dev-proj" / src.name, root)
    elif agent == "codex":
        base = root / "codexhome" / "sessions"
        for src in sorted(base.glob("*/*/*/rollout-*.jsonl")):
            _copy_lines(src, out / src.relative_to(base), root)
    elif agent == "gemini-cli":
        base = root / "home" / ".gemini" / "tmp"
        for src in sorted(base.glob("*/chats/*.json*")):
            _copy_lines(src, out / "proj" / "chats" / src.name, root)
    elif agent == "qwen-code":
        base = root / "home" / ".qwen" / "projects"
        for src in sorted(base.glob("*/chats/*.jsonl")):
            _copy_lines(src, out / "-home-dev-proj" / "chats" / src.name, root)
    elif agent == "copilot-cli":
        base = root / "home" / ".copilot" / "session-state"
        for src in sorted(base.glob("*/events.jsonl")):
            _copy_lines(src, out / src.parent.name / src.name, root)
            yaml = src.parent / "workspace.yaml"
            (out / src.parent.name / yaml.name).write_text(_redact(yaml.read_text(), root))
    elif agent == "opencode":
        db = root / "home" / ".local" / "share" / "opencode" / "opencode.db"
        conn = sqlite3.connect(db)
        tables = ("project", "session", "message", "part")
        lines = [
            line
            for line in conn.iterdump()
            if any(f'"{t}"' in line[:40] or f"`{t}`" in line[:40] for t in tables)
        ]
        out.mkdir(parents=True, exist_ok=True)
        (out / "opencode.sql").write_text(_redact("\n".join(lines), root) + "\n")
    else:
        raise SystemExit(f"unknown agent {agent}")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]).resolve())
