"""Bodies of the knowledge and task tools, the ``ctxmode://tasks`` resource and the
``record-decision`` prompt.

Each tool body is ``fn(call, **arguments) -> ToolOutput``: ``call`` is the server's
``StoreRunner``, the arguments are checked and complete (defaults filled in) by ``mcp.calls``
from the tool's row in ``mcp.registry``. A ``CtxmodeError`` is the caller's mistake and becomes
an ``isError`` result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxmode.core.models import DECISION_FIELDS
from ctxmode.core.redact import redact
from ctxmode.mcp.registry import DEFAULT_BUDGET_TOKENS
from ctxmode.mcp.tools.common import StoreRunner, ToolOutput, date, fence
from ctxmode.store import Store


def _task_tree_text(tasks: Sequence[Any]) -> str:
    by_id = {t.id: t for t in tasks}
    lines = []
    for t in tasks:
        depth, parent, guard = 0, t.parent_id, 0
        while parent in by_id and guard < 64:
            depth, parent, guard = depth + 1, by_id[parent].parent_id, guard + 1
        lines.append(f"{'  ' * depth}#{t.id} [{t.status}] {t.name}")
    return "\n".join(lines)


def _link_files(store: Store, context_id: int, paths: list[str], relation: str) -> list[str]:
    store.link_files(context_id, paths, relation)
    return [f.path for f in store.context_detail(context_id).files]


def write_context(
    call: StoreRunner,
    *,
    type: str,
    content: str,
    task_id: int | None,
    file_paths: list[str] | None,
    relation: str,
    scope: str,
    metadata: dict[str, Any] | None,
    supersedes: int | None,
) -> ToolOutput:
    res = call(
        Store.write_context,
        type,
        content,
        task_id=task_id,
        file_paths=file_paths or (),
        relation=relation,
        scope=scope,
        metadata=metadata,
        supersedes=supersedes,
    )
    checks = [f"{c.kind} {c.target}: {'found' if c.found else 'MISSING'}" for c in res.checks]
    head = (
        f"Already stored as {type} #{res.id}; links added."
        if res.deduplicated
        else f"Stored {type} #{res.id}."
    )
    if res.superseded is not None:
        head += f" It supersedes #{res.superseded}."
    verdict = "Verified" if res.verified else "NOT verified"
    data = {
        "id": res.id,
        "verified": res.verified,
        "deduplicated": res.deduplicated,
        "superseded_id": res.superseded,
        "checks": checks,
    }
    return ToolOutput(f"{head} {verdict}: {'; '.join(checks)}.", data)


def query_context(
    call: StoreRunner,
    *,
    task_id: int | None,
    file_path: str | None,
    context_type: str | None,
    mode: str,
    limit: int | None,
    budget_tokens: int | None,
) -> ToolOutput:
    res = call(
        Store.query_context,
        task_id=task_id,
        file_path=file_path,
        context_type=context_type,
        mode=mode,
        limit=limit,
        budget_tokens=budget_tokens or DEFAULT_BUDGET_TOKENS,
    )
    items = [i.context for i in res.items]
    if items:
        text = fence(res.text, "query_context")
        omitted = len(res.pack.digested) + len(res.pack.omitted)
        if omitted:
            text += f"\n{omitted} item(s) shortened or left out: raise budget_tokens."
    else:
        text = "No stored context matches. Store some with write_context."
    data = {
        "count": len(items),
        "ids": [c.id for c in items],
        "types": [c.type for c in items],
        "updated": [date(c.updated_at) for c in items],
        "stale_ids": [c.id for c in items if c.stale],
        "omitted_ids": [*res.pack.digested, *res.pack.omitted],
        "tokens": res.pack.tokens,
        "budget_tokens": res.pack.budget_tokens,
        "text": text,
    }
    return ToolOutput(text, data)


def _task(task: Any) -> dict[str, Any]:
    return {
        "id": task.id,
        "name": redact(task.name),
        "status": task.status,
        "parent_id": task.parent_id,
    }


def create_task(call: StoreRunner, *, name: str, parent_id: int | None) -> ToolOutput:
    task = call(Store.create_task, name, parent_id)
    under = f" under #{task.parent_id}" if task.parent_id is not None else ""
    return ToolOutput(f"Created task #{task.id}{under}: {task.name}", _task(task))


def update_task(call: StoreRunner, *, task_id: int, status: str) -> ToolOutput:
    task = call(Store.update_task, task_id, status)
    return ToolOutput(f"Task #{task.id} is now {task.status}: {task.name}", _task(task))


def list_tasks(call: StoreRunner, *, status: str | None) -> ToolOutput:
    tasks = call(Store.list_tasks, status)
    text = fence(_task_tree_text(tasks), "list_tasks") if tasks else "No tasks."
    data = {
        "count": len(tasks),
        "ids": [t.id for t in tasks],
        "names": [redact(t.name) for t in tasks],
        "statuses": [t.status for t in tasks],
        "parent_ids": [t.parent_id for t in tasks],
        "text": text,
    }
    return ToolOutput(text, data)


def link_files(
    call: StoreRunner, *, context_id: int, file_paths: list[str], relation: str
) -> ToolOutput:
    files = call(_link_files, context_id, file_paths, relation)
    data = {"context_id": context_id, "relation": relation, "files": files}
    return ToolOutput(f"Context #{context_id} is linked to: {', '.join(files)}", data)


def tasks_resource(call: StoreRunner) -> str:
    """The text of ``ctxmode://tasks``."""
    tasks = call(Store.list_tasks, None)
    return fence(_task_tree_text(tasks), "tasks") if tasks else "No tasks."


#: What each decision-template field asks for.
DECISION_HINTS: dict[str, str] = {
    "decision": "one line: what was decided",
    "background": "the problem or constraint that forced a decision",
    "options": "the alternatives considered",
    "choice": "the option taken",
    "rationale": "why it beats the others",
    "impact": "what changes: files, interfaces, follow-up work",
}


def decision_prompt(fields: dict[str, str]) -> str:
    """The ``record-decision`` prompt text: the template, prefilled where fields are given."""
    lines = [
        "Record a project decision with ctxmode. Fill in each field of the template below; "
        "ask me for anything you cannot tell from our work so far.",
        "",
    ]
    for name in DECISION_FIELDS:
        value = fields.get(name, "").strip()
        lines.append(f"- {name}: {value or '<' + DECISION_HINTS[name] + '>'}")
    lines += [
        "",
        'Then call write_context with type "decision", metadata {"template": "decision"} '
        "and this content (decision on the first line, omit empty fields):",
        "",
        "<decision>",
        *(f"{n.capitalize()}: <{n}>" for n in DECISION_FIELDS[1:]),
        "",
        "Add task_id and file_paths when the decision belongs to a task or to files; pass "
        "supersedes with the id of a decision this one replaces.",
    ]
    return "\n".join(lines)
