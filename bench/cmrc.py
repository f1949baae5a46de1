"""CMRC 2018 retrieval recall of ctxmode search on Chinese: paragraph-level R@1/5, MRR@10.

Each dev paragraph (848) is indexed as one document through ``indexing.index_content`` (the
path of the MCP ``index`` tool and of ``fetch``: source ``cmrc:<paragraph id>``, plain text,
no title), into a fresh temporary store. Each question (3,219) is searched once over the whole
corpus (``Store.search``, limit 10); the target is the paragraph the question was asked on,
found through the hit's source label (a paragraph split into several chunks still counts once,
at its best chunk). R@k = share of questions whose paragraph is in the top k; MRR@10 = mean
reciprocal rank of it (0 beyond 10). Latency is per ``Store.search`` call (warm process; the
first query of each system is included).

Baselines measured in the same run on the same paragraphs and questions:
- **bigram BM25**: every CJK run (Han, kana, hangul) cut into overlapping character bigrams,
  other text into lowercase words; BM25 (k1 1.2, b 0.75) in pure Python, an inverted index;
  query bigrams OR-ed (each distinct one once);
- **jieba**: ``jieba.lcut_for_search`` tokens (punctuation and spaces dropped) scored by
  ``rank_bm25.BM25Okapi``; skipped with a note when jieba or rank_bm25 is not importable.

Usage: .venv/bin/python bench/cmrc.py [--data ../shared/bench-data/cmrc2018] [--limit N]
       [--misses N]  (print N ctxmode misses: question, rank, what came first)
``--paragraphs N`` indexes only the first N paragraphs (and asks their questions: a smoke
run). ``--limit`` keeps the first N questions (all paragraphs are still indexed, so the corpus and
its distractors are the full ones). Data (CC BY-SA 4.0) is read in place, never copied.
Target: ctxmode R@5 >= 0.99 and R@1 >= 0.96, at or above the bigram baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from ctxmode import Store
from ctxmode.search.indexing import index_content

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "bench-data" / "cmrc2018"
FILE = "cmrc2018_dev.json"
DEPTH = 10

# -- data ---------------------------------------------------------------------------------------


def load(path: Path) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Paragraph id -> text, and (question, paragraph id) pairs in file order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    paragraphs: dict[str, str] = {}
    questions: list[tuple[str, str]] = []
    for article in data["data"]:
        for para in article["paragraphs"]:
            pid = str(para["id"])
            paragraphs[pid] = str(para["context"])
            for qa in para["qas"]:
                questions.append((str(qa["question"]), pid))
    return paragraphs, questions


# -- char-bigram BM25 baseline ------------------------------------------------------------------

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")


def bigram_tokens(text: str) -> list[str]:
    """Overlapping bigrams of each CJK run (a 1-character run stays whole), lowercase words."""
    out: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        if _CJK_RUN.match(tok) and len(tok) > 1:
            out.extend(tok[i : i + 2] for i in range(len(tok) - 1))
        else:
            out.append(tok)
    return out


class BM25:
    """Okapi BM25 over an inverted index (k1 1.2, b 0.75, IDF log(1 + (N - n + .5)/(n + .5)))."""

    def __init__(self, docs: dict[str, list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.postings: dict[str, list[tuple[str, float]]] = defaultdict(list)
        avg = statistics.fmean(len(t) for t in docs.values()) or 1.0
        for doc, toks in docs.items():
            norm = k1 * (1 - b + b * len(toks) / avg)
            for term, tf in Counter(toks).items():
                self.postings[term].append((doc, tf * (k1 + 1) / (tf + norm)))
        n = len(docs)
        self.idf = {
            t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self.postings.items()
        }

    def top(self, terms: list[str], k: int = DEPTH) -> list[str]:
        scores: dict[str, float] = defaultdict(float)
        for term in dict.fromkeys(terms):
            idf = self.idf.get(term, 0.0)
            for doc, w in self.postings.get(term, ()):
                scores[doc] += idf * w
        return sorted(scores, key=lambda d: (-scores[d], d))[:k]


# -- scoring ------------------------------------------------------------------------------------


def measure(
    name: str, questions: list[tuple[str, str]], search: Callable[[str], list[str]]
) -> tuple[str, list[float], list[str]]:
    """(name, [R@1, R@5, MRR@10, median ms, p95 ms], misses as text) of one system."""
    r1 = r5 = rr = 0.0
    latencies: list[float] = []
    misses: list[str] = []
    for question, pid in questions:
        t0 = time.perf_counter()
        ranked = search(question)
        latencies.append(time.perf_counter() - t0)
        ranked = list(dict.fromkeys(ranked))[:DEPTH]
        rank = ranked.index(pid) + 1 if pid in ranked else None
        r1 += rank == 1
        r5 += rank is not None and rank <= 5
        rr += 1.0 / rank if rank else 0.0
        if rank != 1:
            misses.append(f"  {question}  target {pid} rank {rank}; top 3 {ranked[:3]}")
    n = max(1, len(questions))
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))] if latencies else 0.0
    median = statistics.median(latencies) if latencies else 0.0
    return name, [r1 / n, r5 / n, rr / n, median * 1000, p95 * 1000], misses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--misses", type=int, default=0, help="print N ctxmode misses")
    parser.add_argument(
        "--paragraphs", type=int, default=0, help="only the first N paragraphs (a smoke run)"
    )
    args = parser.parse_args(argv)
    path = args.data / FILE
    if not path.exists():
        print(f"skipped: {path} not found (CMRC 2018 data lives in ../shared/bench-data)")
        return 0
    paragraphs, questions = load(path)
    if args.paragraphs > 0:
        paragraphs = dict(list(paragraphs.items())[: args.paragraphs])
        questions = [(q, pid) for q, pid in questions if pid in paragraphs]
    if args.limit > 0:
        questions = questions[: args.limit]
    results = []
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "cmrc.db") as store:
        t0 = time.perf_counter()
        chunks = 0
        for pid, text in paragraphs.items():
            report = index_content(store, text, f"cmrc:{pid}", fmt="text")
            chunks += sum(s.chunks for s in report.sources)
        ingest_s = time.perf_counter() - t0

        def ctxmode(question: str) -> list[str]:
            hits = store.search(question, limit=DEPTH, budget_chars=1_000_000).hits
            return [h.source.removeprefix("cmrc:") for h in hits]

        results.append(measure("ctxmode Store.search", questions, ctxmode))
    print(
        f"CMRC 2018 dev: {len(paragraphs)} paragraphs -> {chunks} chunks indexed in "
        f"{ingest_s:.2f} s; {len(questions)} questions"
    )
    t0 = time.perf_counter()
    bm25 = BM25({pid: bigram_tokens(text) for pid, text in paragraphs.items()})
    bigram_s = time.perf_counter() - t0
    results.append(measure("char-bigram BM25", questions, lambda q: bm25.top(bigram_tokens(q))))
    notes = [f"bigram index built in {bigram_s:.2f} s"]
    try:
        import jieba
        from rank_bm25 import BM25Okapi
    except ImportError as exc:
        notes.append(f"jieba + rank_bm25 skipped: {exc} (pip install jieba rank_bm25)")
    else:
        jieba.setLogLevel(60)

        def cut(text: str) -> list[str]:
            return [t for t in jieba.lcut_for_search(text.lower()) if _TOKEN.match(t)]

        ids = list(paragraphs)
        t0 = time.perf_counter()
        okapi = BM25Okapi([cut(paragraphs[p]) for p in ids])
        notes.append(f"jieba index built in {time.perf_counter() - t0:.2f} s")

        def jieba_search(question: str) -> list[str]:
            scores = okapi.get_scores(cut(question))
            order = sorted(range(len(ids)), key=lambda i: (-scores[i], i))[:DEPTH]
            return [ids[i] for i in order if scores[i] > 0]

        results.append(measure("jieba + rank_bm25", questions, jieba_search))
    print(f"  {'system':<24}{'R@1':>8}{'R@5':>8}{'MRR@10':>8}{'p50 ms':>9}{'p95 ms':>9}")
    for name, (r1, r5, mrr, p50, p95), _ in results:
        print(f"  {name:<24}{r1:>8.3f}{r5:>8.3f}{mrr:>8.3f}{p50:>9.2f}{p95:>9.2f}")
    for note in notes:
        print(f"  ({note})")
    for line in results[0][2][: args.misses]:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
