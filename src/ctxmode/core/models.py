"""Value objects of the knowledge store: frozen dataclasses and the closed vocabularies.

No I/O here. Vocabularies are validated at the boundary with ``check_*`` helpers that raise
``InvalidInput`` naming every valid value.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ctxmode.core import vocab
from ctxmode.core.errors import InvalidInput

#: The closed vocabularies; defined in ``vocab`` (no imports), which the MCP server lists.
TYPE_TIERS = vocab.TYPE_TIERS
CONTEXT_TYPES = vocab.CONTEXT_TYPES
SCOPES = vocab.SCOPES
RELATIONS = vocab.RELATIONS
TASK_STATUSES = vocab.TASK_STATUSES
MODES = vocab.MODES
MODE_LIMITS = vocab.MODE_LIMITS
DECISION_FIELDS = vocab.DECISION_FIELDS

Mode = Literal["focused", "normal", "broad"]


def _check(kind: str, value: object, valid: Iterable[str]) -> str:
    options = tuple(valid)
    if not isinstance(value, str) or value not in options:
        raise InvalidInput(f"unknown {kind} {value!r}; use one of: {', '.join(options)}")
    return value


def check_type(value: object) -> str:
    """Validate a context type."""
    return _check("context type", value, CONTEXT_TYPES)


def check_scope(value: object) -> str:
    """Validate a scope."""
    return _check("scope", value, SCOPES)


def check_relation(value: object) -> str:
    """Validate a file relation type."""
    return _check("relation", value, RELATIONS)


def check_status(value: object) -> str:
    """Validate a task status."""
    return _check("task status", value, TASK_STATUSES)


def check_mode(value: object) -> str:
    """Validate a retrieval mode."""
    return _check("mode", value, MODES)


def tier_of(context_type: str) -> int:
    """Priority tier of a (valid) context type."""
    return TYPE_TIERS[context_type]


@dataclass(frozen=True)
class Context:
    """One stored piece of knowledge."""

    id: int
    type: str
    content: str
    metadata: dict[str, Any]
    scope: str
    owner: str
    content_hash: str
    superseded_by: int | None
    created_at: int
    updated_at: int
    last_accessed_at: int | None
    access_count: int
    session_id: str | None = None
    stale: bool = False
    archived_at: int | None = None

    @property
    def tier(self) -> int:
        return tier_of(self.type)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "tier": self.tier,
            "content": self.content,
            "metadata": self.metadata,
            "scope": self.scope,
            "owner": self.owner,
            "session_id": self.session_id,
            "content_hash": self.content_hash,
            "superseded_by": self.superseded_by,
            "archived_at": self.archived_at,
            "stale": self.stale,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "last_accessed_at": self.last_accessed_at,
            "access_count": self.access_count,
        }


@dataclass(frozen=True)
class TaskLink:
    task_id: int
    relevance: float


@dataclass(frozen=True)
class FileLink:
    path: str
    relation: str


@dataclass(frozen=True)
class ContextDetail:
    """A context with its links and supersession history (for ``show``)."""

    context: Context
    tasks: tuple[TaskLink, ...]
    files: tuple[FileLink, ...]
    history: tuple[int, ...]  # ids from the oldest predecessor to the newest successor

    def to_dict(self) -> dict[str, Any]:
        data = self.context.to_dict()
        data["tasks"] = [{"task_id": t.task_id, "relevance": t.relevance} for t in self.tasks]
        data["files"] = [{"path": f.path, "relation": f.relation} for f in self.files]
        data["history"] = list(self.history)
        return data


@dataclass(frozen=True)
class Task:
    id: int
    name: str
    status: str
    parent_id: int | None
    created_at: int
    updated_at: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "parent_id": self.parent_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True)
class LinkCheck:
    """One write-then-verify probe: is the new context found through this link?"""

    kind: Literal["task", "file", "row"]
    target: str
    found: bool


@dataclass(frozen=True)
class WriteResult:
    id: int
    verified: bool
    checks: tuple[LinkCheck, ...]
    deduplicated: bool = False
    superseded: int | None = None
    #: Linked paths with nothing on disk (a typo, or a file still to be written).
    missing_files: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "verified": self.verified,
            "deduplicated": self.deduplicated,
            "superseded": self.superseded,
            "missing_files": list(self.missing_files),
            "checks": [{"kind": c.kind, "target": c.target, "found": c.found} for c in self.checks],
        }


@dataclass(frozen=True)
class RankedItem:
    """A retrieved context with why it was selected."""

    context: Context
    distance: int  # 0 direct link, 1 ancestor/one hop, 2 further up, 9 global scope only
    relevance: float
    via: str  # "file", "folder", "glob", "task", "ancestor", "hop", "global"

    def to_dict(self) -> dict[str, Any]:
        c = self.context
        return {
            "id": c.id,
            "type": c.type,
            "tier": c.tier,
            "content": c.content,
            "scope": c.scope,
            "owner": c.owner,
            "stale": c.stale,
            "superseded_by": c.superseded_by,
            "created_at": c.created_at,
            "updated_at": c.updated_at,
            "relevance": round(self.relevance, 4),
            "via": self.via,
        }


@dataclass(frozen=True)
class Pack:
    """Items fitted into a token budget plus per-type digests of what did not fit."""

    text: str
    included: tuple[int, ...]
    digested: tuple[int, ...]
    omitted: tuple[int, ...]
    tokens: int
    budget_tokens: int | None


@dataclass(frozen=True)
class QueryResult:
    items: tuple[RankedItem, ...]
    pack: Pack
    mode: str
    limit: int

    @property
    def text(self) -> str:
        return self.pack.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "limit": self.limit,
            "count": len(self.items),
            "items": [i.to_dict() for i in self.items],
            "text": self.pack.text,
            "tokens": self.pack.tokens,
            "budget_tokens": self.pack.budget_tokens,
            "included": list(self.pack.included),
            "digested": list(self.pack.digested),
            "omitted": list(self.pack.omitted),
        }


@dataclass(frozen=True)
class CleanupAction:
    context_id: int
    type: str
    action: Literal["delete", "archive", "stale"]
    reason: str


@dataclass(frozen=True)
class CleanupReport:
    now: int
    dry_run: bool
    actions: tuple[CleanupAction, ...] = field(default_factory=tuple)

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for a in self.actions:
            per = out.setdefault(a.type, {})
            per[a.action] = per.get(a.action, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "dry_run": self.dry_run,
            "counts": self.counts(),
            "actions": [
                {"id": a.context_id, "type": a.type, "action": a.action, "reason": a.reason}
                for a in self.actions
            ],
        }


@dataclass(frozen=True)
class Event:
    """One captured session event (a summary, never a raw payload)."""

    id: int
    session_id: str
    agent: str
    category: str
    type: str
    priority: int
    data: dict[str, Any]
    created_at: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "agent": self.agent,
            "category": self.category,
            "type": self.type,
            "priority": self.priority,
            "data": self.data,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class Session:
    """One agent session seen through hooks."""

    session_id: str
    agent: str
    project_dir: str | None
    started_at: int
    last_event_at: int
    event_count: int
    compact_count: int
    ended_at: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "agent": self.agent,
            "project_dir": self.project_dir,
            "started_at": self.started_at,
            "last_event_at": self.last_event_at,
            "event_count": self.event_count,
            "compact_count": self.compact_count,
            "ended_at": self.ended_at,
        }


@dataclass(frozen=True)
class SessionSnapshot:
    """A session's resume snapshot as ``Store.session_snapshot`` chose it: built from the
    events (``stored`` False, ``event_count`` of them) or the one stored at the last
    compaction (``stored`` True, with whether it was injected and when it was made)."""

    xml: str
    bytes: int
    session_id: str | None
    event_count: int
    stored: bool = False
    consumed: bool = False
    created_at: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "bytes": self.bytes,
            "event_count": self.event_count,
            "xml": self.xml,
            "stored": self.stored,
            "consumed": self.consumed,
            "created_at": self.created_at,
        }
