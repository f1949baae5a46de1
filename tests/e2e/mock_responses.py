"""Scripted OpenAI Responses API (``POST /v1/responses`` SSE) for Codex CLI.

``load(steps)`` replaces the script; every main request pops one step
``{"text"?, "calls"?: [...], "usage"?: {...}}``. A call is ``{"kind": "function", "name",
"args"}`` (e.g. ``exec_command``), ``{"kind": "custom", "name": "apply_patch", "input"}``,
``{"kind": "tool_search", "args"}`` (Codex's deferred-tool search) or ``{"kind": "tool",
"match", "args"}`` (resolved by name against the request's tools and any
``tool_search_output``). Compaction requests (``/responses/compact`` or Codex's checkpoint
prompt) get a summary and consume no step. Kinds logged: main, compaction, get.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from mockbase import Reply, ScriptedServer

COMPACT_MARKERS = ("CONTEXT CHECKPOINT COMPACTION", "handoff summary")
SUMMARY = "SUMMARY: ACCESS_TTL set to 7200; the refresh rotation test still fails."


def usage(total: int = 1050) -> dict[str, Any]:
    return {
        "input_tokens": total - 50,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 50,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total,
    }


def text(msg: str, **kw: Any) -> dict[str, Any]:
    return {"text": msg, **kw}


def shell(cmd: str) -> dict[str, Any]:
    # Codex returns a still-running command's output after ``yield_time_ms`` (10 s by default)
    # and fires no PostToolUse for its end: wait long enough on a loaded machine.
    args = {"cmd": cmd, "yield_time_ms": 30_000}
    return {"calls": [{"kind": "function", "name": "exec_command", "args": args}]}


def patch(body: str) -> dict[str, Any]:
    return {"calls": [{"kind": "custom", "name": "apply_patch", "input": body}]}


def tool_search(query: str) -> dict[str, Any]:
    return {"calls": [{"kind": "tool_search", "args": {"query": query}}]}


def tool(match: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"calls": [{"kind": "tool", "match": match, "args": args}]}


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message of a request, in order."""
    out = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.append(
                    "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
                )
    return out


def tool_names(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    tools = list(body.get("tools") or [])
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "tool_search_output":
            tools += [t for t in item.get("tools") or [] if isinstance(t, dict)]
    out: list[tuple[str, str | None]] = []
    for entry in tools:
        if isinstance(entry, dict) and isinstance(entry.get("tools"), list):
            out += [(t["name"], entry.get("name")) for t in entry["tools"] if t.get("name")]
        elif isinstance(entry, dict) and entry.get("name"):
            out.append((entry["name"], None))
    return out


class MockResponses(ScriptedServer):
    def __init__(self, log_path: Path | None = None) -> None:
        super().__init__(log_path)
        self.script: list[dict[str, Any]] = []
        self.ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def load(self, steps: list[dict[str, Any]]) -> None:
        with self.lock:
            self.script = list(steps)

    def answer(self, method: str, path: str, body: Any) -> Reply:
        if method == "GET":
            self.log("get", path, body)
            return Reply.json({"object": "list", "data": [], "models": []})
        if path.rstrip("/").endswith("/compact"):
            self.log("compaction", path, body)
            return Reply.json({"output": [{"type": "compaction", "encrypted_content": SUMMARY}]})
        users = user_texts(body)
        with self.lock:
            if users and any(m in users[-1] for m in COMPACT_MARKERS):
                step, kind = {"text": SUMMARY}, "compaction"
            else:
                step = self.script.pop(0) if self.script else {"text": "Done."}
                kind = "main"
            self.log(kind, path, body, step=step)
        items = self._items(step, body)
        rid = f"resp_{next(self.ids)}"
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"type": "response.created", "response": {"id": rid}})
        ]
        for item in items:
            events.append(
                ("response.output_item.added", {"type": "response.output_item.added", "item": item})
            )
            if item["type"] == "message":
                delta = {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "delta": item["content"][0]["text"],
                }
                events.append(("response.output_text.delta", delta))
            events.append(
                ("response.output_item.done", {"type": "response.output_item.done", "item": item})
            )
        done = {"id": rid, "usage": step.get("usage") or usage()}
        events.append(("response.completed", {"type": "response.completed", "response": done}))
        return Reply.sse(events)

    def _items(self, step: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if step.get("text"):
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{next(self.ids)}",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": step["text"], "annotations": []}],
                }
            )
        for call in step.get("calls") or []:
            cid = f"call_{next(self.ids)}"
            if call["kind"] == "custom":
                items.append(
                    {
                        "type": "custom_tool_call",
                        "id": f"ctc_{cid}",
                        "status": "completed",
                        "call_id": cid,
                        "name": call["name"],
                        "input": call["input"],
                    }
                )
                continue
            if call["kind"] == "tool_search":
                items.append(
                    {
                        "type": "tool_search_call",
                        "id": f"tsc_{cid}",
                        "call_id": cid,
                        "status": "completed",
                        "execution": "client",
                        "arguments": call.get("args", {}),
                    }
                )
                continue
            name, namespace = call.get("name"), None
            if call["kind"] == "tool":
                hits = [t for t in tool_names(body) if call["match"] in t[0]]
                if not hits:
                    items.append(
                        {
                            "type": "message",
                            "role": "assistant",
                            "id": f"msg_{next(self.ids)}",
                            "status": "completed",
                            "content": [
                                {"type": "output_text", "text": f"NO TOOL {call['match']}"}
                            ],
                        }
                    )
                    continue
                name, namespace = hits[0]
            item = {
                "type": "function_call",
                "id": f"fc_{cid}",
                "status": "completed",
                "call_id": cid,
                "name": name,
                "arguments": json.dumps(call.get("args", {})),
            }
            if namespace:
                item["namespace"] = namespace
            items.append(item)
        return items
