"""The vocabulary of session events: categories and priorities, hook kinds, the normalized hook
event every adapter produces, the extracted record, and the clipping every stored text goes
through (redacted, whitespace-collapsed, bounded). Hook path: standard library only."""

from __future__ import annotations

from ctxmode.core.redact import redact

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ctxmode.core._lean import NamedTuple


#: Smallest snapshot budget accepted (bytes): room for the wrapper and a shortened last request.
SNAPSHOT_MIN_BUDGET = 256

#: Category -> priority (1 = most important). Order = snapshot order within a tier.
CATEGORIES: dict[str, int] = {
    "file": 1,
    "task": 1,
    "plan": 1,
    "rule": 1,
    "prompt": 1,
    "decision": 2,
    "knowledge": 2,
    "git": 2,
    "error": 2,
    "error_resolution": 2,
    "constraint": 2,
    "blocker": 2,
    "rejected_approach": 2,
    "environment": 2,
    "agent_finding": 2,
    "iteration_loop": 2,
    "latency": 3,
    "mcp_tool": 3,
    "subagent": 3,
    "skill": 3,
    "external_ref": 3,
    "role": 3,
    "intent": 4,
    "data": 4,
}


#: Hook kinds every adapter maps its agent's event names onto.
HOOK_KINDS: tuple[str, ...] = (
    "pre_tool_use",
    "post_tool_use",
    "post_tool_use_failure",
    "user_prompt",
    "pre_compact",
    "post_compact",
    "session_start",
    "stop",
    "session_end",
    "subagent_start",
    "subagent_stop",
)


COMMAND_CHARS = 200


SNIPPET_CHARS = 100


PROMPT_CHARS = 300


MESSAGE_CHARS = 200


PLAN_CHARS = 400


#: A stop message shorter than this is chatter, not a decision worth recording.
DECISION_MIN_CHARS = 40


# NamedTuple rather than dataclass on the hook path: importing dataclasses (and inspect) costs
# ~20 ms per hook process, a large share of the whole hook.
class NormalizedHookEvent(NamedTuple):
    """One hook call, whatever the agent: the adapters' only output (read-only)."""

    agent: str
    kind: str
    session_id: str
    cwd: str | None = None
    tool_name: str | None = None  # canonical (Bash, Edit, Write, Read, ...); mcp__x__y kept
    raw_tool_name: str | None = None
    tool_input: dict[str, Any] = {}  # noqa: RUF012 - shared default, never mutated
    tool_response: Any = None
    error: str | None = None
    tool_use_id: str | None = None
    duration_ms: int | None = None
    prompt: str | None = None
    prompt_source: str | None = None
    source: str | None = None  # session-start source: startup|resume|clear|compact
    trigger: str | None = None
    last_assistant_message: str | None = None
    stop_hook_active: bool = False
    transcript_path: str | None = None

    @property
    def failed(self) -> bool:
        return self.kind == "post_tool_use_failure"


class EventRecord(NamedTuple):
    """An extracted event before storage; ``key`` identifies its subject for the detectors."""

    category: str
    type: str
    data: dict[str, Any]

    @property
    def priority(self) -> int:
        return CATEGORIES[self.category]


def clip(text: object, limit: int) -> str:
    """Redacted, whitespace-collapsed text of at most ``limit`` characters."""
    value = " ".join(str(text).split())
    value = redact(value)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def clip_lines(text: object, limit: int) -> str:
    """``clip`` that keeps line breaks (code: one line per line, blank lines dropped)."""
    lines = [" ".join(line.split()) for line in str(text).splitlines()]
    value = redact("\n".join(line for line in lines if line))
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _rec(category: str, type_: str, **data: Any) -> EventRecord:
    return EventRecord(category, type_, {k: v for k, v in data.items() if v not in (None, "")})
