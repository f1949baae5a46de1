"""Throughput of ``ctxmode history import`` against a floor: reading and ``json.loads`` of the
same files.

The corpus is the real transcripts of ``tests/fixtures/history`` (Claude Code, Codex, Gemini
CLI, as the pinned agents wrote them in the e2e runs), copied under new session ids into a
scratch HOME until it holds ``--mb`` megabytes, all of one scratch git project. Each run
imports the whole corpus into a fresh store (the library call the CLI makes, no progress
drawn) and is timed against the floor over the same files (read each file, ``json.loads``
every line). Times are the process's CPU seconds (``time.process_time``: the store's SQLite
work runs in this process), so that other load on a shared machine does not move them; wall
seconds are printed beside. A second import (nothing changed) is timed too.

The fixtures are dense: Claude Code's attachment and request-shape lines (most of a real
transcript's bytes, skipped unparsed by the import) were left out of them, so a megabyte
here holds several times the tool calls of a megabyte of a real transcript. The calls per
second are printed so a rate for another density can be worked out.

Target: import >= 50 MB/s on this machine's class of hardware.

Run: .venv/bin/python bench/history.py [--mb 100] [--runs 3] [--claude-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "history"
PROJ, HOME = "/home/dev/proj", "/home/dev"


def build_corpus(
    home: Path, proj: Path, megabytes: float, claude_dir: Path | None = None
) -> list[Path]:
    """Copies of the fixture transcripts (or of the Claude Code transcripts under
    ``claude_dir``, as written), each under a fresh session id, until ``megabytes``."""
    sources: list[tuple[str, Path, str]] = []
    for path in sorted((claude_dir or FIXTURES / "claude-code").glob("*/*.jsonl")):
        sources.append(("claude", path, path.stem))
    for path in sorted((FIXTURES / "codex").rglob("rollout-*.jsonl")) if not claude_dir else []:
        sources.append(("codex", path, path.stem[-36:]))
    gemini = sorted((FIXTURES / "gemini-cli").glob("*/chats/*.jsonl")) if not claude_dir else []
    for path in gemini:
        sid = json.loads(path.open().readline())["sessionId"]
        sources.append(("gemini", path, sid))
    texts = {p: _retarget(p.read_text(), proj, home) for _, p, _ in sources}
    claude_dir = home / ".claude" / "projects" / str(proj).replace("/", "-")
    gemini_dir = home / ".gemini" / "tmp" / "proj" / "chats"
    codex_dir = home / ".codex" / "sessions" / "2026" / "12" / "02"
    for folder in (claude_dir, gemini_dir, codex_dir):
        folder.mkdir(parents=True, exist_ok=True)
    (gemini_dir.parent / ".project_root").write_text(str(proj))
    written: list[Path] = []
    total = 0
    n = 0
    while total < megabytes * 1e6:
        agent, src, sid = sources[n % len(sources)]
        new = str(uuid.UUID(int=n + 1, version=4))
        text = texts[src].replace(sid, new)
        if agent == "claude":
            dest = claude_dir / f"{new}.jsonl"
        elif agent == "codex":
            dest = codex_dir / f"rollout-2026-12-02T06-00-00-{new}.jsonl"
        else:
            dest = gemini_dir / f"session-2026-12-02T06-00-{new[:8]}-{n}.jsonl"
        dest.write_text(text)
        written.append(dest)
        total += len(text.encode())
        n += 1
    return written


def _retarget(text: str, proj: Path, home: Path) -> str:
    """A transcript's text with its project folder (the fixtures' placeholder, or the folder a
    raw transcript records) replaced by ``proj``."""
    for line in text.splitlines()[:50]:
        if '"cwd":"' in line:
            old = line.split('"cwd":"', 1)[1].split('"', 1)[0]
            text = text.replace(old, str(proj))
            break
    return text.replace(PROJ, str(proj)).replace(HOME, str(home))


def floor(files: list[Path]) -> tuple[float, float]:
    """(CPU, wall) seconds to read every file and ``json.loads`` each of its lines."""
    cpu, wall = time.process_time(), time.perf_counter()
    for path in files:
        data = path.read_bytes()
        for line in data.split(b"\n"):
            if line.strip():
                json.loads(line)
    return time.process_time() - cpu, time.perf_counter() - wall


def import_once(proj: Path, home: Path) -> tuple[float, float, float, dict[str, object]]:
    """(first import CPU s, its wall s, second import CPU s, first report), fresh store."""
    from ctxmode.history import importer
    from ctxmode.store import Store

    db = proj / ".context" / "context.db"
    shutil.rmtree(db.parent, ignore_errors=True)
    with Store.open(db, root=proj) as store:
        cpu, wall = time.process_time(), time.perf_counter()
        report = importer.run(store)
        first, first_wall = time.process_time() - cpu, time.perf_counter() - wall
        cpu = time.process_time()
        again = importer.run(store)
        second = time.process_time() - cpu
    assert again.events == 0, again
    return first, first_wall, second, report.to_dict()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="corpus size (MB)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--claude-dir",
        type=Path,
        help="copy the Claude Code transcripts under this projects folder, as written "
        "(untrimmed), instead of the fixtures",
    )
    args = parser.parse_args()
    if not FIXTURES.is_dir():
        print(f"skipped: no fixtures at {FIXTURES}")
        return 0
    with tempfile.TemporaryDirectory(prefix="ctxmode-bench-history-") as tmp:
        home, proj = Path(tmp) / "home", Path(tmp) / "proj"
        proj.mkdir()
        subprocess.run(["git", "init", "-q", str(proj)], check=True)
        os.environ["HOME"] = str(home)
        for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "GEMINI_CLI_HOME"):
            os.environ.pop(name, None)
        files = build_corpus(home, proj, args.mb, args.claude_dir)
        nbytes = sum(p.stat().st_size for p in files)
        mb = nbytes / 1e6
        floors, floor_walls, firsts, walls, seconds = [], [], [], [], []
        report: dict[str, object] = {}
        for _ in range(args.runs):
            f_cpu, f_wall = floor(files)
            floors.append(f_cpu)
            floor_walls.append(f_wall)
            first, wall, second, report = import_once(proj, home)
            firsts.append(first)
            walls.append(wall)
            seconds.append(second)
        f, fw, i, iw, s = (
            statistics.median(x) for x in (floors, floor_walls, firsts, walls, seconds)
        )
        calls = int(str(report["calls"]))
        print(f"corpus: {len(files)} transcripts, {mb:.1f} MB; {report['sessions']} sessions, "
              f"{calls} calls ({calls / mb:.0f} per MB), {report['events']} events")  # fmt: skip
        print(f"floor (read + json.loads):  {f:7.2f} s CPU  {mb / f:8.1f} MB/s  (wall {fw:.2f} s)")
        print(f"history import:             {i:7.2f} s CPU  {mb / i:8.1f} MB/s  "
              f"{calls / i:7.0f} calls/s  {i / f:.2f}x the floor  (wall {iw:.2f} s)")  # fmt: skip
        print(f"second import (unchanged):  {s:7.3f} s CPU")
        ok = mb / i >= 50
        print(f"target >= 50 MB/s: {'met' if ok else 'NOT met'} on this corpus")
        return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    raise SystemExit(main())
