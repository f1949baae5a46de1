"""ctxmode search vs context-mode (npm) on the same corpus: median query latency and R@5.

Corpus: the LoCoMo-10 conversations, one markdown document per conversation with one heading
per turn (``## D3:7 · Caroline · 9 June, 2023``), so both tools index exactly one chunk per turn
(both split markdown at headings). Queries: the LoCoMo questions of categories 1-4, each
restricted to its conversation's source. A hit's turn id is read from its heading; R@5 is the
share of a question's evidence turns in the top 5 (original answer key).

Both tools are driven the same way, through their MCP servers over stdio with the ``mcp``
client (ctxmode: ``ctxmode serve``; context-mode: ``ctx_index`` / ``ctx_search`` of its
``server.bundle.mjs``), ``BATCH`` = 5 queries per call (context-mode refuses bursts of single
searches), so the latency is per call of 5 queries and includes JSON-RPC framing for both.
The servers run at once and get the same batches in turn, so a machine whose speed drifts
during the run moves all figures together. Each server answers each query once. ctxmode is run
twice: as shipped, where after a search the server analyses the searched source's other items
in idle moments (the 3 s pauses context-mode needs give it that time, as an agent's pauses
would), and with that warm-up off (``CTXMODE_SEARCH_WARMUP=0``), where every item is analysed
when a search first touches it. ctxmode's in-process latency per single query
(``Store.search``, no warm-up) is printed too: each question first, again, and again with a
context written by another connection before each query (what an agent's hooks do between two
searches: the store's version moves and what search keeps between queries is re-checked), and
without the source filter (the whole store, as an agent searches most often), once and again.

context-mode is installed with npm into a cache folder outside the repository
(``--cm-dir``, default ``~/.cache/ctxmode-bench``) when it is not there yet. If it cannot be
installed or driven, the reason is printed and only ctxmode's figures are reported.

Usage: .venv/bin/python bench/search.py [--queries 300] [--cm-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Sibling scripts (bench/mcp.py) would shadow the ``mcp`` package: drop this folder from the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "bench-data" / "locomo" / "locomo10.json"
CTXMODE = Path(sys.executable).parent / "ctxmode"
#: Pause between context-mode searches (it refuses bursts: 9 calls in 1 s, 13 in 34 s).
CM_PACE_S = 3.0
CM_BLOCKED_WAIT_S = 10.0
#: Queries per search call (both tools accept several; context-mode asks for batching).
BATCH = 5
_TURN = re.compile(r"\bD(\d+):(\d+)\b")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def documents(conversations: list[dict[str, Any]]) -> dict[str, str]:
    """Source label -> markdown document with one heading per turn."""
    docs: dict[str, str] = {}
    for conv in conversations:
        c = conv["conversation"]
        lines = [f"# Conversation {conv['sample_id']}", ""]
        session = 1
        while f"session_{session}" in c:
            day = str(c.get(f"session_{session}_date_time", "")).split(" on ", 1)[-1]
            for turn in c[f"session_{session}"]:
                text = str(turn.get("text", ""))
                if turn.get("blip_caption"):
                    text += f" [shares an image: {turn['blip_caption']}]"
                lines += [f"## {turn['dia_id']} · {turn['speaker']} · {day}", "", text, ""]
            session += 1
        # Labels are matched as substrings by context-mode: the closing slash keeps
        # "conv-2/" from matching "conv-26/".
        docs[f"locomo/{conv['sample_id']}/"] = "\n".join(lines)
    return docs


def questions(conversations: list[dict[str, Any]], n: int) -> list[tuple[str, str, set[str]]]:
    out = []
    for conv in conversations:
        for qa in conv["qa"]:
            gold = {
                f"D{int(m.group(1))}:{int(m.group(2))}"
                for e in qa.get("evidence") or []
                for m in _EVIDENCE.finditer(str(e))
            }
            if int(qa["category"]) != 5 and gold:
                out.append((f"locomo/{conv['sample_id']}/", str(qa["question"]), gold))
    step = max(1, len(out) // n) if n else 1
    return out[::step][:n] if n else out


def turns_in(text: str) -> list[str]:
    """Turn ids in the order they first appear in a result text."""
    seen: list[str] = []
    for m in _TURN.finditer(text):
        turn = f"D{int(m.group(1))}:{int(m.group(2))}"
        if turn not in seen:
            seen.append(turn)
    return seen


def batches(
    qs: list[tuple[str, str, set[str]]],
) -> list[tuple[str, list[tuple[str, set[str]]]]]:
    """Queries grouped by source, ``BATCH`` per call (both tools take several per call)."""
    by_label: dict[str, list[tuple[str, set[str]]]] = {}
    for label, question, gold in qs:
        by_label.setdefault(label, []).append((question, gold))
    return [
        (label, items[i : i + BATCH])
        for label, items in by_label.items()
        for i in range(0, len(items), BATCH)
    ]


def split_sections(body: str, queries: list[str]) -> list[str]:
    """context-mode's answer to a batch, cut at the ``## <query>`` line heading each result."""
    heads = [body.find(f"## {q}\n") for q in queries]
    out = []
    for i, start in enumerate(heads):
        if start < 0:
            out.append("")
            continue
        later = [h for h in heads[i + 1 :] if h > start]
        out.append(body[start + len(queries[i]) + 3 : min(later) if later else len(body)])
    return out


