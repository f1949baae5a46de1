"""MCP tools of indexing and the sandbox, registered on the server built by ``mcp_server``.

Contract: ``register(server, call)`` adds tools to ``server`` (an ``mcp`` 2.x ``MCPServer``).
``call`` is ``async def call(fn, *args, **kwargs)``: it runs ``fn(store, *args, **kwargs)`` in a
worker thread with the server's ``Store`` and turns a ``CtxmodeError`` into an ``isError`` tool
result whose message says what to send instead. ``call.unlocked(fn, ...)`` runs store-free
slow work (a sandboxed process) without holding the store, so other tools go on meanwhile.

Tools: ``index``, ``fetch_and_index``, ``execute``, ``execute_file``, ``batch_execute``, and
``stats`` (what runs and fetches kept out of the context, and what the store holds). Output
schemas are flat; command output and fetched text are fenced as data before they are returned.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from ctxmode import sandbox, stats
from ctxmode.mcp.base import READ_ONLY, fence, tool_result
from ctxmode.search import fetch, indexing, sources

#: Runs code or reaches the network: not read-only, not idempotent, open world.
RUNS = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)
INDEXES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
FETCHES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)

Timeout = Annotated[
    float | None,
    Field(gt=0, le=sandbox.MAX_TIMEOUT_S, description="Seconds (default 30)."),
]
Intent = Annotated[
    str | None,
    Field(description="What you look for; large output is indexed and only matches return."),
]


class IndexOut(BaseModel):
    sources: list[str]
    files: int
    chunks: int
    bytes: int
    skipped: list[str] = Field(description="Files left out, with the reason.")
    text: str


class FetchOut(BaseModel):
    source: str
    url: str
    chunks: int
    bytes_fetched: int
    from_cache: bool
    truncated: bool
    sections: list[str]
    text: str


class ExecOut(BaseModel):
    exit_code: int | None
    timed_out: bool
    truncated: bool = Field(description="Output passed the hard cap; the process was killed.")
    indexed: bool = Field(description="Output was large: indexed as `source`, digest returned.")
    source: str | None
    bytes_produced: int
    bytes_returned: int
    match_ids: list[str] = Field(description="Hits for the intent; full text with get.")
    output: str


class BatchOut(BaseModel):
    source: str | None
    commands: list[str]
    exit_codes: list[int | None]
    bytes_produced: int
    bytes_returned: int
    match_ids: list[str]
    output: str


class StatsOut(BaseModel):
    runs: int = Field(description="Sandboxed runs and page fetches.")
    bytes_produced: int = Field(description="Bytes the commands printed.")
    bytes_fetched: int = Field(description="Bytes of the pages fetched.")
    bytes_returned: int = Field(description="Bytes of those returned to the agent.")
    bytes_kept_out: int
    contexts: int
    tasks: int
    events: int
    sessions: int
    indexed_sources: int
    db_bytes: int
    text: str


def _stats(store: Any) -> tuple[stats.Stats, int]:
    return stats.collect(store, days=1), len(sources.list_sources(store))


def _exec_result(res: sandbox.ExecResult) -> CallToolResult:
    text = fence(res.output, "command_output")
    status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
    out = ExecOut(
        exit_code=res.exit_code,
        timed_out=res.timed_out,
        truncated=res.truncated,
        indexed=res.indexed,
        source=res.source,
        bytes_produced=res.bytes_produced,
        bytes_returned=res.bytes_returned,
        match_ids=list(res.matches),
        output=text,
    )
    return tool_result(out, f"{res.language}: {status}.\n{text}")


def _project_root(store: Any) -> Any:
    return store.root


def _index(
    store: Any, content: str | None, path: str | None, source: str | None
) -> indexing.IndexReport:
    if (content is None) == (path is None):
        raise ToolError("give exactly one of content or path")
    if path is not None:
        return indexing.index_path(store, path, source)
    assert content is not None
    label = source or "content:" + hashlib.sha256(content.encode()).hexdigest()[:10]
    return indexing.index_content(store, content, label)


def register(server: MCPServer[Any], call: Any) -> None:
    """Add this module's tools to ``server``."""

    @server.tool(
        description="Index text (content + source label) or a project file/folder (path) for "
        "search. Re-indexing a source replaces it. Search it with search(source=...).",
        annotations=INDEXES,
    )
    async def index(
        content: str | None = None,
        path: Annotated[str | None, Field(description="File or folder in the project.")] = None,
        source: Annotated[str | None, Field(description="Label; default: path.")] = None,
    ) -> Annotated[CallToolResult, IndexOut]:
        report = await call(_index, content, path, source)
        labels = [s.label for s in report.sources]
        out = IndexOut(
            sources=labels,
            files=report.files,
            chunks=report.chunks,
            bytes=sum(s.bytes for s in report.sources),
            skipped=[f"{s.path}: {s.reason}" for s in report.skipped[:50]],
            text=f"Indexed {report.chunks} chunks as source {', '.join(labels)}.",
        )
        extra = f" Skipped {len(report.skipped)} file(s)." if report.skipped else ""
        return tool_result(out, out.text + extra)

    @server.tool(
        description="Fetch an http(s) URL (HTML becomes markdown), index it, return a summary "
        "with section titles. Cached for a day; search it with search(source=...).",
        annotations=FETCHES,
    )
    async def fetch_and_index(
        url: str,
        source: Annotated[str | None, Field(description="Label; default: the URL.")] = None,
    ) -> Annotated[CallToolResult, FetchOut]:
        rep = await call(fetch.fetch_and_index, url, source)
        text = fence(rep.summary, "fetched_page")
        out = FetchOut(
            source=rep.source,
            url=rep.url,
            chunks=rep.chunks,
            bytes_fetched=rep.bytes_fetched,
            from_cache=rep.from_cache,
            truncated=rep.truncated,
            sections=list(rep.sections[:30]),
            text=text,
        )
        return tool_result(out, text)

    @server.tool(
        description="Run code (shell, python, javascript; others if installed) at the project "
        "root. Small output returns as is; large output is indexed and a digest returns.",
        annotations=RUNS,
    )
    async def execute(
        language: str,
        code: str,
        intent: Intent = None,
        timeout: Timeout = None,
    ) -> Annotated[CallToolResult, ExecOut]:
        # The process runs outside the store lock: a long command must not stall other tools.
        root = await call(_project_root)
        run = await call.unlocked(sandbox.run_code, root, language, code, timeout)
        return _exec_result(await call(sandbox.finish_run, run, intent))

    @server.tool(
        description="Run code over a project file (content on stdin, path in $FILE_PATH) so "
        "only what the code prints enters the context.",
        annotations=RUNS,
    )
    async def execute_file(
        path: str,
        language: str,
        code: str,
        intent: Intent = None,
        timeout: Timeout = None,
    ) -> Annotated[CallToolResult, ExecOut]:
        res = await call(sandbox.execute_file, path, language, code, intent=intent, timeout=timeout)
        return _exec_result(res)

    @server.tool(
        description="Run shell commands in order, index all their output as one source and "
        "return the sections answering each query.",
        annotations=RUNS,
    )
    async def batch_execute(
        commands: Annotated[list[str], Field(min_length=1, max_length=20)],
        queries: Annotated[list[str], Field(max_length=20)],
        timeout: Timeout = None,
    ) -> Annotated[CallToolResult, BatchOut]:
        res = await call(sandbox.batch_execute, commands, queries, timeout=timeout)
        text = fence(res.output, "command_output")
        ids = [i for hits in res.matches.values() for i in hits]
        out = BatchOut(
            source=res.source,
            commands=[r.command for r in res.runs],
            exit_codes=[r.exit_code for r in res.runs],
            bytes_produced=res.bytes_produced,
            bytes_returned=res.bytes_returned,
            match_ids=ids,
            output=text,
        )
        return tool_result(out, text)

    @server.tool(
        name="stats",
        description="Measured savings: bytes that sandboxed runs and fetched pages produced vs "
        "bytes returned to you; and what the store holds.",
        annotations=READ_ONLY,
    )
    async def stats_tool() -> Annotated[CallToolResult, StatsOut]:
        st, sources = await call(_stats)
        sb = st.sandbox
        out = StatsOut(
            runs=sb.runs,
            bytes_produced=sb.bytes_produced,
            bytes_fetched=sb.bytes_fetched,
            bytes_returned=sb.bytes_returned,
            bytes_kept_out=sb.bytes_kept_out,
            contexts=st.contexts_total,
            tasks=st.tasks_total,
            events=st.events_total,
            sessions=st.sessions,
            indexed_sources=sources,
            db_bytes=st.db_bytes,
            text="",
        )
        out.text = (
            f"Sandbox and fetch: {stats.sandbox_line(sb)}. Store: {out.contexts} contexts, "
            f"{out.tasks} tasks, {out.events} events in {out.sessions} sessions, {sources} "
            f"indexed sources, {out.db_bytes} bytes."
        )
        return tool_result(out, out.text)
