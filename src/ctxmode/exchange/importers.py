"""Importers for the knowledge links the design asks for.

- review findings -> ``constraint`` contexts (linked to the file a finding names);
- a task list (JSON, or a markdown checklist ``- [ ]`` / ``- [x]``; nesting -> parent tasks)
  -> ``tasks``;
- a docs folder -> ``reference`` contexts, one per section, linked to their file.

Every importer is idempotent: contexts are deduplicated by content hash (as ``write_context``
does), tasks by an ``external_key`` derived from their position in the list (parent chain and
name), so running an import twice adds nothing; a task whose checkbox changed gets the new
status. A docs section whose text changed supersedes its previous version.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxmode.core import config
from ctxmode.core.errors import InvalidInput, PathOutsideProject
from ctxmode.core.models import TASK_STATUSES
from ctxmode.core.redact import redact
from ctxmode.knowledge.contexts import (
    absolute_path,
    content_hash,
    create_task,
    normalize_path,
    update_task,
    write_context,
)
from ctxmode.search.chunking import chunk_markdown, chunk_text, kind_for_name
from ctxmode.search.files import read_text, walk_files

if TYPE_CHECKING:
    from ctxmode.core.db import Database

#: Sections of imported docs are cut to this size (characters); larger ones become parts.
DOC_SECTION_CHARS = 6000
DOC_EXTS = frozenset({".md", ".markdown", ".mdx", ".txt", ".rst", ".adoc"})


@dataclass(frozen=True)
class ImportSummary:
    """What an importer did; ``ids`` are the context or task ids it created or reused."""

    kind: str  # "findings" | "tasks" | "docs"
    created: int = 0
    unchanged: int = 0
    updated: int = 0
    superseded: int = 0
    ids: tuple[int, ...] = ()
    skipped: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "created": self.created,
            "unchanged": self.unchanged,
            "updated": self.updated,
            "superseded": self.superseded,
            "ids": list(self.ids),
            "skipped": list(self.skipped),
        }


def _read_file(store: Database, path: str) -> tuple[str, str]:
    rel = normalize_path(store, path)
    target = absolute_path(store, rel)
    if not target.is_file():
        raise InvalidInput(f"{path!r} is not a file; pass the path of the file to import")
    text, reason, _raw = read_text(target)
    if text is None:
        raise InvalidInput(f"{rel} cannot be imported: {reason}")
    return rel, text


# -- review findings -------------------------------------------------------------------------

_FINDING_TEXT_KEYS = ("finding", "message", "description", "text", "body", "issue", "comment")
_FINDING_FILE_KEYS = ("file", "path", "filename", "location")


def _finding_from_object(obj: Any) -> dict[str, Any] | None:
    if isinstance(obj, str):
        return {"text": obj} if obj.strip() else None
    if not isinstance(obj, dict):
        return None
    title = str(obj.get("title") or obj.get("rule") or obj.get("check") or "").strip()
    body = next((str(obj[k]).strip() for k in _FINDING_TEXT_KEYS if obj.get(k)), "")
    text = f"{title}: {body}" if title and body and body != title else (title or body)
    if not text:
        return None
    file_value = next((obj[k] for k in _FINDING_FILE_KEYS if isinstance(obj.get(k), str)), None)
    line = obj.get("line") or obj.get("start_line")
    if file_value and ":" in file_value and line is None:
        head, _, tail = file_value.rpartition(":")
        if tail.isdigit():
            file_value, line = head, int(tail)
    return {
        "text": text,
        "file": file_value,
        "line": line if isinstance(line, int) else None,
        "severity": str(obj["severity"]) if obj.get("severity") else None,
    }


_PATH_IN_TEXT = re.compile(r"((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5})(?::(\d+))?\b")


def _is_json_name(path: str) -> bool:
    """Whether a file is named as JSON: its content must then parse as JSON (a broken file
    reports its error instead of being read as markdown)."""
    return path.lower().endswith(".json")


def _json_list(text: str, what: str, keys: tuple[str, ...]) -> list[Any]:
    """A JSON list, or the list under the first of ``keys`` in a JSON object."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{what} file is not valid JSON ({exc.msg}, line {exc.lineno})"
        ) from None
    if isinstance(data, dict):
        data = next((data[k] for k in keys if data.get(k)), [])
    if not isinstance(data, list):
        raise InvalidInput(f'{what} JSON must be a list or {{"{keys[0]}": [...]}}')
    return data


