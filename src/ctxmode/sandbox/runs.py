"""Run code in a subprocess and keep bulky output out of the agent's context window.

Contract of ``execute`` / ``execute_file`` / ``batch_execute``:
- the code runs in its own process group (``start_new_session``) with cwd = the project root;
  on timeout, on exceeding the output cap and after it exits, the whole group is killed, so no
  child it spawned outlives the call;
- output is read up to ``MAX_OUTPUT_BYTES`` (hard cap), decoded as UTF-8 and redacted before it
  is stored or returned;
- small output comes back as is; large output (over ``INTENT_THRESHOLD_BYTES`` when an intent
  is given, over ``PLAIN_THRESHOLD_BYTES`` otherwise) is indexed as a ``sandbox`` source and only
  a digest comes back: the sections matching the intent, section titles, distinctive terms, the
  last lines, and the source label to search it with;
- every run is recorded in ``sandbox_runs`` with the bytes it produced and the bytes returned
  (real lengths, nothing estimated).

This is not a security boundary: the code runs with the user's rights. It exists to keep output
out of the window, not to contain hostile code.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxmode.core.errors import InvalidInput
from ctxmode.core.redact import redact
from ctxmode.knowledge.contexts import absolute_path, normalize_path
from ctxmode.sandbox import process
from ctxmode.sandbox.process import (
    PLAIN_THRESHOLD_BYTES,
    CodeRun,
    RawOutput,
    check_code,
    check_timeout,
    run_source,
)
from ctxmode.search.chunking import Piece, chunk_content
from ctxmode.search.indexing import index_pieces

if TYPE_CHECKING:
    from ctxmode.core.db import Database

#: Output above this size is digested when the caller said what it looks for (bytes).
INTENT_THRESHOLD_BYTES = 5_000
#: Sandbox sources kept; older ones are dropped when a new one is indexed.
SANDBOX_KEEP = 50
MAX_BATCH_COMMANDS = 20
MAX_BATCH_QUERIES = 20
#: Batch output is returned whole when all commands together print at most this (bytes).
BATCH_INLINE_BYTES = 5_000


@dataclass(frozen=True)
class ExecResult:
    """What a run returns to the agent; ``output`` is the full output or its digest."""

    language: str
    exit_code: int | None
    timed_out: bool
    truncated: bool
    duration_ms: int
    bytes_produced: int
    bytes_returned: int
    output: str
    indexed: bool = False
    source: str | None = None
    sections: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    matches: tuple[str, ...] = ()  # hit ids, fetch their text with ``get``

    def to_dict(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "truncated": self.truncated,
            "duration_ms": self.duration_ms,
            "bytes_produced": self.bytes_produced,
            "bytes_returned": self.bytes_returned,
            "indexed": self.indexed,
            "source": self.source,
            "sections": list(self.sections),
            "terms": list(self.terms),
            "matches": list(self.matches),
            "output": self.output,
        }


@dataclass(frozen=True)
class CommandRun:
    """One command of a batch."""

    command: str
    exit_code: int | None
    timed_out: bool
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class BatchResult:
    """A batch of commands indexed as one source, with the answers to the queries."""

    runs: tuple[CommandRun, ...]
    source: str | None
    bytes_produced: int
    bytes_returned: int
    output: str
    matches: dict[str, list[str]] = field(default_factory=dict)  # query -> hit ids

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": [r.to_dict() for r in self.runs],
            "source": self.source,
            "bytes_produced": self.bytes_produced,
            "bytes_returned": self.bytes_returned,
            "matches": self.matches,
            "output": self.output,
        }


# -- running a process -----------------------------------------------------------------------


# -- digests ---------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}|[\u3040-\u30ff\u4e00-\u9fff]{2,}")
_STOP = frozenset(
    {
        "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was",
        "one", "our", "out", "has", "have", "him", "his", "how", "its", "may", "new", "now", "old",
        "see", "two", "who", "did", "get", "let", "put", "say", "she", "too", "use", "this",
        "that", "with", "from", "they", "will", "would", "there", "their", "what", "when", "which",
        "were", "been", "into", "than", "then", "them", "these", "some", "such", "only", "other",
        "also", "more", "most", "very", "just", "over", "your", "about", "after", "before",
        "could", "should", "while", "where", "here", "none", "true", "false", "null", "line",
        "lines", "file", "files", "info", "debug", "self", "return",
    }
)  # fmt: skip


def distinctive_terms(texts: Sequence[str], limit: int = 12) -> list[str]:
    """Words frequent in the output but concentrated in few chunks (tf x idf), best first."""
    n = max(1, len(texts))
    tf: Counter[str] = Counter()
    df: Counter[str] = Counter()
    for text in texts:
        words = [w.lower() for w in _WORD.findall(text)]
        words = [w for w in words if w not in _STOP and not w.strip("_").isdigit()]
        tf.update(words)
        df.update(set(words))
    scored = sorted(
        ((count * math.log(1 + n / df[w]), w) for w, count in tf.items() if count > 1 or n == 1),
        key=lambda x: (-x[0], x[1]),
    )
    return [w for _, w in scored[:limit]]


def _tail(text: str, lines: int = 8, max_chars: int = 800) -> str:
    tail = "\n".join(text.rstrip("\n").splitlines()[-lines:])
    return tail[-max_chars:]


def _fence(text: str) -> str:
    """Fence output as data; the fence is longer than any backtick run inside."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{text}\n{ticks}"


