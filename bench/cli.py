"""Start-up cost of the ``ctxmode`` command line: full-process wall time per command.

The CLI imports a command's module only when that command runs (``ctxmode.cli``). For a few
everyday commands this times, in the same run and interleaved round by round:
- floor: ``<venv python> -c "import click"`` (starting Python and the CLI framework);
- ctxmode: ``<venv>/bin/ctxmode COMMAND`` on a small store (a few contexts and a document);
- all modules: the same command with every command module imported first, which is what the
  CLI loaded for any command before it loaded them lazily (the baseline).
Prints the median of ``--runs`` (default 15) runs per command, and the ratios.

Run: .venv/bin/python bench/cli.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
CTXMODE = str(Path(PYTHON).parent / "ctxmode")

COMMANDS: dict[str, list[str]] = {
    "search": ["search", "cache invalidation", "--limit", "3"],
    "query": ["query", "--json"],
    "events": ["events", "--json"],
    "task list": ["task", "list", "--json"],
    "--help": ["--help"],
}

#: Imports every command module, then runs the CLI on the given arguments.
_ALL_MODULES = (
    "import sys\n"
    "from ctxmode.cli import COMMAND_MODULES, cli\n"
    "for names in COMMAND_MODULES.values():\n"
    "    cli.get_command(None, names[0])\n"
    "cli(sys.argv[1:], prog_name='ctxmode')\n"
)


def make_project(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    run = {"cwd": root, "check": True, "capture_output": True}
    subprocess.run([CTXMODE, "init"], **run)  # type: ignore[call-overload]
    for i in range(20):
        text = f"Decision {i}: invalidate the cache on write, keep reads lock-free ({i})."
        subprocess.run([CTXMODE, "add", "decision", text], **run)  # type: ignore[call-overload]
    doc = root / "design.md"
    doc.write_text("# Cache\n\nWrite-back cache, invalidation on write.\n\n# Logs\n\nJSON.\n")
    subprocess.run([CTXMODE, "index", str(doc)], **run)  # type: ignore[call-overload]


def timed(argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=os.environ.copy())
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stderr.decode(errors='replace')[-500:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root)
        floor: list[float] = []
        ours: dict[str, list[float]] = {name: [] for name in COMMANDS}
        eager: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(args.runs):
            floor.append(timed([PYTHON, "-c", "import click"], root))
            for name, cmd in COMMANDS.items():
                ours[name].append(timed([CTXMODE, *cmd], root))
                eager[name].append(timed([PYTHON, "-c", _ALL_MODULES, *cmd], root))
        f = statistics.median(floor) * 1000
        print(
            f"ctxmode CLI start-up, median of {args.runs} runs (ms); floor (python + click) {f:.1f}"
        )
        print(f"  {'command':<12}{'ctxmode':>9}{'all modules':>13}{'ratio':>8}{'x floor':>9}")
        for name in COMMANDS:
            o = statistics.median(ours[name]) * 1000
            e = statistics.median(eager[name]) * 1000
            print(f"  {name:<12}{o:>9.1f}{e:>13.1f}{o / e:>7.2f}x{o / f:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
