"""Redaction speed: characters per second of ``core.redact.redact`` over the text files of a
folder and over the chunk titles indexing composes from them, as ``ctxmode index`` calls it.

The folder is ``--root``, or by default the real repository of issue 27
(``../shared/bench-data/repos/fastapi-c3f316b.tar.xz``, unpacked to a temporary folder; skipped,
saying why, when absent). Its files are read as indexing reads them (``read_text``: size cap,
binary check, encodings) and chunked once (``chunk_document``, titles kept), into a temporary
corpus; each measurement then runs in its own process and times ``redact`` over every file's
text and, apart, over every title: the best of ``--passes`` passes, the median over ``--runs``
processes. Each process also prints a digest of its outputs: the digests of two checkouts must
be equal (the same redaction).

``--baseline-src PATH`` measures another checkout's ``src`` the same way, its processes
alternating with this checkout's, and prints the speed-up. For the redactor before
``core.secret_scan`` (issue 27): ``git archive 25edaaf src | tar -x -C /tmp/base`` and
``--baseline-src /tmp/base/src``. The hook path's own figure is ``bench/hooks.py
--redactor-only``.

Run: .venv/bin/python bench/redact.py [--root DIR] [--baseline-src PATH] [--runs 3]
"""

from __future__ import annotations

import argparse
import hashlib
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


def build_corpus(root: Path, out: Path) -> tuple[int, int, int]:
    """Read every text file under ``root`` as indexing does and chunk it; pickle
    ``([(path, text)], [title])`` to ``out``; return (files, characters, titles)."""
    from ctxmode.core.redact import redact
    from ctxmode.search.chunking import chunk_document

    files: list[tuple[str, str]] = []
    titles: list[str] = []
    for rel, text in text_files(root):
        files.append((rel, text))
        titles += [p.title for p in chunk_document(redact(text), rel, base_title=rel)]
    with out.open("wb") as fh:
        pickle.dump((files, titles), fh)
    return len(files), sum(len(t) for _, t in files), len(titles)


def child(corpus_path: str, src: str, passes: int) -> None:
    """Time ``redact`` over the corpus with ``src`` first on sys.path; print JSON."""
    sys.path.insert(0, src)
    from ctxmode.core import redact as module

    if not Path(module.__file__).resolve().is_relative_to(Path(src).resolve()):
        raise SystemExit(f"redact imported from {module.__file__}, not from {src}")
    with open(corpus_path, "rb") as fh:
        files, titles = pickle.load(fh)
    texts = [text for _, text in files]
    digest = hashlib.sha256()
    for text in [*texts, *titles]:  # a first pass outside the timing: compiles, digest
        digest.update(module.redact(text).encode("utf-8", "surrogatepass") + b"\0")
    best = {"files": float("inf"), "titles": float("inf")}
    for _ in range(passes):
        for name, items in (("files", texts), ("titles", titles)):
            start = time.perf_counter()
            for text in items:
                module.redact(text)
            best[name] = min(best[name], time.perf_counter() - start)
    print(json.dumps({**best, "digest": digest.hexdigest()}))


def measure(corpus: Path, src: Path, passes: int) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", str(corpus), "--src", str(src)]
    proc = subprocess.run(
        [*cmd, "--passes", str(passes)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"measuring {src} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="folder to read (default: the fastapi archive)")
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src folder")
    parser.add_argument("--runs", type=int, default=3, help="processes per checkout")
    parser.add_argument("--passes", type=int, default=2, help="passes per process (best kept)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.src, args.passes)
        return 0
    if args.baseline_src is not None and not (args.baseline_src / "ctxmode").is_dir():
        parser.error(f"--baseline-src {args.baseline_src} holds no ctxmode package")
    with tempfile.TemporaryDirectory(prefix="ctxmode-bench-redact-") as tmp:
        root = args.root
        if root is None:
            root = unpack(Path(tmp))
            if root is None:
                print(f"skipped: {MISSING}")
                return 0
        corpus = Path(tmp) / "corpus.pickle"
        files, chars, titles = build_corpus(root, corpus)
        title_chars = sum(len(t) for t in pickle.loads(corpus.read_bytes())[1])
        print(
            f"corpus: {root}: {files} text files, {chars / 1e6:.1f} M characters; "
            f"{titles} chunk titles, {title_chars / 1e6:.2f} M characters"
        )
        subjects = {"current": SRC}
        if args.baseline_src is not None:
            subjects["baseline"] = args.baseline_src.resolve()
        runs: dict[str, list[dict[str, object]]] = {name: [] for name in subjects}
        for _ in range(args.runs):  # alternating, so that the machine's load hits both alike
            for name, src in subjects.items():
                runs[name].append(measure(corpus, src, args.passes))
        figures = {}
        for name, results in runs.items():
            files_s = statistics.median(float(r["files"]) for r in results)  # type: ignore[arg-type]
            titles_s = statistics.median(float(r["titles"]) for r in results)  # type: ignore[arg-type]
            figures[name] = (files_s, titles_s)
            print(
                f"{name:<9} files {files_s:.3f} s ({chars / files_s / 1e6:.1f} M chars/s), "
                f"titles {titles_s:.3f} s ({titles / titles_s / 1e3:.0f} k titles/s), "
                f"total {files_s + titles_s:.3f} s; digest {str(results[0]['digest'])[:16]} "
                f"({subjects[name]})"
            )
        if "baseline" in figures:
            (cf, ct), (bf, bt) = figures["current"], figures["baseline"]
            same = runs["current"][0]["digest"] == runs["baseline"][0]["digest"]
            print(
                f"speed-up: files {bf / cf:.2f}x, titles {bt / ct:.2f}x, "
                f"files+titles {(bf + bt) / (cf + ct):.2f}x; outputs identical: "
                f"{'yes' if same else 'NO'}"
            )
            return 0 if same else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