def recall_at_5(ranked: list[str], gold: set[str]) -> float:
    return len(gold & set(ranked[:5])) / len(gold)


def ensure_context_mode(folder: Path, install: bool) -> tuple[Path | None, str]:
    """The context-mode server script, installing the npm package into ``folder`` if needed."""
    server = folder / "node_modules" / "context-mode" / "server.bundle.mjs"
    binding = list((folder / "node_modules").glob("**/better_sqlite3.node"))
    if server.exists() and binding:
        return server, "found"
    if not install:
        return None, f"not installed in {folder} and --no-install given"
    if shutil.which("npm") is None or shutil.which("node") is None:
        return None, "node/npm not on PATH"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"installing context-mode into {folder} (compiles better-sqlite3; minutes)...")
    proc = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), "context-mode"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    binding = list((folder / "node_modules").glob("**/better_sqlite3.node"))
    if proc.returncode != 0 or not server.exists() or not binding:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return None, f"npm install failed: {' / '.join(tail)}"
    return server, "installed"


class Tool:
    """One MCP server under test, and what it measured."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.latencies: list[float] = []
        self.recalls: list[float] = []
        self.blocked = 0
        self.refused = 0

    def line(self) -> str:
        note = ""
        if self.blocked:
            note = (
                f"  ({self.blocked} calls refused as a burst and retried; {self.refused} queries "
                "still refused after 5 attempts are left out of its R@5)"
            )
        return (
            f"{self.name:<13}: R@5 {statistics.fmean(self.recalls):.3f}  median latency "
            f"{ms(self.latencies)} per call via MCP stdio{note}"
        )


async def ctxmode_call(
    client: Client, tool: Tool, label: str, batch: list[tuple[str, set[str]]]
) -> None:
    t0 = time.perf_counter()
    res = await client.call_tool(
        "search",
        {"queries": [q for q, _ in batch], "limit": 5, "source": label, "budget_chars": 20_000},
    )
    tool.latencies.append(time.perf_counter() - t0)
    if res.is_error:
        raise RuntimeError(res.content[0].text[:300])
    out = res.structured_content
    for index, (_q, gold) in enumerate(batch):
        titles = [t for t, i in zip(out["titles"], out["hit_query"], strict=True) if i == index]
        tool.recalls.append(recall_at_5(turns_in("\n".join(titles)), gold))


async def context_mode_call(
    client: Client, tool: Tool, label: str, batch: list[tuple[str, set[str]]]
) -> None:
    queries = [q for q, _ in batch]
    for _attempt in range(5):
        # context-mode refuses bursts of searches ("BLOCKED: 13 search calls in 12s"); pace
        # the calls and retry a refused one. Pauses are not timed.
        await anyio.sleep(CM_PACE_S)
        t0 = time.perf_counter()
        res = await client.call_tool(
            "ctx_search", {"queries": queries, "limit": 5, "source": label}
        )
        elapsed = time.perf_counter() - t0
        body = "\n".join(c.text for c in res.content if hasattr(c, "text"))
        if "BLOCKED" not in body[:200]:
            tool.latencies.append(elapsed)
            for (_q, gold), section in zip(batch, split_sections(body, queries), strict=True):
                tool.recalls.append(recall_at_5(turns_in(section), gold))
            return
        tool.blocked += 1
        await anyio.sleep(CM_BLOCKED_WAIT_S)
    tool.refused += len(batch)


def in_process(
    docs: dict[str, str], qs: list[tuple[str, str, set[str]]], folder: Path
) -> dict[str, list[float]]:
    """Seconds per ``Store.search`` on a store of its own: every question once, then again,
    then again with a context written by another connection before each (an agent's hooks
    write between two searches); then every question without its source filter (the whole
    store), once and again."""
    from ctxmode import Store
    from ctxmode.search.indexing import index_content

    db = folder / ".context" / "context.db"
    rounds = ("first", "again", "after a write", "unfiltered first", "unfiltered again")
    out: dict[str, list[float]] = {r: [] for r in rounds}
    with Store.open(db, root=folder) as store, Store.open(db, root=folder) as hook:
        for label, text in docs.items():
            index_content(store, text, label, fmt="markdown")
        for rnd, times in out.items():
            for i, (label, question, _gold) in enumerate(qs):
                if rnd == "after a write":
                    hook.write_context("snippet", f"hook note {i}: ran the build")
                source = None if rnd.startswith("unfiltered") else label
                t0 = time.perf_counter()
                store.search(question, limit=5, source=source)
                times.append(time.perf_counter() - t0)
    return out


async def run(
    docs: dict[str, str], qs: list[tuple[str, str, set[str]]], tmp: Path, cm_server: Path | None
) -> tuple[Tool, Tool, Tool | None, dict[str, list[float]]]:
    """Index the corpus into both tools, then send them the same batches in turn.

    Calls alternate (ctxmode, ctxmode with its warm-up off, context-mode; batch by batch), so
    that all are measured under the same load at the same moment; a machine whose speed drifts
    during the run moves every figure together.
    """
    from ctxmode import Store
    from ctxmode.core.config import ENV_SEARCH_WARMUP
    from ctxmode.search.indexing import index_content

    ours_dir = tmp / "ctxmode"
    db = ours_dir / ".context" / "context.db"
    with Store.open(db, root=ours_dir) as store:
        for label, text in docs.items():
            index_content(store, text, label, fmt="markdown")
    inproc = in_process(docs, qs, tmp / "in-process")
    ours, cold = Tool("ctxmode"), Tool("  no warm-up")

    def server(warm: bool) -> StdioServerParameters:
        env = {**os.environ, ENV_SEARCH_WARMUP: "1" if warm else "0"}
        return StdioServerParameters(
            command=str(CTXMODE), args=["serve", "--db", str(db)], cwd=str(ours_dir), env=env
        )

    theirs = Tool("context-mode") if cm_server is not None else None
    async with (
        Client(server(True), mode="legacy") as ours_client,
        Client(server(False), mode="legacy") as cold_client,
    ):
        if cm_server is None:
            for label, batch in batches(qs):
                await ctxmode_call(ours_client, ours, label, batch)
                await ctxmode_call(cold_client, cold, label, batch)
            return ours, cold, None, inproc
        cm_dir = tmp / "context-mode"
        (cm_dir / "home").mkdir(parents=True)
        env = {**os.environ, "CLAUDE_PROJECT_DIR": str(cm_dir), "HOME": str(cm_dir / "home")}
        cm_params = StdioServerParameters(
            command="node", args=[str(cm_server)], cwd=str(cm_dir), env=env
        )
        async with Client(cm_params, mode="legacy") as cm_client:
            for label, text in docs.items():
                res = await cm_client.call_tool("ctx_index", {"content": text, "source": label})
                if res.is_error or "error" in res.content[0].text.lower()[:200]:
                    raise RuntimeError(f"ctx_index failed: {res.content[0].text[:300]}")
            for label, batch in batches(qs):
                await ctxmode_call(ours_client, ours, label, batch)
                await ctxmode_call(cold_client, cold, label, batch)
                await context_mode_call(cm_client, theirs, label, batch)
    return ours, cold, theirs, inproc


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=300, help="0 = all 1,536")
    parser.add_argument("--cm-dir", type=Path, default=Path.home() / ".cache" / "ctxmode-bench")
    parser.add_argument("--no-install", action="store_true", help="Never run npm install.")
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"skipped: {DATA} not found (LoCoMo data lives in ../shared/bench-data)")
        return 0
    conversations = json.loads(DATA.read_text(encoding="utf-8"))
    docs = documents(conversations)
    qs = questions(conversations, args.queries)
    print(f"corpus: {sum(map(len, docs.values()))} characters in {len(docs)} documents; "
          f"{len(qs)} queries")  # fmt: skip
    server, how = ensure_context_mode(args.cm_dir, not args.no_install)
    if server is None:
        print(f"context-mode : not measured ({how})")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            ours, cold, theirs, inproc = anyio.run(run, docs, qs, Path(tmp), server)
        except Exception as exc:  # noqa: BLE001 - a failure of the other tool is reported
            if server is None:
                raise
            print(f"context-mode : could not be driven ({type(exc).__name__}: {exc}); "
                  "measuring ctxmode alone")  # fmt: skip
            ours, cold, theirs, inproc = anyio.run(run, docs, qs, Path(tmp) / "alone", None)
    print(f"{ours.line()} ({ms(inproc['first'])} per query in-process)")
    print(
        "in-process   : median per query, each question once: "
        + ", ".join(f"{k} {ms(v)}" for k, v in inproc.items())
        + " (after a write: another connection wrote a context before each query; unfiltered:"
        + " no source filter, all 10 conversations)"
    )
    print(f"{cold.line()} (CTXMODE_SEARCH_WARMUP=0: every item analysed on first touch)")
    if theirs is None:
        return 0
    print(theirs.line())
    gain = statistics.fmean(ours.recalls) - statistics.fmean(theirs.recalls)
    for name, tool in (("ctxmode", ours), ("no warm-up", cold)):
        ratio = statistics.median(tool.latencies) / statistics.median(theirs.latencies)
        print(
            f"ratio        : {name} latency = {ratio:.2f}x context-mode's (calls interleaved); "
            f"R@5 difference {gain:+.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