def _source_label(kind: str, language: str, text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:10]
    return f"{kind}:{language}:{digest}"


def _prune_sandbox_sources(store: Database) -> None:
    keep = SANDBOX_KEEP
    with store.transaction() as conn:
        conn.execute(
            "DELETE FROM sources WHERE kind = 'sandbox' AND id NOT IN "
            "(SELECT id FROM sources WHERE kind = 'sandbox' ORDER BY indexed_at DESC, id DESC "
            "LIMIT ?)",
            (keep,),
        )


def _index_output(store: Database, label: str, pieces: Sequence[Piece], size: int) -> int:
    # Callers chunk output that ``RawOutput.text`` already redacted as a whole.
    report = index_pieces(store, pieces, label, "sandbox", size=size, redacted=True)
    _prune_sandbox_sources(store)
    return report.chunks


def _search_hits(store: Database, query: str, label: str, limit: int, budget: int) -> list[Any]:
    from ctxmode.search.engine import search

    return list(search(store, query, limit=limit, source=label, budget_chars=budget).hits)


def _digest(
    store: Database,
    text: str,
    label: str,
    language: str,
    raw: RawOutput,
    intent: str | None,
) -> ExecResult:
    pieces = chunk_content(text, base_title="")
    chunks = _index_output(store, label, pieces, raw.produced)
    titles = [p.title for p in pieces]
    terms = distinctive_terms([p.content for p in pieces])
    lines = text.count("\n") + 1
    if raw.timed_out:
        ending = "timed out (process group killed)"
    elif raw.truncated:
        ending = f"killed at the {process.MAX_OUTPUT_BYTES}-byte output cap"
    else:
        ending = f"exit code {raw.exit_code}"
    head = (
        f"Output of this {language} run: {raw.produced} bytes, {lines} lines, {ending}. "
        f"It was indexed as source {label!r} ({chunks} chunks) instead of being returned."
    )
    parts = [head]
    matches: list[str] = []
    if intent:
        hits = _search_hits(store, intent, label, limit=5, budget=2500)
        if hits:
            parts.append(f"Sections matching the intent {intent!r}:")
            for h in hits:
                matches.append(h.id)
                parts.append(f"- [{h.id}] {h.title}\n  {h.snippet}")
        else:
            parts.append(f"No section matched the intent {intent!r}; try the terms below.")
    shown = titles[:15]
    more = f" (+{len(titles) - len(shown)} more)" if len(titles) > len(shown) else ""
    parts.append("Sections: " + "; ".join(shown) + more)
    if terms:
        parts.append("Distinctive terms: " + ", ".join(terms))
    parts.append("Last lines:\n" + _fence(_tail(text)))
    parts.append(
        f'Search it: search(queries=["..."], source="{label}") or '
        f"`ctxmode search QUERY --source {label}`; full text of a hit with get(ids=[...])."
    )
    output = "\n".join(parts)
    return ExecResult(
        language=language,
        exit_code=raw.exit_code,
        timed_out=raw.timed_out,
        truncated=raw.truncated,
        duration_ms=raw.duration_ms,
        bytes_produced=raw.produced,
        bytes_returned=len(output.encode("utf-8")),
        output=output,
        indexed=True,
        source=label,
        sections=tuple(titles[:50]),
        terms=tuple(terms),
        matches=tuple(matches),
    )


def _record(
    store: Database,
    kind: str,
    language: str | None,
    produced: int,
    returned: int,
    label: str | None,
    exit_code: int | None,
    duration_ms: int | None,
) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO sandbox_runs(kind, language, bytes_produced, bytes_returned, "
            "source_label, exit_code, duration_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, language, produced, returned, label, exit_code, duration_ms, int(time.time())),
        )


def _finish(
    store: Database, kind: str, language: str, raw: RawOutput, intent: str | None
) -> ExecResult:
    text = raw.text()
    size = len(text.encode("utf-8"))
    threshold = INTENT_THRESHOLD_BYTES if intent else PLAIN_THRESHOLD_BYTES
    if size > threshold:
        label = _source_label("exec", language, text)
        result = _digest(store, text, label, language, raw, intent)
    else:
        result = ExecResult(
            language=language,
            exit_code=raw.exit_code,
            timed_out=raw.timed_out,
            truncated=raw.truncated,
            duration_ms=raw.duration_ms,
            bytes_produced=raw.produced,
            bytes_returned=size,
            output=text,
        )
    _record(
        store,
        kind,
        language,
        result.bytes_produced,
        result.bytes_returned,
        result.source,
        result.exit_code,
        result.duration_ms,
    )
    return result


# -- public entry points ---------------------------------------------------------------------