def parse_findings(text: str, *, is_json: bool = False) -> list[dict[str, Any]]:
    """Findings from JSON (a list, or ``{"findings": [...]}``) or markdown (one per bullet or
    per heading section). Each is ``{"text", "file", "line", "severity"}``. Text starting with
    ``[`` or ``{``, or any text with ``is_json`` (a ``.json`` file), must be valid JSON."""
    stripped = text.strip()
    if is_json or stripped[:1] in {"[", "{"}:
        data = _json_list(stripped, "findings", ("findings", "issues", "comments"))
        return [f for f in (_finding_from_object(o) for o in data) if f]
    findings: list[dict[str, Any]] = []
    bullets = re.findall(r"(?m)^[-*+] (?!\[[ xX]\])(.+(?:\n(?![-*+] |#)[ \t]+\S.*)*)", text)
    if bullets:
        items = [" ".join(b.split()) for b in bullets]
    else:
        items = [f"{p.title}: {p.content}" for p in chunk_markdown(text) if p.content.strip()]
    for item in items:
        # The first thing that looks like a path (``src/app.py:12``) is the finding's file;
        # it is linked only if it exists.
        m = _PATH_IN_TEXT.search(item)
        findings.append(
            {
                "text": item,
                "file": m.group(1) if m else None,
                "line": int(m.group(2)) if m and m.group(2) else None,
                "severity": None,
            }
        )
    return findings


def import_findings(store: Database, path: str) -> ImportSummary:
    """Review findings -> ``constraint`` contexts, each linked to the file it names."""
    rel, text = _read_file(store, path)
    created = unchanged = 0
    ids: list[int] = []
    skipped: list[str] = []
    for finding in parse_findings(text, is_json=_is_json_name(rel)):
        files: list[str] = []
        if finding.get("file"):
            try:
                target = normalize_path(store, str(finding["file"]))
                if absolute_path(store, target).exists():
                    files.append(target)
            except (PathOutsideProject, InvalidInput):
                skipped.append(f"link to {finding['file']!r}: outside the project")
        meta = {"source": "review", "imported_from": rel}
        if finding.get("line"):
            meta["line"] = finding["line"]
        if finding.get("severity"):
            meta["severity"] = finding["severity"]
        result = write_context(
            store, "constraint", str(finding["text"])[: config.MAX_CONTENT_CHARS],
            file_paths=files, metadata=meta,
        )  # fmt: skip
        ids.append(result.id)
        if result.deduplicated:
            unchanged += 1
        else:
            created += 1
    return ImportSummary(
        "findings", created=created, unchanged=unchanged, ids=tuple(ids), skipped=tuple(skipped)
    )


# -- task lists ------------------------------------------------------------------------------

_CHECK = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+\[([ xX~/\-])\]\s+(.+?)\s*$")
_BOX_STATUS = {
    " ": "pending",
    "x": "completed",
    "X": "completed",
    "~": "in_progress",
    "/": "in_progress",
    "-": "cancelled",
}


@dataclass(frozen=True)
class TaskSpec:
    """A task parsed from a list: name, status and children."""

    name: str
    status: str
    children: tuple[TaskSpec, ...] = ()


def _task_from_object(obj: Any) -> TaskSpec | None:
    if isinstance(obj, str):
        return TaskSpec(obj.strip(), "pending") if obj.strip() else None
    if not isinstance(obj, dict):
        return None
    name = str(obj.get("name") or obj.get("title") or obj.get("task") or "").strip()
    if not name:
        return None
    status = obj.get("status")
    if status is None:
        done = obj.get("done", obj.get("completed", obj.get("checked")))
        status = "completed" if done is True else "pending"
    status = str(status).strip().lower().replace(" ", "_").replace("-", "_")
    status = {"done": "completed", "todo": "pending", "open": "pending"}.get(status, status)
    if status not in TASK_STATUSES:
        raise InvalidInput(
            f"task {name!r} has unknown status {status!r}; use one of: {', '.join(TASK_STATUSES)}"
        )
    raw_children = obj.get("children") or obj.get("subtasks") or obj.get("tasks") or []
    children = tuple(
        c for c in (_task_from_object(x) for x in raw_children if raw_children) if c is not None
    )
    return TaskSpec(name, status, children)


def parse_tasks(text: str, *, is_json: bool = False) -> list[TaskSpec]:
    """Tasks from JSON (a list or ``{"tasks": [...]}``) or a markdown checklist; JSON when the
    text starts with ``[`` or ``{``, or with ``is_json`` (a ``.json`` file)."""
    stripped = text.strip()
    if is_json or stripped[:1] in {"[", "{"}:
        data = _json_list(stripped, "task", ("tasks",))
        return [t for t in (_task_from_object(o) for o in data) if t is not None]
    # Markdown: indentation decides nesting; each entry is (indent, name, status, children).
    roots: list[tuple[int, str, str, list[Any]]] = []
    stack: list[tuple[int, str, str, list[Any]]] = []
    for line in text.splitlines():
        m = _CHECK.match(line.expandtabs(4))
        if not m:
            continue
        node: tuple[int, str, str, list[Any]] = (
            len(m.group(1)), m.group(3), _BOX_STATUS[m.group(2)], [],
        )  # fmt: skip
        while stack and stack[-1][0] >= node[0]:
            stack.pop()
        (stack[-1][3] if stack else roots).append(node)
        stack.append(node)

    def build(n: tuple[int, str, str, list[Any]]) -> TaskSpec:
        return TaskSpec(n[1], n[2], tuple(build(c) for c in n[3]))

    return [build(n) for n in roots]


