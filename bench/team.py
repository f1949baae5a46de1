"""Cost of picking up team knowledge (``.context/shared``) on the hook path.

Two projects, the same store contents otherwise: ``team`` holds ``--files`` shared files
(default 1000, imported once and settled), ``baseline`` holds none. Measured in the same run:
- the freshness check alone (``Store.sync_shared`` when nothing changed), in process, next to
  opening the store, which every hook does anyway;
- full ``ctxmode hook session-start`` processes (startup brief) in both projects, interleaved
  round by round: the difference is what the team folder costs a session start;
- a sync after one file changed (git pull of one edit), and the first import of every file;
- whether the no-change check imports ``ctxmode.exchange`` (it must not).
Target: the check <= 5 ms with 1000 files when nothing changed.

Run: .venv/bin/python bench/team.py [--files N] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
CTXMODE = str(Path(PYTHON).parent / "ctxmode")
FIXTURE = REPO / "tests" / "fixtures" / "hooks" / "claude-code" / "session-start.startup.json"


def make_project(root: Path, files: int) -> Path:
    (root / ".git").mkdir(parents=True)
    folder = root / ".context" / "shared"
    folder.mkdir(parents=True)
    for i in range(files):
        (folder / f"item-{i:05d}.md").write_text(
            f'---\ntype: decision\nowner: dev{i % 7}\nfiles: ["src/mod{i % 50}.py"]\n---\n'
            f"Decision {i}: module {i % 50} keeps its state in table t{i}.\n",
            encoding="utf-8",
        )
    return root


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def time_calls(fn: object, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - t0)
    return out


def hook_payload(project: Path) -> bytes:
    text = FIXTURE.read_text(encoding="utf-8").replace("/home/user/my-project", str(project))
    return text.encode()


def run_hook(project: Path, data: bytes) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [CTXMODE, "hook", "session-start", "--agent", "claude-code"],
        input=data,
        cwd=project,
        capture_output=True,
        timeout=60,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"hook failed: {proc.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    runs = max(3, args.runs)
    sys.path.insert(0, str(REPO / "src"))
    from ctxmode import Store
    from ctxmode.core import config

    with tempfile.TemporaryDirectory() as tmp:
        team = make_project(Path(tmp) / "team", args.files)
        base = make_project(Path(tmp) / "baseline", 0)
        (base / ".context" / "shared").rmdir()

        t0 = time.perf_counter()
        with Store.open(team / ".context" / "context.db") as store:
            first = store.sync_shared()
        cold_s = time.perf_counter() - t0
        assert first is not None and len(first.imported) == args.files, first
        # Same knowledge in the baseline store, without files: the brief has the same input.
        with Store.open(base / ".context" / "context.db") as store:
            for i in range(args.files):
                store.write_context("decision", f"Decision {i}: module {i % 50} keeps state.")
        time.sleep(config.RACY_NS / 1e9 + 0.2)  # let the folder's time settle (racy rule)
        with Store.open(team / ".context" / "context.db") as store:
            store.sync_shared(force=True)
            assert store.sync_shared() is None, "the folder should read as unchanged"

        with Store.open(team / ".context" / "context.db") as store:
            check = time_calls(store.sync_shared, runs * 20)
        opens = time_calls(lambda: Store.open(team / ".context" / "context.db").close(), runs)

        probe = (
            "import sys; from ctxmode import Store; s = Store.open(sys.argv[1]); "
            "r = s.sync_shared(); print(r is None, 'ctxmode.exchange' in sys.modules)"
        )
        out = subprocess.run(
            [PYTHON, "-c", probe, str(team / ".context" / "context.db")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()

        team_data, base_data = hook_payload(team), hook_payload(base)
        hooks_team: list[float] = []
        hooks_base: list[float] = []
        for _ in range(runs):
            hooks_base.append(run_hook(base, base_data))
            hooks_team.append(run_hook(team, team_data))

        one = team / ".context" / "shared" / "item-00007.md"
        changed: list[float] = []
        with Store.open(team / ".context" / "context.db") as store:
            for n in range(max(3, runs // 3)):
                text = one.read_text(encoding="utf-8").replace("table", f"table (edit {n})")
                tmp_file = one.with_suffix(".tmp")
                tmp_file.write_text(text, encoding="utf-8")
                tmp_file.replace(one)  # as git writes a changed file: a new inode
                t0 = time.perf_counter()
                report = store.sync_shared()
                changed.append(time.perf_counter() - t0)
                assert report is not None and report.updated, report

    check_ms = median_ms(check)
    rows = [
        ("freshness check, nothing changed", check_ms),
        ("Store.open (every hook pays it)", median_ms(opens)),
        ("hook session-start, no team folder (baseline)", median_ms(hooks_base)),
        (f"hook session-start, {args.files} shared files", median_ms(hooks_team)),
        ("sync after one file changed", median_ms(changed)),
        (f"first import of {args.files} files", cold_s * 1000),
    ]
    print(f"team knowledge, {args.files} shared files, medians of {runs}+ runs")
    for name, ms in rows:
        print(f"  {name:<48} {ms:9.3f} ms")
    ratio = statistics.median(hooks_team) / statistics.median(hooks_base)
    print(f"  session-start with team folder / baseline: {ratio:.2f}x")
    print(f"  no-change check returned None: {out[0]}; imported ctxmode.exchange: {out[1]}")
    verdict = "OK" if check_ms <= 5 and out == ["True", "False"] else "MISSED"
    print(f"target: check <= 5 ms, exchange not imported -> {verdict}")
    print(json.dumps({"check_ms": round(check_ms, 4), "hook_ratio": round(ratio, 3)}))


if __name__ == "__main__":
    main()