def execute(
    store: Database,
    language: str,
    code: str,
    intent: str | None = None,
    timeout: float | None = None,
) -> ExecResult:
    """Run ``code`` in ``language`` at the project root; return its output or a digest.

    ``intent`` (what you are looking for in the output) lowers the digest threshold to
    ``INTENT_THRESHOLD_BYTES`` and selects the sections shown in the digest.
    """
    return finish_run(store, run_code(store.root, language, code, timeout), intent)


def run_code(root: Path, language: str, code: str, timeout: float | None = None) -> CodeRun:
    """The process half of ``execute``: run the code at ``root``; no store involved.

    Servers call it outside their store lock so a long command does not stall other calls,
    then hand the result to ``finish_run``.
    """
    name, raw = run_source(root, language, check_code(code), check_timeout(timeout))
    return CodeRun(name, raw)


def finish_run(store: Database, run: CodeRun, intent: str | None = None) -> ExecResult:
    """The store half of ``execute``: index large output, build the digest, count the bytes."""
    intent = intent.strip() if isinstance(intent, str) and intent.strip() else None
    return _finish(store, "execute", run.language, run.raw, intent)


def execute_file(
    store: Database,
    path: str,
    language: str,
    code: str,
    intent: str | None = None,
    timeout: float | None = None,
) -> ExecResult:
    """Run ``code`` over a project file: its content on stdin, its path in ``$FILE_PATH``.

    Only what the code prints comes back, so a large file can be summarised without entering
    the context window. The path must resolve inside the project.
    """
    rel = normalize_path(store, path)
    target = absolute_path(store, rel)
    if not target.is_file():
        raise InvalidInput(f"{path!r} is not a file; pass a file inside the project")
    source_code = check_code(code)
    seconds = check_timeout(timeout)
    intent = intent.strip() if isinstance(intent, str) and intent.strip() else None
    with target.open("rb") as fh:
        name, raw = run_source(
            store.root,
            language,
            source_code,
            seconds,
            stdin=fh,
            extra_env={"FILE_PATH": str(target), "FILE_REL": rel},
        )
    return _finish(store, "execute_file", name, raw, intent)


def batch_execute(
    store: Database,
    commands: Sequence[str],
    queries: Sequence[str],
    timeout: float | None = None,
) -> BatchResult:
    """Run shell commands one after another, index all output as one source, answer queries.

    Small output (all commands together at most ``BATCH_INLINE_BYTES``) is returned whole;
    otherwise each query gets its best matching sections from the indexed output.
    """
    if isinstance(commands, str) or not commands:
        raise InvalidInput("commands must be a non-empty list of shell commands")
    if isinstance(queries, str):
        queries = [queries]
    if len(commands) > MAX_BATCH_COMMANDS or len(queries) > MAX_BATCH_QUERIES:
        raise InvalidInput(
            f"at most {MAX_BATCH_COMMANDS} commands and {MAX_BATCH_QUERIES} queries per batch"
        )
    cmds = [check_code(c) for c in commands]
    seconds = check_timeout(timeout)
    runs: list[CommandRun] = []
    pieces: list[Piece] = []
    texts: list[str] = []
    produced = 0
    for cmd in cmds:
        _name, raw = run_source(store.root, "shell", cmd, seconds)
        text = raw.text()
        produced += raw.produced
        runs.append(CommandRun(redact(cmd), raw.exit_code, raw.timed_out, raw.produced))
        title = "$ " + " ".join(redact(cmd).split())[:100]
        texts.append(f"{title}\n{text}" if text else f"{title}\n(no output)")
        if text.strip():
            pieces.extend(chunk_content(text, base_title=title))
    whole = "\n\n".join(texts)
    label = _source_label("batch", "shell", whole)
    matches: dict[str, list[str]] = {}
    parts: list[str] = []
    if pieces:
        _index_output(store, label, pieces, produced)
    else:
        label = ""
    if len(whole.encode("utf-8")) <= BATCH_INLINE_BYTES:
        parts.append(_fence(whole))
    else:
        summary = ", ".join(f"exit {r.exit_code} ({r.bytes} bytes)" for r in runs)
        parts.append(
            f"{len(runs)} commands produced {produced} bytes ({summary}); indexed as source "
            f"{label!r}."
        )
    for query in queries:
        if not isinstance(query, str) or not query.strip() or not label:
            continue
        hits = _search_hits(store, query, label, limit=3, budget=1500)
        matches[query] = [h.id for h in hits]
        parts.append(f"## {query}")
        parts.extend(f"- [{h.id}] {h.title}\n  {h.snippet}" for h in hits)
        if not hits:
            parts.append("(no match)")
    if label:
        parts.append(f'Search more: search(queries=["..."], source="{label}").')
    output = "\n".join(parts)
    returned = len(output.encode("utf-8"))
    _record(store, "batch", "shell", produced, returned, label or None, None, None)
    return BatchResult(tuple(runs), label or None, produced, returned, output, matches)


__all__ = [
    "BatchResult",
    "CommandRun",
    "ExecResult",
    "batch_execute",
    "distinctive_terms",
    "execute",
    "execute_file",
]
