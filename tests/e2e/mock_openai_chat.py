"""Scripted OpenAI Chat Completions API (``POST /v1/chat/completions`` SSE) for OpenCode's
``@ai-sdk/openai-compatible`` provider, Qwen Code (``--auth-type openai``) and Kimi Code.

``load(phase, steps)`` replaces the script; every main request pops one step ``{"text"?,
"calls"?: [...], "usage"?: {...}}``. A call is ``{"name", "args"}`` or ``{"match", "args"}``
(resolved against the request's tools by substring, for MCP tools whose prefix OpenCode
chooses). Side requests, told by a mark in the system prompt or the last user message
(``SIDES``), consume no step: OpenCode's session title (``title``) and compaction summary
(``compaction``), Qwen Code's compression (``compaction``) and memory extraction
(``memory``), Copilot CLI's and Kimi Code's compaction summaries (``compaction``).
Kinds logged: main, title, compaction, memory, get.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from mockbase import Reply, ScriptedServer

TITLE_MARK = "You are a title generator"
COMPACT_MARK = "You are a context summarization agent"
SUMMARY = "<summary>ACCESS_TTL set to 7200; the refresh rotation test still fails.</summary>"
QWEN_COMPACT_MARK = "summarizes a conversation when its context window is about to overflow"
QWEN_SUMMARY = (
    "<analysis>The user fixes refresh tokens.</analysis>\n<state_snapshot>\n<overall_goal>Fix "
    "refresh token rotation</overall_goal>\n<key_knowledge>ACCESS_TTL is 7200</key_knowledge>\n"
    "</state_snapshot>"
)
QWEN_MEMORY_MARK = "managed memory extraction subagent"
COPILOT_COMPACT_MARK = "Please create a detailed summary of the conversation so far"
KIMI_COMPACT_MARK = "You are about to run out of context. Create a handoff summary"


def usage(prompt: int = 1000, completion: int = 50) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def text(msg: str, **kw: Any) -> dict[str, Any]:
    return {"text": msg, **kw}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"calls": [{"name": name, "args": args}]}


def tool(match: str, **args: Any) -> dict[str, Any]:
    return {"calls": [{"match": match, "args": args}]}


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(
        m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "system"
    )


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message of a request, in order."""
    out = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.append("\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict)))
    return out


def tool_names(body: dict[str, Any]) -> list[str]:
    return [
        t["function"]["name"]
        for t in body.get("tools") or []
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
    ]


#: (mark in the system prompt or the last user message, kind logged, the step answered).
#: Qwen Code sums its compressed history's size from the usage of the compression request:
#: it must report most of the old prompt as input, or Qwen finds the compression inflated.
SIDES: list[tuple[str, str, dict[str, Any]]] = [
    (TITLE_MARK, "title", {"text": "Refresh token work"}),
    (COMPACT_MARK, "compaction", {"text": SUMMARY}),
    (QWEN_COMPACT_MARK, "compaction", {"text": QWEN_SUMMARY, "usage": usage(100_000, 80)}),
    (QWEN_MEMORY_MARK, "memory", {"text": "Nothing to remember."}),
    (COPILOT_COMPACT_MARK, "compaction", {"text": SUMMARY}),
    (KIMI_COMPACT_MARK, "compaction", {"text": SUMMARY, "usage": usage(100_000, 80)}),
]


class MockChat(ScriptedServer):
    def __init__(self, log_path: Path | None = None) -> None:
        super().__init__(log_path)
        self.script: list[dict[str, Any]] = []
        self.phase = ""
        self.ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def load(self, phase: str, steps: list[dict[str, Any]]) -> None:
        with self.lock:
            self.phase, self.script = phase, list(steps)

    def answer(self, method: str, path: str, body: Any) -> Reply:
        if method == "GET":
            self.log("get", path, body)
            return Reply.json({"object": "list", "data": [{"id": "m", "object": "model"}]})
        users = user_texts(body)
        marked = system_text(body) + "\n" + (users[-1] if users else "")
        with self.lock:
            side = next(((k, s) for mark, k, s in SIDES if mark in marked), None)
            if side is not None:
                kind, step = side
            else:
                step = self.script.pop(0) if self.script else {"text": "Done."}
                kind = "main"
            self.log(kind, path, body, step=step, phase=self.phase)
        lines = [f"data: {json.dumps(c)}\n\n" for c in self._chunks(step, body)]
        return Reply(("".join(lines) + "data: [DONE]\n\n").encode(), "text/event-stream")

    def _chunks(self, step: dict[str, Any], body: dict[str, Any]) -> list[Any]:
        cid = f"chatcmpl-{next(self.ids)}"

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> Any:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return {"id": cid, "object": "chat.completion.chunk", "created": 1, "model": "m",
                    "choices": [choice], **extra}  # fmt: skip

        out = [chunk({"role": "assistant", "content": ""})]
        if step.get("text"):
            out.append(chunk({"content": step["text"]}))
        calls = []
        for i, spec in enumerate(step.get("calls") or []):
            name = spec.get("name")
            if name is None:
                hits = [n for n in tool_names(body) if spec["match"] in n]
                if not hits:
                    out.append(chunk({"content": f"NO TOOL {spec['match']}"}))
                    continue
                name = hits[0]
            calls.append(i)
            fn = {"name": name, "arguments": json.dumps(spec.get("args", {}))}
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": f"call_{next(self.ids)}",
                                "type": "function",
                                "function": fn,
                            }
                        ]
                    }
                )  # fmt: skip
            )
        finish = "tool_calls" if calls else "stop"
        out.append(chunk({}, finish, usage=step.get("usage") or usage()))
        return out
