"""Bodies of the indexing and sandbox tools: ``index``, ``fetch_and_index``, ``execute``,
``execute_file``, ``batch_execute`` and ``stats`` (what runs and fetches kept out of the
context, and what the store holds).

The contract of a body is the one of ``mcp.tools.knowledge``; store-free slow work (a sandboxed
process) runs outside ``call(...)``, without holding the store, so other tools go on meanwhile.
Command output and fetched text are fenced as data before they are returned.
"""

from __future__ import annotations

from ctxmode import stats
from ctxmode.core.errors import InvalidInput
from ctxmode.mcp.tools.common import StoreRunner, ToolOutput, fence
from ctxmode.store import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ctxmode.store.results import ExecResult, IndexReport


def _stats(store: Store) -> tuple[stats.Stats, int]:
    return stats.collect(store, days=1), len(store.sources())


def _exec_output(res: ExecResult) -> ToolOutput:
    text = fence(res.output, "command_output")
    status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
    data = {
        "exit_code": res.exit_code,
        "timed_out": res.timed_out,
        "truncated": res.truncated,
        "indexed": res.indexed,
        "source": res.source,
        "bytes_produced": res.bytes_produced,
        "bytes_returned": res.bytes_returned,
        "match_ids": list(res.matches),
        "output": text,
    }
    return ToolOutput(f"{res.language}: {status}.\n{text}", data)


def _project_root(store: Store) -> Path:
    return store.root


def _index(store: Store, content: str | None, path: str | None, source: str | None) -> IndexReport:
    if (content is None) == (path is None):
        raise InvalidInput("give exactly one of content or path")
    if path is not None:
        return store.index_path(path, source)
    assert content is not None
    return store.index_text(content, source)


def index(
    call: StoreRunner, *, content: str | None, path: str | None, source: str | None
) -> ToolOutput:
    report = call(_index, content, path, source)
    labels = [s.label for s in report.sources]
    text = f"Indexed {report.chunks} chunks as source {', '.join(labels)}."
    data = {
        "sources": labels,
        "files": report.files,
        "chunks": report.chunks,
        "bytes": sum(s.bytes for s in report.sources),
        "skipped": [f"{s.path}: {s.reason}" for s in report.skipped[:50]],
        "text": text,
    }
    extra = f" Skipped {len(report.skipped)} file(s)." if report.skipped else ""
    return ToolOutput(text + extra, data)


def fetch_and_index(call: StoreRunner, *, url: str, source: str | None) -> ToolOutput:
    rep = call(Store.fetch, url, source)
    text = fence(rep.summary, "fetched_page")
    data = {
        "source": rep.source,
        "url": rep.url,
        "chunks": rep.chunks,
        "bytes_fetched": rep.bytes_fetched,
        "from_cache": rep.from_cache,
        "truncated": rep.truncated,
        "sections": list(rep.sections[:30]),
        "text": text,
    }
    return ToolOutput(text, data)


def execute(
    call: StoreRunner,
    *,
    language: str,
    code: str,
    intent: str | None,
    timeout: float | None,
) -> ToolOutput:
    # The process runs outside the store lock: a long command must not stall other tools.
    root = call(_project_root)
    run = Store.run_code(root, language, code, timeout)
    return _exec_output(call(Store.finish_run, run, intent))


def execute_file(
    call: StoreRunner,
    *,
    path: str,
    language: str,
    code: str,
    intent: str | None,
    timeout: float | None,
) -> ToolOutput:
    res = call(Store.execute_file, path, language, code, intent=intent, timeout=timeout)
    return _exec_output(res)


def batch_execute(
    call: StoreRunner, *, commands: list[str], queries: list[str], timeout: float | None
) -> ToolOutput:
    res = call(Store.batch_execute, commands, queries, timeout=timeout)
    text = fence(res.output, "command_output")
    data = {
        "source": res.source,
        "commands": [r.command for r in res.runs],
        "exit_codes": [r.exit_code for r in res.runs],
        "bytes_produced": res.bytes_produced,
        "bytes_returned": res.bytes_returned,
        "match_ids": [i for hits in res.matches.values() for i in hits],
        "output": text,
    }
    return ToolOutput(text, data)


def stats_tool(call: StoreRunner) -> ToolOutput:
    st, source_count = call(_stats)
    sb = st.sandbox
    text = (
        f"Sandbox and fetch: {stats.sandbox_line(sb)}. Store: {st.contexts_total} contexts, "
        f"{st.tasks_total} tasks, {st.events_total} events in {st.sessions} sessions, "
        f"{source_count} indexed sources, {st.db_bytes} bytes."
    )
    data = {
        "runs": sb.runs,
        "bytes_produced": sb.bytes_produced,
        "bytes_fetched": sb.bytes_fetched,
        "bytes_returned": sb.bytes_returned,
        "bytes_kept_out": sb.bytes_kept_out,
        "contexts": st.contexts_total,
        "tasks": st.tasks_total,
        "events": st.events_total,
        "sessions": st.sessions,
        "indexed_sources": source_count,
        "db_bytes": st.db_bytes,
        "text": text,
    }
    return ToolOutput(text, data)
