"""LoCoMo retrieval recall of ctxmode search: turn-level R@1/5/10 and MRR, no embeddings.

Every turn of the 10 LoCoMo conversations becomes one searchable document chunk (source
``locomo:<sample_id>``; title = speaker and session date; body = the turn's text plus the
caption of an image the speaker shared, which is part of the turn). Turns are inserted as
chunks in order, so the product's chunk trigger (schema m005) gives each the ends of the two
turns before it as its low-weight search context, exactly as for any indexed document. Each
question of categories 1-4 is searched, restricted to its own conversation, and the ranked turns are
compared with the evidence turn ids: the original answer key, and the audited one
(``errors_conv_N.json``: ``correct_evidence`` replaces the evidence of the questions it lists).

R@k = share of a question's evidence turns found in the top k, averaged over questions;
Hit@k = share of questions with at least one evidence turn in the top k; MRR = mean reciprocal
rank of the first evidence turn (0 when none in the top 10). Category 5 (adversarial, the answer
does not exist) is reported separately.

Session level: the published anchors this benchmark cites (Basic Memory's 0.823 among them) are
measured on one document per LoCoMo session, searched over all ten conversations at once, over
all 1,986 questions (the adversarial ones included), with the same audit's corrections. To
compare like with like, each question is also searched over the whole corpus (no source filter,
the top 50 turns), its sessions ranked by their best turn, and R@k computed against the
sessions of its evidence. The turn-level figures above stay the target's measure: a session
holds ~20 turns, so session-level recall is easier.

Tuning guard: ranking changes are tuned on conversations 0-4 only; the overall rows of the
tuning half (0-4) and the held-out half (5-9) are printed separately so that a gain that does not
carry over to unseen conversations shows up as a gap between the two.

Usage: .venv/bin/python bench/locomo.py [--data ../shared/bench-data/locomo] [--limit 10]
       [--convs 0-4]  (only those conversations, e.g. for quick tuning runs)
       [--misses N]   (print N audited-evidence misses: question, evidence turns, top 5)
Data is read in place and never copied. Target: R@5 >= 0.85 on the audited evidence.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxmode import Store

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "bench-data" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
#: Conversation halves: ranking is tuned on the first, the second is held out.
SPLITS = {"tune 0-4": range(5), "held-out 5-9": range(5, 10)}
#: Turns fetched per question for the session-level figures (enough for 5 distinct sessions).
SESSION_POOL = 50


def parse_date(text: str) -> int:
    """``"1:56 pm on 8 May, 2023"`` -> Unix seconds (UTC)."""
    stamp = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return int(stamp.replace(tzinfo=UTC).timestamp())


def evidence_ids(raw: Any) -> set[str]:
    """Turn ids in an evidence list, tolerating the few malformed entries of the answer key."""
    out: set[str] = set()
    for item in raw or []:
        for m in _EVIDENCE.finditer(str(item)):
            out.add(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def ingest(
    store: Store, conversations: list[dict[str, Any]], conv_of: dict[int, int] | None = None
) -> dict[int, str]:
    """One chunk per turn; returns chunk id -> dia_id (and fills ``conv_of``: chunk id ->
    conversation index, when given)."""
    by_chunk: dict[int, str] = {}
    now = int(time.time())
    with store.transaction() as conn:
        for index, conv in enumerate(conversations):
            c = conv["conversation"]
            label = f"locomo:{conv['sample_id']}"
            cur = conn.execute(
                "INSERT INTO sources(label, kind, location, indexed_at) VALUES (?, 'import', ?, ?)",
                (label, "locomo10.json", now),
            )
            source_id = int(cur.lastrowid or 0)
            ordinal = 0
            session = 1
            while f"session_{session}" in c:
                date_text = c.get(f"session_{session}_date_time", "")
                created = parse_date(date_text) if date_text else now
                day = date_text.split(" on ", 1)[-1]
                for turn in c[f"session_{session}"]:
                    body = str(turn.get("text", ""))
                    if turn.get("blip_caption"):
                        body += f" [shares an image: {turn['blip_caption']}]"
                    title = f"{turn['speaker']} · session {session} · {day}"
                    cur = conn.execute(
                        "INSERT INTO chunks(source_id, ordinal, title, content, kind, created_at) "
                        "VALUES (?, ?, ?, ?, 'turn', ?)",
                        (source_id, ordinal, title, body, created),
                    )
                    by_chunk[int(cur.lastrowid or 0)] = str(turn["dia_id"])
                    if conv_of is not None:
                        conv_of[int(cur.lastrowid or 0)] = index
                    ordinal += 1
                session += 1
    return by_chunk


def session_ids(index: int, turns: set[str]) -> set[str]:
    """Evidence turns -> the ids of their sessions, ``"<conversation>:<session>"``."""
    return {f"{index}:{turn[1:].split(':')[0]}" for turn in turns}


def ranked_sessions(hits: list[tuple[int, str]]) -> list[str]:
    """Ranked (conversation index, dia id) turns -> session ids in order of their best turn."""
    out: list[str] = []
    for index, turn in hits:
        sid = next(iter(session_ids(index, {turn})))
        if sid not in out:
            out.append(sid)
    return out


def audited(data: Path, index: int, qa: list[dict[str, Any]]) -> dict[int, set[str]]:
    """Question index -> corrected evidence, from ``errors_conv_<index>.json``."""
    path = data / f"errors_conv_{index}.json"
    if not path.exists():
        return {}
    out: dict[int, set[str]] = {}
    for entry in json.loads(path.read_text(encoding="utf-8")):
        m = re.search(r"_qa(\d+)$", str(entry.get("question_id", "")))
        if not m or "correct_evidence" not in entry:
            continue
        qi = int(m.group(1))
        if qi < len(qa) and qa[qi]["question"].strip() == str(entry["question"]).strip():
            out[qi] = evidence_ids(entry["correct_evidence"])
    return out


def turn_texts(conv: dict[str, Any]) -> dict[str, str]:
    """dia_id -> ``speaker: text`` for every turn of a conversation (for miss reports)."""
    c = conv["conversation"]
    out: dict[str, str] = {}
    session = 1
    while f"session_{session}" in c:
        for turn in c[f"session_{session}"]:
            text = f"{turn['speaker']}: {turn.get('text', '')}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            out[str(turn["dia_id"])] = text
        session += 1
    return out


def describe_miss(
    conv: dict[str, Any], index: int, qa: dict[str, Any], gold: set[str], ranked: list[str]
) -> str:
    """A readable report of one question whose evidence is not all in the top 5."""
    texts = turn_texts(conv)
    lines = [
        f"--- miss (conv {index}, category {qa['category']}): {qa['question']}",
        f"    answer: {qa.get('answer', qa.get('adversarial_answer', ''))}",
    ]
    for dia in sorted(gold):
        rank = ranked.index(dia) + 1 if dia in ranked else None
        lines.append(f"    evidence {dia} (rank {rank}): {texts.get(dia, '?')[:200]}")
    for i, dia in enumerate(ranked[:5], start=1):
        mark = "*" if dia in gold else " "
        lines.append(f"    {mark}{i}. {dia}: {texts.get(dia, '?')[:160]}")
    return "\n".join(lines)


class Scores:
    """Accumulates R@k, Hit@k and MRR per group."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[float, float, float, float, float, float, float]]] = (
            defaultdict(list)
        )

    def add(self, group: str, ranked: list[str], gold: set[str]) -> None:
        def recall(k: int) -> float:
            return len(gold & set(ranked[:k])) / len(gold)

        def hit(k: int) -> float:
            return 1.0 if gold & set(ranked[:k]) else 0.0

        rr = next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if d in gold), 0.0)
        row = (recall(1), recall(5), recall(10), hit(1), hit(5), hit(10), rr)
        self.rows[group].append(row)
        self.rows["overall"].append(row)

    def means(self, group: str = "overall") -> list[float] | None:
        """Mean (R@1, R@5, R@10, Hit@1, Hit@5, Hit@10, MRR) of a group; None when empty."""
        rows = self.rows.get(group)
        return [statistics.fmean(col) for col in zip(*rows, strict=True)] if rows else None

    def table(self, title: str) -> str:
        lines = [
            title,
            f"  {'group':<14}{'n':>6}{'R@1':>8}{'R@5':>8}{'R@10':>8}"
            f"{'Hit@1':>8}{'Hit@5':>8}{'Hit@10':>8}{'MRR':>8}",
        ]
        order = [*(f"{k} {v}" for k, v in CATEGORIES.items()), "overall"]
        for group in order:
            if means := self.means(group):
                n = len(self.rows[group])
                lines.append(f"  {group:<14}{n:>6}" + "".join(f"{m:>8.3f}" for m in means))
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument(
        "--convs", default="0-9", help="conversation indexes to run, e.g. 0-4 or 5-9 (default all)"
    )
    parser.add_argument(
        "--misses",
        type=int,
        default=0,
        help="print this many questions whose audited evidence is not all in the top 5",
    )
    args = parser.parse_args(argv)
    lo, _, hi = args.convs.partition("-")
    wanted = range(int(lo), int(hi or lo) + 1)
    source = args.data / "locomo10.json"
    if not source.exists():
        print(f"skipped: {source} not found (LoCoMo data lives in ../shared/bench-data)")
        return 0
    conversations = json.loads(source.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "locomo.db") as store:
        t0 = time.perf_counter()
        conv_of: dict[int, int] = {}
        by_chunk = ingest(store, conversations, conv_of)
        ingest_s = time.perf_counter() - t0
        original, fixed, adversarial = Scores(), Scores(), Scores()
        # session level, whole corpus: audited categories 1-4, and original evidence of all five
        sessions_fixed, every_original, every_audited = Scores(), Scores(), Scores()
        halves = {name: (Scores(), Scores()) for name in SPLITS}
        latencies: list[float] = []
        skipped = 0
        misses: list[str] = []
        for index, conv in enumerate(conversations):
            if index not in wanted:
                continue
            half = next(name for name, span in SPLITS.items() if index in span)
            label = f"locomo:{conv['sample_id']}"
            corrections = audited(args.data, index, conv["qa"])
            for qi, qa in enumerate(conv["qa"]):
                cat = int(qa["category"])
                gold = evidence_ids(qa.get("evidence"))
                gold_fixed = corrections.get(qi, gold)
                if not gold and not gold_fixed:
                    skipped += 1
                    continue
                t1 = time.perf_counter()
                result = store.search(
                    str(qa["question"]), limit=args.limit, source=label, budget_chars=100_000
                )
                latencies.append(time.perf_counter() - t1)
                ranked = [by_chunk[int(h.id.split(":")[1])] for h in result.hits]
                group = f"{cat} {CATEGORIES[cat]}"
                pool = store.search(str(qa["question"]), limit=SESSION_POOL, budget_chars=1_000_000)
                sessions = ranked_sessions(
                    [
                        (conv_of[cid], by_chunk[cid])
                        for cid in (int(h.id.split(":")[1]) for h in pool.hits)
                    ]
                )
                if gold:
                    every_original.add(group, sessions, session_ids(index, gold))
                if gold_fixed:
                    every_audited.add(group, sessions, session_ids(index, gold_fixed))
                    if cat != 5:
                        sessions_fixed.add(group, sessions, session_ids(index, gold_fixed))
                if cat == 5:
                    if gold:
                        adversarial.add(group, ranked, gold)
                    continue
                if gold:
                    original.add(group, ranked, gold)
                    halves[half][0].add(group, ranked, gold)
                if gold_fixed:
                    fixed.add(group, ranked, gold_fixed)
                    halves[half][1].add(group, ranked, gold_fixed)
                    if len(misses) < args.misses and not gold_fixed <= set(ranked[:5]):
                        misses.append(describe_miss(conv, index, qa, gold_fixed, ranked))
        print(
            f"LoCoMo-10: {len(by_chunk)} turns indexed in {ingest_s:.2f} s; "
            f"{len(latencies)} searches, median {statistics.median(latencies) * 1000:.2f} ms, "
            f"p95 {sorted(latencies)[int(len(latencies) * 0.95)] * 1000:.2f} ms; "
            f"{skipped} questions without evidence skipped"
        )
        print(original.table("original evidence (categories 1-4)"))
        print(fixed.table("audited evidence (categories 1-4; errors_conv_N correct_evidence)"))
        print("overall by half (tuned on conversations 0-4; 5-9 held out)")
        print(f"  {'half':<24}{'n':>6}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'MRR':>8}")
        for name, pair in halves.items():
            for key, scores in zip(("original", "audited"), pair, strict=True):
                if m := scores.means():
                    print(
                        f"  {name + ' ' + key:<24}{len(scores.rows['overall']):>6}"
                        f"{m[0]:>8.3f}{m[1]:>8.3f}{m[2]:>8.3f}{m[6]:>8.3f}"
                    )
        print(
            sessions_fixed.table(
                "session level, whole corpus (the anchors' granularity; audited evidence, "
                "categories 1-4)"
            )
        )
        for key, scores in (("original", every_original), ("audited", every_audited)):
            if m := scores.means():
                print(
                    f"session level, whole corpus, all five categories (the anchors' question "
                    f"set), {key} evidence, n={len(scores.rows['overall'])}: R@5 {m[1]:.3f}  "
                    f"R@10 {m[2]:.3f}  MRR {m[6]:.3f}"
                )
        for text in misses:
            print(text)
        if means := adversarial.means():
            print(
                "category 5 (adversarial; evidence = the turn the distractor twists), "
                f"n={len(adversarial.rows['overall'])}"
                f": R@5 {means[1]:.3f}  R@10 {means[2]:.3f}  MRR {means[6]:.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
