"""OpenCode's past sessions: its SQLite database (``$XDG_DATA_HOME/opencode/opencode.db``).

OpenCode 1.18 keeps ``session`` (id, directory, time_updated), ``message`` (role in its JSON
``data``) and ``part`` (text, tool calls with their state, compactions) rows. The database
is opened read-only and never written. A session is read again whole when its
``time_updated`` moved: tool calls are keyed by their ``callID`` and prompts by their
content, so nothing is stored twice.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ctxmode.history.readers import Chunk, Unreadable
from ctxmode.history.sources import Transcript

#: OpenCode's own tools: any other name with ``_`` is an MCP tool named ``<server>_<tool>``.
_BUILTIN = frozenset(
    {
        "bash", "read", "write", "edit", "multiedit", "patch", "apply_patch", "list", "glob",
        "grep", "webfetch", "websearch", "task", "todowrite", "todoread", "codesearch",
        "question", "skill", "lsp_diagnostics", "lsp_hover", "invalid",
    }
)  # fmt: skip


def _connect(db: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        conn.execute("SELECT 1 FROM session LIMIT 1")
    except sqlite3.Error as exc:
        raise Unreadable(f"OpenCode database not readable: {exc}") from exc
    return conn


def sessions(db: Path) -> list[Transcript]:
    """One ``Transcript`` per top-level OpenCode session (subagent sessions are skipped)."""
    if not db.is_file():
        return []
    try:
        conn = _connect(db)
    except Unreadable:
        return []
    try:
        rows = conn.execute(
            "SELECT id, directory, time_updated FROM session WHERE parent_id IS NULL "
            "ORDER BY time_created"
        ).fetchall()
        sizes = dict(
            conn.execute(
                "SELECT session_id, sum(length(data)) FROM part GROUP BY session_id"
            ).fetchall()
        )
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return [
        Transcript(
            "opencode",
            db,
            int(sizes.get(sid) or 0),
            int(updated) * 1_000_000,
            sid,
            directory,
            None,
            f"{db}#{sid}",
        )  # fmt: skip
        for sid, directory, updated in rows
    ]


def read_opencode(transcript: Transcript) -> Chunk:
    """The hook payloads of one OpenCode session, rebuilt from its messages and parts."""
    conn = _connect(transcript.path)
    try:
        roles = {
            mid: _role(data)
            for mid, data in conn.execute(
                "SELECT id, data FROM message WHERE session_id = ?", (transcript.session_id,)
            )
        }
        parts = conn.execute(
            "SELECT message_id, time_created, data FROM part WHERE session_id = ? "
            "ORDER BY time_created, id",
            (transcript.session_id,),
        ).fetchall()
    except sqlite3.Error as exc:
        raise Unreadable(f"OpenCode session not readable: {exc}") from exc
    finally:
        conn.close()
    calls: list[tuple[int, dict[str, Any]]] = []
    compactions = 0
    nbytes = 0
    said: tuple[int, str] | None = None
    for message_id, created, data in parts:
        nbytes += len(data)
        try:
            part = json.loads(data)
        except ValueError:
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        role = roles.get(message_id)
        if kind == "compaction":
            compactions += 1
        elif kind == "text" and not part.get("synthetic") and isinstance(part.get("text"), str):
            if role == "user":
                if said:
                    calls.append((said[0], _stop(said[1])))
                    said = None
                calls.append(
                    (int(created), {"hook_event_name": "chat.message", "prompt": part["text"]})
                )
            elif role == "assistant" and part["text"].strip():
                said = (int(created), part["text"].strip())
        elif kind == "tool":
            payload = _tool(part)
            if payload is not None:
                calls.append((int(created), payload))
    if said:
        calls.append((said[0], _stop(said[1])))
    return Chunk(
        calls=calls,
        resume=0,
        session_id=transcript.session_id,
        cwd=transcript.cwd,
        compactions=compactions,
        nbytes=nbytes,
        done=True,
    )


def _role(data: str) -> str | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value.get("role") if isinstance(value, dict) else None


def _stop(text: str) -> dict[str, Any]:
    return {"hook_event_name": "session.idle", "last_assistant_message": text}


def _tool(part: dict[str, Any]) -> dict[str, Any] | None:
    """The ``tool.execute.after`` payload ctxmode's OpenCode plugin sends for a finished call."""
    state = part.get("state")
    name = part.get("tool")
    if not isinstance(state, dict) or not isinstance(name, str):
        return None
    status = state.get("status")
    if status not in ("completed", "error"):
        return None  # still running, or never ran
    tool_input = state.get("input") if isinstance(state.get("input"), dict) else {}
    output: Any = state.get("output") if isinstance(state.get("output"), str) else ""
    if "_" in name and name not in _BUILTIN:
        output = {"content": [{"type": "text", "text": output}]}  # how MCP results arrive
    payload: dict[str, Any] = {
        "hook_event_name": "tool.execute.after",
        "tool_name": name,
        "tool_input": tool_input,
        "tool_response": output,
        "tool_use_id": part.get("callID"),
    }
    meta = state.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("exit"), int):
        payload["exit_code"] = meta["exit"]
    if status == "error":
        payload["hook_event_name"] = "PostToolUseFailure"
        payload["error"] = str(state.get("error") or "failed")
    return payload
