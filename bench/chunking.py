"""Chunking speed: MB/s of ``chunk_document`` over the text files of a folder, as indexing calls it.

The folder is ``--root``, or by default the real repository of issue 27
(``../shared/bench-data/repos/fastapi-c3f316b.tar.xz``, unpacked to a temporary folder; skipped,
saying why, when absent). Its files are read and redacted once, as ``ctxmode index`` does
(``read_text``, then ``redact``), and written to a temporary corpus; each measurement then runs
in its own process and times ``chunk_document(text, path, base_title=path)`` over that corpus
only (reading and redaction excluded): the best of ``--passes`` passes, the median over
``--runs`` processes. Figures are given per kind (markdown, code, text, json), with the time
``ast.parse`` alone takes over the Python files: whether a .py file parses changes its chunks,
so that parse is a floor of any chunker that keeps them.

``--baseline-src PATH`` measures another checkout's ``src`` (e.g. ``../main/src``) the same way,
its processes alternating with this checkout's, and prints the speed-up.

Run: .venv/bin/python bench/chunking.py [--root DIR] [--baseline-src ../main/src] [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _repos import MISSING, text_files, unpack

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
KINDS = ("markdown", "code", "text", "json")


def build_corpus(root: Path, out: Path) -> tuple[int, int]:
    """Read and redact every text file under ``root`` as indexing does; pickle
    ``[(path, text)]`` to ``out``; return (files, UTF-8 bytes)."""
    from ctxmode.core.redact import redact, redact_env_file
    from ctxmode.search.files import is_env_file

    corpus = [
        (rel, redact_env_file(text) if is_env_file(rel) else redact(text))
        for rel, text in text_files(root)
    ]
    with out.open("wb") as fh:
        pickle.dump(corpus, fh)
    return len(corpus), sum(len(t.encode("utf-8", "surrogatepass")) for _, t in corpus)


def child(corpus_path: str, src: str, passes: int) -> None:
    """Time ``chunk_document`` over the corpus with ``src`` first on sys.path; print JSON."""
    sys.path.insert(0, src)
    import ast

    from ctxmode.search import chunking

    if not Path(chunking.__file__).resolve().is_relative_to(Path(src).resolve()):
        raise SystemExit(f"chunking imported from {chunking.__file__}, not from {src}")
    with open(corpus_path, "rb") as fh:
        corpus: list[tuple[str, str]] = pickle.load(fh)
    kinds = [chunking.kind_for_name(rel) for rel, _ in corpus]
    best = {kind: float("inf") for kind in KINDS}
    pieces = 0
    for _ in range(passes):
        spent = dict.fromkeys(KINDS, 0.0)
        pieces = 0
        for (rel, text), kind in zip(corpus, kinds, strict=True):
            start = time.perf_counter()
            pieces += len(chunking.chunk_document(text, rel, base_title=rel))
            spent[kind] += time.perf_counter() - start
        best = {k: min(best[k], spent[k]) for k in KINDS}
    parse = float("inf")
    python = [text for rel, text in corpus if rel.endswith((".py", ".pyi"))]
    for _ in range(passes):
        start = time.perf_counter()
        for text in python:
            with contextlib.suppress(SyntaxError, ValueError, RecursionError):
                ast.parse(text)
        parse = min(parse, time.perf_counter() - start)
    print(json.dumps({"kinds": best, "pieces": pieces, "ast_parse": parse}))


def measure(corpus: Path, src: Path, passes: int) -> dict[str, object]:
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            str(corpus),
            "--src",
            str(src),
            "--passes",
            str(passes),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"measuring {src} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def summary(results: list[dict[str, object]]) -> dict[str, float]:
    """Median over processes of each kind's time, the total and the ast.parse floor."""
    out: dict[str, float] = {}
    for kind in KINDS:
        out[kind] = statistics.median(r["kinds"][kind] for r in results)  # type: ignore[index]
    out["total"] = statistics.median(sum(r["kinds"].values()) for r in results)  # type: ignore[attr-defined]
    out["ast_parse"] = statistics.median(r["ast_parse"] for r in results)  # type: ignore[misc]
    return out


def report(label: str, figures: dict[str, float], megabytes: float) -> None:
    kinds = ", ".join(f"{k} {figures[k]:.3f}" for k in KINDS if figures[k] > 0)
    print(
        f"  {label:9s} {figures['total']:6.3f} s  {megabytes / figures['total']:6.1f} MB/s"
        f"  ({kinds}; ast.parse alone {figures['ast_parse']:.3f})"
    )


def run(root: Path, args: argparse.Namespace, tmp: Path) -> None:
    corpus = tmp / "corpus.pickle"
    files, size = build_corpus(root, corpus)
    megabytes = size / 1e6
    print(f"corpus: {files} text files, {megabytes:.1f} MB under {root} (read and redacted once)")
    mine: list[dict[str, object]] = []
    base: list[dict[str, object]] = []
    for _ in range(args.runs):  # alternate, so both see the same machine load
        mine.append(measure(corpus, SRC, args.passes))
        if args.baseline_src:
            base.append(measure(corpus, Path(args.baseline_src), args.passes))
    print(
        f"chunk_document, seconds (median of {args.runs} processes, best of {args.passes} passes):"
    )
    new = summary(mine)
    report("this", new, megabytes)
    if base:
        old = summary(base)
        report("baseline", old, megabytes)
        if mine[0]["pieces"] != base[0]["pieces"]:
            print(f"  note: {mine[0]['pieces']} pieces here, {base[0]['pieces']} in the baseline")
        ratios = ", ".join(f"{k} {old[k] / new[k]:.2f}x" for k in KINDS if new[k] > 0)
        print(f"  speed-up: {old['total'] / new['total']:.2f}x overall ({ratios})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="folder to chunk (default: the fastapi archive)")
    parser.add_argument("--baseline-src", help="another checkout's src folder to compare with")
    parser.add_argument("--runs", type=int, default=3, help="processes per side")
    parser.add_argument("--passes", type=int, default=3, help="passes per process (best kept)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.src, args.passes)
        return 0
    if args.baseline_src and not (Path(args.baseline_src) / "ctxmode" / "search").is_dir():
        parser.error(f"--baseline-src {args.baseline_src}: no ctxmode/search package in it")
    with tempfile.TemporaryDirectory(prefix="ctxmode-chunking-") as name:
        tmp = Path(name)
        if args.root is not None:
            if not args.root.is_dir():
                parser.error(f"--root {args.root}: not a folder")
            run(args.root, args, tmp)
            return 0
        root = unpack(tmp)
        if root is None:
            print(f"skipped: {MISSING}")
            return 0
        run(root, args, tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