def _task_key(parent_key: str, name: str) -> str:
    digest = hashlib.sha256(f"{parent_key}\0{name}".encode()).hexdigest()[:24]
    return f"import:{digest}"


def import_tasks(store: Database, path: str) -> ImportSummary:
    """A task list -> tasks (nesting -> parent tasks); re-importing updates statuses only."""
    rel, text = _read_file(store, path)
    specs = parse_tasks(text, is_json=_is_json_name(rel))
    if not specs:
        raise InvalidInput(
            f"no tasks found in {path!r}; use a markdown checklist (- [ ] task) or JSON "
            '[{"name": ..., "status": ..., "children": [...]}]'
        )
    counts = {"created": 0, "unchanged": 0, "updated": 0}
    ids: list[int] = []

    def visit(spec: TaskSpec, parent_id: int | None, parent_key: str) -> None:
        key = _task_key(parent_key, spec.name)
        row = store.conn.execute(
            "SELECT id, status FROM tasks WHERE external_key = ?", (key,)
        ).fetchone()
        if row is None:
            task = create_task(store, spec.name, parent_id, status=spec.status, external_key=key)
            task_id = task.id
            counts["created"] += 1
        else:
            task_id = int(row[0])
            if row[1] != spec.status:
                update_task(store, task_id, spec.status)
                counts["updated"] += 1
            else:
                counts["unchanged"] += 1
        ids.append(task_id)
        for child in spec.children:
            visit(child, task_id, key)

    with store.transaction():
        for spec in specs:
            visit(spec, None, "")
    return ImportSummary(
        "tasks",
        created=counts["created"],
        unchanged=counts["unchanged"],
        updated=counts["updated"],
        ids=tuple(ids),
    )


# -- docs folders ----------------------------------------------------------------------------


def import_docs(store: Database, path: str, *, now: int | None = None) -> ImportSummary:
    """Each section of each document under ``path`` -> a ``reference`` context linked to its
    file. A section whose text changed since the last import supersedes its old context."""
    rel = normalize_path(store, path)
    target = absolute_path(store, rel)
    if target.is_dir():
        files, skipped_files = walk_files(store, rel)
        files = [f for f in files if Path(f).suffix.lower() in DOC_EXTS]
    elif target.is_file():
        files, skipped_files = [rel], []
    else:
        raise InvalidInput(f"{path!r} is neither a folder nor a file; pass the docs folder")
    created = unchanged = superseded = 0
    ids: list[int] = []
    skipped = [f"{s.path}: {s.reason}" for s in skipped_files]
    ts = int(now if now is not None else time.time())
    for file_rel in files:
        text, reason, _raw = read_text(absolute_path(store, file_rel))
        if text is None:
            skipped.append(f"{file_rel}: {reason}")
            continue
        if kind_for_name(file_rel) == "markdown":
            pieces = chunk_markdown(text, max_chars=DOC_SECTION_CHARS)
        else:
            pieces = chunk_text(text, max_chars=DOC_SECTION_CHARS)
        for piece in pieces:
            section = piece.title
            body = piece.content.strip()
            if not body:
                continue
            # First line = title in search results: say where the section comes from.
            content = f"{file_rel} > {section}\n\n{body}"
            previous = _previous_section(store, file_rel, section)
            if previous is not None and previous[1] == content_hash(
                "reference", redact(content).strip()
            ):
                ids.append(previous[0])
                unchanged += 1
                continue
            result = write_context(
                store,
                "reference",
                content,
                file_paths=[file_rel],
                relation="defines",
                metadata={"source": "docs", "path": file_rel, "section": section},
                supersedes=previous[0] if previous else None,
                now=ts,
            )
            ids.append(result.id)
            if result.deduplicated:
                unchanged += 1
            else:
                created += 1
                superseded += 1 if result.superseded else 0
    return ImportSummary(
        "docs",
        created=created,
        unchanged=unchanged,
        superseded=superseded,
        ids=tuple(ids),
        skipped=tuple(skipped),
    )


def _previous_section(store: Database, path: str, section: str) -> tuple[int, str] | None:
    """(id, content hash) of the live context imported from this file section, if any."""
    row = store.conn.execute(
        "SELECT id, content_hash FROM contexts WHERE type = 'reference' AND superseded_by IS NULL "
        "AND json_extract(metadata, '$.source') = 'docs' "
        "AND json_extract(metadata, '$.path') = ? AND json_extract(metadata, '$.section') = ? "
        "ORDER BY id DESC LIMIT 1",
        (path, section),
    ).fetchone()
    return (int(row[0]), str(row[1])) if row else None


__all__ = [
    "ImportSummary",
    "TaskSpec",
    "import_docs",
    "import_findings",
    "import_tasks",
    "parse_findings",
    "parse_tasks",
]
