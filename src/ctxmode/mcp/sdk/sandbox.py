"""Declarations of the indexing and sandbox tools: signatures and flat output models.

Each runs the body of its name in ``mcp.tools.sandbox`` (``server.declarer``).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from ctxmode import sandbox
from ctxmode.mcp.sdk.server import READ_ONLY, declarer
from ctxmode.mcp.tools.common import StoreRunner

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


def register(server: MCPServer[Any], call: StoreRunner) -> None:
    tool = declarer(server, call)

    @tool(
        description="Index text (content + source label) or a project file/folder (path) for "
        "search. Re-indexing a source replaces it. Search it with search(source=...).",
        annotations=INDEXES,
    )
    def index(
        content: str | None = None,
        path: Annotated[str | None, Field(description="File or folder in the project.")] = None,
        source: Annotated[str | None, Field(description="Label; default: path.")] = None,
    ) -> Annotated[CallToolResult, IndexOut]: ...

    @tool(
        description="Fetch an http(s) URL (HTML becomes markdown), index it, return a summary "
        "with section titles. Cached for a day; search it with search(source=...).",
        annotations=FETCHES,
    )
    def fetch_and_index(
        url: str,
        source: Annotated[str | None, Field(description="Label; default: the URL.")] = None,
    ) -> Annotated[CallToolResult, FetchOut]: ...

    @tool(
        description="Run code (shell, python, javascript; others if installed) at the project "
        "root. Small output returns as is; large output is indexed and a digest returns.",
        annotations=RUNS,
    )
    def execute(
        language: str,
        code: str,
        intent: Intent = None,
        timeout: Timeout = None,
    ) -> Annotated[CallToolResult, ExecOut]: ...

    @tool(
        description="Run code over a project file (content on stdin, path in $FILE_PATH) so "
        "only what the code prints enters the context.",
        annotations=RUNS,
    )
    def execute_file(
        path: str,
        language: str,
        code: str,
        intent: Intent = None,
        timeout: Timeout = None,
    ) -> Annotated[CallToolResult, ExecOut]: ...

    @tool(
        description="Run shell commands in order, index all their output as one source and "
        "return the sections answering each query.",
        annotations=RUNS,
    )
    def batch_execute(
        commands: Annotated[list[str], Field(min_length=1, max_length=20)],
        queries: Annotated[list[str], Field(max_length=20)],
        timeout: Timeout = None,
    ) -> Annotated[CallToolResult, BatchOut]: ...

    @tool(
        name="stats",
        description="Measured savings: bytes that sandboxed runs and fetched pages produced vs "
        "bytes returned to you; and what the store holds.",
        annotations=READ_ONLY,
    )
    def stats_tool() -> Annotated[CallToolResult, StatsOut]: ...
