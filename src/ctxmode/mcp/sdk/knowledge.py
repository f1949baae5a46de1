"""Declarations of the knowledge and task tools: signatures and flat output models.

Each runs the body of its name in ``mcp.tools.knowledge`` (``server.declarer``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from ctxmode.mcp.sdk.server import READ_ONLY, WRITES, declarer
from ctxmode.mcp.tools.common import StoreRunner
from ctxmode.mcp.tools.knowledge import DEFAULT_BUDGET_TOKENS

ContextType = Literal[
    "constraint", "decision", "convention", "interface", "issue", "snippet", "reference"
]
Relation = Literal["defines", "uses", "modifies", "related"]
TaskStatus = Literal["pending", "in_progress", "blocked", "completed", "cancelled"]
Mode = Literal["focused", "normal", "broad"]


class WriteContextOut(BaseModel):
    id: int
    verified: bool = Field(description="Read back through every link given.")
    deduplicated: bool = Field(description="Same type and content already stored; reused.")
    superseded_id: int | None
    checks: list[str]


class QueryContextOut(BaseModel):
    count: int
    ids: list[int] = Field(description="Ranked; types and updated align with ids.")
    types: list[str]
    updated: list[str]
    stale_ids: list[int] = Field(description="Linked file changed since written.")
    omitted_ids: list[int] = Field(description="Over budget: fetch with a larger budget.")
    tokens: int
    budget_tokens: int | None
    text: str


class TaskOut(BaseModel):
    id: int
    name: str
    status: str
    parent_id: int | None


class TaskListOut(BaseModel):
    count: int
    ids: list[int] = Field(description="Tree order; names, statuses, parent_ids align.")
    names: list[str]
    statuses: list[str]
    parent_ids: list[int | None]
    text: str


class LinkFilesOut(BaseModel):
    context_id: int
    relation: str
    files: list[str] = Field(description="All files now linked to the context.")


def register(server: MCPServer[Any], call: StoreRunner) -> None:
    tool = declarer(server, call)

    @tool(
        description="Store project knowledge, optionally linked to a task and files. "
        "Returns its id and whether it reads back through every link.",
        annotations=WRITES,
    )
    def write_context(
        type: ContextType,
        content: str,
        task_id: int | None = None,
        file_paths: list[str] | None = None,
        relation: Relation = "related",
        scope: Literal["global", "task"] = "global",
        metadata: dict[str, Any] | None = None,
        supersedes: Annotated[int | None, Field(description="Id this replaces.")] = None,
    ) -> Annotated[CallToolResult, WriteContextOut]: ...

    @tool(
        description="Ranked stored knowledge for a task and/or file (file narrows, task "
        "orders), packed into a token budget. No filter: the most important global items.",
        annotations=READ_ONLY,
    )
    def query_context(
        task_id: int | None = None,
        file_path: str | None = None,
        context_type: ContextType | None = None,
        mode: Mode = "normal",
        limit: Annotated[int | None, Field(ge=1, le=1000)] = None,
        budget_tokens: Annotated[
            int | None, Field(ge=1, description=f"Default {DEFAULT_BUDGET_TOKENS}.")
        ] = None,
    ) -> Annotated[CallToolResult, QueryContextOut]: ...

    @tool(description="Create a task, optionally under a parent task.", annotations=WRITES)
    def create_task(
        name: str, parent_id: int | None = None
    ) -> Annotated[CallToolResult, TaskOut]: ...

    @tool(description="Set a task's status.", annotations=WRITES)
    def update_task(task_id: int, status: TaskStatus) -> Annotated[CallToolResult, TaskOut]: ...

    @tool(description="Tasks as a tree, optionally only one status.", annotations=READ_ONLY)
    def list_tasks(
        status: TaskStatus | None = None,
    ) -> Annotated[CallToolResult, TaskListOut]: ...

    @tool(description="Link a stored context to project files.", annotations=WRITES)
    def link_files(
        context_id: int, file_paths: list[str], relation: Relation = "related"
    ) -> Annotated[CallToolResult, LinkFilesOut]: ...
