"""DevBench retrieval quality of ctxmode search: R@5, MRR and the negative-query false positives.

The 30 developer memories are written as contexts through ``Store.write_context`` (content only:
the tags, which include the answer ids, are not indexed; dates from ``created_at_iso``). Each of
the 20 queries is searched once; for the 15 with expected memories:
R@5 = share of the expected memories in the top 5 (averaged), Hit@5 = share of queries with at
least one in the top 5, MRR = reciprocal rank of the first expected memory (top 10).
The 5 negative queries have no answer: a false positive is a result that claims a confident
match (``SearchResult.confident``).

Usage: .venv/bin/python bench/devbench.py [--data ../shared/bench-data/devbench]
Target: R@5 >= 0.95. Published anchor: R@5 0.911, MRR 0.861 (mcp-memory-service, MiniLM).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from datetime import datetime
from pathlib import Path

from ctxmode import Store

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "bench-data" / "devbench"
#: DevBench memory types -> ctxmode context types.
TYPES = {
    "decision": "decision",
    "bug-fix": "issue",
    "learning": "reference",
    "architecture": "interface",
    "configuration": "convention",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--verbose", action="store_true", help="Print each query's top 5.")
    args = parser.parse_args(argv)
    path = args.data / "devbench_dataset.json"
    if not path.exists():
        print(f"skipped: {path} not found (DevBench data lives in ../shared/bench-data)")
        return 0
    data = json.loads(path.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "devbench.db") as store:
        by_context: dict[str, str] = {}
        for memory in data["memories"]:
            created = datetime.fromisoformat(memory["created_at_iso"].replace("Z", "+00:00"))
            res = store.write_context(
                TYPES.get(memory["memory_type"], "reference"),
                memory["content"],
                now=int(created.timestamp()),
            )
            by_context[f"ctx:{res.id}"] = memory["id"]
        rows: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        negatives: list[bool] = []
        for query in data["queries"]:
            result = store.search(query["question"], limit=10)
            ranked = [by_context.get(h.id, h.id) for h in result.hits]
            if args.verbose:
                print(query["id"], result.confident, ranked[:5], query["expected_tags"])
            expected = set(query["expected_tags"])
            if not expected:
                negatives.append(result.confident)
                continue
            recall5 = len(expected & set(ranked[:5])) / len(expected)
            hit5 = 1.0 if expected & set(ranked[:5]) else 0.0
            rr = next((1.0 / (i + 1) for i, m in enumerate(ranked) if m in expected), 0.0)
            rows[query["category"]].append((recall5, hit5, rr))
            rows["overall"].append((recall5, hit5, rr))
            # A positive query whose answer is found but reported as "no confident match".
            if not result.confident:
                rows["_unconfident"].append((1.0, 0.0, 0.0))
        print(f"DevBench: {len(by_context)} memories, {len(data['queries'])} queries")
        print(f"  {'category':<12}{'n':>4}{'R@5':>8}{'Hit@5':>8}{'MRR':>8}")
        for group in ("exact", "semantic", "cross_type", "overall"):
            got = rows.get(group)
            if got:
                means = [statistics.fmean(c) for c in zip(*got, strict=True)]
                print(f"  {group:<12}{len(got):>4}" + "".join(f"{m:>8.3f}" for m in means))
        fp = sum(negatives)
        print(
            f"  negative queries: {fp}/{len(negatives)} reported a confident match "
            f"(false-positive rate {fp / max(1, len(negatives)):.2f}); positive queries "
            f"reported as not confident: {len(rows.get('_unconfident', []))}/"
            f"{len(rows.get('overall', []))}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
